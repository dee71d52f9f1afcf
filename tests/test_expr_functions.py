"""Stream Analytics' built-in scalar functions, CASE, CAST, TRY_CAST and GetType in the
job-file expression language (sparktide.expr.functions, sparktide.expr.casts;
docs/semantics.md §11.11-§11.13): the reference evaluator against values worked out by
hand. tests/spark/test_expr_functions.py compiles the same tables to Spark SQL."""

from __future__ import annotations

import pytest

from sparktide.errors import ConfigError
from sparktide.expr import (
    Case,
    Cast,
    Composite,
    ConversionError,
    Func,
    Lit,
    Ref,
    evaluate,
    parse_expression,
    to_text,
    value_of,
)
from sparktide.expr.casts import java_double_text
from tests.test_expr import same

#: The record FUNCTION_CASES read.
ROW = {
    "i": 7,
    "n": -1234,
    "z": 0,
    "f": 2.675,
    "g": -2.5,
    "h": 21.0,
    "s": "  Hello World  ",
    "w": "Hello",
    "e": "",
    "num": " 42 ",
    "fl": "1.5e3",
    "bad": "abc",
    "yes": "TRUE",
    "b": True,
    "nul": None,
    "arr": [1, 2],
    "obj": {"a": 1},
    "max": 2**63 - 1,
    "min": -(2**63),
    "t": "2026-01-31T10:20:30.5Z",  # a Saturday
    "t2": "2026-03-01T00:00:00Z",
    "paris": "2026-01-01T00:30:00+01:00",  # 2025-12-31T23:30:00Z
    "leap": "2024-02-29T12:00:00Z",
    "old": "1969-12-31T23:59:59Z",
    "naive": "2026-01-31 10:20:30",
    "rec": {"a": {"b": [1, {"c": 2.5}, None, "x"]}, "x.y": 3, "h": 21.0, "o": {"p": True}},
    "key": "x.y",
    "nest": [[1, 2], [3], []],
}

