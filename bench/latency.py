"""Benchmark: window latency with a processing-time trigger, sparktide against plain Spark.

This is a measurement, not a test: nothing here asserts on timings.

A writer thread drops one JSONL file per second into a fresh source directory for
``--seconds`` (90) s: ``--rate`` (2,000) events per second from ``--devices`` (100)
devices. Each event's ``arrival_time`` is the wall clock (ms) at which it "reached the
broker" (spread over the second before its file lands), its ``event_time`` 0–2 s before
that; ``--late`` (0.5%) are 6–30 s behind (late beyond ``late_arrival = 5s``). The
schedule (every event's offsets from the start) is generated once with ``--seed`` and
replayed for each engine against the wall clock, starting at a multiple of 10 s, so
both engines see the same data in the same phase of the windows.

* **sparktide**: Stream Analytics defaults (late 5 s, out-of-order 0 s, early 5 min,
  adjust), a 10-second tumbling ``count(*)`` per device, one merged timeline,
  :func:`sparktide.spark.start` with ``processing_time="1 second"``;
* **plain**: ``readStream.schema(...).json(dir)`` → ``withWatermark("event_time",
  "5 seconds")`` → ``groupBy(window("event_time", "10 seconds"), device).count()`` →
  append-mode JSON sink, same trigger.

The engines run one after the other (never concurrently) in one ``local[2]`` session,
each after an untimed warm-up query on a few files. A poller lists the output
directories every ``--poll`` (0.1) s and records, for each window end E, the wall time at
which the first record of that window became readable (``seen``). Reported per engine,
over the windows ending after the first full window and at least ``--margin`` (10) s
before the writer stops (median / p95 / max, seconds):

* ``seen − (E + 5 s)``: a fixed reference ("the watermark passes E at about
  E + 5 s": arrival ≈ wall clock, late tolerance 5 s);
* ``seen − wm(E)``: from the landing of the file that moved *this engine's* watermark
  past E, computed from the schedule by each engine's own rule — sparktide's job
  watermark is ``max(newest − 0 s, arrival − 5 s)``, so the first file holding an event at
  or after E; plain Spark's is ``max(event_time) − 5 s``, so the first file holding an
  event at or after E + 5 s (Spark applies it from the next micro-batch). This is the
  issue's "from the watermark passing a window's end to the window record being
  written";
* ``seen − E``: end to end, what a consumer of the results waits after a window ends.

Results are printed as a table and written as JSON to ``bench/results/latency.json``.

Usage::

    .venv/bin/python bench/latency.py                 # 90 s per engine (about 4 minutes)
    .venv/bin/python bench/latency.py --seconds 15    # smoke check
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from spark_vs_plain import finish_report, log, report_header

ROOT = Path(__file__).resolve().parent
DEFAULT_OUT = ROOT / "results" / "latency.json"
WINDOW_S = 10
LATE_S = 5
PLAIN_SCHEMA = "device STRING, event_time TIMESTAMP, arrival_time TIMESTAMP"
ENGINES = ("sparktide", "plain")


# ---------------------------------------------------------------------- schedule
@dataclass
class FilePlan:
    """One file: its events as (device, event offset ms, arrival offset ms) from the
    start; it lands at ``land_ms`` after the start."""

    land_ms: int
    events: list[tuple[int, int, int]]
    max_event_ms: int = 0
    max_arrival_ms: int = 0


def schedule(*, seconds: int, rate: int, devices: int, p_late: float, seed: int) -> list[FilePlan]:
    """File ``i`` lands at ``(i + 1)`` s and holds the ``rate`` events that arrived in
    ``[i, i + 1)`` s; event time is 0–2 s before arrival (``p_late``: 6–30 s)."""
    rng = random.Random(seed)
    plans = []
    for i in range(seconds):
        events = []
        for k in range(rate):
            arrival = i * 1000 + (k * 1000) // rate
            if rng.random() < p_late:
                lag = rng.randrange(6000, 30000)
            else:
                lag = rng.randrange(0, 2000)
            events.append((rng.randrange(devices), arrival - lag, arrival))
        plan = FilePlan((i + 1) * 1000, events)
        plan.max_event_ms = max(e for _, e, _ in events)
        plan.max_arrival_ms = max(a for _, _, a in events)
        plans.append(plan)
    return plans


def _iso(ms: int) -> str:
    from sparktide.time import format_instant

    return str(format_instant(ms * 1000))


def write_file(directory: Path, staging: Path, index: int, plan: FilePlan, t0_ms: int) -> None:
    """Write the file to ``staging`` and move it into ``directory`` (a reader never sees
    half a file)."""
    lines = [
        f'{{"device":"dev-{d:03d}","event_time":"{_iso(t0_ms + e)}",'
        f'"arrival_time":"{_iso(t0_ms + a)}"}}\n'
        for d, e, a in plan.events
    ]
    tmp = staging / f"part-{index:05d}.jsonl"
    tmp.write_text("".join(lines), encoding="utf-8")
    os.replace(tmp, directory / tmp.name)


class Writer(threading.Thread):
    """Drops the planned files into ``directory`` on the wall clock from ``t0_ms``;
    records the wall time (ms) at which each landed."""

    def __init__(self, directory: Path, plans: list[FilePlan], t0_ms: int) -> None:
        super().__init__(daemon=True)
        self.directory = directory
        self.staging = directory.parent / (directory.name + ".staging")
        self.staging.mkdir(parents=True, exist_ok=True)
        self.plans = plans
        self.t0_ms = t0_ms
        self.landed_ms: list[int] = []
        self.stop_flag = threading.Event()

    def run(self) -> None:
        for i, plan in enumerate(self.plans):
            due = (self.t0_ms + plan.land_ms) / 1000
            delay = due - time.time()
            if delay > 0 and self.stop_flag.wait(delay):
                return
            write_file(self.directory, self.staging, i, plan, self.t0_ms)
            self.landed_ms.append(int(time.time() * 1000))


# ---------------------------------------------------------------------- poller
@dataclass
class Poller:
    """Lists ``pattern`` every ``interval`` s; ``first_seen[E]`` is the wall time (ms) of
    the first poll that read a record of the window ending at E (epoch ms)."""

    root: Path
    pattern: str
    window_end: Callable[[dict[str, Any]], str]
    interval: float
    first_seen: dict[int, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # bytes read of each file
    polls: int = 0

    def poll(self) -> None:
        now = int(time.time() * 1000)
        self.polls += 1
        for path in self.root.glob(self.pattern):
            name = str(path)
            try:
                size = path.stat().st_size
                if not size or self.sizes.get(name) == size:
                    continue  # empty (being created) or read already at this size
                text = path.read_text(encoding="utf-8")
            except OSError:
                continue
            for line in text.splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # being written: the file is read again when it grows
                end = _epoch_ms(self.window_end(record))
                self.first_seen.setdefault(end, now)
            self.sizes[name] = len(text.encode("utf-8")) if text.endswith("\n") else -1

    def loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            started = time.perf_counter()
            self.poll()
            stop.wait(max(0.0, self.interval - (time.perf_counter() - started)))


def _epoch_ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


# ---------------------------------------------------------------------- engines
def sparktide_job(source: Path, work: Path) -> Any:
    from sparktide.job import Job

    return Job.from_dict(
        {
            "source": {
                "format": "jsonl",
                "path": str(source),
                "timestamp_by": "event_time",
                "arrival_time": "arrival_time",
            },
            "ordering": {
                "early_arrival": "5m",
                "late_arrival": f"{LATE_S}s",
                "out_of_order": "0s",
                "action": "adjust",
            },
            "window": {
                "type": "tumbling",
                "size": f"{WINDOW_S}s",
                "group_by": ["device"],
                "aggregates": {"n": "count(*)"},
            },
            "output": {
                "path": "out/results",
                "dead_letter": "out/dead_letter",
                "metrics": "out/metrics",
                "checkpoint": "out/checkpoint",
            },
        },
        base_dir=work,
    )


class Running:
    """A started query and where its window records appear."""

    def __init__(self, query: Any, root: Path, pattern: str, end: Callable[[dict], str]) -> None:
        self.query = query
        self.root = root
        self.pattern = pattern
        self.end = end

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.query.stop()
        engine = getattr(self.query, "sparktide_engine", None)
        if engine is not None:
            engine.store.unlock()
        if self.query.exception() is not None:
            raise RuntimeError(str(self.query.exception()))


def start_sparktide(spark: Any, source: Path, work: Path, trigger: str) -> Running:
    from sparktide.spark import start

    job = sparktide_job(source, work)
    query = start(spark, job, processing_time=trigger)
    return Running(
        query, Path(job.output.path), "batch=*/flush=*/*.jsonl", lambda r: r["window_end"]
    )


def start_plain(spark: Any, source: Path, work: Path, trigger: str) -> Running:
    from pyspark.sql import functions as F

    out = work / "out"
    frame = spark.readStream.schema(PLAIN_SCHEMA).json(str(source))
    windows = (
        frame.withWatermark("event_time", f"{LATE_S} seconds")
        .groupBy(F.window("event_time", f"{WINDOW_S} seconds"), "device")
        .count()
    )
    query = (
        windows.writeStream.outputMode("append")
        .format("json")
        .option("path", str(out))
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(processingTime=trigger)
        .start()
    )
    return Running(query, out, "part-*.json", lambda r: r["window"]["end"])


STARTERS = {"sparktide": start_sparktide, "plain": start_plain}


# ---------------------------------------------------------------------- one run
def watermark_passes(
    plans: list[FilePlan], landed: list[int], end_ms: int, engine: str
) -> int | None:
    """Wall time (ms) at which the file that moves ``engine``'s watermark to ``end_ms``
    (relative to the start) landed; None if no file does."""
    for plan, at in zip(plans, landed, strict=False):
        if engine == "sparktide":
            moved = plan.max_event_ms >= end_ms or plan.max_arrival_ms - LATE_S * 1000 >= end_ms
        else:
            moved = plan.max_event_ms - LATE_S * 1000 >= end_ms
        if moved:
            return at
    return None


def run_engine(
    spark: Any,
    engine: str,
    plans: list[FilePlan],
    work: Path,
    *,
    trigger: str,
    poll: float,
    margin: int,
    drain: float,
) -> dict[str, Any]:
    """Start ``engine`` on an empty directory, replay ``plans`` on the wall clock, poll
    its output; the latency of each measured window."""
    source = work / "source"
    source.mkdir(parents=True)
    running = STARTERS[engine](spark, source, work, trigger)
    # start on a multiple of the window, at least 3 s from now (the query is up by then)
    now = time.time()
    t0 = (int(now) // WINDOW_S + 1) * WINDOW_S
    if t0 - now < 3:
        t0 += WINDOW_S
    t0_ms = t0 * 1000
    writer = Writer(source, plans, t0_ms)
    poller = Poller(running.root, running.pattern, running.end, poll)
    stop = threading.Event()
    polling = threading.Thread(target=poller.loop, args=(stop,), daemon=True)
    polling.start()
    writer.start()
    seconds = len(plans)
    # measured: windows after the first full one, ending margin s before the writer stops
    ends = [
        t0_ms + k * WINDOW_S * 1000
        for k in range(2, seconds // WINDOW_S + 1)
        if k * WINDOW_S <= seconds - margin
    ]
    try:
        writer.join()
        deadline = time.time() + drain
        while time.time() < deadline and not all(e in poller.first_seen for e in ends):
            time.sleep(poll)
        if not running.query.isActive:
            raise RuntimeError(f"{engine}: the query stopped: {running.query.exception()}")
        progress = list(running.query.recentProgress)
    finally:
        stop.set()
        polling.join()
        writer.stop_flag.set()
        running.stop()
    windows = []
    for end in ends:
        seen = poller.first_seen.get(end)
        passes = watermark_passes(plans, writer.landed_ms, end - t0_ms, engine)
        windows.append(
            {
                "window_end": _iso(end),
                "seen_after_end_s": None if seen is None else (seen - end) / 1000,
                "seen_after_end_plus_5s_s": None
                if seen is None
                else (seen - end - LATE_S * 1000) / 1000,
                "watermark_passes_after_end_s": None if passes is None else (passes - end) / 1000,
                "seen_after_watermark_s": None
                if seen is None or passes is None
                else (seen - passes) / 1000,
            }
        )
    landing = [at - (t0_ms + p.land_ms) for p, at in zip(plans, writer.landed_ms, strict=False)]
    durations = [p.get("batchId") for p in progress]
    batch_ms = [p["durationMs"].get("triggerExecution", 0) for p in progress if "durationMs" in p]
    return {
        "engine": engine,
        "t0": _iso(t0_ms),
        "files": len(writer.landed_ms),
        "events": sum(len(p.events) for p in plans[: len(writer.landed_ms)]),
        "file_landing_late_ms_max": max(landing, default=0),
        "polls": poller.polls,
        "windows_seen": len(poller.first_seen),
        "windows": windows,
        "micro_batches_recent": len(durations),
        "micro_batch_seconds_median": statistics.median(batch_ms) / 1000 if batch_ms else None,
        "micro_batch_seconds_max": max(batch_ms) / 1000 if batch_ms else None,
        "summary": {key: stats([w[key] for w in windows]) for key in _KEYS},
    }


_KEYS = (
    "seen_after_end_plus_5s_s",
    "seen_after_watermark_s",
    "seen_after_end_s",
    "watermark_passes_after_end_s",
)


def stats(values: list[float | None]) -> dict[str, Any]:
    """Median, p95 (nearest rank) and max of the values that are there; how many are
    missing (windows never seen)."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return {"n": 0, "missing": len(values)}
    p95 = xs[min(len(xs) - 1, max(0, -(-95 * len(xs) // 100) - 1))]
    return {
        "n": len(xs),
        "missing": len(values) - len(xs),
        "median": statistics.median(xs),
        "p95": p95,
        "max": xs[-1],
    }


def warm_up(spark: Any, work: Path, trigger: str) -> None:
    """One short untimed query per engine on a few files: the first streaming query
    and the first batches of a session compile code and are slow."""
    plans = schedule(seconds=4, rate=200, devices=10, p_late=0.0, seed=1)
    for engine in ENGINES:
        source = work / f"warm-{engine}" / "source"
        source.mkdir(parents=True)
        staging = source.parent / "staging"
        staging.mkdir()
        t0_ms = int(time.time() * 1000) - 60_000
        for i, plan in enumerate(plans):
            write_file(source, staging, i, plan, t0_ms)
        running = STARTERS[engine](spark, source, source.parent, trigger)
        deadline = time.time() + 120
        while time.time() < deadline:
            progress = running.query.recentProgress
            if sum(p["numInputRows"] for p in progress) > 0 and len(progress) >= 2:
                break
            time.sleep(0.2)
        running.stop()


# ---------------------------------------------------------------------- reporting
def print_table(report: dict[str, Any], out: Any = sys.stdout) -> None:
    runs = {r["engine"]: r for r in report["runs"]}
    labels = {
        "seen_after_end_plus_5s_s": "seen − (E + 5 s)",
        "seen_after_watermark_s": "seen − watermark passes E",
        "seen_after_end_s": "seen − E (end to end)",
        "watermark_passes_after_end_s": "watermark passes E − E",
    }
    header = f"{'latency, s (median / p95 / max)':<30}" + "".join(
        f"{engine:>24}" for engine in runs
    )
    header += f"{'ratio (median, sparktide/plain)':>34}"
    print(header, file=out)
    print("-" * len(header), file=out)
    for key, label in labels.items():
        cells = []
        for run in runs.values():
            s = run["summary"][key]
            cells.append(
                f"{s['median']:>7.2f} /{s['p95']:>6.2f} /{s['max']:>6.2f}" if s["n"] else "-"
            )
        ratio = report["ratios"].get(key)
        print(
            f"{label:<30}" + "".join(f"{c:>24}" for c in cells) + f"{_ratio(ratio):>34}",
            file=out,
        )
    for run in runs.values():
        missing = run["summary"]["seen_after_end_s"]["missing"]
        print(
            f"{run['engine']}: {run['events']:,} events in {run['files']} files, "
            f"{len(run['windows'])} windows measured ({missing}"
            f" never seen), micro-batch median {run['micro_batch_seconds_median'] or 0:.2f} s, "
            f"max {run['micro_batch_seconds_max'] or 0:.2f} s",
            file=out,
        )


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=90, help="seconds of input (90)")
    parser.add_argument("--rate", type=int, default=2000, help="events per second (2,000)")
    parser.add_argument("--devices", type=int, default=100, help="devices (100)")
    parser.add_argument("--late", type=float, default=0.005, help="late share (0.005)")
    parser.add_argument("--trigger", default="1 second", help="processing-time trigger")
    parser.add_argument("--poll", type=float, default=0.1, help="output poll interval, s")
    parser.add_argument("--margin", type=int, default=10, help="unmeasured tail, s (10)")
    parser.add_argument("--drain", type=float, default=20.0, help="max wait after input, s")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None, help="scratch directory (temp)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import logging

    logging.getLogger("sparktide").setLevel(logging.ERROR)  # late-input warnings per batch
    work = args.work or Path(tempfile.mkdtemp(prefix="sparktide-latency-"))
    work.mkdir(parents=True, exist_ok=True)
    plans = schedule(
        seconds=args.seconds,
        rate=args.rate,
        devices=args.devices,
        p_late=args.late,
        seed=args.seed,
    )
    report = report_header(
        "latency",
        args,
        window=f"tumbling {WINDOW_S}s count(*) per device",
        ordering={"late_arrival": f"{LATE_S}s", "out_of_order": "0s", "action": "adjust"},
        late_events=sum(1 for p in plans for _, e, a in p.events if a - e > LATE_S * 1000),
    )
    try:
        from sparktide.spark import local_session

        t = time.perf_counter()
        spark = local_session(args.cores)
        import pyspark

        report["pyspark"] = pyspark.__version__
        log(f"session up in {time.perf_counter() - t:.1f} s; work dir {work}")
        warm_up(spark, work / "warm", args.trigger)
        log("warm-up done")
        for engine in args.engines:
            log(f"{engine}: {args.seconds} s of input at {args.rate:,} events/s")
            run = run_engine(
                spark,
                engine,
                plans,
                work / engine,
                trigger=args.trigger,
                poll=args.poll,
                margin=args.margin,
                drain=args.drain,
            )
            report["runs"].append(run)
            log(f"{engine}: {json.dumps(run['summary'])}")
            shutil.rmtree(work / engine, ignore_errors=True)
        runs = {r["engine"]: r for r in report["runs"]}
        report["ratios"] = {}
        if set(runs) == set(ENGINES):
            for key in _KEYS:
                a, b = runs["sparktide"]["summary"][key], runs["plain"]["summary"][key]
                # a ratio of medians only where both are positive (a window can be
                # seen before the fixed E + 5 s: the ratio of two signs means nothing)
                if a.get("n") and b.get("n") and a["median"] > 0 and b["median"] > 0:
                    report["ratios"][key] = a["median"] / b["median"]
        finish_report(args.out, report, print_table)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
