"""Atlas ``$lookup`` of reference data with the ``$unwind`` of its ``as`` field: the
job's join with a reference input, and every refusal with its position."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparktide import expr as E
from sparktide.errors import ConfigError, QueryError
from sparktide.query import Bindings, load_bindings, translate_text

SOURCE = {"$source": {"connectionName": "k", "topic": "readings", "timeField": "$ts"}}
LOOKUP = {
    "$lookup": {
        "from": {"connectionName": "atlas", "db": "ref", "coll": "devices"},
        "localField": "device",
        "foreignField": "device",
        "as": "info",
    }
}
UNWIND = {"$unwind": "$info"}
PROJECT = {"$project": {"device": 1, "model": "$info.model"}}
EMIT = {"$emit": {"connectionName": "k", "topic": "out"}}


@pytest.fixture
def bindings(tmp_path: Path) -> Bindings:
    (tmp_path / "job.toml").write_text(
        '[inputs.readings]\npath = "r.jsonl"\n\n'
        '[inputs."ref.devices"]\nreference = true\npath = "d.jsonl"\n\n'
        '[inputs."ref.sites"]\nreference = true\npath = "s.jsonl"\n\n'
        '[outputs.out]\npath = "out/"\n',
        encoding="utf-8",
    )
    return load_bindings(tmp_path / "job.toml")


def job(bindings: Bindings, *stages: Any):  # type: ignore[no-untyped-def]
    text = json.dumps([SOURCE, *stages, EMIT], indent=1)
    return translate_text(text, "json", bindings, "p.json").job


def test_lookup_with_unwind_is_an_inner_join(bindings: Bindings) -> None:
    j = job(
        bindings,
        {"$addFields": {"f": {"$multiply": ["$temp", 2]}}},
        {"$match": {"temp": {"$gt": 0}}},
        LOOKUP,
        UNWIND,
        {"$project": {"device": 1, "f": 1, "model": "$info.model"}},
    )
    assert j.join is not None
    assert (j.join.left, j.join.right, j.join.on, j.join.type) == (
        "readings",
        "info",
        ("device",),
        "inner",
    )
    assert [name for name, _ in j.inputs] == ["readings"]
    assert [name for name, _ in j.references] == ["info"]
    assert j.filter is not None and j.filter.where == "temp > 0"
    assert {p.name: E.to_text(p.parsed) for p in j.select} == {
        "device": "readings.device",
        "f": "readings.temp * 2",
        "model": "info.model",
    }
    assert j.ordering.out_of_order_action == "adjust"


def test_fields_computed_before_the_lookup_read_the_stream(bindings: Bindings) -> None:
    j = job(
        bindings,
        {"$set": {"t": {"$ifNull": ["$temp", 0]}, "u": {"$toUpper": "$device"}}},
        LOOKUP,
        {"$unwind": {"path": "$info"}},
        {"$project": {"t": 1, "label": {"$concat": ["$u", "$info.model"]}}},
    )
    assert {p.name: E.to_text(p.parsed) for p in j.select} == {
        "t": "CASE WHEN readings.temp IS NOT NULL THEN readings.temp ELSE 0 END",
        "label": "CASE WHEN CASE WHEN readings.device IS NULL THEN '' ELSE "
        "UPPER(readings.device) END IS NULL OR info.model IS NULL THEN null ELSE "
        "CONCAT(CASE WHEN readings.device IS NULL THEN '' ELSE UPPER(readings.device) END, "
        "info.model) END",
    }


def test_preserve_null_and_empty_arrays_is_a_left_join(bindings: Bindings) -> None:
    unwind = {"$unwind": {"path": "$info", "preserveNullAndEmptyArrays": True}}
    j = job(bindings, LOOKUP, unwind, PROJECT)
    assert j.join is not None and j.join.type == "left"


def test_the_stream_input_is_renamed_when_as_takes_its_name(bindings: Bindings) -> None:
    lookup = {"$lookup": {**LOOKUP["$lookup"], "as": "readings"}}
    j = job(bindings, lookup, {"$unwind": "$readings"}, {"$project": {"m": "$readings.model"}})
    assert j.join is not None and (j.join.left, j.join.right) == ("stream", "readings")


def test_accept_in_the_job_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_text(
        '[inputs.readings]\npath = "r.jsonl"\n\n[inputs."ref.devices"]\nreference = true\n'
        'path = "d.jsonl"\n\n[outputs.out]\npath = "out/"\n\n[ordering]\n'
        'on_out_of_order = "accept"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="a pipeline with \\$lookup is a join"):
        job(load_bindings(tmp_path / "job.toml"), LOOKUP, UNWIND, PROJECT)


def _sites(local: str, unwind: Any = "$site") -> list[dict[str, Any]]:
    lookup = {
        "from": {"connectionName": "atlas", "db": "ref", "coll": "sites"},
        "localField": local,
        "foreignField": "code",
        "as": "site",
    }
    return [{"$lookup": lookup}, {"$unwind": unwind}]


def window(key: str = "$device", **accumulators: Any) -> dict[str, Any]:
    group = {"$group": {"_id": key, "n": {"$sum": 1}, **accumulators}}
    return {"$tumblingWindow": {"interval": {"size": 1, "unit": "second"}, "pipeline": [group]}}


def test_a_lookup_after_the_window_meets_its_records(bindings: Bindings) -> None:
    """Semantics §13.5: the window named, [join] left that name; $_id is the grouping
    field; $match after $unwind is [join] where over the record and its row."""
    j = job(
        bindings,
        window(top={"$max": "$temp"}),
        {**LOOKUP, "$lookup": {**LOOKUP["$lookup"], "localField": "_id"}},
        {"$unwind": {"path": "$info", "preserveNullAndEmptyArrays": True}},
        {"$match": {"$expr": {"$gt": ["$top", "$info.max_temp"]}}},
        {"$project": {"device": "$_id", "n": 1, "model": "$info.model"}},
    )
    assert j.window_meets_table and j.window is not None and j.window.name == "window"
    assert j.join is not None
    assert (j.join.left, j.join.right, j.join.on, j.join.type) == (
        "window",
        "info",
        ("device",),
        "left",
    )
    assert j.join.where == "window.top > info.max_temp"
    assert [(p.name, p.expression) for p in j.select] == [
        ("device", "window.device"),
        ("n", "window.n"),
        ("model", "info.model"),
    ]


def test_a_window_after_lookup_reads_each_match(bindings: Bindings) -> None:
    """Semantics §11.23: a window stage after $lookup and $unwind is a window over the
    join with reference data: $info.x is the row each match holds, a field computed
    before the $lookup is the stream's own, and the ordering stays Atlas' (accept)."""
    j = job(
        bindings,
        {"$addFields": {"f": {"$multiply": ["$temp", 2]}}},
        LOOKUP,
        {"$unwind": {"path": "$info", "preserveNullAndEmptyArrays": True}},
        window("$info.model", top={"$max": {"$subtract": ["$f", "$info.max_temp"]}}),
    )
    assert j.join is not None and j.join.type == "left" and j.looks_up_in_window
    assert j.window is not None
    keys = [(n, None if e is None else E.to_text(e)) for n, e in j.window.group_keys]
    assert keys == [("_id", "GETRECORDPROPERTYVALUE(info, 'model')")]
    aggregates = {a.name: str(a) for a in j.window.aggregates}
    assert aggregates["top"] == "max(temp * 2 - GETRECORDPROPERTYVALUE(info, 'max_temp'))"
    assert j.ordering.out_of_order_action == "accept"


def test_a_match_after_lookup_without_a_window_is_the_join_s_where(bindings: Bindings) -> None:
    """$match after $lookup and $unwind with no window after them reads each document
    $unwind writes: [join] where, over the event's fields and the row's; a $match
    before the $lookup stays [filter]."""
    j = job(
        bindings,
        {"$match": {"temp": {"$gt": 0}}},
        LOOKUP,
        UNWIND,
        {"$match": {"info.max_temp": {"$lt": 35}}},
        {"$match": {"device": "d1"}},
        PROJECT,
    )
    assert j.filter is not None and j.filter.where == "temp > 0"
    assert j.join is not None
    assert j.join.where == "info.max_temp < 35 AND readings.device = 'd1'"
    # (a later $lookup's row is a member of the first's: its fields read inside it)
    j = job(
        bindings,
        LOOKUP,
        UNWIND,
        *_sites("info.site"),
        {"$match": {"site.region": "eu"}},
        PROJECT,
    )
    assert j.join is not None
    assert j.join.where == "GETRECORDPROPERTYVALUE(info.site, 'region') = 'eu'"


def test_a_match_between_lookup_and_the_window_filters_each_match(bindings: Bindings) -> None:
    """$match after $lookup (without a window: [join] where) is [filter] over each match
    when a window follows."""
    j = job(
        bindings,
        {"$match": {"temp": {"$gt": 0}}},
        LOOKUP,
        UNWIND,
        {"$match": {"info.max_temp": {"$lt": 35}, "device": {"$ne": "d9"}}},
        window("$info.model"),
    )
    assert j.filter is not None
    assert j.filter.where == (
        "temp > 0 AND (GETRECORDPROPERTYVALUE(info, 'max_temp') < 35 AND "
        "(device <> 'd9' OR (device = 'd9') IS NULL))"
    )


@pytest.mark.parametrize(
    ("stages", "position", "message"),
    [
        ([LOOKUP, PROJECT], "22:3", '$lookup (at 10:3) needs $unwind of "$info" right after'),
        ([LOOKUP], "22:3", '$lookup (at 10:3) needs $unwind of "$info" right after it'),
        ([LOOKUP, UNWIND], "22:3", "this stage keeps every other field of the documents of"),
        ([LOOKUP, {"$unwind": "$other"}], "22:14", "$unwind of '$other' is not supported yet"),
        ([UNWIND], "10:3", "the stage $unwind is not supported yet (only right after $lookup)"),
        (
            [LOOKUP, UNWIND, {"$addFields": {"f": 1}}, window()],
            "30:3",
            "a window after $lookup reads the documents $unwind writes",
        ),
        ([window(), LOOKUP], "40:3", '$lookup (at 28:3) needs $unwind of "$info"'),
        (
            [LOOKUP, UNWIND, window(), {**LOOKUP}],
            "43:3",
            "$lookup after the window is supported once",
        ),
        (
            [window(), {"$lookup": {**LOOKUP["$lookup"], "localField": "nope"}}],
            "34:18",
            "$nope is not a field of the window's records",
        ),
        ([LOOKUP, UNWIND, LOOKUP], "25:3", "a second $lookup as 'info': name it otherwise"),
        ([LOOKUP, UNWIND, {"$project": {"i": "$info"}}], "26:9", "$info: the whole looked-up"),
        (
            [{"$lookup": {**LOOKUP["$lookup"], "from": {"connectionName": "k", "topic": "x"}}}],
            "13:5",
            "topic in $lookup.from is not supported yet",
        ),
        (
            [
                {
                    "$lookup": {
                        **LOOKUP["$lookup"],
                        "from": {"connectionName": "k", "db": "r", "coll": "x"},
                    }
                }
            ],
            "11:12",
            "$lookup reads r.x: bind it in the job file as reference data",
        ),
        (
            [{"$addFields": {"device": 1}}, LOOKUP],
            "21:18",
            "localField 'device' is computed by an earlier stage",
        ),
        ([{"$lookup": {**LOOKUP["$lookup"], "pipeline": []}}], "19:4", "pipeline in $lookup"),
    ],
)
def test_refusals(bindings: Bindings, stages: list[Any], position: str, message: str) -> None:
    text = json.dumps([SOURCE, *stages, EMIT], indent=1)
    with pytest.raises(QueryError) as caught:
        translate_text(text, "json", bindings, "p.json")
    assert str(caught.value).startswith(f"p.json:{position}: {message}"), str(caught.value)


def test_lookup_fields_of_other_names_or_inside_a_record_are_a_pair(bindings: Bindings) -> None:
    """``localField`` and ``foreignField`` of other names are an ``on`` pair; a dotted
    ``localField`` reads a value inside the document (``meta.device``), as ``ON
    i.IoTHub.ConnectionDeviceId = r.DeviceId`` does (semantics §11.8)."""
    other = {**LOOKUP["$lookup"], "foreignField": "id"}
    j = job(bindings, {"$lookup": other}, UNWIND, PROJECT)
    assert j.join is not None and j.join.on == (("device", "id"),)
    nested = {**LOOKUP["$lookup"], "localField": "meta.device", "foreignField": "id"}
    j = job(bindings, {"$lookup": nested}, UNWIND, PROJECT)
    assert j.join is not None and j.join.on == (("meta.device", "id"),)
    with pytest.raises(QueryError, match=r"localField 'meta\.device' is computed by an earlier"):
        job(bindings, {"$addFields": {"meta": 1}}, {"$lookup": nested}, UNWIND, PROJECT)


def test_a_later_lookup_is_a_further_table(bindings: Bindings) -> None:
    """A later ``$lookup`` is ``[[join.then]]`` (semantics §11.8): keyed by a field of
    the first table's row (``info.site``) or of the document (``zone``); its row is a
    member of the first's, ``$site.x`` reads it, before a window too. An inner one
    keyed by the first table makes the first inner, as the documents it drops."""
    j = job(
        bindings,
        LOOKUP,
        {"$unwind": {"path": "$info", "preserveNullAndEmptyArrays": True}},
        *_sites("info.site"),
        {"$project": {"device": 1, "region": "$site.region"}},
    )
    assert j.join is not None and j.join.type == "inner"
    (step,) = j.join.then
    assert (step.left, step.right, step.on, step.type) == (
        "info",
        "site",
        (("site", "code"),),
        "inner",
    )
    assert {p.name: p.expression for p in j.select}["region"] == (
        "GETRECORDPROPERTYVALUE(info.site, 'region')"
    )
    j = job(
        bindings,
        LOOKUP,
        UNWIND,
        *_sites("zone", {"path": "$site", "preserveNullAndEmptyArrays": True}),
        window("$site.region"),
    )
    assert j.join is not None and j.window is not None
    (step,) = j.join.then
    assert (step.left, step.on, step.type) == ("readings", (("zone", "code"),), "left")
    keys = [(n, None if e is None else E.to_text(e)) for n, e in j.window.group_keys]
    assert keys == [("_id", "GETRECORDPROPERTYVALUE(info, 'site.region')")]
    with pytest.raises(QueryError, match="localField 'zone' is computed by an earlier stage"):
        job(bindings, {"$addFields": {"zone": 1}}, LOOKUP, UNWIND, *_sites("zone"), PROJECT)
    with pytest.raises(QueryError, match=r'needs \$unwind of "\$site" right after it'):
        job(bindings, LOOKUP, UNWIND, _sites("zone")[0])
