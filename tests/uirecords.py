"""Metrics records as ``sparktide run`` writes them, for the live page's tests (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparktide.time import SECOND, format_instant, parse_instant

BASE = parse_instant("2026-03-01T09:00:00Z")
#: A field value from input data that must be shown as text, never run.
INJECTED = '<script>window.__injected = 1</script><img src=x onerror="window.__injected=2">'


def record(batch: int, *, late: int = 0, flushed: bool = False, name: str = "0") -> dict[str, Any]:
    """The metrics record of micro-batch ``batch`` of a two-partition merged job: 10
    events a batch on each partition, ``late`` of them late and adjusted; partition
    ``name`` (partition 0's id) holds the job watermark back."""
    now = BASE + (batch + 1) * 10 * SECOND
    n = batch + 1
    parts = []
    for i, pid in enumerate((name, "1")):
        arrival = now - (5 - 4 * i) * SECOND
        parts.append(
            {
                "partition": pid,
                "input": 10 * n,
                "admitted": 10 * n - 1,
                "early": 0,
                "late": late * n,
                "out_of_order": 1,
                "adjusted": late * n,
                "dropped": {"late": 1} if i == 0 else {},
                "dead_lettered": {"out_of_order": 1} if i == 1 else {},
                "arrival_clock": format_instant(arrival),
                "watermark": format_instant(arrival - 3 * SECOND),
            }
        )
    watermark = parse_instant(parts[0]["watermark"])
    this_batch = {
        "input": 20,
        "admitted": 18,
        "early": 0,
        "late": 2 * late,
        "out_of_order": 0,
        "adjusted": 2 * late,
        "dropped": {"late": 1},
        "dead_lettered": {"malformed": 1},
        "in_no_window": 0,
        "windows_emitted": batch % 3,
        "released": 0,
    }
    return {
        "type": "metrics",
        "batch": batch,
        "input": 20 * n + n,
        "admitted": 20 * n - 2,
        "early": 0,
        "late": 2 * late * n,
        "out_of_order": 2,
        "adjusted": 2 * late * n,
        "dropped": {"late": 1},
        "dead_lettered": {"out_of_order": 1, "malformed": n},
        "in_no_window": 0,
        "windows_emitted": 4 * n,
        "released": 0,
        "processing_time": format_instant(now),
        "watermark": format_instant(watermark),
        "watermark_delay_us": now - watermark,
        "output_watermark": format_instant(watermark - 7 * SECOND),
        "partitions": parts,
        "flushed": flushed,
        "open_windows": 3,
        "this_batch": this_batch,
        "plan": "one_pass",
        "windows_merged_on": "driver",
        "files_read_by": "arrow",
        "diagnostics": [
            {
                "kind": "late_input",
                "count": 2 * late,
                "message": f"{2 * late} late input events in batch {batch}",
            }
        ]
        if late
        else [],
    }


def write_record(directory: Path, metrics: dict[str, Any]) -> Path:
    """Write a record as ``run`` does (``batch=<id>.jsonl``, or ``flush=``)."""
    directory.mkdir(parents=True, exist_ok=True)
    kind = "flush" if metrics["flushed"] else "batch"
    path = directory / f"{kind}={metrics['batch']:09d}.jsonl"
    path.write_text(json.dumps(metrics) + "\n")
    return path


def write_dead_letters(root: Path, batch: int, rows: list[dict[str, Any]]) -> None:
    """A batch's dead letters as the JSON-lines output writes them."""
    where = root / f"batch={batch:09d}" / "flush=0"
    where.mkdir(parents=True, exist_ok=True)
    (where / "_records=0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (where / "_SUCCESS").write_text("")
