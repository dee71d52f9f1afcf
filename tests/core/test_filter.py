"""[filter], having and [select] in the reference engine (docs/semantics.md): the filter
applies after the ordering policy, a filtered event is dropped (reason ``filtered``), it
still moved its timeline, and it is never ``window_closed``; with Hypothesis, a filter
changes nothing but the fate of the admitted events that fail it."""

from __future__ import annotations

from hypothesis import given, note
from hypothesis import strategies as st

from sparktide.core.engine import simulate
from sparktide.core.records import InputRecord
from sparktide.job import Aggregate, Filter, Job, Join, Ordering, Projection, Source, Window
from sparktide.time import SECOND, parse_instant
from tests.core.test_properties import FEW, Scenario, scenarios

T0 = parse_instant("2026-03-01T09:00:00Z")


def records(*rows: tuple[int, int, dict]) -> list[InputRecord]:
    """(event second, arrival second, fields) → records."""
    return [
        InputRecord(seq, fields, event_time=T0 + t * SECOND, arrival_time=T0 + a * SECOND)
        for seq, (t, a, fields) in enumerate(rows)
    ]


def test_a_filtered_event_moves_its_timeline_and_is_dropped() -> None:
    ordering = Ordering(late_arrival=None, out_of_order="0s", early_arrival=None)
    rows = records((10, 10, {"ok": True}), (20, 11, {"ok": False}), (15, 12, {"ok": True}))
    plain = simulate(Job(Source(path="-", timestamp_by="t"), ordering), rows)
    job = Job(Source(path="-", timestamp_by="t"), ordering, filter=Filter("ok"))
    result = simulate(
        job, records(*[(10, 10, {"ok": True}), (20, 11, {"ok": False}), (15, 12, {"ok": True})])
    )
    second, third = result.decisions[1], result.decisions[2]
    assert second["verdict"] == "dropped" and second["reasons"] == ["filtered"]
    assert second["timestamp"] is None
    # the third event meets the watermark the filtered one made: adjusted to 20 s
    assert third["watermark"] == plain.decisions[2]["watermark"] == "2026-03-01T09:00:20Z"
    assert third["verdict"] == "adjusted" and third["timestamp"] == "2026-03-01T09:00:20Z"
    assert [e["timestamp"] for e in result.events] == [
        "2026-03-01T09:00:10Z",
        "2026-03-01T09:00:20Z",
    ]
    m = result.metrics
    assert m["dropped"] == {"filtered": 1} and m["admitted"] == 2 and m["input"] == 3
    assert m["partitions"][0]["dropped"] == {"filtered": 1}


def test_the_policy_judges_first_and_a_filtered_event_is_never_window_closed() -> None:
    ordering = Ordering(
        late_arrival="20s", out_of_order="0s", early_arrival=None, on_out_of_order="accept"
    )
    window = Window(type="tumbling", size="10s", aggregates=(Aggregate.parse("n", "count(*)"),))
    rows = (
        (1, 1, {"v": 1}),
        (12, 12, {"v": 1}),
        (3, 13, {"v": 0}),  # out of order, its window is closed: fails the filter first
        (4, 14, {"v": 1}),  # the same, passes: window_closed
        (30, 100, {"v": 0}),  # late (adjusted by the policy), then filtered
    )
    job = Job(Source(path="-", timestamp_by="t"), ordering, window, filter=Filter("v = 1"))
    result = simulate(job, records(*rows))
    verdicts = [(d["verdict"], d["reasons"]) for d in result.decisions]
    assert verdicts == [
        ("accepted", []),
        ("accepted", []),
        ("dropped", ["out_of_order", "filtered"]),
        ("dead_lettered", ["out_of_order", "window_closed"]),
        ("dropped", ["late", "filtered"]),
    ]
    m = result.metrics
    assert m["dropped"] == {"filtered": 2} and m["dead_lettered"] == {"window_closed": 1}
    assert m["late"] == 1 and m["out_of_order"] == 2 and m["adjusted"] == 0


def test_having_and_select_shape_window_records() -> None:
    window = Window(
        type="tumbling",
        size="10s",
        group_by=("k",),
        aggregates=(Aggregate.parse("n", "count(*)"), Aggregate.parse("total", "sum(v)")),
        having="n >= 2",
    )
    job = Job(
        Source(path="-", timestamp_by="t"),
        Ordering(late_arrival=None, early_arrival=None),
        window,
        select=(
            Projection("key", "k"),
            Projection("mean", "total / n"),
            Projection("end", "window_end"),
        ),
    )
    rows = ((1, 1, {"k": "a", "v": 1}), (2, 2, {"k": "a", "v": 2}), (3, 3, {"k": "b", "v": 5}))
    result = simulate(job, records(*rows))
    assert [{k: v for k, v in w.items() if k != "emitted_at"} for w in result.windows] == [
        {
            "type": "window",
            "window_start": "2026-03-01T09:00:00Z",
            "window_end": "2026-03-01T09:00:10Z",
            "key": "a",
            "mean": 1.5,
            "end": "2026-03-01T09:00:10Z",
        }
    ]
    assert result.metrics["windows_emitted"] == 1 and result.metrics["windows_filtered"] == 1


