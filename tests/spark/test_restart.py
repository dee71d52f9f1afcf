"""Exactly once across restarts (semantics §9): a Spark job killed at any point and started
again from its checkpoint writes the same records as a run that was never interrupted.

Each test runs the job uninterrupted in this process (the reference) and, in another
directory, runs ``restart_runner.py`` as a child process that is SIGKILLed (with its
whole process group: JVM and Python workers too) at chosen points — while a Spark job
reads the first batch, while a batch's outputs are being written, after a batch's
processing time is journaled but before its state is committed, after the last batch's
function returned but before Spark logged it (the crash matrix, test_crash_matrix.py,
kills at every other step) — then restarted (a child again, then in this process) until
the input is consumed. Restarts are given a clock that is an hour off for every batch
already journaled: a replayed batch must take its journaled time, so the outputs can
only match if it does.

The two kills timed from outside (a watcher sees the files appear) and the crash
matrix's first and last points for this job (the child kills itself there: ``--kill-at``)
are one chain, so the job's uninterrupted reference run is made once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparktide.spark import run_job
from sparktide.time import format_instant
from tests.spark.restart_runner import CASES, FILES, SILENT, poisoned, run_case, write_input
from tests.spark.streams import clock, file_batches, job_for

RUNNER = Path(__file__).with_name("restart_runner.py")
ROOT = RUNNER.parents[2]
TIMEOUT = 600.0  # seconds per child run (generous: the machine may be busy)


# ---------------------------------------------------------------------- directory probes
class Probe:
    """What a job directory holds right now (checkpoint and outputs)."""

    def __init__(self, jobdir: Path) -> None:
        self.out = jobdir / "out"
        self.tide = self.out / "checkpoint" / "sparktide"
        self.spark = self.out / "checkpoint" / "spark"

    def journaled(self) -> set[int]:
        return _ids(self.tide / "journal", suffix=".json")

    def begun(self) -> set[int]:
        return {i for i in _ids(self.tide / "state") if (self.tide / "state" / str(i)).is_dir()}

    def committed(self) -> set[int]:
        return {i for i in self.begun() if (self.tide / "state" / str(i) / "_COMMITTED").exists()}

    def spark_offsets(self) -> set[int]:
        return _ids(self.spark / "offsets")

    def spark_commits(self) -> set[int]:
        return _ids(self.spark / "commits")

    def output_dirs(self) -> set[str]:
        names: set[str] = set()
        for kind in ("results", "dead_letter"):
            if (self.out / kind).is_dir():
                names |= {p.name for p in (self.out / kind).glob("batch=*")}
        return names

    def describe(self) -> str:
        return (
            f"journal={sorted(self.journaled())} state begun={sorted(self.begun())} "
            f"committed={sorted(self.committed())} spark offsets={sorted(self.spark_offsets())} "
            f"commits={sorted(self.spark_commits())} outputs={sorted(self.output_dirs())}"
        )


def _ids(directory: Path, suffix: str = "") -> set[int]:
    if not directory.is_dir():
        return set()
    out = set()
    for path in directory.iterdir():
        name = path.name[: -len(suffix)] if suffix and path.name.endswith(suffix) else path.name
        if name.isdigit() and (not suffix or path.name.endswith(suffix)):
            out.add(int(name))
    return out


# ---------------------------------------------------------------------- kill points
#: A kill point: what it is, and either a check a watcher polls (the batch it hit, once it
#: holds) or a crash-matrix point ``POINT@BATCH`` where the child kills itself.
KillPoint = tuple[str, Callable[[Probe, set[int]], int | None] | str]


def first_output(probe: Probe, _: set[int]) -> int | None:
    """A ``batch=`` output directory has appeared (its batch is being written)."""
    dirs = probe.output_dirs()
    return int(min(dirs).split("=")[1]) if dirs else None


def journaled_mid_state(at_least: int) -> Callable[[Probe, set[int]], int | None]:
    """A new batch (id ≥ ``at_least``) is journaled and its state is being written."""

    def check(probe: Probe, before: set[int]) -> int | None:
        for b in sorted(probe.journaled() - before):
            if b >= at_least and b in probe.begun() and b not in probe.committed():
                return b
        return None

    return check


#: Per case, the kill points of one chain of runs (each restart resumes the last one).
PLANS: dict[str, list[KillPoint]] = {
    "tumbling": [
        ("a Spark job reads the first batch's input", "reading@0"),
        ("first batch= output directory appears", first_output),
        ("journaled, state being written (batch >= 3)", journaled_mid_state(3)),
        ("the last batch's function returned, Spark has not logged it", "batch_done@5"),
    ],
    # (the job without a window, the sinks and the rest: test_crash_matrix.py)
}


# ---------------------------------------------------------------------- child runs
class Child:
    """``restart_runner.py`` in its own process group, killed when ``kill_at`` holds."""

    def __init__(
        self, jobdir: Path, case: str, run: int, poison: set[int], kill_at: str | None = None
    ) -> None:
        self.log = jobdir / f"run{run}.log"
        command = [sys.executable, str(RUNNER), str(jobdir), case]
        if poison:
            command += ["--poison", ",".join(map(str, sorted(poison)))]
        if kill_at:
            command += ["--kill-at", kill_at]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started = time.monotonic()
        self.killed_at: int | None = None
        self.seconds = 0.0
        self.error: str | None = None
        self._thread: threading.Thread | None = None

    def kill_when(self, probe: Probe, check: Callable[[Probe, set[int]], int | None]) -> None:
        """Watch (in a thread) and SIGKILL the process group as soon as ``check`` holds."""
        before = probe.committed() | probe.journaled()

        def watch() -> None:
            try:
                while time.monotonic() - self.started < TIMEOUT:
                    hit = check(probe, before)
                    if hit is not None:
                        os.killpg(self.proc.pid, signal.SIGKILL)
                        self.proc.wait()
                        self.seconds = time.monotonic() - self.started
                        self.killed_at = hit
                        return
                    if self.proc.poll() is not None:
                        self.error = f"finished (rc={self.proc.returncode}) before the kill point"
                        return
                    time.sleep(0.005)
                self.error = "timed out waiting for the kill point"
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except BaseException as exc:  # pragma: no cover - reported by join()
                self.error = repr(exc)

        self._thread = threading.Thread(target=watch, daemon=True)
        self._thread.start()

    def join(self) -> int:
        """Wait for the kill; the batch id it happened in."""
        assert self._thread is not None
        self._thread.join()
        assert self.error is None, f"{self.error}\n{self.log.read_text()[-3000:]}"
        assert self.killed_at is not None
        return self.killed_at

    def _wait(self) -> int:
        """Wait for the run to end by itself; its return code."""
        try:
            rc = self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise
        self.seconds = time.monotonic() - self.started
        return rc

    def killed_itself(self) -> str:
        """Wait for a run given ``kill_at``; it must have SIGKILLed itself at the point.
        Returns the point's line from its log."""
        rc = self._wait()
        log = self.log.read_text()
        assert rc == -signal.SIGKILL, f"rc={rc}: the kill point was not reached\n{log[-3000:]}"
        return next(line for line in log.splitlines() if line.startswith("KILL POINT"))


