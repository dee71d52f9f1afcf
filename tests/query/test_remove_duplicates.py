"""A window over a snapshot step (semantics §13.4): Stream Analytics' "remove duplicates"
pattern becomes one window whose aggregates count each distinct combination once."""

from __future__ import annotations

import pytest

from sparktide.errors import QueryError
from sparktide.job import Job
from sparktide.query import translate_text
from sparktide.time import SECOND
from tests.query.test_multistep import run

MICROSOFT = """
WITH Temp AS (
    SELECT COUNT(DISTINCT Time) AS CountTime, Value, DeviceId
    FROM Input TIMESTAMP BY Time
    GROUP BY Value, DeviceId, SYSTEM.TIMESTAMP()
)
SELECT AVG(Value) AS AverageValue, DeviceId
INTO Output
FROM Temp
GROUP BY DeviceId, TumblingWindow(minute, 5)
"""
STEP = (
    "WITH s AS (SELECT k, v, j, COUNT(*) AS n, MAX(w) AS m FROM i TIMESTAMP BY t\n"
    "GROUP BY v, k, j, System.Timestamp())\n"
)


def job(text: str) -> Job:
    return translate_text(text, "asaql", None, "q.asaql").job


def aggregates(j: Job) -> dict[str, str]:
    assert j.window is not None
    return {a.name: str(a) for a in j.window.aggregates}


def test_microsoft_s_text_is_one_window_averaging_distinct_values() -> None:
    j = job(MICROSOFT)
    assert j.window is not None
    assert (j.window.type, j.window.size, j.window.group_by) == (
        "tumbling",
        300 * SECOND,
        ("DeviceId",),
    )
    assert aggregates(j) == {"AverageValue": "avg(Value) over (distinct Value, System.Timestamp())"}
    rows = [
        {"DeviceId": 1, "Value": 50, "t": "2026-03-01T09:00:01Z"},
        {"DeviceId": 1, "Value": 50, "t": "2026-03-01T09:00:01Z"},  # a duplicate
        {"DeviceId": 1, "Value": 60, "t": "2026-03-01T09:00:01Z"},
        {"DeviceId": 1, "Value": 60, "t": "2026-03-01T09:02:00Z"},
    ]
    j = job(MICROSOFT.replace("TIMESTAMP BY Time", "TIMESTAMP BY t"))
    assert run(j, rows) == [
        {
            "DeviceId": 1,
            "AverageValue": (50 + 60 + 60) / 3,
            "window_start": "2026-03-01T09:00:00Z",
            "window_end": "2026-03-01T09:05:00Z",
        }
    ]


def test_each_aggregate_counts_the_step_s_records() -> None:
    j = job(
        STEP + "SELECT k, COUNT(*) AS c, COUNT(v) AS cv, SUM(v) AS total, AVG(k) AS mk,\n"
        "MIN(v) AS lo, MAX(j) AS hi, SUM(n) AS events, MAX(m) AS top\n"
        "INTO o FROM s GROUP BY k, TumblingWindow(minute, 1)"
    )
    assert aggregates(j) == {
        "c": "count(*) over (distinct v, j, System.Timestamp())",
        "cv": "count(v) over (distinct v, j, System.Timestamp())",
        "total": "sum(v) over (distinct v, j, System.Timestamp())",
        "mk": "avg(k) over (distinct v, k, j, System.Timestamp())",
        "lo": "min(v)",  # the extremes are those of the events
        "hi": "max(j)",
        "events": "count(*)",  # SUM of a COUNT(*): the events
        "top": "max(w)",
    }


def test_a_snapshot_window_over_a_snapshot_step_is_one_snapshot_window() -> None:
    j = job(STEP + "SELECT k, COUNT(*) AS c INTO o FROM s GROUP BY k, System.Timestamp()")
    assert j.window is not None and j.window.type == "snapshot"
    assert aggregates(j) == {"c": "count(*) over (distinct v, j, System.Timestamp())"}
    j = job(
        "WITH s AS (SELECT COUNT(*) AS n FROM i TIMESTAMP BY t GROUP BY System.Timestamp())\n"
        "SELECT COUNT(*) AS times INTO o FROM s GROUP BY TumblingWindow(minute, 1)"
    )
    assert aggregates(j) == {"times": "count(*) over (distinct System.Timestamp())"}


@pytest.mark.parametrize(
    ("window", "kind"),
    [
        ("HoppingWindow(minute, 4, 2)", "hopping"),
        ("SlidingWindow(minute, 2)", "sliding"),
        ("SessionWindow(minute, 2, 10) OVER (PARTITION BY k)", "session"),
    ],
)
def test_any_window_over_a_snapshot_step_is_one_window_of_the_events(window, kind) -> None:
    """Semantics §13.4: the step's records lie at their events' timestamps, so hopping,
    sliding and session windows over them have the instants, hops and gaps of the
    events: one window of the events whose aggregates count each distinct record once
    (both engines run such windows in the differential cases ``window-distinct-*``)."""
    j = job(STEP + f"SELECT k, COUNT(*) AS c, SUM(v) AS total INTO o FROM s GROUP BY k, {window}")
    assert j.window is not None and j.window.type == kind and j.window.group_by == ("k",)
    assert aggregates(j) == {
        "c": "count(*) over (distinct v, j, System.Timestamp())",
        "total": "sum(v) over (distinct v, j, System.Timestamp())",
    }
    rows = [  # (k, v, j) repeated at 09:00:01; another record at 09:01:30
        {"k": 1, "v": 5, "j": 0, "t": "2026-03-01T09:00:01Z"},
        {"k": 1, "v": 5, "j": 0, "t": "2026-03-01T09:00:01Z"},
        {"k": 1, "v": 7, "j": 0, "t": "2026-03-01T09:01:30Z"},
    ]
    counts = {(w["c"], w["total"]) for w in run(j, rows)}
    assert counts <= {(1, 5), (2, 12), (1, 7)} and (2, 12) in counts  # (never 3, 17)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            MICROSOFT.replace("AVG(Value)", "SUM(CountTime)"),
            "7:8: SUM(CountTime) over the windowed step Temp is not supported yet",
        ),
        (
            STEP + "SELECT AVG(n) AS a INTO o FROM s GROUP BY TumblingWindow(minute, 1)",
            "3:8: AVG(n) over the windowed step s is not supported yet",
        ),
        (
            STEP + "SELECT COUNT(DISTINCT v) AS a INTO o FROM s GROUP BY TumblingWindow(minute, 1)",
            "3:8: COUNT(v) over the windowed step s is not supported yet",
        ),
        (
            "WITH s AS (SELECT v, k, COUNT(*) AS n FROM i GROUP BY k, System.Timestamp())\n"
            "SELECT AVG(v) AS a INTO o FROM s GROUP BY TumblingWindow(minute, 1)",
            "1:19: v is neither in the GROUP BY of the step s nor an aggregate of it",
        ),
        (
            "WITH s AS (SELECT e.k, a.ArrayValue AS x FROM i e CROSS APPLY "
            "GetArrayElements(e.r) AS a GROUP BY e.k, System.Timestamp())\n"
            "SELECT COUNT(*) AS c INTO o FROM s GROUP BY TumblingWindow(minute, 1)",
            "1:51: CROSS APPLY in the snapshot step s under a second window",
        ),
    ],
)
def test_what_is_not_one_window_is_refused(text: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        job(text)
    assert str(caught.value).startswith(f"q.asaql:{message}"), str(caught.value)
