"""Benchmark: sparktide on a typed stream against plain Spark on the same stream.

This is a measurement, not a test: nothing here asserts on timings.

One ``local[2]`` session (shuffle partitions 2) reads the same generated Parquet files
(``device`` string, ``event_time`` and ``arrival_time`` timestamps, ``value`` double;
files in arrival order, about 5% of events late by more than 5 s) as a typed stream,
``spark.readStream.schema(s).parquet(dir)``:

* **plain**: ``withWatermark("event_time", "5 seconds")`` → ``groupBy(window(1
  minute), device).agg(count, avg)`` → append-mode Parquet sink, available-now trigger;
* **sparktide**: ``start(spark, job, frame, once=True)`` with Stream Analytics'
  defaults (late 5 s, out-of-order 0 s, early 5 min, adjust) and a 1-minute tumbling
  ``count`` / ``avg`` per device: the typed path (no JSON text for vouched rows).

Each for every ``--keys`` and 1 or ``--batches`` micro-batches (``maxFilesPerTrigger``),
fresh output and checkpoint each run, after one unrecorded warm-up run of each side.
The ratio is plain's seconds / sparktide's (above 1: sparktide is faster). Results go
to ``bench/results/typed_vs_plain.json``.

Usage::

    .venv/bin/python bench/typed_vs_plain.py --events 200000 --keys 10000 1000000
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "src"))

BASE_US = 1_772_366_400 * 1_000_000  # 2026-03-01T12:00:00Z
SCHEMA = "device STRING, event_time TIMESTAMP, arrival_time TIMESTAMP, value DOUBLE"


def write_events(directory: Path, events: int, keys: int, files: int, seed: int = 7) -> None:
    """``events`` events over ``keys`` devices in ``files`` Parquet files (arrival order)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    directory.mkdir(parents=True)
    step = 60_000_000 * 30 // max(events // files, 1)  # ~30 minutes per file
    arrival = BASE_US
    per_file = -(-events // files)
    for f in range(files):
        devices, times, arrivals, values = [], [], [], []
        for _ in range(min(per_file, events - f * per_file)):
            arrival += rng.randrange(0, 2 * step + 1)
            lag = rng.randrange(6, 60) if rng.random() < 0.05 else rng.randrange(0, 3)
            devices.append(f"d{rng.randrange(keys)}")
            times.append(arrival - lag * 1_000_000)
            arrivals.append(arrival)
            values.append(round(rng.uniform(0, 100), 2))
        table = pa.table(
            {
                "device": devices,
                "event_time": pa.array(times, pa.timestamp("us", tz="UTC")),
                "arrival_time": pa.array(arrivals, pa.timestamp("us", tz="UTC")),
                "value": values,
            }
        )
        pq.write_table(table, directory / f"part-{f:03d}.parquet")


def run_plain(spark, data: Path, work: Path, per_trigger: int) -> float:
    """Plain Spark's watermark and window aggregation; seconds."""
    from pyspark.sql import functions as F

    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", per_trigger)
    counts = (
        frame.parquet(str(data))
        .withWatermark("event_time", "5 seconds")
        .groupBy(F.window("event_time", "1 minute"), "device")
        .agg(F.count("*").alias("n"), F.avg("value").alias("mean"))
    )
    started = time.perf_counter()
    query = (
        counts.writeStream.outputMode("append")
        .format("parquet")
        .option("path", str(work / "out"))
        .option("checkpointLocation", str(work / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return time.perf_counter() - started


def run_sparktide(spark, data: Path, work: Path, per_trigger: int) -> float:
    """sparktide's typed path on the same stream; seconds."""
    from sparktide.job import Job
    from sparktide.spark import start

    job = Job.from_dict(
        {
            "source": {
                "path": str(data),
                "format": "parquet",
                "timestamp_by": "event_time",
                "arrival_time": "arrival_time",
            },
            "window": {
                "type": "tumbling",
                "size": "1m",
                "group_by": ["device"],
                "aggregates": {"n": "count(*)", "mean": "avg(value)"},
            },
            "output": {"path": "out", "dead_letter": "dead", "checkpoint": "ck"},
        },
        base_dir=work,
    )
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", per_trigger)
    started = time.perf_counter()
    query = start(spark, job, frame.parquet(str(data)), once=True)
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    query.engine.store.unlock()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--keys", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "typed_vs_plain.json")
    args = parser.parse_args()

    from sparktide.spark import local_session

    spark = local_session()
    spark.sparkContext.setLogLevel("ERROR")
    root = Path(tempfile.mkdtemp(prefix="typed_vs_plain_"))
    rows: list[dict[str, Any]] = []
    try:
        for keys in args.keys:
            data = root / f"data-{keys}"
            write_events(data, args.events, keys, args.files)
            warm = root / f"warm-{keys}"
            run_plain(spark, data, warm / "plain", args.files)
            run_sparktide(spark, data, warm / "tide", args.files)
            for batches in (1, args.batches):
                per_trigger = max(args.files // batches, 1)
                work = root / f"{keys}-{batches}"
                plain = run_plain(spark, data, work / "plain", per_trigger)
                tide = run_sparktide(spark, data, work / "tide", per_trigger)
                row = {
                    "keys": keys,
                    "batches": batches,
                    "events": args.events,
                    "plain_s": round(plain, 2),
                    "sparktide_s": round(tide, 2),
                    "ratio": round(plain / tide, 2),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n{'keys':>9} {'batches':>7} {'plain s':>8} {'sparktide s':>11} {'ratio':>6}")
    for r in rows:
        print(
            f"{r['keys']:>9} {r['batches']:>7} {r['plain_s']:>8} {r['sparktide_s']:>11} "
            f"{r['ratio']:>6}"
        )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "commit": commit,
                "machine": platform.platform(),
                "args": vars(args) | {"out": str(args.out)},
                "rows": rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