# ---------------------------------------------------------------------- comparisons
def batch_outputs(out: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Records per output kind and ``batch=`` directory."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for kind in ("results", "dead_letter"):
        per: dict[str, list[dict[str, Any]]] = {}
        for directory in sorted((out / kind).glob("batch=*")):
            records = []
            for part in sorted(directory.glob("flush=*/*.jsonl")):
                records += [json.loads(x) for x in part.read_text().splitlines() if x.strip()]
            per[directory.name] = records
        found[kind] = per
    return found


def journal(out: Path) -> dict[int, bytes]:
    directory = out / "checkpoint" / "sparktide" / "journal"
    return {int(p.stem): p.read_bytes() for p in directory.glob("*.json") if p.stem.isdigit()}


def metrics(out: Path) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in (out / "metrics").glob("batch=*.jsonl")}


def _key(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True)


# ---------------------------------------------------------------------- the test
#: (release, analytic, apply, apply_release: test_crash_matrix.py)
SEEDS = {
    "tumbling": 11,
    "release": 23,
    "analytic": 31,
    "apply": 41,
    "apply_release": 43,
    "join_window": 47,
}


def _run_here(spark, jobdir: Path, case: str, schedule: Callable[[int], int]) -> float:
    start = time.monotonic()
    job = job_for(jobdir, CASES[case])
    run_job(
        job,
        once=True,
        flush=False,
        spark=spark,
        max_files_per_trigger=1,
        clock=schedule,
        publish=False,
    )
    return time.monotonic() - start


