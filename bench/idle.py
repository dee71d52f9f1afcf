"""Benchmark: what a continuous run costs while its input is silent.

This is a measurement, not a test: nothing here asserts on timings.

A continuous run has a micro-batch on every trigger, data or not (the ticker,
``sparktide.spark.ticks``), so its idle estimates and idle timeouts fire while nothing
arrives. For each ``--triggers`` interval this starts a job (two partitions, a 5-second
tumbling count, late tolerance 3 s) on an empty directory in one ``local[2]`` session,
lets it settle for ``--settle`` seconds, then measures for ``--seconds``: batches per
second and CPU (the JVM's and this Python process's, in cores). Then one file per
partition lands and the input falls silent again: it reports how long after its end
the last window was written, against its due time (end + late tolerance).

Results are printed and written as JSON to ``bench/results/idle.json``.

    .venv/bin/python bench/idle.py [--triggers "1 second" "5 seconds"] [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from sparktide.job import Job
from sparktide.spark import local_session, start
from sparktide.time import SECOND, format_instant, parse_instant

RESULTS = Path(__file__).parent / "results" / "idle.json"


def _job(root: Path) -> Job:
    (root / "in").mkdir(parents=True)
    return Job.from_dict(
        {
            "source": {"path": "in", "timestamp_by": "t", "partition": "p"},
            "ordering": {"late_arrival": "3s"},
            "window": {"type": "tumbling", "size": "5s", "aggregates": {"n": "count(*)"}},
            "output": {"path": "out/events", "checkpoint": "out/checkpoint"},
        },
        base_dir=root,
    )


def _jvm_seconds() -> float:
    """CPU seconds of this process's child JVM (the local Spark driver)."""
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[1]) == os.getpid():  # (field 4, the parent)
                total += (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
        except (FileNotFoundError, IndexError, ValueError):
            continue
    return total


def _python_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _land_files(job: Job) -> int:
    """One file per partition, events up to now; returns the last window's end (µs)."""
    now = time.time()
    for p in (0, 1):
        rows = [{"t": format_instant(int((now - 2 + k / 2) * SECOND)), "p": p} for k in range(5)]
        tmp = Path(job.source.path) / f".p{p}"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        tmp.rename(Path(job.source.path) / f"p{p}.jsonl")
    return (int(now * SECOND) // (5 * SECOND) + 1) * 5 * SECOND


def _closed_at(job: Job, end: int, limit: float) -> int | None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for path in Path(job.output.path).glob("batch=*/flush=*/*.jsonl"):
            for line in path.read_text().splitlines():
                record = json.loads(line)
                if parse_instant(record["window_end"]) == end:
                    return parse_instant(record["emitted_at"])
        time.sleep(0.2)
    return None


def measure(spark, trigger: str, settle: float, seconds: float) -> dict:
    """One trigger interval: idle cost, then how soon the last window closes."""
    with tempfile.TemporaryDirectory() as folder:
        job = _job(Path(folder))
        batches: list[int] = []
        query = start(
            spark, job, processing_time=trigger, on_metrics=lambda m: batches.append(m["batch"])
        )
        try:
            time.sleep(settle)
            jvm, python, count, began = _jvm_seconds(), _python_seconds(), len(batches), time.time()
            time.sleep(seconds)
            elapsed = time.time() - began
            row = {
                "trigger": trigger,
                "batches_per_s": round((len(batches) - count) / elapsed, 2),
                "jvm_cores": round((_jvm_seconds() - jvm) / elapsed, 2),
                "python_cores": round((_python_seconds() - python) / elapsed, 2),
            }
            end = _land_files(job)
            closed = _closed_at(job, end, limit=60 + 3 * seconds)
            row["last_window_closed_after_end_s"] = (
                None if closed is None else round((closed - end) / SECOND, 2)
            )
            row["due_after_end_s"] = 3.0  # the late tolerance
        finally:
            query.stop()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", nargs="+", default=["1 second", "5 seconds"])
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    spark = local_session()
    rows = [measure(spark, trigger, args.settle, args.seconds) for trigger in args.triggers]
    for row in rows:
        print(json.dumps(row))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"load": os.getloadavg(), "runs": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
