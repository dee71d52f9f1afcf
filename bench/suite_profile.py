"""Where the Spark tests' time goes: differential cases run as the suite runs them.

This is a measurement, not a test: nothing here asserts on timings.

The suite's session (``tests/spark/conftest.py``: interpreted expressions, the session
JVM's options) runs ``--cases`` of ``tests/spark/test_differential.py`` ``--passes``
times, each case as its test does (its stream, its job, the reference engine's records
checked; all with the session's settings, the ``codegen`` marker's ignored). The first
pass starts in a cold JVM; the last is measured: wall seconds per case, the CPU seconds
of the test's Python process and of the JVM, the JVM's split by thread (the JIT
compilers, the garbage collector, Spark's task threads, and the rest: the driver
threads that analyse, optimise and plan each DataFrame and action, most of them ended
with their query), and the time Spark's analyser and optimiser rules took.

    .venv/bin/python bench/suite_profile.py [--cases a-2,b-1] [--passes 2] [--phases]

prints a table and writes ``bench/results/suite_profile.json``. With ``--phases`` the
measured pass is also recorded by Java Flight Recorder, and the JVM's execution samples
are split by phase (analysis, optimisation, planning, tasks...: ``bench/jvm_phases.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Cases of each kind of plan: session windows, tumbling, substreams, a join, CTIs.
CASES = (
    "merged-accept-session-1",
    "merged-drop-tumbling-2",
    "filter-substreams-session-1",
    "join-devices-2",
    "cti-generated-ahead-drop-1",
    "window-distinct-duplicates-1",
)
#: Thread name (as ``/proc`` shows it, digits folded) → group.
GROUPS = (
    ("C# CompilerThre", "JIT compilers"),
    ("GC Thread#", "garbage collector"),
    ("VM Thread", "garbage collector"),
    ("Executor task i", "task threads"),
)
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(stat: str) -> float:
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def process_cpu(pid: int) -> float:
    """CPU seconds (user and system) of process ``pid`` so far."""
    return _cpu(Path(f"/proc/{pid}/stat").read_text())


def thread_cpu(pid: int) -> dict[str, tuple[str, float]]:
    """Thread id → (name with digits folded to ``#``, CPU seconds) of live threads."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:  # (ended meanwhile)
            continue
        name = re.sub(r"[0-9]+", "#", stat[stat.index("(") + 1 : stat.rindex(")")])
        threads[tid] = (name, _cpu(stat))
    return threads


def run_case(spark, case: str) -> float:
    """Run differential case ``<name>-<files per batch>`` as its test does; seconds."""
    from _pytest.monkeypatch import MonkeyPatch

    from tests.spark import test_differential

    name, files = case.rsplit("-", 1)
    patch = MonkeyPatch()
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as directory:
            test_differential.test_spark_matches_reference(
                spark, Path(directory), patch, name, int(files)
            )
    finally:
        patch.undo()
    return time.perf_counter() - started


def measured_pass(spark, jvm: int, cases: list[str]) -> dict:
    """One pass over ``cases`` with the JVM's and this process's CPU split."""
    rules = spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
    rules.resetMetrics()
    before, jvm_before, py_before = thread_cpu(jvm), process_cpu(jvm), process_cpu(os.getpid())
    seconds = {case: round(run_case(spark, case), 2) for case in cases}
    after, jvm_cpu = thread_cpu(jvm), process_cpu(jvm) - jvm_before
    groups: Counter[str] = Counter()
    for tid, (name, cpu) in after.items():
        group = next((g for prefix, g in GROUPS if name.startswith(prefix)), None)
        if group is not None:
            groups[group] += cpu - before.get(tid, (name, 0.0))[1]
    groups["driver and the rest"] = jvm_cpu - sum(groups.values())
    rule_seconds = float(str(rules.dumpTimeSpent()).split("Total time: ")[1].split()[0])
    return {
        "seconds": seconds,
        "wall": round(sum(seconds.values()), 1),
        "python_cpu": round(process_cpu(os.getpid()) - py_before, 1),
        "jvm_cpu": round(jvm_cpu, 1),
        "jvm_cpu_by_thread": {k: round(v, 1) for k, v in groups.most_common()},
        "analyser_and_optimiser_rules": round(rule_seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "suite_profile.json"))
    parser.add_argument("--phases", action="store_true", help="JFR samples by phase")
    args = parser.parse_args()
    cases = args.cases.split(",")

    import jvm_phases
    from tests.spark import conftest

    if args.phases:
        conftest.SESSION_JVM_OPTIONS += " " + jvm_phases.STACK_DEPTH_OPTION
    spark = conftest.session_jvm_session()
    jvm = int(subprocess.check_output(["pgrep", "-n", "-f", "SparkSubmit"]).split()[0])
    first = {case: round(run_case(spark, case), 2) for case in cases}
    for _ in range(args.passes - 2):
        for case in cases:
            run_case(spark, case)
    last: dict = {}
    with tempfile.TemporaryDirectory() as directory:
        recording = Path(directory) / "pass.jfr"
        if args.phases and args.passes > 1:
            jvm_phases.start_recording(jvm, recording)
        if args.passes > 1:
            last = measured_pass(spark, jvm, cases)
        if args.phases and args.passes > 1:
            jvm_phases.stop_recording(jvm)
            last["jvm_samples_by_phase"] = jvm_phases.phase_samples(recording)
    result = {"cases": cases, "passes": args.passes, "first_pass_seconds": first, "last": last}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'case':34s} {'first pass s':>12s} {'last pass s':>12s}")
    for case in cases:
        print(f"{case:34s} {first[case]:12.1f} {last.get('seconds', {}).get(case, 0):12.1f}")
    if last:
        print(f"last pass: wall {last['wall']} s, Python CPU {last['python_cpu']} s, ", end="")
        print(f"JVM CPU {last['jvm_cpu']} s, of which:")
        for group, cpu in last["jvm_cpu_by_thread"].items():
            print(f"  {group:22s} {cpu:6.1f} s")
        print(f"  (analyser and optimiser rules: {last['analyser_and_optimiser_rules']} s)")
        samples = last.get("jvm_samples_by_phase", {})
        for phase, count in samples.items():
            print(f"  {phase:24s} {100 * count / sum(samples.values()):5.1f}% of JFR samples")
    spark.stop()


if __name__ == "__main__":
    main()
