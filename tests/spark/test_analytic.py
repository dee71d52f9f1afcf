"""Analytic columns (LAG, LAST, ISFIRST; semantics §11.11) on Spark: the reference engine's
records, across micro-batches (state carried in the checkpoint) and restarts."""

from __future__ import annotations

import zlib

import pytest

from sparktide.spark import run_job
from tests.spark.streams import clock, job_for, read_output, reference, write_stream
from tests.spark.test_differential import assert_matches_reference, run_matching_reference

CASES = {
    "merged-lag-last-isfirst": {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "analytic": {
            "prev": {
                "function": "lag",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "30s",
            },
            "big": {
                "function": "last",
                "value": "id",
                "limit_duration": "1m",
                "when": "value > 20",
                "default": "-1",
            },
            "first": {"function": "isfirst", "period": "20s", "partition_by": ["device"]},
        },
        "filter": {"where": "prev IS NULL OR prev <> value OR first = 1"},
        "select": {
            "id": "id",
            "device": "device",
            "prev": "prev",
            "big": "big",
            "first": "first",
            "rise": "value - prev",
        },
    },
    "substreams-lag-offset-when": {
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "15s", "out_of_order": "4s", "on_out_of_order": "drop"},
        "analytic": {
            "back2": {
                "function": "lag",
                "value": "t",
                "offset": 2,
                "limit_duration": "2m",
                "when": "value IS NOT NULL",
                "default": "'none'",
            },
        },
        "select": {"id": "id", "device": "device", "back2": "back2"},
    },
    "partitioned-isfirst-filter": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "10s", "out_of_order": "3s", "partitioned": True},
        "analytic": {
            "first": {
                "function": "isfirst",
                "period": "30s",
                "partition_by": ["device"],
                "when": "value >= 5",
            }
        },
        "filter": {"where": "first = 1"},
    },
}

#: Each case's micro-batches: 2 or 3 of the 4 files each (an analytic column's state
#: crosses a batch boundary in every case; the restart test carries it across runs)
RUNS = [(case, (2, 3, 2)[i % 3]) for i, case in enumerate(sorted(CASES))]


@pytest.mark.parametrize(("case", "files_per_batch"), RUNS)
def test_analytic_matches_reference(spark, tmp_path, case, files_per_batch):
    tables = dict(CASES[case])
    seed = zlib.crc32(case.encode()) % 1000
    write_stream(tmp_path / "in", seed=seed, files=4, partitions=3)
    job = job_for(tmp_path, tables)
    batches = run_matching_reference(spark, job, files_per_batch)
    assert len(batches) >= 4 // files_per_batch
    expected = reference(job, batches)
    events = read_output(job.output.path)
    assert events, "the case writes events"
    if job.filter is not None:  # the filter stopped some, and both engines count them
        last = _last_metrics(job)
        assert last["events_filtered"] == expected.metrics["events_filtered"] > 0


def test_analytic_state_survives_restart_and_stays_bounded(spark, tmp_path):
    """Two runs on one checkpoint (the second reads files written after the first
    stopped) give the reference engine's records for the whole input: the kept events
    travel in the checkpoint. Keyed by ``id`` (a key per event), the state holds only
    the events ``limit_duration`` has not left behind, not one per event seen."""
    write_stream(tmp_path / "all", seed=11, files=4, partitions=2)
    (tmp_path / "in").mkdir()
    tables = {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "analytic": {
            "mine": {
                "function": "last",
                "value": "value",
                "partition_by": ["id"],
                "limit_duration": "5s",
            },
            "prev": {
                "function": "lag",
                "value": "id",
                "partition_by": ["device"],
                "limit_duration": "1m",
                "when": "value IS NOT NULL",
            },
        },
        "filter": {"where": "prev IS NOT NULL"},
        "select": {"id": "id", "prev": "prev", "mine": "mine"},
    }
    job = job_for(tmp_path, tables)
    files = sorted((tmp_path / "all").iterdir())
    for path in files[:2]:
        path.rename(tmp_path / "in" / path.name)
    # one micro-batch per run (two files each): the state crosses the restart
    options = {"once": True, "spark": spark, "max_files_per_trigger": 2, "clock": clock}
    run_job(job, flush=False, publish=False, **options)
    kept = spark.read.parquet(_latest_state(job, "analytic"))
    by_id = kept.filter("idx = 0").count()
    # the reference engine, stopped at the same instant, keeps as many events (the same
    # rule drops them), and fewer than it released: the state forgets
    engine = _reference_engine(job, _batches(job))
    kept_by_reference = sum(len(k) for k in engine.analytics._state[0].values())
    assert by_id == kept_by_reference
    assert 0 < by_id < len(engine.result.events) * 2 // 3, (by_id, len(engine.result.events))
    for path in files[2:]:
        path.rename(tmp_path / "in" / path.name)
    metrics = run_job(job, flush=True, publish=False, **options)
    assert_matches_reference(job, metrics)
    assert metrics["events_filtered"] == reference(job, _batches(job)).metrics["events_filtered"]


def _reference_engine(job, batches):
    from sparktide.core.engine import ReferenceEngine
    from sparktide.reader import job_records

    records = job_records(job)
    for record in records:
        if not record.malformed:
            record.processing_time = clock(batches[record.file])
    engine = ReferenceEngine(job, explain=False)
    engine.run(records, flush=False, timers_at_due=False)
    return engine


def _batches(job):
    from tests.spark.streams import file_batches

    return file_batches(job.output.checkpoint)


def _latest_state(job, table):
    from pathlib import Path

    state = Path(job.output.checkpoint) / "sparktide" / "state"
    newest = max((p for p in state.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    return str(newest / table)


def _last_metrics(job):
    import glob
    import json

    lines = []
    for path in sorted(glob.glob(f"{job.output.metrics}/**/*.jsonl", recursive=True)):
        lines += [json.loads(x) for x in open(path).read().splitlines() if x.strip()]
    return lines[-1]
