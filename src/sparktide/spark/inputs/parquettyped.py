"""The typed Parquet route: rows whose typed columns already say what their JSON would.

A Parquet row becomes a JSON-object line (:mod:`.parquet`), which the SQL route could
parse like any other. For the jobs the Arrow kernel serves for JSONL (:func:`typed_route`),
a row whose typed columns give exactly what that parse would, with no error, is vouched
for in SQL instead (:func:`vouched_values`): it carries ``fast`` and the values of
:data:`~sparktide.spark.inputs.contract.VOUCHED_COLUMNS`, and, when the job may take the
one-pass plan, the one-pass kernel's typed inputs (:func:`kernel_inputs`). A column whose
type allows none of this leaves its whole schema group to the JSON route.

The file's column names are data: a schema group's columns are named by position
(``c0``, ``c1``, ...) and ``fields`` / ``names`` below pair each Parquet field with its
column.
"""

from __future__ import annotations

from pyspark.sql import types as T

from sparktide.job import Job, Source
from sparktide.spark.inputs.arrowvalues import carried_fields
from sparktide.spark.inputs.contract import INSTANT_RANGE, PLAIN_TEXT, VOUCHED_COLUMNS
from sparktide.spark.inputs.sqlvalues import java_pattern, partition_id
from sparktide.spark.onepass import TYPED, TYPED_TEXT, typed_columns
from sparktide.spark.sql import sql_string

__all__ = ["JSON_OPTIONS", "kernel_inputs", "typed_route", "vouched_values"]

#: ``to_json``'s options for a row: timestamps as the reference writes them, nulls kept.
JSON_OPTIONS = (
    "map('timestampFormat', \"yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX\", 'ignoreNullFields', 'false')"
)
#: SQL: a text that is its own JSON string's inside (printable ASCII, no quote or backslash).
_PLAIN_TEXT = sql_string(java_pattern(PLAIN_TEXT))
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC = (*_INTEGRAL, T.FloatType, T.DoubleType, T.DecimalType)

#: A schema group's fields by name: the Parquet field and its positional column.
_Columns = dict[str, tuple[T.StructField, str]]


def typed_route(job: Job) -> bool:
    """Whether ``job``'s Parquet rows may skip the JSON route where their types allow:
    jobs the Arrow kernel serves for JSONL (no CTI, interval or edge columns, no computed
    time or key)."""
    punctuation = job.punctuation
    return not (
        (punctuation is not None and punctuation.explicit)
        or job.source.intervals
        or job.edges
        or job.source.computes_fields
    )


def _finite(column: str) -> str:
    """SQL: a float column's value is null or finite (the JSON route's text for NaN and
    the infinities is its own)."""
    return f"({column} IS NULL OR NOT (isnan({column}) OR abs({column}) = double('inf')))"


