"""The crash matrix (issue 6): ``sparktide run`` SIGKILLed at every step of a micro-batch
— journaling its processing time, while a Spark job reads the input, before and after
each output, while writing state, between the state's clock and its commit marker,
after the commit, after the metrics, and after the batch function returned but before
Spark logged the batch — then restarted from its checkpoint, must write exactly the
records of an uninterrupted run: nothing missing, nothing twice.

Each chain runs ``restart_runner.py`` children one after another, each killing itself
(process group: JVM and Python workers too) at the next point of the matrix, then runs
the job to the end in the test's own session (a restart reads only the checkpoint; every
kill after the first is itself a restart in a new process). Restarts are given a clock
an hour off for every batch already journaled, so a replayed batch only matches if it
takes its journaled time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.spark.restart_runner import FILES, POINTS, SINKS, run_case
from tests.spark.streams import clock, file_batches
from tests.spark.test_restart import (
    PLANS,
    SEEDS,
    Child,
    _key,
    _run_here,
    batch_outputs,
    journal,
    metrics,
    write_input,
)

#: Per case, (point, batch) in the order one chain of runs reaches them: every point.
FULL: dict[str, list[tuple[str, int]]] = {
    "tumbling": [
        ("journal", 0),
        ("reading", 0),
        ("dead_letters", 1),
        ("windows", 1),
        ("outputs", 2),
        ("state_tables", 2),
        ("clock", 3),
        ("committed", 3),
        ("metrics", 4),
        ("batch_done", 5),
    ],
    # the steps that differ without a window: released events and the held-events table
    "release": [
        ("outputs", 2),
        ("state_tables", 3),
        ("clock", 4),
    ],
    # the typed sinks and the callback (restart_runner.SINKS): killed after the typed
    # write, inside the callback, and at the steps after them
    # analytic columns: their kept events written, then committed
    "analytic": [
        ("outputs", 1),
        ("state_tables", 2),
        ("committed", 3),
    ],
    # [apply]: the expanded rows' window state, and the held events of a release
    "apply": [
        ("dead_letters", 1),
        ("outputs", 2),
        ("state_tables", 3),
    ],
    "apply_release": [
        ("outputs", 2),
        ("state_tables", 3),
    ],
    # a window over a join's matches: the join's and the windows' state in one batch
    "join_window": [
        ("outputs", 2),
        ("state_tables", 3),
    ],
    "parquet_callback": [
        ("dead_letters", 1),
        ("sink", 1),
        ("callback", 2),
        ("clock", 3),
        ("committed", 4),
        ("batch_done", 5),
    ],
    "delta": [
        ("windows", 1),
        ("sink", 2),
        ("state_tables", 3),
        ("committed", 4),
        ("metrics", 5),
    ],
}


#: The part ``make test`` runs (each kill costs a JVM start, ~20 s): the job without a
#: window killed while its held-events table is written, and the sinks. The windowed
#: job is killed by test_restart.py, in one chain with its kills timed from outside:
#: before a batch writes anything (``reading@0``), while outputs and while state are
#: written, and after the last batch is done (``batch_done@5``).
#: ``SPARKTIDE_CRASH_MATRIX=full`` (``make crash-matrix``) runs every point.
QUICK: dict[str, list[tuple[str, int]]] = {
    "release": [("state_tables", 3)],
    "join_window": [("state_tables", 3)],
    # a Delta commit the state does not know of; a callback killed once it wrote
    "delta": [("sink", 2)],
    "parquet_callback": [("callback", 2)],
}
MATRIX = FULL if os.environ.get("SPARKTIDE_CRASH_MATRIX") == "full" else QUICK


def test_the_matrix_covers_every_point():
    assert {p for plan in FULL.values() for p, _ in plan} == set(POINTS)
    for case, plan in QUICK.items():
        assert set(plan) <= set(FULL[case])
    # the windowed job's quick points are in test_restart.py's chain
    chained = [p.partition("@") for _, p in PLANS["tumbling"] if isinstance(p, str)]
    assert chained and {(p, int(b)) for p, _, b in chained} <= set(FULL["tumbling"])


@pytest.mark.jvm(8)  # a child JVM per kill
@pytest.mark.parametrize("case", sorted(c for c in MATRIX if c not in SINKS))
def test_killed_at_every_point_and_restarted_matches_uninterrupted(spark, tmp_path, case):
    ref_dir, kill_dir = tmp_path / "reference", tmp_path / "killed"
    for directory in (ref_dir, kill_dir):
        write_input(directory / "in", seed=SEEDS[case])
    journaled: dict[int, bytes] = {}
    reached: list[str] = []
    for run, (point, batch) in enumerate(MATRIX[case]):
        child = Child(kill_dir, case, run, set(journaled), kill_at=f"{point}@{batch}")
        if run == 0:
            _run_here(spark, ref_dir, case, clock)  # overlaps the child's JVM start
        reached.append(child.killed_itself())
        journaled.update(journal(kill_dir / "out"))  # from now on: given an hour off
    run_case(spark, kill_dir, case, set(journaled))  # the last restart, in this session
    print(f"\n{case}: {len(reached)} kill points survived\n  " + "\n  ".join(reached))

    ref_out, kill_out = ref_dir / "out", kill_dir / "out"
    assert file_batches(str(kill_out / "checkpoint")) == file_batches(str(ref_out / "checkpoint"))
    want, got = batch_outputs(ref_out), batch_outputs(kill_out)
    assert sorted(want["results"]) == [f"batch={b:09d}" for b in range(FILES)]
    assert sum(len(r) for r in want["results"].values()) > 20
    for kind in ("results", "dead_letter"):
        union = [_key(r) for records in got[kind].values() for r in records]
        assert len(set(union)) == len(union), f"duplicate {kind} records"
        assert got[kind] == want[kind], kind
    assert metrics(kill_out) == metrics(ref_out)
    now = journal(kill_out)
    for b, text in journaled.items():
        assert now[b] == text, f"journal entry of batch {b} rewritten"
    assert {b: json.loads(t)["processing_time"] for b, t in now.items()} == {
        b: clock(b) for b in range(FILES)
    }
    _accounted(kill_out)


def _accounted(out: Any) -> None:
    """The last metrics record accounts for every input record exactly once."""
    last = json.loads(sorted((out / "metrics").glob("batch=*.jsonl"))[-1].read_text())
    settled = last["admitted"] + sum(last["dropped"].values()) + sum(last["dead_lettered"].values())
    assert settled == last["input"] > 0


@pytest.mark.jvm(8)  # a child JVM per kill
@pytest.mark.parametrize("case", sorted(c for c in MATRIX if c in SINKS))
def test_each_sink_killed_and_restarted_matches_uninterrupted(spark, tmp_path, case):
    """The typed outputs (parquet, delta) and a callback writing by batch id hold
    exactly an uninterrupted run's records after kills at the matrix's points."""
    ref_dir, kill_dir = tmp_path / "reference", tmp_path / "killed"
    for directory in (ref_dir, kill_dir):
        write_input(directory / "in", seed=SEEDS["tumbling"])
    journaled: dict[int, bytes] = {}
    reached: list[str] = []
    for run, (point, batch) in enumerate(MATRIX[case]):
        child = Child(kill_dir, case, run, set(journaled), kill_at=f"{point}@{batch}")
        if run == 0:
            run_case(spark, ref_dir, case, set())  # overlaps the child's JVM start
        reached.append(child.killed_itself())
        journaled.update(journal(kill_dir / "out"))
    run_case(spark, kill_dir, case, set(journaled))  # the last restart, in this session
    print(f"\n{case}: {len(reached)} kill points survived\n  " + "\n  ".join(reached))

    ref_out, kill_out = ref_dir / "out", kill_dir / "out"
    assert file_batches(str(kill_out / "checkpoint")) == file_batches(str(ref_out / "checkpoint"))
    fmt, callback = SINKS[case]
    for kind in ("results", "dead_letter"):
        want, got = _sink_records(ref_out / kind, fmt), _sink_records(kill_out / kind, fmt)
        if kind == "results":
            assert sum(len(r) for r in want.values()) > 20
        assert got == want, kind
    if callback:
        names = sorted(p.name for p in (ref_out / "callback").glob("*.json"))
        assert names == [f"batch={b:09d}-flush=0.json" for b in range(FILES)]
        for name in names:
            assert (kill_out / "callback" / name).read_text() == (
                ref_out / "callback" / name
            ).read_text(), name
        assert not list((kill_out / "callback").glob(".*"))
    assert metrics(kill_out) == metrics(ref_out)
    now = journal(kill_out)
    for b, text in journaled.items():
        assert now[b] == text, f"journal entry of batch {b} rewritten"
    _accounted(kill_out)


def _sink_records(directory: Path, fmt: str) -> dict[Any, list[str]]:
    """A typed output's records: per ``batch=/flush=`` directory (parquet), or per
    ``(batch, flush)`` columns of the Delta table, with the number of commits."""
    import pyarrow.parquet as pq

    def text(rows: list[dict[str, Any]]) -> list[str]:
        return [json.dumps(r, sort_keys=True, default=str) for r in rows]

    if fmt == "parquet":
        schema = pq.read_schema(directory / "_common_metadata")
        out: dict[Any, list[str]] = {"_schema": [str(schema)]}
        for leaf in sorted(directory.glob("batch=*/flush=*")):
            out[leaf.relative_to(directory).as_posix()] = text(
                pq.read_table(leaf / "part-00000.parquet").to_pylist()
            )
        return out
    from deltalake import DeltaTable

    table = DeltaTable(str(directory))
    per: dict[Any, list[str]] = {"_txn": [str(table.transaction_version("sparktide"))]}
    per["_commits"] = [str(len(table.history()))]
    for row in table.to_pyarrow_table().to_pylist():
        per.setdefault((row["batch"], row["flush"]), []).append(json.dumps(row, default=str))
    return {k: sorted(v) for k, v in per.items()}
