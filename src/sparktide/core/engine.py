"""The reference engine: one event at a time, obviously correct (SPEC §1–4, 6, 8).

The engine observes time at *observation instants* (the processing time of each record,
timers, ``--until`` and ``--tick``). At each instant, in this order:

1. every partition that delivers nothing at this instant gets its idle estimate;
2. the instant's records are judged in arrival order ``(arrival time, seq)``;
3. timers due at or before the instant fire (events before timers at equal times).

Every watermark change is published to the sink at once, so results never depend on how
records are grouped into instants (only on the processing times themselves).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sparktide.core.diagnostics import LateInput, PartitionView, not_progressing
from sparktide.core.hold import output_watermark
from sparktide.core.instants import NEG_INF, POS_INF, is_finite
from sparktide.core.policy import ACCEPTED, ADJUSTED, DEAD_LETTERED, DROPPED, OrderingPolicy
from sparktide.core.punctuation import CtiGenerator
from sparktide.core.records import InputRecord, jsonable, time_or_none
from sparktide.core.release import OrderedRelease
from sparktide.core.sink import Admitted, Sink
from sparktide.core.watermark import PartitionClock, Timeline
from sparktide.core.windows import WindowOperator
from sparktide.expr import Expr, evaluate, passes, value_of
from sparktide.job import Job, input_of

__all__ = ["ReferenceEngine", "Result", "simulate"]

#: Output names that sparktide writes into event records itself.
EVENT_RESERVED = ("timestamp",)
#: ... and into event records of interval events (``source.end_time``).
INTERVAL_RESERVED = ("timestamp", "end_timestamp")
#: The verdict of an explicit CTI row in ``decision`` records: not an event.
PUNCTUATION = "punctuation"


@dataclass
class Result:
    """Everything a reference run produced, as SPEC §10 records (plain dicts).

    Attributes
    ----------
    decisions
        One ``decision`` record per input record, in input order.
    events
        Released ``event`` records, in release order.
    windows
        ``window`` records, in emission order.
    dead_letters
        ``dead_letter`` records, in the order they happened.
    metrics
        The final ``metrics`` record.
    """

    decisions: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    windows: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)

    def records(self, *, explain: bool = False) -> list[dict[str, Any]]:
        """All records in output order: decisions (if ``explain``), events, windows,
        dead letters, metrics."""
        out: list[dict[str, Any]] = list(self.decisions) if explain else []
        return out + self.events + self.windows + self.dead_letters + [self.metrics]


class _Counts:
    """Counters per partition; the job's totals are their sums."""

    def __init__(self) -> None:
        self.by_partition: dict[Any, Counter[str]] = {}
        self.malformed = 0

    def add(self, partition: Any, name: str, amount: int = 1) -> None:
        counter = self.by_partition.get(partition)
        if counter is None:
            counter = self.by_partition[partition] = Counter()
        counter[name] += amount

    def total(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for counter in self.by_partition.values():
            out.update(counter)
        return out


class ReferenceEngine:
    """Runs a job over input records, event at a time.

    Parameters
    ----------
    job
        The validated job.
    explain
        Keep one ``decision`` record per input record (``--explain``). Without it the
        engine skips building them, which roughly halves its cost per event.

    Examples
    --------
    >>> from sparktide.job import Job, Source
    >>> engine = ReferenceEngine(Job(Source(path="-", timestamp_by="t")))
    >>> result = engine.run([])
    >>> result.metrics["input"]
    0
    """

    def __init__(self, job: Job, *, explain: bool = True) -> None:
        self.job = job
        self.explain = explain
        self.policy = OrderingPolicy(job.ordering, arrival_mode=not job.event_time_mode)
        ordering = job.ordering
        self._late = ordering.late_arrival
        self._ooo = ordering.out_of_order
        self.substreams = job.source.over is not None
        self.partitioned = ordering.partitioned
        punctuation = job.punctuation
        only_cti = punctuation is not None and punctuation.watermark == "cti"
        # The watermark's heuristic terms (SPEC §4), absent when only CTIs move it.
        self._terms = (None, None) if only_cti else (self._ooo, self._late)
        self._generator = (
            CtiGenerator(punctuation) if punctuation is not None and punctuation.generated else None
        )
        self.cti_floor = NEG_INF  # substreams: CTIs without a key punctuate every substream
        self.intervals = job.source.end_time is not None
        self.partitions: dict[Any, PartitionClock] = {}
        self.timelines: dict[Any, Timeline] = {}
        self.arrival = NEG_INF  # the input's arrival clock: max over partitions
        self.job_watermark = NEG_INF
        self.now = NEG_INF
        self._started: int | None = None  # the first observation instant
        self._late_input = LateInput(self._late) if self._late is not None else None
        self.result = Result()
        self.counts = _Counts()
        self._where: Expr | None = job.filter.expression if job.filter is not None else None
        self._having = job.window.having_expression if job.window is not None else None
        self.windows_filtered = 0
        self.sink: Sink = self._make_sink()
        for pid in job.declared_partitions:
            self._partition(pid)

    # ------------------------------------------------------------------ set-up
    def _make_sink(self) -> Sink:
        if self.job.references:  # a join with reference data: released events meet rows
            from sparktide.core.join import ReferenceJoin

            return ReferenceJoin(self.job, self._emit_join, shared_floor=self.substreams)
        if self.job.join is not None:
            from sparktide.core.join import TemporalJoin

            return TemporalJoin(self.job, self._emit_join)
        if self.job.window is not None:
            return WindowOperator(
                self.job,
                self._emit_window,
                shared_floor=self.substreams,
                force=self.force_watermark,
            )
        return OrderedRelease(self._emit_event, shared_floor=self.substreams)

    def _partition(self, pid: Any) -> PartitionClock:
        clock = self.partitions.get(pid)
        if clock is None:
            clock = self.partitions[pid] = PartitionClock(pid)
            if not self.substreams:
                self.timelines[pid] = Timeline(pid, *self._terms)
        return clock

    def _timeline(self, record: InputRecord) -> Timeline:
        if not self.substreams:
            return self.timelines[record.partition]
        timeline = self.timelines.get(record.key)
        if timeline is None:
            timeline = self.timelines[record.key] = Timeline(record.key, *self._terms)
        return timeline

    def _scope(self, record: InputRecord) -> Any:
        if self.substreams:
            return record.key
        if self.partitioned:
            return record.partition
        return None

    # ------------------------------------------------------------------ watermarks
    def _clock_of(self, timeline: Timeline) -> int:
        if self.substreams:
            return self.arrival
        return self.partitions[timeline.key].arrival

    def governing_watermark(self, scope: Any) -> int:
        """The watermark that governs results of ``scope`` right now."""
        if self.substreams:
            timeline = self.timelines.get(scope)
            if timeline is None:
                return self._floor()
            return self._refresh(timeline)
        if self.partitioned:
            return self.timelines[scope].watermark
        return self.job_watermark

    def _floor(self) -> int:
        """Substreams: the watermark every substream has reached (A − L, keyless CTIs)."""
        late = self._terms[1]
        base = NEG_INF if late is None else self.arrival - late
        return max(base, self.cti_floor)

    def _refresh(self, timeline: Timeline) -> int:
        """Recompute ``timeline``'s watermark from its arrival clock (and the substreams'
        floor of keyless CTIs)."""
        watermark = timeline.refresh(self._clock_of(timeline))
        if self.substreams and self.cti_floor > watermark:
            timeline.advance_to(self.cti_floor)
            watermark = self.cti_floor
        return watermark

    def _publish(self, timeline: Timeline) -> None:
        """Tell the sink the watermark of ``timeline``'s scope may have moved."""
        if self.substreams:
            self.sink.advance(timeline.key, timeline.watermark, self.now)
        elif self.partitioned:
            self.sink.advance(timeline.key, timeline.watermark, self.now)
        else:
            self._publish_job()

    def _publish_job(self) -> None:
        merged = min((t.watermark for t in self.timelines.values()), default=NEG_INF)
        if merged > self.job_watermark:
            self.job_watermark = merged
            self.sink.advance(None, merged, self.now)

    def _set_arrival(self, arrival: int) -> None:
        if arrival > self.arrival:
            self.arrival = arrival
            if self.substreams and self._terms[1] is not None:
                self.sink.advance_floor(self._floor(), self.now)

    # ------------------------------------------------------------------ driving
    def observe(self, now: int, records: list[InputRecord]) -> None:
        """One observation instant: idle estimates, then ``records`` (all of processing
        time ``now``, in arrival order), then due timers."""
        if now < self.now:
            raise ValueError("observation instants must not go backwards")
        self.now = now
        if self._started is None:
            self._started = now
        delivering = {r.partition for r in records}
        for pid in delivering:  # a partition delivering for the first time holds the job back
            self._partition(pid)
        moved = []
        for pid, clock in self.partitions.items():
            if pid not in delivering and clock.estimate(now):
                moved.append(clock)
        if moved:
            if self.substreams:
                self._set_arrival(max(c.arrival for c in moved))
            else:
                for clock in moved:
                    self.timelines[clock.pid].refresh(clock.arrival)
                if self.partitioned:
                    for clock in moved:
                        self._publish(self.timelines[clock.pid])
                else:
                    self._publish_job()
        self._import_ctis()
        for record in records:
            self._event(record)
        self._fire_timers(now)

    def _import_ctis(self) -> None:
        """Imported CTIs (SPEC §7): at each observation instant, before its records, the
        partitions of an input with ``import_ctis`` take the watermark of the input they
        import from (the minimum over its partitions), never moving back."""
        for importer, exporter in self.job.imports.items():
            marks = [t.watermark for k, t in self.timelines.items() if input_of(k) == exporter]
            if not marks:
                continue
            mark = min(marks)
            for key, timeline in self.timelines.items():
                if input_of(key) == importer and timeline.advance_to(mark):
                    if self.partitioned:
                        self._publish(timeline)
            if not self.partitioned:
                self._publish_job()

    def _fire_timers(self, now: int) -> None:
        due = self.sink.next_timer()
        while due is not None and due <= now:
            self.sink.fire_timers(now)
            due = self.sink.next_timer()

    def force_watermark(self, scope: Any, instant: int) -> None:
        """Advance the watermark governing ``scope`` to ``instant`` (idle timeout)."""
        if self.substreams:
            timeline = self.timelines[scope]
            if timeline.advance_to(instant):
                self._publish(timeline)
        elif self.partitioned:
            timeline = self.timelines[scope]
            if timeline.advance_to(instant):
                self._publish(timeline)
        else:
            for timeline in self.timelines.values():
                timeline.advance_to(instant)
            self._publish_job()

    def _event(self, record: InputRecord) -> None:
        if record.cti:
            self._punctuation(record)
            return
        counts = self.counts
        pid = record.partition
        counts.add(pid, "input")
        clock = self._partition(pid)
        arrival = record.arrival_time
        assert arrival is not None and record.event_time is not None
        clock.deliver(arrival, self.now)
        self._set_arrival(arrival)
        self.sink.delivered(self._scope(record), self.now)
        timeline = self._timeline(record)
        before = timeline.watermark
        watermark = self._refresh(timeline)
        if watermark > before:
            self._publish(timeline)
        cti = max(timeline.cti, self.cti_floor)  # (keyless CTIs reach every substream)
        newest_before = timeline.newest
        judgement = self.policy.judge(record.event_time, arrival, watermark)
        reasons = judgement.reasons
        for reason in reasons:
            counts.add(pid, reason)
        if "late" in reasons and self._late_input is not None:
            self._late_input.observe(
                self.now,
                partition=pid,
                event_time=record.event_time,
                arrival_time=arrival,
                file=record.file,
                line=record.line,
            )
        verdict = judgement.verdict
        timestamp = judgement.timestamp
        outcome = judgement.outcome
        if timestamp is not None and record.end_time is not None and record.end_time <= timestamp:
            # An interval event whose start was adjusted to its end or beyond (SPEC §7).
            verdict = DROPPED
            outcome = "out_of_order" if "out_of_order" in reasons else "late"
            timestamp = None
        admitted = None
        bounds = None
        if timestamp is not None and record.edge != "end" and self._filtered(record):
            # The filter runs after the policy: the event moved its timeline, then stops.
            reasons, outcome, verdict = (*reasons, "filtered"), "filtered", DROPPED
            timeline.admit(timestamp)
            timestamp = None
            if timeline.refresh(self._clock_of(timeline)) > watermark:
                self._publish(timeline)
        if timestamp is not None and record.edge is not None:
            timeline.admit(timestamp)  # an edge moves its timeline like a point event
            refused = self._edge(record, timestamp, timeline)
            if refused is not None:
                reasons, outcome, timestamp = (*reasons, refused), refused, None
                verdict = DROPPED if refused == "empty_edge" else DEAD_LETTERED
            if self._refresh(timeline) > watermark:
                self._publish(timeline)
        elif timestamp is not None:
            timeline.admit(timestamp)
            admitted = Admitted(record, timestamp, self._scope(record))
            bounds = self.sink.admit(admitted, self.governing_watermark(admitted.scope), self.now)
            if bounds is not None:
                reasons = (*reasons, "window_closed")
                outcome = "window_closed"
                verdict = DEAD_LETTERED if self.job.window.late == "dead_letter" else DROPPED  # type: ignore[union-attr]
                timestamp = None
            if self._refresh(timeline) > watermark:
                self._publish(timeline)
        if self._generator is not None:
            timeline.events += 1
            generated = self._generator.after_event(timeline.events, newest_before, timeline.newest)
            if generated is not None:
                counts.add(pid, "ctis_generated")
                if timeline.punctuate(generated):
                    self._publish(timeline)
        if verdict in (ACCEPTED, ADJUSTED):
            counts.add(pid, "admitted")
            if verdict == ADJUSTED:
                counts.add(pid, "adjusted")
        elif verdict == DROPPED:
            counts.add(pid, f"dropped.{outcome}")
        else:
            counts.add(pid, f"dead_lettered.{outcome}")
            self._dead_letter(record, outcome, None, bounds)
        if not self.explain:
            return
        decision = self._decision(record, watermark)
        if self.job.punctuation is not None:
            decision["cti"] = time_or_none(cti)
        if self.intervals:
            decision["end_time"] = time_or_none(record.end_time)
        if self.job.edges:
            decision["edge"] = record.edge
            decision["edge_id"] = record.edge_id
        decision["timestamp"] = time_or_none(timestamp)
        decision["verdict"] = verdict
        decision["reasons"] = list(reasons)
        if admitted is not None and admitted.windows is not None and bounds is None:
            decision["windows"] = [
                [time_or_none(start), time_or_none(end)] for start, end in admitted.windows
            ]
        self.result.decisions.append(decision)

    def _edge(self, record: InputRecord, timestamp: int, timeline: Timeline) -> str | None:
        """An admitted edge (SPEC §7): a start edge opens its event, an end edge ends it.
        Returns the reason when the edge cannot: ``duplicate_edge`` (a start edge whose id
        is open on its timeline), ``unmatched_edge`` (an end edge whose id is not open:
        its start edge never came, was dropped, filtered or already ended) or
        ``empty_edge`` (an end at or before the start: the event is in no window)."""
        sink = self.sink
        assert isinstance(sink, WindowOperator)
        pair = (timeline.key, record.edge_id)
        start = sink.edge_start(pair)
        scope = self._scope(record)
        if record.edge == "start":
            if start is not None:
                return "duplicate_edge"
            event = Admitted(record, timestamp, scope)
            sink.open_edge(pair, event, self.governing_watermark(scope))
            return None
        if start is None:
            return "unmatched_edge"
        sink.end_edge(pair, timestamp)
        return "empty_edge" if timestamp <= start else None

    def _punctuation(self, record: InputRecord) -> None:
        """An explicit CTI row: it moves its timeline's watermark (never backwards); it is
        not an event. With substreams a CTI without a key punctuates every substream."""
        pid = record.partition
        self.counts.add(pid, "punctuations")
        clock = self._partition(pid)
        arrival = record.arrival_time
        assert arrival is not None and record.event_time is not None
        clock.deliver(arrival, self.now)
        self._set_arrival(arrival)
        instant = record.event_time
        if self.substreams and record.key is None:
            before = self._floor()
            if instant > self.cti_floor:
                self.cti_floor = instant
                self.sink.advance_floor(self._floor(), self.now)
        else:
            self.sink.delivered(self._scope(record), self.now)
            timeline = self._timeline(record)
            old = timeline.watermark
            before = self._refresh(timeline)
            if before > old:
                self._publish(timeline)
            if timeline.punctuate(instant):
                self._publish(timeline)
        if self.explain:
            decision = self._decision(record, before)
            decision["cti"] = time_or_none(instant)
            decision["verdict"] = PUNCTUATION
            self.result.decisions.append(decision)

    def _decision(self, record: InputRecord, watermark: int) -> dict[str, Any]:
        return {
            "type": "decision",
            "seq": record.seq,
            "file": record.file,
            "line": record.line,
            "partition": record.partition,
            "key": jsonable(record.key),
            "event_time": time_or_none(record.event_time),
            "arrival_time": time_or_none(record.arrival_time),
            "processing_time": time_or_none(record.processing_time),
            "timestamp": None,
            "verdict": None,
            "reasons": [],
            "watermark": time_or_none(watermark),
        }

    def _dead_letter(
        self,
        record: InputRecord,
        reason: str | None,
        error: str | None,
        bounds: tuple[int, int] | None,
    ) -> None:
        letter = {
            "type": "dead_letter",
            "seq": record.seq,
            "file": record.file,
            "line": record.line,
            "reason": reason,
            "record": record.original(),
            "error": error,
        }
        if self.job.window is not None:  # windowed jobs always carry the window bounds
            letter["window_start"] = time_or_none(bounds[0]) if bounds else None
            letter["window_end"] = time_or_none(bounds[1]) if bounds else None
        self.result.dead_letters.append(letter)

    def _malformed(self, record: InputRecord) -> None:
        self.counts.malformed += 1
        self._dead_letter(record, "malformed", record.error, None)
        if not self.explain:
            return
        self.result.decisions.append(
            {
                "type": "decision",
                "seq": record.seq,
                "file": record.file,
                "line": record.line,
                "partition": None,
                "key": None,
                "event_time": None,
                "arrival_time": None,
                "processing_time": None,
                "timestamp": None,
                "verdict": DEAD_LETTERED,
                "reasons": ["malformed"],
                "watermark": None,
            }
        )

    def _filtered(self, record: InputRecord) -> bool:
        """Whether the job's ``[filter]`` stops ``record`` (an event the policy admitted)."""
        return self._where is not None and not passes(self._where, record.fields or {})

    # ------------------------------------------------------------------ outputs
    def _emit_event(self, event: Admitted, now: int) -> None:
        fields = event.record.fields or {}
        out: dict[str, Any] = {"type": "event"}
        if self.job.select:
            out.update(_project(self.job, lambda name: fields.get(name)))
            out["timestamp"] = time_or_none(event.timestamp)
            if self.intervals:
                out["end_timestamp"] = time_or_none(event.record.end_time)
            self.result.events.append(out)
            return
        reserved = INTERVAL_RESERVED if self.intervals else EVENT_RESERVED
        for name, value in fields.items():
            out[f"input_{name}" if name in reserved or name == "type" else name] = jsonable(value)
        out["timestamp"] = time_or_none(event.timestamp)
        if self.intervals:
            out["end_timestamp"] = time_or_none(event.record.end_time)
        self.result.events.append(out)

    def _emit_join(self, record: dict[str, Any], now: int) -> None:
        if self.job.select:  # [select] over the match: <input>.<field>, timestamp
            record = {
                "type": "event",
                **_project(self.job, lambda key: _match_value(record, key)),
                "timestamp": record["timestamp"],
            }
        self.result.events.append(record)

    def _emit_window(self, record: dict[str, Any]) -> None:
        if self._having is not None or self.job.select:
            shown = _window_result(self.job, record, self._having)
            if shown is None:
                self.windows_filtered += 1
                return
            record = shown
        self.result.windows.append(record)

    # ------------------------------------------------------------------ whole runs
    def run(
        self,
        records: Iterable[InputRecord],
        *,
        until: int | None = None,
        tick: int | None = None,
        flush: bool = True,
        timers_at_due: bool = True,
    ) -> Result:
        """Process every record, advance to ``until``, optionally flush; return the result.

        Parameters
        ----------
        records
            Input records in input order (``seq``).
        until
            Advance processing time to this instant after the last record, firing timers.
        tick
            Also observe time at every multiple of this duration (idle estimates, timers).
        flush
            Close every open window and release every held event at the end.
        timers_at_due
            Timer due times are observation instants (``simulate``). When False, timers
            fire only at the records' processing times, ``until`` and ticks — as on Spark,
            which observes time once per micro-batch.
        """
        good: list[InputRecord] = []
        for record in records:
            if record.malformed:
                self._malformed(record)
            else:
                good.append(record)
        good.sort(key=lambda r: (r.processing_time, r.arrival_time, r.seq))
        instants = _instants(good, until=until, tick=tick)
        index = 0
        for now in instants:
            # Timers due before this instant fire at their own due time first.
            if timers_at_due:
                self._timers_until(now)
            batch = []
            while index < len(good) and good[index].processing_time == now:
                batch.append(good[index])
                index += 1
            self.observe(now, batch)
        if flush:
            self.flush()
        self.result.decisions.sort(key=lambda d: d["seq"])
        self.result.metrics = self.metrics()
        return self.result

    def _timers_until(self, instant: int) -> None:
        due = self.sink.next_timer()
        while due is not None and due < instant:
            self.observe(max(due, self.now), [])
            due = self.sink.next_timer()

    def flush(self) -> None:
        """End of a finite input: the final punctuation at +infinity."""
        self._flushed_watermark = self.job_watermark_view()
        self._flushed_timelines = {k: t.watermark for k, t in self.timelines.items()}
        for timeline in self.timelines.values():
            timeline.advance_to(POS_INF)
        self.job_watermark = POS_INF
        self.sink.flush(self.now)

    def job_watermark_view(self) -> int:
        """The job's watermark as reported in metrics: the minimum over timelines."""
        if not self.substreams and not self.partitioned:
            return self.job_watermark
        if self.substreams:
            floor = self._floor()
            return min(
                (max(t.watermark, floor) for t in self.timelines.values()),
                default=floor,
            )
        return min((t.watermark for t in self.timelines.values()), default=NEG_INF)

    def metrics(self) -> dict[str, Any]:
        """The ``metrics`` record of SPEC §8 for the run so far."""
        watermark = getattr(self, "_flushed_watermark", None)
        if watermark is None:
            watermark = self.job_watermark_view()
        totals = self.counts.total()
        record: dict[str, Any] = {"type": "metrics"}
        record.update(_summary(totals))
        record["input"] += self.counts.malformed
        if self.counts.malformed:
            record["dead_lettered"]["malformed"] = self.counts.malformed
        record["in_no_window"] = getattr(self.sink, "in_no_window", 0)
        record["windows_emitted"] = len(self.result.windows)
        if self._having is not None:
            record["windows_filtered"] = self.windows_filtered
        record["released"] = len(self.result.events)
        record["held"] = self.sink.held
        record["open_windows"] = self.sink.open_windows()
        if self.job.edges:
            record["open_edges"] = self.sink.open_edges()  # type: ignore[attr-defined]
        record["processing_time"] = time_or_none(self.now)
        record["watermark"] = time_or_none(watermark)
        record["watermark_delay_us"] = (
            self.now - watermark if is_finite(watermark) and is_finite(self.now) else None
        )
        if self.job.window is not None:
            # Substreams: the floor every key's watermark has reached, not the lowest key
            # watermark above: a key seen for the first time starts at the floor.
            governing = self._floor() if self.substreams else watermark
            record["output_watermark"] = time_or_none(output_watermark(self.job.window, governing))
        record["flushed"] = hasattr(self, "_flushed_watermark")
        partitions = []
        for pid, clock in self.partitions.items():
            entry = {"partition": pid, **_summary(self.counts.by_partition.get(pid, Counter()))}
            entry["arrival_clock"] = time_or_none(clock.arrival)
            if not self.substreams:
                before = getattr(self, "_flushed_timelines", {})
                entry["watermark"] = time_or_none(before.get(pid, self.timelines[pid].watermark))
            partitions.append(entry)
        record["partitions"] = partitions
        record["diagnostics"] = self.diagnostics()
        return record

    def diagnostics(self) -> list[dict[str, Any]]:
        """The diagnostics of the run so far (:mod:`sparktide.core.diagnostics`): one
        interval, the whole run."""
        out = []
        late = self._late_input.diagnostic() if self._late_input is not None else None
        if late is not None:
            out.append(late)
        if not self.substreams and not self.partitioned and self._started is not None:
            before = getattr(self, "_flushed_timelines", {})
            views = [
                PartitionView(
                    pid,
                    before.get(pid, self.timelines[pid].watermark),
                    clock.last_processing if clock.seen else None,
                )
                for pid, clock in self.partitions.items()
            ]
            out.extend(
                not_progressing(
                    views,
                    now=self.now,
                    started=self._started,
                    late_arrival=self._late,
                    can_partition=self.job.join is None or bool(self.job.references),
                )
            )
        return out


def _project(job: Job, lookup: Any) -> dict[str, Any]:
    """The ``[select]`` columns of one record (``lookup(key)``: a column's raw value,
    ``key`` as :attr:`sparktide.expr.Ref.key`): a bare column passes its value through,
    anything else is computed."""
    from sparktide.expr import OTHER, Ref

    out: dict[str, Any] = {}
    for projection in job.select:
        expr = projection.parsed
        if isinstance(expr, Ref):
            out[projection.name] = jsonable(lookup(expr.key))
            continue
        value = evaluate(expr, lambda name: value_of(lookup(name)))
        out[projection.name] = None if value is OTHER else value
    return out


def _match_value(record: dict[str, Any], key: str) -> Any:
    """The value a ``[select]`` over a join reads (``key``: ``timestamp``, the match's
    time, or ``<input>.<field>``, a field of that input's record) from the match
    ``record`` (``{left: {...}, right: {...}, "timestamp": ...}``)."""
    if key == "timestamp":
        return record["timestamp"]
    side, name = key.split(".", 1)
    fields = record[side]  # (null: a left join's event that met no reference row)
    return fields.get(name) if fields is not None else None


def _window_result(job: Job, record: dict[str, Any], having: Expr | None) -> dict[str, Any] | None:
    """A window record after ``having`` (``None`` when the window fails it) and
    ``[select]`` (``window_start``, ``window_end``, the selected columns, ``emitted_at``)."""
    if having is not None and evaluate(having, lambda name: value_of(record.get(name))) is not True:
        return None
    if not job.select:
        return record
    out: dict[str, Any] = {
        "type": "window",
        "window_start": record["window_start"],
        "window_end": record["window_end"],
    }
    out.update(_project(job, record.get))
    out["emitted_at"] = record.get("emitted_at")
    return out


def _summary(counter: Counter[str]) -> dict[str, Any]:
    dropped = {k.split(".", 1)[1]: v for k, v in counter.items() if k.startswith("dropped.")}
    dead = {k.split(".", 1)[1]: v for k, v in counter.items() if k.startswith("dead_lettered.")}
    return {
        "input": counter["input"],
        "admitted": counter["admitted"],
        "early": counter["early"],
        "late": counter["late"],
        "out_of_order": counter["out_of_order"],
        "adjusted": counter["adjusted"],
        "dropped": dict(sorted(dropped.items())),
        "dead_lettered": dict(sorted(dead.items())),
        "punctuations": counter["punctuations"],
        "ctis_generated": counter["ctis_generated"],
    }


def _instants(records: list[InputRecord], *, until: int | None, tick: int | None) -> list[int]:
    """Observation instants: record processing times, ``until``, and multiples of ``tick``."""
    instants: set[int] = {r.processing_time for r in records}  # type: ignore[misc]
    if until is not None and (not instants or until >= max(instants)):
        instants.add(until)
    if tick is not None and instants:
        first, last = min(instants), max(instants)
        t = first - (first % tick) + tick  # floor modulo: correct before 1970 too
        while t <= last:
            instants.add(t)
            t += tick
    return sorted(instants)


def simulate(
    job: Job,
    records: Iterable[InputRecord] | None = None,
    *,
    until: int | None = None,
    tick: int | None = None,
    flush: bool = True,
    timers_at_due: bool = True,
    explain: bool = True,
) -> Result:
    """Run ``job`` through the reference engine.

    Parameters
    ----------
    job
        The job.
    records
        Input records; read from ``job.source`` when omitted.
    until, tick, flush, timers_at_due
        See :meth:`ReferenceEngine.run`.
    explain
        Keep the ``decision`` records (see :class:`ReferenceEngine`).
    """
    if records is None:
        from sparktide.reader import job_records

        records = job_records(job)
    return ReferenceEngine(job, explain=explain).run(
        records, until=until, tick=tick, flush=flush, timers_at_due=timers_at_due
    )
