"""The ordering policy and the watermark over a task's rows at once (numpy).

The reference engine's policy (``core/policy.py``, ``core/watermark.py``) in closed
form, as :mod:`sparktide.spark.policy` writes it in SQL: within a batch, the arrival clock at
an event is ``max(start arrival clock, arrival)``, and the newest timestamp of the
timeline before an event is a running maximum, over the timeline's earlier events in
arrival order, of what each offers (:func:`offered_newest`) — here a segmented
``numpy.maximum.accumulate`` (:func:`running_max_before`) over rows sorted by
timeline, then arrival, instead of a window function.

One function per rule, with the reference engine's name (:mod:`sparktide.rules`): the
early and late verdicts (:func:`early_verdict`, :func:`late_verdict`, with the late
rule's timestamp :func:`late_adjusted`), the newest timestamp (:func:`newest_timestamp`),
the watermark (:func:`timeline_watermark_floor`, :func:`timeline_watermark`), the
out-of-order verdict (:func:`out_of_order_verdict`); :func:`judge_rows` strings them
together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparktide.core.instants import NEG_INF
from sparktide.spark.onepass.plan import FusedPlan

__all__ = [
    "SCAN_GROUPS",
    "Verdicts",
    "early_verdict",
    "judge_rows",
    "late_adjusted",
    "late_verdict",
    "newest_timestamp",
    "offered_newest",
    "out_of_order_verdict",
    "running_max_before",
    "timeline_watermark",
    "timeline_watermark_floor",
]

#: Up to this many groups, :func:`running_max_before` scans each group (a loop in Python);
#: beyond, it scans them all together, each group's values lifted above the last's.
SCAN_GROUPS = 64


def running_max_before(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For rows sorted by ``group``: the largest of ``values`` over the same group's
    earlier rows (``NEG_INF`` for a group's first row)."""
    if len(values) == 0:
        return values.copy()
    firsts = np.concatenate([[0], np.flatnonzero(np.diff(group)) + 1])
    if len(firsts) <= SCAN_GROUPS:  # (partitions: a running max each)
        before = np.empty_like(values)
        for start, end in zip(firsts, [*firsts[1:], len(values)], strict=True):
            before[start] = NEG_INF
            np.maximum.accumulate(values[start : end - 1], out=before[start + 1 : end])
        return before
    # a later group's keys all larger: a value's offset from the least one (no sort) when
    # the groups times the span fit in 63 bits, else its rank among the values
    finite = values[values > NEG_INF]
    low = int(finite.min()) - 1 if len(finite) else 0
    span = int(finite.max()) - low + 1 if len(finite) else 1
    if span * (int(group[-1]) + 1) < 2**62:
        offset = np.where(values > NEG_INF, values - low, 0)
        width = np.int64(span)
        ranked = None
    else:
        ranked, offset = np.unique(values, return_inverse=True)
        width = np.int64(len(ranked))
    key = group.astype(np.int64) * width + offset
    found = np.maximum.accumulate(key) - group.astype(np.int64) * width
    if ranked is not None:
        inclusive = ranked[found]
    else:
        inclusive = np.where(found > 0, found + low, NEG_INF)
    before = np.empty_like(values)
    before[0] = NEG_INF
    before[1:] = inclusive[:-1]
    before[np.flatnonzero(np.diff(group)) + 1] = NEG_INF
    return before


def early_verdict(plan: FusedPlan, event_time: np.ndarray, arrival: np.ndarray) -> np.ndarray:
    """Which rows are early (event time beyond arrival by more than the early
    tolerance); none in arrival-time mode or with the check off."""
    early = plan.early_arrival
    if plan.event_mode and early is not None:
        return event_time - arrival > early
    return np.zeros(len(event_time), dtype=bool)


def late_verdict(plan: FusedPlan, event_time: np.ndarray, arrival: np.ndarray) -> np.ndarray:
    """Which rows are late (arrival beyond event time by more than the late tolerance);
    none in arrival-time mode or with the check off."""
    late = plan.late_arrival
    if plan.event_mode and late is not None:
        return arrival - event_time > late
    return np.zeros(len(event_time), dtype=bool)


def late_adjusted(
    plan: FusedPlan, event_time: np.ndarray, arrival: np.ndarray, is_late: np.ndarray
) -> np.ndarray:
    """Each row's timestamp after the late rule: a late row's is its arrival minus the
    late tolerance."""
    return np.where(is_late, arrival - (plan.late_arrival or 0), event_time)


def timeline_watermark_floor(
    plan: FusedPlan, start_watermark: np.ndarray, start_arrival: np.ndarray, arrival: np.ndarray
) -> np.ndarray:
    """The watermark at each row before the newest-timestamp term: the timeline's start
    watermark, raised to the arrival clock (its start, raised to the row's arrival)
    minus the late tolerance."""
    if plan.late_arrival is None:
        return start_watermark
    return np.maximum(start_watermark, np.maximum(start_arrival, arrival) - plan.late_arrival)


