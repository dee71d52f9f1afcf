"""Benchmark of the reference engine (``sparktide simulate``): events per second.

This is a measurement, not a test: nothing here asserts on timings.

It generates ``--events`` IoT telemetry events with realistic disorder (4 partitions,
10,000 devices, each device pinned to one partition; about 2% late, 0.1% early and a few
percent out of order by more than ``out_of_order``), once in memory as
:class:`~sparktide.core.records.InputRecord` objects and once as a JSONL file in a
temporary directory, and measures

* **engine**: :func:`sparktide.core.engine.simulate` on the prebuilt records, without
  ``decision`` records (as ``sparktide simulate`` runs without ``--explain``);
* **end-to-end**: :func:`sparktide.reader.read_records` on the JSONL file, then
  ``simulate`` (what ``sparktide simulate`` does, minus printing);

each for the merged job watermark (one timeline per partition) and for substreams
(``over = "device"``: one timeline per device). Results are printed as a table and
written as JSON to ``bench/results/reference_engine.json``.

Usage::

    python bench/reference_engine.py                  # 1,000,000 events
    python bench/reference_engine.py --events 200000
    python bench/reference_engine.py --events 200000 --profile   # cProfile, engine, merged
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparktide.core.engine import Result, simulate
from sparktide.core.records import InputRecord
from sparktide.job import Job, Ordering, Source
from sparktide.reader import read_records
from sparktide.time import MINUTE, SECOND, format_instant, parse_instant

ROOT = Path(__file__).resolve().parent
DEFAULT_OUT = ROOT / "results" / "reference_engine.json"

PARTITIONS = 4
DEVICES = 10_000
#: Input rate: one event every 100 µs of arrival time (10,000 events/s across partitions).
STEP_US = 100
BASE = parse_instant("2026-03-01T12:00:00Z")

LATE_ARRIVAL = 10 * SECOND
OUT_OF_ORDER = 5 * SECOND
EARLY_ARRIVAL = 5 * MINUTE
#: Fractions of events: early (clock skew), late (buffered upload), delayed 3-9 s (some of
#: which end up more than ``OUT_OF_ORDER`` behind their partition: out of order).
P_EARLY = 0.001
P_LATE = 0.02
P_DELAYED = 0.05


def ordering() -> Ordering:
    """The benchmark's ordering policy."""
    return Ordering(
        early_arrival=EARLY_ARRIVAL,
        late_arrival=LATE_ARRIVAL,
        out_of_order=OUT_OF_ORDER,
        action="adjust",
    )


def source(path: str, *, substreams: bool) -> Source:
    """The benchmark's source: JSONL, 4 partitions, optionally ``over = "device"``."""
    return Source(
        path=path,
        format="jsonl",
        timestamp_by="event_time",
        arrival_time="arrival_time",
        partition="partition",
        partitions=PARTITIONS,
        over="device" if substreams else None,
    )


def generate(n: int, seed: int) -> list[InputRecord]:
    """``n`` telemetry events in arrival order, as merged-job input records (no key)."""
    rng = random.Random(seed)
    records: list[InputRecord] = []
    append = records.append
    for seq in range(n):
        arrival = BASE + seq * STEP_US + rng.randrange(STEP_US)
        device = rng.randrange(DEVICES)
        partition = device % PARTITIONS
        r = rng.random()
        if r < P_EARLY:
            event_time = arrival + rng.randint(6 * MINUTE, 15 * MINUTE)
        elif r < P_EARLY + P_LATE:
            event_time = arrival - rng.randint(LATE_ARRIVAL + SECOND, 3 * MINUTE)
        elif r < P_EARLY + P_LATE + P_DELAYED:
            event_time = arrival - rng.randint(3 * SECOND, 9 * SECOND)
        else:
            event_time = arrival - rng.randint(0, 3 * SECOND)
        name = f"dev-{device:05d}"
        fields = {
            "device": name,
            "partition": partition,
            "event_time": format_instant(event_time),
            "arrival_time": format_instant(arrival),
            "temperature": round(20.0 + rng.gauss(0.0, 2.0), 2),
        }
        append(
            InputRecord(
                seq,
                fields,
                partition=partition,
                event_time=event_time,
                arrival_time=arrival,
            )
        )
    return records


def write_jsonl(records: list[InputRecord], path: Path) -> None:
    """Write the records' fields as one JSONL file (arrival order: per partition too)."""
    dumps = json.dumps
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(dumps(r.fields) + "\n" for r in records)


def set_keys(records: list[InputRecord], *, substreams: bool) -> None:
    """Give records their substream key (the device) or none."""
    for record in records:
        record.key = record.fields["device"] if substreams else None  # type: ignore[index]


def _check(result: Result, n: int) -> dict[str, Any]:
    """The run's metrics summary, and whether nothing was lost."""
    m = result.metrics
    accounted = m["admitted"] + sum(m["dropped"].values()) + sum(m["dead_lettered"].values())
    return {
        "input": m["input"],
        "admitted": m["admitted"],
        "early": m["early"],
        "late": m["late"],
        "out_of_order": m["out_of_order"],
        "adjusted": m["adjusted"],
        "released": m["released"],
        "identity_ok": m["input"] == n == accounted and m["released"] == m["admitted"],
    }


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """``fn(*args)`` and its wall-clock time (after a full garbage collection)."""
    return _timed_cpu(fn, *args)[::2]