FUNCTION_CASES: list[tuple[str, object]] = [
    # PARSEINT (JavaScript's parseInt of a text, semantics §11.11): white space, a sign,
    # 0x for radix 16, the longest run of digits; null for none, past 63 bits, not text
    ("PARSEINT('B4', 16)", 180),
    ("PARSEINT(' \t0xff', 16)", 255),
    ("PARSEINT('-1A', 16)", -26),
    ("PARSEINT('+0X7g', 16)", 7),
    ("PARSEINT('0x', 16)", None),
    ("PARSEINT('0', 16)", 0),
    ("PARSEINT('zz', 16)", None),
    ("PARSEINT('ffg1', 16)", 255),
    ("PARSEINT('7fffffffffffffff', 16)", 2**63 - 1),
    ("PARSEINT('8000000000000000', 16)", None),
    ("PARSEINT('-8000000000000000', 16)", None),
    ("PARSEINT('\u00a0\u3000101', 2)", 5),
    ("PARSEINT('0x10', 10)", 0),
    ("PARSEINT(num, 10)", 42),
    ("PARSEINT(fl, 10)", 1),
    ("PARSEINT('Zz', 36)", 1295),
    ("PARSEINT('\u0661', 10)", None),
    ("PARSEINT(i, 10)", None),
    ("PARSEINT(nul, 16)", None),
    # GetType (semantics §11.12): Stream Analytics' type names; a text that reads as a
    # time is a datetime (what the time functions make), null is null
    ("GetType(i)", "bigint"),
    ("GetType(f)", "float"),
    ("GetType(h)", "float"),  # 21.0, a float as written
    ("GetType(max)", "bigint"),
    ("GetType(s)", "nvarchar(max)"),
    ("GetType(e)", "nvarchar(max)"),
    ("GetType(b)", "bit"),
    ("GetType(nul)", None),
    ("GetType(missing)", None),
    ("GetType(arr)", "array"),
    ("GetType(obj)", "record"),
    ("GetType(t)", "datetime"),
    ("GetType(paris)", "datetime"),
    ("GetType(naive)", "nvarchar(max)"),  # no zone: not a time sparktide reads
    ("GetType(CAST(t AS datetime))", "datetime"),
    ("GetType(DATEADD(day, 1, t))", "datetime"),
    ("GetType(DATEFROMPARTS(2026, 1, 2))", "datetime"),
    ("GetType(CAST(num AS bigint))", "bigint"),
    ("GetType(TRY_CAST(bad AS bigint))", None),
    ("GetType(i / 2)", "float"),
    ("GetType(i > 2)", "bit"),
    ("GetType(CONCAT(i, w))", "nvarchar(max)"),
    ("GetType(GetRecordPropertyValue(rec, 'a.b'))", "array"),
    ("GetType(GetRecordPropertyValue(rec, 'o'))", "record"),
    ("GetType(GetArrayElement(GetRecordPropertyValue(rec, 'a.b'), 1))", "record"),
    ("GetType(GetArrayElement(GetRecordPropertyValue(rec, 'a.b'), 3))", "nvarchar(max)"),
    ("GetType(CASE WHEN i > 0 THEN obj ELSE s END)", "record"),
    ("GetType(CAST(obj AS record))", "record"),
    ("GetType(GetType(i))", "nvarchar(max)"),
    ("CASE WHEN GetType(num) = 'nvarchar(max)' THEN TRY_CAST(num AS bigint) END", 42),
    # records and arrays (semantics §11.14): a literal name is a path, indexes from 0
    ("GetRecordPropertyValue(rec, 'x.y')", None),  # 'x.y' is y inside x
    ("GetRecordPropertyValue(rec, '[x.y]')", 3),
    ("GetRecordPropertyValue(rec, key)", 3),  # a computed name is one name
    ("GetRecordPropertyValue(rec, 'a.b')", [1, {"c": 2.5}, None, "x"]),
    ("GetRecordPropertyValue(rec, 'o')", {"p": True}),
    ("GetRecordPropertyValue(rec, 'o.p')", True),
    ("GetRecordPropertyValue(rec, 'h') + 1", 22.0),
    ("GetRecordPropertyValue(rec, 'missing')", None),
    ("GetRecordPropertyValue(rec, 'h.x')", None),
    ("GetRecordPropertyValue(arr, 'a')", None),
    ("GetRecordPropertyValue(rec, i)", None),
    ("GetRecordPropertyValue(obj, 'a') * 10", 10),
    ("GetArrayElement(arr, 0)", 1),
    ("GetArrayElement(arr, 1)", 2),
    ("GetArrayElement(arr, 2)", None),
    ("GetArrayElement(arr, -1)", None),
    ("GetArrayElement(arr, max)", None),
    ("GetArrayElement(arr, 1.0)", None),
    ("GetArrayElement(arr, '0')", None),
    ("GetArrayElement(obj, 0)", None),
    ("GetArrayElement(GetRecordPropertyValue(rec, 'a.b'), 2)", None),  # a JSON null
    ("GetArrayElement(GetRecordPropertyValue(rec, 'a.b'), 3)", "x"),
    ("GetRecordPropertyValue(GetArrayElement(GetRecordPropertyValue(rec, 'a.b'), 1), 'c')", 2.5),
    ("GetArrayElement(nest, 0)", [1, 2]),
    ("GetArrayElement(GetArrayElement(nest, 1), 0)", 3),
    ("GetArrayElement(nest, i - 7)", [1, 2]),
    ("GetArrayLength(arr)", 2),
    ("GetArrayLength(nest)", 3),
    ("GetArrayLength(GetArrayElement(nest, 2))", 0),
    ("GetArrayLength(obj)", None),
    ("GetArrayLength(s)", None),
    ("GetArrayLength(nul)", None),
    ("GetArrayLength(GetRecordPropertyValue(rec, 'a.b')) > 3", True),
    ("CONCAT('n=', GetArrayLength(arr))", "n=2"),
    ("GetArrayElement(arr, 0) IS NULL", False),
    ("GetRecordPropertyValue(rec, 'o') IS NULL", False),
    # mathematics: integers stay integers, floats floats
    ("ABS(n)", 1234),
    ("ABS(g)", 2.5),
    ("ABS(min)", None),  # beyond 64 bits
    ("ABS(s)", None),
    ("CEILING(g)", -2.0),
    ("CEILING(f)", 3.0),
    ("CEILING(i)", 7),
    ("FLOOR(g)", -3.0),
    ("FLOOR(h)", 21.0),
    ("ROUND(f, 2)", 2.68),  # the decimal text 2.675, half away from zero
    ("ROUND(g, 0)", -3.0),
    ("ROUND(n, -2)", -1200),
    ("ROUND(-1250, -2)", -1300),
    ("ROUND(i, 1)", 7),
    ("ROUND(max, -1)", None),
    ("ROUND(-0.4, 0)", 0.0),
    ("POWER(i, 2)", 49.0),
    ("POWER(2, -1)", 0.5),
    ("POWER(-8, 0.5)", None),
    ("POWER(0, -1)", None),
    ("POWER(10, 400)", None),
    ("SQRT(16)", 4.0),
    ("SQRT(-1)", None),
    ("SQUARE(g)", 6.25),
    ("EXP(0)", 1.0),
    ("EXP(1000)", None),
    ("SIGN(n)", -1),
    ("SIGN(z)", 0),
    ("SIGN(f)", 1.0),
    ("SIGN(nul)", None),
    # strings
    ("CONCAT(w, ' ', i, ' ', f, nul, b)", "Hello 7 2.675true"),
    ("CONCAT(nul, nul)", ""),
    ("CONCAT(w, arr)", None),
    ("CONCAT(h, '|', 1e7, '|', 0.0001)", "21.0|1.0E7|1.0E-4"),
    ("LEN(s)", 13),  # trailing blanks do not count
    ("LEN(e)", 0),
    ("LEN(i)", None),
    ("LOWER(w)", "hello"),
    ("UPPER(w)", "HELLO"),
    ("UPPER('straße')", "STRASSE"),
    ("SUBSTRING(w, 2, 3)", "ell"),
    ("SUBSTRING(w, 0, 2)", "H"),
    ("SUBSTRING(w, -5, 10)", "Hell"),
    ("SUBSTRING(w, 4, 100)", "lo"),
    ("SUBSTRING(w, 10, 2)", ""),
    ("SUBSTRING(w, 1, -1)", None),
    ("SUBSTRING(w, 1.0, 2)", None),
    ("REPLACE(s, 'l', 'L')", "  HeLLo WorLd  "),
    ("REPLACE(w, '', 'x')", "Hello"),
    ("REPLACE(w, 'l', nul)", None),
    ("CHARINDEX('o', s)", 7),
    ("CHARINDEX('o', s, 8)", 10),
    ("CHARINDEX('o', s, -3)", 7),
    ("CHARINDEX('z', s)", 0),
    ("CHARINDEX('', s)", 0),
    ("CHARINDEX('o', s, 100)", 0),
    ("PATINDEX('%World%', s)", 9),
    ("PATINDEX('%o_l%', s)", 10),
    ("PATINDEX('Hel%', w)", 1),
    ("PATINDEX('%llo', w)", 3),
    ("PATINDEX('Hello', w)", 1),
    ("PATINDEX('ello', w)", 0),
    ("PATINDEX('%.%', w)", 0),
    ("PATINDEX('%z%', nul)", None),
    ("REGEXMATCH(s, 'w.r')", 9),  # case-insensitive
    ("REGEXMATCH(s, '[0-9]')", 0),
    ("REGEXMATCH(w, '^h')", 1),
    ("REGEXMATCH(i, 'x')", None),
    ("LTRIM(s)", "Hello World  "),
    ("RTRIM(s)", "  Hello World"),
    ("TRIM(s)", "Hello World"),
    # dates and times (UTC; weeks from Sunday; weekday 1 = Sunday)
    ("DATEADD(month, 1, t)", "2026-02-28T10:20:30.5Z"),
    ("DATEADD(mm, -2, t)", "2025-11-30T10:20:30.5Z"),
    ("DATEADD(year, -2, leap)", "2022-02-28T12:00:00Z"),
    ("DATEADD(quarter, 1, t)", "2026-04-30T10:20:30.5Z"),
    ("DATEADD(week, 1, t)", "2026-02-07T10:20:30.5Z"),
    ("DATEADD(day, 1, paris)", "2026-01-01T23:30:00Z"),
    ("DATEADD(hour, -1, t2)", "2026-02-28T23:00:00Z"),
    ("DATEADD(ms, 500, t)", "2026-01-31T10:20:31Z"),
    ("DATEADD(second, 1, 'x')", None),
    ("DATEADD(second, 1.5, t)", None),
    ("DATEADD(year, 8000, t)", None),
    ("DATEPART(year, t)", 2026),
    ("DATEPART(quarter, t)", 1),
    ("DATEPART(month, paris)", 12),
    ("DATEPART(dayofyear, paris)", 365),
    ("DATEPART(day, t)", 31),
    ("DATEPART(week, t)", 5),
    ("DATEPART(week, t2)", 10),
    ("DATEPART(weekday, t)", 7),
    ("DATEPART(dw, t2)", 1),
    ("DATEPART(hour, t)", 10),
    ("DATEPART(minute, t)", 20),
    ("DATEPART(second, t)", 30),
    ("DATEPART(millisecond, t)", 500),
    ("DATEPART(microsecond, t)", 500000),
    ("DATEPART(year, old)", 1969),
    ("DATEPART(hour, old)", 23),
    ("DATEPART(day, naive)", None),
    ("DATENAME(month, t)", "January"),
    ("DATENAME(weekday, t)", "Saturday"),
    ("DATENAME(year, t)", "2026"),
    ("DAY(t)", 31),
    ("MONTH(t)", 1),
    ("YEAR(paris)", 2025),
    ("DATEFROMPARTS(2024, 2, 29)", "2024-02-29T00:00:00Z"),
    ("DATEFROMPARTS(2023, 2, 29)", None),
    ("DATEFROMPARTS(2026, 13, 1)", None),
    ("DATEFROMPARTS(0, 1, 1)", None),
    ("DATETIMEFROMPARTS(2026, 3, 1, 9, 5, 7, 250)", "2026-03-01T09:05:07.25Z"),
    ("DATETIMEFROMPARTS(2026, 3, 1, 24, 0, 0, 0)", None),
    ("DATEDIFF(month, t, t2)", 2),
    ("DATEDIFF(year, paris, t)", 1),
    ("DATEDIFF(quarter, t2, paris)", -1),
    ("DATEDIFF(week, t, t2)", 5),  # Sundays 2026-02-01 ... 2026-03-01
    ("DATEDIFF(dayofyear, t, t2)", 29),
    ("DATEDIFF(year, old, '1970-01-01T00:00:00Z')", 1),
    # CASE
    ("CASE WHEN i > 5 THEN 'big' ELSE 'small' END", "big"),
    ("CASE WHEN i > 50 THEN 'big' END", None),
    ("CASE i WHEN 1 THEN 'one' WHEN 7 THEN 'seven' ELSE 'other' END", "seven"),
    ("CASE WHEN nul > 1 THEN 1 WHEN b THEN 2.5 END", 2.5),
    ("CASE WHEN b THEN arr END IS NULL", False),
    ("CASE WHEN NOT b THEN CAST(bad AS bigint) ELSE 0 END", 0),
    # COALESCE: the first argument that is not null, of its own kind; read in order
    ("COALESCE(nul, i)", 7),
    ("COALESCE(nul, nul, 'x', 2)", "x"),
    ("COALESCE(z, 'a')", 0),  # 0 is not null
    ("COALESCE(nul, nul)", None),
    ("COALESCE(missing_field, f)", 2.675),  # a field the record lacks is null
    ("COALESCE(arr, 1)", [1, 2]),  # an array is not null
    ("COALESCE(i, CAST(bad AS bigint))", 7),  # the CAST is never read
    ("COALESCE(nul, TRY_CAST(bad AS bigint), h)", 21.0),
    ("COALESCE(nul, b) AND TRUE", True),
    # CAST and TRY_CAST
    ("CAST(num AS bigint)", 42),
    ("CAST(f AS bigint)", 2),
    ("CAST(g AS bigint)", -2),
    ("CAST(b AS bigint)", 1),
    ("CAST(fl AS float)", 1500.0),
    ("CAST(i AS float)", 7.0),
    ("CAST(i AS nvarchar(max))", "7"),
    ("CAST(h AS nvarchar(max))", "21.0"),
    ("CAST(b AS nvarchar(max))", "true"),
    ("CAST(paris AS datetime)", "2025-12-31T23:30:00Z"),
    ("CAST(yes AS bit)", True),
    ("CAST(z AS bit)", False),
    ("CAST(nul AS bigint)", None),
    ("TRY_CAST(bad AS bigint)", None),
    ("TRY_CAST(bad AS float)", None),
    ("TRY_CAST(naive AS datetime)", None),
    ("TRY_CAST(arr AS nvarchar(max))", None),
    ("TRY_CAST('1e400' AS float)", None),
    ("TRY_CAST(1e19 AS bigint)", None),
    ("TRY_CAST('9223372036854775808' AS bigint)", None),
    ("TRY_CAST(w AS bit)", None),
    ("CAST('12' AS bigint) + 1", 13),
    # CAST to record and array (semantics §11.12): the object or array itself
    ("CAST(obj AS record)", {"a": 1}),
    ("CAST(arr AS array)", [1, 2]),
    ("GetRecordPropertyValue(CAST(rec AS record), 'a.b')", [1, {"c": 2.5}, None, "x"]),
    ("GetArrayLength(CAST(nest AS array))", 3),
    ("CAST(nul AS record)", None),
    ("CAST(missing AS array)", None),
    ("TRY_CAST(arr AS record)", None),
    ("TRY_CAST(obj AS array)", None),
    ("TRY_CAST(w AS record)", None),
    ("TRY_CAST(i AS array)", None),
]

