"""The fast path for JSON lines: whole files parsed by Arrow inside one ``mapInArrow``.

Spark's SQL route (:func:`sparktide.spark.parse.parse_lines`) is exact for every input,
but splitting whole files into numbered lines and parsing each line into a ``variant``
costs about 5.6 s per million events on two cores; Arrow's C++ JSON reader does the same
work for well-formed lines in about 1.2 s (``docs/design.md``). So each file goes through
:func:`_parse_file`, which *vouches* for the lines it can prove the reference reader
accepts, and hands every other line to the SQL route unchanged. The answer therefore
never depends on this module: it only decides which route a line takes.

A line is vouched for when all of these hold (each checked on whole Arrow arrays):

* it is *plain*: one flat JSON object on the line of at most 1 MiB characters — it
  starts with ``{`` and ends with ``}``, holds no other brace, no ``[``, no backslash (so
  no string holds a quote, and a quoted name followed by ``:`` is a key), no ``NaN`` /
  ``Infinity``, no U+FFFD and nothing that may be an out-of-range number (a 39-digit run
  or a 3-digit exponent);
* Arrow's strict reader parses it, as part of its file's plain lines, into exactly one
  row, inferring columns (so a key given twice is an error, as it is for the reference
  reader); a chunk that fails is halved until the failing lines are isolated in chunks
  of at most :data:`_MIN_CHUNK` lines, which take the SQL route;
* every field the job reads has the canonical form the SQL route gives the same
  answer for: times as ``YYYY-MM-DDThh:mm:ss[.f{1,6}](Z|±hh:mm)`` strings with ASCII
  digits, a real date and a year from 1001 to 9998 (the offset can then never leave the
  representable range); partitions as a string or an integer of at most 18 digits;
  substream keys as a printable-ASCII string, an integer of at most 18 digits or a
  boolean; numeric (``sum`` / ``avg``) columns as a JSON number or ``null`` (and, in a
  column Arrow reads as floats, no integer token of 19 digits or more).

For a vouched line the kernel gives the event and arrival times, partition id and key
exactly as the SQL route computes them, and ``mj``: a small JSON object with the raw
tokens of the fields windows read (group-by and aggregate columns), from which the
engine makes the record variant ``m`` (``parse_json`` of those few tokens, so every JSON
type survives). Its text comes back only when the job releases events: with windows no
later step reads it, and moving it back into Spark is not free. In a file that is not
valid UTF-8, bad bytes become U+FFFD (one decode of the file) and the kernel tells the
SQL route which lines held them (``pre_error``: ``line N: invalid UTF-8``); a line
holding U+FFFD is never plain.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
from pyspark.sql import DataFrame

from sparktide.job import Job, expression_fields
from sparktide.reader import MAX_LINE_CHARS, NUMBER_CANDIDATE
from sparktide.spark.parse import WHITE_SPACE, parse_lines

__all__ = [
    "TOKEN",
    "KernelPlan",
    "Vouched",
    "carried_fields",
    "field_column",
    "filled",
    "kernel_plan",
    "key_texts",
    "parse_files",
    "partition_ids",
    "raw_token",
    "vouch",
    "vouch_lines",
]

_MIN_CHUNK = 64
#: ``Vouched.values[TOKEN + name]``: the raw tokens of a numeric field Arrow read as floats.
TOKEN = "token:"
_TIME = (
    r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:"
    r"[0-5][0-9](\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
_OUT = (
    "file string, line bigint, raw string, mtime bigint, fast boolean, t bigint, a bigint, "
    "pid string, key string, mj string, pre_error string"
)
_OUT_SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("line", pa.int64()),
        ("raw", pa.string()),
        ("mtime", pa.int64()),
        ("fast", pa.bool_()),
        ("t", pa.int64()),
        ("a", pa.int64()),
        ("pid", pa.string()),
        ("key", pa.string()),
        ("mj", pa.string()),
        ("pre_error", pa.string()),
    ]
)


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

    @property
    def fields(self) -> tuple[str, ...]:
        names = [self.arrival, self.event, self.partition, self.over, *self.numeric]
        names += self.carried
        return tuple(dict.fromkeys(n for n in names if n is not None))


def carried_fields(job: Job) -> tuple[str, ...]:
    """The fields of a record later steps read besides its times, partition and key:
    group-by and aggregate columns and what ``[filter]`` (and ``[select]`` without a
    window) read — the fields a vouched record's variant ``m`` is made of."""
    carried: list[str] = []
    if job.window is not None:
        carried += job.window.group_by
        carried += [a.column for a in job.window.aggregates if a.column is not None]
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
        raw=job.window is None,
    )


