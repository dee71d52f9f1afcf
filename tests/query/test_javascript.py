"""Stream Analytics' JavaScript user-defined functions (``udf.<name>(...)``) read as
expressions (semantics §11.24): what is read, what each call becomes, the values the
reference engine computes, and every refusal with its place in the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktide.core.engine import simulate
from sparktide.errors import ConfigError, QueryError
from sparktide.expr import parse_expression
from sparktide.query import load_bindings, translate_text
from sparktide.query.javascript import compile_function
from sparktide.reader import parse_fields
from sparktide.time import SECOND, parse_instant

HEX = """// the integer a hexadecimal text writes
function main(hexValue) {
  return parseInt(hexValue, 16);
}
"""
CELSIUS = """function toCelsius(f, unit) {
    const c = (f - 32) * 5 / 9;
    if (unit === 'K') { return c + 273.15; }
    if (c < -273.15 || f === null) return null;
    return Math.round(c * 10) / 10;
}
"""


def bindings(tmp_path: Path, **functions: str):  # type: ignore[no-untyped-def]
    lines = ['[inputs.Input]\npath = "in"\n']
    for name, text in functions.items():
        (tmp_path / f"{name}.js").write_text(text, encoding="utf-8")
        lines.append(f'[functions.{name}]\njavascript = "{name}.js"\n')
    (tmp_path / "job.toml").write_text("\n".join(lines), encoding="utf-8")
    return load_bindings(tmp_path / "job.toml")


def job(tmp_path: Path, query: str, **functions: str):  # type: ignore[no-untyped-def]
    return translate_text(query, "asaql", bindings(tmp_path, **functions), "q.asaql").job


def run(j, rows):  # type: ignore[no-untyped-def]
    records = [
        parse_fields(seq, row, j.source, default_arrival=parse_instant(row["t"]) + SECOND)
        for seq, row in enumerate(rows)
    ]
    return [{k: v for k, v in e.items() if k != "type"} for e in simulate(j, records).events]


def test_a_call_is_the_function_s_expression_over_its_arguments(tmp_path: Path) -> None:
    """``udf.hex2Int(HexValue)`` is ``PARSEINT(HexValue, 16)`` wherever it is called;
    an integer result needs no conversion."""
    j = job(
        tmp_path,
        "SELECT d, udf.HEX2INT(h) AS v INTO o FROM Input TIMESTAMP BY t "
        "WHERE udf.hex2Int(UPPER(h)) > 16",
        hex2Int=HEX,
    )
    assert j.filter is not None and j.filter.where == "PARSEINT(UPPER(h), 16) > 16"
    assert [(p.name, p.expression) for p in j.select] == [
        ("d", "d"),
        ("v", "PARSEINT(h, 16)"),
    ]
    rows = [
        {"t": "2026-03-01T09:00:01Z", "d": 1, "h": "B4"},
        {"t": "2026-03-01T09:00:02Z", "d": 2, "h": "0x0f"},
        {"t": "2026-03-01T09:00:03Z", "d": 3, "h": "ffq"},
        {"t": "2026-03-01T09:00:04Z", "d": 4, "h": 17},
    ]
    assert [(r["d"], r["v"]) for r in run(j, rows)] == [(1, 180), (3, 255)]


def test_declarations_early_returns_and_numbers_as_stream_analytics_takes_them(
    tmp_path: Path,
) -> None:
    """Constants are inlined, ``if (...) return`` is a CASE, and a JavaScript number
    comes back as Stream Analytics takes it: an integral one is a bigint."""
    j = job(
        tmp_path,
        "SELECT udf.toCelsius(f, u) AS c INTO o FROM Input TIMESTAMP BY t",
        toCelsius=CELSIUS,
    )
    rows = [
        {"t": "2026-03-01T09:00:01Z", "f": 212, "u": "C"},
        {"t": "2026-03-01T09:00:02Z", "f": 32.5, "u": "C"},
        {"t": "2026-03-01T09:00:03Z", "f": 32, "u": "K"},
        {"t": "2026-03-01T09:00:04Z", "f": -500, "u": "C"},
        {"t": "2026-03-01T09:00:05Z", "f": "hot", "u": "C"},
        {"t": "2026-03-01T09:00:06Z", "f": -40.2, "u": "C"},
    ]
    got = [r["c"] for r in run(j, rows)]
    assert got == [100, 0.3, 273.15, None, None, -40.1]
    assert type(got[0]) is int


def test_a_function_reads_maths_and_conditions(tmp_path: Path) -> None:
    text = (
        "function band(x, y) {\n"
        "  let lo = Math.min(x, y); let hi = Math.max(x, y);\n"
        "  return !(lo > 0) ? Math.abs(lo) : Math.pow(hi, 2) + Math.floor(x / 4) "
        "+ Math.ceil(-y / 4) + Math.sqrt(16) + (x % 3) - Math.exp(0);\n}\n"
    )
    j = job(tmp_path, "SELECT udf.band(x, y) AS b INTO o FROM Input", band=text)
    rows = [
        {"t": "2026-03-01T09:00:01Z", "x": -3, "y": 5},
        {"t": "2026-03-01T09:00:02Z", "x": 7, "y": 2},
        {"t": "2026-03-01T09:00:03Z", "x": None, "y": 2},
    ]
    # x=7, y=2: 49 + 1 + 0 + 4 + 1 - 1 = 54 (Math.ceil(-0.5) is -0: 0)
    assert [r["b"] for r in run(j, rows)] == [3, 54, None]


def test_the_reference_evaluator_reads_the_calls_it_makes() -> None:
    f = compile_function(CELSIUS, "c.js")
    assert (f.name, f.params, f.kind) == ("toCelsius", ("f", "unit"), "any")
    text = compile_function("function u(x) { return '\\u00b0C\\x21\\n\\''; }", "u.js")
    assert (text.kind, text.body.value) == ("text", "°C!\n'")  # type: ignore[attr-defined]
    assert parse_expression("PARSEINT(h, 16)") is not None


@pytest.mark.parametrize(
    ("text", "place", "message"),
    [
        ("function a(x) { return x + 1; }", "1:26", "+ of values that may be text"),
        ("function a(x) { return 'a' + 'b'; }", "1:28", "+ of values that may be text"),
        ("function a(x) { return x ? 1 : 2; }", "1:24", "?: of a value that is no condition"),
        ("function a(x) { return x && 1 > 0; }", "1:24", "&& of a value that is no condition"),
        ("function a(x) { return x == 1; }", "1:26", "== converts types in JavaScript"),
        ("function a(x) { x = 2; return x; }", "1:17", "'x': a function here declares"),
        ("function a(x) { return x.trim(); }", "1:26", ".trim() is not read"),
        ("function a(x) { return parseInt(x); }", "1:24", "pass the radix"),
        ("function a(x) { return parseInt(x, 37); }", "1:24", "pass the radix"),
        ("function a(x) { return Math.random(); }", "1:29", "Math.random with 0 arguments"),
        ("function a(x) { return -'a'; }", "1:24", "- of a text: JavaScript converts it"),
        ("function a(x) { return 1; return 2; }", "1:27", "code after return"),
        ("function a(x) { var y = 1; var y = 2; return y; }", "1:32", "y is declared twice"),
        ("function a(x) { if (x > 1) return 1; else return 2; }", "1:38", "else: write the rest"),
        ("function a(x) { for (;;) {} }", "1:17", "'for': a function here declares"),
        ("function a(x) { return y; }", "1:24", "'y' is not read here"),
        ("function a(x) { return x # 1; }", "1:26", "unexpected '#'"),
        ("var x = 1;", "1:1", "expected 'function'"),
        ("function a(x) { return x === '\\q'; }", "1:30", "the escape \\q is not read"),
    ],
)
def test_what_is_not_read_is_refused_with_its_place(text: str, place: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        compile_function(text, "f.js")
    assert str(caught.value).startswith(f"f.js:{place}: "), str(caught.value)
    assert message in str(caught.value)


def test_calls_the_job_file_does_not_bind_or_cannot_take_are_refused(tmp_path: Path) -> None:
    with pytest.raises(QueryError) as caught:
        job(tmp_path, "SELECT udf.parse(x) AS p INTO o FROM Input")
    assert str(caught.value).startswith("q.asaql:1:8: udf.parse(...): bind the function")
    assert '[functions.parse] javascript = "parse.js"' in str(caught.value)
    with pytest.raises(QueryError, match=r"udf\.hex2Int\(\.\.\.\) takes 1 argument \(hexValue\)"):
        job(tmp_path, "SELECT udf.hex2Int(x, y) AS p INTO o FROM Input", hex2Int=HEX)
    (tmp_path / "job.toml").write_text('[functions.f]\njavascript = "missing.js"\n')
    with pytest.raises(ConfigError) as error:
        load_bindings(tmp_path / "job.toml")
    assert error.value.key == "functions.f.javascript"
    (tmp_path / "job.toml").write_text('[functions.f]\ncsharp = "f.cs"\n')
    with pytest.raises(ConfigError) as error:
        load_bindings(tmp_path / "job.toml")
    assert error.value.key == "functions.f.csharp"
