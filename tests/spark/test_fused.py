"""The one-pass plan (``sparktide.spark.fused``): the same records as the reference engine,
and the general plan whenever a batch does not qualify."""

from __future__ import annotations

import contextlib
import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.core.instants import NEG_INF
from sparktide.job import Job
from sparktide.spark import run_job
from sparktide.spark.engine import SparkEngine
from sparktide.spark.fused import _running_max_before, fusable
from tests.spark.streams import clock, job_for, write_stream
from tests.spark.test_differential import assert_matches_reference

WINDOW = {
    "type": "tumbling",
    "size": "30s",
    "group_by": ["device"],
    "aggregates": {
        "n": "count(*)",
        "mean": "avg(value)",
        "total": "sum(value)",
        "c": "count(value)",
    },
}

CASES = {
    # Stream Analytics defaults, merged partitions, integer and float values mixed
    "merged-adjust": {
        "source": {"partition": "partition"},
        "ordering": {"late_arrival": "15s", "out_of_order": "5s"},
        "window": WINDOW,
    },
    # partitions follow their own watermarks; late and out-of-order events dropped;
    # overlapping hops with (start, end] bounds and allowed lateness
    "partitioned-drop-hopping": {
        "source": {"partition": "partition"},
        "ordering": {
            "late_arrival": "20s",
            "out_of_order": "3s",
            "action": "drop",
            "partitioned": True,
        },
        "window": {
            **WINDOW,
            "type": "hopping",
            "size": "30s",
            "hop": "20s",
            "boundary": "end",
            "allowed_lateness": "4s",
            "group_by": ["partition", "device"],
        },
    },
    # time shifted; a declared partition never seen; no late check; drop; (start, end]
    "shifted-declared-drop": {
        "source": {"partition": "partition", "partitions": 4, "shift": "-7s"},
        "ordering": {"late_arrival": "none", "out_of_order": "2s", "action": "drop"},
        "window": {**WINDOW, "size": "20s", "boundary": "end"},
    },
    # hops wider than the window leave gaps (in_no_window); no early check; an idle timeout
    "merged-gaps-idle": {
        "source": {"partition": "partition"},
        "ordering": {"early_arrival": "none", "late_arrival": "10s", "out_of_order": "0s"},
        "window": {
            "type": "hopping",
            "size": "10s",
            "hop": "25s",
            "offset": "3s",
            "idle_timeout": "20s",
            "group_by": [],
            "aggregates": {"n": "count(*)", "s": "sum(value)"},
        },
    },
}


def _plans(job: Job) -> list[str]:
    """The plan of each micro-batch (the flush aside), in batch order."""
    directory = Path(SparkEngine.metrics_directory_of(job).removeprefix("file:"))
    records = [json.loads(p.read_text()) for p in sorted(directory.glob("batch=*.json"))]
    return [r["plan"] for r in records]


def _run(spark, tmp_path, tables, files_per_batch: int = 2) -> Job:
    job = job_for(tmp_path, tables)
    assert fusable(job)
    metrics = run_job(
        job,
        once=True,
        flush=True,
        spark=spark,
        max_files_per_trigger=files_per_batch,
        clock=clock,
        publish=False,
    )
    assert_matches_reference(job, metrics)
    return job


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_pass_matches_reference(spark, tmp_path, case):
    """Small files share a task, so every batch qualifies — malformed lines included
    (the SQL route reports them): each batch takes the one-pass plan."""
    write_stream(tmp_path / "in", seed=zlib.crc32(case.encode()) % 1000, partitions=3)
    job = _run(spark, tmp_path, CASES[case])
    assert _plans(job) == ["one_pass", "one_pass"]


@contextlib.contextmanager
def _file_per_task(spark):
    """Every file its own Spark task (a file costs more than a task's bytes)."""
    key = "spark.sql.files.openCostInBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, str(1 << 30))
    try:
        yield
    finally:
        spark.conf.set(key, before)


def test_partitions_across_tasks_are_read_in_one_task(spark, tmp_path):
    """Partitions whose lines are in several tasks of a batch cannot be judged per task:
    the batch's files then go through one task (and every later batch's too), with the
    same answers."""
    write_stream(tmp_path / "in", seed=11, partitions=3, malformed=0)
    with _file_per_task(spark):
        job = _run(spark, tmp_path, CASES["merged-adjust"], files_per_batch=3)
    assert _plans(job) == ["one_pass", "one_pass"]


def test_events_only_the_sql_route_reads_take_the_general_plan(spark, tmp_path):
    """A well-formed event the kernel does not vouch for (an escaped string) sends its
    batch to the general plan, with the same answers; the other batch goes in one pass."""
    write_stream(tmp_path / "in", seed=12, partitions=3)
    first = tmp_path / "in" / "part-000.jsonl"
    lines = first.read_text().splitlines()
    event = next(line for line in lines if '"device": "d1"' in line)
    lines.insert(len(lines) // 2, event.replace('"d1"', '"d\\u0031"'))
    first.write_text("\n".join(lines) + "\n")
    job = _run(spark, tmp_path, CASES["merged-adjust"])
    assert sorted(_plans(job)) == ["general", "one_pass"]  # (files go by age)


def _naive_before(h: list[int], group: list[int]) -> list[int]:
    out, best, last = [], NEG_INF, None
    for value, g in zip(h, group, strict=True):
        if g != last:
            best, last = NEG_INF, g
        out.append(best)
        best = max(best, value)
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.one_of(st.just(NEG_INF), st.integers(-(10**15), 10**15)),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_running_max_before_is_the_segmented_scan(rows):
    rows.sort(key=lambda r: r[0])  # (the kernel sorts by partition first)
    group = np.array([g for g, _ in rows], dtype=np.int64)
    h = np.array([v for _, v in rows], dtype=np.int64)
    got = _running_max_before(h, group).tolist()
    assert got == _naive_before(h.tolist(), group.tolist())
