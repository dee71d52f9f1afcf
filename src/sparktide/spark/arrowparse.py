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
  ``Infinity`` and no U+FFFD (decided for a whole file at once from its bytes when they
  allow, :func:`_plain`, else by regular expression line by line);
* Arrow's strict reader parses it, as part of its file's plain lines, into exactly one
  row, inferring columns (so a key given twice is an error, as it is for the reference
  reader); when a chunk fails, the lines that may hold an out-of-range number (a
  39-digit run or a 3-digit exponent: Arrow fails on a double beyond range) are set
  aside once, then a chunk that still fails is halved until the failing lines are
  isolated in chunks of at most :data:`_MIN_CHUNK` lines, which take the SQL route;
* no number in it may be an integer beyond 38 digits (out of range for both engines):
  Arrow reads one as a double of magnitude 1e38 or more, and a line with such a double
  and a run of 39 digits is left to the SQL route;
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
    "masked",
    "parse_files",
    "partition_ids",
    "printable",
    "raw_token",
    "string_bytes",
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
    plan: KernelPlan, text: pa.Array, mtime: int | None, data: bytes | None = None
) -> tuple[pa.Array, pa.Array, np.ndarray, list[Vouched]]:
    """A file's non-blank lines (stripped), their 1-based numbers, which of them the
    kernel does *not* vouch for, and the vouched ones chunk by chunk (``data``: the
    file's bytes, if at hand: ``text`` holds them)."""
    pieces = pc.split_pattern(text, "\n").flatten()
    stripped = pc.utf8_trim(pieces, WHITE_SPACE)
    numbers = pa.array(np.arange(1, len(pieces) + 1, dtype=np.int64))
    keep = pc.not_equal(pc.binary_length(stripped), 0)
    raw = pc.filter(stripped, keep)
    line = pc.filter(numbers, keep)
    slow, chunks = vouch_lines(plan, raw, mtime, data)
    return raw, line, slow, chunks


def vouch_lines(
    plan: KernelPlan, raw: pa.Array, mtime: int | pa.Array | None, data: bytes | None = None
) -> tuple[np.ndarray, list[Vouched]]:
    """Which of the (stripped, non-blank) lines ``raw`` the kernel does *not* vouch for,
    and the vouched ones chunk by chunk; ``mtime`` is the arrival time of lines without
    an arrival field: one for all (a file's), or one per line (a broker's timestamp);
    ``data``: the bytes of the file the lines are, if at hand."""
    slow = np.ones(len(raw), dtype=bool)
    plain = _plain(raw, data)
    if isinstance(mtime, pa.Array) and plan.arrival is None:  # (a line without one: SQL)
        plain = pc.and_(plain, pc.is_valid(mtime))
    plain_idx = np.flatnonzero(filled(plain))
    chunks: list[Vouched] = []
    if plain_idx.size and (mtime is not None or plan.arrival is not None):
        every = len(plain_idx) == len(raw)  # (no copy of the lines then)
        for idx, table in _chunks(plan, raw if every else raw.take(pa.array(plain_idx)), plain_idx):
            texts = raw if len(idx) == len(raw) else raw.take(pa.array(idx))
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
#: Lines that may hold a NaN, an infinity or U+FFFD (out-of-range numbers: ``_values``).
_NOT_PLAIN = "NaN|Infinity|\ufffd"
_NOT_PLAIN_BYTES = (b"[", b"]", b"\\", b"NaN", b"Infinity", "\ufffd".encode())
#: A run of 39 digits: where a number Arrow read as a double of 1e38 or more may be an
#: integer beyond 38 digits (out of range for both engines).
_LONG_DIGITS = "[0-9]{39}"


def _plain(raw: pa.Array, data: bytes | None = None) -> pa.Array:
    """Which of the (stripped, non-blank) lines are plain: one flat JSON object of at
    most ``MAX_LINE_CHARS`` characters, without ``[``, ``]``, a backslash, ``NaN``,
    ``Infinity`` or U+FFFD (:data:`_PLAIN`, :data:`_NOT_PLAIN`).

    Usually decided for all lines at once from their bytes (``data``: the whole file's,
    when at hand; blank space holds no brace): none of those characters, as many ``{``
    and ``}`` as lines, each line opening with one and closing with the other — then no
    line holds another brace. The two regular expressions, which took a quarter of the
    kernel's time, run only where that fails."""
    n = len(raw)
    if n and not raw.null_count and pa.types.is_string(raw.type):
        offsets, octets = string_bytes(raw)
        if data is None:
            data = octets.tobytes()
        else:
            octets = np.frombuffer(data, np.uint8)
        if (
            not any(part[:1] in data and part in data for part in _NOT_PLAIN_BYTES)
            and np.count_nonzero(octets == ord("{")) == n
            and np.count_nonzero(octets == ord("}")) == n
            and _all_true(pc.starts_with(raw, "{"))
            and _all_true(pc.ends_with(raw, "}"))
        ):
            if int(np.diff(offsets).max()) <= MAX_LINE_CHARS:  # (bytes ≥ characters)
                return pa.repeat(pa.scalar(True), n)
            return pc.less_equal(pc.utf8_length(raw), MAX_LINE_CHARS)
    return pc.and_(
        pc.and_(
            pc.match_substring_regex(raw, _PLAIN),
            pc.invert(pc.match_substring_regex(raw, _NOT_PLAIN)),
        ),
        pc.less_equal(pc.utf8_length(raw), MAX_LINE_CHARS),
    )


