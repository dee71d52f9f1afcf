"""The job-file expression language (sparktide.expr): parsing, canonical text, and the
evaluator's null and type rules (docs/semantics.md, "Filters and computed columns")."""

from __future__ import annotations

import math

import pytest

from sparktide.errors import ConfigError
from sparktide.expr import (
    Between,
    Binary,
    DateDiff,
    In,
    IsNull,
    Like,
    Lit,
    Ref,
    Unary,
    evaluate,
    is_other,
    parse_expression,
    passes,
    references,
    to_text,
    value_of,
)

ROW = {
    "i": 7,
    "n": -7,
    "z": 0,
    "f": 2.5,
    "g": 21.0,
    "s": "abc",
    "t": "ABC",
    "b": True,
    "nul": None,
    "arr": [1, 2],
    "obj": {"a": 1},
    "big": 2**64,
    "max": 2**63 - 1,
    "line": "a\nb",
}


def ev(text: str) -> object:
    lookup = lambda name: value_of(ROW.get(name))  # noqa: E731
    return evaluate(parse_expression(text), lookup, present=ROW.__contains__)


def same(a: object, b: object) -> bool:
    return type(a) is type(b) and (a == b or (isinstance(a, float) and math.isclose(a, b)))


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("a", Ref("a")),
        ("[lane-id]", Ref("lane-id")),
        ("[and]", Ref("and")),
        ("1", Lit(1)),
        ("1.5", Lit(1.5)),
        ("1e3", Lit(1000.0)),
        ("'it''s'", Lit("it's")),
        ("TRUE", Lit(True)),
        ("false", Lit(False)),
        ("Null", Lit(None)),
        ("-a", Unary("-", Ref("a"))),
        ("+a", Ref("a")),
        ("not a", Unary("NOT", Ref("a"))),
        ("a + b * c", Binary("+", Ref("a"), Binary("*", Ref("b"), Ref("c")))),
        ("(a + b) * c", Binary("*", Binary("+", Ref("a"), Ref("b")), Ref("c"))),
        ("a - b - c", Binary("-", Binary("-", Ref("a"), Ref("b")), Ref("c"))),
        ("a % 2 = 1", Binary("=", Binary("%", Ref("a"), Lit(2)), Lit(1))),
        ("a != 1", Binary("<>", Ref("a"), Lit(1))),
        (
            "a OR b AND NOT c",
            Binary("OR", Ref("a"), Binary("AND", Ref("b"), Unary("NOT", Ref("c")))),
        ),
        ("a IS NULL", IsNull(Ref("a"))),
        ("a is not null", IsNull(Ref("a"), True)),
        ("a IN (1, 'x')", In(Ref("a"), (Lit(1), Lit("x")))),
        ("a NOT IN (1)", In(Ref("a"), (Lit(1),), True)),
        ("a BETWEEN 1 AND 2 AND b", Binary("AND", Between(Ref("a"), Lit(1), Lit(2)), Ref("b"))),
        ("a NOT BETWEEN -1 AND 2", Between(Ref("a"), Unary("-", Lit(1)), Lit(2), True)),
        ("a LIKE 'x%'", Like(Ref("a"), "x%")),
        ("a NOT LIKE '_'", Like(Ref("a"), "_", True)),
        ("e.TollId", Ref("TollId", "e")),
        ("[in-1].[x-y] + 1", Binary("+", Ref("x-y", "in-1"), Lit(1))),
        ("DATEDIFF(minute, a.t, b.t)", DateDiff("minute", Ref("t", "a"), Ref("t", "b"))),
        ("datediff(MI, t, timestamp)", DateDiff("minute", Ref("t"), Ref("timestamp"))),
        (
            "DateDiff(mcs, 'x', t) * 2",
            Binary("*", DateDiff("microsecond", Lit("x"), Ref("t")), Lit(2)),
        ),
        ("-datediff(dd, a, b)", Unary("-", DateDiff("day", Ref("a"), Ref("b")))),
        ("datediff = 1", Binary("=", Ref("datediff"), Lit(1))),  # a column, not a call
    ],
)
def test_parse(text: str, tree: object) -> None:
    parsed = parse_expression(text)
    assert parsed == tree
    assert parse_expression(to_text(parsed)) == parsed  # the canonical text parses back


