"""Transcripts: worked examples of the semantics, written as data (tests/transcripts/*.toml).

Each transcript is a job, an input and the expected records, computed by hand from
docs/semantics.md. The format is described in tests/transcripts/README.md; this module loads every
transcript, runs it through the reference engine and compares.
"""

from __future__ import annotations

import json
import tempfile
import tomllib
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

import pytest

from sparktide.core.engine import Result, simulate
from sparktide.core.records import InputRecord, jsonable
from sparktide.job import Job, record_casts
from sparktide.reader import parse_fields
from sparktide.time import parse_duration, parse_instant

TRANSCRIPTS = Path(__file__).parent / "transcripts"
PATHS = sorted(TRANSCRIPTS.glob("*.toml"))

#: Written in an expectation where the record holds ``null`` (TOML has no null).
NULL = "<null>"
TOP_KEYS = ("description", "job", "run", "expect")
RUN_KEYS = ("input", "until", "tick", "flush", "reference", "output_start_time")
EXPECT_KEYS = ("decisions", "events", "windows", "dead_letters", "metrics")
PLACEHOLDER_PATH = "-"


class TranscriptError(Exception):
    """The transcript file itself is wrong (not a failed expectation)."""


# ---------------------------------------------------------------------------- loading
def load(path: Path) -> dict[str, Any]:
    """Parse a transcript and check its layout (unknown keys are typos, not ignored)."""
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    _check_keys(data, TOP_KEYS, "")
    for required in ("job", "run"):
        if required not in data:
            raise TranscriptError(f"[{required}] is required")
    if "source" not in data["job"] and "inputs" not in data["job"]:
        raise TranscriptError("[job.source] (or [job.inputs.<name>] for a union) is required")
    _check_keys(data["run"], RUN_KEYS, "run.")
    if not isinstance(data["run"].get("input"), list):
        raise TranscriptError("run.input must be a list of rows")
    _check_keys(data.get("expect", {}), EXPECT_KEYS, "expect.")
    return data


