"""Whole JSONL files in a task: their lines vouched for, in pieces when threads allow.

The task gets each file's text (``file``, ``text``, ``mtime``) or its path (``file``,
``path``, ``mtime``), which it then reads itself: reading the file here spares the JVM
copying it into a row and Arrow sending it to this worker. The lines
:func:`~sparktide.spark.inputs.arrowjson.vouch` vouches for go to the task's rows; the others
to ``slow``, for the SQL route.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.spark.inputs.arrowjson import Vouched, vouch
from sparktide.spark.onepass.collect import RowCollector
from sparktide.spark.onepass.files import local_path
from sparktide.spark.onepass.parallel import in_threads
from sparktide.spark.onepass.plan import FusedPlan
from sparktide.spark.onepass.signals import Abort, Unreadable

__all__ = ["PIECE_BYTES", "pieces", "read_files", "read_json_files"]

#: Names Hadoop's codecs claim (Spark's text source decompresses such files).
_COMPRESSED = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".br", ".xz")

#: Files of at least this many bytes are split into pieces for a task's threads.
PIECE_BYTES = 1 << 20

#: What :func:`~sparktide.spark.inputs.arrowjson.vouch` makes of a file: its non-blank lines,
#: their line numbers, which of them it did not vouch for, and the chunks it did.
Vouching = tuple[pa.Array, pa.Array, np.ndarray, list[Vouched]]


def read_files(
    plan: FusedPlan, batch: pa.RecordBatch, rows: RowCollector, slow: list[pa.RecordBatch]
) -> None:
    """Whole JSONL files given by their text (``file``, ``text``, ``mtime``)."""
    files, contents, mtimes = (batch.column(c) for c in ("file", "text", "mtime"))
    texts = [contents.slice(i, 1) for i in range(batch.num_rows)]
    _vouch_files(plan, rows, slow, files.to_pylist(), texts, mtimes.to_pylist())


def read_json_files(
    plan: FusedPlan, batch: pa.RecordBatch, rows: RowCollector, slow: list[pa.RecordBatch]
) -> None:
    """Whole JSONL files (``file``, ``path``, ``mtime``) read by their paths: the bytes
    Spark's text source would give (:class:`Unreadable` for a file that is not local, or
    that Spark would decompress — the engine then sends the text itself)."""
    contents = []
    for path in batch.column("path").to_pylist():
        local = local_path(path)
        if local is None or local.lower().endswith(_COMPRESSED):
            raise Unreadable(path)
        try:
            with open(local, "rb") as handle:
                data = handle.read()
        except OSError:  # (gone, or not readable here: Spark's reading decides)
            raise Unreadable(path) from None
        contents.append(data)
    texts = [pa.array([data], pa.binary()).view(pa.string()) for data in contents]
    files, mtimes = (batch.column(c).to_pylist() for c in ("file", "mtime"))
    _vouch_files(plan, rows, slow, files, texts, mtimes, contents)


def _vouch_files(
    plan: FusedPlan,
    rows: RowCollector,
    slow: list[pa.RecordBatch],
    files: list[str],
    texts: list[pa.Array],
    mtimes: list[int | None],
    contents: list[bytes] | None = None,
) -> None:
    """Each whole file's (``texts``: one string each; ``contents``: their bytes, if at
    hand) lines to ``rows`` or ``slow``."""
    for text in texts:
        try:
            text.validate(full=True)
        except pa.ArrowInvalid:  # bad UTF-8: the SQL route reports those lines
            raise Abort("a file is not valid UTF-8") from None
    # a task holding fewer files than it has threads splits them into pieces of lines
    parts = max(1, plan.threads // max(len(texts), 1))
    work, owner, before = [], [], []
    for i, (text, data) in enumerate(zip(texts, contents or [None] * len(texts), strict=True)):
        for piece, piece_data, lines_before in pieces(text, data, parts):
            work.append((piece, mtimes[i], piece_data))
            owner.append(i)
            before.append(lines_before)
    results: list[list[tuple[Vouching, int]]] = [[] for _ in texts]
    vouched = in_threads(plan, lambda item: vouch(plan.parse, *item), work)
    for k, result in enumerate(vouched):
        results[owner[k]].append((result, before[k]))
    for i, file_pieces in enumerate(results):
        _add_file(plan, rows, slow, files[i], mtimes[i], _joined(file_pieces))


def pieces(
    text: pa.Array, data: bytes | None, parts: int
) -> Iterator[tuple[pa.Array, bytes | None, int]]:
    """A file's text in up to ``parts`` pieces of whole lines (each with its bytes and
    the number of lines before it); whole when small or when its bytes are not at hand."""
    if parts <= 1 or data is None or len(data) < PIECE_BYTES:
        yield text, data, 0
        return
    start, lines_before = 0, 0
    for k in range(1, parts + 1):
        end = len(data) if k == parts else data.find(b"\n", len(data) * k // parts) + 1
        if end <= start:  # (no newline after the cut: the rest is one piece)
            continue
        piece = data[start:end]
        yield pa.array([piece], pa.binary()).view(pa.string()), piece, lines_before
        lines_before += piece.count(b"\n")
        start = end
        if end == len(data):
            break


def _joined(file_pieces: list[tuple[Vouching, int]]) -> Vouching:
    """One file's :func:`~sparktide.spark.inputs.arrowjson.vouch` from those of its pieces
    (their line numbers and positions among the file's non-blank lines shifted)."""
    if len(file_pieces) == 1:  # (a whole file)
        return file_pieces[0][0]
    raws, lines, unvouched, chunks = [], [], [], []
    base = 0
    for (raw, line, slow, vouched), lines_before in file_pieces:
        raws.append(raw)
        lines.append(pc.add(line, lines_before))
        unvouched.append(slow)
        chunks += [dataclasses.replace(chunk, rows=chunk.rows + base) for chunk in vouched]
        base += len(raw)
    return pa.concat_arrays(raws), pa.concat_arrays(lines), np.concatenate(unvouched), chunks


def _add_file(
    plan: FusedPlan,
    rows: RowCollector,
    slow: list[pa.RecordBatch],
    name: str,
    mtime: int | None,
    result: Vouching,
) -> None:
    """One file's vouched lines to ``rows``, the others to ``slow``."""
    raw, line, unvouched, chunks = result
    index = rows.code(name)
    if unvouched.any():  # lines only the SQL route can judge
        others = pa.array(np.flatnonzero(unvouched))
        count = len(others)
        slow.append(
            pa.RecordBatch.from_pydict(
                {
                    "file": pa.repeat(pa.scalar(name, pa.string()), count),
                    "line": line.take(others),
                    "raw": raw.take(others),
                    "mtime": pa.repeat(pa.scalar(mtime, pa.int64()), count),
                }
            )
        )
    for chunk in chunks:
        rows.add(
            plan,
            chunk,
            np.full(len(chunk.rows), index, dtype=np.int64),
            line.take(pa.array(chunk.rows)).to_numpy(),
        )
