"""Joins with reference data in the reference engine (``[inputs.<name>] reference = true``)."""

from __future__ import annotations

import json

import pytest

from sparktide.core.engine import simulate
from sparktide.errors import ConfigError, InputError
from sparktide.job import Job
from sparktide.reader import job_records


def _job(tmp_path, reference_text: str, name: str = "devices.jsonl", **join) -> Job:
    (tmp_path / "in").mkdir(exist_ok=True)
    rows = [
        {"device": "d1", "t": "2026-03-01T09:00:01Z", "v": 1},
        {"device": "d2", "t": "2026-03-01T09:00:02Z", "v": 2},
        {"device": "d1", "t": "2026-03-01T09:00:03Z", "v": 3},
    ]
    (tmp_path / "in" / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / name).write_text(reference_text)
    return Job.from_dict(
        {
            "inputs": {
                "readings": {"path": "in", "timestamp_by": "t", "arrival_time": "t"},
                "devices": {
                    "reference": True,
                    "path": name,
                    "format": name.rsplit(".", 1)[1],
                },
            },
            "join": {"left": "readings", "right": "devices", "on": ["device"], **join},
        },
        base_dir=tmp_path,
    )


def test_an_inner_join_writes_one_record_per_matching_row(tmp_path):
    job = _job(tmp_path, "device,model\nd1,A\nd3,C\nd1,B\n", name="devices.csv")
    result = simulate(job, job_records(job))
    pairs = [(e["readings"]["v"], e["devices"]["model"]) for e in result.events]
    assert pairs == [(1, "A"), (1, "B"), (3, "A"), (3, "B")]  # d2 meets no row: not written
    assert [e["timestamp"][-9:] for e in result.events] == ["09:00:01Z"] * 2 + ["09:00:03Z"] * 2
    assert result.metrics["admitted"] == 3 and result.metrics["released"] == 4


def test_a_left_join_writes_an_event_without_a_row_once(tmp_path):
    job = _job(tmp_path, '{"device": "d1", "model": "A"}\n', type="left")
    result = simulate(job, job_records(job))
    row = {"device": "d1", "model": "A"}
    assert [e["devices"] for e in result.events] == [row, None, row]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"device": "d1"}\n{"device": \n', "line 2: not valid JSON"),
        ('["d1"]\n', "line 1: expected a JSON object"),
    ],
)
def test_unreadable_reference_data_stops_the_job_naming_the_line(tmp_path, text, message):
    job = _job(tmp_path, text)
    with pytest.raises(InputError) as info:
        simulate(job, job_records(job))
    assert str(info.value).startswith("inputs.devices: reference data ")
    assert message in str(info.value)


def test_missing_reference_data_names_the_input(tmp_path):
    job = _job(tmp_path, "")
    (tmp_path / "devices.jsonl").unlink()
    with pytest.raises(InputError, match=r"^inputs\.devices\.path: no such file"):
        simulate(job, job_records(job))


def _window_job(tmp_path, **join) -> Job:
    """Readings (one with a field named like the table) through a tumbling window over
    their join with the devices table, grouped by the table's model (semantics §11.23)."""
    (tmp_path / "in").mkdir(exist_ok=True)
    rows = [
        {"device": "d1", "t": "2026-03-01T09:00:01Z", "v": 1, "devices": "mine"},
        {"device": "d2", "t": "2026-03-01T09:00:02Z", "v": 2},
        {"device": "d1", "t": "2026-03-01T09:00:03Z", "v": 5},
        {"device": "d9", "t": "2026-03-01T09:00:04Z", "v": 7},
        {"device": "d1", "t": "2026-03-01T09:01:05Z", "v": 4},
    ]
    (tmp_path / "in" / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "devices.csv").write_text("device,model,cap\nd1,A,3\nd2,C,9\nd1,B,9\n")
    return Job.from_dict(
        {
            "inputs": {
                "readings": {"path": "in", "timestamp_by": "t", "arrival_time": "t"},
                "devices": {"reference": True, "path": "devices.csv", "format": "csv"},
            },
            "join": {"left": "readings", "right": "devices", "on": ["device"], **join},
            "filter": {"where": "GETRECORDPROPERTYVALUE(devices, 'model') <> 'C' OR v > 1"},
            "window": {
                "type": "tumbling",
                "size": "1m",
                "group_by": [{"model": "GETRECORDPROPERTYVALUE(devices, 'model')"}],
                "aggregates": {
                    "n": "count(*)",
                    "vs": "collect_list(v)",
                    "headroom": "sum(GETRECORDPROPERTYVALUE(devices, 'cap') - v)",
                },
            },
        },
        base_dir=tmp_path,
    )


def _windows(result) -> list[tuple]:
    return [
        (w["window_start"][-9:], w["model"], w["n"], w["vs"], w["headroom"]) for w in result.windows
    ]


def test_a_window_over_an_inner_join_counts_each_match(tmp_path):
    # each d1 reading meets two rows: it is in the A group and in the B group; the
    # condition keeps a pair whose cap is above the value (the 5 meets B only); d9 meets
    # no row: dropped, no_match
    job = _window_job(tmp_path, condition="devices.cap > readings.v")
    result = simulate(job, job_records(job))
    assert _windows(result) == [
        ("09:00:00Z", "A", 1, [1], 2),
        ("09:00:00Z", "B", 2, [1, 5], 12),
        ("09:00:00Z", "C", 1, [2], 7),
        ("09:01:00Z", "B", 1, [4], 5),
    ]
    assert result.metrics["admitted"] == 4
    assert result.metrics["dropped"] == {"no_match": 1}


def test_a_window_over_a_left_join_keeps_an_unmatched_event_once(tmp_path):
    # the d9 reading meets no row: one event, the table's name null (its own field of that
    # name replaced); the filter reads each match: C with v = 2 passes
    job = _window_job(tmp_path, type="left")
    result = simulate(job, job_records(job))
    assert _windows(result) == [
        ("09:00:00Z", None, 1, [7], None),
        ("09:00:00Z", "A", 2, [1, 5], 0),
        ("09:00:00Z", "B", 2, [1, 5], 12),
        ("09:00:00Z", "C", 1, [2], 7),
        ("09:01:00Z", "A", 1, [4], -1),
        ("09:01:00Z", "B", 1, [4], 5),
    ]
    assert result.metrics["admitted"] == 5 and result.metrics["dropped"] == {}


def test_a_window_over_a_join_with_reference_data_refuses_join_where(tmp_path):
    with pytest.raises(ConfigError, match=r"^join\.where: .*\[filter\]"):
        _window_job(tmp_path, where="devices.model IS NULL")
