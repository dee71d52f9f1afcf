"""A window over the matches of a JOIN of two streams (semantics §7.11): the translation
(direct, and over a WITH step that names the JOIN's columns), its jobs on data, and what
is still refused, with its position."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from sparktide.core.engine import simulate
from sparktide.core.records import InputRecord
from sparktide.errors import QueryError
from sparktide.job import Job
from sparktide.query import job_to_toml, translate_text
from sparktide.time import parse_instant

JOIN = (
    "FROM Entry e TIMESTAMP BY t JOIN Exit x TIMESTAMP BY t "
    "ON e.plate = x.plate AND DATEDIFF(minute, e, x) BETWEEN 0 AND 15 "
)


def job(text: str) -> Job:
    return translate_text(text, "asaql", None, "q.asaql").job


def round_trips(j: Job) -> bool:
    return Job.from_dict(tomllib.loads(job_to_toml(j))) == j


def test_a_group_by_over_a_join_is_a_window_over_its_matches() -> None:
    j = job(
        "SELECT e.booth, COUNT(*) AS n, SUM(x.toll) AS toll, "
        "MAX(DATEDIFF(minute, e.t, x.t)) AS longest INTO o "
        + JOIN
        + "WHERE x.toll > 0 GROUP BY e.booth, TumblingWindow(minute, 10) HAVING COUNT(*) > 1"
    )
    assert j.windows_matches and j.join is not None and j.join.on == ("plate",)
    assert j.window is not None
    assert 'group_by = [{ booth = "Entry.booth" }]' in job_to_toml(j)
    assert [str(a) for a in j.window.aggregates] == [
        "count(*)",
        "sum(Exit.toll)",
        "max(DATEDIFF(minute, Entry.t, Exit.t))",
    ]
    assert j.window.having == "n > 1"
    assert dict(j.inputs)["Exit"].where == "toll > 0"  # (one input's WHERE: §11.20)
    assert round_trips(j)


def test_a_window_over_a_step_that_names_the_join_s_columns() -> None:
    j = job(
        "WITH Trips AS (SELECT e.booth AS booth, x.toll AS toll " + JOIN + ") "
        "SELECT booth, SUM(toll) AS toll INTO o FROM Trips GROUP BY booth, "
        "TumblingWindow(minute, 10)"
    )
    assert j.windows_matches and j.window is not None
    assert 'group_by = [{ booth = "Entry.booth" }]' in job_to_toml(j)
    assert [str(a) for a in j.window.aggregates] == ["sum(Exit.toll)"]
    assert round_trips(j)


def test_a_select_over_a_windowed_join_step_filters_and_computes_its_records() -> None:
    """A windowed step over a JOIN read by a SELECT without GROUP BY (semantics §13.3):
    its WHERE is the window's HAVING, its columns a [select] over the window's."""
    j = job(
        "WITH w AS (SELECT e.booth, COUNT(*) AS n, SUM(x.toll) AS toll "
        + JOIN
        + "GROUP BY e.booth, TumblingWindow(minute, 10)) "
        "SELECT booth, toll * 2 AS double_toll INTO o FROM w WHERE n > 1"
    )
    assert j.windows_matches and j.window is not None
    assert j.window.having == "_count > 1"
    assert [(p.name, p.expression) for p in j.select] == [
        ("booth", "booth"),
        ("double_toll", "_sum * 2"),
    ]
    whole = job(
        "WITH w AS (SELECT e.booth, COUNT(*) AS n "
        + JOIN
        + "GROUP BY e.booth, TumblingWindow(minute, 10)) SELECT * INTO o FROM w"
    )
    assert whole.windows_matches and round_trips(whole)


def test_an_input_s_record_whole_and_values_inside_a_field() -> None:
    j = job(
        "SELECT e.booth AS b, COLLECT(x) AS exits, MAX(x.car.weight) AS heaviest INTO o "
        + JOIN
        + "GROUP BY e.booth, TumblingWindow(minute, 10)"
    )
    assert j.window is not None
    assert [str(a) for a in j.window.aggregates] == [
        "collect(Exit)",
        "max(GETRECORDPROPERTYVALUE(Exit.car, 'weight'))",
    ]


def test_system_timestamp_in_an_aggregate_is_each_match_s_time() -> None:
    """The match's time: the later of its two events' (semantics §6.12, §7.11)."""
    j = job(
        "SELECT e.booth, MAX(System.Timestamp()) AS last, "
        "COLLECT(DATEDIFF(second, e.t, System.Timestamp())) AS waits INTO o "
        + JOIN
        + "GROUP BY e.booth, TumblingWindow(minute, 10)"
    )
    assert j.window is not None and round_trips(j)
    assert [str(a) for a in j.window.aggregates] == [
        "max(System.Timestamp())",
        "collect(DATEDIFF(second, Entry.t, System.Timestamp()))",
    ]
    records = [
        _record(0, "Entry", "2026-03-01T09:00:00Z", plate="A", booth=1),
        _record(1, "Exit", "2026-03-01T09:03:00Z", plate="A"),
        _record(2, "Entry", "2026-03-01T09:04:00Z", plate="B", booth=1),
        _record(3, "Exit", "2026-03-01T09:05:30Z", plate="B"),
    ]
    windows = simulate(j, records).windows
    assert [(w["last"], w["waits"]) for w in windows] == [("2026-03-01T09:05:30Z", [180, 90])]


def _record(seq: int, name: str, t: str, **fields: object) -> InputRecord:
    at = parse_instant(t)
    return InputRecord(
        seq, {"t": t, **fields}, partition=f"{name}/0", event_time=at, arrival_time=at
    )


def test_the_translated_job_counts_matches_per_window(tmp_path: Path) -> None:
    j = job(
        "SELECT e.booth, COUNT(*) AS n, SUM(x.toll) AS toll INTO o "
        + JOIN
        + "GROUP BY e.booth, TumblingWindow(minute, 10)"
    )
    records = [
        _record(0, "Entry", "2026-03-01T09:00:00Z", plate="A", booth=1),
        _record(1, "Entry", "2026-03-01T09:01:00Z", plate="B", booth=1),
        _record(2, "Exit", "2026-03-01T09:03:00Z", plate="A", toll=4),
        _record(3, "Exit", "2026-03-01T09:05:00Z", plate="B", toll=6),
        _record(4, "Exit", "2026-03-01T09:40:00Z", plate="B", toll=9),  # (39 min: no match)
    ]
    windows = [
        {k: w[k] for k in ("booth", "window_end", "n", "toll")}
        for w in simulate(j, records).windows
    ]
    assert windows == [{"booth": 1, "window_end": "2026-03-01T09:10:00Z", "n": 2, "toll": 10}]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "SELECT COUNT(*) AS n INTO o " + JOIN + "GROUP BY booth, TumblingWindow(minute, 10)",
            "1:158",
            "booth over a JOIN: qualify it with its input (e.booth)",
        ),
        (
            "SELECT e.booth, TopOne() OVER (ORDER BY toll DESC) AS top INTO o "
            + JOIN
            + "GROUP BY e.booth, TumblingWindow(minute, 10)",
            "1:186",
            "window.aggregates.top: 'toll' over a join: a window reads each match",
        ),
        (
            "SELECT e.booth, TopOne() OVER (ORDER BY x.toll DESC) AS top INTO o "
            + JOIN
            + "GROUP BY e.booth, TumblingWindow(minute, 10)",
            "1:41",
            "x.toll as a plain column over a JOIN's matches",
        ),
        (
            "SELECT e.booth, SUM(toll) AS t INTO o "
            + JOIN
            + "GROUP BY e.booth, TumblingWindow(minute, 10)",
            "1:21",
            "toll over a JOIN: qualify it with its input (e.toll)",
        ),
        (
            "SELECT DATEPART(minute, System.Timestamp()) AS m, COUNT(*) AS n INTO o "
            + JOIN
            + "GROUP BY DATEPART(minute, System.Timestamp()), TumblingWindow(minute, 10)",
            "1:218",
            "System.Timestamp() inside a GROUP BY expression is not supported",
        ),
        (
            "WITH w AS (SELECT e.booth, COUNT(*) AS n "
            + JOIN
            + "GROUP BY e.booth, TumblingWindow(minute, 10)) "
            "SELECT booth, SUM(n) AS total INTO o FROM w "
            "GROUP BY booth, TumblingWindow(minute, 20)",
            "1:252",
            "a window over the results of the windowed step w is not supported yet",
        ),
        (
            "WITH j AS (SELECT * " + JOIN + ") SELECT COUNT(*) AS n INTO o FROM j "
            "GROUP BY TumblingWindow(minute, 10)",
            "1:178",
            "a window over a step that selects a JOIN's matches whole (SELECT *)",
        ),
    ],
)
def test_refusals_name_construct_and_position(text: str, where: str, message: str) -> None:
    with pytest.raises(QueryError) as info:
        job(text)
    assert f"q.asaql:{where}: " in str(info.value) and message in str(info.value), info.value
