"""A batch judged by the route its plan takes (``sparktide.spark.routes``): here, what a
flush builds. A flush has no input, so it judges no row: after one-pass batches it runs
no task and builds none of the general route's plans; after general-route batches it
takes the judged rows' schema the run's batches found rather than building the policy's
plan again. Either way its records are the reference engine's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sparktide.spark.engine as engine_module
from sparktide.spark import judging
from sparktide.spark.engine import SparkEngine
from sparktide.spark.onepass import fusable
from tests.spark.streams import job_for, write_stream
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
    judged: list[bool] = []
    decided = judging._decided

    def spy(context, batch, source, start):
        judged.append(batch.flushing)
        return decided(context, batch, source, start)

    monkeypatch.setattr(judging, "_decided", spy)
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
