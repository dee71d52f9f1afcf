"""Untrusted job files (config level): every string a job file gives for a column name or
an aggregate is parsed by a strict grammar, and anything else is rejected at load time
with a ``ConfigError`` naming the key; paths are taken literally; nothing a job file holds
is ever evaluated. ``tests/spark/test_bad_input.py`` runs the same strings as data
through Spark and checks ``sql_string`` against Spark's own parser.
"""

from __future__ import annotations

import builtins
import io
import json
from pathlib import Path
from typing import Any

import pytest

from jobfiles import BASE_JOB, mutate, write_job
from sparktide.cli import main
from sparktide.errors import ConfigError
from sparktide.job import Aggregate, Job, load_job
from sparktide.spark.sql import field, quote, sql_string


def _payloads(probe: Path) -> list[str]:
    """Strings that would do harm as SQL or Python; the last ones create ``probe`` if
    they ever run."""
    return [
        "`",
        "'",
        '"',
        "\\",
        "x`y",
        "'; DROP TABLE x; --",
        "x) , reflect('java.lang.Runtime','getRuntime')",
        "java_method('java.lang.System', 'exit', 1)",
        "value; DROP TABLE events",
        "value -- comment",
        "value /* comment */",
        "line\nbreak",
        "tab\there",
        "${env:HOME}",
        "${spark.app.name}",
        "nul\x00byte",
        "é",
        " value",
        "value ",
        "1value",
        "",
        f"__import__('pathlib').Path({str(probe)!r}).touch()",
        f"reflect('java.io.File', 'createTempFile', {probe.name!r}, '.txt')",
        f"x'), java_method('java.nio.file.Files', 'createFile', '{probe}') --",
    ]


COLUMN_KEYS = [
    "source.arrival_time",
    "source.processing_time",
    "source.partition",
]


def _jobs(payload: str) -> list[tuple[str, dict[str, Any]]]:
    """(key that must be named, job tables) for ``payload`` in every column-name slot."""
    out = [(key, mutate(BASE_JOB, {key: payload})) for key in COLUMN_KEYS]
    # (timestamp_by and over may be expressions, which parse ``value -- comment`` and the
    # value with a space around it: never SQL text)
    if payload.strip() not in ("value", "value -- comment"):
        for key in ("source.timestamp_by", "source.over"):
            out.append((key, mutate(BASE_JOB, {key: payload})))
    out.append(("window.group_by", mutate(BASE_JOB, {"window.group_by": ["device", payload]})))
    # (the grammar allows spaces inside the parentheses; aggregates take expressions, in
    # which ``value -- comment`` is ``value - (-comment)``: parsed, never SQL text)
    if payload.strip() not in ("value", "value -- comment"):
        out.append(
            (
                "window.aggregates.bad",
                mutate(BASE_JOB, {"window.aggregates": {"bad": f"sum({payload})"}}),
            )
        )
    out.append(
        (
            "window.aggregates.bad",
            mutate(BASE_JOB, {"window.aggregates": {"bad": payload}}),
        )
    )
    out.append(
        (
            f"window.aggregates.{payload}",
            mutate(BASE_JOB, {"window.aggregates": {payload: "count(*)"}}),
        )
    )
    return out


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


@pytest.fixture
def no_eval(monkeypatch, probe):
    """Fails the test if any source text passed to ``eval`` or ``exec`` holds a payload
    (Python's own machinery, e.g. ``dataclasses``, may exec its own generated text)."""
    payloads = [p for p in _payloads(probe) if len(p) > 3]
    real_eval, real_exec = builtins.eval, builtins.exec

    def check(source: object) -> None:
        if isinstance(source, bytes):
            source = source.decode("utf-8", "replace")
        if isinstance(source, str):
            for payload in payloads:
                assert payload not in source, f"a job file string reached eval/exec: {payload!r}"

    def guarded_eval(source: Any, *args: Any, **kwargs: Any) -> Any:
        check(source)
        return real_eval(source, *args, **kwargs)

    def guarded_exec(source: Any, *args: Any, **kwargs: Any) -> Any:
        check(source)
        return real_exec(source, *args, **kwargs)

    monkeypatch.setattr(builtins, "eval", guarded_eval)
    monkeypatch.setattr(builtins, "exec", guarded_exec)


def test_every_payload_in_every_column_slot_is_rejected_naming_the_key(tmp_path, probe, no_eval):
    tried = 0
    for payload in _payloads(probe):
        for key, tables in _jobs(payload):
            job = write_job(tmp_path, tables)
            with pytest.raises(ConfigError) as info:
                load_job(job)
            assert str(info.value).startswith(key), (payload, key, str(info.value))
            tried += 1
    assert tried == len(_payloads(probe)) * (len(COLUMN_KEYS) + 6) - 9
    assert not probe.exists()