def _timed_cpu(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, float, Any]:
    """``fn(*args, **kwargs)`` with its wall-clock and process CPU times.

    CPU time is reported too because it is steadier than wall-clock time on a shared
    machine; the events/s figures use wall-clock time (``time.perf_counter``).
    """
    gc.collect()
    cpu = time.process_time()
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, time.process_time() - cpu, value


def run_engine(records: list[InputRecord], path: str, *, substreams: bool) -> dict[str, Any]:
    """Engine only: ``simulate`` on prebuilt records."""
    set_keys(records, substreams=substreams)
    job = Job(source(path, substreams=substreams), ordering())
    seconds, cpu, result = _timed_cpu(simulate, job, records, explain=False)
    row = {
        "measure": "engine",
        "timelines": "substreams (over=device)" if substreams else "merged (per partition)",
        "seconds": seconds,
        "cpu_seconds": cpu,
        "events_per_s": len(records) / seconds,
        "check": _check(result, len(records)),
    }
    del result
    return row


def run_end_to_end(path: str, n: int, *, substreams: bool) -> dict[str, Any]:
    """Read the JSONL file with ``read_records``, then ``simulate``."""
    job = Job(source(path, substreams=substreams), ordering())
    read_s, read_cpu, records = _timed_cpu(read_records, job.source)
    engine_s, engine_cpu, result = _timed_cpu(simulate, job, records, explain=False)
    total = read_s + engine_s
    row = {
        "measure": "end-to-end",
        "timelines": "substreams (over=device)" if substreams else "merged (per partition)",
        "seconds": total,
        "cpu_seconds": read_cpu + engine_cpu,
        "read_seconds": read_s,
        "engine_seconds": engine_s,
        "events_per_s": n / total,
        "check": _check(result, n),
    }
    del result, records
    return row


def _git() -> str | None:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return rev + ("-dirty" if dirty else "")


def print_table(rows: list[dict[str, Any]], out: Any = sys.stdout) -> None:
    """The results as a plain-text table."""
    header = (
        f"{'measure':<11} {'timelines':<25} {'seconds':>9} {'events/s':>11} "
        f"{'cpu s':>8} {'events/cpu-s':>12}  detail"
    )
    print(header, file=out)
    print("-" * len(header), file=out)
    for row in rows:
        detail = ""
        if "read_seconds" in row:
            detail = f"read {row['read_seconds']:.2f} s + engine {row['engine_seconds']:.2f} s"
        if not row["check"]["identity_ok"]:
            detail += "  (METRICS IDENTITY FAILED)"
        per_cpu = row["check"]["input"] / row["cpu_seconds"]
        print(
            f"{row['measure']:<11} {row['timelines']:<25} {row['seconds']:>9.2f} "
            f"{row['events_per_s']:>11,.0f} {row['cpu_seconds']:>8.2f} {per_cpu:>12,.0f}  "
            f"{detail}",
            file=out,
        )


def profile(records: list[InputRecord], path: str, top: int) -> str:
    """cProfile of the engine on prebuilt records, merged; the top functions by tottime."""
    set_keys(records, substreams=False)
    job = Job(source(path, substreams=False), ordering())
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    simulate(job, records, explain=False)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events (1,000,000)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (7)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead: cProfile the engine on the merged job and print the top functions",
    )
    parser.add_argument("--top", type=int, default=15, help="functions to show with --profile")
    args = parser.parse_args(argv)
    n = args.events
    if n < 1:
        parser.error("--events must be at least 1")

    load_before = os.getloadavg()
    git = _git()  # the code this process imported
    with tempfile.TemporaryDirectory(prefix="sparktide-bench-") as tmp:
        path = Path(tmp) / "events.jsonl"
        gen_s, records = _timed(generate, n, args.seed)
        write_s, _ = _timed(write_jsonl, records, path)
        size_mb = path.stat().st_size / 1e6
        print(
            f"{n:,} events generated in {gen_s:.1f} s; JSONL {size_mb:.0f} MB written "
            f"in {write_s:.1f} s",
            file=sys.stderr,
        )
        if args.profile:
            print(profile(records, str(path), args.top))
            return 0
        rows = []
        for substreams in (False, True):
            rows.append(run_engine(records, str(path), substreams=substreams))
            print(f"  {rows[-1]['measure']}, {rows[-1]['timelines']}: done", file=sys.stderr)
        del records
        for substreams in (False, True):
            rows.append(run_end_to_end(str(path), n, substreams=substreams))
            print(f"  {rows[-1]['measure']}, {rows[-1]['timelines']}: done", file=sys.stderr)

    print_table(rows)
    report = {
        "benchmark": "reference_engine",
        "events": n,
        "seed": args.seed,
        "partitions": PARTITIONS,
        "devices": DEVICES,
        "ordering": {
            "late_arrival": "10s",
            "out_of_order": "5s",
            "early_arrival": "5m",
            "action": "adjust",
        },
        "jsonl_mb": round(size_mb, 1),
        "sparktide_git": git,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