@pytest.mark.parametrize(
    "text",
    [
        "speed > 50 AND lane = 'A'",
        "- -a",
        "NOT (a AND b)",
        "(a = b) = c",
        "a - (b - c)",
        "a / (b * c) % d",
        "-(a + b)",
        "a IN (1, 2.5, 'x', null, true)",
        "(a OR b) AND c",
        "[x-y] = 1",
        "[Select] = 1",
        "1e16 + 0.1",
        "[and].[or] = a.b",
        "DATEDIFF(hh, [x-y-z].t, u) BETWEEN 0 AND 15",
        "DATEDIFF(s, DATEDIFF(d, a, b), c) IS NULL",
        "a IS NOT MISSING AND [missing] IS MISSING",
    ],
)
def test_canonical_text_round_trips(text: str) -> None:
    tree = parse_expression(text)
    assert parse_expression(to_text(tree)) == tree


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a >", "ends too early"),
        ('a = "x"', "column 5: unexpected character '\"' (strings use 'single quotes'"),
        ("a LIKE b", "LIKE takes a 'string' pattern"),
        ("a = 1e999", "beyond the range of a double"),
        ("[a b] = 1", "'a b' is not a column name"),
        ("a b", "column 3: unexpected 'b'"),
        ("", "expected an expression"),
        ("a = 1)", "column 6: unexpected ')'"),
        ("a.b.c = 1", "column 4: unexpected '.': a name is a column or input.column"),
        ("1 + uppr(a)", "column 5: unknown function uppr(...); the functions are DATEDIFF, ABS"),
        ("DATEDIFF(minute, a)", "column 1: DATEDIFF(...) takes a unit and two times"),
        ("datediff(fortnight, a, b)", "DATEDIFF(fortnight, ...): the date part is year (yy, yyyy)"),
        ("datediff('minute', a, b)", "written as a bare word (DATEDIFF(minute, ...))"),
        ("datediff(t.minute, a, b)", "DATEDIFF(t.minute, ...): the date part is"),
        ("[a].[b c] = 1", "'b c' is not a column name"),
        ("a + 1 IS MISSING", "column 7: IS MISSING takes a field of the record"),
        ("i.a IS MISSING", "IS MISSING takes a field of the record"),
        ("System.Timestamp() IS MISSING", "IS MISSING takes a field of the record"),
    ],
)
def test_syntax_errors_name_the_key_and_column(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_expression(text, "filter.where")
    assert caught.value.key == "filter.where"
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # comparisons: numbers numerically, int and float alike; strings; booleans
        ("i = 7", True),
        ("g = 21", True),
        ("i < f", False),
        ("f >= 2.5", True),
        ("s < 'abd'", True),
        ("t < s", True),
        ("b = true", True),
        ("false < b", True),
        ("i <> 7", False),
        ("i != 8", True),
        ("max = 9223372036854775807", True),
        ("max > 9223372036854775806", True),
        # incompatible kinds and nulls: null
        ("s = 1", None),
        ("b = 1", None),
        ("i = '7'", None),
        ("missing = 1", None),
        ("nul = nul", None),
        ("arr = arr", None),
        ("obj = 1", None),
        ("null = null", None),
        # arithmetic
        ("i + 1", 8),
        ("i - 10", -3),
        ("i * n", -49),
        ("i / 2", 3.5),
        ("i / 7", 1.0),
        ("f * 2", 5.0),
        ("i + f", 9.5),
        ("i % 3", 1),
        ("n % 3", -1),
        ("i % -3", 1),
        ("f % 2", 0.5),
        ("-f % 2", -0.5),
        ("-i", -7),
        ("- -i", 7),
        ("-g", -21.0),
        ("i / z", None),
        ("i % z", None),
        ("f / 0.0", None),
        ("max + 1", None),
        ("max * 2", None),
        ("-max - 2", None),
        ("big + 0", float(2**64)),
        ("big", float(2**64)),
        ("1.5e308 * 10", None),
        ("s + 1", None),
        ("b + 1", None),
        ("-s", None),
        ("missing + 1", None),
        # logic (Kleene), non-booleans are null
        ("true AND missing = 1", None),
        ("false AND missing = 1", False),
        ("true OR missing = 1", True),
        ("false OR missing = 1", None),
        ("NOT missing = 1", None),
        ("NOT b", False),
        ("i AND true", None),
        ("NOT i", None),
        # IS NULL
        ("missing IS NULL", True),
        ("nul IS NULL", True),
        ("arr IS NULL", False),
        ("i / z IS NULL", True),
        ("s IS NOT NULL", True),
        # IS MISSING: the record has no such field (one holding null is there)
        ("missing IS MISSING", True),
        ("nul IS MISSING", False),
        ("nul IS NOT MISSING", True),
        ("NOT i IS MISSING", True),
        ("CASE WHEN nul IS NOT MISSING THEN nul ELSE 1 END", None),
        ("CASE WHEN nope IS NOT MISSING THEN nope ELSE 1 END", 1),
        # IN, BETWEEN
        ("i IN (1, 7.0)", True),
        ("i IN (1, 2)", False),
        ("i IN (1, null)", None),
        ("i NOT IN (1, 2)", True),
        ("s IN ('abc', 1)", True),
        ("i BETWEEN 7 AND 8", True),
        ("i BETWEEN 8 AND 9", False),
        ("i NOT BETWEEN 8 AND 9", True),
        ("s BETWEEN 1 AND 2", None),
        # LIKE: case-sensitive, % any text (newlines too), _ one character
        ("s LIKE 'a%'", True),
        ("s LIKE 'A%'", False),
        ("s LIKE 'a_c'", True),
        ("s LIKE 'a_'", False),
        ("s NOT LIKE '%z%'", True),
        ("line LIKE 'a%b'", True),
        ("i LIKE '7'", None),
        ("s LIKE '.*'", False),
    ],
)
def test_evaluation(text: str, value: object) -> None:
    assert same(ev(text), value), (text, ev(text))


