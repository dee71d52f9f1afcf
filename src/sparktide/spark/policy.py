"""The ordering policy in Spark SQL (semantics §3–4, §7): verdicts and system timestamps of
a batch's rows, in closed form over window functions.

Within a batch the arrival clock at an event is ``max(A0, arrival)`` (rows are judged
in arrival order), and the timeline's newest timestamp before an event is a running
maximum of a per-row value ``h`` — one window function per timeline. Each rule has the
name of its reference (:mod:`sparktide.core.policy`, :mod:`sparktide.core.watermark`,
:mod:`sparktide.rules`); the steps, in order (each adds columns, named in
:mod:`sparktide.spark.columns`):

1. :func:`timeline_clocks`: each row's timeline clock at the batch start
   (:data:`~.ARRIVAL_CLOCK_AT_START`, :data:`~.WATERMARK_AT_START`,
   :data:`~.NEWEST_AT_START`, :data:`~.EVENTS_AT_START`) and keyless CTIs
   (:data:`~.KEYLESS_CTIS_BEFORE`);
2. :func:`early_verdict` and :func:`late_verdict`: :data:`~.IS_EARLY`, :data:`~.IS_LATE`;
3. :func:`late_adjusted`: the timestamp clamped for lateness (:data:`~.CLAMPED_TIME`);
4. :func:`timeline_watermark_floor`: the watermark's arrival floor and the explicit CTIs
   before the row (:data:`~.ARRIVAL_FLOOR`, :data:`~.EXPLICIT_CTIS_BEFORE`);
5. :func:`newest_timestamp`: the row's value for the newest timestamp
   (:data:`~.NEWEST_VALUE`), its running maximum (:data:`~.NEWEST_BEFORE`), and generated
   CTIs (:data:`~.GENERATED_CTIS_BEFORE`, :mod:`.punctuation`);
6. :func:`timeline_watermark`: the timeline's watermark before the row
   (:data:`~.WATERMARK_BEFORE`);
7. :func:`out_of_order_verdict`: :data:`~.IS_OUT_OF_ORDER`, the system timestamp
   (:data:`~.SYSTEM_TIME`), :data:`~.VERDICT` and :data:`~.REASON`;
8. :func:`governing_watermark`: the row's :data:`~.SCOPE` and the watermark governing
   it within the batch (:data:`~.GOVERNING_WATERMARK`).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.spark.clocks import PartitionClock
from sparktide.spark.columns import (
    ARRIVAL_CLOCK_AT_START,
    ARRIVAL_FLOOR,
    ARRIVAL_ORDER_SQL,
    ARRIVAL_TIME,
    CLAMPED_TIME,
    CTI_INSTANT,
    END_TIME,
    ERROR,
    EVENT_TIME,
    EVENTS_AT_START,
    EXPLICIT_CTIS_BEFORE,
    GENERATED_CTIS_BEFORE,
    GOVERNING_WATERMARK,
    IS_BEFORE_START,
    IS_CTI,
    IS_EARLY,
    IS_LATE,
    IS_OUT_OF_ORDER,
    KEY_EVENTS,
    KEY_NEWEST,
    KEY_WATERMARK,
    KEYLESS_CTIS_BEFORE,
    NEWEST_AT_START,
    NEWEST_BEFORE,
    NEWEST_VALUE,
    PARTITION,
    REASON,
    SCOPE,
    SUBSTREAM_KEY,
    SYSTEM_TIME,
    VERDICT,
    WATERMARK_AFTER,
    WATERMARK_AT_START,
    WATERMARK_BEFORE,
)
from sparktide.spark.context import Context
from sparktide.spark.keys import KEYS_SCHEMA
from sparktide.spark.perinput import by_input
from sparktide.spark.punctuation import generated_ctis, generated_ctis_scan
from sparktide.spark.sql import NEG, lit_us, sql_string, with_columns

__all__ = [
    "INLINE_PARTITIONS",
    "BatchStart",
    "before_start_verdict",
    "early_verdict",
    "governing_watermark",
    "judged_rows",
    "late_adjusted",
    "late_verdict",
    "newest_timestamp",
    "out_of_order_verdict",
    "timeline_clocks",
    "timeline_watermark",
    "timeline_watermark_floor",
]

#: Up to this many partitions the policy reads each partition's clock (A0, W0,
#: newest0, n0) from a literal map by pid; beyond, from a broadcast join.
INLINE_PARTITIONS = 64

#: The rows of a timeline before the current one, in arrival order.
_BEFORE = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
#: The watermark's threshold from the clocks and CTIs alone (no newest timestamp).
_THRESHOLD = (
    f"greatest({WATERMARK_AT_START}, {ARRIVAL_FLOOR}, "
    f"{EXPLICIT_CTIS_BEFORE}, {KEYLESS_CTIS_BEFORE})"
)
#: A timeline's clocks at the batch start, as :func:`timeline_clocks` adds them.
_STARTS = (ARRIVAL_CLOCK_AT_START, WATERMARK_AT_START, NEWEST_AT_START, EVENTS_AT_START)


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
    order = f"PARTITION BY {timeline} ORDER BY {ARRIVAL_ORDER_SQL}"
    rows = before_start_verdict(context, rows)
    rows = early_verdict(context, rows)
    rows = late_verdict(context, rows)
    rows = late_adjusted(context, rows)
    rows = timeline_watermark_floor(context, rows, order)
    rows = newest_timestamp(context, rows, timeline, order)
    rows = timeline_watermark(context, rows)
    rows = out_of_order_verdict(context, rows)
    return governing_watermark(context, rows, start.parts)


def timeline_clocks(context: Context, good: DataFrame, start: BatchStart) -> tuple[DataFrame, str]:
    """Each row's timeline clock at the start of the batch: arrival clock, watermark,
    newest timestamp, events judged (:data:`_STARTS`); and the largest keyless CTI
    before the row (substreams). Returns the rows and the column naming their timeline."""
    parts = start.parts
    good = good.withColumn(KEYLESS_CTIS_BEFORE, F.expr(_keyless_ctis(context, start.cti_floor)))
    if context.timeline.by_key:
        keys = context.store.load_table(start.keys_batch, "keys", KEYS_SCHEMA)
        rows = good.join(keys, on=SUBSTREAM_KEY, how="left")
        clocks = {
            ARRIVAL_CLOCK_AT_START: lit_us(start.arrival_at_start),
            WATERMARK_AT_START: f"coalesce({KEY_WATERMARK}, {NEG})",
            NEWEST_AT_START: f"coalesce({KEY_NEWEST}, {NEG})",
            EVENTS_AT_START: f"coalesce({KEY_EVENTS}, 0)",
        }
        return with_columns(rows, clocks), SUBSTREAM_KEY
    if parts and len(parts) <= INLINE_PARTITIONS:
        return _inline_clocks(good, parts), PARTITION
    table = context.spark.createDataFrame(
        [(pid, p.arrival, p.watermark, p.newest, p.events_judged) for pid, p in parts.items()],
        ", ".join([f"{PARTITION} string", *(f"{name} bigint" for name in _STARTS)]),
    )
    rows = good.join(F.broadcast(table), on=PARTITION, how="left")
    # (a partition new here has judged no event)
    return rows.withColumn(EVENTS_AT_START, F.expr(f"coalesce({EVENTS_AT_START}, 0)")), PARTITION


def _keyless_ctis(context: Context, cti_floor: int) -> str:
    """SQL of the keyless CTIs before a row: substreams with explicit CTIs: CTIs without
    a key punctuate every substream, the largest one before each row in the input's
    arrival order (they are few; one ordered pass); else minus infinity."""
    if not (context.timeline.by_key and context.explicit):
        return NEG
    keyless = f"CASE WHEN {IS_CTI} AND {SUBSTREAM_KEY} IS NULL THEN {EVENT_TIME} END"
    return (
        f"greatest({lit_us(cti_floor)}, max({keyless}) "
        f"OVER (ORDER BY {ARRIVAL_ORDER_SQL} {_BEFORE}))"
    )


def _inline_clocks(good: DataFrame, parts: dict[str, PartitionClock]) -> DataFrame:
    """The partitions' clocks as one literal map looked up by pid: the same values as a
    broadcast join, without its table, its broadcast job and its planning. (In a map
    the values are not inlined into the generated code, so a new batch's values do not
    make Spark compile it again, as CASE branches with long literals did;
    docs/performance.md, "Fixed cost per micro-batch".)"""
    entries = ", ".join(
        f"{sql_string(pid)}, named_struct("
        + ", ".join(
            f"'{name}', {lit_us(value)}"
            for name, value in zip(
                _STARTS, (p.arrival, p.watermark, p.newest, p.events_judged), strict=True
            )
        )
        + ")"
        for pid, p in parts.items()
    )
    others = [c for c in good.columns if c != PARTITION]  # (the join's column order)
    found = "_pc"  # the row's partition's clocks (a struct)
    return good.select(
        PARTITION, *others, F.expr(f"try_element_at(map({entries}), {PARTITION})").alias(found)
    ).select(
        PARTITION,
        *others,
        *(f"{found}.{name}" for name in _STARTS[:3]),
        # (0 for a partition new here)
        F.expr(f"coalesce({found}.{EVENTS_AT_START}, 0)").alias(EVENTS_AT_START),
    )


def _checks(context: Context) -> bool:
    """Whether the arrival checks apply: never in arrival-time mode, where the policy
    never triggers."""
    return context.job.event_time_mode


def before_start_verdict(context: Context, rows: DataFrame) -> DataFrame:
    """Skipped before the output start (semantics §12.2), :data:`~.IS_BEFORE_START`: an
    event that arrived before the read point, in arrival-time mode too."""
    point = context.read_point
    before = "false" if point is None else f"{ARRIVAL_TIME} < {lit_us(point)}"
    return rows.withColumn(IS_BEFORE_START, F.expr(f"NOT {IS_CTI} AND {before}"))


def early_verdict(context: Context, rows: DataFrame) -> DataFrame:
    """The early verdict (semantics §3.2), :data:`~.IS_EARLY`: an event whose event time
    is ahead of its arrival time by more than the early tolerance."""

    def early(c: Context) -> str:
        bound = c.early_arrival
        if bound is not None and _checks(c):
            return f"({EVENT_TIME} - {ARRIVAL_TIME} > {bound})"
        return "false"

    return rows.withColumn(
        IS_EARLY, F.expr(f"NOT {IS_CTI} AND NOT {IS_BEFORE_START} AND {by_input(context, early)}")
    )


def late_verdict(context: Context, rows: DataFrame) -> DataFrame:
    """The late verdict (semantics §3.3), :data:`~.IS_LATE`: an event whose arrival time
    is ahead of its event time by more than the late tolerance."""

    def late(c: Context) -> str:
        bound = c.late_arrival
        if bound is not None and _checks(c):
            return f"({ARRIVAL_TIME} - {EVENT_TIME} > {bound})"
        return "false"

    return rows.withColumn(
        IS_LATE, F.expr(f"NOT {IS_CTI} AND NOT {IS_BEFORE_START} AND {by_input(context, late)}")
    )


def late_adjusted(context: Context, rows: DataFrame) -> DataFrame:
    """The timestamp after the late rule (semantics §3.3), :data:`~.CLAMPED_TIME`: a late
    event's arrival time minus the late tolerance, else its event time."""

    def clamped(c: Context) -> str:
        bound = c.late_arrival
        if bound is None:
            return EVENT_TIME
        return f"CASE WHEN {IS_LATE} THEN {ARRIVAL_TIME} - {bound} ELSE {EVENT_TIME} END"

    return rows.withColumn(CLAMPED_TIME, F.expr(by_input(context, clamped)))


