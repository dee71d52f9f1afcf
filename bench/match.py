"""Benchmark: a ``[match]`` job (MATCH_RECOGNIZE) on Spark against the same job releasing
every event, and against plain Spark's windowed aggregation of the same data (events/s).
A measurement, not a test: nothing here asserts on timings.

The data and the plain query are those of ``bench/spark_vs_plain.py`` (JSONL telemetry,
``--keys`` devices, values from 20 to 25). The sparktide jobs have Stream Analytics'
ordering defaults and no window:

- **match**: per device, ``PATTERN (Low+ High{2,})`` within a minute (``Low``: a value
  below 22.5, ``High``: 22.5 or more), measures ``last(High.device)`` and
  ``count(High)`` (semantics §11.25);
- **released**: every event released with ``[select] device, value`` (the route the
  match job's rows take before matching).

Each job runs once unmeasured (the JIT, Spark's caches), then ``--repeat`` times,
alternating; the best run of each counts. Usage::

    .venv/bin/python bench/match.py --events 200000 --keys 10000 --batches 4
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

MATCH = {
    "partition_by": ["device"],
    "limit_duration": "1m",
    "pattern": "Low+ High{2,}",
    "define": {"Low": "value < 22.5", "High": "value >= 22.5"},
    "measures": {"device": "last(High.device)", "highs": "count(High)"},
}


def sparktide_job(data: Path, work: Path, match: bool) -> Any:
    from sparktide.job import Job

    table: dict[str, Any] = {
        "source": {"path": str(data), "timestamp_by": "event_time", "arrival_time": "arrival_time"},
        "output": {
            "path": "out/results",
            "dead_letter": "out/dead_letter",
            "metrics": "out/metrics",
            "checkpoint": "out/checkpoint",
        },
    }
    if match:
        table["match"] = MATCH
    else:
        table["select"] = {"device": "device", "value": "value"}
    return Job.from_dict(table, base_dir=work)


def run(spark: Any, data: Path, work: Path, match: bool) -> dict:
    return base.timed_job(spark, sparktide_job(data, work, match))


def main(argv: list[str] | None = None) -> int:
    args = base.job_bench_arguments(__doc__.splitlines()[0], argv)
    root = Path(tempfile.mkdtemp(prefix="sparktide-match-"))
    try:
        data, spark = base.job_bench_data(args, root)
        base.run_plain(spark, data, root / "plain-warmup", 1, "parquet")
        run(spark, data, root / "match-warmup", True)
        run(spark, data, root / "released-warmup", False)
        runs: dict[str, list[dict]] = {"plain": [], "match": [], "released": []}
        for i in range(args.repeat):
            runs["plain"].append(base.run_plain(spark, data, root / f"plain-{i}", 1, "parquet"))
            runs["match"].append(run(spark, data, root / f"match-{i}", True))
            runs["released"].append(run(spark, data, root / f"released-{i}", False))
        best = {name: min(r["seconds"] for r in rows) for name, rows in runs.items()}
        report = {
            "events": args.events,
            "keys": args.keys,
            "batches": args.batches,
            "best_seconds": best,
            "events_per_s": {name: args.events / s for name, s in best.items()},
            "match_vs_plain": best["plain"] / best["match"],
            "match_vs_released": best["released"] / best["match"],
            "matches": runs["match"][0]["released"],
            "seconds": {name: [r["seconds"] for r in rows] for name, rows in runs.items()},
        }
        print(json.dumps(report, indent=2))
        out = Path(__file__).parent / "results"
        out.mkdir(exist_ok=True)
        (out / "match.json").write_text(json.dumps(report, indent=2) + "\n")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
