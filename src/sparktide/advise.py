"""``sparktide advise``: measure an input's lateness and disorder, price candidate
ordering policies on it, and recommend one.

Three measurements of a sample of the job's real input (read by the reference engine's
reader):

1. **Lateness** = arrival time − event time, per partition and overall. Negative
   lateness is an *early* event (event time ahead of its arrival).
2. **Disorder**: for each event, how far its event time is behind the newest event time
   seen before it on its timeline (partition, or substream key), in the order the
   engine judges events (processing time, arrival time, seq); 0 when in order. Events
   the job's ``early_arrival`` drops are left out: they never move a timeline.
3. **Candidates**: for every pair of ``late_arrival`` (L) and ``out_of_order`` (O) in
   :data:`LATE_ARRIVAL_GRID` × :data:`OUT_OF_ORDER_GRID` plus the job's own values, the
   job (its window removed) is run through the reference engine over the sample, and
   the verdicts are counted: events **affected** are those adjusted, dropped as late or
   out of order, or dead-lettered as out of order (early events do not depend on L and
   O and are reported apart). The **output delay** of an event is its *hold time*: the
   processing time at which ordered output released it minus the processing time at
   which the engine saw it. Events still held when the sample ends are not counted in
   the delay figures (they are reported as ``held``).

The recommendation is the candidate with the smallest p99 hold time (then mean hold
time, then the smaller ``max(L, O)``, L, O) whose affected share is at most the target.

Percentiles are nearest-rank: the smallest sample value with at least that share of the
values at or below it, so they are always sample values, in integer microseconds.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from sparktide.core.engine import ReferenceEngine
from sparktide.core.records import InputRecord, jsonable
from sparktide.core.sink import Admitted
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.time import MINUTE, SECOND, format_duration, format_instant

__all__ = [
    "LATE_ARRIVAL_GRID",
    "OUT_OF_ORDER_GRID",
    "PERCENTILES",
    "Advice",
    "Candidate",
    "Distribution",
    "advise",
    "disorder",
    "evaluate",
    "parse_target",
    "percentile",
    "sample_records",
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
#: Reported percentiles: name, and the share as a fraction (numerator, denominator).
PERCENTILES: tuple[tuple[str, int, int], ...] = (
    ("p50", 1, 2),
    ("p90", 9, 10),
    ("p99", 99, 100),
    ("p99.9", 999, 1000),
)


def percentile(ordered: np.ndarray, numerator: int, denominator: int) -> int:
    """Nearest-rank percentile of a sorted integer array (not empty).

    The value at rank ``ceil(n · numerator / denominator)`` (1-based), in exact integer
    arithmetic: the smallest value with at least that share of the sample at or below it.
    """
    n = int(ordered.size)
    rank = max(1, -(-n * numerator // denominator))
    return int(ordered[rank - 1])


def parse_target(text: str) -> Fraction:
    """Parse ``--target-adjusted``: a percentage such as ``0.1%`` (the ``%`` is optional).

    Raises
    ------
    ConfigError
        If the text is not a number from 0 to 100.
    """
    raw = text.strip()
    number = raw[:-1].strip() if raw.endswith("%") else raw
    try:
        percent = Fraction(number)
    except (ValueError, ZeroDivisionError):
        raise ConfigError(
            "--target-adjusted", f"expected a percentage such as '0.1%', got {text!r}"
        ) from None
    if not 0 <= percent <= 100:
        raise ConfigError("--target-adjusted", f"must be from 0% to 100%, got {text!r}")
    return percent / 100


def _percent(share: Fraction) -> str:
    """A share as a percentage for people (the float is for display only)."""
    value = float(share * 100)
    if value == 0:
        return "0%"
    if value >= 1:
        return f"{value:.1f}%".replace(".0%", "%")
    return f"{value:.2g}%"


def _duration(value: int | None) -> str:
    return "-" if value is None else format_duration(value)


# ---------------------------------------------------------------------------- sample


def sample_records(job: Job, size: int) -> tuple[list[InputRecord], int]:
    """The ``size`` earliest well-formed records of the job's input by processing time
    (processing time, arrival time, seq), and how many malformed records the input has.

    The whole input is read (one record at a time, with the reference engine's reader)
    so the sample is a contiguous stretch of time across every partition, not the first
    file's records. Records keep their input ``seq``.

    Raises
    ------
    InputError
        If the input cannot be read.
    """
    from sparktide.reader import iter_job_records

    malformed = 0

    def good() -> Any:
        nonlocal malformed
        for record in iter_job_records(job):
            if record.malformed:
                malformed += 1
            else:
                yield record

    chosen = heapq.nsmallest(size, good(), key=lambda r: (r.processing_time, r.arrival_time, r.seq))
    chosen.sort(key=lambda r: r.seq)
    return chosen, malformed


# ---------------------------------------------------------------------------- measurements


@dataclass(frozen=True)
class Distribution:
    """Percentiles of a duration over a group of events.

    Attributes
    ----------
    scope
        ``all``, ``partition`` or ``key``.
    name
        The partition id or key value; for ``all``, ``None`` or which timelines the
        disorder was measured on (``partitions`` or ``keys``).
    events
        How many events.
    values
        Percentile name → integer microseconds (:data:`PERCENTILES`, then ``max``).
    early
        For lateness: events with event time ahead of arrival time (negative lateness);
        for disorder: events behind the newest before them (disorder > 0).
    """

    scope: str
    name: Any
    events: int
    values: dict[str, int]
    early: int

    @classmethod
    def of(cls, scope: str, name: Any, durations: np.ndarray, early: int) -> Distribution:
        """Summarise ``durations`` (integer microseconds, not empty)."""
        ordered = np.sort(durations)
        values = {label: percentile(ordered, a, b) for label, a, b in PERCENTILES}
        values["max"] = int(ordered[-1])
        return cls(scope, name, int(ordered.size), values, early)

    @property
    def label(self) -> str:
        """``all``, ``all keys``, ``partition 3`` or ``key dev-01``."""
        if self.scope == "all":
            return "all" if self.name is None else f"all {self.name}"
        return f"{self.scope} {self.name}"

    def as_dict(self, what: str) -> dict[str, Any]:
        """A JSON-ready record; ``what`` is ``lateness`` or ``disorder``."""
        counted = "early" if what == "lateness" else "disordered"
        out: dict[str, Any] = {"type": what, "scope": self.scope}
        if self.scope != "all":
            out[self.scope] = jsonable(self.name)
        elif self.name is not None:
            out["timelines"] = self.name
        out["events"] = self.events
        out[counted] = self.early
        out[f"{counted}_share"] = self.early / self.events
        for label, value in self.values.items():
            out[f"{label}_us"] = value
        return out


def disorder(
    event_time: np.ndarray,
    timeline: np.ndarray,
    order: np.ndarray,
    counted: np.ndarray | None = None,
) -> np.ndarray:
    """How far each event's time is behind the newest event time before it on its timeline.

    Parameters
    ----------
    event_time
        Event times (integer microseconds).
    timeline
        Each event's timeline number (0, 1, …).
    order
        Positions of the events in the order they are judged.
    counted
        Which events move their timeline's newest event time (default: all). The
        others (events dropped as early) are measured but move nothing.

    Returns
    -------
    numpy.ndarray
        Integer microseconds, ``0`` for an event at or ahead of every earlier one, in the
        positions of ``event_time``.
    """
    out = np.zeros(event_time.size, dtype=np.int64)
    if event_time.size == 0:
        return out
    if counted is None:
        counted = np.ones(event_time.size, dtype=bool)
    grouped = order[np.argsort(timeline[order], kind="stable")]
    times = event_time[grouped]
    movers = np.where(counted[grouped], times, np.iinfo(np.int64).min)
    groups = timeline[grouped]
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    ends = np.r_[starts[1:], groups.size]
    behind = np.zeros(times.size, dtype=np.int64)
    for start, end in zip(starts, ends, strict=True):
        newest = np.maximum.accumulate(movers[start:end])
        # newest[i - 1] is the int64 minimum until a counted event was seen: no gap then.
        previous = newest[:-1]
        gap = np.where(previous > np.iinfo(np.int64).min, previous - times[start + 1 : end], 0)
        behind[start + 1 : end] = np.maximum(gap, 0)
    out[grouped] = behind
    return out


# ---------------------------------------------------------------------------- candidates


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
    hold: dict[str, int] = {}
    if probe.holds:
        ordered = np.sort(np.array(probe.holds, dtype=np.int64))
        hold = {
            "p50": percentile(ordered, 1, 2),
            "p99": percentile(ordered, 99, 100),
            "mean": int(ordered.sum()) // int(ordered.size),
            "max": int(ordered[-1]),
        }
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
        hold=hold,
        current=(late_arrival, out_of_order)
        == (job.ordering.late_arrival, job.ordering.out_of_order),
    )


# ---------------------------------------------------------------------------- advice


@dataclass(frozen=True)
class Advice:
    """Everything ``sparktide advise`` reports.

    Attributes
    ----------
    job
        The job advised on.
    sample
        Facts about the sample: records, malformed records in the input, the arrival
        span, partitions and keys.
    lateness, disorder
        Distributions: overall first, then per partition (and per key for disorder).
    candidates
        Every candidate setting, in grid order.
    target
        The largest affected share allowed.
    recommended
        The recommended candidate, or ``None`` when none meets the target.
    """

    job: Job
    sample: dict[str, Any]
    lateness: list[Distribution]
    disorder: list[Distribution]
    candidates: list[Candidate]
    target: Fraction
    recommended: Candidate | None

    @property
    def closest(self) -> Candidate | None:
        """When nothing meets the target: the candidate with the smallest affected share."""
        if not self.candidates:
            return None
        return min(self.candidates, key=lambda c: (c.share, c.rank()))

    def snippet(self) -> str | None:
        """The recommended ``[ordering]`` table as TOML to paste, or ``None``."""
        chosen = self.recommended
        if chosen is None:
            return None
        ordering = self.job.ordering
        lines = [
            "[ordering]",
            f'early_arrival = "{format_duration(ordering.early_arrival)}"',  # type: ignore[arg-type]
            f'late_arrival = "{format_duration(chosen.late_arrival)}"',
            f'out_of_order = "{format_duration(chosen.out_of_order)}"',
            f'action = "{ordering.action}"',
        ]
        if ordering.on_out_of_order is not None:
            lines.append(f'on_out_of_order = "{ordering.on_out_of_order}"')
        if ordering.partitioned:
            lines.append("partitioned = true")
        return "\n".join(lines) + "\n"

    def recommendation(self) -> dict[str, Any]:
        """The ``recommendation`` record."""
        chosen = self.recommended
        out: dict[str, Any] = {
            "type": "recommendation",
            "target_share": float(self.target),
            "target": _percent(self.target),
            "found": chosen is not None,
        }
        if chosen is not None:
            out["late_arrival"] = format_duration(chosen.late_arrival)
            out["out_of_order"] = format_duration(chosen.out_of_order)
            out["affected_share"] = float(chosen.share)
            out["hold_p99_us"] = chosen.hold.get("p99")
            out["toml"] = self.snippet()
        elif self.closest is not None:
            closest = self.closest
            out["closest"] = {
                "late_arrival": format_duration(closest.late_arrival),
                "out_of_order": format_duration(closest.out_of_order),
                "affected_share": float(closest.share),
            }
        return out

    def records(self) -> list[dict[str, Any]]:
        """Every record, for ``--format jsonl``: sample, lateness, disorder, candidates,
        recommendation."""
        out: list[dict[str, Any]] = [{"type": "sample", **self.sample}]
        out += [d.as_dict("lateness") for d in self.lateness]
        out += [d.as_dict("disorder") for d in self.disorder]
        out += [c.as_dict() for c in self.candidates]
        out.append(self.recommendation())
        return out

    def as_dict(self) -> dict[str, Any]:
        """One JSON object, for ``--format json``."""
        return {
            "sample": self.sample,
            "lateness": [d.as_dict("lateness") for d in self.lateness],
            "disorder": [d.as_dict("disorder") for d in self.disorder],
            "candidates": [c.as_dict() for c in self.candidates],
            "recommendation": self.recommendation(),
        }


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


def _grid(values: tuple[int, ...], current: int | None) -> list[int | None]:
    grid: list[int | None] = sorted(set(values) | ({current} if current is not None else set()))
    if current is None:
        grid.append(None)
    return grid


def advise(
    job: Job,
    records: list[InputRecord],
    *,
    target: Fraction = Fraction(1, 1000),
    top_keys: int = 10,
    malformed: int = 0,
    late_grid: tuple[int, ...] = LATE_ARRIVAL_GRID,
    out_of_order_grid: tuple[int, ...] = OUT_OF_ORDER_GRID,
    progress: Callable[[int, int], None] | None = None,
) -> Advice:
    """Measure ``records`` and price every candidate ordering setting on them.

    Parameters
    ----------
    job
        The job (its ``[ordering]`` gives the current values and the other settings).
    records
        Well-formed input records (see :func:`sample_records`).
    target
        Largest affected share allowed for the recommendation (a fraction: 0.001 = 0.1 %).
    top_keys
        With substreams, report disorder for this many of the busiest keys.
    malformed
        Malformed records in the input (reported only).
    late_grid, out_of_order_grid
        Candidate values; the job's own values are added.
    progress
        Called with (candidates done, candidates in all) after each engine run (each
        takes about a second per 100,000 records).

    Raises
    ------
    ConfigError
        If the job runs in arrival-time mode (no ``timestamp_by``: nothing to measure),
        or the sample holds no well-formed record.
    """
    if not job.event_time_mode:
        raise ConfigError(
            "source.timestamp_by",
            "advise needs event times; the job runs in arrival-time mode "
            "(without timestamp_by nothing is ever late or out of order)",
        )
    good = [r for r in records if not r.malformed]
    if not good:
        raise ConfigError("source.path", "the input has no well-formed record to advise on")
    event = np.array([r.event_time for r in good], dtype=np.int64)
    arrival = np.array([r.arrival_time for r in good], dtype=np.int64)
    processing = np.array([r.processing_time for r in good], dtype=np.int64)
    seq = np.array([r.seq for r in good], dtype=np.int64)
    order = np.lexsort((seq, arrival, processing))
    partitions = sorted({r.partition for r in good}, key=_sort_key)
    partition_index = {p: i for i, p in enumerate(partitions)}
    partition = np.array([partition_index[r.partition] for r in good], dtype=np.int64)

    lateness = arrival - event
    late_rows = [Distribution.of("all", None, lateness, int((lateness < 0).sum()))]
    # Events the job drops as early never move a timeline: leave them out of disorder.
    early_limit = job.ordering.early_arrival
    steady = np.ones(event.size, dtype=bool)
    if early_limit is not None:
        steady = event - arrival <= early_limit  # type: ignore[operator]
    behind = disorder(event, partition, order, steady)
    kept = behind[steady]
    disorder_rows = [Distribution.of("all", "partitions", kept, int((kept > 0).sum()))]
    for number, pid in enumerate(partitions):
        mask = partition == number
        late_rows.append(
            Distribution.of("partition", pid, lateness[mask], int((lateness[mask] < 0).sum()))
        )
        if (mask & steady).any():
            part = behind[mask & steady]
            disorder_rows.append(Distribution.of("partition", pid, part, int((part > 0).sum())))
    keys: Counter[Any] = Counter()
    if job.source.over is not None:
        keys = Counter(r.key for r in good)
        key_index = {k: i for i, k in enumerate(keys)}
        key = np.array([key_index[r.key] for r in good], dtype=np.int64)
        by_key = disorder(event, key, order, steady)
        kept = by_key[steady]
        disorder_rows.append(Distribution.of("all", "keys", kept, int((kept > 0).sum())))
        busiest = sorted(keys, key=lambda k: (-keys[k], _sort_key(k)))[:top_keys]
        for value in busiest:
            mask = (key == key_index[value]) & steady
            if mask.any():
                part = by_key[mask]
                disorder_rows.append(Distribution.of("key", value, part, int((part > 0).sum())))

    pairs = [
        (late, ooo)
        for late in _grid(late_grid, job.ordering.late_arrival)  # type: ignore[arg-type]
        for ooo in _grid(out_of_order_grid, job.ordering.out_of_order)  # type: ignore[arg-type]
    ]
    candidates = []
    for late, ooo in pairs:
        candidates.append(evaluate(job, good, late, ooo))
        if progress is not None:
            progress(len(candidates), len(pairs))
    meeting = [c for c in candidates if c.share <= target and c.hold]
    recommended = min(meeting, key=Candidate.rank) if meeting else None
    sample = {
        "records": len(good),
        "malformed_in_input": malformed,
        "first_arrival": format_instant(int(arrival.min())),
        "last_arrival": format_instant(int(arrival.max())),
        "partitions": len(partitions),
        "keys": len(keys) if job.source.over is not None else None,
    }
    return Advice(job, sample, late_rows, disorder_rows, candidates, target, recommended)
