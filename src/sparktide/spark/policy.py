"""The ordering policy in Spark SQL (semantics §3–4, §7): verdicts and system timestamps of
a batch's rows, in closed form over window functions.

Within a batch the arrival clock at an event is ``max(A0, arrival)`` (rows are judged
in arrival order), and the timeline's newest timestamp before an event is a running
maximum of a per-row value ``h`` — one window function per timeline. The steps, in
order (each adds columns; :mod:`sparktide.spark.columns` names them):

1. :func:`timeline_clocks`: each row's timeline clock at the batch start (``A0``,
   ``W0``, ``newest0``, ``n0``) and keyless CTIs (``Y``);
2. :func:`early_and_late`: the early and late verdicts, the clamped timestamp ``g``,
   the arrival floor and explicit CTIs before the row (``X``);
3. :func:`running_newest`: ``h``, the row's contribution to the newest timestamp, its
   running maximum ``newest_x``, and generated CTIs (``C``, :mod:`.punctuation`);
4. :func:`watermark_before`: the timeline's watermark before the row (``W``);
5. :func:`out_of_order`: the out-of-order verdict, system timestamp ``s``, ``verdict``
   and ``reason``;
6. :func:`governing_watermark`: the row's ``scope`` and the watermark governing it
   within the batch (``G``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.spark.clocks import PartitionClock
from sparktide.spark.context import Context
from sparktide.spark.keys import KEYS_SCHEMA
from sparktide.spark.punctuation import generated_ctis, generated_scan
from sparktide.spark.sql import NEG, lit_us, sql_string

__all__ = [
    "INLINE_PARTITIONS",
    "BatchStart",
    "early_and_late",
    "governing_watermark",
    "judged_rows",
    "out_of_order",
    "running_newest",
    "timeline_clocks",
    "watermark_before",
]

#: Up to this many partitions the policy reads each partition's clock (A0, W0,
#: newest0, n0) from a literal map by pid; beyond, from a broadcast join.
INLINE_PARTITIONS = 64

#: The rows of a timeline before the current one, in arrival order.
_BEFORE = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
#: The watermark's threshold from the clocks and CTIs alone (no newest timestamp).
_THRESHOLD = "greatest(W0, floor_i, X, Y)"


@dataclass(frozen=True)
class BatchStart:
    """What the policy reads of the timelines at the start of a batch."""

    parts: dict[str, PartitionClock]  # the partitions' clocks
    arrival_at_start: int  # the input's arrival clock (substreams)
    keys_batch: int | None  # the batch whose keys' state substreams start from
    cti_floor: int  # substreams: the largest CTI without a key so far


def judged_rows(context: Context, good: DataFrame, start: BatchStart) -> DataFrame:
    """The policy over a batch's well-formed rows ``good``: every verdict and system
    timestamp."""
    rows, timeline = timeline_clocks(context, good, start)
    order = f"PARTITION BY {timeline} ORDER BY a, file, line"
    rows = early_and_late(context, rows, order)
    rows = running_newest(context, rows, timeline, order)
    rows = watermark_before(context, rows)
    rows = out_of_order(context, rows)
    return governing_watermark(context, rows, start.parts)


def timeline_clocks(context: Context, good: DataFrame, start: BatchStart) -> tuple[DataFrame, str]:
    """Each row's timeline clock at the start of the batch: arrival clock ``A0``,
    watermark ``W0``, newest timestamp ``newest0``, events judged ``n0``; and ``Y``,
    the largest keyless CTI before the row (substreams). Returns the rows and the
    column naming their timeline."""
    parts = start.parts
    good = good.withColumn("Y", F.expr(_keyless_ctis(context, start.cti_floor)))
    if context.timeline.by_key:
        keys = context.store.load_table(start.keys_batch, "keys", KEYS_SCHEMA)
        rows = good.join(keys, on="key", how="left")
        rows = rows.withColumn("A0", F.expr(lit_us(start.arrival_at_start)))
        rows = rows.withColumn("W0", F.expr(f"coalesce(k_watermark, {NEG})"))
        rows = rows.withColumn("newest0", F.expr(f"coalesce(k_newest, {NEG})"))
        return rows.withColumn("n0", F.expr("coalesce(k_events, 0)")), "key"
    if parts and len(parts) <= INLINE_PARTITIONS:
        return _inline_clocks(good, parts), "pid"
    table = context.spark.createDataFrame(
        [(pid, p.arrival, p.watermark, p.newest, p.events_judged) for pid, p in parts.items()],
        "pid string, A0 bigint, W0 bigint, newest0 bigint, n0 bigint",
    )
    rows = good.join(F.broadcast(table), on="pid", how="left")
    return rows.withColumn("n0", F.expr("coalesce(n0, 0)")), "pid"  # (a partition new here)


def _keyless_ctis(context: Context, cti_floor: int) -> str:
    """SQL of ``Y``: substreams with explicit CTIs: CTIs without a key punctuate every
    substream, the largest one before each row in the input's arrival order (they are
    few; one ordered pass); else minus infinity."""
    if not (context.timeline.by_key and context.explicit):
        return NEG
    return (
        f"greatest({lit_us(cti_floor)}, max(CASE WHEN cti AND key IS NULL THEN t END) "
        f"OVER (ORDER BY a, file, line {_BEFORE}))"
    )


def _inline_clocks(good: DataFrame, parts: dict[str, PartitionClock]) -> DataFrame:
    """The partitions' clocks as one literal map looked up by pid: the same values as a
    broadcast join, without its table, its broadcast job and its planning. (In a map
    the values are not inlined into the generated code, so a new batch's values do not
    make Spark compile it again, as CASE branches with long literals did;
    docs/performance.md, "Fixed cost per micro-batch".)"""
    entries = ", ".join(
        f"{sql_string(pid)}, named_struct('A0', {lit_us(p.arrival)}, "
        f"'W0', {lit_us(p.watermark)}, 'newest0', {lit_us(p.newest)}, "
        f"'n0', {lit_us(p.events_judged)})"
        for pid, p in parts.items()
    )
    others = [c for c in good.columns if c != "pid"]  # (the join's column order)
    return good.select(
        "pid", *others, F.expr(f"try_element_at(map({entries}), pid)").alias("_pc")
    ).select(
        "pid",
        *others,
        "_pc.A0",
        "_pc.W0",
        "_pc.newest0",
        F.expr("coalesce(_pc.n0, 0)").alias("n0"),  # (0 for a partition new here)
    )


def early_and_late(context: Context, rows: DataFrame, order: str) -> DataFrame:
    """The early and late verdicts (``is_early``, ``is_late``; never in arrival-time
    mode, where the policy never triggers), the timestamp clamped for lateness ``g``,
    the arrival floor of the watermark ``floor_i`` and the explicit CTIs of the
    timeline before the row ``X`` (semantics §7)."""
    early_bound, late_bound = context.early_arrival, context.late_arrival
    late_term = context.watermark_late_arrival
    arrival_mode = not context.job.event_time_mode
    late = f"(a - t > {late_bound})" if late_bound is not None and not arrival_mode else "false"
    early = f"(t - a > {early_bound})" if early_bound is not None and not arrival_mode else "false"
    floor = f"(greatest(A0, a) - {late_term})" if late_term is not None else NEG
    rows = rows.withColumn("is_early", F.expr(f"NOT cti AND {early}"))
    rows = rows.withColumn("is_late", F.expr(f"NOT cti AND {late}"))
    clamped = f"CASE WHEN is_late THEN a - {late_bound} ELSE t END"
    rows = rows.withColumn("g", F.expr(clamped if late_bound is not None else "t"))
    rows = rows.withColumn("floor_i", F.expr(floor))
    explicit = (
        f"max(CASE WHEN cti THEN t END) OVER ({order} {_BEFORE})" if context.explicit else NEG
    )
    return rows.withColumn("X", F.expr(f"coalesce({explicit}, {NEG})"))


def _gone(context: Context) -> str:
    """SQL: the row moves nothing (a CTI, or an event dropped before the order check)."""
    return "cti OR is_early" + (" OR is_late" if context.late_drop else "")


def _newest_value(context: Context) -> str:
    """SQL of ``h``: the row's value for the timeline's newest timestamp."""
    action = context.out_of_order_action
    if context.watermark_out_of_order is None and not context.generated:
        h = NEG  # nothing reads the newest timestamp
    elif action == "adjust":
        h = f"greatest(g, {_THRESHOLD})"
    elif action == "accept":
        h = "g"
    else:
        h = f"CASE WHEN g >= {_THRESHOLD} THEN g ELSE {NEG} END"
    if context.intervals and h != NEG:
        # an interval whose start would reach its end is dropped: it moves nothing
        h = f"CASE WHEN e IS NOT NULL AND {h} >= e THEN {NEG} ELSE {h} END"
    return f"CASE WHEN {_gone(context)} THEN {NEG} ELSE {h} END"


def running_newest(context: Context, rows: DataFrame, timeline: str, order: str) -> DataFrame:
    """``h``, the running maximum before each row ``newest_x`` (from ``newest0``), the
    row's own CTI ``cti_w`` and the generated CTIs before it ``C``."""
    rows = rows.withColumn("h", F.expr(_newest_value(context)))
    if context.scans_ctis:  # h, gen and C from one compiled pass per timeline
        rows = generated_scan(context, rows, timeline)
    before = f"OVER ({order} {_BEFORE})"
    rows = rows.withColumn(
        "newest_x", F.expr(f"greatest(newest0, coalesce(max(h) {before}, {NEG}))")
    )
    rows = rows.withColumn("cti_w", F.expr("CASE WHEN cti THEN t END"))
    if context.generated:
        return generated_ctis(context, rows, order, before)
    return rows.withColumn("C", F.expr(NEG))


