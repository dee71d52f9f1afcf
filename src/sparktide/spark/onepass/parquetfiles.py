"""Whole Parquet files in a task, read by pyarrow as Spark's typed route reads them.

Every value must be one Spark's typed route (``sparktide.spark.inputs.parquettyped``:
``vouched_values``, ``kernel_inputs``) makes the same of: times from zone-aware
timestamps within years 1-9999, partitions from integers or text (digit strings as
integers), keys from integers, booleans or plain text, group-by values as their JSON
text, ``sum`` / ``avg`` inputs from integers or finite doubles. Anything else is an
:class:`Abort`: the engine then has Spark read the files' rows.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparktide.spark.inputs.arrowvalues import key_texts, partition_ids
from sparktide.spark.inputs.contract import FIRST_INSTANT, LAST_INSTANT
from sparktide.spark.onepass.collect import RowCollector
from sparktide.spark.onepass.files import local_path
from sparktide.spark.onepass.parallel import in_threads
from sparktide.spark.onepass.plan import FusedPlan
from sparktide.spark.onepass.signals import Abort
from sparktide.spark.onepass.values import aggregate_inputs, all_true, group_text

__all__ = ["parquet_partition", "parquet_values", "read_parquet"]

#: Text that is its own JSON string's inside: printable ASCII, no quote or backslash.
_PLAIN = r"^[ !#-\[\]-~]*$"

#: A file's rows as the kernel's inputs: (event time, arrival, partition, key), the
#: group-by texts, each aggregate's inputs.
FileValues = tuple[tuple[pa.Array, pa.Array, pa.Array, pa.Array], list, list]


def read_parquet(plan: FusedPlan, batch: pa.RecordBatch, rows: RowCollector) -> None:
    """Whole Parquet files (``file``, ``path``, ``length``, ``mtime``), read by pyarrow:
    every row to ``rows`` (:func:`parquet_values`). Only local files of at most
    ``plan.file_bytes``; others are Spark's to read."""
    files, paths, lengths, mtimes = (
        batch.column(c).to_pylist() for c in ("file", "path", "length", "mtime")
    )
    work = []
    for path, length, mtime in zip(paths, lengths, mtimes, strict=True):
        local = local_path(path)
        if local is None or (length or 0) > plan.file_bytes:
            raise Abort("a Parquet file not local, or too large")
        work.append((local, mtime))
    for i, values in enumerate(in_threads(plan, lambda item: parquet_values(plan, *item), work)):
        if values is None:
            continue
        count = len(values[0][0])
        rows.append(
            np.full(count, rows.code(files[i]), dtype=np.int64),
            np.arange(1, count + 1, dtype=np.int64),
            *values,
        )


