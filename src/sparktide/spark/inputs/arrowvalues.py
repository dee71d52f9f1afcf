"""What the Arrow kernel reads from a record, and the values it gives a vouched line.

For each chunk Arrow parsed, :func:`chunk_values` computes the values the SQL route
would (event and arrival time, partition id, substream key, ``mj``) and which lines the
kernel vouches for: those whose every field read has the canonical form on which both
routes agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.job import Job, expression_fields
from sparktide.spark.columns import (
    ARRIVAL_TIME,
    EVENT_TIME,
    PARTITION,
    SUBSTREAM_KEY,
)
from sparktide.spark.inputs.arrays import filled, masked, string_bytes
from sparktide.spark.inputs.arrowtimes import time_micros

__all__ = [
    "TOKEN",
    "KernelPlan",
    "carried_fields",
    "chunk_values",
    "field_column",
    "kernel_plan",
    "key_texts",
    "partition_ids",
    "printable",
    "raw_token",
]

#: ``Vouched.values[TOKEN + name]``: the raw tokens of a numeric field Arrow read as floats.
TOKEN = "token:"
#: A run of 39 digits: where a number Arrow read as a double of 1e38 or more may be an
#: integer beyond 38 digits (out of range for both engines).
_LONG_DIGITS = "[0-9]{39}"


@dataclass(frozen=True)
class KernelPlan:
    """What the kernel reads from a record (picklable: it travels to the executors)."""

    arrival: str | None
    event: str | None
    partition: str | None
    over: str | None
    numeric: tuple[str, ...]
    carried: tuple[str, ...]
    raw: bool  # whether vouched lines keep their text (released events need it)
    whole: bool = False  # whether ``mj`` is the whole record (``topone()``, ``collect()``)

    @property
    def fields(self) -> tuple[str, ...]:
        """Every field the kernel reads, once each."""
        names = [self.arrival, self.event, self.partition, self.over, *self.numeric]
        names += self.carried
        return tuple(dict.fromkeys(n for n in names if n is not None))


def carried_fields(job: Job) -> tuple[str, ...]:
    """The fields of a record later steps read besides its times, partition and key:
    group-by and aggregate columns and what ``[filter]`` (and ``[select]`` without a
    window) read — the fields a vouched record's variant ``m`` is made of."""
    carried: list[str] = []
    if job.window is not None:
        carried += job.window.record_group_columns
        carried += [c for a in job.window.aggregates for c in a.columns]
    carried += expression_fields(job)
    return tuple(dict.fromkeys(carried))


def kernel_plan(job: Job) -> KernelPlan:
    """What the kernel reads from the job's records (picklable)."""
    source = job.source
    carried = carried_fields(job)
    return KernelPlan(
        arrival=source.arrival_time,
        event=source.timestamp_by,
        partition=source.partition,
        over=source.over,
        numeric=tuple(sorted(job.numeric_columns)),
        carried=carried,
        raw=job.window is None or _reads_record_again(job),
        whole=job.window is not None and any(a.whole_record for a in job.window.aggregates),
    )


def _reads_record_again(job: Job) -> bool:
    """Whether a windowed job reads a judged row's record again from its line."""
    # (here: the projections import the expression compiler, which imports this package)
    from sparktide.spark.projections import reads_record_after_judging

    return reads_record_after_judging(job)


def field_column(table: pa.Table, name: str) -> pa.Array:
    """Field ``name`` of a parsed chunk as one array (all null when no line has it)."""
    if name not in table.column_names:
        return pa.nulls(table.num_rows)
    return table.column(name).combine_chunks()


def chunk_values(
    plan: KernelPlan, table: pa.Table, lines: pa.Array, mtime: int | pa.Array | None
) -> tuple[dict[str, pa.Array], np.ndarray]:
    """The kernel's columns for one parsed chunk, and which of its lines are vouched for."""
    n = table.num_rows
    good = np.ones(n, dtype=bool)
    values: dict[str, pa.Array] = {}
    if plan.arrival is not None:
        values[ARRIVAL_TIME], ok = time_micros(field_column(table, plan.arrival))
        good &= ok
    elif isinstance(mtime, pa.Array):  # one arrival time per line (a broker's)
        values[ARRIVAL_TIME] = pc.cast(mtime, pa.int64())
    else:
        values[ARRIVAL_TIME] = pa.repeat(pa.scalar(mtime, pa.int64()), n)
    if plan.event is not None:
        values[EVENT_TIME], ok = time_micros(field_column(table, plan.event))
        good &= ok
    else:
        values[EVENT_TIME] = values[ARRIVAL_TIME]
    if plan.partition is not None:
        values[PARTITION], ok = partition_ids(field_column(table, plan.partition))
        good &= ok
    else:
        values[PARTITION] = pa.repeat(pa.scalar("0"), n)
    if plan.over is not None:
        values[SUBSTREAM_KEY], ok = key_texts(field_column(table, plan.over))
        good &= ok
    else:
        values[SUBSTREAM_KEY] = pa.nulls(n, pa.string())
    good &= ~_out_of_range(table, lines)
    tokens: dict[str, pa.Array] = {}  # raw tokens of float columns, found once
    for name in plan.numeric:
        column = field_column(table, name)
        if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
            good &= ~filled(pc.is_valid(column))
        elif pa.types.is_floating(column.type):
            # Arrow reads an integer beyond 64 bits as a double; the SQL route sums it as
            # one too, but let it decide: such lines are rare
            token = tokens[name] = _float_tokens(plan, lines, name, column)
            good &= ~filled(pc.match_substring_regex(token, "^-?[0-9]{19,}$"))
    values["mj"] = _compact(plan, table, lines, tokens)
    for name, token in tokens.items():  # (the one-pass kernel reads them)
        values[TOKEN + name] = token
    return values, good