#: CASTs that fail (a dead letter where the record is read), with the message.
CAST_ERRORS: list[tuple[str, str]] = [
    ("CAST(bad AS bigint) > 1", "CAST to bigint: 'abc' is not a bigint"),
    ("CAST(fl AS bigint)", "CAST to bigint: '1.5e3' is not a bigint"),
    ("CAST(1e19 AS bigint)", "CAST to bigint: a float beyond the range of bigint"),
    ("CAST(naive AS datetime)", "CAST to datetime: '2026-01-31 10:20:30' is not a datetime"),
    ("CAST(i AS datetime)", "CAST to datetime: an integer is not a datetime"),
    ("CAST(arr AS float)", "CAST to float: an array or object is not a float"),
    ("CAST(w AS bit)", "CAST to bit: 'Hello' is not a bit"),
    ("CAST(w AS record)", "CAST to record: 'Hello' is not a record"),
    ("CAST(arr AS record)", "CAST to record: an array is not a record"),
    ("CAST(obj AS array)", "CAST to array: a record is not an array"),
    ("CAST(h AS array)", "CAST to array: a float is not an array"),
    ("CAST(b AS record)", "CAST to record: a boolean is not a record"),
    ("GetArrayLength(CAST(i AS array))", "CAST to array: an integer is not an array"),
    # left to right; only the branch a CASE takes
    (
        "CAST(bad AS float) = 1 OR CAST(w AS bigint) = 1",
        "CAST to float: 'abc' is not a float",
    ),
    (
        "CASE WHEN b THEN CAST(w AS bit) ELSE CAST(bad AS bit) END",
        "CAST to bit: 'Hello' is not a bit",
    ),
    (  # COALESCE reads its arguments in order, up to the first not null
        "COALESCE(nul, CAST(bad AS bigint), CAST(w AS bit))",
        "CAST to bigint: 'abc' is not a bigint",
    ),
    (
        "UPPER(CAST(obj AS nvarchar(max)))",
        "CAST to nvarchar(max): an array or object is not a nvarchar(max)",
    ),
]


