"""Starting sparktide jobs on Spark: from a job file's source, or from your own stream."""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StreamingQuery

from sparktide.errors import ConfigError, InputError, RunError
from sparktide.job import Job, Source
from sparktide.reader import (
    CSV_FIELD,
    CSV_QUOTED,
    MAX_INTEGER_DIGITS,
    MAX_LINE_CHARS,
    UNREADABLE_PARQUET,
)
from sparktide.spark.arrowparse import carried_fields
from sparktide.spark.engine import SparkEngine
from sparktide.spark.parse import (
    FIRST_INSTANT,
    FULL_TEXT,
    LAST_INSTANT,
    WHITE_SPACE,
    lines_of,
    partition_id,
    shown_text,
    split_lines,
)
from sparktide.spark.sql import iso, sql_string

__all__ = [
    "broker_lines",
    "check_watchable",
    "csv_rows",
    "file_lines",
    "local_session",
    "parquet_rows",
    "publish_metrics",
    "run_job",
    "split_lines",
    "start",
]


def local_session(
    cores: int = 2, memory: str | None = None, conf: dict[str, str] | None = None
) -> SparkSession:
    """A local SparkSession configured for sparktide (UTC, shuffle partitions = cores).

    ``conf`` adds or overrides Spark settings (e.g. the UI retention limits, which are
    low here so a long run's heap stays flat).

    ``memory`` is the JVM heap (``spark.driver.memory``; in local mode the driver also
    runs the tasks): ``$SPARKTIDE_MEMORY``, else 3g. Spark's own default of 1g is too
    small for micro-batches of a million events, which each batch holds parsed in memory
    (spilling to disk beyond it). It applies only when this call starts the JVM.
    """
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    memory = memory or os.environ.get("SPARKTIDE_MEMORY", "3g")
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("sparktide")
        .config("spark.driver.memory", memory)
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
        # Spark keeps the last 1000 jobs, stages and SQL executions for its UI: about
        # 0.5 MB of heap per micro-batch until those limits (bench/soak.py); a few suffice
        .config("spark.ui.retainedJobs", "50")
        .config("spark.ui.retainedStages", "50")
        .config("spark.sql.ui.retainedExecutions", "20")
        .config(HUGE_METHOD_LIMIT, HUGE_METHOD_BYTES)
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _quiet_query_failures(spark)
    return spark


#: Spark compiles each stage into Java methods and keeps one even when it is larger than
#: the 8,000 bytes of bytecode the JVM's JIT compiles; such a method then runs
#: interpreted. The parse and policy projections are that large: with the limit at the
#: JIT's, Spark splits them, and a million-event batch took 15.6 s instead of 19.7 s
#: (docs/design.md). ``start`` applies it to a caller's session unless set there.
HUGE_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit"
HUGE_METHOD_BYTES = "8000"
_SPARK_HUGE_METHOD_DEFAULT = "65535"


def _quiet_query_failures(spark: SparkSession) -> None:
    """Silence Spark's own log of a failed streaming query: :func:`run_job` reports the
    failure itself (one line for a file-system fault, else the query's exception with
    its whole trace), so the log would only print the same trace twice."""
    try:
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        level = jvm.org.apache.logging.log4j.Level.OFF
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        configurator.setLevel("org.apache.spark.sql.execution.streaming", level)
    except Exception:  # logging is cosmetic: never fail a run over it
        pass


def _python() -> str:
    import sys

    return sys.executable


#: The (fixed) schema of Spark's ``binaryFile`` source, which a stream must be given.
_BINARY_FILE = "path string, modificationTime timestamp, length bigint, content binary"


def file_lines(
    spark: SparkSession, job: Job, *, max_files_per_trigger: int | None = None
) -> DataFrame:
    """The job's source directory as a stream: whole files (``file``, ``text``, ``mtime``)
    for JSONL and CSV; for Parquet the new files' names (``path``, ``file``, ``mtime``),
    which :func:`parquet_rows` reads, each with its own schema.

    A union's inputs (``[inputs.<name>]``) are one stream each (each with its own offsets
    in the checkpoint), tagged with ``input`` and put together: ``input``, ``file``,
    ``text``, ``path``, ``mtime`` (:func:`union_lines` turns a batch of it into lines)."""
    if job.inputs:
        frames = []
        for name, source in job.inputs:
            frame = _source_files(spark, source, max_files_per_trigger, f"inputs.{name}.path")
            if source.format != "parquet":
                frame = frame.withColumn("path", F.lit(None).cast("string"))
            else:
                frame = frame.withColumn("text", F.lit(None).cast("string"))
            frames.append(frame.select(F.lit(name).alias("input"), "file", "text", "path", "mtime"))
        out = frames[0]
        for frame in frames[1:]:
            out = out.unionByName(frame)
        return out
    return _source_files(spark, job.source, max_files_per_trigger, "source.path")


