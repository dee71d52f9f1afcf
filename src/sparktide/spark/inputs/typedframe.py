"""A caller's typed streaming DataFrame as the engine's input (semantics §1.4, §2.4).

``start(spark, job, frame)`` takes any streaming DataFrame whose columns are typed: a
Parquet or Delta table stream, Kafka's records after ``from_json`` / ``from_avro``, the
rate source with its columns renamed. Its rows take the typed route of Parquet rows
(:func:`~sparktide.spark.inputs.parquet.typed_rows`): a row whose typed columns already
say what its JSON text would is vouched for with no JSON parse, and the one-pass plan's
kernel reads its typed inputs directly; the others are judged by the SQL route from the
row's JSON text, with the reference reader's checks and messages.

The time columns are made instants first (:func:`instants`): ``TIMESTAMP`` as it is,
``TIMESTAMP_NTZ`` read as UTC (the session's zone is never applied), epoch numbers in
``source.time_unit``; text stays text (ISO-8601 with a zone, judged by the SQL route).
A number that is no instant of years 1-9999 is a dead letter with its own message.
Partition columns of atomic types other than integers and strings are read as their
text. :func:`check_frame` checks the names and types the job reads against the frame's
schema when the query starts.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparktide.core.namedcolumns import check_columns
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.spark.inputs.contract import INSTANT_RANGE
from sparktide.spark.inputs.parquet import META, renamed_rows
from sparktide.spark.sql import iso, sql_string

__all__ = ["ROW", "check_frame", "is_typed", "typed_lines", "wrapped"]

#: The column a typed frame's row travels in (a struct), beside ``file`` (the ticker's
#: rows have it null: :func:`~sparktide.spark.ticks.without_ticks`).
ROW = "_sparktide_row"
#: The name a typed frame's rows carry as their ``file`` (dead letters, arrival ties).
STREAM_FILE = "stream"

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMBERS = (*_INTEGRAL, T.FloatType, T.DoubleType, T.DecimalType)
_TIMES = (T.TimestampType, T.TimestampNTZType)
_NESTED = (T.StructType, T.ArrayType, T.MapType)
#: Microseconds per unit (``ns``: one thousandth).
_PER_UNIT = {"s": 1_000_000, "ms": 1_000, "us": 1}
#: The shapes of input lines the engine takes as they are (``sources.batch_lines``).
_LINE_SHAPES = ({"file", "line", "raw", "mtime"}, {"file", "text", "mtime"})


def is_typed(frame: DataFrame) -> bool:
    """Whether ``frame`` is a typed stream rather than lines, whole files or files by
    name (the shapes :func:`~sparktide.spark.sources.file_lines` and
    :func:`~sparktide.spark.sources.broker_lines` make)."""
    columns = set(frame.columns)
    if ROW in columns or {"path", "file", "mtime", "length"} <= columns:
        return False
    return not any(shape <= columns for shape in _LINE_SHAPES)


def wrapped(frame: DataFrame) -> DataFrame:
    """``frame``'s rows as one struct column (:data:`ROW`) beside a ``file`` column, so
    the ticker's rows can be told from them whatever the frame's columns are called."""
    return frame.select(F.struct("*").alias(ROW), F.lit(STREAM_FILE).alias("file"))


def _time_columns(job: Job) -> list[tuple[str, str]]:
    """The time columns the job reads (a computed time's fields: ``check_columns``)."""
    source = job.source
    keys = ("arrival_time", "end_time")
    keys = keys if source.computes_time else ("timestamp_by", *keys)
    return [(f"source.{k}", getattr(source, k)) for k in keys if getattr(source, k) is not None]


def check_frame(job: Job, schema: T.StructType) -> None:
    """Check the columns ``job`` reads against a typed frame's ``schema``.

    Raises
    ------
    ConfigError
        One error naming the first bad column and its type: a time column that is not
        a timestamp, text or an epoch number (numbers need ``source.time_unit``); a
        partition or substream key that is not atomic; an edge column, group-by column
        or aggregate input that is missing; a ``sum`` / ``avg`` input that is not a number.
    """
    types = {f.name: f.dataType for f in schema.fields}
    shown = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema.fields)

    def column(key: str, name: str) -> T.DataType:
        if name not in types:
            raise ConfigError(key, f"column {name!r} is not in the stream (it has: {shown})")
        return types[name]

    def bad(key: str, name: str, kind: T.DataType, wanted: str) -> ConfigError:
        return ConfigError(key, f"column {name!r} is {kind.simpleString()}: {wanted}")

    for key, name in _time_columns(job):
        kind = column(key, name)
        if isinstance(kind, _NUMBERS) and job.source.time_unit is None:
            raise bad(key, name, kind, 'epoch numbers need source.time_unit (say "ms")')
        if not isinstance(kind, (*_TIMES, T.StringType, *_NUMBERS)):
            raise bad(key, name, kind, "a time is a timestamp, ISO text or an epoch number")
    source = job.source
    over = None if source.computes_key else source.over  # (a computed key's: check_columns)
    for key, name in (("source.partition", source.partition), ("source.over", over)):
        if name is not None and isinstance(column(key, name), (*_NESTED, T.NullType)):
            raise bad(key, name, types[name], "a partition or key is an atomic value")
    for key, name in (("source.edge", source.edge), ("source.edge_id", source.edge_id)):
        if name is not None:
            column(key, name)
    check_columns(job, types)  # (every other named column: filter, select, join keys)
    if job.window is None:
        return
    for name in job.window.record_group_columns:  # (computed ones: check_columns)
        column("window.group_by", name)
    numeric = job.numeric_columns
    for aggregate in job.window.aggregates:
        for name in aggregate.columns:
            kind = column(f"window.aggregates.{aggregate.name}", name)
            if name in numeric and not isinstance(kind, _NUMBERS):
                raise bad(f"window.aggregates.{aggregate.name}", name, kind, "not a number")


