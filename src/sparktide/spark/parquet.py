"""Parquet input as sparktide's lines: each file read by Spark with its own schema.

A row becomes a JSON-object line (the record the reference reader makes of it), and,
for jobs whose values the typed columns already say, the typed route's values — the
ones :func:`~sparktide.spark.parse.parse_lines` takes from the Arrow kernel for JSONL —
and the one-pass kernel's inputs (:func:`~sparktide.spark.fused.typed_columns`).
"""

from __future__ import annotations

from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import types as T

from sparktide.job import Job
from sparktide.reader import UNREADABLE_PARQUET
from sparktide.spark.arrowparse import carried_fields
from sparktide.spark.fused import TYPED, TYPED_TEXT, fusable, typed_columns
from sparktide.spark.parse import (
    FIRST_INSTANT,
    FULL_TEXT,
    LAST_INSTANT,
    glob_escape,
    partition_id,
)
from sparktide.spark.sql import iso, sql_string

__all__ = ["parquet_rows"]


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
            frame = spark.read.parquet(*(glob_escape(r["path"]) for r in rows))
        except Exception:
            unreadable.extend(rows)
            continue
        frames.append(_parquet_lines(frame, typed_job))
    typed = typed_job is not None
    schema = "file string, line bigint, raw string, mtime bigint, pre_error string"
    kernel = typed_columns(typed_job) if typed and fusable(typed_job) else []
    if typed:
        schema += ", " + ", ".join(f"{n} {kind}" for n, kind in _TYPED_COLUMNS)
        schema += f", {FULL_TEXT} string"
        schema += "".join(f", {n} {kind}" for n, kind in kernel)
    if unreadable:
        empty: tuple = ()
        if typed:  # (not vouched: ``fast`` and the kernel's TYPED false, the rest null)
            empty = (False, *[None] * (len(_TYPED_COLUMNS) - 1), None)
            empty += tuple(False if n == TYPED else None for n, _ in kernel)
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


#: The columns of a typed (vouched) Parquet row, as the Arrow kernel gives them for JSONL.
_TYPED_COLUMNS = (
    ("fast", "boolean"),
    ("_kt", "bigint"),
    ("_ka", "bigint"),
    ("_kpid", "string"),
    ("_kkey", "string"),
    ("_kmj", "string"),
)
#: SQL: a text that is its own JSON string's inside (printable ASCII, no quote or backslash).
_PLAIN_TEXT = sql_string(r"^[ !#-\[\]-~]*\z")
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
            conditions.append(f"coalesce({column} RLIKE {_PLAIN_TEXT}, false)")
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


def _kernel_typed(job: Job, fields: list[T.StructField], names: list[str]) -> list[str]:
    """The one-pass kernel's typed inputs of one schema group
    (:func:`~sparktide.spark.fused.typed_columns`, as SQL), so a vouched row reaches it
    with no JSON text: group-by values as the JSON text the route would group by
    (integers and booleans as written, printable-ASCII strings without quotes or
    backslashes in quotes, ``null``), ``count`` inputs as present or not, ``sum`` /
    ``avg`` inputs as the exact integer or the float the route reads from ``to_json``'s
    text (integers of a Parquet integer type, doubles — ``fast`` rules out NaN and
    infinities). A column of another type (decimals, floats, timestamps, nested) leaves
    the whole group to the JSON text; a row failing a condition leaves that row."""
    window = job.window
    assert window is not None
    by_name = {f.name: (f, c) for f, c in zip(fields, names, strict=True)}
    conditions = ["fast"]
    values = []
    for i, name in enumerate(window.group_by):
        text = "'null'"
        if name in by_name:
            item, column = by_name[name]
            if isinstance(item.dataType, (*_INTEGRAL, T.BooleanType)):
                text = f"coalesce(CAST({column} AS STRING), 'null')"
            elif isinstance(item.dataType, T.StringType):
                text = f"coalesce(concat('\"', {column}, '\"'), 'null')"
                conditions.append(f"coalesce({column} RLIKE {_PLAIN_TEXT}, true)")
            else:
                return _untyped(job)
        values.append(f"{text} AS _kg{i}")
    for k, aggregate in enumerate(window.aggregates):
        name = aggregate.column
        if name is None:
            continue
        item, column = by_name.get(name, (None, "NULL"))
        kind = None if item is None else item.dataType
        if aggregate.function == "count":
            if kind is not None and not isinstance(
                kind, (*_INTEGRAL, T.BooleanType, T.StringType, T.DoubleType)
            ):
                return _untyped(job)
            if isinstance(kind, T.DoubleType):  # (NaN's text is the route's own)
                conditions.append(
                    f"({column} IS NULL OR NOT (isnan({column}) OR abs({column}) = double('inf')))"
                )
            values.append(f"CASE WHEN {column} IS NULL THEN 0 ELSE 1 END AS _kn{k}")
            continue
        whole = real = "NULL"
        if isinstance(kind, _INTEGRAL):
            whole = f"CAST({column} AS BIGINT)"
        elif isinstance(kind, T.DoubleType):
            real = column
        elif kind is not None:
            return _untyped(job)
        values += [f"CAST({whole} AS BIGINT) AS _ki{k}", f"CAST({real} AS DOUBLE) AS _kd{k}"]
    return [f"{' AND '.join(conditions)} AS {TYPED}", f"NULL AS {TYPED_TEXT}", *values]


def _untyped(job: Job) -> list[str]:
    return [
        f"false AS {n}" if n == TYPED else f"CAST(NULL AS {kind.upper()}) AS {n}"
        for n, kind in typed_columns(job)
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
    kernel = [] if not fusable(job) else _kernel_typed(job, list(fields), names)
    if kernel:
        typed = typed.selectExpr("*", *kernel)
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
        # (the kernel's text: computed here, in the CASE, where a reference to FULL_TEXT
        # would compute that for every row)
        *(
            f"CASE WHEN {TYPED} THEN NULL ELSE {raw} END AS {n}" if n == TYPED_TEXT else n
            for n, _ in (typed_columns(job) if kernel else [])
        ),
    )


def _naive_iso(column: str) -> str:
    """Python's ``datetime.isoformat()`` of a zone-less timestamp column, in SQL."""
    base = f"date_format({column}, \"yyyy-MM-dd'T'HH:mm:ss\")"
    fraction = f"date_format({column}, 'SSSSSS')"
    return f"CASE WHEN {fraction} = '000000' THEN {base} ELSE concat({base}, '.', {fraction}) END"