def union_lines(frame: DataFrame, job: Job) -> DataFrame:
    """A micro-batch of a union's stream (:func:`file_lines`) as lines: ``input``,
    ``file`` (``<input>/<name>``), ``line``, ``raw``, ``mtime``, ``pre_error``.

    Every input is split (and, for CSV and Parquet, turned into JSON objects) by its own
    format; JSONL files are split in SQL here (the Arrow kernel reads one input's files)."""
    out = None
    for name, source in job.inputs:
        files = frame.filter(F.col("input") == name)
        if source.format == "csv":
            lines = csv_rows(files)
        elif source.format == "parquet":
            lines = parquet_rows(files)
        else:
            lines = split_lines(files)
        if "pre_error" not in lines.columns:
            lines = lines.withColumn("pre_error", F.lit(None).cast("string"))
        lines = lines.select(
            F.lit(name).alias("input"),
            F.concat(F.lit(f"{name}/"), "file").alias("file"),
            "line",
            "raw",
            "mtime",
            "pre_error",
        )
        out = lines if out is None else out.unionByName(lines)
    assert out is not None
    return out


def check_watchable(path: str, key: str) -> None:
    """Check that ``run`` can watch ``path`` (the input named ``key``) for new files.

    Raises
    ------
    InputError
        If the path is missing, or is a file: a streaming run watches a directory (SPEC
        §10), and Spark's file source would otherwise fail inside the query with a long
        trace (``simulate`` reads a single file; ``run`` needs its directory).
    """
    if not os.path.exists(path):
        raise InputError(f"{key}: no such file or directory: {path!r}")
    if not os.path.isdir(path):
        raise InputError(
            f"{key}: {path!r} is a file, and run watches a directory for new files: move the "
            "file into a directory and name the directory"
        )


def _source_files(
    spark: SparkSession, source: Source, max_files_per_trigger: int | None, key: str
) -> DataFrame:
    """One source directory as a stream (see :func:`file_lines`); ``key`` names its path
    in errors."""
    check_watchable(source.path, key)
    path = source.path
    if source.format == "parquet":
        reader = spark.readStream.format("binaryFile").schema(_BINARY_FILE)
        if max_files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
        frame = reader.load(path)
        return frame.select(  # names only: the content is not read
            "path",
            F.regexp_extract("path", r"[^/]*$", 0).alias("file"),
            F.expr("unix_micros(modificationTime)").alias("mtime"),
        )
    # _metadata names are URI-encoded ("a b" → "a%20b"): decode them (keeping "+")
    file_name = F.expr("url_decode(replace(_metadata.file_name, '+', '%2B'))").alias("file")
    mtime = F.expr("unix_micros(_metadata.file_modification_time)").alias("mtime")
    reader = spark.readStream.format("text").option("wholetext", "true")
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
    frame = reader.load(path)
    return frame.select(file_name, F.col("value").alias("text"), mtime)


_INT = rf"^-?[0-9]{{1,{MAX_INTEGER_DIGITS}}}\z"
_FLOAT = r"^-?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?\z"


def _json_string(expr: str) -> str:
    """SQL for the JSON string literal of a text expression."""
    return f"substr(to_json(array({expr})), 2, length(to_json(array({expr}))) - 2)"


def _csv_value(cell: str) -> str:
    """SQL for the JSON value of a CSV cell, typed as ``sparktide.reader`` types it: empty
    is null, then an integer of at most 38 digits, then a finite float, else text."""
    return (
        f"CASE WHEN {cell} = '' THEN 'null' "
        f"WHEN {cell} RLIKE {sql_string(_INT)} THEN CAST(CAST({cell} AS DECIMAL(38,0)) AS STRING) "
        f"WHEN {cell} RLIKE {sql_string(_FLOAT)} AND abs(CAST({cell} AS DOUBLE)) "
        "<> CAST('Infinity' AS DOUBLE) "
        f"THEN CAST(CAST({cell} AS DOUBLE) AS STRING) "
        f"ELSE {_json_string(cell)} END"
    )


