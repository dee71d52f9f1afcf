"""A windowed step JOINed with reference data (semantics §13.5): the translation (the
step's window named by it, ``[join] left`` that name, the statement's ``WHERE`` as
``[join] where``, columns over ``<step>.<column>`` and the table's fields) and every
refusal with its position."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from sparktide.errors import QueryError
from sparktide.job import Job
from sparktide.query import Bindings, job_to_toml, load_bindings, translate_text

_JOB_FILE = (
    '[inputs.Readings]\npath = "in"\n[inputs.Limits]\nreference = true\npath = "limits.jsonl"\n'
)
_STEP = (
    "WITH a AS (SELECT DeviceId, AVG(Temp) AS AvgTemp, System.Timestamp() AS Ends "
    "FROM Readings TIMESTAMP BY t WHERE Temp > 0 GROUP BY DeviceId, TumblingWindow(minute, 1)) "
)


@pytest.fixture
def b(tmp_path: Path) -> Bindings:
    (tmp_path / "job.toml").write_text(_JOB_FILE, "utf-8")
    return load_bindings(tmp_path / "job.toml")


def job(text: str, b: Bindings) -> Job:
    return translate_text(text, "asaql", b, "q.asaql").job


def test_the_step_s_window_meets_the_table(b: Bindings) -> None:
    j = job(
        _STEP + "SELECT a.DeviceId, a.AvgTemp - l.MaxTemp AS Excess, a.Ends, "
        "System.Timestamp() AS t INTO out FROM a JOIN Limits l "
        "ON a.DeviceId = l.DeviceId AND l.Active = 1 WHERE a.AvgTemp > l.MaxTemp",
        b,
    )
    assert j.window_meets_table and j.window is not None and j.window.name == "a"
    assert j.join is not None and (j.join.left, j.join.right, j.join.on) == (
        "a",
        "Limits",
        ("DeviceId",),
    )
    assert j.join.type == "inner" and j.join.condition is None
    assert j.join.where == "Limits.Active = 1 AND a.AvgTemp > Limits.MaxTemp"
    assert dict(j.inputs)["Readings"].where == "Temp > 0"  # (before the window)
    assert [(p.name, p.expression) for p in j.select] == [
        ("DeviceId", "a.DeviceId"),
        ("Excess", "a.AvgTemp - Limits.MaxTemp"),
        ("Ends", "a.window_end"),  # (the step's System.Timestamp(): the window's end)
        ("t", "a.window_end"),
    ]
    assert Job.from_dict(tomllib.loads(job_to_toml(j))) == j


def test_the_rest_of_a_left_outer_join_s_on_is_the_condition(b: Bindings) -> None:
    """Under LEFT OUTER JOIN the rest of ON decides which rows a record meets (one that
    meets none is written once, the row null): [join] condition; the WHERE stays
    [join] where, over what the join writes."""
    j = job(
        _STEP + "SELECT a.DeviceId, l.MaxTemp INTO out FROM a LEFT OUTER JOIN Limits l "
        "ON a.DeviceId = l.DeviceId AND l.Active = 1 AND a.AvgTemp > l.MinTemp "
        "WHERE l.MaxTemp IS NULL OR a.AvgTemp > l.MaxTemp",
        b,
    )
    assert j.join is not None and j.join.type == "left"
    assert j.join.condition == "Limits.Active = 1 AND a.AvgTemp > Limits.MinTemp"
    assert j.join.where == "Limits.MaxTemp IS NULL OR a.AvgTemp > Limits.MaxTemp"
    assert Job.from_dict(tomllib.loads(job_to_toml(j))) == j


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "SELECT a.DeviceId, COUNT(*) AS n INTO out FROM a JOIN Limits l "
            "ON a.DeviceId = l.DeviceId GROUP BY a.DeviceId, TumblingWindow(minute, 5)",
            "1:267",
            "GROUP BY over the JOIN of the windowed step a with Limits",
        ),
        (
            "SELECT a.DeviceId INTO out FROM a JOIN Limits a ON a.DeviceId = a.DeviceId",
            "1:207",
            "a names both inputs of the JOIN",
        ),
    ],
)
def test_refusals_name_construct_and_position(
    b: Bindings, text: str, where: str, message: str
) -> None:
    with pytest.raises(QueryError) as info:
        job(_STEP + text, b)
    shown = str(info.value)
    assert f"q.asaql:{where}: " in shown and message in shown, shown


def test_a_step_computing_over_its_aggregates_is_refused(b: Bindings) -> None:
    step = _STEP.replace("AVG(Temp) AS AvgTemp", "AVG(Temp) * 2 AS AvgTemp")
    with pytest.raises(QueryError) as info:
        job(step + "SELECT a.DeviceId INTO out FROM a JOIN Limits l ON a.DeviceId = l.DeviceId", b)
    assert "computes columns over its aggregates" in str(info.value)