def timeline_watermark_floor(context: Context, rows: DataFrame, order: str) -> DataFrame:
    """The watermark's terms known before the newest timestamp (semantics §4.1, §7): the
    arrival floor :data:`~.ARRIVAL_FLOOR` (the arrival clock at the row minus the late
    term) and the timeline's explicit CTIs before the row
    :data:`~.EXPLICIT_CTIS_BEFORE`."""

    def floor(c: Context) -> str:
        late_term = c.watermark_late_arrival
        if late_term is None:
            return NEG
        return f"(greatest({ARRIVAL_CLOCK_AT_START}, {ARRIVAL_TIME}) - {late_term})"

    explicit = NEG
    if context.explicit:
        explicit = f"max(CASE WHEN {IS_CTI} THEN {EVENT_TIME} END) OVER ({order} {_BEFORE})"
    return with_columns(
        rows,
        {
            ARRIVAL_FLOOR: by_input(context, floor),
            EXPLICIT_CTIS_BEFORE: f"coalesce({explicit}, {NEG})",
        },
    )


def _gone(context: Context) -> str:
    """SQL: the row moves nothing (a CTI, or an event skipped or dropped before the order
    check)."""
    return f"{IS_CTI} OR {IS_BEFORE_START} OR {IS_EARLY}" + (
        f" OR {IS_LATE}" if context.late_drop else ""
    )