def watermark_before(context: Context, rows: DataFrame) -> DataFrame:
    """``W``, the timeline's watermark before the row: its clocks and CTIs, the
    generated CTIs and the newest timestamp minus the out-of-order bound."""
    delay = context.watermark_out_of_order
    newest_term = f", newest_x - {delay}" if delay is not None else ""
    return rows.withColumn("W", F.expr(f"greatest({_THRESHOLD}, C{newest_term})"))


def out_of_order(context: Context, rows: DataFrame) -> DataFrame:
    """The out-of-order verdict (``is_ooo``), the system timestamp ``s``, the row's
    ``verdict`` and its ``reason``."""
    gone, action = _gone(context), context.out_of_order_action
    arrival_mode = not context.job.event_time_mode
    rows = rows.withColumn(
        "is_ooo", F.expr("false" if arrival_mode else f"(NOT ({gone}) AND g < W)")
    )
    s_ooo = {"adjust": "W", "accept": "g"}.get(action, "CAST(NULL AS BIGINT)")
    rows = rows.withColumn(
        "s", F.expr(f"CASE WHEN {gone} THEN NULL WHEN is_ooo THEN {s_ooo} ELSE g END")
    )
    outcome_ooo = {"drop": "'dropped'", "dead_letter": "'dead_lettered'"}.get(action)
    late_drop = "WHEN is_late THEN 'dropped' " if context.late_drop else ""
    # an interval event whose start was adjusted to its end or beyond is dropped
    ended = "e <= s"
    verdict = (
        "CASE WHEN error IS NOT NULL THEN 'malformed' WHEN cti THEN 'punctuation' "
        "WHEN is_early THEN 'dropped' "
        + late_drop
        + (f"WHEN is_ooo THEN {outcome_ooo} " if outcome_ooo else "")
        + f"WHEN {ended} THEN 'dropped' "
        + "WHEN s <> t THEN 'adjusted' ELSE 'accepted' END"
    )
    rows = rows.withColumn("verdict", F.expr(verdict))
    rows = rows.withColumn(
        "reason",
        F.expr(
            "CASE WHEN is_early THEN 'early' "
            + ("WHEN is_late THEN 'late' " if context.late_drop else "")
            + "WHEN is_ooo AND verdict IN ('dropped', 'dead_lettered') THEN 'out_of_order' "
            + f"WHEN verdict = 'dropped' AND {ended} THEN "
            "CASE WHEN is_ooo THEN 'out_of_order' ELSE 'late' END END"
        ),
    )
    if context.intervals:
        rows = rows.withColumn("s", F.expr("CASE WHEN verdict = 'dropped' THEN NULL ELSE s END"))
    return rows