def _check_keys(table: dict[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    unknown = [key for key in table if key not in allowed]
    if unknown:
        raise TranscriptError(f"unknown key {prefix}{unknown[0]} (allowed: {', '.join(allowed)})")


def build_job(tables: dict[str, Any], references: dict[str, str] | None = None) -> Job:
    """The job of a transcript; ``source.path`` is a placeholder (input comes inline),
    a reference input's path the file ``references`` names for it."""
    data = {name: dict(value) for name, value in tables.items()}
    references = references or {}
    if "inputs" in data:  # a union: each row names its input in "_input"
        data["inputs"] = {
            name: {"path": references.get(name, PLACEHOLDER_PATH), **table}
            for name, table in data["inputs"].items()
        }
    else:
        data["source"] = {"path": PLACEHOLDER_PATH, **data["source"]}
    return Job.from_dict(data)


def build_records(rows: list[Any], job: Job) -> list[InputRecord]:
    """One input record per row: a table is a record's fields, a string is a raw line."""
    records = []
    sources = dict(job.inputs)
    for seq, row in enumerate(rows):
        if isinstance(row, dict):
            fields = dict(row)
            name = fields.pop("_input", None)
            if (name is None) != (not sources) or (name is not None and name not in sources):
                raise TranscriptError(f"run.input[{seq}]: _input must name an input of the union")
            record = parse_fields(
                seq,
                fields,
                sources[name] if name is not None else job.source,
                raw=json.dumps(jsonable(fields)),
                punctuation=job.punctuation,
                checks=record_casts(job),
            )
            if name is not None and not record.malformed:
                record.partition = f"{name}/{record.partition}"  # as reader.job_records
            records.append(record)
        elif isinstance(row, str):
            records.append(_raw_line(seq, row, job))
        else:
            raise TranscriptError(f"run.input[{seq}] must be a table or a string, got {row!r}")
    return records


def _raw_line(seq: int, text: str, job: Job) -> InputRecord:
    """A raw input line, read as the JSONL reader reads a line."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return InputRecord(seq, None, raw=text, error=f"not valid JSON: {exc.msg}")
    if not isinstance(value, dict):
        return InputRecord(
            seq, None, raw=text, error=f"expected a JSON object, got {type(value).__name__}"
        )
    return parse_fields(
        seq, value, job.source, raw=text, punctuation=job.punctuation, checks=record_casts(job)
    )


def run_options(run: dict[str, Any]) -> dict[str, Any]:
    """``until``, ``tick``, ``flush`` and ``output_start`` for :func:`simulate`."""
    options: dict[str, Any] = {"flush": run.get("flush", True)}
    if not isinstance(options["flush"], bool):
        raise TranscriptError("run.flush must be true or false")
    if "until" in run:
        until = run["until"]
        options["until"] = parse_instant(until if isinstance(until, str) else _iso(until))
    if "tick" in run:
        options["tick"] = parse_duration(run["tick"])
    if "output_start_time" in run:  # a time, or "now" (semantics §12)
        start = run["output_start_time"]
        options["output_start"] = start if isinstance(start, str) else _iso(start)
    return options


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TranscriptError(f"expected a time, got {value!r}")


def run_transcript(data: dict[str, Any]) -> Result:
    """Run a loaded transcript through the reference engine. ``[run] reference`` holds
    the rows of each reference input (``{name = [rows]}``): written to a JSONL file its
    ``[job.inputs.<name>]`` reads."""
    tables = data["run"].get("reference", {})
    with tempfile.TemporaryDirectory() as directory:
        paths = {}
        for name, rows in tables.items():
            paths[name] = str(Path(directory) / f"{name}.jsonl")
            Path(paths[name]).write_text("".join(json.dumps(jsonable(r)) + "\n" for r in rows))
        job = build_job(data["job"], paths)
        records = build_records(data["run"]["input"], job)
        return simulate(job, records, **run_options(data["run"]))


# ---------------------------------------------------------------------------- comparing
def normalise(value: Any) -> Any:
    """An expected value as records hold it: ``"<null>"`` → None, TOML times → ISO text."""
    if isinstance(value, str) and value == NULL:
        return None
    if isinstance(value, dict):
        return {key: normalise(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalise(item) for item in value]
    if isinstance(value, (datetime, date, time)):
        return jsonable(value)
    return value


def same(expected: Any, actual: Any) -> bool:
    """Exact equality that does not take ``true`` for ``1``."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            same(expected[key], actual[key]) for key in expected
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            same(e, a) for e, a in zip(expected, actual, strict=True)
        )
    return bool(expected == actual)


def record_mismatches(expected: dict[str, Any], actual: dict[str, Any], where: str) -> list[str]:
    """How ``actual`` fails to contain ``expected``: its keys with the same values.

    A nested table is compared exactly; a list of tables is a list of records, compared
    element by element the same way (same length, each a subset).
    """
    problems = []
    for key, want in expected.items():
        here = f"{where}.{key}"
        if key not in actual:
            problems.append(f"{here}: missing (expected {want!r})")
            continue
        got = actual[key]
        if _is_table_list(want) and isinstance(got, list):
            problems.extend(list_mismatches(want, got, here))
        elif not same(want, got):
            problems.append(f"{here}: expected {want!r}, got {got!r}")
    return problems


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def list_mismatches(expected: list[Any], actual: list[Any], where: str) -> list[str]:
    """Same length, and each expected table a subset of the record at the same place."""
    problems = []
    if len(expected) != len(actual):
        problems.append(f"{where}: expected {len(expected)} records, got {len(actual)}")
    for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if not isinstance(want, dict):
            raise TranscriptError(f"{where}[{index}] must be a table, got {want!r}")
        problems.extend(record_mismatches(want, got, f"{where}[{index}]"))
    return problems


def mismatches(expect: dict[str, Any], result: Result) -> list[str]:
    """Every way ``result`` differs from the ``[expect]`` table (absent sections: unchecked)."""
    expect = normalise(expect)
    problems = []
    for section in ("decisions", "events", "windows", "dead_letters"):
        if section in expect:
            problems.extend(list_mismatches(expect[section], getattr(result, section), section))
    if "metrics" in expect:
        problems.extend(record_mismatches(expect["metrics"], result.metrics, "metrics"))
    return problems


def show(result: Result, sections: list[str]) -> str:
    """The actual records of ``sections``, one per line, for a failure message."""
    lines = []
    for section in sections:
        lines.append(f"actual {section}:")
        records = getattr(result, section)
        for record in records if isinstance(records, list) else [records]:
            shown = {k: v for k, v in record.items() if k != "type"}
            lines.append("  " + json.dumps(shown, default=str))
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the tests
def test_there_are_transcripts() -> None:
    assert len(PATHS) >= 10


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_transcript(path: Path) -> None:
    data = load(path)
    assert data.get("description"), "a transcript says what it shows"
    expect = data.get("expect", {})
    assert expect, "a transcript expects something"
    result = run_transcript(data)
    problems = mismatches(expect, result)
    assert not problems, (
        f"{path.name}: {data['description']}\n"
        + "\n".join(problems)
        + "\n"
        + show(result, list(expect))
    )


# ---------------------------------------------------------------------------- the runner itself
def _result(**sections: Any) -> Result:
    return Result(**sections)


def test_subset_match_ignores_unlisted_keys() -> None:
    result = _result(events=[{"type": "event", "id": 1, "timestamp": "2026-03-01T09:00:00Z"}])
    assert mismatches({"events": [{"id": 1}]}, result) == []


def test_list_lengths_must_agree() -> None:
    result = _result(events=[{"id": 1}, {"id": 2}])
    assert mismatches({"events": [{"id": 1}]}, result) == ["events: expected 1 records, got 2"]
    assert mismatches({"events": []}, result) == ["events: expected 0 records, got 2"]


def test_values_must_agree() -> None:
    result = _result(decisions=[{"seq": 0, "reasons": ["late"], "watermark": None}])
    assert (
        mismatches({"decisions": [{"seq": 0, "reasons": ["late"], "watermark": NULL}]}, result)
        == []
    )
    problems = mismatches({"decisions": [{"reasons": ["late", "out_of_order"]}]}, result)
    assert problems == ["decisions[0].reasons: expected ['late', 'out_of_order'], got ['late']"]
    assert mismatches({"decisions": [{"missing": 1}]}, result) == [
        "decisions[0].missing: missing (expected 1)"
    ]


def test_booleans_are_not_numbers() -> None:
    assert not same(1, True)
    assert not same({"a": 0}, {"a": False})
    assert same({"a": [1, {"b": True}]}, {"a": [1, {"b": True}]})


def test_metrics_nested_tables_are_exact_and_lists_are_subsets() -> None:
    metrics = {
        "input": 3,
        "admitted": 2,
        "dropped": {"early": 1},
        "partitions": [{"partition": 0, "input": 3, "watermark": "2026-03-01T09:00:00Z"}],
    }
    result = _result(metrics=metrics)
    assert mismatches({"metrics": {"input": 3, "dropped": {"early": 1}}}, result) == []
    assert mismatches({"metrics": {"partitions": [{"partition": 0}]}}, result) == []
    assert mismatches({"metrics": {"dropped": {}}}, result) == [
        "metrics.dropped: expected {}, got {'early': 1}"
    ]
    assert mismatches({"metrics": {"partitions": [{"partition": 0}, {"partition": 1}]}}, result)


def test_toml_times_and_null_are_normalised() -> None:
    data = tomllib.loads('when = 2026-03-01T09:00:05Z\nnothing = "<null>"\n')
    assert normalise(data) == {"when": "2026-03-01T09:00:05Z", "nothing": None}


def test_string_rows_are_raw_lines() -> None:
    job = build_job({"source": {"timestamp_by": "t", "arrival_time": "a"}})
    good, not_json, not_object = build_records(
        ['{"t": "2026-03-01T09:00:00Z", "a": "2026-03-01T09:00:01Z"}', "{oops", "[1, 2]"], job
    )
    assert not good.malformed and good.raw.startswith("{")
    assert not_json.malformed and not_json.original() == "{oops"
    assert not_object.malformed and not_object.original() == "[1, 2]"


def test_layout_errors_name_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        'description = "x"\n[job.source]\ntimestamp_by = "t"\n[run]\ninput = []\nflsh = false\n'
    )
    with pytest.raises(TranscriptError, match=r"run\.flsh"):
        load(path)


def test_toml_datetimes_work_in_rows_and_run_options() -> None:
    data = tomllib.loads(
        'description = "x"\n[job.source]\ntimestamp_by = "t"\narrival_time = "a"\n'
        "[run]\nflush = false\nuntil = 2026-03-01T09:01:00Z\n"
        "input = [ { t = 2026-03-01T09:00:00Z, a = 2026-03-01T09:00:01Z } ]\n"
    )
    result = run_transcript(data)
    assert result.decisions[0]["event_time"] == "2026-03-01T09:00:00Z"
    assert result.metrics["processing_time"] == "2026-03-01T09:01:00Z"
    assert result.events == [
        {
            "type": "event",
            "t": "2026-03-01T09:00:00Z",
            "a": "2026-03-01T09:00:01Z",
            "timestamp": "2026-03-01T09:00:00Z",
        }
    ]
