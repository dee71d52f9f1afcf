"""A batch judged by the route its plan takes (``sparktide.spark.routes``): here, what a
batch known to bring no input builds. A flush has no input, so it judges no row: after
one-pass batches it runs no task and builds none of the general route's plans; after
general-route batches it takes the judged rows' schema the run's batches found rather
than building the policy's plan again. Either way its records are the reference
engine's. A run's batch holding only the ticker's row (``silent``) is judged the same
way, and writes what the same batch judged from its empty lines writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import sparktide.spark.engine as engine_module
from sparktide.spark import judging, taskpass
from sparktide.spark.engine import SparkEngine
from sparktide.spark.onepass import fusable
from tests.spark.restart_runner import CASES as RESTART_CASES
from tests.spark.restart_runner import FILES, write_input
from tests.spark.streams import clock, job_for, read_output, write_stream
from tests.spark.test_differential import CASES as DIFFERENTIAL
from tests.spark.test_differential import run_matching_reference
from tests.spark.test_fused import CASES as ONE_PASS

#: Jobs the general route judges: the policy reading other partitions' clocks (the
#: estimates first), a ``[filter]`` (one pass judges and counts), and generated CTIs over
#: intervals (whose batches' parsed rows hold a line number that is never null, where
#: the flush's empty frame of lines may hold one: the same names and types).
GENERAL = {
    "punctuated-intervals": DIFFERENTIAL["cti-generated-final-drop"],
    "estimates-first": {
        "source": {"partition": "partition"},
        "ordering": {"late_arrival": "15s", "out_of_order": "5s", "on_out_of_order": "accept"},
        "window": ONE_PASS["merged-adjust"]["window"],
    },
    "filtered": {
        **ONE_PASS["partitioned-drop-hopping"],
        "filter": {"where": "value > 0"},
    },
}


def _metrics(job, name: str) -> list[dict]:
    directory = Path(SparkEngine.metrics_directory_of(job).removeprefix("file:"))
    return [json.loads(p.read_text()) for p in sorted(directory.glob(f"{name}=*.jsonl"))]


def _spy_flush(monkeypatch) -> list[tuple]:
    """What each flush hands the windows' fold: its judged rows and its partials' files."""
    flushed: list[tuple] = []
    fold = engine_module.fold_windows

    def spy(context, batch, decided, spilled=None, partial_rows=0):
        if batch.flushing:
            flushed.append((decided, None if spilled is None else spilled.files))
        return fold(context, batch, decided, spilled, partial_rows)

    monkeypatch.setattr(engine_module, "fold_windows", spy)
    return flushed


def _spy(monkeypatch, module, name: str, seen, *, batch_at: int) -> list:
    """What ``seen`` says of the batch (argument ``batch_at``) of each call of
    ``module.name``, which then runs as it would."""
    calls: list = []
    original = getattr(module, name)

    def spy(*args):
        calls.append(seen(args[batch_at]))
        return original(*args)

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize("case", ["partitioned-drop-hopping", "substreams-drop-idle"])
def test_a_flush_after_one_pass_batches_runs_no_task(spark, tmp_path, monkeypatch, case):
    flushed = _spy_flush(monkeypatch)

    def general(*args, **kwargs):
        raise AssertionError("the general route judged a flush of one-pass batches")

    monkeypatch.setattr(judging, "judge", general)
    write_stream(tmp_path / "in", seed=7, partitions=3)
    job = job_for(tmp_path, ONE_PASS[case])
    assert fusable(job)
    run_matching_reference(spark, job, files_per_batch=2)
    assert [m["plan"] for m in _metrics(job, "batch")] == ["one_pass", "one_pass"]
    (flush,) = _metrics(job, "flush")
    assert flush["plan"] == "flush" and flush["windows_merged_on"] == "spark"
    assert flushed == [(None, [])]  # no judged rows, no partials: no task ran


@pytest.mark.parametrize("case", sorted(GENERAL))
def test_a_flush_after_general_batches_builds_no_policy_plan(spark, tmp_path, monkeypatch, case):
    flushed = _spy_flush(monkeypatch)
    judged = _spy(monkeypatch, judging, "_decided", lambda batch: batch.flushing, batch_at=1)
    tables = dict(GENERAL[case])
    write_stream(tmp_path / "in", seed=11, partitions=3, **tables.pop("stream", {}))
    job = job_for(tmp_path, tables)
    assert not fusable(job)
    run_matching_reference(spark, job, files_per_batch=2)
    assert [m["plan"] for m in _metrics(job, "batch")] == ["general", "general"]
    # the batches read whole files, the flush an empty frame of lines: the parsed rows'
    # names and types are the same, so the flush takes the schema the batches found
    assert judged == [False, False]
    ((rows, partials),) = flushed
    assert partials is None and rows.isEmpty()


def _ticked(spark, tmp_path: Path, tables: dict, *, silent: bool) -> tuple[list, list]:
    """Records and metrics of a job given two files' lines in one batch, then batches
    with no input at later times (``silent``: the engine told so, as a run tells it of
    a batch holding only the ticker's row)."""
    tables = dict(tables)
    write_stream(tmp_path / "in", seed=5, files=2, partitions=3, **tables.pop("stream", {}))
    job = job_for(tmp_path, tables)
    engine = SparkEngine(spark, job)
    schema = "file string, line bigint, raw string, mtime bigint"
    lines = [
        (path.name, number, raw, 0)
        for path in sorted((tmp_path / "in").iterdir())
        for number, raw in enumerate(path.read_text().splitlines(), start=1)
        if raw.strip()
    ]
    engine.process(spark.createDataFrame(lines, schema), 0, clock(0))
    for batch_id, later in enumerate((20, 90, 3600), start=1):  # seconds after batch 0
        empty = spark.createDataFrame([], schema)
        engine.process(empty, batch_id, clock(0) + later * 1_000_000, silent=silent)
    metrics = [{k: v for k, v in m.items() if k != "run_id"} for m in _metrics(job, "batch")]
    return read_output(job.output.path), metrics


@pytest.mark.parametrize("case", ["substreams-drop-idle", "estimates-first", "filtered"])
def test_a_silent_batch_writes_what_its_empty_lines_would(spark, tmp_path, monkeypatch, case):
    one_pass = case in ONE_PASS
    tables = ONE_PASS[case] if one_pass else GENERAL[case]
    told = _ticked(spark, tmp_path / "told", tables, silent=False)
    judged = _spy(monkeypatch, judging, "_decided", lambda batch: batch.silent, batch_at=1)
    tasks = _spy(monkeypatch, taskpass, "one_pass", lambda batch: batch.silent, batch_at=2)
    silent = _ticked(spark, tmp_path / "silent", tables, silent=True)
    assert silent == told
    records, metrics = silent
    assert [m["plan"] for m in metrics] == ["one_pass" if one_pass else "general"] * 4
    assert records and any(m["this_batch"]["windows_emitted"] for m in metrics[1:]), metrics
    # the silent batches ran no task and built no policy plan (batch 0's schema)
    assert tasks == ([False] if one_pass else []) and judged == ([] if one_pass else [False])


@pytest.mark.parametrize("plain_from", [None, 2])
def test_batches_after_nested_events_skip_the_one_pass_attempt(
    spark, tmp_path, monkeypatch, plain_from
):
    """Events with nested values (``readings``), which the kernel does not vouch for,
    make the one-pass plan decline their batch. After ``n`` such declines in a row the
    next ``2**(n-1)`` batches take the general route without trying; a batch the tasks
    judge (the stream plain again, from file ``plain_from`` on) ends the skipping."""
    attempts = _spy(monkeypatch, taskpass, "one_pass", lambda batch: batch.id, batch_at=2)
    write_input(tmp_path / "in", seed=11)  # (6 files, every event with ``readings``)
    for path in sorted((tmp_path / "in").iterdir())[plain_from or FILES :]:
        stat = path.stat()
        path.write_text(
            "".join(_without_readings(line) + "\n" for line in path.read_text().splitlines())
        )
        os.utime(path, (stat.st_atime, stat.st_mtime))
    job = job_for(tmp_path, RESTART_CASES["tumbling"])
    run_matching_reference(spark, job, files_per_batch=1)
    routes = [m["plan"] for m in _metrics(job, "batch")]
    if plain_from is None:  # declined, skipped, declined, skipped twice, declined
        assert attempts == [0, 2, 5] and routes == ["general"] * FILES
    else:  # declined, skipped, then plain batches the tasks judge
        assert attempts == [0, 2, 3, 4, 5]
        assert routes == ["general", "general"] + ["one_pass"] * (FILES - 2)


def _without_readings(line: str) -> str:
    """A stream's line without the event's ``readings`` (other lines as they are)."""
    try:
        record = json.loads(line)
    except ValueError:
        return line
    if not isinstance(record, dict):
        return line
    record.pop("readings", None)
    return json.dumps(record, ensure_ascii=False)
