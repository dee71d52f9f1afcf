"""Output start time on Spark (docs/semantics.md §12): the Spark engine skips the records
that arrived before the read point and writes no result before the start, exactly as
the reference engine does, and what it writes is what a run over the whole input writes
from the start on (the guarantee needs each partition read in arrival order, as a
broker's partition is: the files are read oldest first, and written so). Two start
points, one Spark query each (two micro-batches and the flush: a query costs as much as
one case of test_differential.py, and the two start points skip 3 and 26 of 50 records);
the input has disorder, late and early events and malformed lines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparktide.core.engine import simulate
from sparktide.job.start import read_point
from sparktide.reader import job_records
from sparktide.spark import run_job
from sparktide.time import SECOND, format_instant, parse_instant
from tests.spark.streams import BASE, clock, file_batches, job_for, read_output, write_stream
from tests.spark.test_differential import _close, assert_same_counters

TABLES = {
    "source": {"partition": "partition", "partitions": 2},
    "ordering": {"early_arrival": "30s", "late_arrival": "20s", "out_of_order": "5s"},
    "window": {
        "type": "tumbling",
        "size": "10s",
        "group_by": ["device"],
        "aggregates": {"n": "count(*)", "ids": "collect_list(id)", "total": "sum(value)"},
    },
}


def _reference(job, batches, start=None):
    """The reference engine at the Spark batches' processing times."""
    records = job_records(job)
    for record in records:
        if not record.malformed:
            record.processing_time = clock(batches[record.file])
    return simulate(job, records, flush=True, timers_at_due=False, output_start=start)


def _written(directory: Path, seed: int) -> None:
    """Two files of a stream, read by age: in name order, so each partition in arrival
    order."""
    write_stream(directory, seed=seed, events=50, files=2)
    for f in range(2):
        os.utime(directory / f"part-{f:03d}.jsonl", (1_700_000_000 + f,) * 2)


def _run_from(spark, job, start: int) -> dict:
    """``job`` run once and flushed, a file per micro-batch, its output from ``start``."""
    metrics = run_job(
        job,
        once=True,
        flush=True,
        spark=spark,
        max_files_per_trigger=1,
        clock=clock,
        publish=False,
        output_start_time=format_instant(start),
    )
    assert metrics is not None
    return metrics


def _windows(records):
    """Window records without their processing-time field, in a canonical order."""
    out = [{k: v for k, v in r.items() if k not in ("type", "emitted_at")} for r in records]
    return sorted(out, key=lambda r: (r["window_end"], r["device"]))


@pytest.mark.parametrize("offset", [45, 90])
def test_spark_output_from_the_start_time(spark, tmp_path: Path, offset: int) -> None:
    _written(tmp_path / "in", seed=29)
    job = job_for(tmp_path, TABLES)
    start = BASE + offset * SECOND
    metrics = _run_from(spark, job, start)
    batches = file_batches(job.output.checkpoint)
    expected = _reference(job, batches, start)
    assert_same_counters(metrics, expected.metrics)
    for name in ("output_start_time", "read_point", "skipped_before_start"):
        assert metrics[name] == expected.metrics[name], name
    assert metrics["read_point"] == format_instant(read_point(job, start))
    assert metrics["skipped_before_start"] > 0  # (the read point is inside the input)
    got = _windows(read_output(job.output.path))
    assert _close(got, _windows(expected.windows))  # (float sums: Spark's own order)
    # the guarantee: what a run over the whole input writes from the start on
    full = _reference(job, batches)
    ends = [parse_instant(w["window_end"]) for w in full.windows]
    from_start = [w for w, end in zip(full.windows, ends, strict=True) if end >= start]
    assert _windows(expected.windows) == _windows(from_start)
    assert got and min(parse_instant(w["window_end"]) for w in got) >= start


def test_a_join_of_a_window_s_records_from_the_start_time(spark, tmp_path: Path) -> None:
    """A join of the window's records (semantics §7.12) from an output start time: a
    window that ends before the start still joins, and its matches at or after the start
    (a left event up to 30 s after the window's end) are written, as the reference
    engine writes them."""
    for name in ("left", "win"):  # (one stream, read by each input)
        _written(tmp_path / "in" / name, seed=31)
    shared = {"partition": "partition", "partitions": 2}
    tables = {
        "inputs": {"left": dict(shared), "win": dict(shared)},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "window": {
            "type": "tumbling",
            "size": "10s",
            "name": "w",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)"},
        },
        "join": {"left": "left", "right": "w", "on": ["device"], "between": ["-30s", "30s"]},
        "select": {"id": "left.id", "n": "w.n", "end": "w.window_end", "at": "timestamp"},
    }
    job = job_for(tmp_path, tables)
    start = BASE + 45 * SECOND
    _run_from(spark, job, start)
    expected = _reference(job, file_batches(job.output.checkpoint), start)
    got = read_output(job.output.path)
    want = [{k: v for k, v in e.items() if k != "type"} for e in expected.events]
    assert got == want and got
    assert any(parse_instant(e["end"]) < start for e in got)  # (a window before the start)
