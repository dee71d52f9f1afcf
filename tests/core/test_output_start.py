"""Output start time (docs/semantics.md §12): the repeatability guarantee, with Hypothesis.

A run whose output starts at S skips the events that arrived before its read point
(S − look-back − early-arrival limit) and writes no result before S; what it writes must
equal what a run over the whole input writes from S on — window records (contents,
``emitted_at``, order) and released events — for windows of every kind, every ordering
policy, disorder, late and early events, idle timeouts, several partitions, substreams,
and several start points per input. The generator is the window properties' own
(``tests/core/test_window_properties.py``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from sparktide.core.engine import Result, simulate
from sparktide.job import Job
from sparktide.job.start import read_point
from sparktide.time import MINUTE, SECOND, format_instant, parse_instant
from tests.core.test_window_properties import (
    BASE,
    GRID,
    KINDS,
    SETTINGS,
    Scenario,
    general_scenarios,
)
from tests.test_transcripts import PATHS, build_job, build_records, jsonable, load, run_options

ADMITTED = ("accepted", "adjusted")


def _end(job: Job, record: dict[str, Any]) -> int:
    return parse_instant(record[job.window_fields["window_end"]])


def _results(job: Job, result: Result, start: int | None = None) -> dict[str, list[Any]]:
    """The window records and released events, in the order written (from ``start`` on,
    when given)."""
    windows = result.windows
    events = result.events
    if start is not None:
        if job.window is not None:
            windows = [w for w in windows if _end(job, w) >= start]
        events = [e for e in events if parse_instant(e["timestamp"]) >= start]
    return {"windows": windows, "events": events}


def _run(scenario: Scenario, start: int | None = None) -> Result:
    return simulate(
        scenario.job,
        scenario.records(),
        flush=scenario.flush,
        until=scenario.until,
        output_start=start,
    )


@st.composite
def scenarios(draw: st.DrawFn, kinds: tuple[str, ...] = KINDS) -> Scenario:
    """The window properties' general scenarios, with short early-arrival limits more
    often (so that read points fall inside the input)."""
    scenario = draw(general_scenarios(kinds=kinds))
    early = draw(st.sampled_from([None, 0, GRID, SECOND, 2 * SECOND, 5 * MINUTE]))
    ordering = dataclasses.replace(scenario.job.ordering, early_arrival=early)
    job = dataclasses.replace(scenario.job, ordering=ordering)
    return Scenario(job, scenario.events, scenario.flush, scenario.until)


@st.composite
def start_points(draw: st.DrawFn, scenario: Scenario) -> list[int]:
    """Up to three start times around and inside the input (some 1 µs off the grid)."""
    last = max((e.arrival for e in scenario.events), default=BASE)
    span = (last - BASE) // GRID + 20
    # (mostly late in the input, where read points fall inside it)
    times = st.one_of(st.integers(-20, span), st.integers(span // 2, span))
    points = draw(st.lists(times, min_size=1, max_size=3, unique=True))
    return [BASE + p * GRID + draw(st.sampled_from([0, 0, 1, -1])) for p in points]


def check_repeatable(scenario: Scenario, starts: list[int]) -> None:
    """The guarantee: from each start time on, the results are the full run's."""
    job = scenario.job
    if job.window is not None:
        note(scenario.describe())
    else:
        note(f"{job.ordering}\n{job.source}\n" + "\n".join(map(str, scenario.events)))
    full = _run(scenario)
    for start in starts:
        point = read_point(job, start)
        note(f"start {format_instant(start)}, read point {format_instant(point)}")
        started = _run(scenario, start)
        expected_results = _results(job, full, start)
        assert _results(job, started) == expected_results
        compared = sum(map(len, expected_results.values()))
        event("results compared: " + ("some" if compared else "none"))
        skipped = [d for d in started.decisions if d["verdict"] == "skipped"]
        arrivals = [e.arrival for e in scenario.events]
        expected = sum(1 for a in arrivals if point is not None and a < point)
        assert len(skipped) == expected == started.metrics["skipped_before_start"]
        event("records skipped: " + ("some" if skipped else "none"))
        assert started.metrics["output_start_time"] == format_instant(start)
        counted = started.metrics["input"] + started.metrics["skipped_before_start"]
        assert counted == len(scenario.events)


@settings(SETTINGS, max_examples=400)
@given(st.data(), scenarios(kinds=KINDS))
def test_windows_from_the_start_time_equal_a_run_from_the_beginning(
    data: st.DataObject, scenario: Scenario
) -> None:
    check_repeatable(scenario, data.draw(start_points(scenario)))


@SETTINGS
@given(st.data(), scenarios(kinds=("tumbling",)))
def test_released_events_from_the_start_time_equal_a_run_from_the_beginning(
    data: st.DataObject, scenario: Scenario
) -> None:
    job = dataclasses.replace(scenario.job, window=None)
    released = Scenario(job, scenario.events, scenario.flush, scenario.until)
    check_repeatable(released, data.draw(start_points(released)))


# ------------------------------------------------------------------ every transcript
def _transcript_results(job: Job, result: Result, start: int | None) -> dict[str, list[Any]]:
    """The results a transcript's run writes (from ``start`` on): window records by
    their end, events (released ones, a join's matches) by their timestamp."""
    if job.window is not None:
        return _results(job, result, start)
    name = job.event_fields["timestamp"]
    events = result.events
    if start is not None:
        events = [e for e in events if parse_instant(e[name]) >= start]
    return {"windows": [], "events": events}


@pytest.mark.parametrize("early", [None, SECOND], ids=["as_written", "early_1s"])
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_every_transcript_from_any_start_time(path, early, tmp_path) -> None:
    """Each worked example (joins, unions, analytic columns, CTIs, lifetimes, every
    window...) started at each of its event and arrival times, and 1 µs after them,
    writes what it writes over the whole input from there on; also with an early-arrival
    limit of 1 s (both runs), which puts the read point inside the input."""
    data = load(path)
    paths = {}  # reference data: each table's rows in a JSONL file, as run_transcript does
    for name, rows in data["run"].get("reference", {}).items():
        paths[name] = str(tmp_path / f"{name}.jsonl")
        Path(paths[name]).write_text("".join(json.dumps(jsonable(r)) + "\n" for r in rows))
    job = build_job(data["job"], paths)
    if early is not None:
        job = dataclasses.replace(
            job, ordering=dataclasses.replace(job.ordering, early_arrival=early)
        )
    options = run_options({k: v for k, v in data["run"].items() if k != "output_start_time"})
    rows = data["run"]["input"]
    records = build_records(rows, job)
    full = simulate(job, build_records(rows, job), **options)
    times = {r.arrival_time for r in records if not r.malformed}
    times |= {r.event_time for r in records if not r.malformed}
    for start in sorted(t + d for t in times if t is not None for d in (0, 1)):
        started = simulate(job, build_records(rows, job), **options, output_start=start)
        got = _transcript_results(job, started, None)
        point = read_point(job, start)
        assert got == _transcript_results(job, full, start), (
            f"start {format_instant(start)}, read point {format_instant(point)}"
        )
