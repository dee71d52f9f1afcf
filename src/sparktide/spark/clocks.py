"""Partition clocks on Spark (semantics §4): arrival clocks, idle estimates, watermarks.

The clock state of a batch is a small JSON document (``state/<batch>/clock.json``)::

    {"partitions": {pid: PartitionClock}, "arrival": A, "job_watermark": ...,
     "counters": {...}, "malformed": n, "processing_time": ..., "started": ...,
     "written": {...}, "flushed": bool, "cti_floor": ... (substreams)}

Each partition's clock is a :class:`PartitionClock`; the rules it follows (the idle
estimate, the watermark refresh) are :mod:`sparktide.core.watermark`'s own, applied to
one partition's values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparktide.core.instants import NEG_INF
from sparktide.core.watermark import idle_estimate, timeline_watermark
from sparktide.job import Job, input_of
from sparktide.spark.columns import (
    PARTITION,
)
from sparktide.spark.counters import add_counters

__all__ = [
    "ClockState",
    "PartitionClock",
    "Terms",
    "clock_json",
    "close_batch",
    "governing_watermark_floor",
    "idle_estimates",
    "import_ctis",
    "initial_clock",
    "load_clock",
    "raise_job_watermark",
    "terms_of",
]

#: The clock state of a batch: JSON fields, ``partitions`` holding :class:`PartitionClock`.
ClockState = dict[str, Any]


@dataclass
class PartitionClock:
    """One input partition's clock: its arrival clock and its timeline's watermark.

    The fields are the JSON names of the state file, in its order; ``events`` (events
    judged on the partition, read by generated CTIs) is absent until first counted.
    """

    arrival: int = NEG_INF  # A: the largest arrival time seen or estimated
    last_arrival: int = NEG_INF  # arrival time of the last event delivered
    last_processing: int = NEG_INF  # processing time of the last delivery
    seen: bool = False  # whether the partition ever delivered
    newest: int = NEG_INF  # the timeline's newest admitted timestamp
    watermark: int = NEG_INF  # W: the timeline's watermark
    events: int | None = None  # events judged on the timeline

    def as_json(self) -> dict[str, Any]:
        """The fields as the state file writes them."""
        fields = {
            "arrival": self.arrival,
            "last_arrival": self.last_arrival,
            "last_processing": self.last_processing,
            "seen": self.seen,
            "newest": self.newest,
            "watermark": self.watermark,
        }
        if self.events is not None:
            fields["events"] = self.events
        return fields

    @property
    def events_judged(self) -> int:
        """Events judged so far (0 before any)."""
        return self.events or 0

    def idle_estimate(self, now: int) -> int:
        """The arrival clock at ``now`` if the partition delivers nothing (semantics §4.3):
        its last arrival plus the processing time since, or ``now`` − 5 s if never seen,
        when that is ahead (:func:`sparktide.core.watermark.idle_estimate`)."""
        guess = idle_estimate(self.seen, self.last_arrival, self.last_processing, now)
        return max(self.arrival, guess)

    def deliver(self, arrival: int, now: int) -> None:
        """The partition delivered events up to arrival time ``arrival`` at ``now``."""
        self.arrival = max(self.arrival, arrival)
        self.last_arrival = arrival
        self.last_processing = now
        self.seen = True

    def timeline_watermark(
        self, arrival: int, out_of_order: int | None, late_arrival: int | None
    ) -> int:
        """The watermark refreshed at arrival clock ``arrival`` (semantics §4.1), with the
        heuristic terms (``None``: absent): :func:`sparktide.core.watermark.timeline_watermark`."""
        return timeline_watermark(self.watermark, self.newest, arrival, out_of_order, late_arrival)


def initial_clock(job: Job) -> ClockState:
    """The clock state before the first batch: every declared partition unseen."""
    partitions = {str(pid): PartitionClock() for pid in job.declared_partitions}
    counters: dict[str, dict[str, int]] = {}
    return {
        "partitions": partitions,
        "arrival": NEG_INF,
        "job_watermark": NEG_INF,
        "counters": counters,
        "malformed": 0,
        "processing_time": NEG_INF,
    }


def load_clock(document: dict[str, Any] | None, job: Job) -> ClockState:
    """The clock state read from a state file (``None``: none yet, the initial one)."""
    if document is None:
        return initial_clock(job)
    parts = document["partitions"]
    document["partitions"] = {pid: PartitionClock(**fields) for pid, fields in parts.items()}
    return document


def clock_json(clock: ClockState) -> dict[str, Any]:
    """The clock state as the state file holds it (the same fields, in the same order)."""
    parts = {pid: part.as_json() for pid, part in clock["partitions"].items()}
    return {name: parts if name == "partitions" else v for name, v in clock.items()}


def governing_watermark_floor(arrival: int, clock: ClockState, late_arrival: int | None) -> int:
    """Substreams: the watermark every substream has reached (semantics §4.5) — the input's arrival
    clock minus L (the watermark's late term, ``None``: absent), and the CTIs without
    a key (semantics §7)."""
    base = arrival - late_arrival if late_arrival is not None else NEG_INF
    return max(base, clock.get("cti_floor", NEG_INF))


#: A partition watermark's heuristic terms (out-of-order, late; ``None``: absent): one
#: pair for every partition, or a function of the partition id (per-input settings).
Terms = tuple[int | None, int | None] | Callable[[str], tuple[int | None, int | None]]


def terms_of(terms: Terms, pid: str) -> tuple[int | None, int | None]:
    """The terms of partition ``pid``'s watermark (semantics §4.1, §7.8)."""
    return terms(pid) if callable(terms) else terms


def idle_estimates(
    clock: ClockState,
    delivering: dict[str, Any],
    now: int,
    terms: Terms | None,
) -> int:
    """Idle estimates for the partitions that deliver nothing at ``now`` (semantics §4);
    partitions seen for the first time get their entry. With ``terms`` (the watermark's
    out-of-order and late terms; ``None`` for substreams, whose partitions keep no
    watermark; a function of the partition id where inputs have their own, semantics
    §7.8) the estimated partitions' watermarks are refreshed. Returns the input's
    arrival clock at the start of the batch (the maximum over partitions)."""
    parts: dict[str, PartitionClock] = clock["partitions"]
    for pid, part in parts.items():
        if pid in delivering:
            continue
        part.arrival = part.idle_estimate(now)
        if terms is not None:
            part.watermark = part.timeline_watermark(part.arrival, *terms_of(terms, pid))
    for pid in delivering:
        parts.setdefault(pid, PartitionClock())
    return max([clock["arrival"], *(p.arrival for p in parts.values())])


def import_ctis(job: Job, parts: dict[str, PartitionClock]) -> None:
    """Imported CTIs at the batch instant (after the idle estimates, before the rows):
    an importing input's partitions take the watermark of the input they import from,
    the minimum over its partitions (as :meth:`ReferenceEngine._import_ctis`)."""
    for importer, exporter in job.imports.items():
        marks = [p.watermark for pid, p in parts.items() if input_of(pid) == exporter]
        if not marks:
            continue
        for pid, part in parts.items():
            if input_of(pid) == importer:
                part.watermark = max(part.watermark, min(marks))


def close_batch(
    clock: ClockState,
    delivering: dict[str, Any],
    summary: list[Any],
    *,
    arrival_at_start: int,
    now: int,
    terms: Terms | None,
    malformed: int,
) -> int:
    """The clocks at the end of a batch: the delivering partitions' arrivals, each
    timeline's newest timestamp, CTIs and events from the batch's ``summary`` (one row
    per partition), watermarks refreshed (``terms`` as :func:`idle_estimates`; ``None``
    for substreams, whose timelines are keys), the job watermark. Returns the input's
    arrival clock at the end of the batch."""
    parts: dict[str, PartitionClock] = clock["partitions"]
    for pid, row in delivering.items():
        parts[pid].deliver(row["max_a"], now)
    arrival_at_end = max([arrival_at_start, *(p.arrival for p in parts.values())])
    for row in summary:
        if row[PARTITION] is None:  # malformed rows only (counted apart)
            continue
        if terms is not None:
            part = parts[row[PARTITION]]
            if row["max_h"] is not None:
                part.newest = max(part.newest, row["max_h"])
            if row["max_cti"] is not None:
                part.watermark = max(part.watermark, row["max_cti"])
            part.events = part.events_judged + (row["counted"] or 0)  # (§7.3)
        elif row["max_y"] is not None:
            clock["cti_floor"] = max(clock.get("cti_floor", NEG_INF), row["max_y"])
    add_counters(clock["counters"], summary)
    if terms is not None:
        for pid, part in parts.items():
            part.watermark = part.timeline_watermark(part.arrival, *terms_of(terms, pid))
    clock["arrival"] = arrival_at_end
    clock["malformed"] = clock.get("malformed", 0) + malformed
    clock["processing_time"] = now
    clock.setdefault("started", now)
    return arrival_at_end


def raise_job_watermark(clock: ClockState) -> None:
    """Merged timelines: the job watermark, the minimum over partitions, never lower."""
    marks = [p.watermark for p in clock["partitions"].values()]
    clock["job_watermark"] = max(clock["job_watermark"], min(marks, default=NEG_INF))