def _csv_cells(line: str) -> str:
    """SQL for the unquoted cells of a CSV line (:data:`sparktide.reader.CSV_FIELD`)."""
    quoted = "(?s)^" + CSV_QUOTED + r"\z"
    pattern = sql_string(quoted)
    unquote = (
        f"CASE WHEN left(c, 1) = '\"' THEN concat(replace(regexp_extract(c, {pattern}, 1), "
        f"'\"\"', '\"'), regexp_extract(c, {pattern}, 2)) ELSE c END"
    )
    fields = f"regexp_extract_all(concat(',', {line}), {sql_string(CSV_FIELD)}, 1)"
    return f"transform({fields}, c -> {unquote})"


def csv_rows(files: DataFrame) -> DataFrame:
    r"""CSV files → one JSON-object line per data row, as the reference reader reads them:
    lines end at ``\n`` (a trailing ``\r`` is dropped), cells are split and typed alike
    (empty → null, integer, float, else text), and a row that is not UTF-8, too long,
    under a header that is not UTF-8 or names a column twice, or with the wrong number of
    cells keeps its text and gets the reference reader's error in ``pre_error``."""
    pieces = files.select("file", "mtime", F.posexplode(F.expr(lines_of("text"))).alias("pos", "t"))
    # the trailing \r goes by bytes: the line may not be UTF-8 (a regex would decode it)
    lines = pieces.selectExpr(
        "file",
        "mtime",
        "pos",
        "CASE WHEN endswith(t, '\\r') THEN "
        "CAST(substring(CAST(t AS BINARY), 1, octet_length(t) - 1) AS STRING) ELSE t END AS text",
    ).withColumn("utf8", F.expr("is_valid_utf8(text)"))
    headers = lines.filter("pos = 0").selectExpr(
        "file",
        "utf8 AS header_utf8",
        f"CASE WHEN utf8 THEN {_csv_cells('text')} ELSE array() END AS names",
    )
    rows = lines.filter(f"pos > 0 AND btrim(text, {sql_string(WHITE_SPACE)}) <> ''").join(
        headers, on="file"
    )
    rows = rows.withColumn(
        "cells",
        F.expr(
            f"CASE WHEN utf8 AND length(text) <= {MAX_LINE_CHARS} THEN {_csv_cells('text')} "
            "ELSE array() END"
        ),
    ).withColumn(
        "twice",
        F.expr("try_element_at(filter(names, (x, i) -> array_position(names, x) <> i + 1), 1)"),
    )
    pairs = (
        "transform(arrays_zip(names, cells), x -> concat("
        f"{_json_string('x.names')}, ':', {_csv_value('x.cells')}))"
    )
    number = "concat('line ', pos + 1, ': '"
    checks = [
        ("NOT utf8", f"{number}, 'invalid UTF-8')"),
        (
            f"length(text) > {MAX_LINE_CHARS}",
            f"{number}, 'too long (', length(text), ' characters, the limit is {MAX_LINE_CHARS})')",
        ),
        ("NOT header_utf8", f"{number}, 'the header (line 1) is not valid UTF-8')"),
        (
            "twice IS NOT NULL",
            f"{number}, 'the header names column \\'', {shown_text('twice')}, '\\' twice')",
        ),
        (
            "size(cells) <> size(names)",
            f"{number}, 'expected ', size(names), ' columns, got ', size(cells))",
        ),
    ]
    error = "CASE " + " ".join(f"WHEN {c} THEN {e}" for c, e in checks) + " END"
    rows = rows.withColumn("pre_error", F.expr(error))
    return rows.select(
        "file",
        (F.col("pos") + 1).cast("bigint").alias("line"),
        F.expr(
            "CASE WHEN NOT utf8 THEN make_valid_utf8(text) WHEN pre_error IS NOT NULL THEN text "
            f"ELSE concat('{{', array_join({pairs}, ','), '}}') END"
        ).alias("raw"),
        "mtime",
        "pre_error",
    )


