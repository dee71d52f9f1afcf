"""Plain lines, and Arrow's strict JSON reader over them in chunks (the Arrow kernel).

A line is *plain* when it is one flat JSON object of at most ``MAX_LINE_CHARS``
characters that no escape, nesting, ``NaN``, ``Infinity`` or U+FFFD can make ambiguous
(:func:`plain_lines`); only plain lines reach Arrow's reader (:func:`parsed_chunks`),
whose rows the kernel then judges field by field.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from sparktide.reader import MAX_LINE_CHARS, NUMBER_CANDIDATE
from sparktide.spark.inputs.arrays import all_true, filled, string_bytes

__all__ = ["NOT_PLAIN", "PLAIN_LINE", "parsed_chunks", "plain_lines"]

#: The fewest lines of a chunk Arrow's reader failed on that is halved again.
_MIN_CHUNK = 64

#: A flat JSON object: braces at both ends only, no bracket or backslash.
PLAIN_LINE = r"^\{[^{}\[\]\\]*\}$"
#: Lines that may hold a NaN, an infinity or U+FFFD (out-of-range numbers:
#: :func:`~sparktide.spark.inputs.arrowvalues.chunk_values`).
NOT_PLAIN = "NaN|Infinity|\ufffd"
_NOT_PLAIN_BYTES = (b"[", b"]", b"\\", b"NaN", b"Infinity", "\ufffd".encode())


def plain_lines(raw: pa.Array, data: bytes | None = None) -> pa.Array:
    """Which of the (stripped, non-blank) lines are plain: one flat JSON object of at
    most ``MAX_LINE_CHARS`` characters, without ``[``, ``]``, a backslash, ``NaN``,
    ``Infinity`` or U+FFFD (:data:`PLAIN_LINE`, :data:`NOT_PLAIN`).

    Usually decided for all lines at once from their bytes (``data``: the whole file's,
    when at hand; blank space holds no brace): none of those characters, as many ``{``
    and ``}`` as lines, each line opening with one and closing with the other — then no
    line holds another brace. The two regular expressions, which are costly, run only
    where that fails."""
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
            and all_true(pc.starts_with(raw, "{"))
            and all_true(pc.ends_with(raw, "}"))
        ):
            if int(np.diff(offsets).max()) <= MAX_LINE_CHARS:  # (bytes ≥ characters)
                return pa.repeat(pa.scalar(True), n)
            return pc.less_equal(pc.utf8_length(raw), MAX_LINE_CHARS)
    return pc.and_(
        pc.and_(
            pc.match_substring_regex(raw, PLAIN_LINE),
            pc.invert(pc.match_substring_regex(raw, NOT_PLAIN)),
        ),
        pc.less_equal(pc.utf8_length(raw), MAX_LINE_CHARS),
    )


def parsed_chunks(
    times: list[str], lines: pa.Array, index: np.ndarray, screened: bool = False
) -> Iterator[tuple[np.ndarray, pa.Table]]:
    """(positions, table) for each chunk of ``lines`` that Arrow's strict reader parses
    into one row per line; failing chunks are halved down to :data:`_MIN_CHUNK` lines,
    after the lines that may hold an out-of-range number (``NUMBER_CANDIDATE``: Arrow
    fails on a double beyond range) are set aside, once.

    Time fields (``times``) are read as strings (Arrow would turn some into timestamps);
    every other field's type is inferred, which also rejects a key given twice."""
    if len(lines) == 0:
        return
    joined = pc.binary_join(pa.ListArray.from_arrays([0, len(lines)], lines), "\n")
    data = joined[0].as_buffer()
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
            yield from parsed_chunks(times, lines.take(pa.array(kept)), index[kept], True)
            return
    if len(lines) <= _MIN_CHUNK:
        return
    half = len(lines) // 2
    yield from parsed_chunks(times, lines.slice(0, half), index[:half], True)
    yield from parsed_chunks(times, lines.slice(half), index[half:], True)
