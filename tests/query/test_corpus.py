"""The query corpus: queries and pipelines in the style of the systems' public examples,
each with input data and the output computed by hand, run through the reference engine.

Each folder of ``tests/query/corpus`` holds a query (``query.asaql``) or a pipeline
(``pipeline.json`` / ``pipeline.yaml``), the job file binding its names (``job.toml``),
the input files it names (``input.jsonl``; a union or a join binds a file per input) and
``expected.toml``: a ``description`` with the arithmetic, and ``[expect]`` lists of
``windows``, ``events``, ``dead_letters`` and a ``metrics`` table — for a query of several
statements, ``[[expect]]``, one table per statement in text order. Each expected record
must be a subset of the actual record at the same position (same length, same order);
nested values are compared exactly. TOML has no null: ``"is null" = ["a", "b"]`` in an
expected record says that the actual record holds ``a`` and ``b``, both null (the key is
no column name: a column name has no space).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sparktide.core.engine import simulate
from sparktide.job import Job, load_job
from sparktide.query import job_to_toml, translate_file

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p for p in CORPUS.iterdir() if p.is_dir())
QUERY_FILES = ("query.asaql", "pipeline.json", "pipeline.yaml")


def query_file(case: Path) -> Path:
    found = [case / name for name in QUERY_FILES if (case / name).exists()]
    assert len(found) == 1, f"{case.name}: expected one of {QUERY_FILES}"
    return found[0]


def same(expected: Any, actual: Any) -> bool:
    """Equal, with ``1`` never matching ``True`` or ``1.0`` (an average is a float)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, float) != isinstance(actual, float):
        return False
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(same, expected, actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            same(v, actual[k]) for k, v in expected.items()
        )
    return bool(expected == actual)


#: The key of an expected record listing the columns that must be present and null.
NULLS = "is null"


def _subset(expected: dict[str, Any], actual: dict[str, Any], where: str, out: list[str]) -> None:
    for key, value in expected.items():
        if key == NULLS:
            for name in value:
                if name not in actual:
                    out.append(f"{where}.{name}: missing (expected null)")
                elif actual[name] is not None:
                    out.append(f"{where}.{name}: expected null, got {actual[name]!r}")
        elif key not in actual:
            out.append(f"{where}.{key}: missing")
        elif not same(value, actual[key]):
            out.append(f"{where}.{key}: expected {value!r}, got {actual[key]!r}")


def compare(expect: dict[str, Any], result: Any) -> list[str]:
    problems: list[str] = []
    for section in ("windows", "events", "dead_letters"):
        if section not in expect:
            continue
        expected, actual = expect[section], getattr(result, section)
        if len(expected) != len(actual):
            problems.append(f"{section}: expected {len(expected)} records, got {len(actual)}")
            continue
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            _subset(want, got, f"{section}[{index}]", problems)
    if "metrics" in expect:
        _subset(expect["metrics"], result.metrics, "metrics", problems)
    return problems


def expectations(case: Path) -> list[dict[str, Any]]:
    """The ``[expect]`` table of each statement of ``case``, in text order."""
    expected = tomllib.loads((case / "expected.toml").read_text("utf-8"))
    assert set(expected) <= {"description", "expect"}
    expect = expected["expect"]
    return [expect] if isinstance(expect, dict) else list(expect)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_case(case: Path) -> None:
    translation = translate_file(query_file(case), case / "job.toml")
    expects = expectations(case)
    assert len(expects) == len(translation.statements)
    for number, (statement, expect) in enumerate(
        zip(translation.statements, expects, strict=True), start=1
    ):
        result = simulate(statement.job)
        problems = compare(expect, result)
        shown = "\n".join(f"  {r}" for r in result.windows + result.events + result.dead_letters)
        assert not problems, f"statement {number}:\n" + "\n".join(problems) + "\nactual:\n" + shown


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_job_round_trips(case: Path, tmp_path: Path) -> None:
    """What ``sparktide translate`` prints loads back into the same job."""
    translation = translate_file(query_file(case), case / "job.toml")
    for statement in translation.statements:
        text = job_to_toml(statement.job, statement.notes)
        assert Job.from_dict(tomllib.loads(text)) == statement.job
        written = tmp_path / "job.toml"
        written.write_text(text, "utf-8")
        assert load_job(written) == statement.job  # (its paths are absolute)


def test_corpus_covers_both_languages_windows_unions_joins_lookups_and_statements() -> None:
    kinds = {query_file(c).suffix for c in CASES}
    assert kinds == {".asaql", ".json", ".yaml"}
    translations = [translate_file(query_file(c), c / "job.toml") for c in CASES]
    jobs = [j for t in translations for j in t.jobs]
    windows = {j.window.type for j in jobs if j.window is not None}
    assert {"tumbling", "hopping", "session"} <= windows
    assert any(j.join is None and len(j.inputs) > 1 for j in jobs)  # a union
    assert any(j.join is not None and not j.references for j in jobs)
    lookups = [j.join for j in jobs if j.references]  # joins with reference data
    assert {join.type for join in lookups if join is not None} == {"inner", "left"}
    assert any(len(t.statements) > 1 for t in translations)


def test_an_expected_null_is_present_and_null() -> None:
    expect = {"events": [{"k": 1, NULLS: ["a", "b"]}]}
    assert compare(expect, SimpleNamespace(events=[{"k": 1, "a": None, "b": None}])) == []
    assert compare(expect, SimpleNamespace(events=[{"k": 1, "a": None, "b": 0}])) == [
        "events[0].b: expected null, got 0"
    ]
    assert compare(expect, SimpleNamespace(events=[{"k": 1, "b": None}])) == [
        "events[0].a: missing (expected null)"
    ]
