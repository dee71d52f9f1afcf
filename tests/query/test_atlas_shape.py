"""Atlas ``$project``, ``$addFields``/``$set``, ``$unset`` and the expression operators:
their translation into ``[filter]``, the window's aggregates, ``having`` and
``[select]``, their values (Atlas' null rules) and every refusal with its position."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparktide import expr as E
from sparktide.errors import QueryError
from sparktide.query import translate_text

SOURCE = {"$source": {"connectionName": "c", "timeField": "$ts"}}
EMIT = {"$emit": {"connectionName": "k", "topic": "out"}}


def window(group: dict[str, Any]) -> dict[str, Any]:
    interval = {"size": 10, "unit": "second"}
    return {"$tumblingWindow": {"interval": interval, "pipeline": [{"$group": group}]}}


def job(*stages: Any):  # type: ignore[no-untyped-def]
    text = json.dumps([SOURCE, *stages, EMIT], indent=1)
    return translate_text(text, "json", None, "p.json").job


def select(*stages: Any) -> dict[str, str]:
    return {p.name: E.to_text(p.parsed) for p in job(*stages).select}


def value(expression: Any, record: dict[str, Any]) -> Any:
    """The value of ``expression`` ($project's computed field) over ``record``."""
    (projection,) = job({"$project": {"v": expression}}).select
    return E.evaluate(projection.parsed, record.get)


@pytest.mark.parametrize(
    ("expression", "text"),
    [
        ({"$add": ["$a", "$b", 1]}, "a + b + 1"),
        ({"$subtract": ["$a", "$b"]}, "a - b"),
        ({"$multiply": ["$a", 2.5]}, "a * 2.5"),
        ({"$divide": ["$a", "$b"]}, "a / b"),
        ({"$mod": ["$a", 3]}, "a % 3"),
        ({"$abs": "$a"}, "ABS(a)"),
        ({"$ceil": ["$a"]}, "CEILING(a)"),
        ({"$floor": "$a"}, "FLOOR(a)"),
        ({"$sqrt": "$a"}, "SQRT(a)"),
        ({"$exp": "$a"}, "EXP(a)"),
        ({"$pow": ["$a", 2]}, "POWER(a, 2)"),
        ({"$toUpper": "$s"}, "CASE WHEN s IS NULL THEN '' ELSE UPPER(s) END"),
        ({"$toLower": "$s"}, "CASE WHEN s IS NULL THEN '' ELSE LOWER(s) END"),
        (
            {"$concat": ["$s", "-", "$t"]},
            "CASE WHEN s IS NULL OR t IS NULL THEN null ELSE CONCAT(s, '-', t) END",
        ),
        (
            {"$ifNull": ["$a", "$b", 0]},
            "CASE WHEN a IS NOT NULL THEN a WHEN b IS NOT NULL THEN b ELSE 0 END",
        ),
        (
            {"$cond": {"if": {"$gte": ["$a", 1]}, "then": "hi", "else": "lo"}},
            "CASE WHEN a >= 1 THEN 'hi' ELSE 'lo' END",
        ),
        ({"$cond": [{"$ne": ["$a", 1]}, 1, 0]}, "CASE WHEN a <> 1 THEN 1 ELSE 0 END"),
        ({"$and": [{"$eq": ["$a", 1]}, {"$lt": ["$b", 2]}]}, "a = 1 AND b < 2"),
        ({"$or": [{"$gt": ["$a", 1]}, {"$lte": ["$b", 2]}]}, "a > 1 OR b <= 2"),
        ({"$not": [{"$eq": ["$a", "$b"]}]}, "NOT a = b"),
        ({"$literal": "$a"}, "'$a'"),
        ("text", "'text'"),
    ],
)
def test_operators_translate(expression: Any, text: str) -> None:
    assert select({"$project": {"v": expression}}) == {"v": text}


@pytest.mark.parametrize(
    ("expression", "record", "expected"),
    [
        ({"$toUpper": "$s"}, {}, ""),  # Atlas: null or missing → ""
        ({"$toUpper": "$s"}, {"s": "aB"}, "AB"),
        ({"$concat": ["$s", "x"]}, {"s": "a"}, "ax"),
        ({"$concat": ["$s", "x"]}, {}, None),  # Atlas: null when an argument is missing
        ({"$concat": ["$s"]}, {"s": "a"}, "a"),
        ({"$ifNull": ["$a", "$b", 0]}, {"b": 2}, 2),
        ({"$ifNull": ["$a", "$b", 0]}, {}, 0),
        ({"$divide": ["$a", 2]}, {"a": 7}, 3.5),  # a float division, as Atlas'
        ({"$add": ["$a", 1]}, {}, None),
        ({"$cond": [{"$gt": ["$a", 1]}, "y", "n"]}, {}, "n"),  # a null condition is false
        ({"$mod": ["$a", 3]}, {"a": -7}, -1),
    ],
)
def test_operator_values(expression: Any, record: dict[str, Any], expected: Any) -> None:
    assert value(expression, record) == expected


def test_stages_before_the_window_fold_into_the_filter_and_aggregates() -> None:
    j = job(
        {"$addFields": {"kw": {"$divide": ["$watts", 1000]}}},
        {"$set": {"kw2": {"$multiply": ["$kw", 2]}}},
        {"$match": {"kw": {"$gte": 1}, "$expr": {"$lt": ["$kw2", 9]}}},
        {"$unset": ["site"]},
        window({"_id": "$g", "total": {"$sum": "$kw2"}, "m": {"$max": {"$abs": "$kw"}}}),
    )
    assert j.filter is not None
    assert j.filter.where == "watts / 1000 >= 1 AND watts / 1000 * 2 < 9"
    assert [str(a) for a in j.window.aggregates] == [
        "sum(watts / 1000 * 2)",
        "max(ABS(watts / 1000))",
    ]
    assert j.select == ()


def test_stages_after_the_window_are_having_and_select() -> None:
    j = job(
        window({"_id": "$g", "total": {"$sum": "$w"}, "n": {"$count": {}}}),
        {"$match": {"n": {"$gt": 1}}},
        {"$addFields": {"mean": {"$divide": ["$total", "$n"]}, "key": "$_id"}},
        {"$match": {"$expr": {"$gte": ["$mean", 2]}}},
        {"$unset": "total"},
    )
    assert j.window.having == "n > 1 AND total / n >= 2"
    assert {p.name: E.to_text(p.parsed) for p in j.select} == {
        "g": "g",
        "n": "n",
        "mean": "total / n",
        "key": "g",
    }


def test_project_after_a_window_reads_the_id_fields() -> None:
    group = {"_id": {"g": "$g", "h": "$h"}, "n": {"$sum": 1}}
    assert select(window(group), {"$project": {"_id": 0, "g2": "$_id.g", "n": 1}}) == {
        "g2": "g",
        "n": "n",
    }
    assert select(window({"_id": "$g", "n": {"$sum": 1}}), {"$project": {"_id": 1}}) == {"_id": "g"}


def test_project_without_a_window_is_the_select() -> None:
    assert select(
        {"$addFields": {"f": {"$multiply": ["$c", 2]}}},
        {"$project": {"_id": 0, "d": 1, "f": True, "g": {"$add": ["$f", 1]}}},
        {"$set": {"d": {"$toLower": "$d"}}},
        {"$project": {"f": 0}},
    ) == {"d": "CASE WHEN d IS NULL THEN '' ELSE LOWER(d) END", "g": "c * 2 + 1"}


@pytest.mark.parametrize(
    ("stages", "position", "message"),
    [
        (
            [{"$addFields": {"f": 1}}],
            "9:3",
            "this stage keeps every other field of the input's documents: a job names the "
            "columns it writes; list them in a $project",
        ),
        ([{"$unset": "a"}], "9:3", "this stage keeps every other field"),
        ([{"$project": {"a": 0}}], "9:3", "this stage keeps every other field"),
        ([{"$project": {"a": 1, "b": 0}}], "11:4", "$project mixes inclusion and exclusion (b)"),
        ([{"$project": {"a": 0, "b": 1}}], "11:4", "$project mixes inclusion and exclusion (b)"),
        (
            [{"$project": {"a": 1}}, {"$project": {"b": 1}}],
            "15:4",
            "$b is not a field of the input's documents (fields: a)",
        ),
        (
            [{"$unset": "a"}, {"$project": {"b": "$a"}}],
            "13:9",
            "$a was removed at 9:13: it is always missing",
        ),
        ([{"$project": {"a": {"$round": ["$x", 1]}}}], "11:5", "the operator $round is not"),
        ([{"$project": {"a": {"$trunc": "$x"}}}], "11:5", "the operator $trunc is not"),
        ([{"$project": {"a": {"$size": "$x"}}}], "11:5", "the operator $size is not supported"),
        ([{"$project": {"a": "$$NOW"}}], "10:9", "$$NOW: variables are not supported yet"),
        ([{"$unset": "x"}, {"$project": {"a": "$x.y"}}], "13:9", "$x was removed at 9:13"),
        ([{"$project": {"a": [1, 2]}}], "10:9", "arrays in expressions are not supported yet"),
        ([{"$project": {"a": {"b": 1}}}], "10:9", "an expression is one {$operator"),
        ([{"$project": {"a": {"$cond": ["$x", 1, 0]}}}], "12:6", "a condition must be"),
        ([{"$project": {"a": {"$eq": ["$x", None]}}}], "11:12", "$eq with null"),
        ([{"$project": {"a": {"$subtract": [1, 2, 3]}}}], "11:18", "$subtract takes 2"),
        ([{"$project": {"a": {"$cond": {"if": True}}}}], "11:14", "$cond needs then"),
        ([{"$project": {"a.b": 1}}], "10:4", "a.b: nested fields"),
        ([{"$project": {}}], "9:15", "$project needs at least one field"),
        (
            [
                window({"_id": "$g", "n": {"$sum": 1}}),
                {"$project": {"w": "$watts"}},
            ],
            "28:9",
            "$watts is not a field of the window's records (fields: g, n)",
        ),
    ],
)
def test_refusals(stages: list[Any], position: str, message: str) -> None:
    text = json.dumps([SOURCE, *stages, EMIT], indent=1)
    with pytest.raises(QueryError) as caught:
        translate_text(text, "json", None, "p.json")
    assert str(caught.value).startswith(f"p.json:{position}: {message}"), str(caught.value)


def test_yaml_stages_in_mongosh_style() -> None:
    text = (
        "- {$source: {connectionName: c, timeField: $ts}}\n"
        "- {$project: {d: 1, f: {$multiply: [$c, 2]}}}\n"
        "- {$match: {$expr: {$gt: [$f, 3]}}}\n"
        "- {$unset: [d]}\n"
    )
    j = translate_text(text, "yaml", None, "p.yaml").job
    assert j.filter is not None and j.filter.where == "c * 2 > 3"
    assert [(p.name, E.to_text(p.parsed)) for p in j.select] == [("f", "c * 2")]
