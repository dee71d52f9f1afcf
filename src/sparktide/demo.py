"""``sparktide demo``: generate a disorderly telemetry stream and run it on local Spark.

The stream: six devices on three partitions report a temperature every 5 seconds for
four minutes. One device loses its uplink and uploads a backlog minutes late, one has a
clock running ten minutes fast, one partition goes quiet, readings are jittered and a
few lines are malformed. The job counts and averages each device's readings per
1-minute tumbling window with Stream Analytics' default tolerances; the demo shows the
window results, the dead letters and the metrics.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any, TextIO

from sparktide.job import Job
from sparktide.time import MINUTE, SECOND, format_instant, parse_instant

__all__ = ["demo_job", "generate", "main"]

BASE = parse_instant("2026-03-01T12:00:00Z")
DEVICES = {"dev-01": 0, "dev-02": 0, "dev-03": 1, "dev-04": 1, "dev-05": 2, "dev-06": 2}


def generate(directory: Path, *, seed: int = 7) -> int:
    """Write the demo stream as one JSONL file per partition; return the line count."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    logs: dict[int, list[tuple[int, str]]] = {p: [] for p in set(DEVICES.values())}
    for device, partition in DEVICES.items():
        for i in range(48):
            event = BASE + i * 5 * SECOND + rng.randrange(0, 5 * SECOND)
            arrival = event + rng.randrange(200_000, 2 * SECOND)
            if device == "dev-02" and 10 <= i < 22:  # outage: backlog uploaded at 12:02:30
                arrival = BASE + 150 * SECOND + i * 1000
            if device == "dev-05" and i in (7, 31):  # clock ten minutes fast
                event += 10 * MINUTE
            if device == "dev-03" and i % 11 == 5:  # stuck in a retry queue: out of order
                arrival += 9 * SECOND
            if partition == 2 and 24 <= i < 36 and device != "dev-05":
                continue  # dev-06 powered down: partition 2 is quiet but for dev-05
            record = {
                "device": device,
                "partition": partition,
                "event_time": format_instant(event),
                "arrival_time": format_instant(arrival),
                "temperature": round(20 + rng.gauss(0, 1.5), 2),
            }
            logs[partition].append((arrival, json.dumps(record)))
    ordered = {p: [line for _, line in sorted(entries)] for p, entries in logs.items()}
    ordered[0].insert(40, '{"device": "dev-01", "temperature": 21.5')
    ordered[1].insert(60, '{"device": "dev-03", "partition": 1, "temperature": 19.0}')
    ordered[2].insert(
        20,
        json.dumps(
            {
                "device": "dev-05",
                "partition": 2,
                "event_time": "2026-03-01T12:01:00",
                "arrival_time": "2026-03-01T12:01:01Z",
            }
        ),
    )
    lines = 0
    written = time.time_ns()
    for partition, entries in ordered.items():
        path = directory / f"partition-{partition}.jsonl"
        path.write_text("\n".join(entries) + "\n")
        # Spark reads new files oldest first; files written within one tick of the clock
        # would tie and come in directory order, which differs between directories: a
        # second apart, the micro-batches are the same in every run
        stamp = written + partition * 1_000_000_000
        os.utime(path, ns=(stamp, stamp))
        lines += len(entries)
    return lines


def demo_job(workdir: Path) -> Job:
    """The demo's job: 1-minute tumbling count and average per device."""
    return Job.from_dict(
        {
            "source": {
                "path": "events",
                "timestamp_by": "event_time",
                "arrival_time": "arrival_time",
                "partition": "partition",
                "partitions": 3,
            },
            "ordering": {"late_arrival": "10s", "out_of_order": "5s", "early_arrival": "5m"},
            "window": {
                "type": "tumbling",
                "size": "1m",
                "group_by": ["device"],
                "aggregates": {
                    "readings": "count(*)",
                    "avg_temp": "avg(temperature)",
                    "max_temp": "max(temperature)",
                },
            },
            "output": {
                "path": "out/windows",
                "dead_letter": "out/dead_letter",
                "metrics": "out/metrics",
                "checkpoint": "out/checkpoint",
            },
        },
        base_dir=workdir,
    )


def _read(directory: str | None) -> list[dict[str, Any]]:
    if directory is None:
        return []
    out = []
    for path in sorted(Path(directory).glob("batch=*/flush=*/*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def _windows_table(job: Job) -> Any:
    """The window results, by device and window start."""
    from rich.table import Table

    windows = _read(job.output.path)
    table = Table(title=f"Window results ({len(windows)})", title_justify="left")
    for name in ("device", "start (UTC)", "end (UTC)", "readings", "avg_temp", "max_temp"):
        table.add_column(name)
    for w in sorted(windows, key=lambda w: (w["device"], w["window_start"])):
        table.add_row(
            w["device"],
            w["window_start"],
            w["window_end"],
            str(w["readings"]),
            f"{w['avg_temp']:.2f}",
            str(w["max_temp"]),
        )
    return table


def _dead_letters_table(job: Job) -> Any:
    """The dead letters, in the order written."""
    from rich.table import Table

    letters = _read(job.output.dead_letter)
    table = Table(title=f"Dead letters ({len(letters)})", title_justify="left")
    for name in ("file", "line", "reason", "error"):
        table.add_column(name)
    for d in letters:
        table.add_row(str(d["file"]), str(d["line"]), d["reason"], str(d["error"] or ""))
    return table


def main(workdir: Path, out: TextIO) -> int:
    """Generate, run on local Spark, and print the results; returns an exit code."""
    from rich.console import Console

    from sparktide.progress import RunProgress
    from sparktide.spark.run import run_job
    from sparktide.spark.session import local_session

    console = Console(file=out)
    if workdir.exists():
        shutil.rmtree(workdir)
    lines = generate(workdir / "events")
    job = demo_job(workdir)
    console.print(f"[bold]sparktide demo[/] — {lines} telemetry lines in {workdir / 'events'}")
    console.print(
        "Starting local Spark (about 10 s) and running the job with `run --once --flush` …"
    )
    spark = local_session()
    try:
        with RunProgress() as progress:
            run_job(job, once=True, flush=True, spark=spark, on_metrics=progress)
    finally:
        spark.stop()
    console.print(_windows_table(job))
    console.print(_dead_letters_table(job))
    totals = _read_metrics(job)
    if totals:
        shown = ("partitions", "diagnostics", "this_batch")
        console.print_json(json.dumps({k: v for k, v in totals.items() if k not in shown}))
    for diagnostic in _diagnostics(job):
        console.print(f"[yellow]diagnostic[/yellow] {diagnostic['message']}", highlight=False)
    console.print(f"Outputs are in {workdir / 'out'}; the job file equivalent is in README.md.")
    return 0


def _diagnostics(job: Job) -> list[dict[str, Any]]:
    """The diagnostics of every micro-batch (the flush record only repeats the last)."""
    if job.output.metrics is None:
        return []
    out = []
    for path in sorted(Path(job.output.metrics).glob("batch=*.jsonl")):
        out.extend(json.loads(path.read_text()).get("diagnostics", []))
    return out


def _read_metrics(job: Job) -> dict[str, Any] | None:
    if job.output.metrics is None:
        return None
    files = sorted(Path(job.output.metrics).glob("*.jsonl"))
    return json.loads(files[-1].read_text()) if files else None