def test_select_projects_released_events() -> None:
    job = Job(
        Source(path="-", timestamp_by="t"),
        Ordering(late_arrival=None, early_arrival=None),
        select=(Projection("id", "id"), Projection("twice", "v * 2"), Projection("tags", "tags")),
    )
    rows = ((1, 1, {"id": 1, "v": 2.5, "tags": [1], "x": 0}), (2, 2, {"id": 2, "v": "no"}))
    events = simulate(job, records(*rows)).events
    assert events == [
        {"type": "event", "id": 1, "twice": 5.0, "tags": [1], "timestamp": "2026-03-01T09:00:01Z"},
        {
            "type": "event",
            "id": 2,
            "twice": None,
            "tags": None,
            "timestamp": "2026-03-01T09:00:02Z",
        },
    ]


def test_select_projects_a_joins_matches() -> None:
    """Over a join, [select] reads <input>.<field> of either record and the match's
    timestamp; the released events carry the selected columns, then timestamp. The
    filter still reads each input's own events (plain names) before the join."""
    entry = Source(path="-", timestamp_by="t")
    job = Job(
        entry,
        Ordering(late_arrival=None, early_arrival=None),
        inputs=(("entry", entry), ("exit", Source(path="-", timestamp_by="t"))),
        join=Join("entry", "exit", ("plate",), ("0s", "15m")),
        filter=Filter("plate <> 'SKIP'"),
        select=(
            Projection("plate", "entry.plate"),
            Projection("tags", "exit.tags"),
            Projection("minutes", "DATEDIFF(minute, entry.t, exit.t)"),
            Projection("late", "DATEDIFF(second, entry.t, timestamp) >= 900"),
            Projection("none", "exit.missing"),
            Projection("at", "timestamp"),
        ),
    )
    rows = [
        ("entry/0", 0, {"plate": "A", "t": "2026-03-01T09:00:59Z"}),
        ("entry/0", 10, {"plate": "SKIP", "t": "2026-03-01T09:00:10Z"}),
        ("exit/0", 61, {"plate": "A", "t": "2026-03-01T09:01:00Z", "tags": {"lane": [2]}}),
        ("exit/0", 70, {"plate": "SKIP", "t": "2026-03-01T09:01:10Z"}),
        ("exit/0", 959, {"plate": "A", "t": "2026-03-01T09:15:59Z"}),
    ]
    result = simulate(
        job,
        [
            InputRecord(
                seq,
                fields,
                partition=partition,
                event_time=parse_instant(fields["t"]),
                arrival_time=T0 + second * SECOND,
            )
            for seq, (partition, second, fields) in enumerate(rows)
        ],
    )
    # 09:00:59 -> 09:01:00 crosses one minute boundary; -> 09:15:59 fifteen, 900 s
    assert result.events == [
        {
            "type": "event",
            "plate": "A",
            "tags": {"lane": [2]},
            "minutes": 1,
            "late": False,
            "none": None,
            "at": "2026-03-01T09:01:00Z",
            "timestamp": "2026-03-01T09:01:00Z",
        },
        {
            "type": "event",
            "plate": "A",
            "tags": None,
            "minutes": 15,
            "late": True,
            "none": None,
            "at": "2026-03-01T09:15:59Z",
            "timestamp": "2026-03-01T09:15:59Z",
        },
    ]
    assert result.metrics["dropped"] == {"filtered": 2}


@FEW
@given(scenarios(), st.integers(1, 4), st.integers(0, 3))
def test_a_filter_changes_only_the_fate_of_admitted_events_that_fail_it(
    scenario: Scenario, modulus: int, remainder: int
) -> None:
    """Every record keeps its watermark, its policy reasons and its system timestamp;
    admitted events failing the filter become ``dropped`` (``filtered``) and are not
    released; every record is still accounted for exactly once (semantics §8)."""
    note(scenario.describe())
    condition = f"n % {modulus} = {remainder}"
    plain = scenario.run()
    filtered_job = Job(
        scenario.job.source, scenario.job.ordering, scenario.job.window, filter=Filter(condition)
    )
    result = simulate(filtered_job, scenario.records())
    n_of = {r.seq: r.fields["n"] for r in scenario.records()}  # type: ignore[index]
    passing = {seq for seq, n in n_of.items() if n % modulus == remainder}
    stopped = 0
    for before, after in zip(plain.decisions, result.decisions, strict=True):
        assert after["watermark"] == before["watermark"]
        if before["verdict"] in ("accepted", "adjusted") and before["seq"] not in passing:
            stopped += 1
            assert after["verdict"] == "dropped"
            assert after["reasons"] == [*before["reasons"], "filtered"]
            assert after["timestamp"] is None
        else:
            assert after == before
    kept = [e for e in plain.events if n_of_event(e) % modulus == remainder]
    assert result.events == kept
    m = result.metrics
    assert m["input"] == m["admitted"] + sum(m["dropped"].values()) + sum(
        m["dead_lettered"].values()
    )
    assert m["dropped"].get("filtered", 0) == stopped
    assert m["admitted"] == plain.metrics["admitted"] - stopped


def n_of_event(event: dict) -> int:
    return event["n"]
