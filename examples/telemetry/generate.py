"""Generate the IoT telemetry example's input: examples/telemetry/events/part-N.jsonl.

Deterministic (fixed seed, standard library only): running it again writes the same
bytes. Six devices report a temperature (and usually a humidity) every 5 seconds for
3.5 minutes, through an IoT hub with 3 partitions. Each device always lands in the same
partition (keyed, like Kafka), and each ``part-N.jsonl`` file holds one partition's
log in arrival order.

What is in the data (all times 2026-03-01, UTC):

* normal jitter: network delay 0.2-2 s, sometimes 2.5-4.5 s on a slow link, so
  events of a partition's two devices sometimes arrive a little out of order
  (less than ``out_of_order = 5s`` behind: tolerated);
* out-of-order events: four readings held up ~9.5 s in a retry queue. They are not
  late (less than ``late_arrival = 10s``) but arrive after newer readings of their
  partition, more than 5 s behind them;
* a connectivity outage: dev-02 (partition 1) loses its uplink from 12:00:30 to
  12:02:00, keeps its readings in a local buffer and uploads the backlog in one burst
  at 12:03:00, 1-2.5 minutes after they were taken (late);
* clock skew: dev-06 (partition 2) reports two readings with its clock 10 minutes
  ahead (early);
* a quiet partition: dev-03 and dev-06 (partition 2) are powered down for
  maintenance from 12:02:10 to 12:03:10, so partition 2 delivers nothing for a minute;
* a few readings from dev-04 with its humidity sensor out (``"humidity": null``);
* three malformed lines: one that is not JSON, one without ``event_time``, and one
  whose ``event_time`` has no time zone.

Usage: ``python examples/telemetry/generate.py`` (writes next to this file).
"""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

SEED = 20260301
BASE = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
PERIOD_MS = 5_000
READINGS = 42  # 42 x 5 s = 3.5 minutes per device

#: device -> (partition, phase in ms, baseline temperature)
DEVICES = {
    "dev-01": (0, 0, 21.0),
    "dev-04": (0, 2_500, 19.5),
    "dev-02": (1, 1_000, 23.0),
    "dev-05": (1, 3_500, 22.0),
    "dev-03": (2, 2_000, 20.0),
    "dev-06": (2, 4_500, 24.5),
}
PARTITIONS = 3

#: Readings (device, index) held ~9.5 s in a retry queue: out of order, not late.
OUT_OF_ORDER = {("dev-01", 9), ("dev-04", 33), ("dev-05", 30), ("dev-03", 8)}
#: dev-02's uplink is down for these event times (ms after BASE); backlog uploaded at:
OUTAGE = (30_000, 120_000)
BACKLOG_UPLOAD_MS = 180_000
#: dev-06 readings stamped by a clock running 10 minutes fast.
EARLY = {("dev-06", 8), ("dev-06", 9)}
CLOCK_SKEW_MS = 10 * 60_000
#: Partition 2's devices are powered down for these event times (ms after BASE).
QUIET_PARTITION = 2
QUIET = (130_000, 190_000)
#: dev-04 readings without humidity.
NO_HUMIDITY = {("dev-04", k) for k in range(14, 19)}


def iso(ms: int) -> str:
    """BASE + ``ms`` milliseconds as ISO-8601 UTC with milliseconds and a 'Z'."""
    value = BASE + timedelta(milliseconds=ms)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def generate() -> dict[int, list[tuple[int, str]]]:
    """Return, per partition, ``(arrival ms, JSON line)`` pairs (unsorted)."""
    rng = random.Random(SEED)
    lines: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
    for device, (partition, phase, baseline) in DEVICES.items():
        backlog = 0
        for k in range(READINGS):
            taken = phase + k * PERIOD_MS + rng.randint(-150, 150)
            delay = rng.randint(200, 2_000)
            if rng.random() < 0.1:
                delay = rng.randint(2_500, 4_500)  # slow link: mild, tolerated disorder
            temperature = round(baseline + 1.5 * math.sin(taken / 60_000) + rng.gauss(0, 0.15), 2)
            humidity = round(rng.uniform(35.0, 55.0), 1)
            if partition == QUIET_PARTITION and QUIET[0] <= taken < QUIET[1]:
                continue  # powered down: no reading taken
            event_time = taken
            if (device, k) in OUT_OF_ORDER:
                delay = rng.randint(9_300, 9_700)
            if device == "dev-02" and OUTAGE[0] <= taken < OUTAGE[1]:
                arrival = BACKLOG_UPLOAD_MS + backlog * 120  # one burst, in order
                backlog += 1
            else:
                arrival = taken + delay
            if (device, k) in EARLY:
                event_time = taken + CLOCK_SKEW_MS
            record = {
                "device": device,
                "partition": partition,
                "event_time": iso(event_time),
                "arrival_time": iso(arrival),
                "temperature": temperature,
                "humidity": None if (device, k) in NO_HUMIDITY else humidity,
            }
            lines[partition].append((arrival, json.dumps(record)))
    # Malformed lines, one per partition, placed by their arrival time.
    lines[0].append(
        (
            62_000,
            '{"device": "dev-01", "partition": 0, "event_time": "2026-03-01T12:01:01.200Z", '
            '"arrival_time": "2026-03-01T12:01:02.000Z", "temperat',
        )
    )
    lines[1].append(
        (
            97_000,
            json.dumps(
                {
                    "device": "dev-05",
                    "partition": 1,
                    "arrival_time": iso(97_000),
                    "temperature": 22.4,
                    "humidity": 41.0,
                }
            ),
        )
    )
    lines[2].append(
        (
            81_000,
            json.dumps(
                {
                    "device": "dev-03",
                    "partition": 2,
                    "event_time": "2026-03-01T12:01:20.000",
                    "arrival_time": iso(81_000),
                    "temperature": 20.9,
                    "humidity": 44.2,
                }
            ),
        )
    )
    return lines


def main() -> None:
    out = Path(__file__).resolve().parent / "events"
    out.mkdir(exist_ok=True)
    total = 0
    for partition, rows in generate().items():
        rows.sort(key=lambda row: row[0])  # a partition's log is in arrival order
        path = out / f"part-{partition}.jsonl"
        path.write_text("".join(line + "\n" for _, line in rows), encoding="utf-8")
        total += len(rows)
        print(f"wrote {len(rows):3d} lines to {path}")
    print(f"{total} lines in all")


if __name__ == "__main__":
    main()
