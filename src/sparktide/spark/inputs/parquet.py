"""Parquet input as sparktide's lines: each file read by Spark with its own schema.

A row becomes a JSON-object line (the record the reference reader makes of it), and,
for jobs whose values the typed columns already say, the typed route's values
(:mod:`.parquettyped`) — the ones :func:`~sparktide.spark.inputs.sqlparse.parse_lines`
takes from the Arrow kernel for JSONL — and the one-pass kernel's inputs
(:func:`~sparktide.spark.onepass.typed_columns`).
"""

from __future__ import annotations

from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import types as T

from sparktide.job import Job
from sparktide.reader import UNREADABLE_PARQUET
from sparktide.spark.inputs.contract import FULL_TEXT, VOUCHED, VOUCHED_COLUMNS
from sparktide.spark.inputs.parquettyped import (
    JSON_OPTIONS,
    kernel_inputs,
    typed_route,
    vouched_values,
)
from sparktide.spark.inputs.textfiles import glob_escape
from sparktide.spark.onepass import TYPED, TYPED_TEXT, fusable, typed_columns
from sparktide.spark.sql import iso, sql_string

__all__ = ["META", "parquet_rows", "typed_rows"]


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
    (:func:`~sparktide.spark.inputs.parquettyped.typed_route`) skip the JSON route: they
    carry ``fast`` and the values :func:`~sparktide.spark.inputs.sqlparse.parse_lines`
    takes from the Arrow kernel for JSONL.
    """
    spark = files.sparkSession
    typed_job = job if job is not None and typed_route(job) else None
    groups, unreadable = _schema_groups(spark, files)
    frames = []
    for rows in groups:
        try:
            frame = spark.read.parquet(*(glob_escape(r["path"]) for r in rows))
        except Exception:
            unreadable.extend(rows)
            continue
        frames.append(_parquet_lines(frame, typed_job))
    typed = typed_job is not None
    kernel = typed_columns(typed_job) if typed and fusable(typed_job) else []
    schema = _lines_schema(typed, kernel)
    if unreadable:
        empty: tuple = ()
        if typed:  # (not vouched: ``fast`` and the kernel's TYPED false, the rest null)
            empty = (False, *[None] * (len(VOUCHED_COLUMNS) - 1), None)
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


def _schema_groups(spark: SparkSession, files: DataFrame) -> tuple[list[list[Row]], list[Row]]:
    """The files (``path``, ``file``, ``mtime``) grouped by the schema in their footers,
    in order of appearance, and those that cannot be read as Parquet."""
    groups: dict[str, list[Row]] = {}
    unreadable: list[Row] = []
    for row in files.select("path", "file", "mtime").collect():
        schema = _parquet_schema(spark, row["path"])
        if schema is None:
            unreadable.append(row)
        else:
            groups.setdefault(schema, []).append(row)
    return list(groups.values()), unreadable


def _lines_schema(typed: bool, kernel: list[tuple[str, str]]) -> str:
    """The schema of the lines, as Spark's schema text: with the typed route's columns
    (and ``kernel``: the one-pass kernel's) when ``typed``."""
    schema = "file string, line bigint, raw string, mtime bigint, pre_error string"
    if typed:
        schema += ", " + ", ".join(f"{n} {kind}" for n, kind in VOUCHED_COLUMNS)
        schema += f", {FULL_TEXT} string"
        schema += "".join(f", {n} {kind}" for n, kind in kernel)
    return schema


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


#: The hidden columns :func:`typed_rows` reads each row's file, line, modification time
#: and early dead letter from (a frame's own columns are all data).
META = ("__st_file", "__st_line", "__st_mtime", "__st_pre_error")


def _parquet_lines(frame: DataFrame, job: Job | None = None) -> DataFrame:
    """Rows of Parquet files read with one schema as JSON-object lines (with ``job``,
    the typed route's columns too): :func:`typed_rows`, each row's place from
    ``_metadata``."""
    return typed_rows(
        frame.selectExpr(
            "*",
            f"url_decode(replace(_metadata.file_name, '+', '%2B')) AS {META[0]}",
            f"CAST(_metadata.row_index + 1 AS BIGINT) AS {META[1]}",
            f"unix_micros(_metadata.file_modification_time) AS {META[2]}",
            f"CAST(NULL AS STRING) AS {META[3]}",
        ),
        job,
    )


def typed_rows(frame: DataFrame, job: Job | None = None) -> DataFrame:
    """Typed rows as JSON-object lines (with ``job``, the typed route's columns too:
    :func:`~.parquettyped.vouched_values`); the columns of :data:`META`, last in
    ``frame``, give each row's ``file``, ``line``, ``mtime`` and ``pre_error``
    (:func:`renamed_rows` of the frame renamed by position)."""
    fields = [f for f in frame.schema.fields if f.name not in META]
    assert tuple(frame.columns[len(fields) :]) == META
    names = [f"c{i}" for i in range(len(fields))]
    return renamed_rows(frame.toDF(*names, "_file", "_line", "_mtime", "_pre_error"), fields, job)


def renamed_rows(
    frame: DataFrame, fields: list[T.StructField], job: Job | None = None
) -> DataFrame:
    """:func:`typed_rows` of a frame whose data columns are renamed by position (``c0``,
    ``c1``, ... for ``fields``: each one's name and type) and followed by ``_file``,
    ``_line``, ``_mtime`` and ``_pre_error``.

    The row's column names are data: they reach SQL only as string expressions
    (:func:`~sparktide.spark.sql.sql_string`), never as names."""
    names = [f"c{i}" for i in range(len(fields))]
    columns = []
    values: dict[str, str] = {}
    for item, column in zip(fields, names, strict=True):
        if isinstance(item.dataType, T.TimestampType):
            column = iso(f"unix_micros({column})")
        elif isinstance(item.dataType, T.TimestampNTZType):
            column = _naive_iso(column)
        columns.append(f"{sql_string(item.name)}, {column}")
        values.setdefault(item.name, column)
    raw = f"to_json(named_struct({', '.join(columns)}), {JSON_OPTIONS})" if columns else "'{}'"
    if job is None:
        return frame.selectExpr(
            "_file AS file",
            "_line AS line",
            f"{raw} AS raw",
            "_mtime AS mtime",
            "_pre_error AS pre_error",
        )
    typed = frame.selectExpr("*", *vouched_values(job, fields, names, values))
    kernel = [] if not fusable(job) else kernel_inputs(job, fields, names)
    if kernel:
        typed = typed.selectExpr("*", *kernel)
    # A vouched row's text is parsed by no one; later steps read it when the job releases
    # events (no window), else only for a dead letter: FULL_TEXT, which the engine drops
    # before parsing (so it is computed for dead-lettered rows alone).
    text = raw if job.window is None else f"CASE WHEN {VOUCHED} THEN NULL ELSE {raw} END"
    return typed.selectExpr(
        "_file AS file",
        "_line AS line",
        f"{text} AS raw",
        "_mtime AS mtime",
        "_pre_error AS pre_error",
        # (an early dead letter is never vouched for)
        *(f"{n} AND _pre_error IS NULL AS {n}" if n == VOUCHED else n for n, _ in VOUCHED_COLUMNS),
        f"{raw} AS {FULL_TEXT}",
        # (the kernel's text: computed here, in the CASE, where a reference to FULL_TEXT
        # would compute that for every row)
        *(
            f"CASE WHEN {TYPED} THEN NULL ELSE {raw} END AS {n}"
            if n == TYPED_TEXT
            else (f"{n} AND _pre_error IS NULL AS {n}" if n == TYPED else n)
            for n, _ in (typed_columns(job) if kernel else [])
        ),
    )


def _naive_iso(column: str) -> str:
    """Python's ``datetime.isoformat()`` of a zone-less timestamp column, in SQL."""
    base = f"date_format({column}, \"yyyy-MM-dd'T'HH:mm:ss\")"
    fraction = f"date_format({column}, 'SSSSSS')"
    return f"CASE WHEN {fraction} = '000000' THEN {base} ELSE concat({base}, '.', {fraction}) END"