@pytest.mark.jvm(16)  # four child JVMs, three runs here
@pytest.mark.parametrize("case", sorted(PLANS))
def test_killed_and_restarted_run_matches_uninterrupted(spark, tmp_path, case):
    ref_dir, kill_dir, shifted_dir = (tmp_path / n for n in ("reference", "killed", "shifted"))
    for directory in (ref_dir, kill_dir, shifted_dir):
        write_input(directory / "in", seed=SEEDS[case])
    probe = Probe(kill_dir)
    timings: dict[str, float] = {}
    kills: list[dict[str, Any]] = []
    journal_at_kill: dict[int, bytes] = {}

    # Children run one after another; in-process runs overlap them (a child's JVM start).
    for i, (name, point) in enumerate(PLANS[case]):
        kill_at = point if isinstance(point, str) else None
        child = Child(kill_dir, case, i, set(journal_at_kill), kill_at=kill_at)
        if kill_at is None:
            child.kill_when(probe, point)
        if i == 0:
            timings["reference"] = _run_here(spark, ref_dir, case, clock)
        if kill_at is None:
            batch = child.join()
        else:
            name = child.killed_itself()
            batch = int(kill_at.partition("@")[2])
        timings[f"run{i} (killed)"] = child.seconds
        kills.append(
            {
                "at": name,
                "batch": batch,
                "journaled": probe.journaled(),
                "committed": probe.committed(),
                "spark_commits": probe.spark_commits(),
                "state": probe.describe(),
            }
        )
        # From now on every journaled batch is given a time an hour off.
        journal_at_kill.update(journal(kill_dir / "out"))
    # Control: the same run taking the shifted time in a replayed batch whose outputs
    # depend on it (a silent partition's idle estimate moves the watermark).
    replayed = [k["batch"] for k in kills if k["batch"] in SILENT[1]]
    assert replayed, kills
    timings["shifted"] = _run_here(spark, shifted_dir, case, poisoned({replayed[-1]}))
    # The last restart runs to the end in this session (a restart reads the checkpoint
    # only; the second child was already a restart in a new process).
    started = time.monotonic()
    run_case(spark, kill_dir, case, set(journal_at_kill))
    timings[f"run{len(PLANS[case])}"] = time.monotonic() - started
    report = "\n".join(f"  killed in batch {k['batch']} ({k['at']}): {k['state']}" for k in kills)
    print(f"\n{case}:\n{report}\n  seconds: { {k: round(v, 1) for k, v in timings.items()} }")

    # Every kill left its batch journaled and unfinished in Spark: it was replayed.
    for k in kills:
        assert k["batch"] in k["journaled"] and k["batch"] not in k["spark_commits"], report
    ref_out, kill_out = ref_dir / "out", kill_dir / "out"
    # Spark read the same file in the same batch id.
    assert file_batches(str(kill_out / "checkpoint")) == file_batches(str(ref_out / "checkpoint"))
    # Same records in the same batch directories: nothing missing, nothing twice.
    want, got = batch_outputs(ref_out), batch_outputs(kill_out)
    assert sorted(want["results"]) == [f"batch={b:09d}" for b in range(FILES)]
    assert sum(len(r) for r in want["results"].values()) > 20  # a stream worth checking
    assert sum(len(r) for r in want["dead_letter"].values()) > 0
    for kind in ("results", "dead_letter"):
        union = [_key(r) for records in got[kind].values() for r in records]
        assert len(set(union)) == len(union), f"duplicate {kind} records"
        assert sorted(union) == sorted(_key(r) for rs in want[kind].values() for r in rs), report
        assert got[kind] == want[kind], (kind, report)
    # Cumulative counters (from the committed state) count every event once.
    assert metrics(kill_out) == metrics(ref_out)
    # Journal entries written before a kill were kept as they were, and every batch was
    # observed at the scheduled time although the restarts were given shifted ones.
    now = journal(kill_out)
    for b, text in journal_at_kill.items():
        assert now[b] == text, f"journal entry of batch {b} rewritten"
    assert now == journal(ref_out)
    assert {b: json.loads(t)["processing_time"] for b, t in now.items()} == {
        b: clock(b) for b in range(FILES)
    }
    # Control: the shifted time would have shown in the outputs.
    assert batch_outputs(shifted_dir / "out")["results"] != want["results"], report
    for b in range(FILES):  # windows carry their batch's journaled time as emitted_at
        for record in want["results"][f"batch={b:09d}"]:
            assert record.get("emitted_at", format_instant(clock(b))) == format_instant(clock(b))
