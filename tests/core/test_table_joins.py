"""Further tables of reference data (``[[join.then]]``, semantics §11.8, *Further tables*):
the tables meet each other when the run reads them; events meet the rows so made."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparktide.core.engine import simulate
from sparktide.core.lookup import reference_rows, tables_met
from sparktide.errors import ConfigError
from sparktide.job import Job, TableJoin
from sparktide.reader import job_records

DEVICES = [
    {"device": "d1", "model": "A", "site": "s1"},
    {"device": "d2", "model": "B", "site": "s2"},
    {"device": "d3", "model": "C"},
]
SITES = [
    {"site": "s1", "region": "north", "open": 1},
    {"site": "s1", "region": "east", "open": 0},
    {"site": "s9", "region": "west", "open": 1},
]


def _lines(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _data(tmp_path, then: list[dict[str, Any]], join: dict[str, Any] | None = None) -> dict:
    (tmp_path / "in").mkdir(exist_ok=True)
    events = [
        {"device": "d1", "t": "2026-03-01T09:00:01Z", "v": 1},
        {"device": "d2", "t": "2026-03-01T09:00:02Z", "v": 2},
        {"device": "d3", "t": "2026-03-01T09:00:03Z", "v": 3},
    ]
    (tmp_path / "in" / "a.jsonl").write_text(_lines(events))
    (tmp_path / "devices.jsonl").write_text(_lines(DEVICES))
    (tmp_path / "sites.jsonl").write_text(_lines(SITES))
    (tmp_path / "regions.jsonl").write_text(_lines([{"region": "north", "boss": "Ann"}]))
    return {
        "inputs": {
            "readings": {"path": "in", "timestamp_by": "t", "arrival_time": "t"},
            "devices": {"reference": True, "path": "devices.jsonl"},
            "sites": {"reference": True, "path": "sites.jsonl"},
        },
        "join": {"left": "readings", "right": "devices", "on": ["device"], "then": then}
        | (join or {}),
    }


def _job(tmp_path, then: list[dict[str, Any]], **join: Any) -> Job:
    return Job.from_dict(_data(tmp_path, then, join), base_dir=tmp_path)


def test_an_inner_table_join_keeps_only_rows_that_meet_one(tmp_path):
    job = _job(tmp_path, [{"left": "devices", "right": "sites", "on": ["site"]}])
    rows = reference_rows(job)
    assert [(r["device"], r["sites"]["region"]) for r in rows] == [
        ("d1", "north"),
        ("d1", "east"),
    ]
    result = simulate(job, job_records(job))
    assert [(e["readings"]["v"], e["devices"]["sites"]["region"]) for e in result.events] == [
        (1, "north"),
        (1, "east"),
    ]


def test_a_left_table_join_keeps_a_row_that_meets_none_with_a_null_member(tmp_path):
    then = [
        {
            "left": "devices",
            "right": "sites",
            "on": ["site"],
            "type": "left",
            "condition": ("sites.open = 1"),
        }
    ]
    job = _job(tmp_path, then, type="left")
    result = simulate(job, job_records(job))
    found = [(e["readings"]["v"], e["devices"] and e["devices"]["sites"]) for e in result.events]
    north = {"site": "s1", "region": "north", "open": 1}
    assert found == [(1, north), (2, None), (3, None)]  # (d2: no s2; d3: no site at all)


def test_a_table_joins_a_later_tables_row_and_its_member_replaces_a_field(tmp_path):
    data = _data(
        tmp_path,
        [
            {"left": "devices", "right": "sites", "on": ["site"], "type": "left"},
            {"left": "sites", "right": "model", "on": ["region"], "type": "left"},
        ],
    )
    data["inputs"]["model"] = {"reference": True, "path": "regions.jsonl"}
    job = Job.from_dict(data, base_dir=tmp_path)
    rows = reference_rows(job)
    assert [(r["device"], r["model"]) for r in rows] == [
        ("d1", {"region": "north", "boss": "Ann"}),  # (the member replaced devices' model)
        ("d1", None),
        ("d2", None),
        ("d3", None),
    ]


def test_tables_met_takes_keys_by_value_and_never_matches_a_null():
    step = TableJoin(left="devices", right="sites", on=(("site", "id"),))
    rows = [{"site": 1}, {"site": None}, {"site": True}, {}]
    table = [{"id": 1.0}, {"id": None}, {"id": 1}]
    met = tables_met("devices", step, rows, table)
    assert met == [{"site": 1, "sites": {"id": 1.0}}, {"site": 1, "sites": {"id": 1}}]


@pytest.mark.parametrize(
    ("then", "key", "message"),
    [
        ([{"left": "nope", "right": "sites"}], "join.then[0].left", "already hold (devices)"),
        ([{"left": "devices", "right": "readings"}], "join.then[0].right", "not joined yet"),
        (
            [{"left": "devices", "right": "sites", "condition": "readings.v > 1"}],
            "join.then[0].condition",
            "'readings.v'",
        ),
        ([{"left": "devices", "right": "sites", "how": 1}], "join.then[0].how", "not a key"),
        ([{"right": "sites"}], "join.then[0].left", "is required"),
        ([], "inputs.sites.reference", "add a [[join.then]] with right = 'sites'"),
        ("sites", "join.then", "must be a list"),
    ],
)
def test_a_table_join_that_does_not_chain_the_tables_is_refused_by_key(
    tmp_path, then, key, message
):
    with pytest.raises(ConfigError) as info:
        _job(tmp_path, then)
    assert info.value.key == key
    assert message in info.value.message


def test_a_join_of_two_streams_meets_reference_data_only(tmp_path):
    """Its ``[[join.then]]`` meets tables (semantics §11.26): a stream is no table."""
    data = _data(tmp_path, [{"left": "readings", "right": "more"}])
    data["inputs"] = {
        "readings": data["inputs"]["readings"],
        "devices": data["inputs"]["readings"],
    }
    data["join"]["between"] = ["0s", "1m"]
    with pytest.raises(ConfigError) as info:
        Job.from_dict(data, base_dir=tmp_path)
    assert info.value.key == "join.then[0].right"


def test_an_event_meets_a_table_by_a_value_inside_its_record(tmp_path):
    """``on = [["hub.device", "device"]]``: Stream Analytics' ``ON
    i.IoTHub.ConnectionDeviceId = d.DeviceId``; an event whose value is missing, or
    whose ``hub`` is no record, meets no row."""
    (tmp_path / "in").mkdir()
    events = [
        {"hub": {"device": "d2"}, "t": "2026-03-01T09:00:01Z"},
        {"hub": "d1", "t": "2026-03-01T09:00:02Z"},
        {"t": "2026-03-01T09:00:03Z"},
    ]
    (tmp_path / "in" / "a.jsonl").write_text(_lines(events))
    (tmp_path / "devices.jsonl").write_text(_lines(DEVICES))
    job = Job.from_dict(
        {
            "inputs": {
                "readings": {"path": "in", "timestamp_by": "t", "arrival_time": "t"},
                "devices": {"reference": True, "path": "devices.jsonl"},
            },
            "join": {
                "left": "readings",
                "right": "devices",
                "on": [["hub.device", "device"]],
                "type": "left",
            },
        },
        base_dir=tmp_path,
    )
    result = simulate(job, job_records(job))
    assert [e["devices"] and e["devices"]["model"] for e in result.events] == ["B", None, None]
    with pytest.raises(ConfigError) as info:
        Job.from_dict(
            {
                **job_data(tmp_path),
                "join": {"left": "readings", "right": "devices", "on": ["hub..x"]},
            },
            base_dir=tmp_path,
        )
    assert info.value.key == "join.on" and "names joined by dots" in info.value.message


def job_data(tmp_path) -> dict:
    return {
        "inputs": {
            "readings": {"path": "in", "timestamp_by": "t"},
            "devices": {"reference": True, "path": "devices.jsonl"},
        }
    }


def _by_event(tmp_path, step: dict[str, Any], join_type: str = "left") -> Job:
    """Readings joined with devices, and with sites by the readings' own ``zone``."""
    (tmp_path / "in").mkdir(exist_ok=True)
    events = [
        {"device": "d1", "zone": "s1", "t": "2026-03-01T09:00:01Z"},
        {"device": "d9", "zone": "s1", "t": "2026-03-01T09:00:02Z"},  # (no device)
        {"device": "d2", "zone": "s7", "t": "2026-03-01T09:00:03Z"},  # (no site)
        {"device": "d9", "zone": "s7", "t": "2026-03-01T09:00:04Z"},  # (neither)
    ]
    (tmp_path / "in" / "a.jsonl").write_text(_lines(events))
    devices = [{**DEVICES[0], "sites": "a field the member replaces"}, *DEVICES[1:]]
    (tmp_path / "devices.jsonl").write_text(_lines(devices))
    (tmp_path / "sites.jsonl").write_text(_lines(SITES))
    data = {
        "inputs": {
            "readings": {"path": "in", "timestamp_by": "t", "arrival_time": "t"},
            "devices": {"reference": True, "path": "devices.jsonl"},
            "sites": {"reference": True, "path": "sites.jsonl"},
        },
        "join": {
            "left": "readings",
            "right": "devices",
            "on": ["device"],
            "type": join_type,
            "then": [{"left": "readings", "right": "sites", "on": [["zone", "site"]], **step}],
        },
    }
    return Job.from_dict(data, base_dir=tmp_path)


