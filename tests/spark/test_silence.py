"""Time advances while the whole input is silent (semantics §2.5, §4.3, §6.10).

A continuous run runs a micro-batch on every trigger, data or not (the ticker of
:mod:`sparktide.spark.ticks`), so the idle estimate and idle timeouts close the last
windows of an input that fell silent; those batches are journaled like any other, so a
restart gives the reference engine's answer."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sparktide.job import Job
from sparktide.spark import start
from sparktide.time import SECOND, parse_instant
from tests.spark.streams import file_batches, read_output, strip, write_stream

TRIGGER = "1 second"
LATE = 3 * SECOND
IDLE_TIMEOUT = 2 * SECOND
#: Spark's own work before a batch reaches sparktide (offsets, listing, planning), on a
#: loaded machine.
MARGIN = 2 * SECOND


def _job(root: Path, ordering: dict, window: dict) -> Job:
    return Job.from_dict(
        {
            "source": {"path": "in", "timestamp_by": "t", "partition": "p"},
            "ordering": ordering,
            "window": {"type": "tumbling", "size": "5s", "aggregates": {"n": "count(*)"}, **window},
            "output": {"path": "out/events", "checkpoint": "out/checkpoint"},
        },
        base_dir=root,
    )


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat().replace("+00:00", "Z")


def _write_partitions(root: Path) -> int:
    """Two partitions' files, arriving now (their mtime), with events up to now; returns
    the processing-time instant (µs) the last one was written."""
    (root / "in").mkdir(parents=True, exist_ok=True)
    now = time.time()
    for p in (0, 1):
        tmp = root / "in" / f".p{p}.tmp"
        rows = [{"t": _iso(now - 2 + k / 2), "p": p} for k in range(5)]
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.rename(tmp, root / "in" / f"p{p}.jsonl")
    return int(now * SECOND)


def _mtime(path: Path) -> int:
    """A file's arrival time: its modification time, as Spark reads it (milliseconds)."""
    return path.stat().st_mtime_ns // 1_000_000 * 1_000


def _windows(job: Job) -> list[dict]:
    return read_output(job.output.path) if os.path.isdir(job.output.path) else []


