"""The bad-input catalogue on the reference engine (semantics §8): every malformed record is
dead-lettered as ``malformed`` with its exact error, the odd-but-good ones are admitted,
nothing crashes, and every input record is counted exactly once.

The catalogue itself is ``tests/badinput.py``; ``tests/spark/test_bad_input.py`` runs the
same files through the Spark engine and requires the same records.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

import badinput
from badinput import assert_accounted
from jobfiles import to_toml, write_job
from sparktide.cli import main
from sparktide.core.engine import simulate
from sparktide.reader import read_records

WRITERS = {
    "jsonl": badinput.jsonl_files,
    "csv": badinput.csv_files,
    "parquet": badinput.parquet_files,
}


def expected_errors(expected: dict[str, list[tuple[int, str, str | None]]]) -> dict:
    """(file, line) → (name, error) of every catalogue entry."""
    return {
        (file, n): (name, None if error is None else error.format(n=n))
        for file, entries in expected.items()
        for n, name, error in entries
    }


@pytest.fixture(scope="module", params=sorted(WRITERS))
def catalogue(request, tmp_path_factory):
    """(format, folder, expected errors, records, result) for one input format."""
    fmt = request.param
    folder = tmp_path_factory.mktemp(f"bad-{fmt}")
    expected = expected_errors(WRITERS[fmt](folder / "in"))
    job = badinput.job_for(folder, fmt)
    records = read_records(job.source, numeric=job.numeric_columns)
    result = simulate(job, records)
    return fmt, folder, expected, records, result


def test_every_catalogue_entry_gets_its_exact_verdict(catalogue):
    _, _, expected, records, _ = catalogue
    by_place = {(r.file, r.line): r for r in records}
    wrong = {}
    for place, (name, error) in expected.items():
        record = by_place.get(place)
        if record is None:
            wrong[name] = "no record"
        elif record.error != error:
            wrong[name] = (record.error, error)
    assert not wrong


def test_only_catalogue_entries_are_malformed(catalogue):
    _, _, expected, records, _ = catalogue
    bad = {(r.file, r.line) for r in records if r.malformed}
    wanted = {place for place, (_, error) in expected.items() if error is not None}
    assert bad == wanted


def test_malformed_records_are_dead_lettered_with_their_error(catalogue):
    _, _, expected, records, result = catalogue
    letters = {(d["file"], d["line"]): d for d in result.dead_letters}
    for record in records:
        if not record.malformed:
            continue
        letter = letters[(record.file, record.line)]
        assert letter["reason"] == "malformed"
        assert letter["error"] == record.error
        assert letter["seq"] == record.seq
        json.dumps(letter["record"])  # the original record or raw line, always writable
    assert result.metrics["dead_lettered"].get("malformed", 0) == sum(
        1 for error in (e for _, e in expected.values()) if error is not None
    )


def test_every_record_is_counted_once(catalogue):
    _, _, _, records, result = catalogue
    metrics = result.metrics
    assert metrics["input"] == len(records)
    assert_accounted(metrics)
    # the policy admits every well-formed record, and the windows count them all
    assert metrics["admitted"] == sum(1 for r in records if not r.malformed)
    assert sum(w["n"] for w in result.windows) == metrics["admitted"]
    assert Counter(r.seq for r in records) == Counter(range(len(records)))


def test_the_command_line_runs_the_catalogue(catalogue, capsys):
    fmt, folder, _, _, result = catalogue
    job = write_job(folder, to_toml(badinput.job_tables(fmt)))
    out = io.StringIO()
    assert main(["simulate", str(job), "--format", "jsonl"], stdout=out) == 0
    assert capsys.readouterr().err == ""
    printed = [json.loads(line) for line in out.getvalue().split("\n") if line]
    assert printed[-1]["type"] == "metrics"
    assert_accounted(printed[-1])
    letters = [r for r in printed if r["type"] == "dead_letter"]
    assert len(letters) == len(result.dead_letters)
    assert [r for r in printed if r["type"] == "window"] == json.loads(
        json.dumps(result.windows, default=str)
    )


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_ten_megabyte_lines_keep_their_text(tmp_path, fmt):
    expected = expected_errors(WRITERS[fmt](tmp_path / "in"))
    job = badinput.job_for(tmp_path, fmt)
    records = {(r.file, r.line): r for r in read_records(job.source)}
    (place,) = [place for place, (name, _) in expected.items() if name == "ten-megabytes"]
    record = records[place]
    assert record.raw is not None and len(record.raw) > 10 << 20
    assert record.error == expected[place][1]


def test_an_unreadable_file_does_not_stop_the_others(tmp_path):
    folder = tmp_path / "in"
    badinput.parquet_files(folder)
    job = badinput.job_for(tmp_path, "parquet")
    records = read_records(job.source, numeric=job.numeric_columns)
    files = [r.file for r in records]
    assert files.index("l-not-parquet.parquet") < files.index("n-v-as-integer.parquet")
    assert "m-zero-bytes.parquet" not in files  # empty: nothing to read, nothing lost
    assert all(not r.malformed for r in records if r.file == "n-v-as-integer.parquet")


def test_empty_inputs_run(tmp_path):
    for fmt, content in (("jsonl", b""), ("csv", b""), ("jsonl", b"\n\n  \n")):
        folder = tmp_path / fmt / "in"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"x.{fmt}").write_bytes(content)
        job = badinput.job_for(Path(folder).parent, fmt)
        result = simulate(job)
        assert result.metrics["input"] == 0
        assert result.dead_letters == []
