"""A JOIN of an input with a windowed step (semantics §7.12): Stream Analytics' "last
event in a window" and "correlate two event types" patterns, translated, and what is
still refused, with its position."""

from __future__ import annotations

import tomllib

import pytest

from sparktide.errors import QueryError
from sparktide.job import Job
from sparktide.query import job_to_toml, translate_text

LAST = (
    "WITH Last AS (SELECT MAX(Time) AS LastTime FROM Input TIMESTAMP BY Time "
    "GROUP BY TumblingWindow(minute, 10)) "
)
JOIN_LAST = (
    "FROM Input TIMESTAMP BY Time JOIN Last ON DATEDIFF(minute, Input, Last) BETWEEN 0 "
    "AND 10 AND Input.Time = Last.LastTime"
)


def job(text: str) -> Job:
    return translate_text(text, "asaql", None, "q.asaql").job


def round_trips(j: Job) -> bool:
    return Job.from_dict(tomllib.loads(job_to_toml(j))) == j


def test_the_last_event_in_a_window() -> None:
    """The step's window reads a second reading of the input; its records are the
    join's right side, named by the step; an equality of differently named columns is
    part of the condition (no join column is needed)."""
    j = job(LAST + "SELECT Input.Plate, Input.Time INTO o " + JOIN_LAST)
    assert j.joins_windows and not j.windows_matches
    assert [(n, s.path, s.timestamp_by) for n, s in j.inputs] == [
        ("Input", "Input", "Time"),
        ("Input_2", "Input", "Time"),
    ]
    assert j.window is not None and j.window.name == "Last"
    assert [str(a) for a in j.window.aggregates] == ["max(Time)"]
    assert j.join is not None and (j.join.left, j.join.right, j.join.on) == ("Input", "Last", ())
    assert j.join.condition == "Input.Time = Last.LastTime"
    assert [(p.name, p.expression) for p in j.select] == [
        ("Plate", "Input.Plate"),
        ("Time", "Input.Time"),
    ]
    assert round_trips(j)


def test_two_event_types_of_one_stream_correlated() -> None:
    """The step's WHERE is its reading's own; System.Timestamp() AS t is the window's
    end (t2.t is window_end); the statement's WHERE on the step's columns is part of
    the condition, on the input's its own where."""
    j = job(
        "WITH peak AS (SELECT System.Timestamp() AS at, k, MAX(v) AS top FROM s "
        "TIMESTAMP BY t WHERE kind = 'power' GROUP BY k, SlidingWindow(minute, 3)) "
        "SELECT a.t, a.k, b.top, b.at INTO o FROM s a TIMESTAMP BY t JOIN peak b "
        "ON a.k = b.k AND a.t = b.at AND DATEDIFF(minute, a, b) BETWEEN 0 AND 3 "
        "WHERE a.kind = 'temp' AND b.top > 1000"
    )
    assert j.joins_windows and j.window is not None and j.window.type == "sliding"
    assert dict(j.inputs)["s"].where == "kind = 'temp'"
    assert dict(j.inputs)["s_2"].where == "kind = 'power'"
    assert j.window.group_by == ("k",)
    assert j.join is not None and j.join.on == ("k",)
    assert j.join.condition == "s.t = peak.window_end AND peak.top > 1000"
    assert [(p.name, p.expression) for p in j.select] == [
        ("t", "s.t"),
        ("k", "s.k"),
        ("top", "peak.top"),
        ("at", "peak.window_end"),
    ]
    assert round_trips(j)


def test_a_step_over_another_input_is_read_as_it_is() -> None:
    j = job(
        "WITH w AS (SELECT k, COUNT(*) AS n FROM b TIMESTAMP BY t "
        "GROUP BY k, TumblingWindow(second, 10)) "
        "SELECT a.k, w.n INTO o FROM a TIMESTAMP BY t JOIN w "
        "ON a.k = w.k AND DATEDIFF(second, a, w) BETWEEN 0 AND 10"
    )
    assert [name for name, _ in j.inputs] == ["a", "b"]
    assert j.window is not None and j.window.name == "w"


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            LAST.replace("MAX(Time) AS LastTime", "MAX(Time) AS LastTime, COUNT(*) * 2 AS n2")
            + "SELECT Input.Plate INTO o "
            + JOIN_LAST,
            "1:15",
            "the windowed step Last computes columns over its aggregates",
        ),
        (
            LAST
            + "SELECT COUNT(*) AS n INTO o "
            + JOIN_LAST
            + " GROUP BY TumblingWindow(minute, 5)",
            "1:258",
            "a window over the JOIN of the windowed step Last is not supported yet",
        ),
        (
            LAST + "SELECT Input.Plate INTO o FROM Last JOIN Input TIMESTAMP BY Time "
            "ON DATEDIFF(minute, Last, Input) BETWEEN 0 AND 10",
            "1:141",
            "a JOIN of the windowed step Last on its left is not supported yet",
        ),
    ],
)
def test_refusals_name_construct_and_position(text: str, where: str, message: str) -> None:
    with pytest.raises(QueryError) as info:
        job(text)
    assert f"q.asaql:{where}: " in str(info.value) and message in str(info.value), info.value
