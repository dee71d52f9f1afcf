"""Properties of the reference engine's windows (docs/semantics.md §6, §8), with Hypothesis.

A strategy generates streams for windowed jobs: 1–3 partitions (merged or
``partitioned = true``), optional substreams over 1–3 keys, an extra grouping column,
event times on a 250 ms grid (some 1 µs off it, to hit window boundaries from both
sides) with bounded disorder, far-late and early events, random ordering policies, a
random window of every kind (size, hop below / dividing / above the size, offset,
boundary, allowed lateness, idle timeout, ``late``) and random aggregates. Every job
also computes ``n_ = count(*)`` and ``ids_ = collect_list(n)``, where ``n`` is a unique
id per input record, so each event can be traced into the windows that hold it.

Properties:

1. in order (``late_arrival = none``, timestamps in arrival order, flush): every window
   record (contents, ``emitted_at``, emission order) equals an independent model written
   from semantics §6 and docs/semantics.md, for every kind; tumbling and hopping windows hold
   exactly the events floor arithmetic puts there, ``Σ count(*) = admitted × size / hop``
   when the hop divides the size, and gap events are ``in_no_window``;
2. accounting: ``input = admitted + Σ dropped + Σ dead_lettered``; admitted decisions
   list their windows (empty only in a hopping gap); window members are admitted events,
   and with a flush every admitted event is in the windows its decision names;
   ``window_closed`` dead letters name the latest of the event's windows;
3. reordering events within the out-of-order tolerance (action adjust, L = none) changes
   no window result;
4. window ends never decrease in emission order within a governing scope;
5. a (scope, group, start, end) window is emitted at most once;
6. after a flush no window is open;
7. sessions of one group never overlap and last at most 2 × max_duration;
8. sliding windows are exactly ``size`` long.

The last section holds minimal reproductions of engine behaviour that contradicts the
documentation (``xfail(strict=True)`` while open) and regressions found here.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from sparktide.core.engine import Result, simulate
from sparktide.core.records import InputRecord
from sparktide.job import Aggregate, Job, Ordering, Source, Window
from sparktide.time import MILLISECOND, MINUTE, SECOND, format_instant, parse_instant

BASE = parse_instant("2026-03-01T09:00:00Z")
NEG = -(1 << 62)  # below every instant here
GRID = 250 * MILLISECOND
ADMITTED = ("accepted", "adjusted")
KINDS = ("tumbling", "hopping", "sliding", "session", "snapshot")
GRID_KINDS = ("tumbling", "hopping", "snapshot")

SIZES = [SECOND, 2 * SECOND, 3 * SECOND, 5 * SECOND, 10 * SECOND]
HOPS = [500 * MILLISECOND, SECOND, 2 * SECOND, 3 * SECOND, 4 * SECOND, 7 * SECOND, 12 * SECOND]
GAPS = [500 * MILLISECOND, SECOND, 2 * SECOND, 5 * SECOND]
MAX_DURATIONS = [None, None, SECOND, 2 * SECOND, 5 * SECOND]
OFFSETS = [0, 0, GRID, SECOND, 3 * SECOND]
LATENESSES = [0, 0, 500 * MILLISECOND, 2 * SECOND]
IDLE_TIMEOUTS = [None, None, SECOND, 5 * SECOND]
LATES = [None, None, 0, SECOND, 5 * SECOND]
OUT_OF_ORDERS = [None, 0, SECOND, 3 * SECOND]
EARLIES = [None, 2 * SECOND, 5 * MINUTE]
ON_OUT_OF_ORDERS = [None, "adjust", "drop", "dead_letter", "accept", "accept", "accept"]
STEPS = [0, 0, GRID, 2 * GRID, SECOND, 3 * SECOND]
EDGES = [0, 0, 0, 0, 1, -1]

FIXED = (Aggregate("n_", "count"), Aggregate("ids_", "collect_list", "n"))
POOL = (
    Aggregate("cnt_v", "count", "v"),
    Aggregate("sum_v", "sum", "v"),
    Aggregate("min_v", "min", "v"),
    Aggregate("max_v", "max", "v"),
    Aggregate("avg_v", "avg", "v"),
    Aggregate("first_s", "first", "s"),
    Aggregate("last_s", "last", "s"),
    Aggregate("last_v", "last", "v"),
    Aggregate("list_s", "collect_list", "s"),
    Aggregate("distinct_s", "count_distinct", "s"),
    Aggregate("min_s", "min", "s"),
)
VALUES = [None, 0, 1, 2, -3, 7, 0.5, 2.25, -1.5]
STRINGS = [None, "a", "b", "c"]

SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ============================================================================ scenarios
@dataclass
class Event:
    """One generated input record (times in integer microseconds)."""

    n: int  # unique id, also the record's field ``n``
    partition: int
    key: str | None
    g: str
    event_time: int
    arrival: int
    v: Any
    s: str | None

    def fields(self) -> dict[str, Any]:
        """The record's fields: ``n``, partition ``p``, substream key ``k``, group ``g``,
        a number-or-null ``v`` and a text-or-null ``s``."""
        p, k = self.partition, self.key
        return {"n": self.n, "p": p, "k": k, "g": self.g, "v": self.v, "s": self.s}


@dataclass
class Scenario:
    job: Job
    events: list[Event]  # input order = arrival order
    flush: bool = True
    until: int | None = None

    @property
    def window(self) -> Window:
        assert self.job.window is not None
        return self.job.window

    @property
    def substreams(self) -> bool:
        return self.job.source.over is not None

    def records(self) -> list[InputRecord]:
        return [
            InputRecord(
                seq,
                e.fields(),
                partition=e.partition,
                key=e.key if self.substreams else None,
                event_time=e.event_time,
                arrival_time=e.arrival,
            )
            for seq, e in enumerate(self.events)
        ]

    def run(self) -> Result:
        note(self.describe())
        result = simulate(self.job, self.records(), flush=self.flush, until=self.until)
        for w in result.windows:
            note(f"window {json.dumps({k: v for k, v in w.items() if k != 'type'})}")
        return result

    def describe(self) -> str:
        o, w = self.job.ordering, self.window
        lines = [
            f"ordering: E={_d(o.early_arrival)} L={_d(o.late_arrival)} O={_d(o.out_of_order)} "
            f"action={o.action} on_out_of_order={o.on_out_of_order} partitioned={o.partitioned}",
            f"source: partition={self.job.source.partition} over={self.job.source.over}",
            f"window: {w.type} size={_d(w.size)} hop={_d(w.hop)} gap={_d(w.gap)} "
            f"max_duration={_d(w.max_duration)} offset={_d(w.offset)} boundary={w.boundary} "
            f"lateness={_d(w.allowed_lateness)} idle={_d(w.idle_timeout)} late={w.late} "
            f"group_by={list(w.group_by)} aggregates={[str(a) for a in w.aggregates]}",
            f"flush={self.flush} until={_t(self.until)}",
            "seq   n  p  key  g   event_time                   arrival",
        ]
        for seq, e in enumerate(self.events):
            lines.append(
                f"{seq:3d} {e.n:3d} {e.partition:2d} {e.key!s:>4} {e.g:>3}  "
                f"{_t(e.event_time):28} {_t(e.arrival)}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Scenario of {len(self.events)} events; see the notes>"


def _d(value: Any) -> str:
    return "-" if value is None else f"{value / SECOND:g}s"


def _t(value: int | None) -> str:
    return "-" if value is None else str(format_instant(value))


@st.composite
def windows(
    draw: st.DrawFn,
    *,
    kinds: tuple[str, ...] = KINDS,
    group_by: tuple[str, ...] = (),
    lateness: bool = True,
    idle: bool = True,
) -> Window:
    """A random window of one of ``kinds`` grouped by ``group_by`` (plus maybe ``g``)."""
    kind = draw(st.sampled_from(kinds))
    params: dict[str, Any] = {}
    if kind in ("tumbling", "hopping", "sliding"):
        params["size"] = draw(st.sampled_from(SIZES))
    if kind == "hopping":
        params["hop"] = draw(st.sampled_from(HOPS))
    if kind == "session":
        params["gap"] = draw(st.sampled_from(GAPS))
        params["max_duration"] = draw(st.sampled_from(MAX_DURATIONS))
    if kind in ("tumbling", "hopping", "session"):
        params["offset"] = draw(st.sampled_from(OFFSETS))
    boundary = "end" if kind == "sliding" else draw(st.sampled_from(["start", "end"]))
    if draw(st.booleans()):
        group_by = (*group_by, "g")
    chosen = draw(st.lists(st.sampled_from(POOL), unique_by=lambda a: a.name, max_size=5))
    return Window(
        type=kind,
        boundary=boundary,
        allowed_lateness=draw(st.sampled_from(LATENESSES)) if lateness else 0,
        idle_timeout=draw(st.sampled_from(IDLE_TIMEOUTS)) if idle else None,
        late=draw(st.sampled_from(["dead_letter", "drop"])),
        group_by=group_by,
        aggregates=(*FIXED, *chosen),
        **params,
    )


@st.composite
def layouts(draw: st.DrawFn, *, partitioned: bool | None = None) -> dict[str, Any]:
    """Partitions (1–3, with or without a partition column), substreams, scope columns."""
    used = draw(st.integers(1, 3))
    column = used > 1 or draw(st.booleans())
    subs = draw(st.booleans())
    if partitioned is None:
        partitioned = draw(st.booleans())
    partitioned = bool(partitioned and column and not subs)
    scope_columns: tuple[str, ...] = ()
    if partitioned:
        scope_columns = ("p",)
    elif subs:
        scope_columns = ("k",)
    return {
        "used": used,
        "column": column,
        "subs": subs,
        "keys": draw(st.integers(1, 3)) if subs else 0,
        "partitioned": partitioned,
        "scope_columns": scope_columns,
    }


def _source(layout: dict[str, Any]) -> Source:
    return Source(
        path="-",
        timestamp_by="t",
        arrival_time="a",
        partition="p" if layout["column"] else None,
        over="k" if layout["subs"] else None,
    )


def _event(draw: st.DrawFn, n: int, layout: dict[str, Any], t: int, a: int) -> Event:
    partition = draw(st.integers(0, layout["used"] - 1)) if layout["column"] else 0
    key = f"k{draw(st.integers(0, layout['keys'] - 1))}" if layout["subs"] else None
    return Event(
        n=n,
        partition=partition,
        key=key,
        g=draw(st.sampled_from(["g0", "g1"])),
        event_time=t,
        arrival=a,
        v=draw(st.sampled_from(VALUES)),
        s=draw(st.sampled_from(STRINGS)),
    )


@st.composite
def general_scenarios(
    draw: st.DrawFn, kinds: tuple[str, ...] = KINDS, max_events: int = 30
) -> Scenario:
    """Anything goes: disorder, late and early events, every policy, idle timeouts.
    ``accept`` (events below the watermark keep their time) is drawn more often, so that
    events late for their windows (``window_closed``) are common."""
    layout = draw(layouts())
    ordering = Ordering(
        early_arrival=draw(st.sampled_from(EARLIES)),
        late_arrival=draw(st.sampled_from(LATES)),
        out_of_order=draw(st.sampled_from(OUT_OF_ORDERS)),
        action=draw(st.sampled_from(["adjust", "drop"])),
        on_out_of_order=draw(st.sampled_from(ON_OUT_OF_ORDERS)),
        partitioned=layout["partitioned"],
    )
    window = draw(windows(kinds=kinds, group_by=layout["scope_columns"]))
    disorder = draw(st.sampled_from([0, 2, 8, 24]))  # in grid steps
    wall = BASE
    events = []
    for n in range(draw(st.integers(0, max_events))):
        wall += draw(st.sampled_from(STEPS))
        kind = draw(st.sampled_from(["near"] * 5 + ["late", "late", "early"]))
        if kind == "near":
            noise = -draw(st.integers(0, disorder)) * GRID
        elif kind == "late":
            noise = -draw(st.integers(1, 80)) * GRID
        else:
            noise = draw(st.integers(1, 16)) * GRID
        t = wall + noise + draw(st.sampled_from(EDGES))
        events.append(_event(draw, n, layout, t, wall))
    flush = draw(st.booleans())
    until = None
    if events and draw(st.booleans()):
        until = wall + draw(st.sampled_from([0, SECOND, 4 * SECOND, 20 * SECOND]))
    return Scenario(Job(_source(layout), ordering, window), events, flush, until)


@st.composite
def in_order_scenarios(draw: st.DrawFn, kinds: tuple[str, ...] = ("tumbling", "hopping")):
    """late_arrival = none, timestamps in arrival order (arrival = event time), so nothing
    is late, early or out of order and every window an event belongs to is open."""
    layout = draw(layouts())
    ordering = Ordering(
        late_arrival=None,
        out_of_order=draw(st.sampled_from(OUT_OF_ORDERS)),
        partitioned=layout["partitioned"],
    )
    window = draw(windows(kinds=kinds, group_by=layout["scope_columns"], idle=False))
    t = BASE - draw(st.integers(0, 40)) * GRID
    events = []
    for n in range(draw(st.integers(0, 30))):
        t += draw(st.sampled_from(STEPS))
        ts = t + draw(st.sampled_from(EDGES))
        ts = max(ts, events[-1].event_time if events else ts)
        events.append(_event(draw, n, layout, ts, ts))
    return Scenario(Job(_source(layout), ordering, window), events)


@st.composite
def shuffled_pairs(draw: st.DrawFn) -> tuple[Scenario, Scenario]:
    """The same events twice: in timestamp order, and with arrival order shuffled within
    the out-of-order tolerance O (action adjust, late_arrival = none, no idle timeout).

    An event's position key is ``timestamp + u`` with ``0 ≤ u < O``: whenever e arrives
    after e', ``t(e') − t(e) ≤ u(e) − u(e') < O``, so nothing is out of order. Events
    with equal timestamps keep their relative order (first/last/collect_list break
    timestamp ties by arrival). Arrival times are the sorted timestamps in both runs.
    """
    layout = draw(layouts())
    ooo = draw(st.sampled_from([500 * MILLISECOND, SECOND, 3 * SECOND, 10 * SECOND]))
    ordering = Ordering(
        early_arrival=None,
        late_arrival=None,
        out_of_order=ooo,
        action="adjust",
        partitioned=layout["partitioned"],
    )
    window = draw(windows(group_by=layout["scope_columns"], idle=False))
    t = BASE
    events = []
    for n in range(draw(st.integers(0, 30))):
        t += draw(st.sampled_from(STEPS))
        ts = t + draw(st.sampled_from(EDGES))
        ts = max(ts, events[-1].event_time if events else ts)
        events.append(_event(draw, n, layout, ts, 0))
    jitter = [draw(st.integers(0, ooo // MILLISECOND - 1)) * MILLISECOND for _ in events]
    order = sorted(range(len(events)), key=lambda i: (events[i].event_time + jitter[i], i))
    # Equal timestamps: back into their original relative order, on the same positions.
    by_time: dict[int, list[int]] = defaultdict(list)
    for i in range(len(events)):
        by_time[events[i].event_time].append(i)
    cursor = {ts: iter(members) for ts, members in by_time.items()}
    order = [next(cursor[events[i].event_time]) for i in order]
    times = [e.event_time for e in events]  # sorted

    def arrange(indices: list[int]) -> list[Event]:
        return [
            Event(**{**events[i].__dict__, "arrival": times[pos]}) for pos, i in enumerate(indices)
        ]

    job = Job(_source(layout), ordering, window)
    return Scenario(job, arrange(list(range(len(events))))), Scenario(job, arrange(order))


# ============================================================================ helpers
def us(text: str) -> int:
    return parse_instant(text)


def bounds(record: dict[str, Any]) -> tuple[int, int]:
    return us(record["window_start"]), us(record["window_end"])


def scope_of(job: Job, window: dict[str, Any]) -> Any:
    """The scope whose watermark governs a window record (its columns say which)."""
    if job.source.over is not None:
        return ("key", window[job.source.over])
    if job.ordering.partitioned:
        return ("partition", window[job.source.partition])  # type: ignore[index]
    return "job"


def group_of(job: Job, record: dict[str, Any]) -> tuple[Any, ...]:
    assert job.window is not None
    return tuple(record[c] for c in job.window.group_by)


def admitted_decisions(result: Result) -> list[dict[str, Any]]:
    return [d for d in result.decisions if d["verdict"] in ADMITTED]


def model_grid_windows(ts: int, window: Window) -> list[tuple[int, int]]:
    """Tumbling/hopping windows holding ``ts``, by floor arithmetic (independent of the
    engine's loop): starts ``offset + k·hop`` with ``start ≤ ts < start + size`` for
    ``[start, end)`` and ``start < ts ≤ start + size`` for ``(start, end]``."""
    size: int = window.size  # type: ignore[assignment]
    period: int = window.period  # type: ignore[assignment]
    offset: int = window.offset  # type: ignore[assignment]
    x = ts - 1 if window.boundary == "end" else ts
    k_hi = (x - offset) // period
    k_lo = (x - size - offset) // period + 1
    return [(offset + k * period, offset + k * period + size) for k in range(k_lo, k_hi + 1)]


def system_timestamp(scenario: Scenario, decision: dict[str, Any]) -> int:
    """The timestamp the ordering policy gave an event that then found its windows closed
    (semantics §3: a − L when late, the watermark when out of order under adjust)."""
    event = scenario.events[decision["seq"]]
    ordering = scenario.job.ordering
    ts = event.event_time
    if "late" in decision["reasons"]:
        ts = event.arrival - ordering.late_arrival  # type: ignore[operator]
    if "out_of_order" in decision["reasons"] and ordering.out_of_order_action == "adjust":
        ts = us(decision["watermark"])
    return ts


def hashable(record: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in record.items() if k != "emitted_at"}, sort_keys=True)


# ============================================================================ 1. in order
@SETTINGS
@given(in_order_scenarios())
def test_grid_windows_hold_exactly_the_model_events(scenario: Scenario) -> None:
    result = scenario.run()
    window = scenario.window
    job = scenario.job
    metrics = result.metrics
    assert metrics["admitted"] == len(scenario.events) == metrics["input"]
    assert metrics["out_of_order"] == 0 and metrics["dead_lettered"] == {}
    expected: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    gaps = 0
    memberships = 0
    for decision, event in zip(result.decisions, scenario.events, strict=True):
        assert decision["timestamp"] == format_instant(event.event_time)
        model = model_grid_windows(event.event_time, window)
        assert decision["windows"] == [[format_instant(s), format_instant(e)] for s, e in model]
        gaps += not model
        memberships += len(model)
        for start, end in model:
            expected[(*group_of(job, event.fields()), start, end)].append(event.n)
    assert metrics["in_no_window"] == gaps
    total = sum(w["n_"] for w in result.windows)
    assert total == memberships
    size, period = window.size, window.period
    assert isinstance(size, int) and isinstance(period, int)
    if size % period == 0:  # tumbling, or hop dividing size: exactly size / hop each
        assert gaps == 0
        assert total == metrics["admitted"] * (size // period)
    elif period > size:  # gaps: one window or none
        assert total == metrics["admitted"] - metrics["in_no_window"]
    actual = {(*group_of(job, w), *bounds(w)): w["ids_"] for w in result.windows}
    assert actual == {key: ids for key, ids in expected.items()}


@SETTINGS
@given(in_order_scenarios(kinds=KINDS))
def test_in_order_windows_follow_the_model(scenario: Scenario) -> None:
    """Every kind: contents, ``emitted_at`` and emission order, from an independent model."""
    result = scenario.run()
    assert result.metrics["admitted"] == len(scenario.events)
    keys = (*scenario.window.group_by, "window_start", "window_end", "n_", "ids_", "emitted_at")
    actual = [{k: w[k] for k in keys} for w in result.windows]
    assert actual == in_order_model(scenario)


def in_order_model(scenario: Scenario) -> list[dict[str, Any]]:
    """The window records of an in-order scenario (late_arrival = none, timestamps in
    arrival order, flush), written from semantics §6 and docs/semantics.md:

    - contents per kind (see :func:`model_contents`);
    - a window with end ``e`` closes when its scope's watermark reaches
      ``e + allowed_lateness`` (``+ 1 µs`` for ``(start, end]``, sliding and snapshot);
      here W = newest − O per timeline (no arrival term), the job's W is the minimum
      over the partitions seen so far (never decreasing); ``emitted_at`` is the processing
      time (= arrival time) of the event after which that happens, else the flush's;
    - windows closing at the same moment come in (window_end, window_start, scope, group)
      order (scope columns lead ``group_by`` here).
    """
    job, window, events = scenario.job, scenario.window, scenario.events
    by_group: dict[tuple[Any, ...], list[Event]] = defaultdict(list)
    for e in events:
        by_group[group_of(job, e.fields())].append(e)
    ooo = job.ordering.out_of_order
    newest: dict[Any, int] = {}
    job_w = NEG
    history: list[dict[Any, int]] = []  # governing watermark of every scope, after each event
    for e in events:
        timeline = e.key if scenario.substreams else e.partition
        newest[timeline] = max(newest.get(timeline, NEG), e.event_time)
        marks = {t: (n - ooo if ooo is not None else NEG) for t, n in newest.items()}
        job_w = max(job_w, min(marks.values()))
        if scenario.substreams:
            history.append({("key", k): w for k, w in marks.items()})
        elif job.ordering.partitioned:
            history.append({("partition", p): w for p, w in marks.items()})
        else:
            history.append({"job": job_w})
    closed_end = window.boundary == "end" or window.type in ("sliding", "snapshot")
    lateness: int = window.allowed_lateness  # type: ignore[assignment]
    out = []
    for group, members in by_group.items():
        record = dict(zip(window.group_by, group, strict=True))
        scope = scope_of(job, record)
        for start, end, ids in model_contents(window, members):
            due = end + lateness + (1 if closed_end else 0)
            moment = next(
                (i for i, marks in enumerate(history) if marks.get(scope, NEG) >= due),
                len(events),
            )
            emitted = events[min(moment, len(events) - 1)].arrival
            out.append(
                (
                    (moment, end, start, group),
                    {
                        **record,
                        "window_start": format_instant(start),
                        "window_end": format_instant(end),
                        "n_": len(ids),
                        "ids_": ids,
                        "emitted_at": format_instant(emitted),
                    },
                )
            )
    return [w for _, w in sorted(out, key=lambda item: item[0])]


def model_contents(window: Window, events: list[Event]) -> list[tuple[int, int, list[int]]]:
    """(start, end, ids) of one group's windows; ``events`` in timestamp order."""
    kind = window.type
    if kind in ("tumbling", "hopping"):
        held: dict[tuple[int, int], list[int]] = defaultdict(list)
        for e in events:
            for bounds_ in model_grid_windows(e.event_time, window):
                held[bounds_].append(e.n)
        return [(s, e, ids) for (s, e), ids in held.items()]
    if kind == "snapshot":
        held = defaultdict(list)
        for e in events:
            held[(e.event_time, e.event_time)].append(e.n)
        return [(s, e, ids) for (s, e), ids in held.items()]
    if kind == "sliding":  # a result at every entry t and exit t + size, when not empty
        size: int = window.size  # type: ignore[assignment]
        points = sorted({e.event_time for e in events} | {e.event_time + size for e in events})
        out = []
        for p in points:
            ids = [e.n for e in events if p - size < e.event_time <= p]
            if ids:
                out.append((p - size, p, ids))
        return out
    return model_sessions(window, events)


def model_sessions(window: Window, events: list[Event]) -> list[tuple[int, int, list[int]]]:
    """Sessions: an event continues a session when it comes less than ``gap`` after the
    last one (``≤`` for ``(start, end]``); the session ends at last + gap. With
    ``max_duration`` m: at the first boundary ``b = offset + k·m`` with ``b − start > m``
    (the session has lasted longer than m) a session still open there ends, and the
    events after it form a new session starting at ``b``."""
    gap: int = window.gap  # type: ignore[assignment]
    m = window.max_duration
    offset: int = window.offset  # type: ignore[assignment]
    closed = window.boundary == "end"

    def joins(last: int, ts: int) -> bool:
        return ts - last <= gap if closed else ts - last < gap

    def after(cut: int, ts: int) -> bool:
        return ts > cut if closed else ts >= cut

    def cut_of(start: int) -> int | None:
        if m is None:
            return None
        k = (start + m - offset) // m + 1  # type: ignore[operator]
        return offset + k * m  # type: ignore[operator]

    out: list[tuple[int, int, list[int]]] = []
    start = last = 0
    ids: list[int] = []
    for e in events:
        ts = e.event_time
        if ids and joins(last, ts):
            cut = cut_of(start)
            if cut is not None and after(cut, ts):
                out.append((start, cut, ids))
                start, ids = cut, []
                while after(cut_of(start), ts):  # type: ignore[arg-type]
                    start = cut_of(start)  # type: ignore[assignment]
            ids.append(e.n)
            last = ts
            continue
        if ids:
            cut = cut_of(start)
            out.append((start, min(last + gap, cut) if cut is not None else last + gap, ids))
        start, last, ids = ts, ts, [e.n]
    if ids:
        cut = cut_of(start)
        out.append((start, min(last + gap, cut) if cut is not None else last + gap, ids))
    return out


# ============================================================================ 2. accounting
@SETTINGS
@given(general_scenarios())
def test_every_record_is_accounted_for(scenario: Scenario) -> None:
    result = scenario.run()
    window, job = scenario.window, scenario.job
    metrics = result.metrics
    assert metrics["input"] == len(scenario.events)
    assert metrics["input"] == (
        metrics["admitted"]
        + sum(metrics["dropped"].values())
        + sum(metrics["dead_lettered"].values())
    )
    admitted = admitted_decisions(result)
    assert len(admitted) == metrics["admitted"]
    assert all(d["timestamp"] is not None for d in admitted)
    assert all(d["timestamp"] is None for d in result.decisions if d["verdict"] not in ADMITTED)
    gap_possible = window.type == "hopping" and window.hop > window.size  # type: ignore[operator]
    for d in admitted:
        assert "windows" in d, d
        assert d["windows"] or gap_possible, d
    assert sum(1 for d in admitted if d["windows"] == []) == metrics["in_no_window"]
    # Dead letters match the counters; window_closed ones carry the window's bounds.
    assert Counter(dl["reason"] for dl in result.dead_letters) == Counter(metrics["dead_lettered"])
    for dl in result.dead_letters:
        if dl["reason"] == "window_closed":
            assert dl["window_start"] is not None and dl["window_end"] is not None
            decision = result.decisions[dl["seq"]]
            assert "window_closed" in decision["reasons"]
            # The bounds of the latest of its windows (grid kinds; sessions and sliding
            # windows: see the discrepancies below).
            ts = system_timestamp(scenario, decision)
            if window.type in ("tumbling", "hopping"):
                assert bounds(dl) == model_grid_windows(ts, window)[-1]
            elif window.type == "snapshot":
                assert bounds(dl) == (ts, ts)
    # Window members are admitted events, each in its group's windows only.
    event_of = {e.n: (seq, e) for seq, e in enumerate(scenario.events)}
    admitted_ns = {scenario.events[d["seq"]].n for d in admitted}
    holding: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for w in result.windows:
        assert w["n_"] == len(w["ids_"])
        for n in w["ids_"]:
            assert n in admitted_ns
            assert group_of(job, event_of[n][1].fields()) == group_of(job, w)
            holding[n].add(bounds(w))
    for d in admitted:
        n = scenario.events[d["seq"]].n
        named = {(us(s), us(e)) for s, e in d["windows"]}
        if window.type in GRID_KINDS:
            if scenario.flush:
                assert holding[n] == named
            else:
                assert holding[n] <= named
        elif window.type == "session":
            assert len(holding[n]) == 1 if scenario.flush else len(holding[n]) <= 1
        elif scenario.flush:  # sliding: windows known when it joined, and later ones
            assert named <= holding[n] and holding[n]
        if window.type == "snapshot":
            assert named == {(us(d["timestamp"]), us(d["timestamp"]))}
    if scenario.flush and window.type in GRID_KINDS:
        assert sum(w["n_"] for w in result.windows) == sum(len(d["windows"]) for d in admitted)
    if scenario.flush and window.type == "session":
        assert sum(w["n_"] for w in result.windows) == metrics["admitted"]


# ============================================================================ 3. tolerance
@SETTINGS
@given(shuffled_pairs())
def test_reordering_within_the_tolerance_changes_no_window(
    pair: tuple[Scenario, Scenario],
) -> None:
    ordered, shuffled = pair
    note("--- in timestamp order:")
    first = ordered.run()
    note("--- shuffled within O:")
    second = shuffled.run()
    for result in (first, second):
        assert result.metrics["out_of_order"] == 0
        assert result.metrics["admitted"] == len(ordered.events)
    assert Counter(map(hashable, first.windows)) == Counter(map(hashable, second.windows))


# ============================================================================ 4–8. shapes
@SETTINGS
@given(general_scenarios())
def test_window_ends_never_decrease_per_scope(scenario: Scenario) -> None:
    result = scenario.run()
    last: dict[Any, int] = {}
    for w in result.windows:
        scope = scope_of(scenario.job, w)
        _, end = bounds(w)
        assert end >= last.get(scope, end), (scope, w)
        last[scope] = end


@SETTINGS
@given(general_scenarios())
def test_each_window_is_emitted_at_most_once(scenario: Scenario) -> None:
    result = scenario.run()
    seen = Counter(
        (scope_of(scenario.job, w), group_of(scenario.job, w), *bounds(w)) for w in result.windows
    )
    assert all(count == 1 for count in seen.values()), seen.most_common(3)


@SETTINGS
@given(general_scenarios())
def test_flush_leaves_no_open_window(scenario: Scenario) -> None:
    result = scenario.run()
    assert result.metrics["windows_emitted"] == len(result.windows)
    if scenario.flush:
        assert result.metrics["open_windows"] == 0
        assert result.metrics["flushed"] is True


@SETTINGS
@given(general_scenarios(kinds=("session",)))
def test_sessions_do_not_overlap_and_respect_max_duration(scenario: Scenario) -> None:
    result = scenario.run()
    window = scenario.window
    by_group: dict[Any, list[tuple[int, int]]] = defaultdict(list)
    for w in result.windows:
        start, end = bounds(w)
        assert start < end, w
        if window.max_duration is not None:
            assert end - start <= 2 * window.max_duration, w  # type: ignore[operator]
        by_group[(scope_of(scenario.job, w), group_of(scenario.job, w))].append((start, end))
    for sessions in by_group.values():
        sessions.sort()
        for (_, end), (start, _) in pairwise(sessions):
            assert start >= end, sessions


@SETTINGS
@given(general_scenarios(kinds=("sliding",)))
def test_sliding_windows_are_size_long(scenario: Scenario) -> None:
    result = scenario.run()
    for w in result.windows:
        start, end = bounds(w)
        assert end - start == scenario.window.size, w
        assert w["n_"] >= 1  # empty windows produce nothing


# ============================================================================ aggregates
def test_integer_sums_stay_integers_and_float_sums_are_floats() -> None:
    """``sum`` of integers is an integer (a transcript cannot tell 12 from 12.0)."""
    job = Job(
        Source(path="-", timestamp_by="t", arrival_time="a"),
        Ordering(late_arrival=None),
        Window(
            type="tumbling",
            size=MINUTE,
            aggregates=(
                Aggregate("ints", "sum", "i"),
                Aggregate("floats", "sum", "f"),
                Aggregate("mean", "avg", "i"),
            ),
        ),
    )
    rows = [{"i": 1, "f": 1}, {"i": 2, "f": 0.5}, {"i": None, "f": None}, {"i": 3, "f": 2}]
    records = [
        InputRecord(seq, row, event_time=BASE + seq * SECOND, arrival_time=BASE + seq * SECOND)
        for seq, row in enumerate(rows)
    ]
    (window,) = simulate(job, records).windows
    assert window["ints"] == 6 and type(window["ints"]) is int
    assert window["floats"] == 3.5 and type(window["floats"]) is float
    assert window["mean"] == 2.0 and type(window["mean"]) is float


# ============================================================================ discrepancies
# Minimal reproductions of engine behaviour that contradicted docs/semantics.md / docs/semantics.md.
# Each asserts the documented behaviour (docs/semantics.md).
def _job(window: Window, **ordering: Any) -> Job:
    return Job(
        Source(path="-", timestamp_by="t", arrival_time="a"),
        Ordering(**{"late_arrival": None, "out_of_order": 0, **ordering}),
        window,
    )


def _records(rows: list[dict[str, Any]]) -> list[InputRecord]:
    """Rows with ``t`` (and optionally ``a``, default ``t``) in seconds after BASE."""
    out = []
    for seq, row in enumerate(rows):
        t = BASE + int(row["t"] * SECOND)
        a = BASE + int(row.get("a", row["t"]) * SECOND)
        out.append(InputRecord(seq, {"id": seq + 1, **row}, event_time=t, arrival_time=a))
    return out


def _t0(seconds: float) -> str:
    return str(format_instant(BASE + int(seconds * SECOND)))


def test_sliding_entry_window_holds_rows_before_a_closed_window() -> None:
    """docs/semantics.md: a sliding result at every entry t covers (t − size, t].
    size 10 s, O = 10 s, L = none. id 2 (00:15) lifts W to 00:05, which closes the window
    ending 00:00. id 3 (00:06, arriving third, in order since 00:06 >= 00:05) opens the
    entry window (23:59:56, 00:06], which must still hold id 1 (00:00). (Regression: the
    engine used to drop rows at or before its next pending point − size, here id 1; found
    by ``test_in_order_windows_follow_the_model`` and the reordering property.)"""
    window = Window(
        type="sliding",
        size=10 * SECOND,
        aggregates=(Aggregate("n", "count"), Aggregate("ids", "collect_list", "id")),
    )
    rows = [{"t": 0, "a": 0}, {"t": 15, "a": 15}, {"t": 6, "a": 16}]
    windows = simulate(_job(window, out_of_order=10 * SECOND), _records(rows)).windows
    entry = [w for w in windows if w["window_end"] == _t0(6)]
    assert len(entry) == 1
    assert entry[0]["window_start"] == _t0(-4)
    assert entry[0]["ids"] == [1, 3] and entry[0]["n"] == 2


def test_session_window_closed_names_the_last_closed_session() -> None:
    """docs/semantics.md: for session windows the dead letter names the latest closed
    session of the event's group (the rows of closed sessions are gone, so the session the
    event fell in cannot be named). Sessions (gap 5 s) [00:00, 00:05), [00:20, 00:25) have
    closed; id 4 (00:02, accepted out of order) is named with [00:20, 00:25)."""
    window = Window(type="session", gap=5 * SECOND, aggregates=(Aggregate("n", "count"),))
    rows = [{"t": 0}, {"t": 20}, {"t": 40}, {"t": 2, "a": 41}]
    result = simulate(_job(window, on_out_of_order="accept"), _records(rows))
    (letter,) = result.dead_letters
    assert letter["reason"] == "window_closed"
    assert (letter["window_start"], letter["window_end"]) == (_t0(20), _t0(25))


def test_idle_timeout_advances_the_watermark_to_the_window_due() -> None:
    """docs/semantics.md: the idle timeout advances the watermark to the window's due —
    end + allowed_lateness, plus 1 µs for (start, end] windows, the smallest watermark that
    closes it by the usual rule. So an event at exactly the end of the closed (00:00, 00:10]
    window, seen later, is out of order and adjusted to 00:10.000001 (the next window)."""
    window = Window(
        type="tumbling",
        size=10 * SECOND,
        boundary="end",
        idle_timeout=30 * SECOND,
        aggregates=(Aggregate("n", "count"),),
    )
    rows = [{"t": 2}, {"t": 10, "a": 50}]
    result = simulate(_job(window), _records(rows), until=BASE + MINUTE, flush=False)
    (window_record,) = result.windows  # (00:00, 00:10] closed by the timer at 00:40
    assert window_record["emitted_at"] == _t0(40)
    decision = result.decisions[1]
    assert decision["watermark"] == "2026-03-01T09:00:10.000001Z"
    assert decision["reasons"] == ["out_of_order"]
    assert decision["timestamp"] == "2026-03-01T09:00:10.000001Z"