def _newest_value(context: Context) -> str:
    """SQL of :data:`~.NEWEST_VALUE`: the row's value for the timeline's newest timestamp."""
    action, g = context.out_of_order_action, CLAMPED_TIME
    if context.watermark_out_of_order is None and not context.generated:
        h = NEG  # nothing reads the newest timestamp
    elif action == "adjust":
        h = f"greatest({g}, {_THRESHOLD})"
    elif action == "accept":
        h = g
    else:
        h = f"CASE WHEN {g} >= {_THRESHOLD} THEN {g} ELSE {NEG} END"
    if context.intervals and h != NEG:
        # an interval whose start would reach its end is dropped: it moves nothing
        h = f"CASE WHEN {END_TIME} IS NOT NULL AND {h} >= {END_TIME} THEN {NEG} ELSE {h} END"
    return f"CASE WHEN {_gone(context)} THEN {NEG} ELSE {h} END"


def newest_timestamp(context: Context, rows: DataFrame, timeline: str, order: str) -> DataFrame:
    """The timeline's newest timestamp (semantics §3.5): the row's value for it
    :data:`~.NEWEST_VALUE`, its running maximum before each row :data:`~.NEWEST_BEFORE`
    (from the batch start's), the row's own CTI :data:`~.CTI_INSTANT` and the generated
    CTIs before it :data:`~.GENERATED_CTIS_BEFORE`."""
    rows = rows.withColumn(NEWEST_VALUE, F.expr(by_input(context, _newest_value)))
    if context.scans_ctis:  # the newest values and generated CTIs from one compiled pass
        rows = generated_ctis_scan(context, rows, timeline)
    before = f"OVER ({order} {_BEFORE})"
    running = f"coalesce(max({NEWEST_VALUE}) {before}, {NEG})"
    columns = {
        NEWEST_BEFORE: f"greatest({NEWEST_AT_START}, {running})",
        CTI_INSTANT: f"CASE WHEN {IS_CTI} THEN {EVENT_TIME} END",
    }
    if context.generated:
        return generated_ctis(context, with_columns(rows, columns), order, before)
    return with_columns(rows, {**columns, GENERATED_CTIS_BEFORE: NEG})


