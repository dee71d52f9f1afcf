"""A window's records meeting reference data (semantics §13.5): what the reference
engine writes, and what the job model refuses, each error naming its key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparktide.core.engine import simulate
from sparktide.core.records import InputRecord
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.time import parse_instant


def _data(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    rows = [
        {"device": "d1", "max": 15, "site": "north"},
        {"device": "d2", "max": 40, "site": "south"},
        {"device": "d1", "max": 25, "site": "annex"},
    ]
    (tmp_path / "limits.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data: dict[str, Any] = {
        "inputs": {
            "readings": {"path": str(tmp_path), "timestamp_by": "t"},
            "limits": {"path": str(tmp_path / "limits.jsonl"), "reference": True},
        },
        "window": {
            "type": "tumbling",
            "size": "1m",
            "name": "w",
            "group_by": ["device"],
            "aggregates": {"avg": "avg(temp)"},
        },
        "join": {"left": "w", "right": "limits", "on": ["device"], "type": "left"},
        "output": {"path": str(tmp_path / "out")},
    }
    for key, value in changes.items():
        table, _, name = key.partition("__")
        if value is None:
            data[table].pop(name)
        else:
            data[table][name] = value
    return data


def _records() -> list[InputRecord]:
    readings = [("d1", 10, "09:00:05"), ("d1", 30, "09:00:20"), ("d3", 70, "09:00:40")]
    out = []
    for seq, (device, temp, at) in enumerate(readings):
        t = f"2026-03-01T{at}Z"
        fields = {"device": device, "temp": temp, "t": t}
        out.append(
            InputRecord(
                seq,
                fields,
                partition="readings/0",
                event_time=parse_instant(t),
                arrival_time=parse_instant(t),
            )
        )
    return out


def test_each_record_is_written_once_per_row_it_meets(tmp_path) -> None:
    job = Job.from_dict(_data(tmp_path), base_dir=tmp_path)
    assert job.window_meets_table and not job.looks_up_in_window
    windows = simulate(job, _records()).windows
    rows = [(w["device"], w["avg"], w["limits"] and w["limits"]["site"]) for w in windows]
    assert rows == [("d1", 20.0, "north"), ("d1", 20.0, "annex"), ("d3", 70.0, None)]


def test_where_and_select_read_the_window_and_the_row(tmp_path) -> None:
    data = _data(tmp_path, join__where="limits.max IS NULL OR w.avg > limits.max")
    data["select"] = {"device": "w.device", "site": "limits.site", "over": "w.avg - limits.max"}
    windows = simulate(Job.from_dict(data, base_dir=tmp_path), _records()).windows
    assert [(w["device"], w["site"], w["over"]) for w in windows] == [
        ("d1", "north", 5.0),
        ("d3", None, None),
    ]
    assert list(windows[0]) == [
        "type",
        "window_start",
        "window_end",
        "device",
        "site",
        "over",
        "emitted_at",
    ]


def test_the_condition_decides_the_rows_a_record_meets(tmp_path) -> None:
    """``[join] condition`` over the window's columns and the row's fields: a pair that
    fails it is no match; under ``type = "left"`` a record none of whose rows meets it
    is written once, its row null (d1's average 20 is above 15, not above 25)."""
    data = _data(tmp_path, join__condition="w.avg > limits.max")
    windows = simulate(Job.from_dict(data, base_dir=tmp_path), _records()).windows
    rows = [(w["device"], w["limits"] and w["limits"]["site"]) for w in windows]
    assert rows == [("d1", "north"), ("d3", None)]
    data = _data(tmp_path, join__condition="w.avg > limits.max + 100")
    windows = simulate(Job.from_dict(data, base_dir=tmp_path), _records()).windows
    assert [(w["device"], w["limits"]) for w in windows] == [("d1", None), ("d3", None)]
    data = _data(tmp_path, join__condition="w.avg > limits.max", join__type="inner")
    windows = simulate(Job.from_dict(data, base_dir=tmp_path), _records()).windows
    assert [(w["device"], w["limits"]["site"]) for w in windows] == [("d1", "north")]


@pytest.mark.parametrize(
    ("changes", "key", "message"),
    [
        ({"join__on": ["site"]}, "join.on", "'site' is not a column of the window w's"),
        ({"join__between": ["0s", "1m"]}, "join.between", "a table has no time"),
        ({"join__condition": "w.nope > 1"}, "join.condition", "'nope' is not a column"),
        ({"join__where": "w.nope > 1"}, "join.where", "'nope' is not a column of the window"),
        ({"join__where": "temp > 1"}, "join.where", "qualify it with its input (w.temp"),
    ],
)
def test_what_the_job_model_refuses(tmp_path, changes, key, message) -> None:
    with pytest.raises(ConfigError) as info:
        Job.from_dict(_data(tmp_path, **changes), base_dir=tmp_path)
    assert info.value.key == key and message in str(info.value), info.value


def test_select_reads_qualified_names(tmp_path) -> None:
    data = _data(tmp_path)
    data["select"] = {"device": "device"}
    with pytest.raises(ConfigError) as info:
        Job.from_dict(data, base_dir=tmp_path)
    assert info.value.key == "select.device" and "as w.<column>" in str(info.value)