@pytest.mark.parametrize(
    "text",
    [
        "sum(value) , reflect('java.lang.Runtime','getRuntime')",
        "java_method('java.lang.Runtime', 'getRuntime')",
        "reflect('java.io.File', 'createTempFile', 'x', '.txt')",
        "count(*) --",
        "count(*) /* */",
        "sum(`value`)",
        'sum("value")',
        "sum(value); DROP TABLE x",
        "sum(value)\nmax(value)",
        "sum(value) OVER ()",
        "sum(DISTINCT value)",
        "sum(value[0])",
        "sum(${env:HOME})",
        "eval('1')",
        "__import__('os').system('id')",
        "lambda: 1",
        "sum(value))",
        "(sum(value)",
    ],
)
def test_aggregate_grammar_rejects_everything_but_function_of_column(text, no_eval):
    with pytest.raises(ConfigError) as info:
        Aggregate.parse("a", text)
    assert info.value.key == "window.aggregates.a"


def test_aggregate_arguments_are_parsed_expressions_not_sql_text(no_eval):
    """Aggregates take expressions (issue 28): a quoted argument is a string literal of
    the expression language, compiled by sparktide, never pasted into SQL."""
    aggregate = Aggregate.parse("a", "sum('value')")
    assert aggregate.column is None and aggregate.expression == "'value'"


@pytest.mark.parametrize(
    ("text", "function", "column"),
    [
        ("count(*)", "count", None),
        ("  SUM ( value-1 )  ", "sum", "value-1"),
        ("max(_)", "max", "_"),
        ("count_distinct(x--y)", "count_distinct", "x--y"),
    ],
)
def test_aggregate_grammar_accepts_odd_but_plain_names(text, function, column, no_eval):
    aggregate = Aggregate.parse("a", text)
    assert (aggregate.function, aggregate.column) == (function, column)


def test_odd_but_valid_names_are_literal_field_names(tmp_path, no_eval):
    """Names the grammar allows that look like SQL (``x--y`` is a comment in SQL) are
    field names to the reference engine: it reads exactly those keys."""
    (tmp_path / "in.jsonl").write_text(
        json.dumps({"t--x": "2026-03-01T12:00:00Z", "a-": "2026-03-01T12:00:01Z", "_": 2}) + "\n",
        encoding="utf-8",
    )
    job = write_job(
        tmp_path,
        {
            "source": {"path": "in.jsonl", "timestamp_by": "t--x", "arrival_time": "a-"},
            "window": {
                "type": "tumbling",
                "size": "1m",
                "aggregates": {"n--": "count(*)", "s-": "sum(_)"},
            },
        },
    )
    out = io.StringIO()
    assert main(["simulate", str(job), "--format", "jsonl"], stdout=out) == 0
    (window,) = [r for r in map(json.loads, out.getvalue().splitlines()) if r["type"] == "window"]
    assert (window["n--"], window["s-"]) == (1, 2)


@pytest.mark.parametrize(
    "path",
    [
        "out/'; DROP TABLE x; --",
        "out/$HOME",
        'out/"quoted" #1 %2 ~',
        "out/x) , reflect('java.lang.Runtime','getRuntime')",
    ],
)
def test_paths_are_literal(tmp_path, path):
    job = load_job(write_job(tmp_path, mutate(BASE_JOB, {"output.path": path})))
    assert job.output.path == str(tmp_path.resolve() / path)


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("out/${env:HOME}", "'{'"),
        ("s3a://bucket/out", "':'"),
        ("out/[x]", "'['"),
        ("out/*", "'*'"),
        ("out/a?b", "'?'"),
        ("out\\x", "'\\\\'"),
        ("out/line\nbreak", "'\\n'"),
        ("out/nul\x00", "'\\x00'"),
    ],
)
def test_paths_spark_would_not_take_literally_are_rejected(tmp_path, path, shown):
    with pytest.raises(ConfigError) as info:
        load_job(write_job(tmp_path, mutate(BASE_JOB, {"output.checkpoint": path})))
    assert info.value.key == "output.checkpoint"
    assert shown in info.value.message


def test_the_python_api_applies_the_same_grammar(probe, no_eval):
    for payload in _payloads(probe):
        with pytest.raises(ConfigError):
            Aggregate("a", "sum", payload)
        with pytest.raises(ConfigError):
            Aggregate(payload, "count")
        with pytest.raises(ConfigError):
            Job.from_dict({"source": {"path": "x", "partition": payload}})
    assert not probe.exists()


def test_sql_builders_refuse_or_neutralise_any_text(probe):
    """Below the job grammar, the SQL builders themselves: ``field`` and ``quote`` take
    only grammar names; ``sql_string`` writes any other text as hex."""
    for payload in _payloads(probe):
        with pytest.raises(ValueError):
            field(payload)
        with pytest.raises(ValueError):
            quote(payload)
        written = sql_string(payload)
        assert written == f"'{payload}'" or written.startswith("CAST(unhex('")
        assert "${" not in written
        if written.startswith("CAST("):
            hex_text = written[len("CAST(unhex('") : -len("') AS STRING)")]
            assert bytes.fromhex(hex_text).decode("utf-8") == payload
    assert field("x--y").startswith("variant_get(m, CAST(unhex(")
