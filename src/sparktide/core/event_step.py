"""One event's way through the reference engine (semantics §3, §6, §7), step by step.

1. *deliver*: the event's partition clock and the input's arrival clock take its arrival
   time; its timeline's watermark is refreshed (and published if it moved);
2. *judge*: the ordering policy's verdict against that watermark (early, late,
   out of order); an interval event whose start was adjusted to its end is dropped;
3. *expand*: with ``[apply]``, an admitted event becomes one event per element or
   property (:mod:`sparktide.core.apply`), in a window over a join with reference data
   one per table row it meets (:mod:`sparktide.core.lookup`); one that becomes none
   moved its timeline, then stops (``no_elements``, ``no_match``);
4. *filter*: an admitted event (with ``[apply]``: each event it became) the job's
   ``[filter]`` refuses moved its timeline, then stops; with ``[apply]`` the event stops
   (``filtered``) when the filter refuses all it became;
5. *place*: an edge opens or ends its event; any other admitted event (each event it
   became) goes to the sink (ordered release, windows or a join), which may find all its
   windows closed;
6. *generate*: the generator may punctuate the timeline after the event (generated CTIs).

The outcome is a :class:`Case`: the verdict, the timestamp, every reason and the one
that decided, and what the sink made of the event.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sparktide.core.apply import expand
from sparktide.core.clocks import Clocks
from sparktide.core.counts import Counts
from sparktide.core.diagnostics import LateInput
from sparktide.core.lookup import ReferenceTable, looked_up
from sparktide.core.outputs import event_input_fields, with_time
from sparktide.core.policy import DEAD_LETTERED, DROPPED, OrderingPolicy
from sparktide.core.punctuation import CtiGenerator
from sparktide.core.records import InputRecord
from sparktide.core.sink import Admitted
from sparktide.core.watermark import Timeline
from sparktide.core.windows import WindowOperator
from sparktide.expr import EVENT_INPUT, passes, ref_nodes
from sparktide.job import Job

__all__ = ["Case", "EventStep"]


@dataclass(slots=True)
class Case:
    """What happens to one event.

    Attributes
    ----------
    watermark
        Its timeline's watermark when it was judged.
    cti
        Its timeline's largest CTI when it was judged.
    verdict
        ``accepted``, ``adjusted``, ``dropped`` or ``dead_lettered``.
    timestamp
        Its system timestamp while it is admitted, else ``None``.
    reasons
        Every reason that applied.
    outcome
        For a dropped or dead-lettered event, the reason that decided it.
    admitted
        The event as handed to the sink, if it was.
    bounds
        The last window it would have joined when all were closed, else ``None``.
    """

    watermark: int
    cti: int
    verdict: str
    timestamp: int | None
    reasons: tuple[str, ...]
    outcome: str | None
    admitted: Admitted | None = None
    bounds: tuple[int, int] | None = None

    def refuse(self, reason: str, verdict: str) -> None:
        """Stop the event for ``reason``: no timestamp; ``verdict`` decides what follows."""
        self.reasons = (*self.reasons, reason)
        self.outcome = reason
        self.verdict = verdict
        self.timestamp = None


class EventStep:
    """Takes one event through the steps of the module docstring.

    Parameters
    ----------
    job
        The job.
    clocks
        The run's clocks (their sink attached).
    counts
        The run's counters, per partition.
    """

    def __init__(self, job: Job, clocks: Clocks, counts: Counts) -> None:
        self.job = job
        self.clocks = clocks
        self.counts = counts
        arrival_mode = not job.event_time_mode
        self.policy = OrderingPolicy(job.ordering, arrival_mode=arrival_mode)
        lates = [job.ordering.late_arrival]
        lates += [p.ordering.late_arrival for p in job.policies.values()]
        late = next((bound for bound in lates if bound is not None), None)
        self.late_input: LateInput | None = LateInput(late) if late is not None else None
        # Each input's own policy and CTI generator (semantics §7.8), by input name.
        self.policies = {
            name: OrderingPolicy(p.ordering, arrival_mode=arrival_mode)
            for name, p in job.policies.items()
        }
        self.generators = {
            name: CtiGenerator(p.punctuation)
            for name, p in job.policies.items()
            if p.punctuation is not None and p.punctuation.generated
        }
        self.where = job.filter.expression if job.filter is not None else None
        # With analytic columns the filter reads them, so it runs at release (semantics §11.19).
        self.admission_where = None if job.analytics else self.where
        # Each input's own where, before [filter] (semantics §11.20), by input name.
        self.input_wheres = job.input_conditions
        # Whether [filter] or [apply] reads System.Input(), the union input (§11.22).
        self.reads_input = self.where is not None and EVENT_INPUT in ref_nodes(self.where)
        apply = job.apply
        self.apply_reads_input = apply is not None and EVENT_INPUT in ref_nodes(apply.expression)
        # A window over a join with reference data: the table events meet (§11.23).
        self.table = ReferenceTable(job) if job.looks_up_in_window else None
        #: Why an admitted event that becomes no event is dropped.
        self.expanded_none = "no_match" if self.table is not None else "no_elements"

    def run(self, record: InputRecord) -> Case:
        """Deliver, judge, filter, place and punctuate the event ``record``."""
        clocks = self.clocks
        clocks.deliver(record)
        timeline, watermark = clocks.touch(record)
        newest_before = timeline.newest
        cti = max(timeline.cti, clocks.cti_floor)  # (keyless CTIs reach every substream)
        case = self._judge(record, watermark, cti)
        events = self._expand(record, case.timestamp) if case.timestamp is not None else [record]
        if not events:
            self._filter_out(case, timeline, self.expanded_none)
        elif case.timestamp is not None and record.edge != "end":
            timestamp = case.timestamp
            events = [event for event in events if not self._filtered(event, timestamp)]
            if not events:
                self._filter_out(case, timeline)
        if case.timestamp is not None and record.edge is not None:
            self._place_edge(record, case, timeline)
        elif case.timestamp is not None:
            self._admit(events, case, timeline)
        if self.generators:
            self._generate(record, timeline, newest_before)
        return case

    def _judge(self, record: InputRecord, watermark: int, cti: int) -> Case:
        """The ordering policy's verdict (counting its reasons; noting late input)."""
        arrival: int = record.arrival_time  # type: ignore[assignment]
        event_time: int = record.event_time  # type: ignore[assignment]
        policy = self.policies[self.clocks.input_name(record.partition)]
        judgement = policy.judge(event_time, arrival, watermark)
        reasons = judgement.reasons
        for reason in reasons:
            self.counts.add(record.partition, reason)
        if "late" in reasons and self.late_input is not None:
            self.late_input.observe(
                self.clocks.now,
                partition=record.partition,
                event_time=event_time,
                arrival_time=arrival,
                file=record.file,
                line=record.line,
                late_arrival=policy.late,
            )
        case = Case(
            watermark, cti, judgement.verdict, judgement.timestamp, reasons, judgement.outcome
        )
        timestamp = case.timestamp
        if timestamp is not None and record.end_time is not None and record.end_time <= timestamp:
            # An interval event whose start was adjusted to its end or beyond (semantics §7).
            case.verdict = DROPPED
            case.outcome = "out_of_order" if "out_of_order" in reasons else "late"
            case.timestamp = None
        return case

    def _expand(self, record: InputRecord, timestamp: int) -> list[InputRecord]:
        """The events an admitted ``record`` (at ``timestamp``) becomes: itself, or with
        ``[apply]`` one per element or property, in a window over a join with reference
        data one per row it meets (the same times, partition and place in the input)."""
        apply = self.job.apply
        fields = record.fields or {}
        if self.table is not None:
            return [replace(record, fields=own) for own in looked_up(self.table, fields, timestamp)]
        if apply is None:
            return [record]
        seen = event_input_fields(fields, record.partition) if self.apply_reads_input else None
        return [replace(record, fields=own) for own in expand(apply, fields, seen)]

    def _filtered(self, record: InputRecord, timestamp: int) -> bool:
        """Whether its input's ``where`` or the job's ``[filter]`` stops ``record`` (an
        event the policy admitted at the system ``timestamp``, which
        ``System.Timestamp()`` reads)."""
        where = self.admission_where
        if not self.input_wheres and where is None:
            return False
        fields = with_time(record.fields or {}, timestamp)
        if self.reads_input:
            fields = event_input_fields(fields, record.partition)
        if self.input_where_stops(record, fields):
            return True
        return where is not None and not passes(where, fields)

    def input_where_stops(self, record: InputRecord, fields: dict[str, Any]) -> bool:
        """Whether its input's own ``where`` (semantics §11.20) stops ``record``, read
        over ``fields`` (its fields and its system timestamp)."""
        own = self.input_wheres.get(self.clocks.input_name(record.partition))
        return own is not None and not passes(own, fields)

    def _filter_out(self, case: Case, timeline: Timeline, reason: str = "filtered") -> None:
        """The filter (and ``[apply]``) run after the policy: the event moved its
        timeline, then stops for ``reason``."""
        timeline.admit(case.timestamp)  # type: ignore[arg-type]
        case.refuse(reason, DROPPED)
        if self.clocks.refresh_without_floor(timeline) > case.watermark:
            self.clocks.publish(timeline)

    def _place_edge(self, record: InputRecord, case: Case, timeline: Timeline) -> None:
        """An admitted edge moves its timeline like a point event, then opens or ends its
        event (:meth:`_edge`)."""
        timestamp: int = case.timestamp  # type: ignore[assignment]
        timeline.admit(timestamp)
        refused = self._edge(record, timestamp, timeline)
        if refused is not None:
            case.refuse(refused, DROPPED if refused == "empty_edge" else DEAD_LETTERED)
        self.clocks.settle(timeline, case.watermark)

    def _edge(self, record: InputRecord, timestamp: int, timeline: Timeline) -> str | None:
        """An admitted edge (semantics §7): a start edge opens its event, an end edge ends it.
        Returns the reason when the edge cannot: ``duplicate_edge`` (a start edge whose id
        is open on its timeline), ``unmatched_edge`` (an end edge whose id is not open:
        its start edge never came, was dropped, filtered or already ended) or
        ``empty_edge`` (an end at or before the start: the event is in no window)."""
        sink = self.clocks.sink
        assert isinstance(sink, WindowOperator)
        pair = (timeline.key, record.edge_id)
        start = sink.edge_start(pair)
        scope = self.clocks.scope(record)
        if record.edge == "start":
            if start is not None:
                return "duplicate_edge"
            event = Admitted(record, timestamp, scope)
            sink.open_edge(pair, event, self.clocks.governing_watermark(scope))
            return None
        if start is None:
            return "unmatched_edge"
        sink.end_edge(pair, timestamp)
        return "empty_edge" if timestamp <= start else None

    def _admit(self, events: list[InputRecord], case: Case, timeline: Timeline) -> None:
        """Hand the admitted event (with ``[apply]``, the events it became, in order) to
        the sink; all its windows may be closed already (then for every one of them: they
        share its timestamp)."""
        clocks = self.clocks
        timestamp: int = case.timestamp  # type: ignore[assignment]
        timeline.admit(timestamp)
        bounds = None
        for part, record in enumerate(events):
            admitted = Admitted(record, timestamp, clocks.scope(record), part)
            case.admitted = case.admitted or admitted
            watermark = clocks.governing_watermark(admitted.scope)
            bounds = clocks.sink.admit(admitted, watermark, clocks.now)
            if bounds is not None:
                break
        if bounds is not None:
            late = self.job.window.late  # type: ignore[union-attr]
            case.refuse("window_closed", DEAD_LETTERED if late == "dead_letter" else DROPPED)
            case.bounds = bounds
        clocks.settle(timeline, case.watermark)

    def _generate(self, record: InputRecord, timeline: Timeline, newest_before: int) -> None:
        """Generated CTIs: the generator may punctuate the timeline after this event. An
        end edge counts for neither N nor T (semantics §7.3; StreamInsight counts start
        edges only)."""
        generator = self.generators.get(self.clocks.input_name(record.partition))
        if record.edge == "end" or generator is None:
            return
        timeline.events += 1
        generated = generator.after_event(timeline.events, newest_before, timeline.newest)
        if generated is not None:
            self.counts.add(record.partition, "ctis_generated")
            if timeline.punctuate(generated):
                self.clocks.publish(timeline)
