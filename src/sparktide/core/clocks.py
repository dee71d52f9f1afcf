"""The clocks of a reference run (semantics §3, §4, §7): partitions' arrival clocks, the
timelines that own watermarks, and the watermark that governs each scope's results.

A job has one of three timeline layouts:

- *merged* (the default): one timeline per partition; the job's watermark, the minimum
  over them, governs every result;
- *partitioned* (``ordering.partitioned``): one timeline per partition, each governing
  its own partition's results;
- *substreams* (``source.over``): one timeline per key, on the arrival clock of the whole
  input; every key's watermark is at least a shared *floor* (the input's arrival clock
  minus ``late_arrival``, and the CTIs that name no key).

Every watermark move is published to the sink at once (:meth:`Clocks.publish`).
"""

from __future__ import annotations

from typing import Any

from sparktide.core.instants import NEG_INF, POS_INF
from sparktide.core.records import InputRecord
from sparktide.core.sink import Sink
from sparktide.core.watermark import PartitionClock, Timeline
from sparktide.job import Job, input_of

__all__ = ["Clocks"]


class Clocks:
    """The arrival clocks, timelines and watermarks of one run.

    Parameters
    ----------
    job
        The job: its partitions, substreams and punctuation.

    Attributes
    ----------
    partitions
        The arrival clock of every partition seen or declared.
    timelines
        The timelines, by partition id (or by key, with substreams).
    arrival
        The input's arrival clock: the maximum over its partitions.
    job_watermark
        The merged watermark: the minimum over the timelines (merged layout).
    cti_floor
        Substreams: the largest CTI that named no key (it punctuates every substream).
    now
        The current observation instant.
    sink
        Where watermark moves are published (set once the sink exists).
    """

    def __init__(self, job: Job) -> None:
        ordering, punctuation = job.ordering, job.punctuation
        self.substreams = job.source.over is not None
        self.partitioned = ordering.partitioned
        self.only_cti = punctuation is not None and punctuation.watermark == "cti"
        # The watermark's heuristic terms (semantics §4), absent when only CTIs move it;
        # each input's own in a union (semantics §7.8); the job's for substreams.
        self.out_of_order_term, self.late_term = self._terms(job.ordering)
        self.input_terms = {n: self._terms(p.ordering) for n, p in job.policies.items()}
        self.union = bool(job.inputs)
        self.imports = job.imports
        self.partitions: dict[Any, PartitionClock] = {}
        self.timelines: dict[Any, Timeline] = {}
        self.arrival = NEG_INF
        self.job_watermark = NEG_INF
        self.cti_floor = NEG_INF
        self.now = NEG_INF
        self.sink: Sink = None  # type: ignore[assignment]  # (attached by the engine)

    # ------------------------------------------------------------------ lookups
    def partition(self, pid: Any) -> PartitionClock:
        """The clock of partition ``pid`` (made, with its timeline, when first seen)."""
        clock = self.partitions.get(pid)
        if clock is None:
            clock = self.partitions[pid] = PartitionClock(pid)
            if not self.substreams:
                self.timelines[pid] = self._new_timeline(pid)
        return clock

    def timeline(self, record: InputRecord) -> Timeline:
        """The timeline ``record`` is judged on: its partition's, or its key's."""
        if not self.substreams:
            return self.timelines[record.partition]
        timeline = self.timelines.get(record.key)
        if timeline is None:
            timeline = self.timelines[record.key] = self._new_timeline(record.key)
        return timeline

    def scope(self, record: InputRecord) -> Any:
        """Whose watermark governs ``record``'s results: its key, its partition or the job
        (``None``)."""
        if self.substreams:
            return record.key
        if self.partitioned:
            return record.partition
        return None

    def _terms(self, ordering: Any) -> tuple[int | None, int | None]:
        """The terms (O, L) of a timeline under ``ordering`` (none when only CTIs count)."""
        if self.only_cti:
            return None, None
        return ordering.out_of_order, ordering.late_arrival

    def input_name(self, pid: Any) -> str:
        """The input partition ``pid`` belongs to (``""`` for a job with one source)."""
        return input_of(pid) if self.union else ""

    def _new_timeline(self, key: Any) -> Timeline:
        if self.substreams:
            return Timeline(key, self.out_of_order_term, self.late_term)
        return Timeline(key, *self.input_terms[self.input_name(key)])

    def _clock_of(self, timeline: Timeline) -> int:
        """The arrival clock of ``timeline``: its partition's, or the input's (substreams)."""
        if self.substreams:
            return self.arrival
        return self.partitions[timeline.key].arrival

    # ------------------------------------------------------------------ watermarks
    def governing_watermark(self, scope: Any) -> int:
        """The watermark that governs results of ``scope`` right now."""
        if self.substreams:
            timeline = self.timelines.get(scope)
            if timeline is None:
                return self.floor()
            return self.refresh(timeline)
        if self.partitioned:
            return self.timelines[scope].watermark
        return self.job_watermark

    def floor(self) -> int:
        """Substreams: the watermark every substream has reached (A − L, keyless CTIs)."""
        late = self.late_term
        base = NEG_INF if late is None else self.arrival - late
        return max(base, self.cti_floor)

    def refresh(self, timeline: Timeline) -> int:
        """Recompute ``timeline``'s watermark from its arrival clock (and the substreams'
        floor of keyless CTIs)."""
        watermark = timeline.refresh(self._clock_of(timeline))
        if self.substreams and self.cti_floor > watermark:
            timeline.advance_to(self.cti_floor)
            watermark = self.cti_floor
        return watermark

    def refresh_without_floor(self, timeline: Timeline) -> int:
        """Recompute ``timeline``'s watermark from its arrival clock alone."""
        return timeline.refresh(self._clock_of(timeline))

    def settle(self, timeline: Timeline, watermark: int) -> None:
        """Refresh ``timeline``; publish its watermark if it rose above ``watermark``."""
        if self.refresh(timeline) > watermark:
            self.publish(timeline)

    def publish(self, timeline: Timeline) -> None:
        """Tell the sink the watermark of ``timeline``'s scope may have moved."""
        if self.substreams or self.partitioned:
            self.sink.advance(timeline.key, timeline.watermark, self.now)
        else:
            self.publish_job()

    def publish_job(self) -> None:
        """Merged layout: publish the minimum over the timelines if it rose."""
        merged = min((t.watermark for t in self.timelines.values()), default=NEG_INF)
        if merged > self.job_watermark:
            self.job_watermark = merged
            self.sink.advance(None, merged, self.now)

    def force_watermark(self, scope: Any, instant: int) -> None:
        """Advance the watermark governing ``scope`` to ``instant`` (idle timeout)."""
        if self.substreams or self.partitioned:
            timeline = self.timelines[scope]
            if timeline.advance_to(instant):
                self.publish(timeline)
        else:
            for timeline in self.timelines.values():
                timeline.advance_to(instant)
            self.publish_job()

    def watermark_view(self) -> int:
        """The job's watermark as reported in metrics: the minimum over timelines."""
        if not self.substreams and not self.partitioned:
            return self.job_watermark
        if self.substreams:
            floor = self.floor()
            return min(
                (max(t.watermark, floor) for t in self.timelines.values()),
                default=floor,
            )
        return min((t.watermark for t in self.timelines.values()), default=NEG_INF)

    def flush(self) -> None:
        """The final punctuation at +infinity: every watermark to ``POS_INF``."""
        for timeline in self.timelines.values():
            timeline.advance_to(POS_INF)
        self.job_watermark = POS_INF

    # ------------------------------------------------------------------ arrivals
    def set_arrival(self, arrival: int) -> None:
        """Raise the input's arrival clock (substreams: and publish the floor it lifts)."""
        if arrival > self.arrival:
            self.arrival = arrival
            if self.substreams and self.late_term is not None:
                self.sink.advance_floor(self.floor(), self.now)

    def deliver(self, record: InputRecord) -> None:
        """Step 1 of semantics §3: ``record`` (an event or a CTI row) arrived now."""
        clock = self.partition(record.partition)
        arrival = record.arrival_time
        assert arrival is not None and record.event_time is not None
        clock.deliver(arrival, self.now)
        self.set_arrival(arrival)

    def touch(self, record: InputRecord) -> tuple[Timeline, int]:
        """After a delivery: tell the sink, refresh ``record``'s timeline and publish a
        move. Returns the timeline and its watermark."""
        self.sink.delivered(self.scope(record), self.now)
        timeline = self.timeline(record)
        before = timeline.watermark
        watermark = self.refresh(timeline)
        if watermark > before:
            self.publish(timeline)
        return timeline, watermark

    def punctuate(self, record: InputRecord) -> int:
        """An explicit CTI row: it moves its timeline's watermark (never backwards); with
        substreams a CTI without a key punctuates every substream. Returns the watermark
        before the CTI."""
        self.deliver(record)
        instant: int = record.event_time  # type: ignore[assignment]
        if self.substreams and record.key is None:
            before = self.floor()
            if instant > self.cti_floor:
                self.cti_floor = instant
                self.sink.advance_floor(self.floor(), self.now)
            return before
        timeline, before = self.touch(record)
        if timeline.punctuate(instant):
            self.publish(timeline)
        return before

    # ------------------------------------------------------------------ observation instants
    def estimate_idle(self, now: int, delivering: set[Any]) -> None:
        """Idle estimates (semantics §4): every partition delivering nothing at ``now`` moves its
        arrival clock on; the watermarks that follow are published."""
        moved = []
        for pid, clock in self.partitions.items():
            if pid not in delivering and clock.estimate(now):
                moved.append(clock)
        if not moved:
            return
        if self.substreams:
            self.set_arrival(max(c.arrival for c in moved))
            return
        for clock in moved:
            self.timelines[clock.pid].refresh(clock.arrival)
        if self.partitioned:
            for clock in moved:
                self.publish(self.timelines[clock.pid])
        else:
            self.publish_job()

    def import_ctis(self) -> None:
        """Imported CTIs (semantics §7): at each observation instant, before its records, the
        partitions of an input with ``import_ctis`` take the watermark of the input they
        import from (the minimum over its partitions), never moving back."""
        for importer, exporter in self.imports.items():
            marks = [t.watermark for k, t in self.timelines.items() if input_of(k) == exporter]
            if not marks:
                continue
            mark = min(marks)
            for key, timeline in self.timelines.items():
                if input_of(key) == importer and timeline.advance_to(mark):
                    if self.partitioned:
                        self.publish(timeline)
            if not self.partitioned:
                self.publish_job()
