"""Lines in a task: broker lines, or the lines (and typed rows) Spark read for it.

Each row is one line (``file``, ``line``, ``raw``, ``mtime``, maybe ``pre_error``, and
the stream's partition column if the job reads it); typed Parquet rows come with the
kernel's inputs made by Spark (:func:`~sparktide.spark.onepass.plan.typed_columns`).
The lines :func:`~sparktide.spark.inputs.arrowjson.vouch_lines` vouches for go to the task's
rows, blank lines and the others to ``slow``, for the SQL route.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.spark.inputs.arrays import filled
from sparktide.spark.inputs.arrowjson import vouch_lines
from sparktide.spark.inputs.contract import WHITE_SPACE
from sparktide.spark.onepass.collect import RowCollector, file_codes
from sparktide.spark.onepass.plan import TYPED, FusedPlan
from sparktide.spark.onepass.signals import Abort

__all__ = ["read_lines"]


def read_lines(
    plan: FusedPlan, batch: pa.RecordBatch, rows: RowCollector, slow: list[pa.RecordBatch]
) -> None:
    """A batch of lines (or typed rows) to ``rows`` and ``slow``."""
    if batch.column("file").null_count or batch.column("line").null_count:
        raise Abort("a line without its file or number")  # (no arrival order to sort by)
    untyped = _typed_rows(plan, batch, rows)
    if untyped is None:
        return
    batch = untyped
    raw = batch.column("raw")
    try:
        raw.validate(full=True)
    except pa.ArrowInvalid:  # bad UTF-8: the SQL route reports those lines
        raise Abort("a line is not valid UTF-8") from None
    stripped = pc.utf8_trim(pc.fill_null(raw, ""), WHITE_SPACE)
    usable = pc.not_equal(pc.utf8_length(stripped), 0)
    if "pre_error" in batch.schema.names:  # (a Parquet file that could not be read)
        usable = pc.and_(usable, pc.is_null(batch.column("pre_error")))
    kept = np.flatnonzero(filled(usable))
    at = pa.array(kept)
    unvouched, chunks = vouch_lines(plan.parse, stripped.take(at), batch.column("mtime").take(at))
    partition = _stream_partition(plan, batch)
    blank = np.ones(batch.num_rows, dtype=bool)
    blank[kept] = False
    others = np.sort(np.concatenate([np.flatnonzero(blank), kept[unvouched]]))
    if others.size:
        slow.append(_slow_lines(batch, pa.array(others), partition))
    if not chunks:
        return
    file = file_codes(rows, batch.column("file"))
    line = batch.column("line").to_numpy(zero_copy_only=False)
    for chunk in chunks:
        where = kept[chunk.rows]
        pid = None
        if partition is not None:
            pid = pc.cast(partition.take(pa.array(where)), pa.string())
        rows.add(plan, chunk, file[where], line[where].astype(np.int64), pid)


def _typed_rows(
    plan: FusedPlan, batch: pa.RecordBatch, rows: RowCollector
) -> pa.RecordBatch | None:
    """The typed Parquet rows of ``batch`` to ``rows`` (Spark made the kernel's inputs);
    the rows left to parse (``None`` when none is)."""
    if TYPED not in batch.schema.names:
        return batch
    typed = filled(batch.column(TYPED))
    if typed.any():
        rows.add_typed(plan, batch.filter(pa.array(typed)))
    if typed.all():
        return None
    return batch.filter(pa.array(~typed))


def _stream_partition(plan: FusedPlan, batch: pa.RecordBatch) -> pa.Array | None:
    """The lines' partitions from the stream's own column (``None``: from the records)."""
    if plan.stream_partition is None:
        return None
    partition = batch.column(plan.stream_partition)
    if not pa.types.is_integer(partition.type) or partition.null_count:
        # (the SQL route's text form of other types is its own)
        raise Abort("the stream's partition column is not integers")
    return partition


def _slow_lines(
    batch: pa.RecordBatch, taken: pa.Array, partition: pa.Array | None
) -> pa.RecordBatch:
    """The lines at ``taken`` as the SQL route reads them."""
    names = batch.schema.names
    return pa.RecordBatch.from_pydict(
        {
            "file": batch.column("file").take(taken),
            "line": batch.column("line").take(taken),
            "raw": batch.column("raw").take(taken),
            "mtime": batch.column("mtime").take(taken),
            **(
                {"pre_error": batch.column("pre_error").take(taken)} if "pre_error" in names else {}
            ),
            **({"lpart": pc.cast(partition.take(taken), pa.int64())} if partition else {}),
        }
    )