#: A record of times for DATEDIFF (both engines evaluate DATEDIFF_CASES over it:
#: tests/spark/test_expr.py compiles the same table to Spark SQL).
TIMES = {
    "t0": "2026-03-01T09:00:59Z",
    "t1": "2026-03-01T09:01:00Z",
    "paris": "2026-03-02T00:30:00+01:00",  # 2026-03-01T23:30:00Z: still March 1st in UTC
    "pre": "1969-12-31T23:59:59.9995Z",  # 500 us before the epoch
    "post": "1970-01-01T00:00:00.0005Z",
    "noon_before": "1969-12-31T12:00:00Z",
    "noon_after": "1970-01-01T12:00:00Z",
    "first": "0001-01-01T00:00:00Z",
    "last": "9999-12-31T23:59:59.999999Z",
    "naive": "2026-03-01T09:00:00",
    "feb30": "2026-02-30T00:00:00Z",
    "far_zone": "2026-03-01T09:00:00+19:00",
    "nanos": "2026-03-01T09:00:00.1234567Z",
    "word": "soon",
    "num": 5,
    "yes": True,
    "nul": None,
    "arr": ["2026-03-01T09:00:00Z"],
}

#: (expression, value): Stream Analytics' (SQL Server's) DATEDIFF counts the unit
#: boundaries crossed from start to end, floor(end / unit) - floor(start / unit) in UTC
#: microseconds; null when either side is not an ISO-8601 time with a zone.
DATEDIFF_CASES: list[tuple[str, object]] = [
    # one second apart, one boundary crossed (as SQL Server documents it)
    ("DATEDIFF(minute, t0, t1)", 1),
    ("DATEDIFF(minute, t1, t0)", -1),
    ("DATEDIFF(hour, t0, t1)", 0),
    ("DATEDIFF(second, t0, t1)", 1),
    ("DATEDIFF(ms, t0, t1)", 1000),
    ("DATEDIFF(mcs, t0, t1)", 1_000_000),
    ("DATEDIFF(minute, '2026-03-01T09:00:00Z', '2026-03-01T09:00:59.999999Z')", 0),
    ("DATEDIFF(n, '2026-03-01T09:00:00Z', '2026-03-01T09:15:59Z')", 15),
    # days are UTC days, whatever the text's zone
    ("DATEDIFF(day, '2026-03-01T23:59:59.999999Z', '2026-03-02T00:00:00Z')", 1),
    ("DATEDIFF(dd, '2026-03-01T00:00:00Z', paris)", 0),
    ("DATEDIFF(d, paris, '2026-03-02T00:00:00+00:00')", 1),
    ("DATEDIFF(hh, t0, paris)", 14),
    # before the epoch: floor division, not truncation (which would say 0 for both)
    ("DATEDIFF(millisecond, pre, post)", 1),
    ("DATEDIFF(day, noon_before, noon_after)", 1),
    ("DATEDIFF(second, pre, '1970-01-01T00:00:00Z')", 1),
    ("DATEDIFF(microsecond, pre, post)", 1000),
    ("DATEDIFF(ss, '1969-12-31T23:59:58.5Z', pre)", 1),
    # the whole range of years, exactly (no floating point)
    ("DATEDIFF(microsecond, first, last)", 315_537_897_599_999_999),
    ("DATEDIFF(day, first, last)", 3_652_058),
    ("DATEDIFF(mcs, last, first)", -315_537_897_599_999_999),
    # computed with, compared
    ("DATEDIFF(second, t0, t1) * 2 + 1", 3),
    ("DATEDIFF(minute, t0, t1) BETWEEN 0 AND 15", True),
    ("DATEDIFF(minute, t0, t1) = 1.0", True),
    # not times: null
    ("DATEDIFF(minute, t0, naive)", None),
    ("DATEDIFF(minute, feb30, t0)", None),
    ("DATEDIFF(minute, t0, far_zone)", None),
    ("DATEDIFF(minute, nanos, t0)", None),
    ("DATEDIFF(minute, word, t0)", None),
    ("DATEDIFF(minute, t0, num)", None),
    ("DATEDIFF(minute, yes, t0)", None),
    ("DATEDIFF(minute, t0, nul)", None),
    ("DATEDIFF(minute, missing, t0)", None),
    ("DATEDIFF(minute, arr, t0)", None),
    ("DATEDIFF(minute, t0, null)", None),
    ("DATEDIFF(minute, t0, '0000-12-31T00:00:00Z')", None),
    ("DATEDIFF(minute, t0, t1 + 1)", None),
    ("DATEDIFF(minute, t0, word) IS NULL", True),
]