def governing_watermark(
    context: Context, rows: DataFrame, parts: dict[str, PartitionClock]
) -> DataFrame:
    """The row's ``scope`` (the unit its outputs are per: key, partition or the job)
    and ``G``, the watermark governing it within the batch: its timeline's own, or for
    merged timelines the job's (the minimum over partitions, followed row by row only
    where it moves within the batch)."""
    timeline = context.timeline
    if timeline.by_key:
        rows = rows.withColumn("scope", F.col("key"))
        return rows.withColumn("G", F.col("W"))
    rows = rows.withColumn("scope", F.col("pid") if timeline.windows_per_timeline else F.lit(""))
    if not timeline.job_watermark:
        return rows.withColumn("G", F.col("W"))
    delay = context.watermark_out_of_order
    if not (context.out_of_order_action == "accept" or delay is None):
        return rows.withColumn("G", F.expr(NEG))
    if len(parts) == 1:
        return rows.withColumn("G", F.col("W"))  # the one partition's watermark is the job's
    return _job_watermark_by_row(rows, parts, delay)


def _job_watermark_by_row(
    rows: DataFrame, parts: dict[str, PartitionClock], delay: Any
) -> DataFrame:
    """``G`` for merged timelines whose watermarks move within the batch: the minimum
    over partitions of each partition's watermark just after its last row before this
    one (its own CTI or generated one too)."""
    newest_after = f", greatest(newest_x, h) - {delay}" if delay is not None else ""
    rows = rows.withColumn("W_after", F.expr(f"greatest(W, cti_w{newest_after})"))
    columns = []
    for i, (pid, part) in enumerate(sorted(parts.items())):
        fill = (
            f"max(CASE WHEN pid = {sql_string(pid)} THEN W_after END) OVER (ORDER BY a, "
            "file, line ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        )
        rows = rows.withColumn(f"_w{i}", F.expr(fill))
        columns.append(
            f"CASE WHEN pid = {sql_string(pid)} THEN W ELSE "
            f"coalesce(_w{i}, {lit_us(part.watermark)}) END"
        )
    return rows.withColumn("G", F.expr(f"least({', '.join(columns)})"))
