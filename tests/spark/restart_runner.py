"""Run one restart-test job on Spark until its input is consumed (a separate process).

Usage: ``python tests/spark/restart_runner.py JOBDIR CASE [--poison 1,2]``

The job reads ``JOBDIR/in`` and writes under ``JOBDIR/out`` (see ``streams.job_for``),
one file per micro-batch, with the fixed processing-time schedule ``streams.clock``.
``--poison`` shifts the clock by an hour for the listed batch ids: a batch that was
journaled before a crash must be replayed with its journaled time, so the shift must
leave no trace in the outputs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sparktide.time import SECOND  # noqa: E402
from tests.spark.streams import clock, job_for, write_stream  # noqa: E402

#: Partition 1 delivers nothing in these files (micro-batches), so its arrival clock
#: advances by the idle estimate, which depends on the batch's processing time.
SILENT = {1: (1, 3)}
FILES = 6
POISON = 3600 * SECOND
MTIME0 = 1_772_355_600  # 2026-03-01T09:00:00Z, in seconds

CASES: dict[str, dict[str, Any]] = {
    "tumbling": {
        "source": {"partition": "partition", "partitions": 2},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "total": "sum(value)"},
        },
    },
    "release": {
        "source": {"partition": "partition", "partitions": 2},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
    },
}


def write_input(directory: Path, *, seed: int) -> None:
    """``FILES`` files of a two-partition stream; partition 1 is silent in some files."""
    write_stream(directory, seed=seed, events=150, files=FILES, partitions=2, devices=4)
    for pid, files in SILENT.items():
        for f in files:
            path = directory / f"part-{f:03d}.jsonl"
            kept = [line for line in path.read_text().splitlines() if not _in(line, pid)]
            path.write_text("\n".join(kept) + "\n")
    # Spark's file source takes files in modification-time order: make it the name order.
    for f in range(FILES):
        os.utime(directory / f"part-{f:03d}.jsonl", (MTIME0 + f, MTIME0 + f))


def _in(line: str, pid: int) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("partition") == pid


def poisoned(batches: set[int]):
    """The schedule, an hour late for ``batches``."""

    def shifted(batch_id: int) -> int:
        return clock(batch_id) + (POISON if batch_id in batches else 0)

    return shifted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobdir", type=Path)
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--poison", default="", help="comma-separated batch ids")
    args = parser.parse_args(argv)

    from sparktide.spark import local_session, run_job

    poison = {int(b) for b in args.poison.split(",") if b}
    job = job_for(args.jobdir, CASES[args.case])
    run_job(
        job,
        once=True,
        flush=False,
        spark=local_session(),
        max_files_per_trigger=1,
        clock=poisoned(poison),
        publish=False,
    )
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