@pytest.mark.parametrize(("text", "value"), DATEDIFF_CASES)
def test_datediff_counts_unit_boundaries(text: str, value: object) -> None:
    got = evaluate(parse_expression(text), lambda name: value_of(TIMES.get(name)))
    assert same(got, value), (text, got)


def test_qualified_names_are_looked_up_by_input_and_field() -> None:
    match = {"e.t": "2026-03-01T09:00:10Z", "x.t": "2026-03-01T09:03:10Z"}
    expr = parse_expression("DATEDIFF(minute, e.t, x.t)")
    assert references(expr) == ["e.t", "x.t"]
    assert evaluate(expr, lambda key: value_of(match.get(key))) == 3


def test_values_as_expressions_see_them() -> None:
    assert value_of(2**63) == float(2**63)
    assert value_of(-(2**63)) == -(2**63)
    # arrays and objects are *other* (OTHER to every operator), holding their JSON value
    # for the record and array functions
    assert is_other(value_of([1])) and is_other(value_of({"a": 1}))
    assert value_of([1]).raw == [1] and value_of({"a": 1}).raw == {"a": 1}
    assert value_of(True) is True
    assert value_of(float("nan")) is None


def test_a_row_passes_only_when_the_condition_is_true() -> None:
    where = parse_expression("speed > 50")
    assert passes(where, {"speed": 51})
    assert not passes(where, {"speed": 50})
    assert not passes(where, {"speed": "fast"})
    assert not passes(where, {})


def test_references_in_first_use_order() -> None:
    assert references(parse_expression("DATEDIFF(s, a.t, t) > a.t + b.t")) == ["a.t", "t", "b.t"]
    assert references(parse_expression("b + a > 1 AND c IN (a, d) OR b IS NULL")) == [
        "b",
        "a",
        "c",
        "d",
    ]