def test_a_table_met_by_the_event_s_fields_is_a_member_of_the_row_it_meets(tmp_path):
    """``left`` the stream: each event meets the table by its own fields, the row met a
    member of the first table's row (of an empty one where a left join met none); a
    left table met by none leaves the member null; rows in both tables' order."""
    job = _by_event(tmp_path, {"type": "left"})
    result = simulate(job, job_records(job))
    north = {"site": "s1", "region": "north", "open": 1}
    east = {"site": "s1", "region": "east", "open": 0}
    got = [(e["readings"]["device"], e["devices"]) for e in result.events]
    assert got == [
        ("d1", {**DEVICES[0], "sites": north}),  # (the field "sites" replaced)
        ("d1", {**DEVICES[0], "sites": east}),
        ("d9", {"sites": north}),
        ("d9", {"sites": east}),
        ("d2", {**DEVICES[1], "sites": None}),
        ("d9", None),
    ]


def test_an_inner_table_met_by_the_event_drops_an_event_it_does_not_meet(tmp_path):
    """An inner table keyed by the event drops the events it does not meet, whatever
    the first table met; its condition reads its own fields (the rows it keeps)."""
    job = _by_event(tmp_path, {"condition": "sites.open = 1"})
    result = simulate(job, job_records(job))
    got = [(e["readings"]["device"], (e["devices"] or {}).get("model")) for e in result.events]
    assert got == [("d1", "A"), ("d9", None)]
    assert [e["devices"]["sites"]["region"] for e in result.events] == ["north", "north"]


