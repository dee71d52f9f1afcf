"""Pricing candidate ordering policies on a sample (events affected, output delay as
hold time), and choosing the one to recommend. The definitions are in
:mod:`sparktide.advise`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from sparktide.advise.shares import percentile
from sparktide.core.engine import ReferenceEngine
from sparktide.core.records import InputRecord
from sparktide.core.sink import Admitted
from sparktide.job import Job
from sparktide.time import MINUTE, SECOND, format_duration

__all__ = [
    "LATE_ARRIVAL_GRID",
    "OUT_OF_ORDER_GRID",
    "Candidate",
    "evaluate",
    "price_candidates",
    "recommend",
]

#: Candidate ``late_arrival`` values (the job's own value is added).
LATE_ARRIVAL_GRID: tuple[int, ...] = (
    0,
    SECOND,
    5 * SECOND,
    10 * SECOND,
    30 * SECOND,
    MINUTE,
    5 * MINUTE,
)
#: Candidate ``out_of_order`` values (the job's own value is added).
OUT_OF_ORDER_GRID: tuple[int, ...] = (0, SECOND, 5 * SECOND, 10 * SECOND, 30 * SECOND, MINUTE)


@dataclass(frozen=True)
class Candidate:
    """What one ``late_arrival`` / ``out_of_order`` setting costs on the sample.

    Attributes
    ----------
    late_arrival, out_of_order
        The setting (integer microseconds; ``None`` is ``"none"``).
    events
        Events judged (the sample's well-formed records).
    late, out_of_order_events, early
        Events with each reason.
    adjusted
        Events admitted with a changed timestamp.
    dropped, dead_lettered
        Dropped and dead-lettered events by reason.
    affected
        Adjusted, dropped as late or out of order, or dead-lettered as out of order.
    released, held
        Events released by ordered output during the sample, and still held at its end.
    hold
        Hold time of the released events: ``p50``, ``p99``, ``mean`` and ``max``
        (integer microseconds; empty when nothing was released).
    current
        True for the job's own setting.
    """

    late_arrival: int | None
    out_of_order: int | None
    events: int
    late: int
    out_of_order_events: int
    early: int
    adjusted: int
    dropped: dict[str, int]
    dead_lettered: dict[str, int]
    affected: int
    released: int
    held: int
    hold: dict[str, int] = field(default_factory=dict)
    current: bool = False

    @property
    def share(self) -> Fraction:
        """Affected events as a share of the events judged."""
        return Fraction(self.affected, self.events) if self.events else Fraction(0)

    def rank(self) -> tuple[Any, ...]:
        """Sort key: smallest delay first, then the tighter setting."""
        infinite = 1 << 62
        widest = max(
            infinite if self.late_arrival is None else self.late_arrival,
            infinite if self.out_of_order is None else self.out_of_order,
        )
        return (
            self.hold.get("p99", infinite),
            self.hold.get("mean", infinite),
            widest,
            infinite if self.late_arrival is None else self.late_arrival,
            infinite if self.out_of_order is None else self.out_of_order,
        )

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready ``candidate`` record."""
        out: dict[str, Any] = {
            "type": "candidate",
            "late_arrival": format_duration(self.late_arrival),
            "out_of_order": format_duration(self.out_of_order),
            "current": self.current,
            "events": self.events,
            "late": self.late,
            "out_of_order_events": self.out_of_order_events,
            "early": self.early,
            "adjusted": self.adjusted,
            "dropped": self.dropped,
            "dead_lettered": self.dead_lettered,
            "affected": self.affected,
            "affected_share": self.affected / self.events if self.events else 0.0,
            "released": self.released,
            "held": self.held,
        }
        for name in ("p50", "p99", "mean", "max"):
            out[f"hold_{name}_us"] = self.hold.get(name)
        return out


class _Probe(ReferenceEngine):
    """The reference engine without decisions, noting each released event's hold time."""

    def __init__(self, job: Job) -> None:
        super().__init__(job, explain=False)
        self.holds: list[int] = []

    def _emit_event(self, event: Admitted, now: int) -> None:
        self.holds.append(now - event.record.processing_time)  # type: ignore[operator]


def _hold_figures(holds: list[int]) -> dict[str, int]:
    """``p50``, ``p99``, ``mean`` and ``max`` of the hold times (empty if there are none)."""
    if not holds:
        return {}
    ordered = np.sort(np.array(holds, dtype=np.int64))
    return {
        "p50": percentile(ordered, 1, 2),
        "p99": percentile(ordered, 99, 100),
        "mean": int(ordered.sum()) // int(ordered.size),
        "max": int(ordered[-1]),
    }


def evaluate(
    job: Job,
    records: list[InputRecord],
    late_arrival: int | None,
    out_of_order: int | None,
) -> Candidate:
    """Run ``job`` with another ``late_arrival`` / ``out_of_order`` over ``records``.

    The job's window is removed (the engine then releases ordered events, whose hold
    time is the delay measure); everything else (early arrival, actions, partitions,
    substreams) is the job's. There is no final flush: events still held at the end of
    the sample are counted as ``held``.
    """
    ordering = replace(job.ordering, late_arrival=late_arrival, out_of_order=out_of_order)
    probe = _Probe(replace(job, ordering=ordering, window=None))
    metrics = probe.run(records, flush=False).metrics
    dropped = dict(metrics["dropped"])
    dead = dict(metrics["dead_lettered"])
    affected = (
        metrics["adjusted"]
        + dropped.get("late", 0)
        + dropped.get("out_of_order", 0)
        + dead.get("out_of_order", 0)
    )
    return Candidate(
        late_arrival=late_arrival,
        out_of_order=out_of_order,
        events=metrics["input"],
        late=metrics["late"],
        out_of_order_events=metrics["out_of_order"],
        early=metrics["early"],
        adjusted=metrics["adjusted"],
        dropped=dropped,
        dead_lettered=dead,
        affected=affected,
        released=len(probe.holds),
        held=metrics["held"],
        hold=_hold_figures(probe.holds),
        current=(late_arrival, out_of_order)
        == (job.ordering.late_arrival, job.ordering.out_of_order),
    )


def _grid(values: tuple[int, ...], current: int | None) -> list[int | None]:
    grid: list[int | None] = sorted(set(values) | ({current} if current is not None else set()))
    if current is None:
        grid.append(None)
    return grid


def price_candidates(
    job: Job,
    records: list[InputRecord],
    late_grid: tuple[int, ...],
    out_of_order_grid: tuple[int, ...],
    progress: Callable[[int, int], None] | None = None,
) -> list[Candidate]:
    """:func:`evaluate` every pair of the grids (each with the job's own value), in grid
    order, calling ``progress`` with (done, in all) after each."""
    pairs = [
        (late, ooo)
        for late in _grid(late_grid, job.ordering.late_arrival)  # type: ignore[arg-type]
        for ooo in _grid(out_of_order_grid, job.ordering.out_of_order)  # type: ignore[arg-type]
    ]
    candidates = []
    for late, ooo in pairs:
        candidates.append(evaluate(job, records, late, ooo))
        if progress is not None:
            progress(len(candidates), len(pairs))
    return candidates


def recommend(candidates: list[Candidate], target: Fraction) -> Candidate | None:
    """The best-ranked candidate that released events and affects at most ``target``."""
    meeting = [c for c in candidates if c.share <= target and c.hold]
    return min(meeting, key=Candidate.rank) if meeting else None