def offered_newest(
    plan: FusedPlan, stamped: np.ndarray, floor: np.ndarray, gone: np.ndarray
) -> np.ndarray:
    """What each row offers its timeline's newest timestamp once admitted (``NEG_INF``:
    nothing): its timestamp after the out-of-order rule (``stamped`` raised to ``floor``,
    or nothing if below it and dropped); nothing without the out-of-order term, or for
    a row dropped already."""
    if plan.out_of_order is None:
        h = np.full(len(stamped), NEG_INF, dtype=np.int64)
    elif plan.out_of_order_drop:
        h = np.where(stamped >= floor, stamped, NEG_INF)
    else:
        h = np.maximum(stamped, floor)
    return np.where(gone, NEG_INF, h)


def newest_timestamp(
    start_newest: np.ndarray, offered: np.ndarray, timeline: np.ndarray
) -> np.ndarray:
    """The newest timestamp of each row's timeline just before it (rows sorted by
    timeline, then arrival): the timeline's at the start, raised to the largest that
    its earlier rows offered (:func:`offered_newest`)."""
    return np.maximum(start_newest, running_max_before(offered, timeline))


def timeline_watermark(
    plan: FusedPlan,
    floor: np.ndarray,
    start_newest: np.ndarray,
    offered: np.ndarray,
    timeline: np.ndarray,
) -> np.ndarray:
    """The watermark of each row's timeline just before it (rows sorted by timeline,
    then arrival): ``floor`` (:func:`timeline_watermark_floor`), raised to the newest
    timestamp before the row (:func:`newest_timestamp`) minus the out-of-order tolerance."""
    if plan.out_of_order is None:
        return floor
    newest = newest_timestamp(start_newest, offered, timeline)
    return np.maximum(floor, newest - plan.out_of_order)


def out_of_order_verdict(
    plan: FusedPlan, stamped: np.ndarray, watermark: np.ndarray, gone: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which rows not dropped already (``gone``) are out of order (their timestamp after
    the late rule below their timeline's watermark), which of them are dropped, and
    each row's system timestamp (an out-of-order row's raised to the watermark)."""
    no = np.zeros(len(stamped), dtype=bool)
    is_ooo = (~gone & (stamped < watermark)) if plan.event_mode else no
    dropped_ooo = is_ooo if plan.out_of_order_drop else no
    return is_ooo, dropped_ooo, np.where(is_ooo, watermark, stamped)


@dataclass(frozen=True)
class Verdicts:
    """The policy's verdicts on a task's rows, in judging order (per row)."""

    early: np.ndarray
    late: np.ndarray
    out_of_order: np.ndarray
    dropped_late: np.ndarray
    dropped_out_of_order: np.ndarray
    admitted: np.ndarray
    adjusted: np.ndarray
    #: The system timestamp of an admitted row.
    system_time: np.ndarray
    #: What the row offers its timeline's newest timestamp (:func:`offered_newest`).
    offered: np.ndarray
    #: The row's timeline watermark just before it.
    watermark: np.ndarray


def judge_rows(
    plan: FusedPlan,
    timeline: np.ndarray,
    event_time: np.ndarray,
    arrival: np.ndarray,
    start: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> Verdicts:
    """The policy's verdicts on rows sorted by timeline, then arrival order, given each
    row's timeline's ``(arrival clock, watermark, newest timestamp)`` at the start."""
    start_arrival, start_watermark, start_newest = start
    no = np.zeros(len(event_time), dtype=bool)
    is_early = early_verdict(plan, event_time, arrival)
    is_late = late_verdict(plan, event_time, arrival)
    stamped = late_adjusted(plan, event_time, arrival, is_late)
    floor = timeline_watermark_floor(plan, start_watermark, start_arrival, arrival)
    gone = is_early | (is_late if plan.late_drop else no)
    offered = offered_newest(plan, stamped, floor, gone)
    watermark = timeline_watermark(plan, floor, start_newest, offered, timeline)
    is_ooo, dropped_ooo, system_time = out_of_order_verdict(plan, stamped, watermark, gone)
    admitted = ~gone & ~dropped_ooo
    return Verdicts(
        early=is_early,
        late=is_late,
        out_of_order=is_ooo,
        dropped_late=is_late & ~is_early if plan.late_drop else no,
        dropped_out_of_order=dropped_ooo,
        admitted=admitted,
        adjusted=admitted & (system_time != event_time),
        system_time=system_time,
        offered=offered,
        watermark=watermark,
    )
