"""The hold of the downstream watermark (semantics §7): ``metrics.output_watermark``.

Unit tests of :func:`sparktide.core.hold.output_watermark` with values worked by hand,
and a Hypothesis property over the window streams of ``test_window_properties``: driven
observation instant by observation instant, the reference engine's ``output_watermark``
never goes back and no window record written after it starts before it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from sparktide.core.engine import ReferenceEngine
from sparktide.core.hold import output_watermark
from sparktide.core.instants import NEG_INF, POS_INF
from sparktide.core.records import InputRecord
from sparktide.job import Aggregate, Job, Ordering, Source, Window
from sparktide.time import SECOND, format_instant, parse_instant
from tests.core.test_window_properties import SETTINGS, Scenario, general_scenarios

COUNT = (Aggregate("n", "count"),)


def at(text: str) -> int:
    """``HH:MM:SS[.ffffff]`` on 2026-03-01, or a full ISO time, as microseconds."""
    return parse_instant(text if "T" in text else f"2026-03-01T{text}Z")


def hold(window: Window, watermark: str) -> str | None:
    value = output_watermark(window, at(watermark))
    return None if value == NEG_INF else str(format_instant(value))


def day(text: str) -> str:
    return f"2026-03-01T{text}Z"


# ============================================================================ grid windows
def test_tumbling_holds_at_the_start_of_the_window_the_watermark_is_in() -> None:
    # [09:00, 09:01) closes when W ≥ 09:01; before that it is the earliest open window.
    w = Window(type="tumbling", size="1m", aggregates=COUNT)
    assert hold(w, "09:00:00") == day("09:00:00")
    assert hold(w, "09:00:59.999999") == day("09:00:00")
    assert hold(w, "09:01:00") == day("09:01:00")  # [09:00, 09:01) closed at exactly its end


def test_hopping_with_overlap_holds_at_the_oldest_overlapping_window() -> None:
    # size 1m, hop 20s: at W = 09:01:30 the windows ending after it are [09:00:40, 09:01:40),
    # [09:01:00, 09:02:00), [09:01:20, 09:02:20); [09:00:20, 09:01:20) has closed.
    w = Window(type="hopping", size="1m", hop="20s", aggregates=COUNT)
    assert hold(w, "09:01:30") == day("09:00:40")
    assert hold(w, "09:01:39.999999") == day("09:00:40")
    assert hold(w, "09:01:40") == day("09:01:00")


def test_hopping_with_gaps_holds_at_the_next_window_once_the_last_one_closed() -> None:
    # size 10s, hop 30s: windows [09:00:00, 09:00:10), [09:00:30, 09:00:40) …
    w = Window(type="hopping", size="10s", hop="30s", aggregates=COUNT)
    assert hold(w, "09:00:05") == day("09:00:00")
    assert hold(w, "09:00:10") == day("09:00:30")  # in the gap: the next window's start
    assert hold(w, "09:00:29") == day("09:00:30")  # (ahead of the watermark itself)


def test_boundary_end_closes_one_microsecond_later() -> None:
    # (09:00, 09:01] closes when W > 09:01, i.e. W ≥ 09:01:00.000001.
    w = Window(type="tumbling", size="1m", boundary="end", aggregates=COUNT)
    assert hold(w, "09:01:00") == day("09:00:00")
    assert hold(w, "09:01:00.000001") == day("09:01:00")


def test_allowed_lateness_holds_the_windows_it_keeps_open() -> None:
    # lateness 30s: [09:00, 09:01) closes at W ≥ 09:01:30.
    w = Window(type="tumbling", size="1m", allowed_lateness="30s", aggregates=COUNT)
    assert hold(w, "09:01:29.999999") == day("09:00:00")
    assert hold(w, "09:01:30") == day("09:01:00")
    h = Window(type="hopping", size="1m", hop="20s", allowed_lateness="15s", aggregates=COUNT)
    # E = W − 15s = 09:01:25: [09:00:20, 09:01:20) closed, [09:00:40, 09:01:40) open
    assert hold(h, "09:01:40") == day("09:00:40")


def test_offset_shifts_the_grid() -> None:
    # offset 3s: [09:00:03, 09:00:13), [09:00:13, 09:00:23) …
    w = Window(type="tumbling", size="10s", offset="3s", aggregates=COUNT)
    assert hold(w, "09:00:12.999999") == day("09:00:03")
    assert hold(w, "09:00:13") == day("09:00:13")
    # hopping size 10s, hop 4s, offset 1s: starts …, 09:00:01, 09:00:05, 09:00:09 …
    # at W = 09:00:14 the ends after it are 09:00:15 (start 09:00:05) and later
    h = Window(type="hopping", size="10s", hop="4s", offset="1s", aggregates=COUNT)
    assert hold(h, "09:00:14") == day("09:00:05")
    assert hold(h, "09:00:15") == day("09:00:09")


def test_before_1970_uses_floor_arithmetic() -> None:
    # 1969-12-31T23:59:55Z is −5 s. Tumbling 10 s: [−10 s, 0) is open (truncation toward
    # zero would give 0). Hopping 10 s / 4 s, offset 1 s: starts …, −15, −11, −7, −3, 1 s;
    # at W = −5 s [−15 s, −5 s) has closed, [−11 s, −1 s) is the earliest open window; at
    # W = −1 s that one closes too and [−7 s, 3 s) is.
    w = Window(type="tumbling", size="10s", aggregates=COUNT)
    assert hold(w, "1969-12-31T23:59:55Z") == "1969-12-31T23:59:50Z"
    h = Window(type="hopping", size="10s", hop="4s", offset="1s", aggregates=COUNT)
    assert hold(h, "1969-12-31T23:59:55Z") == "1969-12-31T23:59:49Z"
    assert output_watermark(h, -1 * SECOND) == -7 * SECOND


def test_snapshot_holds_at_the_watermark_minus_lateness() -> None:
    # A snapshot [t, t] closes when W > t + lateness: t = W − lateness is still open.
    w = Window(type="snapshot", aggregates=COUNT)
    assert hold(w, "09:00:10") == day("09:00:10")
    late = Window(type="snapshot", allowed_lateness="2s", aggregates=COUNT)
    assert hold(late, "09:00:10") == day("09:00:08")


def test_sliding_holds_a_size_before_the_earliest_open_point() -> None:
    # (p − 10s, p] closes when W > p (+ lateness): p = W − lateness can still come.
    w = Window(type="sliding", size="10s", aggregates=COUNT)
    assert hold(w, "09:00:30") == day("09:00:20")
    late = Window(type="sliding", size="10s", allowed_lateness="5s", aggregates=COUNT)
    assert hold(late, "09:00:30") == day("09:00:15")


def test_sessions_need_max_duration_for_a_promise() -> None:
    # max_duration 1m: a session from s ends at or before its cut, the first minute
    # boundary after s + 1m. At W = 09:05:30 (E = W) the last boundary ≤ E is B = 09:05:
    # a session from 09:04:00 is cut at 09:06 at the earliest and may still be open; one
    # from 09:03:59.999999 ends at 09:05 or before, so it has closed. Hold B − 1m.
    w = Window(type="session", gap="10s", max_duration="1m", aggregates=COUNT)
    assert hold(w, "09:05:30") == day("09:04:00")
    assert hold(w, "09:05:00") == day("09:04:00")  # [start, end): cut 09:05 closes at 09:05
    assert hold(w, "09:04:59.999999") == day("09:03:00")
    end = Window(type="session", gap="10s", max_duration="1m", boundary="end", aggregates=COUNT)
    assert hold(end, "09:05:00") == day("09:03:00")  # (start, end]: closes after 09:05
    assert hold(end, "09:05:00.000001") == day("09:04:00")
    offset = Window(
        type="session",
        gap="10s",
        max_duration="1m",
        offset="20s",
        allowed_lateness="5s",
        aggregates=COUNT,
    )
    # E = 09:05:25; boundaries at :20 each minute: B = 09:05:20, hold B − 1m
    assert hold(offset, "09:05:30") == day("09:04:20")
    unbounded = Window(type="session", gap="10s", aggregates=COUNT)
    assert hold(unbounded, "09:05:30") is None


@pytest.mark.parametrize(
    "window",
    [
        Window(type="tumbling", size="1m", aggregates=COUNT),
        Window(type="hopping", size="1m", hop="20s", aggregates=COUNT),
        Window(type="snapshot", aggregates=COUNT),
        Window(type="sliding", size="10s", aggregates=COUNT),
        Window(type="session", gap="10s", max_duration="1m", aggregates=COUNT),
    ],
    ids=lambda w: w.type,
)
def test_infinite_watermarks_pass_through(window: Window) -> None:
    assert output_watermark(window, NEG_INF) == NEG_INF  # null in a record
    assert output_watermark(window, POS_INF) == POS_INF


# ============================================================================ in the engine
def _engine(window: Window, **source: Any) -> ReferenceEngine:
    job = Job(
        Source(path="-", timestamp_by="t", arrival_time="a", **source),
        Ordering(late_arrival="5s", out_of_order="0s"),
        window,
    )
    return ReferenceEngine(job, explain=False)


def _record(seq: int, t: str, a: str, *, partition: Any = 0, key: Any = None, **fields: Any):
    """An input record at event time ``t``, arrival time ``a``."""
    return InputRecord(
        seq,
        {"t": t, **fields},
        partition=partition,
        key=key,
        event_time=at(t),
        arrival_time=at(a),
    )


def test_jobs_without_a_window_have_no_output_watermark() -> None:
    job = Job(Source(path="-", timestamp_by="t", arrival_time="a"))
    assert "output_watermark" not in ReferenceEngine(job).run([]).metrics


def test_the_flush_keeps_the_last_finite_value() -> None:
    """The metrics report the watermark as before the final flush; output_watermark is
    computed from it, so a flushed run reports the value it had at its last instant."""
    w = Window(type="hopping", size="1m", hop="20s", aggregates=COUNT)
    engine = _engine(w)
    engine.observe(at("09:01:35"), [_record(0, "09:01:30", "09:01:35")])
    # W = max(09:01:30 − 0, 09:01:35 − 5s) = 09:01:30 → [09:00:40, 09:01:40)
    assert engine.metrics()["output_watermark"] == day("09:00:40")
    engine.flush()
    metrics = engine.metrics()
    assert metrics["flushed"] is True
    assert metrics["watermark"] == day("09:01:30")
    assert metrics["output_watermark"] == day("09:00:40")


def test_substreams_hold_at_the_floor_not_at_the_lowest_key() -> None:
    """With substreams the metrics' watermark is the lowest key watermark, but a key seen
    for the first time starts at the floor (arrival clock − L): output_watermark follows
    the floor, so it also covers the keys to come. Here key a is at 09:00:10 while the
    floor is 09:00:10 − 5 s; key b's event at 09:00:06 then fills [09:00:06, 09:00:07)."""
    w = Window(type="tumbling", size="1s", group_by=("k",), aggregates=COUNT)
    engine = _engine(w, over="k")
    engine.observe(at("09:00:10"), [_record(0, "09:00:10", "09:00:10", k="a", key="a")])
    metrics = engine.metrics()
    assert metrics["watermark"] == day("09:00:10")
    assert metrics["output_watermark"] == day("09:00:05")  # the floor's window [05, 06)
    engine.observe(at("09:00:11"), [_record(1, "09:00:06", "09:00:10", k="b", key="b")])
    engine.flush()
    starts = [r["window_start"] for r in engine.result.windows]
    assert day("09:00:06") in starts  # below the lowest key watermark, above the hold