def ev(text: str, strict: bool = False) -> object:
    lookup = lambda name: value_of(ROW.get(name))  # noqa: E731
    value = evaluate(parse_expression(text), lookup, strict=strict)
    return value.raw if isinstance(value, Composite) else value


@pytest.mark.parametrize(("text", "value"), FUNCTION_CASES)
def test_functions_follow_the_table(text: str, value: object) -> None:
    got = ev(text)
    assert same(got, value), (text, got)
    # the canonical text parses back into the same tree
    tree = parse_expression(text)
    assert parse_expression(to_text(tree)) == tree


@pytest.mark.parametrize(("text", "message"), CAST_ERRORS)
def test_a_failed_cast_is_an_error_only_when_strict(text: str, message: str) -> None:
    with pytest.raises(ConversionError) as info:
        ev(text, strict=True)
    assert str(info.value) == message
    ev(text)  # not strict: null, no error


def test_parse_trees() -> None:
    assert parse_expression("CAST(a AS BIGINT)") == Cast(Ref("a"), "bigint")
    assert parse_expression("try_cast(a as NVARCHAR(MAX))") == Cast(Ref("a"), "nvarchar(max)", True)
    assert parse_expression("dateadd(MI, 5, t)") == Func("DATEADD", (Lit(5), Ref("t")), "minute")
    assert parse_expression("CASE a WHEN 1 THEN 'x' END") == Case(
        ((parse_expression("a = 1"), Lit("x")),)
    )
    assert parse_expression("upper = 1") == parse_expression("[upper] = 1")  # a column
    assert parse_expression("[end] + [case]") == parse_expression("[end] + [case]")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("FOO(a)", "unknown function FOO(...)"),
        ("UPPER(a, b)", "UPPER(...) takes 1 argument; got 2"),
        ("CONCAT(a)", "CONCAT(...) takes 2 or more arguments; got 1"),
        ("DATEADD(fortnight, 1, t)", "DATEADD(fortnight, ...): the date part is"),
        ("ROUND(a, b)", "ROUND(x, length): the length is an integer number"),
        ("CAST(a AS int)", "CAST to int is not supported; the types are bigint"),
        ("PATINDEX(a, b)", "PATINDEX(...) takes a 'string' pattern"),
        ("REGEXMATCH(a, '(?<=x)y')", "groups with (?...)"),
        ("REGEXMATCH(a, '[')", "is not valid"),
    ],
)
def test_bad_calls_are_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_expression(text, "select.x")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.5, "1.5"),
        (100.0, "100.0"),
        (1e7, "1.0E7"),
        (9999999.0, "9999999.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (-123456789.125, "-1.23456789125E8"),
        (1e300, "1.0E300"),
        (-0.0, "-0.0"),
    ],
)
def test_floats_are_written_as_java_writes_them(value: float, text: str) -> None:
    assert java_double_text(value) == text
