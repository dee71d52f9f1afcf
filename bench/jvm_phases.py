"""What the JVM's own threads were doing, by phase: a Java Flight Recorder profile.

This is a measurement, not a test. ``bench/suite_profile.py --phases`` records the
session JVM with JFR (``jcmd <pid> JFR.start``, the JDK's own sampling profiler, which
samples running Java code every few milliseconds without waiting for a safepoint) over
its measured pass, then sorts each execution sample by the innermost of the phases
below found on its stack: a sample inside the analyser that an action's planning
triggered counts as analysis. JIT compiler and garbage collector threads run no Java
code and are not sampled (``suite_profile`` reports their CPU by thread).

The JVM must record deep stacks (Catalyst recurses down plan trees, deeper than JFR's
default 64 frames): :data:`STACK_DEPTH_OPTION` is added to the session JVM's options.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

__all__ = ["PHASES", "STACK_DEPTH_OPTION", "phase_samples", "start_recording", "stop_recording"]

#: The JVM option that keeps 1,024 frames of each sampled stack.
STACK_DEPTH_OPTION = "-XX:FlightRecorderOptions:stackdepth=1024"
#: Phase → names that mark it in a frame (``Class.method``); the innermost frame that
#: holds one decides.
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("analysis", ("Analyzer.execute", "CheckAnalysis", "HybridAnalyzer")),
    (
        "optimisation",
        ("Optimizer", "QueryExecution.optimizedPlan", "QueryExecution.$anonfun$optimizedPlan"),
    ),
    (
        "physical planning",
        (
            "QueryExecution.createSparkPlan",
            "SparkPlanner",
            "QueryExecution$.prepareForExecution",
            "QueryExecution.$anonfun$sparkPlan",
            "QueryExecution.$anonfun$executedPlan",
        ),
    ),
    ("plan text", ("ExplainUtils", "generateTreeString", "treeString")),
    ("SQL text parsing", ("AbstractParser", "SparkSqlParser", "AstBuilder")),
    ("closure cleaning", ("ClosureCleaner",)),
    ("task (de)serialisation", ("JavaSerializer", "ObjectOutputStream", "ObjectInputStream")),
    ("running tasks", ("Executor$TaskRunner",)),
    ("scheduling", ("DAGScheduler", "TaskSchedulerImpl", "TaskSetManager")),
    ("caching", ("CacheManager", "InMemoryRelation")),
    ("listing files", ("InMemoryFileIndex", "FileStreamSource")),
    ("listener bus", ("AsyncEventQueue", "ListenerBus")),
)


def start_recording(jvm: int, path: Path) -> None:
    """Start JFR's ``profile`` recording in JVM ``jvm``, to be written to ``path``."""
    command = ["jcmd", str(jvm), "JFR.start", "name=phases", "settings=profile"]
    subprocess.run([*command, f"filename={path}"], check=True, capture_output=True)


def stop_recording(jvm: int) -> None:
    """Stop the recording (JFR writes its file)."""
    subprocess.run(["jcmd", str(jvm), "JFR.stop", "name=phases"], check=True, capture_output=True)


def _frame(frame: dict) -> str:
    method = frame["method"]
    return f"{method['type']['name'].rsplit('/', 1)[-1]}.{method['name']}"


def phase_of(frames: list[str]) -> str:
    """The phase of a sample whose stack is ``frames`` (``Class.method``, leaf first)."""
    for frame in frames:
        for phase, marks in PHASES:
            if any(mark in frame for mark in marks):
                return phase
    return "other"


def phase_samples(path: Path) -> dict[str, int]:
    """The execution samples of the recording at ``path``, counted by phase (most first)."""
    command = ["jfr", "print", "--json", "--stack-depth", "1024"]
    printed = subprocess.run(
        [*command, "--events", "jdk.ExecutionSample", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    counts: Counter[str] = Counter()
    for event in json.loads(printed)["recording"]["events"]:
        frames = [_frame(f) for f in event["values"]["stackTrace"]["frames"]]
        counts[phase_of(frames)] += 1
    return dict(counts.most_common())
