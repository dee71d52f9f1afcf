"""Benchmark: what Stream Analytics' scalar functions cost in a job's WHERE and SELECT.

This is a measurement, not a test: nothing here asserts on timings.

Two jobs over the same input (JSON lines, ``--events`` events over ``--keys`` devices,
``--files`` files, Stream Analytics' default ordering), each run by ``run_job(once=True)``
in one ``local[2]`` session, ``--repeat`` times, alternating:

* **plain**: ``WHERE v > 0`` and ``SELECT device, v, s, t`` (no function);
* **functions**: the same rows through five functions, two in ``WHERE``
  (``ABS(v) > 0 AND LEN(s) > 0``) and three in ``SELECT`` (``UPPER(device)``,
  ``ROUND(v * 1.1, 2)``, ``DATEPART(hour, t)``), plus ``SUBSTRING`` in place of ``s``.

It reports events per second of each (the best of the repeats) and their ratio
(issue 28's target: functions ≥ 0.9× plain). Results are printed and written as JSON to
``bench/results/functions.json``.

    .venv/bin/python bench/functions.py [--events 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from sparktide.job import Job
from sparktide.time import SECOND, format_instant, parse_instant

RESULTS = Path(__file__).parent / "results" / "functions.json"
T0 = parse_instant("2026-03-01T09:00:00Z")

PLAIN = {
    "where": "v > 0",
    "select": {"d": "device", "v": "v", "s": "s", "h": "t"},
}
FUNCTIONS = {
    "where": "ABS(v) > 0 AND LEN(s) > 0",
    "select": {
        "d": "UPPER(device)",
        "v": "ROUND(v * 1.1, 2)",
        "s": "SUBSTRING(s, 1, 3)",
        "h": "DATEPART(hour, t)",
    },
}


def _write_input(root: Path, events: int, keys: int, files: int, seed: int) -> Path:
    """``events`` JSON lines in ``files`` files, in time order, 1 ms apart."""
    rng = random.Random(seed)
    folder = root / "in"
    folder.mkdir(parents=True)
    per_file = -(-events // files)
    for f in range(files):
        lines = []
        for i in range(f * per_file, min(events, (f + 1) * per_file)):
            t = T0 + i * 1000
            lines.append(
                json.dumps(
                    {
                        "device": f"dev-{rng.randrange(keys)}",
                        "t": format_instant(t),
                        "a": format_instant(t + SECOND // 10),
                        "v": rng.randrange(-5, 100) + 0.5,
                        "s": rng.choice(("alpha", "beta", "gamma", "")),
                    }
                )
            )
        (folder / f"part-{f:04d}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _job(root: Path, data: Path, name: str, spec: dict[str, Any]) -> Job:
    out = root / name
    if out.exists():
        shutil.rmtree(out)
    return Job.from_dict(
        {
            "source": {"path": str(data), "timestamp_by": "t", "arrival_time": "a"},
            "filter": {"where": spec["where"]},
            "select": spec["select"],
            "output": {"path": str(out / "events"), "checkpoint": str(out / "checkpoint")},
        }
    )


def _run(spark: Any, job: Job) -> float:
    from sparktide.spark import run_job

    started = time.perf_counter()
    run_job(job, once=True, spark=spark, publish=False)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    from sparktide.spark import local_session

    spark = local_session(2)
    root = Path(tempfile.mkdtemp(prefix="sparktide-functions-"))
    try:
        data = _write_input(root, args.events, args.keys, args.files, args.seed)
        _run(spark, _job(root, data, "warmup", PLAIN))  # (JIT, caches: not measured)
        seconds: dict[str, list[float]] = {"plain": [], "functions": []}
        for _ in range(args.repeat):
            for name, spec in (("plain", PLAIN), ("functions", FUNCTIONS)):
                seconds[name].append(_run(spark, _job(root, data, name, spec)))
        rates = {name: args.events / min(values) for name, values in seconds.items()}
        result = {
            "events": args.events,
            "keys": args.keys,
            "files": args.files,
            "seconds": seconds,
            "events_per_second": rates,
            "ratios": {"functions_vs_plain": rates["functions"] / rates["plain"]},
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
        spark.stop()
    for name, rate in rates.items():
        print(f"{name:>10}: {rate:>10,.0f} events/s  (runs: {seconds[name]})")
    print(f"functions / plain: {result['ratios']['functions_vs_plain']:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
