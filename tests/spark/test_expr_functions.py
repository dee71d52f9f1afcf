"""Scalar functions, CASE, CAST and TRY_CAST compiled to Spark SQL give the reference
evaluator's values, and a failed CAST the same message (docs/semantics.md §11.11-§11.13).

Batch queries (no stream): records parsed as the engine parses them (a variant ``m``),
every expression compiled (:class:`sparktide.spark.expr.Compiled`) over the variant
leaves; each value's JSON text must read back as the reference's value, each error
column hold the reference's strict evaluation's message (or null).
"""

from __future__ import annotations

import json
from typing import Any

from sparktide.expr import (
    OTHER,
    Composite,
    ConversionError,
    evaluate,
    parse_expression,
    references,
    value_of,
)
from sparktide.spark.expr import Compiled, json_of, variant_leaves
from sparktide.spark.sql import field
from tests.test_expr import same
from tests.test_expr_functions import CAST_ERRORS, FUNCTION_CASES, ROW

#: Records of every kind for the cross product with CROSS_EXPRESSIONS.
ROWS: list[dict[str, Any]] = [
    ROW,
    {"a": 3, "b": "x", "c": 2.5, "d": True, "t": "2024-12-29T23:59:59.999999Z"},
    {"a": -7, "b": " 12 ", "c": -0.5, "d": False, "t": "1970-01-01T00:00:00Z"},
    {"a": None, "b": "Zürich  ", "c": 1e300, "d": None, "t": "0001-01-01T00:00:00Z"},
    {"a": 2**63 - 1, "b": "", "c": 21.0, "d": [1], "t": "9999-12-31T23:59:59Z"},
    {"a": 0, "b": "1e5", "c": 0.1, "d": {"k": 1}, "t": "2028-02-29T06:00:00+05:30"},
    {"b": "true", "c": 123456789.125, "t": "not a time"},
    {"a": "17", "b": 5, "c": "2.5", "d": "0", "t": 12},
]

#: Expressions over every kind of value (a, b, c, d, t hold anything in ROWS).
CROSS_EXPRESSIONS = [
    # a field held (null included) or not: the record's own, right of * (semantics §11.16)
    "a IS MISSING",
    "d IS NOT MISSING",
    "GetType(a)",
    "GetType(b)",
    "GetType(c)",
    "GetType(d)",
    "GetType(t)",
    "CASE WHEN a IS NOT MISSING THEN a ELSE 'none' END",
    "TRY_CAST(d AS record)",
    "TRY_CAST(d AS array)",
    "GetArrayLength(TRY_CAST(d AS array))",
    "ABS(a)",
    "ABS(c)",
    "CEILING(c)",
    "FLOOR(a)",
    "ROUND(c, 1)",
    "ROUND(a, -1)",
    "ROUND(c, -2)",
    "POWER(c, 2)",
    "POWER(a, 0.5)",
    "SQRT(c)",
    "SQUARE(a)",
    "EXP(c)",
    "SIGN(c)",
    "SIGN(a)",
    "CONCAT(a, '|', b, '|', c, '|', d)",
    "LEN(b)",
    "LOWER(b)",
    "UPPER(b)",
    "SUBSTRING(b, 2, 2)",
    "SUBSTRING(b, a, 3)",
    "REPLACE(b, ' ', '_')",
    "CHARINDEX('1', b)",
    "CHARINDEX(b, 'true 1e5 x', a)",
    "PATINDEX('%r%', b)",
    "REGEXMATCH(b, 'U')",
    "LTRIM(b)",
    "RTRIM(b)",
    "TRIM(b)",
    "DATEADD(month, a, t)",
    "DATEADD(day, 1, t)",
    "DATEADD(year, 1, t)",
    "DATEADD(mcs, a, t)",
    "DATEPART(week, t)",
    "DATEPART(weekday, t)",
    "DATEPART(dayofyear, t)",
    "DATEPART(millisecond, t)",
    "DATENAME(month, t)",
    "DATENAME(dw, t)",
    "DATENAME(hour, t)",
    "YEAR(t)",
    "MONTH(t)",
    "DAY(t)",
    "DATEFROMPARTS(2024, 2, a)",
    "DATETIMEFROMPARTS(2024, 12, 31, 23, 59, a, 0)",
    "DATEDIFF(month, t, '2026-03-01T00:00:00Z')",
    "DATEDIFF(week, '2026-03-01T00:00:00Z', t)",
    "DATEDIFF(year, t, DATEADD(day, 1, t))",
    "DATEDIFF(quarter, t, '2000-01-01T00:00:00Z')",
    "CASE WHEN a > 0 THEN b WHEN c < 0 THEN c ELSE d END",
    "CASE WHEN a > 0 THEN d END IS NULL",
    "CASE a WHEN 3 THEN 'three' WHEN -7 THEN 'minus seven' END",
    "COALESCE(a, b, c, d)",
    "COALESCE(d, t) IS NULL",
    "COALESCE(a, CAST(b AS bigint), 0)",
    "TRY_CAST(a AS bigint)",
    "TRY_CAST(b AS bigint)",
    "TRY_CAST(c AS bigint)",
    "TRY_CAST(b AS float)",
    "TRY_CAST(a AS float)",
    "TRY_CAST(c AS nvarchar(max))",
    "TRY_CAST(d AS nvarchar(max))",
    "TRY_CAST(t AS datetime)",
    "TRY_CAST(b AS bit)",
    "TRY_CAST(d AS bit)",
    "TRY_CAST(c AS bit)",
    "CAST(a AS bigint)",
    "CAST(b AS float)",
    "CAST(t AS datetime)",
    "CAST(d AS bit)",
    "CAST(c AS nvarchar(max))",
    "CASE WHEN a IS NULL THEN CAST(b AS bigint) ELSE CAST(c AS bigint) END",
    "UPPER(CAST(d AS nvarchar(max))) = 'TRUE' OR CAST(b AS bigint) > 0",
    "GetArrayLength(d)",
    "GetArrayElement(d, 0)",
    "GetArrayElement(d, a)",
    "GetRecordPropertyValue(d, 'k')",
    "GetRecordPropertyValue(d, b)",
    "GetRecordPropertyValue(d, 'k') + GetArrayElement(d, 0)",
    "CASE WHEN a = 0 THEN d ELSE GetArrayElement(d, 0) END",
    "CASE WHEN a > 0 THEN d END",
]