def vouched_values(
    job: Job, fields: list[T.StructField], names: list[str], values: dict[str, str]
) -> list[str]:
    """The typed route of one schema group (:data:`VOUCHED_COLUMNS`, as ``expr AS name``).

    A row is vouched for (``fast``) when its typed columns give exactly what the JSON
    route would read from the JSON text made of them, with no error: times from
    zone-aware timestamps within years 1-9999 (the JSON route parses the same instant
    back from its ISO text), partitions from integers or strings (the route's own
    expression), substream keys from integers, booleans or printable-ASCII strings
    without quotes or backslashes (their JSON text in quotes), number columns of a
    number type and finite. ``_kmj`` is the JSON text the route would make of the
    fields later steps read, by the same ``to_json`` (``values``: each field's value
    as the row's JSON text holds it)."""
    by_name = {f.name: (f, c) for f, c in zip(fields, names, strict=True)}
    if len(by_name) != len(fields):  # a name given twice: the route decides
        return _not_vouched()
    conditions: list[str] = []
    found = _typed_values(job.source, by_name, conditions)
    if found is None or not _numbers_vouched(job, by_name, conditions):
        return _not_vouched()
    event, arrival, pid, key = found
    carried = [n for n in carried_fields(job) if n in by_name]
    if job.window is not None and any(a.whole_record for a in job.window.aggregates):
        carried = list(values)  # (topone(), collect(): the whole record, as the JSON route)
    mj = (
        f"to_json(named_struct({', '.join(f'{sql_string(n)}, {values[n]}' for n in carried)}), "
        f"{JSON_OPTIONS})"
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


def _typed_values(
    source: Source, by_name: _Columns, conditions: list[str]
) -> tuple[str, str, str, str] | None:
    """SQL of the event and arrival time, partition id and key of the group's rows,
    adding the conditions a row must meet; ``None`` when a column's type allows none."""

    def time(name: str) -> str | None:
        if name not in by_name or not isinstance(by_name[name][0].dataType, T.TimestampType):
            return None
        micros = f"unix_micros({by_name[name][1]})"
        conditions.append(f"coalesce({micros} {INSTANT_RANGE}, false)")
        return micros

    arrival = "_mtime" if source.arrival_time is None else time(source.arrival_time)
    event = arrival if source.timestamp_by is None else time(source.timestamp_by)
    if arrival is None or event is None:
        return None
    pid: str | None = "'0'"
    if source.partition is not None:
        pid = _partition_value(by_name, source.partition, conditions)
    key: str | None = "CAST(NULL AS STRING)"
    if source.over is not None:
        key = _key_value(by_name, source.over, conditions)
    if pid is None or key is None:
        return None
    return event, arrival, pid, key


def _partition_value(by_name: _Columns, name: str, conditions: list[str]) -> str | None:
    """SQL of the partition id of an integer or string column (``None``: another type)."""
    if name not in by_name:
        return None
    item, column = by_name[name]
    if isinstance(item.dataType, _INTEGRAL):
        conditions.append(f"{column} IS NOT NULL")
        return f"CAST({column} AS STRING)"
    if isinstance(item.dataType, T.StringType):
        # (a text that is not UTF-8 becomes U+FFFD in the JSON route's text)
        conditions.append(f"coalesce(is_valid_utf8(CAST({column} AS STRING)), false)")
        return partition_id(column)  # (the JSON route's own expression)
    return None


def _key_value(by_name: _Columns, name: str, conditions: list[str]) -> str | None:
    """SQL of the substream key (its JSON text) of an integer, boolean or plain string
    column (``None``: another type)."""
    if name not in by_name:
        return None
    item, column = by_name[name]
    if isinstance(item.dataType, (*_INTEGRAL, T.BooleanType)):
        conditions.append(f"{column} IS NOT NULL")
        return f"CAST({column} AS STRING)"
    if isinstance(item.dataType, T.StringType):
        conditions.append(f"coalesce({column} RLIKE {_PLAIN_TEXT}, false)")
        return f"concat('\"', {column}, '\"')"
    return None


def _numbers_vouched(job: Job, by_name: _Columns, conditions: list[str]) -> bool:
    """Whether the job's number columns are of number types (adding that floats be
    finite to ``conditions``); a missing column is no error, as in the route."""
    for name in sorted(job.numeric_columns):
        if name not in by_name:
            continue
        item, column = by_name[name]
        if not isinstance(item.dataType, _NUMERIC):
            return False
        if isinstance(item.dataType, (T.FloatType, T.DoubleType)):  # the route: "NaN" text
            conditions.append(_finite(column))
    return True


def _not_vouched() -> list[str]:
    return [
        f"CAST(NULL AS {kind.upper()}) AS {n}" if n != "fast" else "false AS fast"
        for n, kind in VOUCHED_COLUMNS
    ]


def kernel_inputs(job: Job, fields: list[T.StructField], names: list[str]) -> list[str]:
    """The one-pass kernel's typed inputs of one schema group
    (:func:`~sparktide.spark.onepass.typed_columns`, as SQL), so a vouched row reaches it
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
        text = _group_text(by_name, name, conditions)
        if text is None:
            return _untyped(job)
        values.append(f"{text} AS _kg{i}")
    for k, aggregate in enumerate(window.aggregates):
        if aggregate.column is None:
            continue
        inputs = _aggregate_inputs(by_name, aggregate.column, aggregate.function, k, conditions)
        if inputs is None:
            return _untyped(job)
        values += inputs
    return [f"{' AND '.join(conditions)} AS {TYPED}", f"NULL AS {TYPED_TEXT}", *values]


def _group_text(by_name: _Columns, name: str, conditions: list[str]) -> str | None:
    """SQL of a group-by value's JSON text (``None``: a type the kernel does not take)."""
    if name not in by_name:
        return "'null'"
    item, column = by_name[name]
    if isinstance(item.dataType, (*_INTEGRAL, T.BooleanType)):
        return f"coalesce(CAST({column} AS STRING), 'null')"
    if isinstance(item.dataType, T.StringType):
        conditions.append(f"coalesce({column} RLIKE {_PLAIN_TEXT}, true)")
        return f"coalesce(concat('\"', {column}, '\"'), 'null')"
    return None


def _aggregate_inputs(
    by_name: _Columns, name: str, function: str, index: int, conditions: list[str]
) -> list[str] | None:
    """``expr AS name`` of aggregate ``index``'s inputs (``None``: a type the kernel
    does not take): present or not for ``count``, else the exact integer and the float."""
    item, column = by_name.get(name, (None, "NULL"))
    kind = None if item is None else item.dataType
    if function == "count":
        if kind is not None and not isinstance(
            kind, (*_INTEGRAL, T.BooleanType, T.StringType, T.DoubleType)
        ):
            return None
        if isinstance(kind, T.DoubleType):  # (NaN's text is the route's own)
            conditions.append(_finite(column))
        return [f"CASE WHEN {column} IS NULL THEN 0 ELSE 1 END AS _kn{index}"]
    whole = real = "NULL"
    if isinstance(kind, _INTEGRAL):
        whole = f"CAST({column} AS BIGINT)"
    elif isinstance(kind, T.DoubleType):
        real = column
    elif kind is not None:
        return None
    return [f"CAST({whole} AS BIGINT) AS _ki{index}", f"CAST({real} AS DOUBLE) AS _kd{index}"]


def _untyped(job: Job) -> list[str]:
    return [
        f"false AS {n}" if n == TYPED else f"CAST(NULL AS {kind.upper()}) AS {n}"
        for n, kind in typed_columns(job)
    ]
