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
import functools
import json
import os
import signal
import sys
import threading
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
    # analytic columns (semantics §11.19): their kept events are the state table
    # ``analytic``, read by the next batch
    "analytic": {
        "source": {"partition": "partition", "partitions": 2},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "analytic": {
            "total": {
                "function": "sum",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "1m",
            },
            "n": {"function": "count", "limit_duration": "30s", "when": "value > 5"},
            "prev": {"function": "lag", "value": "id", "limit_duration": "1m"},
        },
        "select": {"id": "id", "total": "total", "n": "n", "prev": "prev"},
    },
    # [apply] (semantics §11.18): each event's readings expanded after the policy, into
    # windows (their open windows the state) and into the release (the held events)
    "apply": {
        "source": {"partition": "partition", "partitions": 2},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "apply": {"function": "elements", "value": "readings", "name": "el"},
        "filter": {"where": "GetRecordPropertyValue(el, 'ArrayIndex') < 3"},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "group_by": ["device"],
            "aggregates": {
                "n": "count(*)",
                "total": "sum(GetRecordPropertyValue(el, 'ArrayValue'))",
                "lastv": "last(GetRecordPropertyValue(el, 'ArrayValue'))",
            },
        },
    },
    # a window over a join's matches (semantics §7.11): the join's kept events and
    # held matches and the open windows, all state tables of one batch
    "join_window": {
        "inputs": {
            "left": {
                "path": "in",
                "partition": "partition",
                "partitions": 2,
                "where": "id % 2 = 0",
            },
            "right": {
                "path": "in",
                "partition": "partition",
                "partitions": 2,
                "where": "id % 2 = 1",
            },
        },
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "join": {"left": "left", "right": "right", "on": ["device"], "between": ["-20s", "20s"]},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "group_by": [{"device": "left.device"}],
            "aggregates": {"n": "count(*)", "total": "sum(right.value)"},
        },
    },
    "apply_release": {
        "source": {"partition": "partition", "partitions": 2},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "apply": {"function": "properties", "value": "readings", "name": "p"},
        "select": {
            "id": "id",
            "name": "GetRecordPropertyValue(p, 'PropertyName')",
            "value": "GetRecordPropertyValue(p, 'PropertyValue')",
        },
    },
}


#: Cases that write the tumbling case's records to another sink: its format, and whether
#: a ``foreach_batch`` callback also writes each batch to ``out/callback`` (test_crash_matrix.py).
SINKS: dict[str, tuple[str, bool]] = {
    "parquet_callback": ("parquet", True),
    "delta": ("delta", False),
}


def job_of(jobdir: Path, case: str) -> tuple[Any, Any]:
    """The job of ``case`` reading ``jobdir/in``, and its ``foreach_batch`` callback."""
    import dataclasses

    fmt, callback = SINKS.get(case, ("jsonl", False))
    job = job_for(jobdir, CASES["tumbling" if case in SINKS else case])
    job = dataclasses.replace(job, output=dataclasses.replace(job.output, format=fmt))
    return job, (callback_writer(jobdir / "out" / "callback") if callback else None)


def callback_writer(directory: Path) -> Any:
    """A ``foreach_batch`` callback that writes each batch's records, idempotently by
    ``(batch_id, flush)``: one JSON file per batch, replaced whole (a rename)."""

    def write(batch_id: int, results: Any) -> None:
        def rows(frame: Any) -> list[str]:
            return sorted(
                json.dumps(r.asDict(), sort_keys=True, default=str) for r in frame.collect()
            )

        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"batch={batch_id:09d}-flush={int(results.flush)}.json"
        tmp = target.with_name(f".{target.name}.tmp")
        text = {"results": rows(results.results), "dead_letters": rows(results.dead_letters)}
        tmp.write_text(json.dumps(text, indent=1))
        os.replace(tmp, target)
        if _armed.get("point") == "callback" and _current["batch"] == _armed.get("batch"):
            _die("callback", batch_id)

    return write


def write_input(directory: Path, *, seed: int) -> None:
    """``FILES`` files of a two-partition stream; partition 1 is silent in some files.
    Its records carry ``readings`` (for the ``[apply]`` cases; the rest of the stream is
    the same without them)."""
    write_stream(
        directory, seed=seed, events=150, files=FILES, partitions=2, devices=4, readings=True
    )
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


# ---------------------------------------------------------------------- kill points
#: Where ``--kill-at`` can stop the process, in the order a micro-batch reaches them.
POINTS = {
    "journal": "the batch's processing time was just journaled",
    "reading": "a Spark job is reading and judging the batch's input",
    "dead_letters": "the batch's state is begun; its outputs are about to be written",
    "windows": "dead letters written; the window (or release) step is about to start",
    "outputs": "the batch's window results (or released events) were just written",
    "sink": "a typed output (parquet, delta) of the batch's results was just written",
    "callback": "the foreach_batch callback wrote the batch; it has not returned",
    "state_tables": "the batch's state tables were written; its clock is not",
    "clock": "the batch's clock state is written, its _COMMITTED marker is not",
    "committed": "the batch's state is committed; its metrics are not written",
    "metrics": "the batch's metrics are written; Spark has not logged the batch as done",
    "batch_done": "the batch function returned; Spark has not logged the batch as done",
}
_current: dict[str, int | None] = {"batch": None}
_armed: dict[str, Any] = {}