def _out_of_range(table: pa.Table, lines: pa.Array) -> np.ndarray:
    """Lines that may hold an integer of more than 38 digits (out of range for both
    engines): Arrow reads one as a double of magnitude 1e38 or more, so only lines with
    such a double and a run of 39 digits are suspect. (A double beyond range fails
    Arrow's parse: :func:`~sparktide.spark.inputs.plainlines.parsed_chunks`.)"""
    suspect = np.zeros(table.num_rows, dtype=bool)
    for column in table.columns:
        if pa.types.is_floating(column.type):
            values = pc.fill_null(column, 0.0).to_numpy()
            suspect |= ~(np.abs(values) < 1e38)
    if suspect.any():
        where = np.flatnonzero(suspect)
        digits = filled(pc.match_substring_regex(lines.take(pa.array(where)), _LONG_DIGITS))
        suspect[where] = digits
    return suspect


def partition_ids(column: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Partition ids as the SQL route writes them: integers (also in strings) in
    canonical decimal, other strings as they are."""
    n = len(column)
    if pa.types.is_integer(column.type):
        return pc.cast(column, pa.string()), filled(pc.is_valid(column))
    if not pa.types.is_string(column.type):
        return pa.nulls(n, pa.string()), np.zeros(n, dtype=bool)
    integer = pc.match_substring_regex(column, "^-?[0-9]{1,18}$")
    canonical = pc.cast(
        pc.cast(pc.if_else(integer, column, pa.nulls(n, pa.string())), pa.int64()), pa.string()
    )
    long = filled(pc.match_substring_regex(column, "^-?[0-9]{19,}$"))
    return pc.if_else(integer, canonical, column), filled(pc.is_valid(column)) & ~long


def key_texts(column: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Substream keys as canonical JSON text: printable-ASCII strings, integers, booleans."""
    n = len(column)
    if pa.types.is_integer(column.type):
        return pc.cast(column, pa.string()), filled(pc.is_valid(column))
    if pa.types.is_boolean(column.type):
        return pc.cast(column, pa.string()), filled(pc.is_valid(column))
    if pa.types.is_string(column.type):
        good = printable(column) & filled(pc.is_valid(column))
        return pc.binary_join_element_wise('"', column, '"', ""), good
    return pa.nulls(n, pa.string()), np.zeros(n, dtype=bool)


def printable(column: pa.Array) -> np.ndarray:
    """Which strings are printable ASCII (``[ -~]*``; missing ones count as printable):
    from the bytes of them all when every one is, else by regular expression."""
    n = len(column)
    if n and isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if n and pa.types.is_string(column.type):
        _, octets = string_bytes(column)
        if not column.null_count and ((octets - np.uint8(32)) <= 94).all():  # (32..126)
            return np.ones(n, dtype=bool)
    return ~filled(pc.invert(pc.match_substring_regex(column, "^[ -~]*$")))


def _float_tokens(plan: KernelPlan, lines: pa.Array, name: str, column: pa.Array) -> pa.Array:
    """The raw tokens of a column Arrow read as floats: every line's where the record
    keeps them (``mj``); else only where the value is a whole number — the only values an
    integer token can have been (null elsewhere: a pass over every line is costly)."""
    if name in plan.carried:
        return raw_token(lines, name)
    values = pc.fill_null(column, 0.5).to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore"):
        whole = np.flatnonzero(np.floor(values) == values)
    if len(whole) == len(lines):
        return raw_token(lines, name)
    position = np.full(len(lines), -1, dtype=np.int64)
    position[whole] = np.arange(len(whole))
    found = raw_token(lines.take(pa.array(whole, pa.int64())), name)
    return found.take(masked(position, position >= 0, pa.int64()))


def raw_token(lines: pa.Array, name: str) -> pa.Array:
    """The raw token of field ``name`` in each (plain) line."""
    pattern = '"' + re.escape(name) + r'"\s*:\s*(?P<v>[^,}\s]+)'
    return pc.struct_field(pc.extract_regex(lines, pattern), [0])


def _compact(
    plan: KernelPlan, table: pa.Table, lines: pa.Array, tokens: dict[str, pa.Array]
) -> pa.Array:
    """``{"name":token,...}`` of the carried fields present (and not null) in each line.

    Strings hold no escapes on plain lines, so their token is the text in quotes;
    integers and booleans print as they were written (``-0`` aside, which reads as 0
    either way); a floating-point column takes its tokens from the line, so ``1.50`` and
    ``1e3`` keep their form."""
    n = table.num_rows
    if plan.whole:  # (a plain line is one flat object: its text is the whole record)
        return pc.cast(lines, pa.string())
    if not plan.carried:
        return pa.repeat(pa.scalar("{}"), n)
    parts = []
    for name in plan.carried:
        column = field_column(table, name)
        if pa.types.is_string(column.type):
            token = pc.binary_join_element_wise('"', column, '"', "")
        elif pa.types.is_integer(column.type) or pa.types.is_boolean(column.type):
            token = pc.cast(column, pa.string())
        elif pa.types.is_floating(column.type):
            token = tokens[name] if name in tokens else raw_token(lines, name)
            token = pc.if_else(pc.is_valid(column), token, pa.nulls(n, pa.string()))
        else:
            continue
        parts.append(pc.fill_null(pc.binary_join_element_wise(f',"{name}":', token, ""), ""))
    if not parts:
        return pa.repeat(pa.scalar("{}"), n)
    # (``null_handling="skip"`` loses rows when a single part is null: seen with pyarrow 26)
    inner = pc.utf8_slice_codeunits(pc.binary_join_element_wise(*parts, ""), 1)
    return pc.binary_join_element_wise("{", inner, "}", "")
