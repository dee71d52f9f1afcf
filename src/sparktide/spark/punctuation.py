"""Generated CTIs in Spark SQL (semantics §7.3): which events are followed by a generated
CTI (:data:`~.GENERATES_CTI`), its instant (:data:`~.CTI_INSTANT`) and the largest one
before each row (:data:`~.GENERATED_CTIS_BEFORE`).

Three forms, one rule (:func:`sparktide.core.punctuation.generated_ctis`): closed-form
window functions (:func:`generated_ctis`), a negative delay under ``adjust`` unrolled
into prefix sums (:func:`generated_ctis_ahead`), and one compiled pass per timeline
where no closed form is known (:func:`generated_ctis_scan`, the numba kernel of
:mod:`sparktide.spark.ctiscan`).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type

from sparktide.spark.columns import (
    ARRIVAL_ORDER_SQL,
    CTI_INSTANT,
    EDGE,
    END_TIME,
    ERROR,
    EVENT_TIME,
    EVENTS_AT_START,
    GENERATED_CTIS_BEFORE,
    GENERATES_CTI,
    IS_CTI,
    NEWEST_AT_START,
    NEWEST_BEFORE,
    NEWEST_VALUE,
)
from sparktide.spark.context import Context
from sparktide.spark.ctiscan import SCAN_OUTPUT, scan_kernel
from sparktide.spark.perinput import by_input
from sparktide.spark.sql import NEG

__all__ = ["cti_counted", "generated_ctis", "generated_ctis_ahead", "generated_ctis_scan"]

#: SQL: the timeline's newest timestamp after the row.
_NEWEST_AFTER = f"greatest({NEWEST_BEFORE}, {NEWEST_VALUE})"


def cti_counted(context: Context) -> str:
    """SQL: whether the row counts for generated CTIs: an event (explicit CTIs are not)
    that is no end edge (StreamInsight counts start edges only, semantics §7.3)."""
    if not context.edges:
        return f"NOT {IS_CTI}"
    return f"NOT {IS_CTI} AND coalesce({EDGE} <> 'end', true)"


def generated_ctis(context: Context, rows: DataFrame, order: str, before: str) -> DataFrame:
    """Generated CTIs: :data:`~.GENERATES_CTI` marks the events after which one is due
    (every N events of the timeline, or when the newest timestamp enters a new period),
    at the newest timestamp minus ``delay``; :data:`~.GENERATED_CTIS_BEFORE` is the
    largest before each row. ``order`` is the
    window's ``PARTITION BY ... ORDER BY`` and ``before`` the frame of the rows before.

    With a delay of zero or more a generated CTI is never above the newest timestamp,
    so the newest timestamp — a running maximum of :data:`~.NEWEST_VALUE` — does not
    depend on them and everything stays in closed form; so it does under ``accept``
    (the newest value is the clamped time). A negative delay under ``adjust``:
    :func:`generated_ctis_ahead`. Inputs with their own punctuation (semantics §7.8):
    each column a ``CASE`` on the row's input (:func:`~sparktide.spark.perinput.by_input`);
    an input that generates nothing has no CTI due."""
    newest = _NEWEST_AFTER

    def instant(c: Context) -> str:
        if not c.generated:
            return f"CASE WHEN {IS_CTI} THEN {EVENT_TIME} END"
        delay = c.punctuation.delay  # type: ignore[union-attr]
        return (
            f"CASE WHEN {IS_CTI} THEN {EVENT_TIME} WHEN {GENERATES_CTI} THEN {newest} - {delay} END"
        )

    if context.scans_ctis:  # (which events generate, and the CTIs before, were scanned)
        return rows.withColumn(CTI_INSTANT, F.expr(by_input(context, instant)))
    punctuation = context.punctuation
    assert punctuation is not None
    if not context.inputs and punctuation.delay < 0 and context.out_of_order_action == "adjust":  # type: ignore[operator]
        return generated_ctis_ahead(context, rows, order, before)

    def generates(c: Context) -> str:
        if not c.generated:
            return "false"
        counted = cti_counted(c)
        return f"{counted} AND {ERROR} IS NULL AND {newest} > {NEG} AND {_due(c, order)}"

    def generated(c: Context) -> str:
        if not c.generated:
            return NEG
        delay = c.punctuation.delay  # type: ignore[union-attr]
        ctis = f"CASE WHEN {GENERATES_CTI} THEN {newest} - {delay} END"
        return f"coalesce(max({ctis}) {before}, {NEG})"

    rows = rows.withColumn(GENERATES_CTI, F.expr(by_input(context, generates)))
    rows = rows.withColumn(CTI_INSTANT, F.expr(by_input(context, instant)))
    return rows.withColumn(GENERATED_CTIS_BEFORE, F.expr(by_input(context, generated)))


def _due(context: Context, order: str) -> str:
    """SQL: whether a generated CTI is due after the row: the timeline's N-th event, or
    the newest timestamp entering a new period."""
    punctuation = context.punctuation
    assert punctuation is not None
    newest, before = _NEWEST_AFTER, NEWEST_BEFORE
    if punctuation.every_events is not None:
        count = (
            f"{EVENTS_AT_START} + count(CASE WHEN {cti_counted(context)} THEN 1 END) "
            f"OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        )
        return f"pmod({count}, {punctuation.every_events}) = 0"
    period = punctuation.every
    return (
        f"({before} = {NEG} OR ({newest} - pmod({newest}, {period})) > "
        f"({before} - pmod({before}, {period})))"
    )


def generated_ctis_scan(context: Context, rows: DataFrame, timeline: str) -> DataFrame:
    """Generated CTIs that decide which events move the newest timestamp, where no
    closed form is known (:mod:`sparktide.spark.ctiscan`): :data:`~.NEWEST_VALUE`
    (replaced), :data:`~.GENERATES_CTI` and :data:`~.GENERATED_CTIS_BEFORE` from one
    compiled pass over each timeline's rows in arrival order.

    The pass reads a few narrow columns; its results join the rows back by timeline
    and rank (null-safe: keyless CTIs have no substream key). Inputs with their own
    settings (semantics §7.8): each timeline is one partition of one input, whose
    parameters the kernel takes by the timeline's id; an input that generates nothing
    has no row a CTI may follow."""
    counted = cti_counted(context)
    rows = rows.withColumn(
        "_rank",
        F.expr(f"row_number() OVER (PARTITION BY {timeline} ORDER BY {ARRIVAL_ORDER_SQL})"),
    )
    narrow = rows.select(
        F.col(timeline).alias("_tl"),
        F.col("_rank").alias("_rk"),
        NEWEST_VALUE,
        F.expr(f"coalesce({counted}, false)").alias("_counted"),  # (as _due counts)
        F.expr(
            by_input(
                context,
                lambda c: (
                    f"coalesce({counted} AND {ERROR} IS NULL, false)" if c.generated else "false"
                ),
            )
        ).alias("_may"),
        END_TIME,
        NEWEST_AT_START,
        EVENTS_AT_START,
    )
    kernel = scan_kernel(
        keys=("_tl", "_rk"),
        **_scan_parameters(context),
        by_input={name: _scan_parameters(c) for name, c in context.inputs.items()},
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
        rows.drop(NEWEST_VALUE)
        .join(scanned, F.expr(f"{timeline} <=> _tl AND _rank = _rk"), "left")
        .drop("_tl", "_rk", "_rank")
    )


def _scan_parameters(context: Context) -> dict[str, Any]:
    """The compiled pass's parameters under ``context``'s settings (an input that
    generates nothing: any, no row may generate)."""
    punctuation = context.punctuation
    generated = punctuation is not None and punctuation.generated
    return {
        "adjust": context.out_of_order_action == "adjust",
        "delay": punctuation.delay if generated else 0,  # type: ignore[union-attr]
        "every_events": punctuation.every_events if generated else 1,  # type: ignore[union-attr]
        "every": punctuation.every if generated else None,  # type: ignore[union-attr]
    }


def generated_ctis_ahead(context: Context, rows: DataFrame, order: str, before: str) -> DataFrame:
    """Generated CTIs every N events with a negative delay ``−δ`` under ``adjust``.

    Each CTI is δ above the newest timestamp, and the next event is adjusted up to it,
    so the newest timestamp depends on the CTIs: no longer a running maximum of a
    per-row value. But the CTI events split the timeline into segments, and the newest
    timestamp after the j-th CTI event is ``P_j = δ·S_j + max(N0, max z)`` over the
    rows before it, where ``S`` counts the segments (after the first) holding an
    admitted event up to a row and ``z = y − δ·S`` for each admitted row (``y`` =
    ``h``, the row's newest value without generated CTIs): a recurrence ``P_{j+1} = max(M_j, P_j +
    δ·A_j)`` unrolled into prefix sums and maxima (``docs/design.md``). The same form
    gives the newest timestamp after every row; :data:`~.NEWEST_BEFORE` and
    :data:`~.NEWEST_VALUE` are replaced by it (before and after the row), so the rest
    of the policy reads it unchanged."""
    punctuation = context.punctuation
    assert punctuation is not None
    ahead = -punctuation.delay  # type: ignore[operator]
    h, gen = NEWEST_VALUE, GENERATES_CTI
    upto = f"OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    admitted = f"{h} > {NEG}"  # adjust: every row that is not gone
    events = cti_counted(context)
    counted = f"{EVENTS_AT_START} + count(CASE WHEN {events} THEN 1 END) {upto}"
    rows = rows.withColumn(
        gen,
        F.expr(
            f"{events} AND {ERROR} IS NULL "
            f"AND pmod({counted}, {punctuation.every_events}) = 0 "
            f"AND ({NEWEST_AT_START} > {NEG} OR count(CASE WHEN {admitted} THEN 1 END) {upto} > 0)"
        ),
    )
    rows = rows.withColumn("_na", F.expr(f"count(CASE WHEN {admitted} THEN 1 END) {upto}"))
    # an admitted row is the first of its segment when no admitted row lies between
    # the last CTI event and it (segment 0, before any CTI event, is not counted)
    rows = rows.withColumn(
        "_first",
        F.expr(
            f"{admitted} AND count(CASE WHEN {gen} THEN 1 END) {before} > 0 AND "
            f"_na - 1 = coalesce(max(CASE WHEN {gen} THEN _na END) {before}, 0)"
        ),
    )
    rows = rows.withColumn("_s", F.expr(f"count(CASE WHEN _first THEN 1 END) {upto}"))
    rows = rows.withColumn(
        "_sx", F.expr(f"coalesce(count(CASE WHEN _first THEN 1 END) {before}, 0)")
    )
    rows = rows.withColumn("_z", F.expr(f"CASE WHEN {admitted} THEN {h} - {ahead} * _s END"))
    start = NEWEST_AT_START
    newest = f"{ahead} * _s + greatest({start}, coalesce(max(_z) {upto}, {NEG}))"
    newest_before = f"{ahead} * _sx + greatest({start}, coalesce(max(_z) {before}, {NEG}))"
    rows = rows.withColumn(h, F.expr(newest))  # (δ·0 + the start's newest before any row)
    rows = rows.withColumn(NEWEST_BEFORE, F.expr(newest_before))
    instant = f"CASE WHEN {IS_CTI} THEN {EVENT_TIME} WHEN {gen} THEN {h} + {ahead} END"
    rows = rows.withColumn(CTI_INSTANT, F.expr(instant))
    generated = f"CASE WHEN {gen} THEN {h} + {ahead} END"
    return rows.withColumn(
        GENERATED_CTIS_BEFORE, F.expr(f"coalesce(max({generated}) {before}, {NEG})")
    )