def parse_files(files: DataFrame, job: Job) -> DataFrame:
    """Whole JSONL files (``file``, ``text``, ``mtime``) → the columns of
    :func:`~sparktide.spark.parse.parse_lines` (``file``, ``line``, ``raw``, ``mtime``,
    ``pre_error``, ``error``, ``m``, ``t``, ``a``, ``pid``, ``key``).

    Lines the kernel vouches for skip the SQL parse; the rest take it, in the same
    projection, so the kernel runs once per file.
    """
    kernel = functools.partial(_kernel, kernel_plan(job))
    rows = files.select("file", "text", "mtime").mapInArrow(kernel, _OUT)
    for name, _ in _KERNEL_COLUMNS:
        rows = rows.withColumnRenamed(name, f"_k{name}")
    return parse_lines(rows, job)


_KERNEL_COLUMNS = (
    ("t", "BIGINT"),
    ("a", "BIGINT"),
    ("pid", "STRING"),
    ("key", "STRING"),
    ("mj", "STRING"),
)


# ---------------------------------------------------------------------- the kernel
def _kernel(plan: KernelPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        files = batch.column("file")
        texts = batch.column("text")
        mtimes = batch.column("mtime")
        for i in range(batch.num_rows):
            text = texts.slice(i, 1)
            bad: frozenset[int] = frozenset()
            try:
                text.validate(full=True)
            except pa.ArrowInvalid:  # not UTF-8: find the lines with bad bytes
                data = texts[i].as_buffer().to_pybytes()
                bad = frozenset(_bad_lines(data))
                text = pa.array([data.decode("utf-8", "replace")], pa.string())
            yield from _parse_file(plan, files[i].as_py(), text, mtimes[i].as_py(), bad)


def _bad_lines(data: bytes) -> Iterator[int]:
    """The (1-based) numbers of the lines of ``data`` that are not valid UTF-8."""
    for number, piece in enumerate(data.split(b"\n"), start=1):
        try:
            piece.decode("utf-8")
        except UnicodeDecodeError:
            yield number


@dataclass(frozen=True)
class Vouched:
    """One parsed chunk of a file's lines that the kernel vouches for.

    Attributes
    ----------
    rows
        Positions of the vouched lines among the file's non-blank lines.
    values
        The kernel's columns for them (``t``, ``a``, ``pid``, ``key``, ``mj``), and the
        raw tokens of each numeric field Arrow read as floats (``TOKEN + name``).
    good
        Which lines of the chunk are vouched for (``rows`` are those of them).
    table
        The chunk's fields as Arrow parsed them, one row per line of the chunk (vouched
        for or not).
    lines
        The chunk's lines (stripped), likewise.
    """

    rows: np.ndarray
    values: dict[str, pa.Array]
    good: np.ndarray
    table: pa.Table
    lines: pa.Array


def vouch(
    plan: KernelPlan, text: pa.Array, mtime: int | None
) -> tuple[pa.Array, pa.Array, np.ndarray, list[Vouched]]:
    """A file's non-blank lines (stripped), their 1-based numbers, which of them the
    kernel does *not* vouch for, and the vouched ones chunk by chunk."""
    pieces = pc.split_pattern(text, "\n").flatten()
    stripped = pc.utf8_trim(pieces, WHITE_SPACE)
    numbers = pa.array(np.arange(1, len(pieces) + 1, dtype=np.int64))
    keep = pc.not_equal(pc.utf8_length(stripped), 0)
    raw = pc.filter(stripped, keep)
    line = pc.filter(numbers, keep)
    slow, chunks = vouch_lines(plan, raw, mtime)
    return raw, line, slow, chunks


def vouch_lines(
    plan: KernelPlan, raw: pa.Array, mtime: int | pa.Array | None
) -> tuple[np.ndarray, list[Vouched]]:
    """Which of the (stripped, non-blank) lines ``raw`` the kernel does *not* vouch for,
    and the vouched ones chunk by chunk; ``mtime`` is the arrival time of lines without
    an arrival field: one for all (a file's), or one per line (a broker's timestamp)."""
    slow = np.ones(len(raw), dtype=bool)
    plain = pc.and_(
        pc.and_(
            pc.match_substring_regex(raw, _PLAIN),
            pc.invert(pc.match_substring_regex(raw, _NOT_PLAIN)),
        ),
        pc.less_equal(pc.utf8_length(raw), MAX_LINE_CHARS),
    )
    if isinstance(mtime, pa.Array) and plan.arrival is None:  # (a line without one: SQL)
        plain = pc.and_(plain, pc.is_valid(mtime))
    plain_idx = np.flatnonzero(filled(plain))
    chunks: list[Vouched] = []
    if plain_idx.size and (mtime is not None or plan.arrival is not None):
        for idx, table in _chunks(plan, raw.take(pa.array(plain_idx)), plain_idx):
            texts = raw.take(pa.array(idx))
            arrival = mtime.take(pa.array(idx)) if isinstance(mtime, pa.Array) else mtime
            values, good = _values(plan, table, texts, arrival)
            if not good.any():
                continue
            chosen = pa.array(np.flatnonzero(good))
            slow[idx[good]] = False
            chunks.append(
                Vouched(
                    idx[good],
                    {name: array.take(chosen) for name, array in values.items()},
                    good,
                    table,
                    texts,
                )
            )
    return slow, chunks


def _parse_file(
    plan: KernelPlan,
    file: str,
    text: pa.Array,
    mtime: int | None,
    bad: frozenset[int] = frozenset(),
) -> Iterator[pa.RecordBatch]:
    """One file's lines: a batch of vouched-for lines per parsed chunk, then the rest
    (``bad``: numbers of the lines that were not valid UTF-8, now holding U+FFFD)."""
    raw, line, slow, chunks = vouch(plan, text, mtime)
    for chunk in chunks:
        rows = pa.array(chunk.rows)
        count = len(rows)
        yield pa.RecordBatch.from_arrays(
            [
                pa.repeat(pa.scalar(file, pa.string()), count),
                line.take(rows),
                raw.take(rows) if plan.raw else pa.nulls(count, pa.string()),
                pa.repeat(pa.scalar(mtime, pa.int64()), count),
                pa.repeat(pa.scalar(True), count),
                *(chunk.values[name] for name, _ in _KERNEL_COLUMNS),
                pa.nulls(count, pa.string()),
            ],
            schema=_OUT_SCHEMA,
        )
    if slow.any():
        rows = pa.array(np.flatnonzero(slow))
        count = len(rows)
        numbers = line.take(rows)
        errors = pa.nulls(count, pa.string())
        if bad:  # the SQL route sees decoded text: it is told which lines were not UTF-8
            flagged = pa.array([n in bad for n in numbers.to_pylist()])
            message = pc.binary_join_element_wise(
                "line ", pc.cast(numbers, pa.string()), ": invalid UTF-8", ""
            )
            errors = pc.if_else(flagged, message, errors)
        yield pa.RecordBatch.from_arrays(
            [
                pa.repeat(pa.scalar(file, pa.string()), count),
                numbers,
                raw.take(rows),
                pa.repeat(pa.scalar(mtime, pa.int64()), count),
                pa.repeat(pa.scalar(False), count),
                *(
                    pa.nulls(count, _OUT_SCHEMA.field(i).type)
                    for i in range(5, len(_OUT_SCHEMA) - 1)
                ),
                errors,
            ],
            schema=_OUT_SCHEMA,
        )


_PLAIN = r"^\{[^{}\[\]\\]*\}$"
#: Lines that may hold a NaN, an infinity, U+FFFD or an out-of-range number.
_NOT_PLAIN = "NaN|Infinity|\ufffd|" + NUMBER_CANDIDATE


def filled(mask: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls as False."""
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)


def _chunks(
    plan: KernelPlan, lines: pa.Array, index: np.ndarray
) -> Iterator[tuple[np.ndarray, pa.Table]]:
    """(positions, table) for each chunk of ``lines`` that Arrow's strict reader parses
    into one row per line; failing chunks are halved down to :data:`_MIN_CHUNK` lines.

    Time fields are read as strings (Arrow would turn some into timestamps); every other
    field's type is inferred, which also rejects a key given twice."""
    if len(lines) == 0:
        return
    joined = pc.binary_join(pa.ListArray.from_arrays([0, len(lines)], lines), "\n")
    data = joined[0].as_buffer()
    times = [name for name in (plan.arrival, plan.event) if name is not None]
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(len(data) + 1, 1024)),
            parse_options=pj.ParseOptions(
                explicit_schema=pa.schema([(name, pa.string()) for name in times]),
                unexpected_field_behavior="infer",
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        table = None
    if table is not None and table.num_rows == len(lines):
        yield index, table
        return
    if len(lines) <= _MIN_CHUNK:
        return
    half = len(lines) // 2
    yield from _chunks(plan, lines.slice(0, half), index[:half])
    yield from _chunks(plan, lines.slice(half), index[half:])


def field_column(table: pa.Table, name: str) -> pa.Array:
    if name not in table.column_names:
        return pa.nulls(table.num_rows)
    return table.column(name).combine_chunks()


def _values(
    plan: KernelPlan, table: pa.Table, lines: pa.Array, mtime: int | pa.Array | None
) -> tuple[dict[str, pa.Array], np.ndarray]:
    """The kernel's columns for one parsed chunk, and which of its lines are vouched for."""
    n = table.num_rows
    good = np.ones(n, dtype=bool)
    values: dict[str, pa.Array] = {}
    if plan.arrival is not None:
        values["a"], ok = _micros(field_column(table, plan.arrival))
        good &= ok
    elif isinstance(mtime, pa.Array):  # one arrival time per line (a broker's)
        values["a"] = pc.cast(mtime, pa.int64())
    else:
        values["a"] = pa.repeat(pa.scalar(mtime, pa.int64()), n)
    if plan.event is not None:
        values["t"], ok = _micros(field_column(table, plan.event))
        good &= ok
    else:
        values["t"] = values["a"]
    if plan.partition is not None:
        values["pid"], ok = partition_ids(field_column(table, plan.partition))
        good &= ok
    else:
        values["pid"] = pa.repeat(pa.scalar("0"), n)
    if plan.over is not None:
        values["key"], ok = key_texts(field_column(table, plan.over))
        good &= ok
    else:
        values["key"] = pa.nulls(n, pa.string())
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
    for name, token in tokens.items():  # (the one-pass kernel reads them: spark/fused.py)
        values[TOKEN + name] = token
    return values, good


def _micros(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Instants of canonical time strings in microseconds (null elsewhere), and which
    strings are canonical."""
    if not pa.types.is_string(text.type):
        return pa.nulls(len(text), pa.int64()), np.zeros(len(text), dtype=bool)
    good = filled(pc.match_substring_regex(text, _TIME))
    year = pc.cast(
        pc.utf8_slice_codeunits(pc.if_else(pa.array(good), text, "0000"), 0, 4), pa.int64()
    )
    good &= filled(pc.and_(pc.greater_equal(year, 1001), pc.less_equal(year, 9998)))
    chosen = pc.if_else(pa.array(good), text, pa.nulls(len(text), pa.string()))
    try:
        stamps = pc.cast(chosen, pa.timestamp("us", "UTC"))
    except pa.ArrowInvalid:  # not a real date (2026-02-30): find which ones
        seconds = pc.utf8_slice_codeunits(chosen, 0, 19)
        parsed = pc.strptime(seconds, format="%Y-%m-%dT%H:%M:%S", unit="s", error_is_null=True)
        again = pc.strftime(parsed, format="%Y-%m-%dT%H:%M:%S")  # strptime rolls days over
        good &= filled(pc.equal(again, seconds))
        chosen = pc.if_else(pa.array(good), text, pa.nulls(len(text), pa.string()))
        stamps = pc.cast(chosen, pa.timestamp("us", "UTC"))
    return pc.cast(stamps, pa.int64()), good


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
        good = filled(pc.match_substring_regex(column, "^[ -~]*$"))
        return pc.binary_join_element_wise('"', column, '"', ""), good
    return pa.nulls(n, pa.string()), np.zeros(n, dtype=bool)


def _float_tokens(plan: KernelPlan, lines: pa.Array, name: str, column: pa.Array) -> pa.Array:
    """The raw tokens of a column Arrow read as floats: every line's where the record
    keeps them (``mj``); else only where the value is a whole number — the only values an
    integer token can have been (null elsewhere: a pass over every line costs as much as
    the JSON reader's own quarter)."""
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
    return found.take(pa.array(position, mask=position < 0))


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
