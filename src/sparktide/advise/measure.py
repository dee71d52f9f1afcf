"""Measuring a sample: its lateness (arrival time − event time) and its disorder (how far
each event is behind the newest event time before it on its timeline), overall, per
partition and per substream key. The definitions are in :mod:`sparktide.advise`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparktide.advise.shares import PERCENTILES, percentile
from sparktide.core.records import InputRecord, jsonable
from sparktide.job import Job

__all__ = ["Distribution", "Measurements", "disorder", "measure"]


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


@dataclass(frozen=True)
class Measurements:
    """What :func:`measure` finds in a sample.

    Attributes
    ----------
    lateness, disorder
        Distributions: overall first, then per partition (and per key for disorder).
    partitions
        How many partitions the sample holds.
    keys
        How many substream keys (``None`` without substreams).
    first_arrival, last_arrival
        The sample's arrival span (integer microseconds).
    """

    lateness: list[Distribution]
    disorder: list[Distribution]
    partitions: int
    keys: int | None
    first_arrival: int
    last_arrival: int


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


def _behind_share(scope: str, name: Any, behind: np.ndarray) -> Distribution:
    return Distribution.of(scope, name, behind, int((behind > 0).sum()))


def measure(job: Job, good: list[InputRecord], top_keys: int) -> Measurements:
    """The lateness and disorder of the well-formed records ``good`` (not empty); with
    substreams, disorder per key for the ``top_keys`` busiest keys."""
    event = np.array([r.event_time for r in good], dtype=np.int64)
    arrival = np.array([r.arrival_time for r in good], dtype=np.int64)
    processing = np.array([r.processing_time for r in good], dtype=np.int64)
    seq = np.array([r.seq for r in good], dtype=np.int64)
    order = np.lexsort((seq, arrival, processing))
    partitions = sorted({r.partition for r in good}, key=_sort_key)
    partition_index = {p: i for i, p in enumerate(partitions)}
    partition = np.array([partition_index[r.partition] for r in good], dtype=np.int64)
    # Events the job drops as early never move a timeline: leave them out of disorder.
    early_limit = job.ordering.early_arrival
    steady = np.ones(event.size, dtype=bool)
    if early_limit is not None:
        steady = event - arrival <= early_limit  # type: ignore[operator]

    lateness = arrival - event
    late_rows = [Distribution.of("all", None, lateness, int((lateness < 0).sum()))]
    behind = disorder(event, partition, order, steady)
    disorder_rows = [_behind_share("all", "partitions", behind[steady])]
    for number, pid in enumerate(partitions):
        mask = partition == number
        late_rows.append(
            Distribution.of("partition", pid, lateness[mask], int((lateness[mask] < 0).sum()))
        )
        if (mask & steady).any():
            disorder_rows.append(_behind_share("partition", pid, behind[mask & steady]))
    keys = None
    if job.source.over is not None:
        counts = Counter(r.key for r in good)
        keys = len(counts)
        disorder_rows += _key_disorder(good, event, order, steady, counts, top_keys)
    return Measurements(
        late_rows, disorder_rows, len(partitions), keys, int(arrival.min()), int(arrival.max())
    )


def _key_disorder(
    good: list[InputRecord],
    event: np.ndarray,
    order: np.ndarray,
    steady: np.ndarray,
    counts: Counter[Any],
    top_keys: int,
) -> list[Distribution]:
    """Disorder on the substream keys' timelines: overall, then the busiest keys'."""
    key_index = {k: i for i, k in enumerate(counts)}
    key = np.array([key_index[r.key] for r in good], dtype=np.int64)
    by_key = disorder(event, key, order, steady)
    rows = [_behind_share("all", "keys", by_key[steady])]
    busiest = sorted(counts, key=lambda k: (-counts[k], _sort_key(k)))[:top_keys]
    for value in busiest:
        mask = (key == key_index[value]) & steady
        if mask.any():
            rows.append(_behind_share("key", value, by_key[mask]))
    return rows