def _reference(text: str, row: dict[str, Any]) -> tuple[Any, str | None]:
    expr = parse_expression(text)
    lookup = lambda name: value_of(row.get(name))  # noqa: E731
    value = evaluate(expr, lookup, present=row.__contains__)
    try:
        evaluate(expr, lookup, strict=True, present=row.__contains__)
        error = None
    except ConversionError as exc:
        error = str(exc)
    if isinstance(value, Composite):  # an array or object is written as itself
        return value.raw, error
    return (None if value is OTHER else value), error


def _spark(spark: Any, texts: list[str], rows: list[dict[str, Any]]) -> list[list[tuple[Any, Any]]]:
    """Per row, per expression: (the JSON-read value, the error message)."""
    exprs = [parse_expression(t) for t in texts]
    names = list(dict.fromkeys(n for e in exprs for n in references(e)))
    frame = spark.createDataFrame(
        [(i, json.dumps(r)) for i, r in enumerate(rows)], "k int, raw string"
    ).selectExpr("k", "parse_json(raw) AS m")
    stages, leaves = variant_leaves("_xf", names, field)
    compiled = Compiled("_xe", leaves)
    outputs = []
    for i, expr in enumerate(exprs):
        value = compiled.value(expr)
        outputs.append(f"{json_of(value)} AS v{i}")
        outputs.append(f"{value.err or 'CAST(NULL AS STRING)'} AS e{i}")
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    frame = compiled.apply(frame).selectExpr("k", *outputs)
    got = sorted(frame.collect(), key=lambda r: r["k"])
    return [[(json.loads(row[f"v{i}"]), row[f"e{i}"]) for i in range(len(exprs))] for row in got]


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def test_the_function_table_on_spark(spark):
    # in queries of 15 expressions: one query of them all outgrows Spark's code generation
    for cases in _chunks(FUNCTION_CASES, 15):
        (values,) = _spark(spark, [text for text, _ in cases], [ROW])
        for (text, expected), (got, error) in zip(cases, values, strict=True):
            assert same(got, expected), (text, got, expected)
            assert error == _reference(text, ROW)[1], (text, error)


def test_failed_casts_give_the_same_message_on_spark(spark):
    (values,) = _spark(spark, [text for text, _ in CAST_ERRORS], [ROW])
    for (text, message), (_, error) in zip(CAST_ERRORS, values, strict=True):
        assert error == message, (text, error)


def test_every_kind_of_value_gives_the_reference_result(spark):
    for texts in _chunks(CROSS_EXPRESSIONS, 12):
        results = _spark(spark, texts, ROWS)
        for row, values in zip(ROWS, results, strict=True):
            for text, (got, error) in zip(texts, values, strict=True):
                value, message = _reference(text, row)
                assert same(got, value), (text, row, got, value)
                assert error == message, (text, row, error, message)
