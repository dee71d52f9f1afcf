"""Per-input ordering policy and punctuation in the reference engine (semantics §7.8).

Properties: per-input tables that restate the job-wide values change no record; with
different settings, every event is judged by its own input's policy (late by its own
tolerance, dropped or adjusted by its own action), a union still releases in timestamp
order up to the minimum of its inputs' watermarks, and generated CTIs follow each input's
own count.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from sparktide.core.engine import simulate
from sparktide.job import Job, Ordering, Punctuation, Source
from sparktide.time import SECOND, parse_instant
from tests.core.test_punctuation_properties import BASE, SETTINGS, iso, union_records

NAMES = ("a", "b")


def orderings() -> st.SearchStrategy[Ordering]:
    return st.builds(
        Ordering,
        early_arrival=st.sampled_from([None, 60 * SECOND]),
        late_arrival=st.sampled_from([None, 2 * SECOND, 10 * SECOND]),
        out_of_order=st.sampled_from([None, 0, 2 * SECOND]),
        action=st.sampled_from(["adjust", "drop"]),
        on_out_of_order=st.sampled_from([None, "drop", "dead_letter"]),
    )


def punctuations() -> st.SearchStrategy[Punctuation | None]:
    generated = st.builds(
        Punctuation,
        every_events=st.sampled_from([1, 2, 3]),
        delay=st.sampled_from([0, -1, -2, SECOND]),
        watermark=st.sampled_from(["cti", "both"]),
    )
    periods = st.builds(
        Punctuation,
        every=st.sampled_from([SECOND, 5 * SECOND]),
        delay=st.sampled_from([0, -1]),
        watermark=st.sampled_from(["cti", "both"]),
    )
    return st.one_of(st.none(), generated, periods)


ORDERING_KEYS = ("early_arrival", "late_arrival", "out_of_order", "action", "on_out_of_order")


def as_overrides(ordering: Ordering, keys: list[str]) -> dict[str, Any]:
    """``ordering``'s values of ``keys`` as an input's override table."""
    return {k: getattr(ordering, k) for k in keys}


def punctuation_overrides(punctuation: Punctuation | None) -> dict[str, Any]:
    if punctuation is None or not punctuation.generated:
        return {}
    key = "every_events" if punctuation.every_events is not None else "every"
    return {key: getattr(punctuation, key), "delay": punctuation.delay}


@st.composite
def rows(draw: Any) -> list[tuple[str, dict[str, Any]]]:
    out = []
    arrival = BASE
    for n in range(draw(st.integers(1, 30))):
        arrival += draw(st.sampled_from([0, 1, SECOND, 3 * SECOND]))
        lag = draw(st.sampled_from([0, SECOND, 4 * SECOND, 30 * SECOND, -90 * SECOND]))
        row = {"id": n, "p": draw(st.integers(0, 1)), "a": iso(arrival), "t": iso(arrival - lag)}
        out.append((draw(st.sampled_from(NAMES)), row))
    return out


def union(ordering: Ordering, punctuation: Punctuation | None, per_input: dict) -> Job:
    inputs = tuple(
        (
            name,
            Source(
                path="-",
                timestamp_by="t",
                arrival_time="a",
                partition="p",
                partitions=2,
                **per_input.get(name, {}),
            ),
        )
        for name in NAMES
    )
    return Job(source=inputs[0][1], inputs=inputs, ordering=ordering, punctuation=punctuation)


def records_of(job: Job, scenario: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    result = simulate(job, union_records(job, scenario), flush=True)
    return {
        "decisions": result.decisions,
        "events": result.events,
        "dead_letters": result.dead_letters,
        "metrics": result.metrics,
    }


@SETTINGS
@given(orderings(), punctuations(), rows(), st.data())
def test_per_input_tables_equal_to_the_job_wide_ones_change_nothing(
    ordering: Ordering, punctuation: Punctuation | None, scenario: list, data: Any
) -> None:
    per_input = {}
    for name in NAMES:
        keys = data.draw(st.lists(st.sampled_from(ORDERING_KEYS), unique=True), label=name)
        table: dict[str, Any] = {"ordering": as_overrides(ordering, keys)}
        if data.draw(st.booleans(), label=f"{name} punctuation"):
            table["punctuation"] = punctuation_overrides(punctuation)
        per_input[name] = table
    plain = union(ordering, punctuation, {})
    restated = union(ordering, punctuation, per_input)
    note(repr(per_input))
    assert not restated.per_input
    assert records_of(restated, scenario) == records_of(plain, scenario)


@SETTINGS
@given(orderings(), orderings(), punctuations(), rows(), st.data())
def test_each_event_is_judged_by_its_own_inputs_policy(
    job_wide: Ordering, other: Ordering, punctuation: Punctuation | None, scenario: list, data: Any
) -> None:
    if other.out_of_order_action == "accept" or job_wide.out_of_order_action == "accept":
        return
    overrides = as_overrides(other, list(ORDERING_KEYS))
    generation = {}
    if punctuation is not None:
        generation = {"every_events": data.draw(st.sampled_from([1, 4])), "delay": -1}
    job = union(job_wide, punctuation, {"b": {"ordering": overrides, "punctuation": generation}})
    result = simulate(job, union_records(job, scenario), flush=False)
    policy = {"a": job_wide, "b": other}
    by_seq = dict(enumerate(scenario))
    for decision in result.decisions:
        name, row = by_seq[decision["seq"]]
        ordering = policy[name]
        a, t = parse_instant(row["a"]), parse_instant(row["t"])
        early = ordering.early_arrival is not None and t - a > ordering.early_arrival
        late = ordering.late_arrival is not None and a - t > ordering.late_arrival
        reasons = decision["reasons"]
        assert ("early" in reasons) == early, (name, decision)
        if not early:
            assert ("late" in reasons) == late, (name, decision)
        if late and ordering.action == "drop":
            assert decision["verdict"] == "dropped"
        if reasons == ["out_of_order"]:
            expected = {"adjust": "adjusted", "drop": "dropped", "dead_letter": "dead_lettered"}
            assert decision["verdict"] == expected[ordering.out_of_order_action]
    # the union still releases in order, up to the minimum of its inputs' watermarks
    stamps = [parse_instant(e["timestamp"]) for e in result.events]
    assert stamps == sorted(stamps)
    marks = [p["watermark"] for p in result.metrics["partitions"]]
    if stamps:
        assert None not in marks
        assert stamps[-1] <= min(parse_instant(m) for m in marks)


@SETTINGS
@given(rows(), st.sampled_from([1, 2, 3]), st.sampled_from([1, 2, 3]))
def test_generated_ctis_follow_each_inputs_own_count(scenario: list, n_a: int, n_b: int) -> None:
    ordering = Ordering(early_arrival=None, late_arrival=None)
    punctuation = Punctuation(every_events=n_a)
    job = union(ordering, punctuation, {"b": {"punctuation": {"every_events": n_b}}})
    result = simulate(job, union_records(job, scenario), flush=False)
    counted: dict[str, int] = {}
    for name, row in scenario:
        pid = f"{name}/{row['p']}"
        counted[pid] = counted.get(pid, 0) + 1
    every = {"a": n_a, "b": n_b}
    for entry in result.metrics["partitions"]:
        pid = entry["partition"]
        want = counted.get(pid, 0) // every[pid.split("/")[0]]
        assert entry.get("ctis_generated", 0) == want, (pid, entry)


def test_replace_keeps_the_job_wide_tables_the_default() -> None:
    job = union(Ordering(late_arrival=SECOND), None, {"b": {"ordering": {"action": "drop"}}})
    assert job.policy_of("a").ordering == job.ordering
    assert job.policy_of("b").ordering == replace(job.ordering, action="drop")
    assert job.per_input


def test_the_late_input_diagnostic_names_the_inputs_own_tolerance() -> None:
    job = union(
        Ordering(late_arrival=None),
        None,
        {"b": {"ordering": {"late_arrival": 10 * SECOND}}},
    )
    scenario = [
        ("a", {"id": 0, "p": 0, "a": iso(BASE + 60 * SECOND), "t": iso(BASE)}),
        ("b", {"id": 1, "p": 0, "a": iso(BASE + 60 * SECOND), "t": iso(BASE)}),
    ]
    result = simulate(job, union_records(job, scenario), flush=True)
    (late,) = [d for d in result.metrics["diagnostics"] if d["kind"] == "late_input"]
    assert late["count"] == 1
    assert late["example"]["partition"] == "b/0"
    assert "late_arrival 10s" in late["message"]