def _wait_for(jobs: list[Job], ends: list[int], limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        done = [
            any(parse_instant(w["window_end"]) == end for w in _windows(job))
            for job, end in zip(jobs, ends, strict=True)
        ]
        if all(done):
            return
        time.sleep(0.5)


@pytest.mark.jvm(3)
def test_a_silent_input_closes_its_last_windows_on_the_trigger(spark, tmp_path):
    """Stream Analytics' idle estimate (late tolerance + one trigger after the silence)
    and Atlas' idle timeout (one trigger after it is due), with real wall-clock silence."""
    estimated = _job(tmp_path / "estimate", {"late_arrival": "3s"}, {})
    timed_out = _job(
        tmp_path / "timeout",
        {"late_arrival": "none", "out_of_order": "0s"},
        {"idle_timeout": "2s"},
    )
    for job in (estimated, timed_out):
        Path(job.source.path).mkdir(parents=True)
    runs: list[list[tuple[int, int, int]]] = [[], []]  # (batch, processing time, done at)

    def recorder(run: list) -> Callable[[dict], None]:
        return lambda m: run.append(
            (m["batch"], parse_instant(m["processing_time"]), int(time.time() * SECOND))
        )

    queries = [
        start(spark, job, processing_time=TRIGGER, on_metrics=recorder(run))
        for job, run in zip((estimated, timed_out), runs, strict=True)
    ]
    try:
        time.sleep(2)  # both queries are up and ticking
        written = [_write_partitions(tmp_path / name) for name in ("estimate", "timeout")]
        # the window holding the last events: [end - 5 s, end)
        ends = [(w // (5 * SECOND) + 1) * 5 * SECOND for w in written]
        _wait_for([estimated, timed_out], ends, limit=90)
    finally:
        for query in queries:
            query.stop()
    trigger = SECOND  # (TRIGGER)
    for job, run, end in zip((estimated, timed_out), runs, ends, strict=True):
        closing = [w for w in _windows(job) if parse_instant(w["window_end"]) == end]
        assert closing, f"{job.output.path}: the last window never closed"
        assert closing[0]["n"] > 0
        emitted = parse_instant(closing[0]["emitted_at"])  # the closing batch's time
        times = {batch: now for batch, now, _ in run}
        batches = file_batches(job.output.checkpoint)
        # each partition's last arrival (its file's mtime) and when it was read
        files = [(_mtime(p), times[batches[p.name]]) for p in Path(job.source.path).iterdir()]
        if job is estimated:  # merged: every partition's estimate must pass end + L
            due = max(end + LATE + read - arrival for arrival, read in files)
        else:
            due = max(end, *(read for _, read in files)) + IDLE_TIMEOUT
        # it closes in the first batch at or after its due time...
        assert emitted == min(now for now in times.values() if now >= due), (
            job.output.path,
            due,
            sorted(times.items()),
            files,
        )
        # ... and a batch runs on every trigger, data or not: after each batch, the next
        # starts once the trigger interval has passed (or at once, if the batch took longer)
        for (_, started, done), (_, following, _) in itertools.pairwise(run):
            assert following - max(started + trigger, done) <= MARGIN, run


#: A schedule for the deterministic runs: batch b is observed at ORIGIN + b × STEP, and
#: ORIGIN is a multiple of STEP, so the reference engine's ticks fall on the same instants.
STEP = 10 * SECOND
ORIGIN = parse_instant("2026-03-01T09:30:00Z")


def _schedule(batch_id: int) -> int:
    return ORIGIN + batch_id * STEP


def _run_until(spark, job: Job, committed: int) -> dict:
    """A continuous run (fast trigger, one file a batch) stopped once ``committed``
    batches are committed; returns its last metrics record."""
    query = start(
        spark,
        job,
        max_files_per_trigger=1,
        processing_time="200 milliseconds",
        clock=_schedule,
    )
    engine = query.sparktide_engine
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and (
            engine.last_metrics is None or (engine.store.latest() or -1) + 1 < committed
        ):
            assert query.exception() is None, query.exception()
            time.sleep(0.2)
    finally:
        query.stop()
    assert engine.last_metrics is not None
    return engine.last_metrics


@pytest.mark.jvm(3)
def test_batches_on_the_trigger_match_the_reference_across_a_restart(spark, tmp_path):
    """Batches with no data are observation instants like any other: journaled, so a
    stopped and resumed run equals the reference engine observing at every batch."""
    from sparktide.core.engine import simulate
    from sparktide.reader import job_records
    from tests.spark.test_differential import assert_same_counters

    write_stream(tmp_path / "in", seed=11, files=3, partitions=2)
    for n, path in enumerate(sorted((tmp_path / "in").iterdir())):  # read in name order
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))
    job = job_for_silence(tmp_path)
    _run_until(spark, job, committed=4)
    metrics = _run_until(spark, job, committed=9)
    last = metrics["batch"]
    batches = file_batches(job.output.checkpoint)
    # one file a batch, in arrival order, then batches with no data
    assert [batches[f"part-00{n}.jsonl"] for n in range(3)] == [0, 1, 2]
    records = job_records(job)
    for record in records:
        if not record.malformed:
            record.processing_time = _schedule(batches[record.file])
    expected = simulate(
        job, records, until=_schedule(last), tick=STEP, flush=False, timers_at_due=False
    )
    assert_same_counters(metrics, expected.metrics)
    got = sorted((strip(w, "emitted_at") for w in read_output(job.output.path)), key=str)
    want = sorted((strip(w, "type", "emitted_at") for w in expected.windows), key=str)
    assert got == want
    # the ticks closed windows the data alone would not have: the last file's batch
    # left some open
    closed_by_ticks = [
        w for w in read_output(job.output.path) if parse_instant(w["emitted_at"]) > _schedule(2)
    ]
    assert closed_by_ticks


def job_for_silence(root: Path) -> Job:
    from tests.spark.streams import job_for

    return job_for(
        root,
        {
            "source": {"partition": "partition"},
            "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
            "window": {
                "type": "tumbling",
                "size": "30s",
                "group_by": ["device"],
                "aggregates": {"n": "count(*)", "total": "sum(value)"},
            },
        },
    )