def parquet_rows(files: DataFrame, job: Job | None = None) -> DataFrame:
    """Parquet files (``path``, ``file``, ``mtime``, from :func:`file_lines`) → one
    JSON-object line per row (``file``, ``line``, ``raw``, ``mtime``, ``pre_error``).

    Spark's file source reads every file with one schema (a column another file lacks
    would read as null, one it adds would be lost, and one of another type would fail
    the batch), so each file is read with its own: files are grouped by the schema in
    their footers and each group read on its own. A file Spark cannot read as Parquet
    (not Parquet, damaged footer, or a type Spark does not read, such as nanosecond
    timestamps) becomes one malformed record, as in the reference reader. Timestamp
    columns are written as the reference writes them: zone-aware ones in UTC
    (``2026-03-01T09:00:05Z``), others without a zone (``2026-03-01T09:00:05``).

    With ``job``, rows whose typed columns already say what parsing their JSON would
    (:func:`_typed`) skip the JSON route: they carry ``fast`` and the values
    :func:`~sparktide.spark.parse.parse_lines` takes from the Arrow kernel for JSONL.
    """
    spark = files.sparkSession
    typed_job = job if job is not None and _typed(job) else None
    groups: dict[str, list[Row]] = {}
    unreadable: list[Row] = []
    for row in files.select("path", "file", "mtime").collect():
        schema = _parquet_schema(spark, row["path"])
        if schema is None:
            unreadable.append(row)
        else:
            groups.setdefault(schema, []).append(row)
    frames = []
    for rows in groups.values():
        try:
            frame = spark.read.parquet(*(_glob_escape(r["path"]) for r in rows))
        except Exception:
            unreadable.extend(rows)
            continue
        frames.append(_parquet_lines(frame, typed_job))
    typed = typed_job is not None
    schema = "file string, line bigint, raw string, mtime bigint, pre_error string"
    if typed:
        schema += ", " + ", ".join(f"{n} {kind}" for n, kind in _TYPED_COLUMNS)
        schema += f", {FULL_TEXT} string"
    if unreadable:
        empty = (False, None, None, None, None, None, None) if typed else ()
        frames.append(
            spark.createDataFrame(
                [(r["file"], 1, None, r["mtime"], UNREADABLE_PARQUET, *empty) for r in unreadable],
                schema,
            )
        )
    if not frames:
        return spark.createDataFrame([], schema)
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def _parquet_schema(spark: SparkSession, path: str) -> str | None:
    """The schema in the footer of the Parquet file at ``path`` (a grouping key), or
    None if the file cannot be read as Parquet."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    try:
        source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(  # type: ignore[union-attr]
            jvm.org.apache.hadoop.fs.Path(path),
            conf,  # type: ignore[union-attr]
        )
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source)  # type: ignore[union-attr]
        try:
            return str(reader.getFooter().getFileMetaData().getSchema().toString())
        finally:
            reader.close()
    except Py4JJavaError:
        return None


def _glob_escape(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped (a file named ``x[1].parquet``)."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", path)


#: The columns of a typed (vouched) Parquet row, as the Arrow kernel gives them for JSONL.
_TYPED_COLUMNS = (
    ("fast", "boolean"),
    ("_kt", "bigint"),
    ("_ka", "bigint"),
    ("_kpid", "string"),
    ("_kkey", "string"),
    ("_kmj", "string"),
)
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC = (*_INTEGRAL, T.FloatType, T.DoubleType, T.DecimalType)


def _typed(job: Job) -> bool:
    """Whether ``job``'s Parquet rows may skip the JSON route where their types allow:
    jobs the Arrow kernel serves for JSONL (no CTI, interval or edge columns)."""
    punctuation = job.punctuation
    return not (
        (punctuation is not None and punctuation.explicit)
        or job.source.end_time is not None
        or job.edges
    )


def _vouched(
    job: Job, fields: list[T.StructField], names: list[str], values: dict[str, str]
) -> list[str]:
    """The typed route of one schema group (:data:`_TYPED_COLUMNS`, as SQL).

    A row is vouched for (``fast``) when its typed columns give exactly what the JSON
    route would read from the JSON text made of them, with no error: times from
    zone-aware timestamps within years 1-9999 (the JSON route parses the same instant
    back from its ISO text), partitions from integers or strings (the route's own
    expression), substream keys from integers, booleans or printable-ASCII strings
    without quotes or backslashes (their JSON text in quotes), number columns of a
    number type and finite. ``_kmj`` is the JSON text the route would make of the
    fields later steps read, by the same ``to_json``. A column whose type allows none of
    this leaves the whole group to the JSON route."""
    source = job.source
    by_name = {f.name: (f, c) for f, c in zip(fields, names, strict=True)}
    if len(by_name) != len(fields):  # a name given twice: the route decides
        return _not_vouched()
    conditions: list[str] = []

    def time(name: str) -> str | None:
        if name not in by_name or not isinstance(by_name[name][0].dataType, T.TimestampType):
            return None
        micros = f"unix_micros({by_name[name][1]})"
        conditions.append(f"coalesce({micros} BETWEEN {FIRST_INSTANT} AND {LAST_INSTANT}, false)")
        return micros

    arrival = "_mtime" if source.arrival_time is None else time(source.arrival_time)
    event = arrival if source.timestamp_by is None else time(source.timestamp_by)
    if arrival is None or event is None:
        return _not_vouched()
    pid = "'0'"
    if source.partition is not None:
        if source.partition not in by_name:
            return _not_vouched()
        item, column = by_name[source.partition]
        if isinstance(item.dataType, _INTEGRAL):
            pid = f"CAST({column} AS STRING)"
        elif isinstance(item.dataType, T.StringType):
            pid = partition_id(column)  # (the JSON route's own expression)
        else:
            return _not_vouched()
        # (a text that is not UTF-8 becomes U+FFFD in the JSON route's text)
        conditions.append(
            f"coalesce(is_valid_utf8(CAST({column} AS STRING)), false)"
            if isinstance(item.dataType, T.StringType)
            else f"{column} IS NOT NULL"
        )
    key = "CAST(NULL AS STRING)"
    if source.over is not None:
        if source.over not in by_name:
            return _not_vouched()
        item, column = by_name[source.over]
        if isinstance(item.dataType, (*_INTEGRAL, T.BooleanType)):
            key = f"CAST({column} AS STRING)"
            conditions.append(f"{column} IS NOT NULL")
        elif isinstance(item.dataType, T.StringType):
            key = f"concat('\"', {column}, '\"')"
            conditions.append(f"coalesce({column} RLIKE '^[ !#-\\\\[\\\\]-~]*\\\\z', false)")
        else:
            return _not_vouched()
    for name in sorted(job.numeric_columns):
        if name not in by_name:
            continue  # (missing: no error, as in the route)
        item, column = by_name[name]
        if not isinstance(item.dataType, _NUMERIC):
            return _not_vouched()
        if isinstance(item.dataType, (T.FloatType, T.DoubleType)):  # the route: "NaN" text
            conditions.append(
                f"({column} IS NULL OR NOT (isnan({column}) OR abs({column}) = double('inf')))"
            )
    carried = [n for n in carried_fields(job) if n in by_name]
    mj = (
        f"to_json(named_struct({', '.join(f'{sql_string(n)}, {values[n]}' for n in carried)}), "
        f"{_JSON_OPTIONS})"
        if carried
        else "'{}'"
    )
    fast = " AND ".join(conditions) or "true"
    return [
        f"{fast} AS fast",
        f"{event} AS _kt",
        f"{arrival} AS _ka",
        f"{pid} AS _kpid",
        f"{key} AS _kkey",
        f"{mj} AS _kmj",
    ]


def _not_vouched() -> list[str]:
    return [
        f"CAST(NULL AS {kind.upper()}) AS {n}" if n != "fast" else "false AS fast"
        for n, kind in _TYPED_COLUMNS
    ]


_JSON_OPTIONS = (
    "map('timestampFormat', \"yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX\", 'ignoreNullFields', 'false')"
)


def _parquet_lines(frame: DataFrame, job: Job | None = None) -> DataFrame:
    """Rows of Parquet files read with one schema as JSON-object lines (with ``job``,
    the typed route's columns too: :func:`_vouched`).

    The file's column names are data: they reach SQL only as string expressions
    (:func:`~sparktide.spark.sql.sql_string`); the columns are renamed by position
    (``c0``, ``c1``, ...) before any SQL refers to them."""
    fields = frame.schema.fields
    names = [f"c{i}" for i in range(len(fields))]
    frame = frame.toDF(*names).selectExpr(  # toDF renames by position, parsing nothing
        "*",
        "url_decode(replace(_metadata.file_name, '+', '%2B')) AS _file",
        "CAST(_metadata.row_index + 1 AS BIGINT) AS _line",
        "unix_micros(_metadata.file_modification_time) AS _mtime",
    )
    columns = []
    values: dict[str, str] = {}
    for item, column in zip(fields, names, strict=True):
        if isinstance(item.dataType, T.TimestampType):
            column = iso(f"unix_micros({column})")
        elif isinstance(item.dataType, T.TimestampNTZType):
            column = _naive_iso(column)
        columns.append(f"{sql_string(item.name)}, {column}")
        values.setdefault(item.name, column)
    raw = f"to_json(named_struct({', '.join(columns)}), {_JSON_OPTIONS})"
    if job is None:
        return frame.selectExpr(
            "_file AS file",
            "_line AS line",
            f"{raw} AS raw",
            "_mtime AS mtime",
            "CAST(NULL AS STRING) AS pre_error",
        )
    typed = frame.selectExpr("*", *_vouched(job, list(fields), names, values))
    # A vouched row's text is parsed by no one; later steps read it when the job releases
    # events (no window), else only for a dead letter: FULL_TEXT, which the engine drops
    # before parsing (so it is computed for dead-lettered rows alone).
    text = raw if job.window is None else f"CASE WHEN fast THEN NULL ELSE {raw} END"
    return typed.selectExpr(
        "_file AS file",
        "_line AS line",
        f"{text} AS raw",
        "_mtime AS mtime",
        "CAST(NULL AS STRING) AS pre_error",
        *(n for n, _ in _TYPED_COLUMNS),
        f"{raw} AS {FULL_TEXT}",
    )


def _naive_iso(column: str) -> str:
    """Python's ``datetime.isoformat()`` of a zone-less timestamp column, in SQL."""
    base = f"date_format({column}, \"yyyy-MM-dd'T'HH:mm:ss\")"
    fraction = f"date_format({column}, 'SSSSSS')"
    return f"CASE WHEN {fraction} = '000000' THEN {base} ELSE concat({base}, '.', {fraction}) END"


def broker_lines(
    frame: DataFrame,
    *,
    value: str = "value",
    arrival: str = "timestamp",
    partition: str = "partition",
    position: str = "offset",
) -> DataFrame:
    """Shape a broker stream (Kafka's ``value``, ``timestamp``, ``partition``, ``offset``)
    as sparktide's input lines.

    Arrival order is (arrival time, partition, offset); the arrival time is the broker's
    timestamp (use ``LogAppendTime`` topics) unless the job names an ``arrival_time``
    field; the partition column is kept under its own name, so a job whose
    ``source.partition`` is ``"partition"`` takes the broker partition.
    """
    cast = f"CAST(`{partition}` AS BIGINT)"
    return frame.select(
        F.expr(f"lpad(CAST({cast} AS STRING), 10, '0')").alias("file"),
        F.col(position).cast("bigint").alias("line"),
        F.btrim(F.col(value).cast("string"), F.lit(WHITE_SPACE)).alias("raw"),
        F.expr(f"unix_micros(`{arrival}`)").alias("mtime"),
        F.expr(cast).alias(partition),
    ).filter("raw <> ''")


def start(
    spark: SparkSession,
    job: Job,
    files: DataFrame | None = None,
    *,
    once: bool = False,
    max_files_per_trigger: int | None = None,
    processing_time: str | None = None,
    clock: Callable[[int], int] | None = None,
    on_metrics: Callable[[dict[str, Any]], None] | None = None,
) -> StreamingQuery:
    """Start ``job`` on Spark and return its :class:`StreamingQuery`.

    Parameters
    ----------
    spark
        The session.
    job
        The job (its ``[output]`` directories are written).
    files
        A streaming DataFrame of whole files (``file``, ``text``, ``mtime``), or of
        lines (``file``, ``line``, ``raw``, ``mtime``, e.g. from :func:`broker_lines`);
        by default the job's own source directory.
    once
        Process what is there and stop (available-now trigger).
    max_files_per_trigger
        At most this many new files per micro-batch.
    processing_time
        Trigger interval such as ``"10 seconds"`` (when not ``once``).
    clock
        Processing time for each new batch id (tests); the wall clock by default.
    on_metrics
        Called with each micro-batch's metrics record.

    Raises
    ------
    ConfigError
        ``output.checkpoint`` is in use by another run, or was written by a job with
        another window or input layout.
    """
    if spark.conf.get(HUGE_METHOD_LIMIT, _SPARK_HUGE_METHOD_DEFAULT) == _SPARK_HUGE_METHOD_DEFAULT:
        spark.conf.set(HUGE_METHOD_LIMIT, HUGE_METHOD_BYTES)
    engine = SparkEngine(spark, job, clock=clock)
    engine.on_metrics = on_metrics
    _take_checkpoint(engine)
    if files is None:
        files = file_lines(spark, job, max_files_per_trigger=max_files_per_trigger)

    def batch(frame: DataFrame, batch_id: int) -> None:
        if "input" in frame.columns:  # a union of inputs
            lines = union_lines(frame, job)
        elif "raw" in frame.columns:
            lines = frame
        elif job.source.format == "csv":
            lines = csv_rows(frame)
        elif job.source.format == "parquet":
            lines = parquet_rows(frame, job)
        else:  # whole JSONL files: the engine parses them with Arrow
            lines = frame
        engine.process(lines, batch_id)

    writer = (
        files.writeStream.foreachBatch(batch)
        .queryName(f"sparktide:{job.output.checkpoint}")
        .option("checkpointLocation", f"{job.output.checkpoint}/spark")
    )
    if once:
        writer = writer.trigger(availableNow=True)
    elif processing_time is not None:
        writer = writer.trigger(processingTime=processing_time)
    try:
        query = writer.start()
    except BaseException:
        engine.store.unlock()
        raise
    query.sparktide_engine = engine  # type: ignore[attr-defined]
    _RUNS[engine.store.root] = query
    return query


#: What the errors of file systems that cannot be written say (Python's and Hadoop's).
_WRITE_FAILURES = (
    "permission denied",
    "no space left",
    "not a directory",
    "parentnotdirectoryexception",
    "mkdirs failed",
    "read-only file system",
    "quota exceeded",
    "accesscontrolexception",
    "filealreadyexistsexception",
)


def _run_error(exception: BaseException, job: Job) -> BaseException:
    """A failed query as a :class:`RunError` when it failed writing (an output, the
    metrics or the checkpoint cannot be written), else the query's own exception.

    The batch that failed was not committed, so running again once the cause is fixed
    replays it: nothing is lost or written twice."""
    text = str(exception)
    if not any(marker in text.lower() for marker in _WRITE_FAILURES):
        return exception
    cause = next(
        line.strip().removeprefix(": ")
        for line in text.splitlines()
        if any(m in line.lower() for m in _WRITE_FAILURES)
    )
    places = [p for p in (job.output.path, job.output.dead_letter, job.output.metrics) if p]
    named = next((p for p in places if p.removeprefix("file:") in text), None)
    where = f"writing {named}" if named else "on a file-system fault"
    return RunError(
        f"the run failed {where}: {cause[:300]}. Fix the cause and run again: the job "
        "resumes from its checkpoint, replaying the failed batch (nothing is lost or "
        "written twice)"
    )


#: The query of each checkpoint this process started (to free the ones that stopped).
_RUNS: dict[Path, StreamingQuery] = {}


def _take_checkpoint(engine: SparkEngine) -> None:
    """Lock the engine's checkpoint and check it was written by a compatible job (see
    :meth:`StateStore.lock` and :meth:`StateStore.check_job`). A query this process
    started earlier on the same checkpoint gives it up if it has stopped."""
    earlier = _RUNS.get(engine.store.root)
    if earlier is not None and not earlier.isActive:
        earlier.sparktide_engine.store.unlock()  # type: ignore[attr-defined]
        del _RUNS[engine.store.root]
    engine.store.lock()
    try:
        engine.store.check_job(engine.job)
    except BaseException:
        engine.store.unlock()
        raise


_COUNTS = "map<string,bigint>"
_TALLY = (
    f"input bigint, admitted bigint, early bigint, late bigint, out_of_order bigint, "
    f"adjusted bigint, dropped {_COUNTS}, dead_lettered {_COUNTS}"
)
#: The fields of a metrics record that are published as observed metrics (docs/metrics.md).
METRICS_SCHEMA = (
    f"batch bigint, flushed boolean, {_TALLY}, in_no_window bigint, windows_emitted bigint, "
    "released bigint, processing_time string, watermark string, watermark_delay_us bigint, "
    "output_watermark string, "
    f"this_batch struct<{_TALLY}, in_no_window bigint, windows_emitted bigint, "
    "released bigint>, "
    f"partitions array<struct<partition string, {_TALLY}, arrival_clock string, "
    "watermark string>>, "
    "diagnostics array<struct<kind string, partition string, count bigint, message string>>"
)


def publish_metrics(
    spark: SparkSession,
    job: Job,
    *,
    once: bool = False,
    trigger: str = "1 second",
) -> StreamingQuery:
    """Publish a job's metrics records through Spark's own monitoring: a small streaming
    query named ``sparktide-metrics:<checkpoint>`` reads the records the job's micro-batches
    write and reports the newest one as the observed metrics ``sparktide`` of its
    progress, which every :class:`~pyspark.sql.streaming.StreamingQueryListener` and
    ``StreamingQuery.lastProgress`` sees.

    Spark offers a ``foreachBatch`` sink (where the engine runs) no public way to add
    observed metrics to its own query's progress (metrics observed inside the batch
    function are not reported), hence the second query; ``docs/metrics.md`` says more.

    Parameters
    ----------
    spark
        The session.
    job
        The job (its metrics directory: ``[output] metrics``, else beside its state).
    once
        Publish what is there and stop (run it after the job's own ``--once`` run).
    trigger
        How often a continuous publisher looks for new records.
    """
    engine_dir = SparkEngine.metrics_directory_of(job)
    os.makedirs(engine_dir.removeprefix("file:"), exist_ok=True)
    records = spark.readStream.schema(METRICS_SCHEMA).json(engine_dir)
    newest = F.struct("batch", "flushed")
    fields = [name.split(" ", 1)[0] for name in _top_level(METRICS_SCHEMA)]
    observed = records.observe(
        "sparktide",
        *(F.max_by(name, newest).alias(name) for name in fields),
        F.count(F.lit(1)).alias("records"),
    )
    writer = (
        observed.writeStream.format("noop")
        .queryName(f"sparktide-metrics:{job.output.checkpoint}")
        .option("checkpointLocation", f"{job.output.checkpoint}/spark-metrics")
    )
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime=trigger)
    return writer.start()


