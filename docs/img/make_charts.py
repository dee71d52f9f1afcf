"""Draw the sample charts of docs/explain.md: ``python docs/img/make_charts.py``.

* ``explain-spec5.png``: the worked example of semantics §5 (six events, one partition);
* ``explain-20000.png``: a generated stream of 20,000 events on four partitions, with
  network jitter, retried (out-of-order) readings, one partition's outage whose backlog
  arrives minutes late, a quiet partition, a few clocks running fast, and a 1-minute
  tumbling window.

Deterministic (fixed seed, standard library only for the data); the charts are drawn
by ``sparktide explain --plot`` itself.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

from sparktide.cli import main
from sparktide.time import MINUTE, SECOND, format_instant, parse_instant

HERE = Path(__file__).resolve().parent

SPEC5_JOB = """\
[source]
path = "events.jsonl"
timestamp_by = "event_time"
arrival_time = "arrival_time"

[ordering]
late_arrival = "20s"
out_of_order = "10s"
early_arrival = "1m"
action = "adjust"
"""

SPEC5_EVENTS = [
    ("09:00:05", "09:00:06"),
    ("09:00:40", "09:00:10"),
    ("09:00:12", "09:00:20"),
    ("09:00:00", "09:00:45"),
    ("09:02:00", "09:00:50"),
    ("09:00:41", "09:00:51"),
]

LARGE_JOB = """\
[source]
path = "events/"
timestamp_by = "event_time"
arrival_time = "arrival_time"
partition = "partition"
partitions = 4

[ordering]
late_arrival = "10s"
out_of_order = "3s"
early_arrival = "5m"
action = "adjust"

[window]
type = "tumbling"
size = "1m"
group_by = ["device"]
aggregates = { n = "count(*)" }
"""


def spec5(folder: Path) -> Path:
    """Write the semantics §5 job and events into ``folder``; return the job file."""
    lines = [
        json.dumps(
            {
                "id": number,
                "event_time": f"2026-03-01T{event}Z",
                "arrival_time": f"2026-03-01T{arrival}Z",
            }
        )
        for number, (event, arrival) in enumerate(SPEC5_EVENTS, start=1)
    ]
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = folder / "job.toml"
    job.write_text(SPEC5_JOB, encoding="utf-8")
    return job


def large(folder: Path, events: int = 20_000, seed: int = 5) -> Path:
    """Write a 4-partition stream of ``events`` readings into ``folder``; return the job."""
    rng = random.Random(seed)
    base = parse_instant("2026-03-01T12:00:00Z")
    devices = 40
    per_device = events // devices + 20  # the quiet partition's devices skip some
    period = 3 * SECOND
    logs: dict[int, list[tuple[int, int, str]]] = {p: [] for p in range(4)}
    for device in range(devices):
        partition = device % 4
        phase = rng.randrange(period)
        for i in range(per_device):
            event = base + i * period + phase + rng.randrange(-200_000, 200_000)
            arrival = event + int(rng.expovariate(1 / 800_000)) + 100_000
            if rng.random() < 0.03:  # held in a retry queue
                arrival += rng.randrange(4 * SECOND, 20 * SECOND)
            if partition == 1 and 8 * MINUTE <= event - base < 12 * MINUTE:
                # outage: the backlog is uploaded when the link comes back
                arrival = base + 12 * MINUTE + rng.randrange(0, 40 * SECOND)
            if partition == 3 and 16 * MINUTE <= event - base < 19 * MINUTE:
                continue  # powered down: partition 3 is quiet
            if rng.random() < 0.001:  # a clock running ten minutes fast
                event += 10 * MINUTE
            record = {
                "device": f"dev-{device:02d}",
                "partition": partition,
                "event_time": format_instant(event),
                "arrival_time": format_instant(arrival),
                "value": round(rng.gauss(20, 2), 2),
            }
            logs[partition].append((arrival, len(logs[partition]), json.dumps(record)))
    # Keep the ``events`` earliest readings by event time: exactly that many lines.
    kept = sorted(
        (json.loads(row[2])["event_time"], p, row) for p, rows in logs.items() for row in rows
    )
    logs = {p: [] for p in logs}
    for _, partition, row in kept[:events]:
        logs[partition].append(row)
    directory = folder / "events"
    directory.mkdir()
    for partition, rows in logs.items():
        rows.sort()
        text = "\n".join(line for _, _, line in rows) + "\n"
        (directory / f"part-{partition}.jsonl").write_text(text, encoding="utf-8")
    job = folder / "job.toml"
    job.write_text(LARGE_JOB, encoding="utf-8")
    return job


def draw() -> int:
    """Write both charts next to this script."""
    with tempfile.TemporaryDirectory() as tmp:
        small_dir = Path(tmp) / "spec5"
        small_dir.mkdir()
        code = main(["explain", str(spec5(small_dir)), "--plot", str(HERE / "explain-spec5.png")])
        if code:
            return code
        large_dir = Path(tmp) / "stream-20000"
        large_dir.mkdir()
        return main(["explain", str(large(large_dir)), "--plot", str(HERE / "explain-20000.png")])


if __name__ == "__main__":
    sys.exit(draw())
