"""The watermark governing each output scope at the end of a batch (semantics §4–6): the
job watermark (merged), a partition's (partitioned) or a key's (substreams), in Spark
SQL (:func:`scope_watermarks`) and in numpy on the driver (:func:`scope_arrays`); and
the idle timeout's forcing of it (:func:`force`); whether it releases a row
(:func:`release_ready`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.core.instants import NEG_INF, POS_INF
from sparktide.spark.batch import Batch
from sparktide.spark.clocks import PartitionClock, governing_watermark_floor
from sparktide.spark.columns import (
    KEY_LAST,
    KEY_WATERMARK,
    SYSTEM_TIME,
)
from sparktide.spark.context import Context
from sparktide.spark.sql import NEG, lit_us, sql_string

__all__ = ["force", "release_ready", "scope_arrays", "scope_watermarks", "written_from_start"]


def release_ready(context: Context, watermark: str, *, strict: bool = False) -> str:
    """SQL: whether the row's system timestamp is released by its scope's ``watermark``
    (SQL) (:func:`sparktide.core.release.release_ready`): reached (``≤``) under Stream
    Analytics' heuristic watermark, strictly passed (``<``) where CTIs make it (the job
    has ``[punctuation]``: a CTI at *c* commits what lies strictly before *c*) or
    ``strict`` asks (a left join of two streams, semantics §7.9)."""
    strict = strict or context.job.punctuation is not None
    return f"{SYSTEM_TIME} {'<' if strict else '<='} {watermark}"


def written_from_start(context: Context, timestamp: str = SYSTEM_TIME) -> str:
    """SQL: whether a result at ``timestamp`` (SQL: a released event's or a match's
    system timestamp, a window's end) is written, the run's output starting at
    ``context.output_start`` (:func:`sparktide.core.release.written_from_start`)."""
    start = context.output_start
    return "true" if start is None else f"{timestamp} >= {lit_us(start)}"


def scope_watermarks(
    context: Context, batch: Batch, *, last: bool = False
) -> tuple[str, str, DataFrame | None]:
    """SQL for the governing end-of-batch watermark of a row's ``scope``, and for the
    processing time of the scope's last delivery (idle timeout); plus a table to join
    on ``scope`` when they are per key. At a flush the watermark is +inf, unless
    ``last`` asks for the last finite one."""
    if batch.flushing and not last:
        return lit_us(POS_INF), NEG, None
    timeline = context.timeline
    if timeline.job_watermark:
        latest = max((p.last_processing for p in batch.parts.values()), default=NEG_INF)
        return lit_us(batch.clock["job_watermark"]), lit_us(latest), None
    if not timeline.by_key:
        cases = " ".join(
            f"WHEN scope = {sql_string(pid)} THEN {lit_us(p.watermark)}"
            for pid, p in batch.parts.items()
        )
        lasts = " ".join(
            f"WHEN scope = {sql_string(pid)} THEN {lit_us(p.last_processing)}"
            for pid, p in batch.parts.items()
        )
        return f"CASE {cases} ELSE {NEG} END", f"CASE {lasts} ELSE {NEG} END", None
    assert batch.keys_next is not None
    floor = lit_us(_floor(context, batch))
    table = batch.keys_next.select(  # type: ignore[union-attr]
        F.col("key").alias("scope"),
        F.expr(f"greatest({KEY_WATERMARK}, {floor})").alias("scope_w"),
        F.col(KEY_LAST).alias("scope_last"),
    )
    return f"coalesce(scope_w, {floor})", f"coalesce(scope_last, {NEG})", table


def scope_arrays(context: Context, scope: pa.ChunkedArray, batch: Batch) -> tuple[Any, Any]:
    """:func:`scope_watermarks` for the driver: the governing watermark and the last
    delivery's processing time of each row's ``scope`` (for substreams, the last
    delivery only when an idle timeout reads it)."""
    n = len(scope)
    parts = batch.parts
    if isinstance(batch.keys_next, pa.Table):  # substreams: the key's, or the floor
        keys = batch.keys_next
        floor = _floor(context, batch)
        assert context.window is not None
        if context.window.idle_timeout is None:  # (no last delivery read)
            # only keys above the floor govern otherwise than the floor (most keys of
            # a large batch are at the floor)
            keys = keys.filter(pc.greater(keys.column(KEY_WATERMARK), floor))
        where = pc.index_in(scope, value_set=keys.column("key"))
        index = pc.fill_null(where, keys.num_rows).to_numpy()
        watermark = np.append(keys.column(KEY_WATERMARK).to_numpy(), NEG_INF)
        last = np.append(keys.column(KEY_LAST).to_numpy(), NEG_INF)
        return np.maximum(watermark[index], floor), last[index]
    if context.timeline.job_watermark:
        latest = max((p.last_processing for p in parts.values()), default=NEG_INF)
        return (
            np.full(n, batch.clock["job_watermark"], dtype=np.int64),
            np.full(n, latest, dtype=np.int64),
        )
    pids = list(parts)
    where = pc.index_in(scope, value_set=pa.array(pids, pa.string()))
    index = pc.fill_null(where, len(pids)).to_numpy()  # (an unknown scope: -inf)
    watermark = np.array([*(parts[p].watermark for p in pids), NEG_INF], dtype=np.int64)
    last = np.array([*(parts[p].last_processing for p in pids), NEG_INF], dtype=np.int64)
    return watermark[index], last[index]


def force(context: Context, batch: Batch, scope: str, to: int) -> None:
    """Advance the watermark governing ``scope`` to ``to`` (idle timeout)."""
    parts: dict[str, PartitionClock] = batch.parts
    if context.timeline.job_watermark:
        for part in parts.values():
            part.watermark = max(part.watermark, to)
        batch.clock["job_watermark"] = max(batch.clock["job_watermark"], to)
    else:
        parts[scope].watermark = max(parts[scope].watermark, to)


def _floor(context: Context, batch: Batch) -> int:
    """Substreams: the watermark every key has reached at the end of the batch."""
    return governing_watermark_floor(
        batch.arrival_at_end, batch.clock, context.watermark_late_arrival
    )
