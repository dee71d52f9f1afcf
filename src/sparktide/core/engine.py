"""The reference engine: one event at a time, obviously correct (semantics §1–4, 6, 8).

The engine observes time at *observation instants* (the processing time of each record,
timers, ``--until`` and ``--tick``). At each instant, in this order:

1. every partition that delivers nothing at this instant gets its idle estimate;
2. the instant's records are judged in arrival order ``(arrival time, seq)``;
3. timers due at or before the instant fire (events before timers at equal times).

Every watermark change is published to the sink at once, so results never depend on how
records are grouped into instants (only on the processing times themselves).

The engine strings together small parts: :mod:`~sparktide.core.clocks` (arrival clocks,
timelines, watermarks), :mod:`~sparktide.core.event_step` (one event's way: policy,
filter, edges, sink, generated CTIs), the sinks (:mod:`~sparktide.core.release`,
:mod:`~sparktide.core.windows`, :mod:`~sparktide.core.join`), and the records it writes
(:mod:`~sparktide.core.result`, :mod:`~sparktide.core.outputs`,
:mod:`~sparktide.core.metrics`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparktide.core.analytic import AnalyticColumns
from sparktide.core.clocks import Clocks
from sparktide.core.counts import Counts
from sparktide.core.event_step import Case, EventStep
from sparktide.core.instants import observation_instants
from sparktide.core.matching import PatternMatches
from sparktide.core.metrics import metrics_record, run_diagnostics
from sparktide.core.namedcolumns import ColumnPresence
from sparktide.core.outputs import (
    event_input_fields,
    event_record,
    join_record,
    window_result,
    with_time,
)
from sparktide.core.policy import ACCEPTED, ADJUSTED, DROPPED, SKIPPED
from sparktide.core.records import InputRecord, time_or_none
from sparktide.core.release import OrderedRelease, written_from_start
from sparktide.core.result import (
    PUNCTUATION,
    Result,
    dead_letter,
    decision,
    event_decision,
    malformed_decision,
)
from sparktide.core.sink import Admitted, Sink
from sparktide.core.watermark import PartitionClock, Timeline
from sparktide.core.windows import WindowOperator
from sparktide.core.windowtable import WindowTable
from sparktide.errors import ConfigError
from sparktide.expr import EVENT_INPUT, passes, ref_nodes
from sparktide.job import Job
from sparktide.job.rules import check_event_input
from sparktide.job.start import LAST_STOPPED, NOW, output_start_option, read_point
from sparktide.time import parse_instant

__all__ = ["ReferenceEngine", "Result", "simulate"]


class ReferenceEngine:
    """Runs a job over input records, event at a time.

    Parameters
    ----------
    job
        The validated job.
    explain
        Keep one ``decision`` record per input record (``--explain``). Without it the
        engine skips building them.
    output_start
        The output start time (semantics §12): an instant (microseconds or its text) or
        ``"now"`` (the first observation instant). Events that arrived before its read
        point are skipped, and results before it are not written. ``"last-stopped"`` is
        refused: the reference engine keeps no checkpoint of a previous run.

    Examples
    --------
    >>> from sparktide.job import Job, Source
    >>> engine = ReferenceEngine(Job(Source(path="-", timestamp_by="t")))
    >>> result = engine.run([])
    >>> result.metrics["input"]
    0
    """

    def __init__(
        self, job: Job, *, explain: bool = True, output_start: int | str | None = None
    ) -> None:
        check_event_input(job)  # (a job built without Job.from_dict)
        self.job = job
        self.explain = explain
        self.clocks = Clocks(job)
        self.substreams = self.clocks.substreams
        self.intervals = job.source.intervals
        self.partitioned = self.clocks.partitioned
        self.started: int | None = None  # the first observation instant
        self.result = Result()
        self.counts = Counts()
        #: Which named columns the input records hold (``missing_column``)
        self.presence = ColumnPresence(job)
        self.having = job.window.having_expression if job.window is not None else None
        self.window_table = WindowTable(job) if job.window_meets_table else None
        self.windows_filtered = 0
        self.events_filtered = 0  # stopped by [filter] at release (analytic columns)
        self.analytics = AnalyticColumns(job) if job.analytics else None
        #: [match]'s partitions (semantics §11.25)
        self.matches = PatternMatches(job, self._emit_match) if job.match else None
        self.flushed_watermark: int | None = None  # the job's watermark before a flush
        self.flushed_timelines: dict[Any, int] = {}  # ... and each timeline's
        self.sink: Sink = self._make_sink()
        self.clocks.sink = self.sink
        self.step = EventStep(job, self.clocks, self.counts)
        self.policy = self.step.policy
        #: Whether the analytic columns, [match] or [filter] read System.Input() (§11.22)
        read = [e for a in job.analytics for _, e in a.keyed_expressions()]
        read += [e for _, e in job.match.expressions()] if job.match is not None else []
        self.analytic_input = self.step.reads_input or any(
            EVENT_INPUT in ref_nodes(e) for e in read
        )
        for pid in job.declared_partitions:
            self.clocks.partition(pid)
        self._start_option = output_start_option(output_start)
        if self._start_option == LAST_STOPPED:
            raise ConfigError(
                "output_start_time",
                "'last-stopped' needs a previous run's checkpoint; simulate keeps none "
                "(give the time instead)",
            )
        #: The output start time (semantics §12), once known (``now``: the first instant)
        self.output_start: int | None = None
        #: The arrival time before which events are skipped (``None``: read everything)
        self.read_point: int | None = None
        if isinstance(self._start_option, int):
            self._begin_output(self._start_option)

    def _begin_output(self, now: int) -> None:
        """The first observation instant: the output start time and its read point."""
        option = self._start_option
        if option is None or self.output_start is not None:
            return
        start: int = now if option == NOW else option  # type: ignore[assignment]
        self.output_start = start
        self.read_point = read_point(self.job, start)
        for policy in (self.policy, *self.step.policies.values()):  # (each input's too)
            policy.read_point = self.read_point

    def _before_start(self, timestamp: int | str | None) -> bool:
        """Whether a result at ``timestamp`` (microseconds or its text) comes before the
        output start time, and so is not written (:func:`written_from_start`)."""
        if timestamp is None:
            return False
        if isinstance(timestamp, str):
            timestamp = parse_instant(timestamp)
        return not written_from_start(timestamp, self.output_start)

    def _make_sink(self) -> Sink:
        if self.job.references_joined and self.job.window is None:  # released events meet rows
            from sparktide.core.join import ReferenceJoin

            return ReferenceJoin(self.job, self._emit_join, shared_floor=self.substreams)
        if self.job.join is not None and self.job.window is None:
            from sparktide.core.join import TemporalJoin

            return TemporalJoin(self.job, self._emit_join)
        if self.job.joins_windows:
            from sparktide.core.windowjoin import WindowJoin

            return WindowJoin(self.job, self._emit_join)
        if self.job.windows_matches:
            from sparktide.core.joinwindow import JoinedWindows

            return JoinedWindows(self.job, self._emit_window)
        if self.job.window is not None:
            return WindowOperator(
                self.job,
                self._emit_window,
                shared_floor=self.substreams,
                force=self.force_watermark,
            )
        strict = self.job.punctuation is not None  # CTIs commit strictly before them (§7.1)
        if self.matches is not None:
            return OrderedRelease(
                self._release_match,
                shared_floor=self.substreams,
                strict=strict,
                on_watermark=self.matches.advance,
            )
        if self.analytics is not None:
            return OrderedRelease(
                self._emit_analytic,
                shared_floor=self.substreams,
                strict=strict,
                on_watermark=self.analytics.evict_at,
            )
        return OrderedRelease(self._emit_event, shared_floor=self.substreams, strict=strict)

    # ------------------------------------------------------------------ the clocks' state
    @property
    def now(self) -> int:
        """The current observation instant."""
        return self.clocks.now

    @property
    def partitions(self) -> dict[Any, PartitionClock]:
        """The arrival clock of every partition seen or declared."""
        return self.clocks.partitions

    @property
    def timelines(self) -> dict[Any, Timeline]:
        """The timelines, by partition id (or by key, with substreams)."""
        return self.clocks.timelines

    @property
    def arrival(self) -> int:
        """The input's arrival clock: the maximum over its partitions."""
        return self.clocks.arrival

    @property
    def job_watermark(self) -> int:
        """The merged watermark (the minimum over the timelines)."""
        return self.clocks.job_watermark

    @property
    def cti_floor(self) -> int:
        """Substreams: the largest CTI that named no key."""
        return self.clocks.cti_floor

    def governing_watermark(self, scope: Any) -> int:
        """The watermark that governs results of ``scope`` right now."""
        return self.clocks.governing_watermark(scope)

    def force_watermark(self, scope: Any, instant: int) -> None:
        """Advance the watermark governing ``scope`` to ``instant`` (idle timeout)."""
        self.clocks.force_watermark(scope, instant)

    def _floor(self) -> int:
        """Substreams: the watermark every substream has reached (A − L, keyless CTIs)."""
        return self.clocks.floor()

    def job_watermark_view(self) -> int:
        """The job's watermark as reported in metrics: the minimum over timelines."""
        return self.clocks.watermark_view()

    # ------------------------------------------------------------------ driving
    def observe(self, now: int, records: list[InputRecord]) -> None:
        """One observation instant: idle estimates, then ``records`` (all of processing
        time ``now``, in arrival order), then due timers."""
        clocks = self.clocks
        if now < clocks.now:
            raise ValueError("observation instants must not go backwards")
        clocks.now = now
        if self.started is None:
            self.started = now
            self._begin_output(now)
        delivering = {r.partition for r in records}
        for pid in delivering:  # a partition delivering for the first time holds the job back
            clocks.partition(pid)
        clocks.estimate_idle(now, delivering)
        clocks.import_ctis()
        for record in records:
            self._event(record)
        self._fire_timers(now)

    def _fire_timers(self, now: int) -> None:
        due = self.sink.next_timer()
        while due is not None and due <= now:
            self.sink.fire_timers(now)
            due = self.sink.next_timer()

    def _event(self, record: InputRecord) -> None:
        if record.cti:
            self._punctuation(record)
            return
        case = self.step.run(record)
        if case.verdict == SKIPPED:  # not read: counted apart, by its reason (§12.2)
            if self.explain:
                self.result.decisions.append(event_decision(self.job, record, case))
            return
        self.counts.add(record.partition, "input")
        self.presence.column_present(record.fields, event=True)
        self._account(record, case)
        if self.explain:
            self.result.decisions.append(event_decision(self.job, record, case))

    def _account(self, record: InputRecord, case: Case) -> None:
        """Count the event's verdict; dead-letter it if that is the verdict."""
        pid = record.partition
        if case.verdict in (ACCEPTED, ADJUSTED):
            self.counts.add(pid, "admitted")
            if case.verdict == ADJUSTED:
                self.counts.add(pid, "adjusted")
        elif case.verdict == DROPPED:
            self.counts.add(pid, f"dropped.{case.outcome}")
        else:
            self.counts.add(pid, f"dead_lettered.{case.outcome}")
            self.result.dead_letters.append(
                dead_letter(self.job, record, case.outcome, None, case.bounds)
            )

    def _punctuation(self, record: InputRecord) -> None:
        """An explicit CTI row (:meth:`Clocks.punctuate`): not an event."""
        self.counts.add(record.partition, "punctuations")
        before = self.clocks.punctuate(record)
        if self.explain:
            out = decision(record, before)
            out["cti"] = time_or_none(record.event_time)
            out["verdict"] = PUNCTUATION
            self.result.decisions.append(out)

    def _malformed(self, record: InputRecord) -> None:
        self.counts.malformed += 1
        self.presence.column_present(record.fields, event=False)
        self.result.dead_letters.append(
            dead_letter(self.job, record, "malformed", record.error, None)
        )
        if self.explain:
            self.result.decisions.append(malformed_decision(record))

    # ------------------------------------------------------------------ outputs
    def _emit_event(self, event: Admitted, now: int) -> None:
        if self._before_start(event.timestamp):
            return
        self.result.events.append(event_record(self.job, event))

    def _emit_analytic(self, event: Admitted, now: int) -> None:
        """A released event of a job with analytic columns: the columns, then
        ``[filter]`` (which reads them; semantics §11.19), then its record."""
        assert self.analytics is not None
        fields = event.record.fields or {}
        if self.analytic_input:
            fields = event_input_fields(fields, event.record.partition)
        values = self.analytics.values(event.scope, event.timestamp, fields)
        seen = with_time({**fields, **values}, event.timestamp)
        if self.step.where is not None and not passes(self.step.where, seen):
            self.events_filtered += 1
            return
        if self._before_start(event.timestamp):
            return
        self.result.events.append(event_record(self.job, event, values))

    def _release_match(self, event: Admitted, now: int) -> None:
        """A released event of a job with ``[match]``: a row of its partition."""
        assert self.matches is not None
        fields = event.record.fields or {}
        if self.analytic_input:
            fields = event_input_fields(fields, event.record.partition)
        self.matches.release(event.scope, event.timestamp, fields)

    def _emit_match(self, record: dict[str, Any]) -> None:
        if self._before_start(record[self.job.event_fields["timestamp"]]):
            return
        self.result.events.append(record)

    def _emit_join(self, record: dict[str, Any], now: int) -> None:
        if self._before_start(record["timestamp"]):
            return
        self.result.events.append(join_record(self.job, record))

    def _emit_window(self, record: dict[str, Any]) -> None:
        if self._before_start(record[self.job.window_fields["window_end"]]):
            return
        if self.window_table is not None:  # (its records meet reference data, §13.5)
            if window_result(self.job, record, self.having, projected=False) is None:
                self.windows_filtered += 1
                return
            self.result.windows += self.window_table.windows_met(record)
            return
        if self.having is not None or self.job.select:
            shown = window_result(self.job, record, self.having)
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
        times: set[int] = {r.processing_time for r in good}  # type: ignore[misc]
        index = 0
        for now in observation_instants(times, until=until, tick=tick):
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
        self.flushed_watermark = self.job_watermark_view()
        self.flushed_timelines = {k: t.watermark for k, t in self.timelines.items()}
        self.clocks.flush()
        self.sink.flush(self.now)
        if self.matches is not None:
            self.matches.finish()

    def metrics(self) -> dict[str, Any]:
        """The ``metrics`` record of semantics §8 for the run so far."""
        return metrics_record(self)

    def diagnostics(self) -> list[dict[str, Any]]:
        """The diagnostics of the run so far (:mod:`sparktide.core.diagnostics`): one
        interval, the whole run."""
        return run_diagnostics(self)


def simulate(
    job: Job,
    records: Iterable[InputRecord] | None = None,
    *,
    until: int | None = None,
    tick: int | None = None,
    flush: bool = True,
    timers_at_due: bool = True,
    explain: bool = True,
    output_start: int | str | None = None,
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
    output_start
        The output start time (semantics §12; see :class:`ReferenceEngine`).
    """
    if records is None:
        from sparktide.reader import job_records

        records = job_records(job)
    return ReferenceEngine(job, explain=explain, output_start=output_start).run(
        records, until=until, tick=tick, flush=flush, timers_at_due=timers_at_due
    )
