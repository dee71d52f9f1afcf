"""Properties of the reference engine's ordering stage (semantics §2–4, §8), with Hypothesis.

A strategy generates disorderly streams: 1–4 partitions (optionally declared with
``partitions`` larger than used), optional substreams over 1–6 keys, arrival times rising
by random gaps (each partition lagging the wall clock by its own constant), event times
= arrival + noise with runs of heavy disorder, far-late and far-early events and exact
boundary cases, random policies (L, O, E each possibly ``none``; action; every
``on_out_of_order``; partitioned or merged), and optional processing times: none (the
arrival time), jitter, or micro-batches. Processing times never reorder a partition's
own arrival order (semantics §2: inside a partition events are judged in arrival order).

Besides the properties, an independent model of semantics §3–4 (``model``) recomputes every
decision, including its watermark, and the final watermarks.

The last section pins down, with minimal reproductions, where the engine and docs/semantics.md
disagree (``xfail(strict=True)``: they start passing, and must then be un-marked, when the
engine or semantics is changed).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from sparktide.core.engine import Result, simulate
from sparktide.core.instants import NEG_INF
from sparktide.core.records import InputRecord
from sparktide.job import Job, Ordering, Source
from sparktide.time import MILLISECOND, MINUTE, SECOND, format_instant, parse_instant

BASE = parse_instant("2026-03-01T09:00:00Z")
NEVER_SEEN_LAG = 5 * SECOND  # semantics §4: a never-seen partition is estimated at t - 5 s

LATES = [None, 0, SECOND, 5 * SECOND, 20 * SECOND, MINUTE]
OUT_OF_ORDERS = [None, 0, SECOND, 3 * SECOND, 10 * SECOND]
EARLIES = [None, 0, 2 * SECOND, MINUTE, 5 * MINUTE]
GAPS = [0, 0, 1, MILLISECOND, 100 * MILLISECOND, SECOND, 2 * SECOND, 7 * SECOND, 30 * SECOND]
LAGS = [0, 0, SECOND, 4 * SECOND, 30 * SECOND]
JITTERS = [0, 0, 300 * MILLISECOND, 2 * SECOND, 5 * SECOND]
KINDS = ["near"] * 4 + ["disorder"] * 2 + ["late", "early", "edge"]

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
FEW = settings(SETTINGS, max_examples=120)


# ============================================================================ scenarios
@dataclass
class Event:
    """One generated input record (times in integer microseconds)."""

    n: int  # stable identity, also in the record's fields
    partition: int
    key: Any
    event_time: int
    arrival: int
    processing: int | None = None


@dataclass
class Scenario:
    job: Job
    events: list[Event]
    partitions_used: int
    notes: list[str] = field(default_factory=list)

    @property
    def source(self) -> Source:
        return self.job.source

    @property
    def ordering(self) -> Ordering:
        return self.job.ordering

    @property
    def substreams(self) -> bool:
        return self.source.over is not None

    @property
    def ooo_action(self) -> str:
        return self.ordering.out_of_order_action

    def records(self) -> list[InputRecord]:
        """Input records in input order; ``seq`` is the position in ``events``."""
        out = []
        for seq, e in enumerate(self.events):
            fields = {"n": e.n, "p": e.partition, "k": e.key}
            out.append(
                InputRecord(
                    seq,
                    fields,
                    partition=e.partition,
                    key=e.key if self.substreams else None,
                    event_time=e.event_time if self.job.event_time_mode else e.arrival,
                    arrival_time=e.arrival,
                    processing_time=e.processing if self.source.processing_time else e.arrival,
                )
            )
        return out

    def run(self, *, flush: bool = True) -> Result:
        return simulate(self.job, self.records(), flush=flush)

    def describe(self) -> str:
        o = self.ordering
        lines = [
            f"source: {self.source}",
            f"ordering: E={_d(o.early_arrival)} L={_d(o.late_arrival)} O={_d(o.out_of_order)} "
            f"action={o.action} on_out_of_order={o.on_out_of_order} "
            f"partitioned={o.partitioned}",
            "seq  n  p  key  event_time                 arrival                    processing",
        ]
        for seq, e in enumerate(self.events):
            lines.append(
                f"{seq:3d} {e.n:2d} {e.partition:2d} {e.key!s:>4}  {_t(e.event_time):26} "
                f"{_t(e.arrival):26} {_t(e.processing) if e.processing is not None else '-'}"
            )
        return "\n".join(lines + self.notes)

    def __repr__(self) -> str:
        return f"<Scenario of {len(self.events)} events; see the note>"


def _d(value: int | None) -> str:
    return "none" if value is None else f"{value / SECOND:g}s"


def _t(value: int | None) -> str:
    return "-inf" if value is None or value <= NEG_INF else str(format_instant(value))


def _noise(draw: st.DrawFn, kind: str, late: int | None, early: int | None, ooo: int | None) -> int:
    if kind == "near":
        return draw(st.integers(-8_000, 2_000)) * MILLISECOND
    if kind == "disorder":
        return draw(st.integers(-40_000, 5_000)) * MILLISECOND
    if kind == "late":  # far behind its arrival
        return -(late or 0) - draw(st.integers(1, 600_000)) * MILLISECOND
    if kind == "early":  # far ahead of its arrival
        return (early or 0) + draw(st.integers(1, 1_200_000)) * MILLISECOND
    edges = [0, -(late or 0), -(late or 0) - 1, early or 0, (early or 0) + 1, -(ooo or 0)]
    return draw(st.sampled_from(edges))


@st.composite
def scenarios(
    draw: st.DrawFn,
    *,
    substreams: bool | None = None,
    single_partition: bool = False,
    processing: str | None = None,
    event_time_mode: bool | None = None,
    max_events: int = 40,
) -> Scenario:
    """A job and a disorderly input for it (see the module docstring)."""
    late = draw(st.sampled_from(LATES))
    ooo = draw(st.sampled_from(OUT_OF_ORDERS))
    early = draw(st.sampled_from(EARLIES))
    action = draw(st.sampled_from(["adjust", "drop"]))
    on_ooo = draw(st.sampled_from([None, "adjust", "drop", "dead_letter", "accept"]))
    if event_time_mode is None:
        event_time_mode = draw(st.sampled_from([True] * 9 + [False]))

    used = 1 if single_partition else draw(st.integers(1, 4))
    column = used > 1 or draw(st.booleans())
    declared = None
    if column and draw(st.booleans()):
        declared = used if single_partition else used + draw(st.integers(0, 2))
    subs = draw(st.booleans()) if substreams is None else substreams
    partitioned = bool(column and not subs and draw(st.booleans()))
    keys = draw(st.integers(1, 6)) if subs else 0
    if processing is None:
        processing = draw(st.sampled_from(["none", "none", "jitter", "batches"]))

    count = draw(st.integers(0, max_events))
    kinds: list[str] = []
    while len(kinds) < count:  # runs (bursts) of one kind of noise
        kinds += [draw(st.sampled_from(KINDS))] * draw(st.integers(1, 5))
    lags = [draw(st.sampled_from(LAGS)) for _ in range(used)]
    wall = BASE
    events = []
    for n, kind in enumerate(kinds[:count]):
        wall += draw(st.sampled_from(GAPS))
        partition = draw(st.integers(0, used - 1))
        arrival = wall - lags[partition]
        noise = _noise(draw, kind, late, early, ooo)
        key = f"k{draw(st.integers(0, keys - 1))}" if subs else None
        events.append(Event(n, partition, key, arrival + noise, arrival))
    if draw(st.booleans()):  # input position need not follow arrival order
        events = list(draw(st.permutations(events)))

    if processing == "jitter":
        running: dict[int, int] = {}
        for _, e in sorted(enumerate(events), key=lambda se: (se[1].arrival, se[0])):
            pt = max(running.get(e.partition, NEG_INF), e.arrival + draw(st.sampled_from(JITTERS)))
            e.processing = running[e.partition] = pt
    elif processing == "batches":
        size = draw(st.sampled_from([SECOND, 5 * SECOND, 10 * SECOND]))
        delay = draw(st.sampled_from([0, SECOND]))
        for e in events:
            e.processing = -(-(e.arrival + delay) // size) * size

    source = Source(
        path="-",
        timestamp_by="t" if event_time_mode else None,
        arrival_time="a",
        processing_time=None if processing == "none" else "pt",
        partition="p" if column else None,
        partitions=declared,
        over="k" if subs else None,
    )
    ordering = Ordering(
        early_arrival=early,
        late_arrival=late,
        out_of_order=ooo,
        action=action,
        on_out_of_order=on_ooo,
        partitioned=partitioned,
    )
    return Scenario(Job(source, ordering), events, used)


# ============================================================================ helpers
ADMITTED = ("accepted", "adjusted")


def us(text: str | None) -> int:
    """ISO text → microseconds; ``None`` (−∞ in a decision's watermark) → NEG_INF."""
    return NEG_INF if text is None else parse_instant(text)


def _opt(text: str | None) -> int | None:
    """ISO text → microseconds, keeping ``None``."""
    return None if text is None else parse_instant(text)


def processing_order(records: Iterable[InputRecord]) -> list[InputRecord]:
    """The order in which the engine judges records (a documented decision)."""
    return sorted(records, key=lambda r: (r.processing_time, r.arrival_time, r.seq))


def timeline_of(scenario: Scenario, record: InputRecord) -> Any:
    return record.key if scenario.substreams else record.partition


def scope_of(scenario: Scenario, partition: Any, key: Any) -> Any:
    if scenario.substreams:
        return ("key", key)
    if scenario.ordering.partitioned:
        return ("partition", partition)
    return "job"


def merged_is_well_defined(scenario: Scenario) -> bool:
    """All of a merged job's partitions are known from the start (see the discrepancy
    test ``test_merged_release_waits_for_a_partition_first_seen_in_the_same_instant``)."""
    return scenario.source.partitions is not None or scenario.partitions_used == 1


def guarantees_order(scenario: Scenario) -> bool:
    """The watermark promise of semantics §4 applies: no ``accept``, and event time (in
    arrival-time mode the policy never triggers, see docs/semantics.md)."""
    return scenario.ooo_action != "accept" and scenario.source.timestamp_by is not None


# ============================================================================ the model
@dataclass
class Judged:
    watermark: int
    verdict: str
    reasons: list[str]
    timestamp: int | None


def judge(ordering: Ordering, t: int, a: int, w: int, *, arrival_mode: bool = False) -> Judged:
    """semantics §3 steps 2–4 for one event, written from the text (and docs/semantics.md:
    arrival-time mode never triggers; O = none keeps the watermark promise)."""
    if arrival_mode:
        return Judged(w, "accepted", [], a)
    early, late = ordering.early_arrival, ordering.late_arrival
    if early is not None and t - a > early:  # type: ignore[operator]
        return Judged(w, "dropped", ["early"], None)
    s, reasons = t, []
    if late is not None and a - t > late:  # type: ignore[operator]
        reasons.append("late")
        if ordering.action == "drop":
            return Judged(w, "dropped", reasons, None)
        s = a - late  # type: ignore[operator]
    if s < w:
        reasons.append("out_of_order")
        action = ordering.out_of_order_action
        if action == "adjust":
            s = w
        elif action == "drop":
            return Judged(w, "dropped", reasons, None)
        elif action == "dead_letter":
            return Judged(w, "dead_lettered", reasons, None)
    return Judged(w, "adjusted" if s != t else "accepted", reasons, s)


@dataclass
class Model:
    decisions: dict[int, Judged]  # by seq
    watermarks: dict[Any, int]  # final watermark of every timeline
    partition_watermarks: dict[Any, int]  # final, per partition (not substreams)
    floor: int  # the input's arrival clock − L (substreams), else NEG_INF


def model(scenario: Scenario, records: list[InputRecord]) -> Model:
    """An independent model of semantics §3–4: arrival clocks with idle estimates, timeline
    watermarks W = max(newest − O, A − L) (never decreasing), judged in processing order.
    Watermarks are computed lazily: newest and A only grow, so the value at any moment
    equals what eager updates would give."""
    late, ooo = scenario.ordering.late_arrival, scenario.ordering.out_of_order
    clock: dict[Any, int] = {}  # A per partition
    last: dict[Any, tuple[int, int]] = {}  # (last arrival, its processing time)
    for pid in range(scenario.source.partitions or 0):
        clock[pid] = NEG_INF
    newest: dict[Any, int] = defaultdict(lambda: NEG_INF)
    wm: dict[Any, int] = defaultdict(lambda: NEG_INF)
    input_clock = NEG_INF

    def watermark(timeline: Any, arrival_clock: int) -> int:
        w = wm[timeline]
        if ooo is not None:
            w = max(w, newest[timeline] - ooo)  # type: ignore[operator]
        if late is not None:
            w = max(w, arrival_clock - late)  # type: ignore[operator]
        wm[timeline] = w
        return w

    decisions = {}
    ordered = processing_order(records)
    instants = sorted({r.processing_time for r in ordered})
    for now in instants:
        batch = [r for r in ordered if r.processing_time == now]
        delivering = {r.partition for r in batch}
        for pid in delivering:  # partitions of this instant exist before anything is judged
            clock.setdefault(pid, NEG_INF)
        for pid in clock:
            if pid not in delivering:
                guess = last[pid][0] + now - last[pid][1] if pid in last else now - NEVER_SEEN_LAG
                clock[pid] = max(clock[pid], guess)
                input_clock = max(input_clock, clock[pid])
        for r in batch:
            pid = r.partition
            clock[pid] = max(clock.get(pid, NEG_INF), r.arrival_time)
            last[pid] = (r.arrival_time, now)
            input_clock = max(input_clock, clock[pid])
            timeline = timeline_of(scenario, r)
            w = watermark(timeline, input_clock if scenario.substreams else clock[pid])
            judged = judge(
                scenario.ordering,
                r.event_time,
                r.arrival_time,
                w,
                arrival_mode=scenario.source.timestamp_by is None,
            )
            if judged.timestamp is not None:
                newest[timeline] = max(newest[timeline], judged.timestamp)
            decisions[r.seq] = judged
    final: dict[Any, int] = {}
    partition_final: dict[Any, int] = {}
    if scenario.substreams:
        for timeline in newest.keys() | wm.keys():
            final[timeline] = watermark(timeline, input_clock)
    else:
        for pid in clock:
            final[pid] = partition_final[pid] = watermark(pid, clock[pid])
    floor = input_clock - late if scenario.substreams and late is not None else NEG_INF
    return Model(decisions, final, partition_final, floor)


# ============================================================================ properties
@SETTINGS
@given(scenarios())
def test_decisions_follow_the_model(scenario: Scenario) -> None:
    """Every decision (watermark, verdict, reasons, system timestamp) is what semantics §3–4
    give, recomputed by the independent model."""
    note(scenario.describe())
    records = scenario.records()
    result = scenario.run()
    expected = model(scenario, records)
    assert [d["seq"] for d in result.decisions] == list(range(len(records)))
    for d in result.decisions:
        got = Judged(us(d["watermark"]), d["verdict"], d["reasons"], _opt(d["timestamp"]))
        assert got == expected.decisions[d["seq"]], f"seq {d['seq']}"


@SETTINGS
@given(scenarios())
def test_watermarks_never_decrease(scenario: Scenario) -> None:
    """(1) The watermark of every timeline never decreases across its decisions, taken in
    processing order."""
    note(scenario.describe())
    records = scenario.records()
    decisions = scenario.run().decisions
    seen: dict[Any, int] = {}
    for record in processing_order(records):
        timeline = timeline_of(scenario, record)
        w = us(decisions[record.seq]["watermark"])
        assert w >= seen.get(timeline, NEG_INF), f"timeline {timeline!r}, seq {record.seq}"
        seen[timeline] = w


@SETTINGS
@given(scenarios())
def test_admitted_events_are_not_below_the_watermark(scenario: Scenario) -> None:
    """(2) The watermark is a promise (semantics §4): unless on_out_of_order = accept, no event
    is admitted with a system timestamp below the watermark in force when it was judged.
    Under accept, only events marked out_of_order may be below it."""
    note(scenario.describe())
    assume(scenario.source.timestamp_by is not None)  # arrival-time mode: policy off
    for d in scenario.run().decisions:
        if d["verdict"] not in ADMITTED:
            continue
        below = us(d["timestamp"]) < us(d["watermark"])
        if scenario.ooo_action == "accept":
            assert not below or "out_of_order" in d["reasons"], d
        else:
            assert not below, d


def _outcome(decision: dict[str, Any]) -> str:
    """The reason that decided a dropped or dead-lettered event: the last one found."""
    return decision["reasons"][-1]


@SETTINGS
@given(scenarios())
def test_every_record_has_exactly_one_outcome(scenario: Scenario) -> None:
    """(3) semantics §8: nothing is lost silently, nothing is counted twice."""
    note(scenario.describe())
    records = scenario.records()
    result = scenario.run(flush=True)
    decisions = result.decisions
    assert [d["seq"] for d in decisions] == [r.seq for r in records]
    admitted = [d for d in decisions if d["verdict"] in ADMITTED]
    dropped = [d for d in decisions if d["verdict"] == "dropped"]
    dead = [d for d in decisions if d["verdict"] == "dead_lettered"]
    assert len(admitted) + len(dropped) + len(dead) == len(records)

    n_of = {r.seq: r.fields["n"] for r in records}  # type: ignore[index]
    released = Counter(e["n"] for e in result.events)
    assert released == Counter(n_of[d["seq"]] for d in admitted)
    timestamps = {n_of[d["seq"]]: d["timestamp"] for d in admitted}
    assert all(e["timestamp"] == timestamps[e["n"]] for e in result.events)

    assert sorted(x["seq"] for x in result.dead_letters) == [d["seq"] for d in dead]
    reason_of = {d["seq"]: _outcome(d) for d in dead}
    assert all(x["reason"] == reason_of[x["seq"]] for x in result.dead_letters)

    m = result.metrics
    assert m["input"] == len(records)
    assert m["input"] == m["admitted"] + sum(m["dropped"].values()) + sum(
        m["dead_lettered"].values()
    )
    assert m["admitted"] == len(admitted)
    assert m["adjusted"] == sum(d["verdict"] == "adjusted" for d in decisions)
    for reason in ("early", "late", "out_of_order"):
        assert m[reason] == sum(reason in d["reasons"] for d in decisions), reason
    assert m["dropped"] == dict(Counter(_outcome(d) for d in dropped))
    assert m["dead_lettered"] == dict(Counter(_outcome(d) for d in dead))
    assert m["released"] == len(result.events) and m["held"] == 0

    partitions = {e["partition"]: e for e in m["partitions"]}
    expected_ids = {r.partition for r in records} | set(range(scenario.source.partitions or 0))
    assert set(partitions) == expected_ids
    for name in ("input", "admitted", "early", "late", "out_of_order", "adjusted"):
        assert sum(e[name] for e in partitions.values()) == m[name], name
    for pid, entry in partitions.items():
        assert entry["input"] == sum(r.partition == pid for r in records)


@SETTINGS
@given(scenarios())
def test_release_is_ordered_per_scope(scenario: Scenario) -> None:
    """(4) Released events come out in non-decreasing system timestamp per release scope
    (the job when merged, a partition when partitioned, a key with substreams), and
    events of one partition with equal timestamps in their arrival order."""
    note(scenario.describe())
    assume(guarantees_order(scenario))
    assume(scenario.substreams or scenario.ordering.partitioned or merged_is_well_defined(scenario))
    records = scenario.records()
    by_n = {r.fields["n"]: r for r in records}  # type: ignore[index]
    for flush in (False, True):
        last: dict[Any, int] = {}
        last_in_partition: dict[Any, tuple[int, int, int]] = {}
        for event in scenario.run(flush=flush).events:
            record = by_n[event["n"]]
            scope = scope_of(scenario, record.partition, record.key)
            ts = us(event["timestamp"])
            assert ts >= last.get(scope, NEG_INF), (scope, event)
            last[scope] = ts
            place = (scope, record.partition)
            position = (ts, record.arrival_time, record.seq)  # type: ignore[assignment]
            assert position >= last_in_partition.get(place, (NEG_INF, NEG_INF, -1)), event
            last_in_partition[place] = position  # type: ignore[assignment]


@SETTINGS
@given(scenarios(processing="none", event_time_mode=False))
def test_arrival_time_mode_never_triggers_the_policy(scenario: Scenario) -> None:
    """semantics §1: without timestamp_by an event's timestamp is its arrival time and the
    ordering policy never triggers (processing time = arrival time here; with a
    processing-time column see the discrepancy tests)."""
    note(scenario.describe())
    for d in scenario.run().decisions:
        assert d["verdict"] == "accepted" and d["reasons"] == [], d
        assert d["timestamp"] == d["arrival_time"] == d["event_time"], d


@SETTINGS
@given(scenarios())
def test_adjustments_obey_the_formulas(scenario: Scenario) -> None:
    """(7) semantics §3 checked decision by decision: early events are always dropped and
    never admitted; a late event is adjusted to a − L (or dropped under action = drop)
    and, if then out of order, to the watermark; otherwise the event keeps its time."""
    note(scenario.describe())
    # arrival-time mode: the policy never triggers (test_arrival_time_mode_never_...); a
    # substream spanning partitions can then see an arrival below its watermark
    assume(scenario.source.timestamp_by is not None)
    o = scenario.ordering
    records = scenario.records()
    for d in scenario.run().decisions:
        r = records[d["seq"]]
        t, a, w = r.event_time, r.arrival_time, us(d["watermark"])
        ts = _opt(d["timestamp"])
        assert t is not None and a is not None
        admitted = d["verdict"] in ADMITTED
        assert admitted == (ts is not None)
        if admitted:
            assert d["verdict"] == ("adjusted" if ts != t else "accepted"), d
        if o.early_arrival is not None and t - a > o.early_arrival:  # type: ignore[operator]
            assert (d["verdict"], d["reasons"]) == ("dropped", ["early"]), d
            continue
        assert "early" not in d["reasons"], d
        is_late = o.late_arrival is not None and a - t > o.late_arrival  # type: ignore[operator]
        assert ("late" in d["reasons"]) == is_late, d
        if is_late and o.action == "drop":
            assert (d["verdict"], d["reasons"]) == ("dropped", ["late"]), d
            continue
        start = a - o.late_arrival if is_late else t  # type: ignore[operator]
        if "out_of_order" not in d["reasons"]:
            assert start >= w, d
            assert admitted and ts == start, d
            continue
        assert start < w, d
        if scenario.ooo_action == "adjust":
            assert (d["verdict"], ts) == ("adjusted", w), d
        elif scenario.ooo_action == "accept":
            assert admitted and ts == start < w, d
        else:
            verdict = "dropped" if scenario.ooo_action == "drop" else "dead_lettered"
            assert d["verdict"] == verdict and ts is None, d
        if is_late and admitted:
            assert ts >= a - o.late_arrival, d  # type: ignore[operator]


@SETTINGS
@given(scenarios())
def test_release_follows_the_final_watermark(scenario: Scenario) -> None:
    """Without a flush, exactly the admitted events whose timestamp the governing
    watermark (modelled independently) has reached are released; the rest are held."""
    note(scenario.describe())
    assume(scenario.substreams or scenario.ordering.partitioned or merged_is_well_defined(scenario))
    records = scenario.records()
    result = scenario.run(flush=False)
    expected = model(scenario, records)
    if scenario.substreams:
        scope_watermark = {("key", k): w for k, w in expected.watermarks.items()}
    elif scenario.ordering.partitioned:
        scope_watermark = {("partition", p): w for p, w in expected.watermarks.items()}
    else:
        scope_watermark = {"job": min(expected.watermarks.values(), default=NEG_INF)}
    should = set()
    for d in result.decisions:
        if d["verdict"] in ADMITTED:
            r = records[d["seq"]]
            w = scope_watermark[scope_of(scenario, r.partition, r.key)]
            if us(d["timestamp"]) <= w:
                should.add(r.fields["n"])  # type: ignore[index]
    released = [e["n"] for e in result.events]
    assert sorted(released) == sorted(should)
    m = result.metrics
    assert m["released"] + m["held"] == m["admitted"]
    if not scenario.substreams:
        job_watermark = min(expected.watermarks.values(), default=NEG_INF)
        assert us(m["watermark"]) == job_watermark
        for entry in m["partitions"]:
            assert us(entry["watermark"]) == expected.partition_watermarks[entry["partition"]]


# ---------------------------------------------------------------------------- substreams
@st.composite
def with_hidden_key(draw: st.DrawFn) -> tuple[Scenario, Scenario]:
    """A substream scenario, and the same with a key "hidden" added whose events cannot
    move any arrival clock: each shares its partition and processing time with an event
    of another key and arrives no later than it (without a processing-time column it
    arrives at the same time). Such events change no instant, no partition's delivery,
    no idle estimate and no arrival clock seen by another key."""
    base = draw(scenarios(substreams=True, max_events=30))
    assume(base.events)
    hidden = []
    for i in range(draw(st.integers(1, 8))):
        cover = draw(st.sampled_from(base.events))
        if base.source.processing_time is not None:
            earlier = draw(st.sampled_from([0, 0, 1, SECOND, 10 * SECOND]))
            arrival, processing = cover.arrival - earlier, cover.processing
        else:
            arrival, processing = cover.arrival, None
        noise = draw(st.integers(-300_000, 120_000)) * MILLISECOND
        hidden.append(
            Event(1000 + i, cover.partition, "hidden", arrival + noise, arrival, processing)
        )
    events = list(base.events)
    for event in hidden:
        events.insert(draw(st.integers(0, len(events))), event)
    return base, replace(base, events=events)


def _per_key_release(scenario: Scenario, result: Result) -> dict[Any, list[int]]:
    out: dict[Any, list[int]] = defaultdict(list)
    for event in result.events:
        out[event["k"]].append(event["n"])
    return dict(out)


@FEW
@given(with_hidden_key())
def test_substreams_do_not_see_each_other(pair: tuple[Scenario, Scenario]) -> None:
    """(5) With substreams, removing every event of one key changes nothing for the
    other keys (as long as the removed events do not move the input's arrival clock):
    their decisions, and what is released per key and in which order."""
    without, with_ = pair
    note(with_.describe())
    for flush in (False, True):
        a, b = without.run(flush=flush), with_.run(flush=flush)
        n_a = [e.n for e in without.events]
        n_b = [e.n for e in with_.events]
        keep = ("timestamp", "verdict", "reasons", "watermark", "key")
        mine = {n_a[d["seq"]]: {k: d[k] for k in keep} for d in a.decisions}
        theirs = {
            n_b[d["seq"]]: {k: d[k] for k in keep} for d in b.decisions if d["key"] != "hidden"
        }
        assert mine == theirs
        released = _per_key_release(with_, b)
        released.pop("hidden", None)
        assert _per_key_release(without, a) == released


# ---------------------------------------------------------------------------- instants
@st.composite
def regrouped(draw: st.DrawFn) -> tuple[Scenario, Scenario]:
    """A one-partition scenario seen at each arrival time, and the same input seen at
    coarser processing instants (micro-batches)."""
    fine = draw(scenarios(single_partition=True, processing="none"))
    size = draw(st.sampled_from([SECOND, 5 * SECOND, MINUTE]))
    delay = draw(st.sampled_from([0, 0, SECOND, 30 * SECOND]))
    events = [replace(e, processing=-(-e.arrival // size) * size + delay) for e in fine.events]
    coarse_job = replace(fine.job, source=replace(fine.source, processing_time="pt"))
    coarse = Scenario(coarse_job, events, 1, [f"batches of {_d(size)}, delay {_d(delay)}"])
    return fine, coarse


def _without_processing_time(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "processing_time"} for r in records]


@FEW
@given(regrouped())
def test_one_partition_does_not_depend_on_instant_grouping(
    pair: tuple[Scenario, Scenario],
) -> None:
    """(6) With one partition, every instant has that partition delivering, so no idle
    estimate is ever made; grouping records into coarser instants (processing time a
    monotone function of arrival time) keeps the judging order (arrival, input position),
    so decisions, releases and dead letters are the same. (Not true with several
    partitions: a partition silent at an instant gets an idle estimate there.)"""
    fine, coarse = pair
    note(coarse.describe())
    for flush in (False, True):
        a, b = fine.run(flush=flush), coarse.run(flush=flush)
        assert _without_processing_time(a.decisions) == _without_processing_time(b.decisions)
        assert a.events == b.events
        assert a.dead_letters == b.dead_letters
        ignore = ("processing_time", "watermark_delay_us", "diagnostics")
        assert {k: v for k, v in a.metrics.items() if k not in ignore} == {
            k: v for k, v in b.metrics.items() if k not in ignore
        }
        # the late-input diagnostic names the same events; only processing times moved
        moved = ("processing_from", "processing_to", "message")
        assert [
            {k: v for k, v in d.items() if k not in moved} for d in a.metrics["diagnostics"]
        ] == [{k: v for k, v in d.items() if k not in moved} for d in b.metrics["diagnostics"]]


# ============================================================================ discrepancies
# Minimal reproductions of three places where the semantics' sentences pull apart, pinned to the
# decisions recorded in docs/semantics.md.
T = "2026-03-01T09:00:{:02d}Z".format


def _run(source: dict[str, Any], ordering: dict[str, Any], rows: list[dict[str, Any]], **kw: Any):
    from sparktide.reader import parse_fields

    job = Job.from_dict({"source": {"path": "-", **source}, "ordering": ordering})
    records = [parse_fields(seq, row, job.source) for seq, row in enumerate(rows)]
    return simulate(job, records, **kw)


def test_merged_release_waits_for_a_partition_first_seen_in_the_same_instant() -> None:
    result = _run(
        {"timestamp_by": "t", "arrival_time": "a", "partition": "p"},
        {"late_arrival": "1m"},
        [
            {"id": 1, "p": 0, "t": T(10), "a": T(10)},
            {"id": 2, "p": 1, "t": T(0), "a": T(10)},
        ],
        flush=False,
    )
    # Partition 1's watermark is 09:00:00, so the job's is too: only event 2 is released.
    assert [e["id"] for e in result.events] == [2]


def test_out_of_order_none_keeps_the_watermark_promise() -> None:
    result = _run(
        {"timestamp_by": "t", "arrival_time": "a", "processing_time": "pt"},
        {"out_of_order": "none", "late_arrival": "5s"},
        [
            {"t": T(0), "a": T(0), "pt": T(0)},
            {"t": T(1), "a": T(1), "pt": T(20)},  # the idle estimate at 00:10 gave A = 00:10
        ],
        tick=10 * SECOND,
    )
    second = result.decisions[1]
    assert second["watermark"] == T(5)
    assert second["timestamp"] is None or us(second["timestamp"]) >= us(second["watermark"])


def test_arrival_time_mode_never_triggers_the_policy_with_processing_times() -> None:
    result = _run(
        {"arrival_time": "a", "processing_time": "pt"},
        {},
        [
            {"a": T(0), "pt": T(0)},
            {"a": T(1), "pt": T(20)},  # arrival order is kept; seen late
        ],
        tick=10 * SECOND,
    )
    second = result.decisions[1]
    assert (second["verdict"], second["reasons"], second["timestamp"]) == (
        "accepted",
        [],
        T(1),
    )
