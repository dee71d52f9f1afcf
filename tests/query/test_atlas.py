"""Atlas Stream Processing pipeline → job: stages, accumulators, the dead-letter queue,
JSON and YAML, and every refusal with its position."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sparktide.errors import ConfigError, QueryError
from sparktide.query import Bindings, load_bindings, translate_text
from sparktide.time import MINUTE, SECOND

SOURCE = {"$source": {"connectionName": "solar", "timeField": "$ts"}}
GROUP = {"$group": {"_id": "$group_id", "total": {"$sum": "$watts"}}}


def tumbling(**extra: Any) -> dict[str, Any]:
    window = {"interval": {"size": 10, "unit": "second"}, "pipeline": [GROUP], **extra}
    return {"$tumblingWindow": window}


def job(stages: Any, bindings: Bindings | None = None, kind: str = "json"):  # type: ignore[no-untyped-def]
    return translate_text(json.dumps(stages, indent=1), kind, bindings, "p.json").job


def test_tumbling_window_with_every_accumulator() -> None:
    group = {
        "$group": {
            "_id": {"group_id": "$group_id", "site": "$site"},
            "n": {"$sum": 1},
            "c": {"$count": {}},
            "total": {"$sum": "$watts"},
            "mean": {"$avg": "$watts"},
            "lo": {"$min": "$watts"},
            "hi": {"$max": "$watts"},
            "all": {"$push": "$watts"},
            "first_w": {"$first": "$watts"},
            "last_w": {"$last": "$watts"},
        }
    }
    j = job(
        [
            SOURCE,
            {"$tumblingWindow": {"interval": {"size": 1, "unit": "minute"}, "pipeline": [group]}},
            {"$emit": {"connectionName": "kafka", "topic": "out"}},
        ]
    )
    w = j.window
    assert (w.type, w.size, w.boundary, w.allowed_lateness) == (
        "tumbling",
        MINUTE,
        "start",
        3 * SECOND,
    )
    assert w.group_by == ("group_id", "site")
    assert [str(a) for a in w.aggregates] == [
        "count(*)",
        "count(*)",
        "sum(watts)",
        "avg(watts)",
        "min(watts)",
        "max(watts)",
        "collect_list(watts)",
        "first(watts)",
        "last(watts)",
    ]
    o = j.ordering
    assert (o.early_arrival, o.late_arrival, o.out_of_order, o.on_out_of_order) == (
        None,
        None,
        0,
        "accept",
    )
    assert j.source.timestamp_by == "ts" and j.source.path == "solar" and j.output.path == "out"


def test_hopping_window_offset_lateness_idle_timeout_merge_and_dlq() -> None:
    stages = [
        {"$source": {"connectionName": "c", "db": "iot", "coll": "readings",
                     "timeField": {"$dateFromString": {"dateString": "$at"}}}},
        {"$hoppingWindow": {
            "interval": {"size": 20, "unit": "second"},
            "hopSize": {"size": 10, "unit": "second"},
            "offset": {"offsetFromUtc": -3, "unit": "second"},
            "allowedLateness": 0,
            "idleTimeout": {"size": 1, "unit": "minute"},
            "boundary": "eventTime",
            "pipeline": [{"$group": {"_id": None, "n": {"$sum": 1}}}],
        }},
        {"$merge": {"into": {"connectionName": "c", "db": "iot", "coll": "stats"}}},
    ]  # fmt: skip
    j = job(
        {
            "name": "p",
            "pipeline": stages,
            "options": {"dlq": {"connectionName": "c", "db": "d", "coll": "q"}},
        }
    )
    w = j.window
    assert (w.size, w.hop, w.offset, w.allowed_lateness, w.idle_timeout) == (
        20 * SECOND,
        10 * SECOND,
        7 * SECOND,
        0,
        MINUTE,
    )
    assert w.group_by == ()
    assert j.source.path == "iot.readings" and j.source.timestamp_by == "at"
    assert j.output.path == "iot.stats" and j.output.dead_letter == "d.q"


def test_group_ids_of_expressions_and_renamed_fields_are_computed_columns() -> None:
    """``_id`` of an expression, or of a field under another name (semantics §6.13)."""
    fields = {"_id": {"make": {"$toUpper": "$make"}, "dev": "$device", "g": "$g"}}
    by_fields = job([SOURCE, tumbling(pipeline=[{"$group": fields}])]).window
    assert by_fields.group_by == ("make", "dev", "g")
    upper = "CASE WHEN make IS NULL THEN '' ELSE UPPER(make) END"  # (MongoDB's $toUpper)
    assert by_fields.group_expressions == (("make", upper), ("dev", "device"))
    one = {"_id": {"$toLower": "$make"}}
    single = job([SOURCE, tumbling(pipeline=[{"$group": one}])]).window
    assert single.group_expressions == (("_id", upper.replace("UPPER", "LOWER")),)


def test_no_window_and_no_sink() -> None:
    j = job([{"$source": {"connectionName": "c"}}])
    assert j.window is None and j.source.timestamp_by is None


def test_yaml_pipelines_keep_positions() -> None:
    text = "- $source:\n    connectionName: c\n    timeField: $t\n- $match:\n    x: {$size: 1}\n"
    with pytest.raises(QueryError, match=r"^p.yaml:5:9: \$size in \$match is not supported yet"):
        translate_text(text, "yaml", None, "p.yaml")
    j = translate_text(text.split("- $match")[0], "yaml", None, "p.yaml").job
    assert j.source.timestamp_by == "t"


@pytest.mark.parametrize(
    ("stages", "position", "message"),
    [
        ('[{"$match": {}}]', "1:2", "starts with $source"),
        ("[]", "1:1", "non-empty list"),
        (
            '[{"$source": {"connectionName": "c"}}, {"$match": {"$where": {}}}]',
            "1:52",
            "$where in $match is not supported yet",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$match": {"$expr": "$a"}}]',
            "1:61",
            "a condition must be a comparison or $and/$or/$not",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$match": {"a.b-c.$d": 1}}]',
            "1:52",
            "field '$d' cannot be a sparktide column name",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$match": {"a": "$b"}}]',
            "1:57",
            "comparing two fields",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$match": {"a": {"$gt": null}}}]',
            "1:65",
            "$gt: null is not supported",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$match": {"a": {"b": 1}}}]',
            "1:57",
            "a document value",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$tumblingWindow": {"interval": '
            '{"size": 1, "unit": "second"}, "pipeline": [{"$group": {"_id": null}}]}}, '
            '{"$match": {"a": 1}}]',
            "1:159",
            "$a is not a field of the window's records (fields: none)",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$lookup": {}}]',
            "1:52",
            "$lookup needs from",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$sort": {}}]',
            "1:41",
            "the stage $sort is not supported yet",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$frobnicate": {}}]',
            "1:41",
            "unknown stage $frobnicate",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$sessionWindow": {}}]',
            "1:41",
            "$sessionWindow is not",
        ),
        ('[{"$source": {"connectionName": "c", "documents": []}}]', "1:38", "documents in $source"),
        ('[{"$source": {"topic": "t"}}]', "1:14", "needs connectionName"),
        (
            '[{"$source": {"connectionName": "c", "timeField": {"$toDate": "$t"}}}]',
            "1:52",
            "timeField is supported as",
        ),
        (
            '[{"$source": {"connectionName": "c", "timeField": '
            '{"$dateFromString": {"dateString": "$t", "format": "%d"}}}}]',
            "1:92",
            "format in $dateFromString",
        ),
        ('[{"$source": {"connectionName": "c", "timeField": "$a..b"}}]', "1:51", "field '' cannot"),
        (
            '[{"$source": {"connectionName": "c", "timeField": "t"}}]',
            "1:51",
            "must be a field path",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, '
            '{"$emit": {"connectionName": "k", "topic": "t"}}, {"$emit": {}}]',
            "1:41",
            "must be the last stage",
        ),
        (
            '[{"$source": {"connectionName": "c"}}, {"$merge": {"into": '
            '{"connectionName": "c", "db": "d", "coll": "x"}, "on": "_id"}}]',
            "1:109",
            "on in $merge is not supported yet",
        ),
    ],
)
def test_stage_refusals(stages: str, position: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        translate_text(stages, "json", None, "p.json")
    assert str(caught.value).startswith(f"p.json:{position}: "), str(caught.value)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"interval": {"size": 1, "unit": "year"}}, "interval.unit must be one of"),
        ({"interval": {"size": 0, "unit": "second"}}, "interval.size must be a positive integer"),
        (
            {"interval": {"size": 1, "unit": "second"}, "boundary": "processingTime"},
            "boundary 'processingTime'",
        ),
        (
            {"interval": {"size": 1, "unit": "second"}, "pipeline": [{"$sort": {"a": 1}}]},
            "$sort inside $tumblingWindow",
        ),
        (
            {"interval": {"size": 1, "unit": "second"}, "pipeline": [GROUP, GROUP]},
            "a second $group",
        ),
        (
            {
                "interval": {"size": 1, "unit": "second"},
                "pipeline": [{"$group": {"_id": "$g", "s": {"$sum": 2}}}],
            },
            "$sum: 2 is not supported",
        ),
        (
            {
                "interval": {"size": 1, "unit": "second"},
                "pipeline": [{"$group": {"_id": "$g", "s": {"$addToSet": "$v"}}}],
            },
            "$addToSet is not supported",
        ),
        (
            {
                "interval": {"size": 1, "unit": "second"},
                "pipeline": [{"$group": {"_id": "$g", "s": {"$push": "$$ROOT"}}}],
            },
            "must be a field path",
        ),
        (
            {
                "interval": {"size": 1, "unit": "second"},
                "pipeline": [{"$group": {"_id": {"dev": 3}}}],
            },
            '_id.dev must be "$field" or an expression',
        ),
        (
            {"interval": {"size": 1, "unit": "second"}, "pipeline": [{"$group": {"_id": 5}}]},
            "_id must be null",
        ),
        (
            {
                "interval": {"size": 1, "unit": "second"},
                "pipeline": [{"$group": {"total": {"$sum": 1}}}],
            },
            "$group needs _id",
        ),
        (
            {
                "interval": {"size": 1, "unit": "second"},
                "pipeline": [{"$group": {"_id": "$g", "g": {"$sum": 1}}}],
            },
            "g is also a grouping field",
        ),
        (
            {
                "interval": {"size": 1, "unit": "second"},
                "pipeline": [{"$group": {"_id": "$g", "type": {"$sum": 1}}}],
            },
            "sparktide writes itself",
        ),
    ],
)
def test_window_refusals(window: dict[str, Any], message: str) -> None:
    window = {"pipeline": [GROUP], **window}
    with pytest.raises(QueryError) as caught:
        job([SOURCE, {"$tumblingWindow": window}])
    assert message in str(caught.value)
    assert str(caught.value).startswith("p.json:")


def test_atlas_ordering_cannot_be_overridden_to_something_else(tmp_path: Path) -> None:
    path = tmp_path / "job.toml"
    path.write_text('[inputs.solar]\npath = "in"\n[ordering]\non_out_of_order = "adjust"\n')
    with pytest.raises(ConfigError, match=r"ordering\.on_out_of_order"):
        job([SOURCE, tumbling()], load_bindings(path))
    path.write_text(
        '[inputs.solar]\npath = "in"\n[ordering]\nlate_arrival = "5s"\n'
        '[window]\nallowed_lateness = "3s"\n'
    )
    j = job([SOURCE, tumbling()], load_bindings(path))
    assert j.ordering.late_arrival == 5 * SECOND and j.ordering.on_out_of_order == "accept"
    path.write_text('[inputs.solar]\npath = "in"\n[window]\nallowed_lateness = "1s"\n')
    with pytest.raises(ConfigError, match=r"window\.allowed_lateness"):
        job([SOURCE, tumbling()], load_bindings(path))


def test_dead_letter_queue_needs_a_binding_in_a_job_file(tmp_path: Path) -> None:
    path = tmp_path / "job.toml"
    path.write_text('[inputs.solar]\npath = "in"\n[outputs.o]\npath = "out"\n')
    pipeline = {
        "pipeline": [SOURCE],
        "options": {"dlq": {"connectionName": "c", "db": "d", "coll": "q"}},
    }
    with pytest.raises(QueryError, match=r"no output named 'd\.q' for the dead-letter queue"):
        job(pipeline, load_bindings(path))
    path.write_text('[inputs.solar]\npath = "in"\n[outputs."d.q"]\npath = "dead"\n')
    assert job(pipeline, load_bindings(path)).output.dead_letter == str(tmp_path / "dead")


def test_json_and_yaml_syntax_errors_have_positions() -> None:
    with pytest.raises(QueryError, match=r"^p.json:2:2: not valid JSON"):
        translate_text("[\n]]", "json", None, "p.json")
    with pytest.raises(QueryError, match=r"^p.json:1:23: the key 'a' appears twice"):
        translate_text('[{"$source": {"a": 1, "a": 2}}]', "json", None, "p.json")
    with pytest.raises(QueryError, match=r"^p.yaml:2:3: the key 'a' appears twice"):
        translate_text("{a: 1,\n  a: 2}", "yaml", None, "p.yaml")
    with pytest.raises(QueryError, match=r"^p.yaml:1:\d+: not valid YAML"):
        translate_text("[a, b", "yaml", None, "p.yaml")


def test_match_becomes_the_filter() -> None:
    j = job(
        [
            {"$source": {"connectionName": "c", "timeField": "$t"}},
            {"$match": {"lane": "A", "speed": {"$gt": 50, "$lte": 120.5}}},
            {
                "$match": {
                    "$or": [
                        {"kind": {"$in": ["car", "truck", None]}},
                        {"kind": {"$ne": "bus"}, "axles": {"$gte": 3}},
                        {"gone": None},
                        {"here": {"$ne": None}},
                    ]
                }
            },
        ]
    )
    assert j.filter is not None
    assert j.filter.where == (
        "lane = 'A' AND speed > 50 AND speed <= 120.5 AND (kind IN ('car', 'truck') OR "
        "kind IS NULL OR (kind <> 'bus' OR (kind = 'bus') IS NULL) AND axles >= 3 OR "
        "gone IS NULL OR here IS NOT NULL)"
    )


#: Documents and whether each $match condition below keeps them (Atlas' semantics: a
#: negation also matches a missing field, null and a value of another type).
_DOCS = [{"x": 1}, {"x": 5}, {"x": None}, {}, {"x": "abc"}, {"x": "zab"}]


@pytest.mark.parametrize(
    ("condition", "text", "kept"),
    [
        ({"x": {"$nin": [1, 2]}}, "NOT x IN (1, 2) OR (x IN (1, 2)) IS NULL", [1, 2, 3, 4, 5]),
        (
            {"x": {"$nin": [1, None]}},
            "NOT (x IN (1) OR x IS NULL) OR (x IN (1) OR x IS NULL) IS NULL",
            [1, 4, 5],
        ),
        ({"x": {"$not": {"$gt": 2}}}, "NOT x > 2 OR (x > 2) IS NULL", [0, 2, 3, 4, 5]),
        ({"x": {"$exists": True}}, "x IS NOT MISSING", [0, 1, 2, 4, 5]),
        ({"x": {"$exists": False}}, "x IS MISSING", [3]),
        ({"x": {"$regex": "^ab"}}, "REGEXMATCH(x, '^ab') = 1", [4]),
        ({"$nor": [{"x": 1}, {"x": "abc"}]}, None, [1, 2, 3, 5]),
    ],
)
def test_match_negations_exists_and_regex(condition: dict, text: str | None, kept: list) -> None:
    from sparktide.expr import passes

    j = job([{"$source": {"connectionName": "c", "timeField": "$t"}}, {"$match": condition}])
    assert j.filter is not None
    if text is not None:
        assert j.filter.where == text
    assert [i for i, d in enumerate(_DOCS) if passes(j.filter.expression, d)] == kept


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ({"x": {"$exists": 1}}, "$exists takes true or false"),
        ({"x.y": {"$exists": True}}, "$exists of a value inside a field"),
        ({"x": {"$regex": "^a", "$options": "i"}}, "$options: regular expression options"),
        ({"x": {"$regex": "(?i)a"}}, "groups with (?...)"),
        ({"x": {"$regex": 5}}, "$regex takes a pattern string"),
        ({"x": {"$not": 5}}, "$not takes a document of operators"),
        ({"x": {"$not": {}}}, "$not takes a document of operators"),
        ({"$nor": []}, "$nor takes a non-empty list"),
    ],
)
def test_match_operator_refusals(condition: dict, message: str) -> None:
    with pytest.raises(QueryError, match=re.escape(message)):
        job([{"$source": {"connectionName": "c", "timeField": "$t"}}, {"$match": condition}])


def _ranked(name: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    group = {"$group": {"_id": "$g", name: spec}}
    window = {"interval": {"size": 1, "unit": "second"}, "pipeline": [group]}
    return [SOURCE, {"$tumblingWindow": window}]


@pytest.mark.parametrize(
    ("spec", "aggregate"),
    [
        (
            {"$top": {"sortBy": {"watts": -1}, "output": "$device"}},
            "topone(device) over (order by watts desc)",
        ),
        (
            {"$bottom": {"sortBy": {"watts": -1, "ts": 1}, "output": "$$ROOT"}},
            "bottomone() over (order by watts desc, ts asc)",
        ),
        (
            {"$topN": {"n": 3, "sortBy": {"watts": 1}, "output": "$device"}},
            "topn(3, device) over (order by watts asc)",
        ),
        (
            {"$bottomN": {"n": 2, "sortBy": {"watts": -1}, "output": "$$ROOT"}},
            "bottomn(2) over (order by watts desc)",
        ),
    ],
)
def test_top_and_bottom_accumulators(spec: dict[str, Any], aggregate: str) -> None:
    (got,) = job(_ranked("r", spec)).window.aggregates
    assert str(got) == aggregate


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"$top": {"output": "$d"}}, "$top needs sortBy"),
        ({"$top": {"sortBy": {"w": 2}, "output": "$d"}}, "$top.sortBy.w must be 1 or -1"),
        ({"$top": {"sortBy": {}, "output": "$d"}}, "$top.sortBy names no field"),
        ({"$topN": {"sortBy": {"w": 1}, "output": "$d"}}, "$topN needs n"),
        ({"$topN": {"n": 0, "sortBy": {"w": 1}, "output": "$d"}}, "$topN.n must be a positive"),
        ({"$top": {"sortBy": {"w": 1}, "output": ["$d", "$w"]}}, "must be a field path"),
        ({"$bottom": {"sortBy": {"w": 1}, "output": "$d", "x": 1}}, "x"),
    ],
)
def test_top_and_bottom_refusals(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(QueryError) as caught:
        job(_ranked("r", spec))
    assert message in str(caught.value)
    assert str(caught.value).startswith("p.json:")