def _top_level(ddl: str) -> list[str]:
    """The top-level ``name type`` items of a DDL schema string."""
    items, depth, current = [], 0, ""
    for char in ddl:
        depth += char == "<"
        depth -= char == ">"
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    items.append(current.strip())
    return items


@contextmanager
def _interrupts() -> Iterator[Callable[[], bool]]:
    """Within the block, SIGINT (Ctrl-C) only sets a flag, which the yielded function
    reads; outside the main thread (where signals cannot be handled) it stays False."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield lambda: bool(received)
    finally:
        signal.signal(signal.SIGINT, previous)


def run_job(
    job: Job,
    *,
    once: bool = False,
    flush: bool = False,
    spark: SparkSession | None = None,
    max_files_per_trigger: int | None = None,
    clock: Callable[[int], int] | None = None,
    trigger: str | None = None,
    publish: bool = True,
    on_metrics: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any] | None:
    """Run ``job`` until it is done (``once``) or interrupted; return the last metrics.

    Parameters
    ----------
    job
        The job.
    once
        Process what is there and stop (available-now trigger).
    flush
        After a ``once`` run, close every open window and release every held event.
    spark
        The session; a local one by default.
    max_files_per_trigger
        At most this many new files per micro-batch.
    clock
        Processing time per new batch id (tests); the wall clock by default.
    trigger
        Processing-time trigger interval such as ``"10 seconds"`` (continuous runs).
    publish
        Also publish the metrics as Spark observed metrics (:func:`publish_metrics`).
    on_metrics
        Called with each micro-batch's metrics record (and the flush's).
    """
    if job.output.checkpoint is None:
        raise ConfigError("output.checkpoint", "is required to run on Spark")
    if job.output.path is None:
        raise ConfigError("output.path", "is required to run on Spark")
    spark = spark or local_session()
    query = start(
        spark,
        job,
        once=once,
        max_files_per_trigger=max_files_per_trigger,
        clock=clock,
        processing_time=trigger,
        on_metrics=on_metrics,
    )
    engine: SparkEngine = query.sparktide_engine  # type: ignore[attr-defined]
    publisher = None
    try:
        if publish and not once:
            publisher = publish_metrics(spark, job, trigger=trigger or "1 second")
        try:
            with _interrupts() as interrupted:
                # Short waits, so Ctrl-C lands between py4j calls: PySpark's own SIGINT
                # handler calls into the JVM from inside the blocked call and wedges py4j.
                while not query.awaitTermination(0.5):
                    if interrupted():  # stop cleanly; the checkpoint resumes the job
                        query.stop()
                        break
        except StreamingQueryException as exc:  # the query failed
            error = _run_error(exc, job)
            if error is exc:
                raise
            raise error from exc
        metrics = engine.flush() if flush else engine.last_metrics
        if publish and once:
            publish_metrics(spark, job, once=True).awaitTermination()
    finally:
        if publisher is not None and publisher.isActive:
            publisher.stop()
        if query.isActive:
            query.stop()
        engine.store.unlock()
        _RUNS.pop(engine.store.root, None)
    return metrics
