"""The Arrow kernel for JSON lines: whole files parsed by Arrow inside one ``mapInArrow``.

Spark's SQL route (:func:`~sparktide.spark.inputs.sqlparse.parse_lines`) is exact for
every input, but splitting whole files into numbered lines and parsing each line into a
``variant`` is several times slower than Arrow's C++ JSON reader on well-formed lines
(``docs/design.md``). So each file goes through :func:`file_kernel`, which *vouches* for
the lines it can prove the reference reader accepts, and hands every other line to the
SQL route unchanged. The answer therefore never depends on this module: it only decides
which route a line takes.

A line is vouched for when all of these hold (each checked on whole Arrow arrays):

* it is *plain* (:func:`~sparktide.spark.inputs.plainlines.plain_lines`): one flat JSON
  object on the line of at most 1 MiB characters — it starts with ``{`` and ends with
  ``}``, holds no other brace, no ``[``, no backslash (so no string holds a quote, and a
  quoted name followed by ``:`` is a key), no ``NaN`` / ``Infinity`` and no U+FFFD;
* Arrow's strict reader parses it, as part of its file's plain lines, into exactly one
  row, inferring columns (so a key given twice is an error, as it is for the reference
  reader); when a chunk fails, the lines that may hold an out-of-range number (a
  39-digit run or a 3-digit exponent: Arrow fails on a double beyond range) are set
  aside once, then a chunk that still fails is halved until the failing lines are
  isolated in small chunks, which take the SQL route
  (:func:`~sparktide.spark.inputs.plainlines.parsed_chunks`);
* no number in it may be an integer beyond 38 digits (out of range for both engines):
  Arrow reads one as a double of magnitude 1e38 or more, and a line with such a double
  and a run of 39 digits is left to the SQL route;
* every field the job reads has the canonical form the SQL route gives the same
  answer for (:func:`~sparktide.spark.inputs.arrowvalues.chunk_values`): times as
  ``YYYY-MM-DDThh:mm:ss[.f{1,6}](Z|±hh:mm)`` strings with ASCII digits, a real date and a
  year from 1001 to 9998 (:mod:`~sparktide.spark.inputs.arrowtimes`); partitions as a
  string or an integer of at most 18 digits; substream keys as a printable-ASCII string,
  an integer of at most 18 digits or a boolean; numeric (``sum`` / ``avg``) columns as a
  JSON number or ``null`` (and, in a column Arrow reads as floats, no integer token of
  19 digits or more).

For a vouched line the kernel gives the event and arrival times, partition id and key
exactly as the SQL route computes them, and ``mj``: a small JSON object with the raw
tokens of the fields windows read (group-by and aggregate columns), from which the
SQL route makes the record variant ``m`` (``parse_json`` of those few tokens, so every
JSON type survives). Its text comes back only when the job releases events: with windows
no later step reads it, and moving it back into Spark is not free. In a file that is not
valid UTF-8, bad bytes become U+FFFD (one decode of the file) and the kernel tells the
SQL route which lines held them (``pre_error``: ``line N: invalid UTF-8``); a line
holding U+FFFD is never plain.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from sparktide.job import Job
from sparktide.spark.inputs.arrays import filled
from sparktide.spark.inputs.arrowvalues import KernelPlan, chunk_values, kernel_plan
from sparktide.spark.inputs.contract import KERNEL_VALUES, VOUCHED, WHITE_SPACE, kernel_column
from sparktide.spark.inputs.plainlines import parsed_chunks, plain_lines
from sparktide.spark.inputs.sqlparse import parse_lines

__all__ = [
    "KERNEL_OUTPUT",
    "Vouched",
    "file_kernel",
    "parse_files",
    "vouch",
    "vouch_lines",
]

#: The kernel's rows: a file's non-blank lines with, where ``fast``, the kernel's values.
_OUTPUT_FIELDS = (
    ("file", "string"),
    ("line", "bigint"),
    ("raw", "string"),
    ("mtime", "bigint"),
    (VOUCHED, "boolean"),
    *KERNEL_VALUES,
    ("pre_error", "string"),
)
#: :data:`_OUTPUT_FIELDS` as Spark's schema text (``mapInArrow``) and as Arrow's schema.
KERNEL_OUTPUT = ", ".join(f"{name} {kind}" for name, kind in _OUTPUT_FIELDS)
_ARROW_TYPES = {"string": pa.string(), "bigint": pa.int64(), "boolean": pa.bool_()}
_OUTPUT_SCHEMA = pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in _OUTPUT_FIELDS])


def parse_files(files: DataFrame, job: Job) -> DataFrame:
    """Whole JSONL files (``file``, ``text``, ``mtime``) → the columns of
    :func:`~sparktide.spark.inputs.sqlparse.parse_lines` (``file``, ``line``, ``raw``, ``mtime``,
    ``pre_error``, ``error``, ``m``, ``t``, ``a``, ``pid``, ``key``).

    Lines the kernel vouches for skip the SQL parse; the rest take it, in the same
    projection, so the kernel runs once per file.
    """
    kernel = functools.partial(file_kernel, kernel_plan(job))
    rows = files.select("file", "text", "mtime").mapInArrow(kernel, KERNEL_OUTPUT)
    for name, _ in KERNEL_VALUES:
        rows = rows.withColumnRenamed(name, kernel_column(name))
    return parse_lines(rows, job)


def file_kernel(plan: KernelPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: whole files (``file``, ``text``, ``mtime``) → their
    lines (:data:`KERNEL_OUTPUT`), vouched-for lines with the kernel's values."""
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
    plain = plain_lines(raw, data)
    if isinstance(mtime, pa.Array) and plan.arrival is None:  # (a line without one: SQL)
        plain = pc.and_(plain, pc.is_valid(mtime))
    plain_idx = np.flatnonzero(filled(plain))
    chunks: list[Vouched] = []
    if plain_idx.size and (mtime is not None or plan.arrival is not None):
        every = len(plain_idx) == len(raw)  # (no copy of the lines then)
        times = [name for name in (plan.arrival, plan.event) if name is not None]
        plain_raw = raw if every else raw.take(pa.array(plain_idx))
        for idx, table in parsed_chunks(times, plain_raw, plain_idx):
            texts = raw if len(idx) == len(raw) else raw.take(pa.array(idx))
            arrival = mtime.take(pa.array(idx)) if isinstance(mtime, pa.Array) else mtime
            values, good = chunk_values(plan, table, texts, arrival)
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
                *(chunk.values[name] for name, _ in KERNEL_VALUES),
                pa.nulls(count, pa.string()),
            ],
            schema=_OUTPUT_SCHEMA,
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
                    pa.nulls(count, _OUTPUT_SCHEMA.field(i).type)
                    for i in range(5, len(_OUTPUT_SCHEMA) - 1)
                ),
                errors,
            ],
            schema=_OUTPUT_SCHEMA,
        )