def timeline_watermark(context: Context, rows: DataFrame) -> DataFrame:
    """The timeline's watermark before the row (semantics §4.1),
    :data:`~.WATERMARK_BEFORE`: its clocks and CTIs, the generated CTIs and the newest
    timestamp minus the out-of-order bound."""

    def watermark(c: Context) -> str:
        delay = c.watermark_out_of_order
        newest_term = f", {NEWEST_BEFORE} - {delay}" if delay is not None else ""
        return f"greatest({_THRESHOLD}, {GENERATED_CTIS_BEFORE}{newest_term})"

    return rows.withColumn(WATERMARK_BEFORE, F.expr(by_input(context, watermark)))


def out_of_order_verdict(context: Context, rows: DataFrame) -> DataFrame:
    """The out-of-order verdict (semantics §3.4), :data:`~.IS_OUT_OF_ORDER`; the system
    timestamp :data:`~.SYSTEM_TIME`, the row's :data:`~.VERDICT` and its :data:`~.REASON`."""

    g, w, s = CLAMPED_TIME, WATERMARK_BEFORE, SYSTEM_TIME

    def ooo(c: Context) -> str:
        return f"(NOT ({_gone(c)}) AND {g} < {w})" if _checks(c) else "false"

    def system_time(c: Context) -> str:
        s_ooo = {"adjust": w, "accept": g}.get(c.out_of_order_action, "CAST(NULL AS BIGINT)")
        return f"CASE WHEN {_gone(c)} THEN NULL WHEN {IS_OUT_OF_ORDER} THEN {s_ooo} ELSE {g} END"

    rows = rows.withColumn(IS_OUT_OF_ORDER, F.expr(by_input(context, ooo)))
    rows = rows.withColumn(s, F.expr(by_input(context, system_time)))
    rows = rows.withColumn(VERDICT, F.expr(by_input(context, _verdict)))
    rows = rows.withColumn(REASON, F.expr(by_input(context, _reason)))
    if context.intervals:
        dropped = f"CASE WHEN {VERDICT} = 'dropped' THEN NULL ELSE {s} END"
        rows = rows.withColumn(s, F.expr(dropped))
    return rows


#: SQL: an interval event whose start was adjusted to its end or beyond (it is dropped).
_ENDED = f"{END_TIME} <= {SYSTEM_TIME}"