def test_a_partition_seen_for_the_first_time_lowers_both_watermarks() -> None:
    """partitioned = true without source.partitions: the job knows only the partitions it
    has seen, and one seen later brings its own, lower clock (docs/metrics.md)."""
    w = Window(type="tumbling", size="10s", group_by=("p",), aggregates=COUNT)
    job = Job(
        Source(path="-", timestamp_by="t", arrival_time="a", partition="p"),
        Ordering(late_arrival="5s", out_of_order="0s", partitioned=True),
        w,
    )
    engine = ReferenceEngine(job, explain=False)
    engine.observe(at("09:01:00"), [_record(0, "09:01:00", "09:01:00", p=0, partition=0)])
    assert engine.metrics()["output_watermark"] == day("09:01:00")
    engine.observe(at("09:01:01"), [_record(1, "09:00:30", "09:00:31", p=1, partition=1)])
    metrics = engine.metrics()
    # partition 1: W = max(09:00:30, 09:00:31 − 5 s) = 09:00:30
    assert metrics["watermark"] == day("09:00:30")
    assert metrics["output_watermark"] == day("09:00:30")


# ============================================================================ the property
class _Probe(ReferenceEngine):
    """The reference engine, sampling ``metrics()`` after every observation instant (the
    engine's own run loop drives it: record instants, timer due times, ``until``)."""

    def __init__(self, job: Job) -> None:
        super().__init__(job, explain=False)
        self.samples: list[tuple[int, str | None]] = []  # (windows written so far, value)

    def observe(self, now: int, records: list[InputRecord]) -> None:
        super().observe(now, records)
        self.samples.append((len(self.result.windows), self.metrics()["output_watermark"]))