@pytest.mark.parametrize(
    ("then", "key", "message"),
    [
        (
            [
                {"left": "readings", "right": "sites", "on": [["zone", "site"]]},
                {"left": "sites", "right": "regions", "on": ["region"]},
            ],
            "join.then[1].left",
            "met by each event",
        ),
        (
            [
                {
                    "left": "readings",
                    "right": "sites",
                    "on": [["zone", "site"]],
                    "condition": "devices.model = 'A'",
                }
            ],
            "join.then[0].condition",
            "(sites)",
        ),
    ],
)
def test_a_table_met_by_the_event_is_joined_no_further(tmp_path, then, key, message):
    data = _data(tmp_path, then)
    data["inputs"]["regions"] = {"reference": True, "path": "regions.jsonl"}
    if len(then) == 1:
        del data["inputs"]["regions"]
    with pytest.raises(ConfigError) as info:
        Job.from_dict(data, base_dir=tmp_path)
    assert info.value.key == key and message in info.value.message


def test_a_misspelled_column_of_a_table_met_by_the_event_is_a_missing_column(tmp_path):
    """A further table keyed by a field no event holds: no event meets it, which the
    ``missing_column`` diagnostic says (semantics §8.4), naming the entry."""
    job = _by_event(tmp_path, {"type": "left", "on": [["zoen", "site"]]})
    diagnostics = simulate(job, job_records(job), explain=False).metrics["diagnostics"]
    (missing,) = [d for d in diagnostics if d["kind"] == "missing_column"]
    assert (missing["column"], missing["role"], missing["count"]) == ("zoen", "join.then[0].on", 4)
    assert "no event meets that table" in missing["message"]


def test_where_reads_a_table_met_by_the_event_as_a_member_of_the_row(tmp_path):
    """With reference data, a table each event meets by its own fields is a member of
    ``[join] right``'s row (semantics §11.8), not a side of the record: ``where`` naming
    it is refused with the way to read it."""
    then = [{"left": "readings", "right": "sites", "on": [["device", "site"]]}]
    with pytest.raises(ConfigError) as info:
        _job(tmp_path, then, where="sites.region = 'north'")
    assert info.value.key == "join.where"
    assert "GETRECORDPROPERTYVALUE(devices.sites, 'region')" in str(info.value)