def string_bytes(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A (non-empty) string array's value offsets, from 0, and the bytes of its values,
    without a copy."""
    n = len(column)
    offsets = np.frombuffer(column.buffers()[1], np.int32, n + 1, column.offset * 4)
    low, high = int(offsets[0]), int(offsets[-1])
    if high == low:
        return offsets - low, np.zeros(0, dtype=np.uint8)
    return offsets - low, np.frombuffer(column.buffers()[2], np.uint8, high - low, low)


def _all_true(mask: pa.Array) -> bool:
    return mask.null_count == 0 and bool(pc.all(mask).as_py())


def masked(values: np.ndarray, valid: np.ndarray, kind: pa.DataType) -> pa.Array:
    """``values`` (fixed-width numbers) as an Arrow array, null where ``valid`` is
    False: built from the buffers (``pa.array(..., mask=...)`` took 0.2-0.3 s per
    500,000 values, pyarrow 26)."""
    values = np.ascontiguousarray(values, dtype=kind.to_pandas_dtype())
    if valid.all():
        return pa.array(values, kind)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(kind, len(values), [bitmap, pa.py_buffer(values)])


def filled(mask: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls as False."""
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)


def _chunks(
    plan: KernelPlan, lines: pa.Array, index: np.ndarray, screened: bool = False
) -> Iterator[tuple[np.ndarray, pa.Table]]:
    """(positions, table) for each chunk of ``lines`` that Arrow's strict reader parses
    into one row per line; failing chunks are halved down to :data:`_MIN_CHUNK` lines,
    after the lines that may hold an out-of-range number (``NUMBER_CANDIDATE``: Arrow
    fails on a double beyond range) are set aside, once.

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
    if not screened:
        suspect = filled(pc.match_substring_regex(lines, NUMBER_CANDIDATE))
        if suspect.any():
            kept = np.flatnonzero(~suspect)
            yield from _chunks(plan, lines.take(pa.array(kept)), index[kept], True)
            return
    if len(lines) <= _MIN_CHUNK:
        return
    half = len(lines) // 2
    yield from _chunks(plan, lines.slice(0, half), index[:half], True)
    yield from _chunks(plan, lines.slice(half), index[half:], True)


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
    for name, token in tokens.items():  # (the one-pass kernel reads them: spark/fused.py)
        values[TOKEN + name] = token
    return values, good


def _out_of_range(table: pa.Table, lines: pa.Array) -> np.ndarray:
    """Lines that may hold an integer of more than 38 digits (out of range for both
    engines): Arrow reads one as a double of magnitude 1e38 or more, so only lines with
    such a double and a run of 39 digits are suspect. (A double beyond range fails
    Arrow's parse: :func:`_chunks`.)"""
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


def _micros(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Instants of canonical time strings in microseconds (null elsewhere), and which
    strings are canonical (:data:`_TIME`, a real date, years 1001-9998).

    Usually read from the strings' bytes (:func:`_fixed_micros`); the strings that are
    not laid out as others of their width, by regular expression and Arrow's cast."""
    if not pa.types.is_string(text.type):
        return pa.nulls(len(text), pa.int64()), np.zeros(len(text), dtype=bool)
    micros, good, decided = _fixed_micros(text)
    if not decided.all():
        rest = np.flatnonzero(~decided)
        found, ok = _micros_general(text.take(pa.array(rest)))
        micros[rest] = pc.fill_null(found, 0).to_numpy()
        good[rest] = ok
    return masked(micros, good, pa.int64()), good


#: Positions of the digits of ``YYYY-MM-DDThh:mm:ss`` and the characters between them.
_DIGITS_AT = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18])
_MARKS = ((4, ord("-")), (7, ord("-")), (10, ord("T")), (13, ord(":")), (16, ord(":")))
_DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def _fixed_micros(text: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_micros` from the strings' bytes: the microseconds, which strings are
    canonical, and which were decided here — those laid out as the first string of
    their width (``YYYY-MM-DDThh:mm:ss``, then ``.`` and 1-6 digits or not, then ``Z``
    or ``±hh:mm``) with ASCII digits where it has digits. The others (another layout,
    or no string) are left to the regular expression."""
    n = len(text)
    micros = np.zeros(n, dtype=np.int64)
    good = np.zeros(n, dtype=bool)
    decided = np.zeros(n, dtype=bool)
    if n == 0:
        return micros, good, decided
    offsets, octets = string_bytes(text)
    widths = np.diff(offsets)
    padded = np.zeros(len(octets) + _WIDEST, dtype=np.uint8)
    padded[: len(octets)] = octets
    windows = np.lib.stride_tricks.sliding_window_view(padded, _WIDEST)
    counts = np.bincount(np.clip(widths, 0, _WIDEST + 1), minlength=_WIDEST + 2)
    for width in np.flatnonzero(counts[20 : _WIDEST + 1]) + 20:
        rows = np.flatnonzero(widths == width)
        chars = windows[offsets[rows], :width]
        found = _layout_micros(chars)
        if found is not None:
            micros[rows], good[rows], decided[rows] = found
    if text.null_count:  # (a missing string's slot may hold bytes)
        missing = ~filled(pc.is_valid(text))
        good[missing] = decided[missing] = False
    return micros, good, decided


_WIDEST = 32  # (``YYYY-MM-DDThh:mm:ss.ffffff+hh:mm``)


def _layout_micros(chars: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_fixed_micros` of strings of one width (``chars``: a row of bytes each)
    laid out as the first one; ``None`` when that one has no canonical layout."""
    width = chars.shape[1]
    first = chars[0]
    fraction = 0
    if first[19] == ord("."):
        while 20 + fraction < width and 48 <= first[20 + fraction] <= 57:
            fraction += 1
        if not 1 <= fraction <= 6:
            return None
    zone = 19 + (fraction + 1 if fraction else 0)
    if width - zone not in (1, 6):
        return None
    digits_at = [*_DIGITS_AT, *range(20, 20 + fraction)]
    marks = list(_MARKS) + ([(19, ord("."))] if fraction else [])
    if width - zone == 1:
        marks.append((zone, ord("Z")))
    else:
        marks.append((zone + 3, ord(":")))
        digits_at += [zone + 1, zone + 2, zone + 4, zone + 5]
    columns = np.ascontiguousarray(chars.T)  # (a row per position: contiguous reads)
    digit = columns[digits_at] - np.uint8(48)  # (wraps below '0': not a digit either)
    decided = (digit <= 9).all(axis=0)
    for at, mark in marks:
        decided &= columns[at] == mark
    if width - zone == 6:
        sign = columns[zone]
        decided &= (sign == ord("+")) | (sign == ord("-"))

    def number(i: int, count: int) -> np.ndarray:
        value = digit[i].astype(np.int64)
        for k in range(i + 1, i + count):
            value = value * 10 + digit[k]
        return value

    year, month, day = number(0, 4), number(4, 2), number(6, 2)
    hour, minute, second = number(8, 2), number(10, 2), number(12, 2)
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    month_ok = (month >= 1) & (month <= 12)
    last_day = _DAYS_IN_MONTH[np.where(month_ok, month, 1)] + (leap & (month == 2))
    good = decided & (year >= 1001) & (year <= 9998) & month_ok & (day >= 1)
    good &= (day <= last_day) & (hour <= 23) & (minute <= 59) & (second <= 59)
    # (days by table, for the dates that can be good: the others are 0 in the end)
    at = np.where(good, (year - 1001) * 12 + month - 1, 0)
    days = _MONTH_DAYS.reshape(-1)[at] + day - 1
    micros = ((days * 24 + hour) * 60 + minute) * 60 + second
    micros *= 1_000_000
    if fraction:
        micros += number(14, fraction) * 10 ** (6 - fraction)
    if width - zone == 6:
        offset_hours, offset_minutes = number(14 + fraction, 2), number(16 + fraction, 2)
        good &= (offset_hours <= 23) & (offset_minutes <= 59)
        east = np.where(columns[zone] == ord("+"), 1, -1)
        micros -= east * (offset_hours * 60 + offset_minutes) * 60_000_000
    return np.where(good, micros, 0), good, decided


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (years ≥ 1)."""
    year = year - (month <= 2)
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * np.where(month > 2, month - 3, month + 9) + 2) // 5 + day - 1
    of_eras = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146097 + of_eras - 719468


#: Days from 1970-01-01 to the first of each month of years 1001-9998 (checked dates).
_MONTH_DAYS = _days_from_civil(
    np.repeat(np.arange(1001, 9999), 12), np.tile(np.arange(1, 13), 9999 - 1001), 1
).reshape(-1, 12)


def _micros_general(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """:func:`_micros` by regular expression and Arrow's cast."""
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