def instants(
    types: dict[str, T.DataType], job: Job, skip: frozenset[str] = frozenset()
) -> tuple[dict[str, tuple[str, T.DataType]], str]:
    """The time columns of a frame of column ``types`` as ``TIMESTAMP`` (text left as it
    is; the names in ``skip`` too): SQL and type by name, and SQL of a row's early dead
    letter (``META[3]``): a time number that is no representable instant. The SQL reads
    the frame's columns as they came, and the row's line as ``META[1]``."""
    errors = []
    replaced: dict[str, tuple[str, T.DataType]] = {}
    for _, name in _time_columns(job):
        kind, column = types[name], f"`{name.replace('`', '``')}`"
        if isinstance(kind, (T.TimestampType, T.StringType)) or name in skip:
            continue
        if isinstance(kind, T.TimestampNTZType):  # the wall clock read in UTC
            micros = (
                f"(unix_date(CAST({column} AS DATE)) * 86400000000L + "
                f"CAST(hour({column}) AS BIGINT) * 3600000000L + "
                f"CAST(minute({column}) AS BIGINT) * 60000000L + "
                f"CAST(date_part('SECOND', {column}) * 1000000 AS BIGINT))"
            )
        else:
            micros = _epoch_micros(column, kind, job.source.time_unit or "us")
            unit = job.source.time_unit
            errors.append(
                f"CASE WHEN {column} IS NOT NULL AND NOT coalesce({micros} {INSTANT_RANGE}, "
                f"false) THEN concat('line ', CAST({META[1]} AS STRING), ': ', "
                f"{sql_string(name)}, ' = ', CAST({column} AS STRING), "
                f"{sql_string(f' ({unit} since 1970) is no instant of years 1-9999')}) END"
            )
            micros = f"CASE WHEN {micros} {INSTANT_RANGE} THEN {micros} END"
        replaced[name] = (f"timestamp_micros({micros})", T.TimestampType())
    pre_error = f"coalesce({', '.join(errors)})" if errors else "CAST(NULL AS STRING)"
    return replaced, pre_error


