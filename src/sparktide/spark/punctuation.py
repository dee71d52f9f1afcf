"""Generated CTIs in Spark SQL (semantics §7): which events are followed by a generated CTI
(``gen``), its instant (``cti_w``) and the largest one before each row (``C``).

Three forms, one rule (:mod:`sparktide.core.punctuation`): closed-form window functions
(:func:`generated_ctis`), a negative delay under ``adjust`` unrolled into prefix sums
(:func:`generated_ahead`), and one compiled pass per timeline where no closed form is
known (:func:`generated_scan`, the numba kernel of :mod:`sparktide.spark.ctiscan`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type

from sparktide.spark.context import Context
from sparktide.spark.ctiscan import SCAN_OUTPUT, scan_kernel
from sparktide.spark.sql import NEG

__all__ = ["generated_ahead", "generated_ctis", "generated_scan"]


def generated_ctis(context: Context, rows: DataFrame, order: str, before: str) -> DataFrame:
    """Generated CTIs: ``gen`` marks the events after which one is due (every N events
    of the timeline, or when the newest timestamp enters a new period), at the newest
    timestamp minus ``delay``; ``C`` is the largest before each row. ``order`` is the
    window's ``PARTITION BY ... ORDER BY`` and ``before`` the frame of the rows before.

    With a delay of zero or more a generated CTI is never above the newest timestamp,
    so the newest timestamp — a running maximum of ``h`` — does not depend on them and
    everything stays in closed form; so it does under ``accept`` (``h = g``). A negative
    delay under ``adjust``: :func:`generated_ahead`."""
    punctuation = context.job.punctuation
    assert punctuation is not None
    delay = punctuation.delay
    if context.scans_ctis:  # (gen and C came from generated_scan)
        return rows.withColumn(
            "cti_w",
            F.expr(f"CASE WHEN cti THEN t WHEN gen THEN greatest(newest_x, h) - {delay} END"),
        )
    if delay < 0 and context.out_of_order_action == "adjust":  # type: ignore[operator]
        return generated_ahead(context, rows, order, before)
    newest = "greatest(newest_x, h)"  # the timeline's newest timestamp after the row
    rows = rows.withColumn(
        "gen", F.expr(f"NOT cti AND error IS NULL AND {newest} > {NEG} AND {_due(context, order)}")
    )
    rows = rows.withColumn(
        "cti_w", F.expr(f"CASE WHEN cti THEN t WHEN gen THEN {newest} - {delay} END")
    )
    return rows.withColumn(
        "C",
        F.expr(f"coalesce(max(CASE WHEN gen THEN {newest} - {delay} END) {before}, {NEG})"),
    )


def _due(context: Context, order: str) -> str:
    """SQL: whether a generated CTI is due after the row: the timeline's N-th event, or
    the newest timestamp entering a new period."""
    punctuation = context.job.punctuation
    assert punctuation is not None
    newest = "greatest(newest_x, h)"
    if punctuation.every_events is not None:
        count = (
            f"n0 + count(CASE WHEN NOT cti THEN 1 END) OVER ({order} ROWS BETWEEN "
            "UNBOUNDED PRECEDING AND CURRENT ROW)"
        )
        return f"pmod({count}, {punctuation.every_events}) = 0"
    period = punctuation.every
    return (
        f"(newest_x = {NEG} OR ({newest} - pmod({newest}, {period})) > "
        f"(newest_x - pmod(newest_x, {period})))"
    )


def generated_scan(context: Context, rows: DataFrame, timeline: str) -> DataFrame:
    """Generated CTIs that decide which events move the newest timestamp, where no
    closed form is known (:mod:`sparktide.spark.ctiscan`): ``h`` (replaced), ``gen``
    and ``C`` from one compiled pass over each timeline's rows in arrival order.

    The pass reads a few narrow columns; its results join the rows back by timeline
    and rank (null-safe: keyless CTIs have no substream key)."""
    punctuation = context.job.punctuation
    assert punctuation is not None
    rows = rows.withColumn(
        "_rank", F.expr(f"row_number() OVER (PARTITION BY {timeline} ORDER BY a, file, line)")
    )
    narrow = rows.select(
        F.col(timeline).alias("_tl"),
        F.col("_rank").alias("_rk"),
        "h",
        F.expr("coalesce(NOT cti, false)").alias("_counted"),  # (as generated_ctis counts)
        F.expr("coalesce(NOT cti AND error IS NULL, false)").alias("_may"),
        "e",
        "newest0",
        "n0",
    )
    kernel = scan_kernel(
        keys=("_tl", "_rk"),
        adjust=context.out_of_order_action == "adjust",
        delay=punctuation.delay,  # type: ignore[arg-type]
        every_events=punctuation.every_events,
        every=punctuation.every,  # type: ignore[arg-type]
    )
    schema = T.StructType(
        [
            T.StructField("_tl", rows.schema[timeline].dataType),
            T.StructField("_rk", T.IntegerType()),
            *(T.StructField(n, from_arrow_type(t)) for n, t in SCAN_OUTPUT),
        ]
    )
    scanned = narrow.groupBy("_tl").applyInArrow(kernel, schema)
    return (
        rows.drop("h")
        .join(scanned, F.expr(f"{timeline} <=> _tl AND _rank = _rk"), "left")
        .drop("_tl", "_rk", "_rank")
    )


def generated_ahead(context: Context, rows: DataFrame, order: str, before: str) -> DataFrame:
    """Generated CTIs every N events with a negative delay ``−δ`` under ``adjust``.

    Each CTI is δ above the newest timestamp, and the next event is adjusted up to it,
    so the newest timestamp depends on the CTIs: no longer a running maximum of a
    per-row value. But the CTI events split the timeline into segments, and the newest
    timestamp after the j-th CTI event is ``P_j = δ·S_j + max(N0, max z)`` over the
    rows before it, where ``S`` counts the segments (after the first) holding an
    admitted event up to a row and ``z = y − δ·S`` for each admitted row (``y`` = ``h``,
    the row's value without generated CTIs): a recurrence ``P_{j+1} = max(M_j, P_j +
    δ·A_j)`` unrolled into prefix sums and maxima (``docs/design.md``). The same form
    gives the newest timestamp after every row; ``newest_x`` and ``h`` are replaced by
    it (before and after the row), so the rest of the policy reads it unchanged."""
    punctuation = context.job.punctuation
    assert punctuation is not None
    ahead = -punctuation.delay  # type: ignore[operator]
    upto = f"OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    admitted = f"h > {NEG}"  # adjust: every row that is not gone
    rows = rows.withColumn(
        "gen",
        F.expr(
            "NOT cti AND error IS NULL "
            f"AND pmod(n0 + count(CASE WHEN NOT cti THEN 1 END) {upto}, "
            f"{punctuation.every_events}) = 0 "
            f"AND (newest0 > {NEG} OR count(CASE WHEN {admitted} THEN 1 END) {upto} > 0)"
        ),
    )
    rows = rows.withColumn("_na", F.expr(f"count(CASE WHEN {admitted} THEN 1 END) {upto}"))
    # an admitted row is the first of its segment when no admitted row lies between
    # the last CTI event and it (segment 0, before any CTI event, is not counted)
    rows = rows.withColumn(
        "_first",
        F.expr(
            f"{admitted} AND count(CASE WHEN gen THEN 1 END) {before} > 0 AND "
            f"_na - 1 = coalesce(max(CASE WHEN gen THEN _na END) {before}, 0)"
        ),
    )
    rows = rows.withColumn("_s", F.expr(f"count(CASE WHEN _first THEN 1 END) {upto}"))
    rows = rows.withColumn(
        "_sx", F.expr(f"coalesce(count(CASE WHEN _first THEN 1 END) {before}, 0)")
    )
    rows = rows.withColumn("_z", F.expr(f"CASE WHEN {admitted} THEN h - {ahead} * _s END"))
    newest = f"{ahead} * _s + greatest(newest0, coalesce(max(_z) {upto}, {NEG}))"
    newest_before = f"{ahead} * _sx + greatest(newest0, coalesce(max(_z) {before}, {NEG}))"
    rows = rows.withColumn("h", F.expr(newest))  # (δ·0 + newest0 before any row)
    rows = rows.withColumn("newest_x", F.expr(newest_before))
    rows = rows.withColumn("cti_w", F.expr(f"CASE WHEN cti THEN t WHEN gen THEN h + {ahead} END"))
    return rows.withColumn(
        "C", F.expr(f"coalesce(max(CASE WHEN gen THEN h + {ahead} END) {before}, {NEG})")
    )