def _die(point: str, batch: int) -> None:
    """SIGKILL this process group (this process, its JVM and Python workers)."""
    print(f"KILL POINT {point}@{batch}: {POINTS[point]}", flush=True)
    os.killpg(os.getpgrp(), signal.SIGKILL)


def arm(point: str, batch: int) -> None:
    """Make the engine SIGKILL the process when micro-batch ``batch`` reaches ``point``
    (by wrapping engine methods in this process only: nothing in sparktide knows)."""
    if point not in POINTS:
        raise SystemExit(f"unknown kill point {point!r}")
    from sparktide.spark import engine as engine_module
    from sparktide.spark import policy as policy_module
    from sparktide.spark import state as state_module
    from sparktide.spark import taskpass as taskpass_module
    from sparktide.spark.outputs import join as join_module
    from sparktide.spark.outputs import release as release_module
    from sparktide.spark.windows import fold as fold_module
    from sparktide.spark.windows import rows as rows_module

    _armed.update(point=point, batch=batch)
    engine_cls = engine_module.SparkEngine
    store_cls = state_module.StateStore

    def here() -> bool:
        return _current["batch"] == batch

    def around(owner: Any, name: str, *, before: str | None = None, after: str | None = None):
        original = getattr(owner, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if before == point and here():
                _die(point, batch)
            result = original(*args, **kwargs)
            if after == point and here():
                _die(point, batch)
            return result

        setattr(owner, name, wrapped)

    process = engine_cls.process

    def tracked(self: Any, lines: Any, batch_id: int, *args: Any, **kwargs: Any) -> Any:
        _current["batch"] = batch_id
        result = process(self, lines, batch_id, *args, **kwargs)
        if point == "batch_done" and here():
            _die(point, batch)
        return result

    engine_cls.process = tracked  # type: ignore[method-assign]

    around(store_cls, "processing_time", after="journal")
    if point == "reading":
        # the general plan builds its policy (lazy: the next Spark job reads), the
        # one-pass plan runs its kernel job: kill while that job runs
        for owner, name in ((policy_module, "judged_rows"), (taskpass_module, "one_pass")):
            original = getattr(owner, name)

            def reading(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if here():
                    threading.Timer(0.5, _die, (point, batch)).start()
                return _original(*args, **kwargs)

            setattr(owner, name, reading)
    around(engine_module, "write_dead_letters", before="dead_letters")
    around(engine_module, "fold_windows", before="windows", after="state_tables")
    around(engine_module, "release", before="windows", after="state_tables")
    around(fold_module, "write_windows", after="outputs")
    around(rows_module, "write_windows", after="outputs")
    if point == "outputs":
        for owner in (release_module, join_module):

            def released(
                batch_: Any, frame: Any, directory: Any, counter: Any = None, *, _write: Any
            ) -> None:
                _write(batch_, frame, directory, counter)
                if counter == "released" and here():
                    _die(point, batch)

            owner.write_text = functools.partial(released, _write=owner.write_text)
    hand_over = engine_module.hand_over

    def handed(*args: Any, **kwargs: Any) -> None:
        hand_over(*args, **kwargs)
        if point == "sink" and args[2] == "results" and here():
            _die(point, batch)

    engine_module.hand_over = handed
    write = state_module._atomic_write

    def atomic(path: Path, text: str) -> None:
        if point == "clock" and path.name == "_COMMITTED" and here():
            _die(point, batch)
        write(path, text)

    state_module._atomic_write = atomic
    around(store_cls, "commit", after="committed")
    around(engine_module, "write_metrics", after="metrics")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobdir", type=Path)
    parser.add_argument("case", choices=sorted([*CASES, *SINKS]))
    parser.add_argument("--poison", default="", help="comma-separated batch ids")
    parser.add_argument(
        "--kill-at", metavar="POINT@BATCH", help=f"SIGKILL at a point: {', '.join(POINTS)}"
    )
    args = parser.parse_args(argv)

    from sparktide.spark import local_session

    if args.kill_at:
        point, _, batch = args.kill_at.partition("@")
        arm(point, int(batch))

    poison = {int(b) for b in args.poison.split(",") if b}
    run_case(local_session(), args.jobdir, args.case, poison)
    print("done", flush=True)
    return 0


def run_case(spark: Any, jobdir: Path, case: str, poison: set[int]) -> None:
    """Run ``case`` over ``jobdir`` to the end of its input, one file per micro-batch,
    the clock an hour off for the ``poison`` batches: what a child runs, and what a test
    runs in its own session to finish a chain of killed children (a restart reads only
    the checkpoint, so the process it runs in makes no difference)."""
    from sparktide.spark import run_job

    job, callback = job_of(jobdir, case)
    run_job(
        job,
        once=True,
        flush=False,
        spark=spark,
        max_files_per_trigger=1,
        clock=poisoned(poison),
        publish=False,
        foreach_batch=callback,
    )


if __name__ == "__main__":
    sys.exit(main())