def _epoch_micros(column: str, kind: T.DataType, unit: str) -> str:
    """SQL: microseconds of an epoch number in ``unit``, or NULL beyond 64 bits (floats:
    rounded to the microsecond; NaN and the infinities NULL)."""
    if unit == "ns":
        if isinstance(kind, _INTEGRAL):  # (exact: floor division)
            return f"((CAST({column} AS BIGINT) - pmod(CAST({column} AS BIGINT), 1000)) div 1000)"
        if isinstance(kind, T.DecimalType):
            return f"try_cast(floor({column} / 1000BD) AS BIGINT)"
        return (
            f"CASE WHEN isnan({column}) THEN NULL ELSE try_cast(round({column} / 1000D) AS "
            "BIGINT) END"
        )
    factor = _PER_UNIT[unit]
    if isinstance(kind, _INTEGRAL):
        return f"try_multiply(CAST({column} AS BIGINT), {factor}L)"
    if isinstance(kind, T.DecimalType):
        return f"try_cast(floor(try_multiply({column}, {factor}BD)) AS BIGINT)"
    return (
        f"CASE WHEN isnan({column}) THEN NULL ELSE try_cast(round(CAST({column} AS DOUBLE) * "
        f"{factor}D) AS BIGINT) END"
    )


def _partition_as_text(types: dict[str, T.DataType], job: Job) -> dict[str, tuple[str, T.DataType]]:
    """A partition column of an atomic type other than integers and text as its text
    (semantics §2.1: a partition id is an integer or a string): SQL and type by name."""
    name = job.source.partition
    if name is None:
        return {}
    kind = types[name]
    if isinstance(kind, (*_INTEGRAL, T.StringType)):
        return {}
    column = f"`{name.replace('`', '``')}`"
    if isinstance(kind, T.TimestampType):
        text = iso(f"unix_micros({column})")
    elif isinstance(kind, T.BinaryType):
        text = f"hex({column})"
    else:
        text = f"CAST({column} AS STRING)"
    return {name: (text, T.StringType())}


def typed_lines(frame: DataFrame, job: Job, now: int | None) -> DataFrame:
    """A micro-batch of a typed frame (unwrapped: :data:`ROW`'s fields) as the engine's
    lines, with the typed route's columns (:func:`~.parquet.renamed_rows`).

    Each row's ``file`` is :data:`STREAM_FILE`, its ``line`` its place in the batch as
    Spark reads it (``monotonically_increasing_id() + 1``: arrival ties go by it), its
    ``mtime`` the batch's processing time ``now`` (the arrival time of a job without
    ``source.arrival_time``, semantics §1.1). The partition's text, the instants and
    the row's place take one projection: each one PySpark adds is analysed again."""
    fields = list(frame.schema.fields)
    types = {f.name: f.dataType for f in fields}
    replaced = _partition_as_text(types, job)
    times, pre_error = instants(types, job, skip=frozenset(replaced))
    replaced |= times
    frame = frame.withColumn(META[1], F.monotonically_increasing_id() + 1)
    columns = []
    for i, item in enumerate(fields):
        sql, kind = replaced.get(item.name, (f"`{item.name.replace('`', '``')}`", None))
        columns.append(f"{sql} AS c{i}")
        if kind is not None:
            fields[i] = T.StructField(item.name, kind)
    frame = frame.selectExpr(
        *columns,
        f"{sql_string(STREAM_FILE)} AS _file",
        f"{META[1]} AS _line",
        f"CAST({'NULL' if now is None else now} AS BIGINT) AS _mtime",
        f"{pre_error} AS _pre_error",
    )
    return renamed_rows(frame, fields, job)