def _verdict(context: Context) -> str:
    """SQL of a row's :data:`~.VERDICT`."""
    outcome_ooo = {"drop": "'dropped'", "dead_letter": "'dead_lettered'"}.get(
        context.out_of_order_action
    )
    late_drop = f"WHEN {IS_LATE} THEN 'dropped' " if context.late_drop else ""
    return (
        f"CASE WHEN {ERROR} IS NOT NULL THEN 'malformed' WHEN {IS_CTI} THEN 'punctuation' "
        f"WHEN {IS_BEFORE_START} THEN 'skipped' WHEN {IS_EARLY} THEN 'dropped' "
        + late_drop
        + (f"WHEN {IS_OUT_OF_ORDER} THEN {outcome_ooo} " if outcome_ooo else "")
        + f"WHEN {_ENDED} THEN 'dropped' "
        + f"WHEN {SYSTEM_TIME} <> {EVENT_TIME} THEN 'adjusted' ELSE 'accepted' END"
    )


def _reason(context: Context) -> str:
    """SQL of a row's :data:`~.REASON` (after its verdict)."""
    ooo = IS_OUT_OF_ORDER
    return (
        f"CASE WHEN {IS_BEFORE_START} THEN 'before_start' WHEN {IS_EARLY} THEN 'early' "
        + (f"WHEN {IS_LATE} THEN 'late' " if context.late_drop else "")
        + f"WHEN {ooo} AND {VERDICT} IN ('dropped', 'dead_lettered') THEN 'out_of_order' "
        + f"WHEN {VERDICT} = 'dropped' AND {_ENDED} THEN "
        f"CASE WHEN {ooo} THEN 'out_of_order' ELSE 'late' END END"
    )


def governing_watermark(
    context: Context, rows: DataFrame, parts: dict[str, PartitionClock]
) -> DataFrame:
    """The row's :data:`~.SCOPE` (the unit its outputs are per: key, partition or the
    job) and :data:`~.GOVERNING_WATERMARK`, the watermark governing it within the batch
    (semantics §4.5): its timeline's own, or for merged timelines the job's (the minimum
    over partitions, followed row by row only where it moves within the batch)."""
    timeline = context.timeline
    own = F.col(WATERMARK_BEFORE)
    if timeline.by_key:
        rows = rows.withColumn(SCOPE, F.col(SUBSTREAM_KEY))
        return rows.withColumn(GOVERNING_WATERMARK, own)
    scope = F.col(PARTITION) if timeline.windows_per_timeline else F.lit("")
    rows = rows.withColumn(SCOPE, scope)
    if not timeline.job_watermark:
        return rows.withColumn(GOVERNING_WATERMARK, own)
    unbounded = any(c.watermark_out_of_order is None for c in _contexts(context))
    if not (context.out_of_order_action == "accept" or unbounded):
        return rows.withColumn(GOVERNING_WATERMARK, F.expr(NEG))
    if len(parts) == 1:  # the one partition's watermark is the job's
        return rows.withColumn(GOVERNING_WATERMARK, own)
    return _job_watermark_by_row(context, rows, parts)


def _contexts(context: Context) -> list[Context]:
    """The contexts of every input's settings (the job's alone without per-input ones)."""
    return list(context.inputs.values()) or [context]


def _job_watermark_by_row(
    context: Context, rows: DataFrame, parts: dict[str, PartitionClock]
) -> DataFrame:
    """:data:`~.GOVERNING_WATERMARK` for merged timelines whose watermarks move within the
    batch: the minimum over partitions of each partition's watermark just after its
    last row before this one (its own CTI or generated one too)."""

    def after(c: Context) -> str:
        delay = c.watermark_out_of_order
        newest_after = ""
        if delay is not None:
            newest_after = f", greatest({NEWEST_BEFORE}, {NEWEST_VALUE}) - {delay}"
        return f"greatest({WATERMARK_BEFORE}, {CTI_INSTANT}{newest_after})"

    rows = rows.withColumn(WATERMARK_AFTER, F.expr(by_input(context, after)))
    columns = []
    for i, (pid, part) in enumerate(sorted(parts.items())):
        this = f"{PARTITION} = {sql_string(pid)}"
        fill = (
            f"max(CASE WHEN {this} THEN {WATERMARK_AFTER} END) "
            f"OVER (ORDER BY {ARRIVAL_ORDER_SQL} {_BEFORE})"
        )
        rows = rows.withColumn(f"_w{i}", F.expr(fill))
        columns.append(
            f"CASE WHEN {this} THEN {WATERMARK_BEFORE} ELSE "
            f"coalesce(_w{i}, {lit_us(part.watermark)}) END"
        )
    return rows.withColumn(GOVERNING_WATERMARK, F.expr(f"least({', '.join(columns)})"))