@st.composite
def hold_scenarios(draw: st.DrawFn) -> Scenario:
    """``general_scenarios``, with the partitions of partitioned jobs declared (a partition
    the job does not know yet is outside every watermark's promise: see above) and often
    declared in merged jobs too."""
    scenario = draw(general_scenarios())
    source = scenario.job.source
    used = 1 + max((e.partition for e in scenario.events), default=0)
    if source.partition is not None and (scenario.job.ordering.partitioned or draw(st.booleans())):
        job = replace(scenario.job, source=replace(source, partitions=used))
        scenario = Scenario(job, scenario.events, scenario.flush, scenario.until)
    return scenario


@SETTINGS
@given(hold_scenarios())
def test_output_watermark_never_goes_back_and_no_later_window_starts_before_it(
    scenario: Scenario,
) -> None:
    note(scenario.describe())
    engine = _Probe(scenario.job)
    result = engine.run(scenario.records(), flush=scenario.flush, until=scenario.until)
    final = result.metrics["output_watermark"]
    engine.samples.append((len(result.windows), final))
    values = [NEG_INF if v is None else at(v) for _, v in engine.samples]
    note(f"samples: {engine.samples}")
    assert values == sorted(values), "output_watermark went back"
    for written, value in engine.samples:
        if value is None:
            continue
        for window in result.windows[written:]:
            assert at(window["window_start"]) >= at(value), (value, window)
    if scenario.window.type == "session" and scenario.window.max_duration is None:
        assert all(v is None for _, v in engine.samples)