def _readable(kind: pa.DataType) -> bool:
    """Whether Spark reads a Parquet column of this type as pyarrow does (others, e.g.
    nanosecond timestamps or nested values, leave the batch to Spark's reading)."""
    return (
        pa.types.is_string(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_signed_integer(kind)  # (Spark does not read unsigned 64 bits)
        or pa.types.is_float32(kind)
        or pa.types.is_float64(kind)
        or pa.types.is_decimal128(kind)
        or pa.types.is_date32(kind)
        or pa.types.is_binary(kind)
        or (pa.types.is_timestamp(kind) and kind.unit != "ns")
    )


def _read_table(path: str) -> pa.Table:
    """A Parquet file's table, if Spark would read it as pyarrow does."""
    try:
        if os.path.getsize(path) == 0:
            raise Abort("an empty Parquet file")  # (Spark's reading decides what it is)
        table = pq.read_table(path)
    except Abort:
        raise
    except Exception:  # pyarrow raises several kinds for a bad (or vanished) file
        raise Abort("a Parquet file pyarrow cannot read") from None
    names = table.column_names
    if len({name.lower() for name in names}) < len(names):
        raise Abort("Parquet columns equal but for case")  # (Spark resolves names so)
    if not all(_readable(f.type) for f in table.schema):
        raise Abort("a Parquet column of a type Spark reads otherwise")
    return table


def parquet_values(plan: FusedPlan, path: str, mtime: int | None) -> FileValues | None:
    """One Parquet file's rows as the kernel's inputs — exactly what Spark's typed route
    makes of them. ``None`` for a file without rows; :class:`Abort` for anything else."""
    table = _read_table(path)
    names = table.column_names
    n = table.num_rows
    if n == 0:
        return None

    def column(name: str | None) -> pa.Array | None:
        return None if name is None or name not in names else table.column(name).combine_chunks()

    parse = plan.parse
    if parse.arrival is not None:
        arrival = _parquet_micros(column(parse.arrival))
    elif mtime is not None:
        arrival = pa.repeat(pa.scalar(mtime, pa.int64()), n)
    else:
        raise Abort("no arrival time")
    event_time = _parquet_micros(column(parse.event)) if parse.event is not None else arrival
    pid = pa.repeat(pa.scalar("0"), n)
    if parse.partition is not None:
        pid = parquet_partition(column(parse.partition))
    key = pa.nulls(n, pa.string())
    if parse.over is not None:
        key = _parquet_key(column(parse.over))
    groups = [
        _parquet_group(column(name), n) if name != parse.over else _key_group(key, column(name))
        for name in plan.group_by
    ]
    inputs = [_parquet_input(function, name, table) for function, name, _ in plan.aggregates]
    return (event_time, arrival, pid, key), groups, inputs


def _parquet_micros(value: pa.Array | None) -> pa.Array:
    """A time column's instants: a zone-aware timestamp of every row in years 1-9999."""
    if value is None or not pa.types.is_timestamp(value.type) or value.type.tz is None:
        raise Abort("a time column is not zone-aware timestamps")
    try:
        out = pc.cast(pc.cast(value, pa.timestamp("us", value.type.tz)), pa.int64())
    except pa.ArrowInvalid:  # (beyond 64 bits of microseconds)
        raise Abort("a time beyond 64 bits of microseconds") from None
    inside = pc.and_(pc.greater_equal(out, FIRST_INSTANT), pc.less_equal(out, LAST_INSTANT))
    if out.null_count or not all_true(inside):
        raise Abort("a time missing or outside years 1-9999")
    return out


def _signed(value: pa.Array) -> bool:
    return pa.types.is_integer(value.type) and not pa.types.is_unsigned_integer(value.type)


def _text(value: pa.Array) -> bool:
    """Whether a column is valid UTF-8 text (pyarrow does not check Parquet's)."""
    if not pa.types.is_string(value.type):
        return False
    try:
        value.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _plain(value: pa.Array) -> bool:
    """Whether a column is text whose every value is its own JSON string's inside."""
    return _text(value) and all_true(pc.match_substring_regex(value, _PLAIN))


def parquet_partition(value: pa.Array | None) -> pa.Array:
    """Partition ids as the SQL route's ``partition_id`` (the JSON kernel's rules:
    :func:`~sparktide.spark.inputs.arrowvalues.partition_ids`), of signed integers or valid UTF-8
    text; never null."""
    if value is None or not (_signed(value) or _text(value)):
        raise Abort("a partition column neither signed integers nor text")
    ids, ok = partition_ids(value)
    if not ok.all():  # (nulls, and 19 digits or more: the route's call)
        raise Abort("a partition id the SQL route decides")
    return ids


def _parquet_key(value: pa.Array | None) -> pa.Array:
    """Substream keys as the route's JSON text
    (:func:`~sparktide.spark.inputs.arrowvalues.key_texts`) of signed integers, booleans or
    plain text; never null."""
    if value is None or not (_signed(value) or pa.types.is_boolean(value.type) or _plain(value)):
        raise Abort("a key column neither integers, booleans nor plain text")
    keys, ok = key_texts(value)
    if not ok.all():
        raise Abort("a key the SQL route decides")
    return keys


def _parquet_group(value: pa.Array | None, n: int) -> pa.Array:
    """A group-by value's JSON text (:func:`~sparktide.spark.onepass.values.group_text`),
    ``null`` when missing; text must be plain (Parquet's may hold quotes, which JSON
    lines the kernel vouched for cannot)."""
    if value is None:
        return group_text(pa.nulls(n))
    if pa.types.is_string(value.type) and not _plain(value):
        raise Abort("a group-by text is not plain")
    return group_text(value)  # (no unsigned integers: ``_readable``)


def _key_group(key: pa.Array, value: pa.Array | None) -> pa.Array:
    """:func:`_parquet_group` of the substream key's own column, whose text ``key``
    already is (every value valid; text printable): the same, without making it again."""
    if value is None or (pa.types.is_string(value.type) and not _plain(value)):
        raise Abort("a group-by text is not plain")
    return key


def _parquet_input(function: str, name: str | None, table: pa.Table) -> dict[str, np.ndarray]:
    """An aggregate's inputs (:func:`~sparktide.spark.onepass.values.aggregate_inputs`)
    from a typed column: ``count`` of signed integers, booleans, text or finite doubles;
    ``sum`` / ``avg`` of signed integers (exact) or finite doubles (no float in a Parquet
    column is an integer token)."""
    if name is not None and name in table.column_names:
        kind = table.schema.field(name).type
        value = table.column(name)
        double = pa.types.is_float64(kind)
        if double and not all_true(pc.is_finite(value)):
            raise Abort("NaN or infinity")  # (the route's text for them is its own)
        numbers = pa.types.is_signed_integer(kind) or double
        counted = numbers or pa.types.is_boolean(kind) or _text(value.combine_chunks())
        if not (numbers if function != "count" else counted):
            raise Abort("an aggregate's column of a type it cannot take")
    tokens = pa.nulls(table.num_rows, pa.string())
    return aggregate_inputs(function, name, table, tokens, tokens)
