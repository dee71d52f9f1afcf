"""Benchmark: an ISFIRST/LAG job on Spark against plain Spark's windowed aggregation of
the same data (events/s). A measurement, not a test: nothing here asserts on timings.

The data and the plain query are those of ``bench/spark_vs_plain.py`` (JSONL telemetry,
``--keys`` devices; plain Spark: ``withWatermark`` 5 s, ``groupBy(window(1 minute),
device).agg(count, avg)``, available-now trigger, parquet sink). The sparktide job has
Stream Analytics' ordering defaults, no window, and two analytic columns per device
(semantics §11.11) written with every event:

    ISFIRST(minute, 1) OVER (PARTITION BY device)
    LAG(value) OVER (PARTITION BY device LIMIT DURATION(minute, 1))

Each job runs once unmeasured (the JIT, Spark's caches), then ``--repeat`` times,
alternating; the best run of each counts. Usage::

    .venv/bin/python bench/analytic.py --events 200000 --keys 10000 --batches 4
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import spark_vs_plain as base


def analytic_job(data: Path, work: Path) -> Any:
    from sparktide.job import Job

    return Job.from_dict(
        {
            "source": {
                "path": str(data),
                "timestamp_by": "event_time",
                "arrival_time": "arrival_time",
            },
            "analytic": {
                "first": {"function": "isfirst", "period": "1m", "partition_by": ["device"]},
                "prev": {
                    "function": "lag",
                    "value": "value",
                    "partition_by": ["device"],
                    "limit_duration": "1m",
                },
            },
            "select": {"device": "device", "value": "value", "first": "first", "prev": "prev"},
            "output": {
                "path": "out/results",
                "dead_letter": "out/dead_letter",
                "metrics": "out/metrics",
                "checkpoint": "out/checkpoint",
            },
        },
        base_dir=work,
    )


def run_analytic(spark: Any, data: Path, work: Path, per_trigger: int) -> dict:
    return base.timed_job(spark, analytic_job(data, work), per_trigger)


def main(argv: list[str] | None = None) -> int:
    args = base.job_bench_arguments(__doc__.splitlines()[0], argv)
    root = Path(tempfile.mkdtemp(prefix="sparktide-analytic-"))
    try:
        data, spark = base.job_bench_data(args, root)
        # a run of each first (the JIT, Spark's caches: not measured), then alternating
        base.run_plain(spark, data, root / "plain-warmup", 1, "parquet")
        run_analytic(spark, data, root / "analytic-warmup", 1)
        plain, mine = [], []
        for i in range(args.repeat):
            plain.append(base.run_plain(spark, data, root / f"plain-{i}", 1, "parquet"))
            mine.append(run_analytic(spark, data, root / f"analytic-{i}", 1))
        best_plain = min(p["seconds"] for p in plain)
        best = min(mine, key=lambda m: m["seconds"])
        report = {
            "events": args.events,
            "keys": args.keys,
            "batches": args.batches,
            "plain_events_per_s": args.events / best_plain,
            "analytic_events_per_s": args.events / best["seconds"],
            "ratio": best_plain / best["seconds"],
            "analytic": best,
            "plain_seconds": [p["seconds"] for p in plain],
            "analytic_seconds": [m["seconds"] for m in mine],
        }
        print(json.dumps(report, indent=2))
        out = Path(__file__).parent / "results"
        out.mkdir(exist_ok=True)
        (out / "analytic.json").write_text(json.dumps(report, indent=2) + "\n")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
