"""Benchmark: sparktide on Spark against plain Spark Structured Streaming (events/s).

This is a measurement, not a test: nothing here asserts on timings.

One ``local[2]`` SparkSession (shuffle partitions 2) runs every query on the same
generated JSONL telemetry (a directory of ``--files`` files in arrival order; each line
has ``device``, ``event_time`` and ``arrival_time`` as ISO strings, and ``value``; about
5% of events are late by more than 5 s, the rest are 0–2 s behind their arrival):

* **plain**: ``readStream.json`` with an explicit schema → ``withWatermark("event_time",
  "5 seconds")`` → ``groupBy(window(1 minute), device).agg(count, avg)`` → append-mode
  parquet (or ``noop``) sink, available-now trigger;
* **floor**: a batch ``spark.read.json(...).count()`` of the same files (and a batch
  read that parses every column);
* **sparktide merged**: :func:`sparktide.spark.run_job` with Stream Analytics' defaults
  (late 5 s, out-of-order 0 s, early 5 min, adjust) and a 1-minute tumbling window per
  device (``n = count(*)``, ``mean = avg(value)``), one merged timeline;
* **sparktide substreams**: the same with ``over = "device"``;

each with ``maxFilesPerTrigger`` giving 1 micro-batch and ``--batches`` micro-batches,
for every ``--keys`` (number of devices). Each measured run uses fresh output and
checkpoint directories; ``time.perf_counter`` brackets the query only (not data
generation, not result checks).

Then it profiles sparktide's per-batch cost (``--profile-events`` events, 1 batch and
``--batches`` batches): every step of :meth:`SparkEngine.process` is wrapped from here
(engine methods, state-store calls, each ``collect`` and each ``write``); each step runs
under its own Spark job group, so the Spark jobs (and tasks) it started are counted with
``statusTracker().getJobIdsForGroup``. With ``--experiments`` it also measures a few
engine variants patched from here (unsorted outputs in any number of files, no dead
letters).

Results are printed as tables and written as JSON to ``bench/results/spark_vs_plain.json``.

Usage::

    .venv/bin/python bench/spark_vs_plain.py --events 200000          # quick
    .venv/bin/python bench/spark_vs_plain.py                          # 2M events, 10k keys
    .venv/bin/python bench/spark_vs_plain.py --keys 10000 1000000 --batches 10
    .venv/bin/python bench/spark_vs_plain.py --profile-only --experiments
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import glob
import hashlib
import itertools
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
DEFAULT_OUT = ROOT / "results" / "spark_vs_plain.json"

SECOND = 1_000_000
BASE_S = 1_772_366_400  # 2026-03-01T12:00:00Z
LATE_ARRIVAL_S = 5
P_LATE = 0.05

PLAIN_SCHEMA = "device STRING, event_time TIMESTAMP, arrival_time TIMESTAMP, value DOUBLE"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- data
def generate(
    directory: Path,
    *,
    events: int,
    keys: int,
    files: int,
    rate: int,
    seed: int,
    partition_files: bool = False,
) -> dict:
    """Write ``events`` telemetry lines over ``files`` JSONL files in arrival order.

    Arrival times advance by ``1/rate`` s per event; event time is 0–2 s before arrival
    (small disorder), or for ``P_LATE`` of events 6–90 s before (late: more than 5 s).
    By default file k holds the k-th stretch of arrival time (one partition, one
    timeline). With ``partition_files`` each file is one partition of keyed input (a
    device always in partition ``device % files``, as a keyed broker would put it), each
    line naming it in ``"partition"``: the layout whose partitions are the timelines.
    """
    from sparktide.time import format_instant

    def iso(instant: int) -> str | None:  # millisecond precision, like a broker's enqueue
        return format_instant(instant - instant % 1000)

    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    step = SECOND / rate
    per_file = -(-events // files)
    base = BASE_S * SECOND
    late = 0
    width = len(str(keys - 1))
    random_ = rng.random
    randrange = rng.randrange
    written = 0
    by_partition: list[list[str]] = [[] for _ in range(files)]
    for f in range(files):
        lines = []
        for i in range(f * per_file, min(events, (f + 1) * per_file)):
            arrival = base + int(i * step)
            if random_() < P_LATE:
                lag = randrange(6 * SECOND, 90 * SECOND)
                late += 1
            else:
                lag = randrange(0, 2 * SECOND)
            device = randrange(keys)
            value = round(20.0 + 5.0 * random_(), 2)
            partition = f',"partition":{device % files}' if partition_files else ""
            line = (
                f'{{"device":"dev-{device:0{width}d}","event_time":"{iso(arrival - lag)}",'
                f'"arrival_time":"{iso(arrival)}","value":{value}{partition}}}\n'
            )
            (by_partition[device % files] if partition_files else lines).append(line)
        if not partition_files:
            (directory / f"part-{f:05d}.jsonl").write_text("".join(lines))
            written += len(lines)
    if partition_files:
        for f, lines in enumerate(by_partition):
            (directory / f"part-{f:05d}.jsonl").write_text("".join(lines))
            written += len(lines)
    size = sum(p.stat().st_size for p in directory.iterdir())
    return {
        "events": written,
        "keys": keys,
        "files": files,
        "layout": "partition per file" if partition_files else "time stretch per file",
        "late": late,
        "rate_per_s": rate,
        "span_s": events / rate,
        "mb": round(size / 1e6, 1),
    }


def to_parquet(jsonl: Path, directory: Path) -> Path:
    """The same events as Parquet, one file per JSONL file (times as UTC timestamps)."""
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    schema = pa.schema(
        [
            ("device", pa.string()),
            ("event_time", pa.timestamp("us", tz="UTC")),
            ("arrival_time", pa.timestamp("us", tz="UTC")),
            ("value", pa.float64()),
        ]
    )
    for path in sorted(jsonl.glob("*.jsonl")):
        table = pj.read_json(path, parse_options=pj.ParseOptions(explicit_schema=schema))
        pq.write_table(table, directory / (path.stem + ".parquet"))
    return directory


# ---------------------------------------------------------------------- session
def job_bench_arguments(description: str, argv: list[str] | None) -> argparse.Namespace:
    """The arguments of a benchmark of one sparktide job against the plain query
    (``bench/analytic.py``, ``bench/match.py``): the data's size and the runs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    return parser.parse_args(argv)


def job_bench_data(args: argparse.Namespace, root: Path) -> tuple[Path, Any]:
    """The generated data (``root/data``, one file per batch) of such a benchmark, and
    its session."""
    data = root / "data"
    generate(data, events=args.events, keys=args.keys, files=args.batches, rate=10_000, seed=7)
    return data, session(args.cores)


def timed_job(spark: Any, job: Any, per_trigger: int = 1) -> dict:
    """One available-now run of ``job`` without a flush (``per_trigger`` files per
    micro-batch), after a garbage collection: its seconds, and the records it wrote
    (``released``) and read."""
    from sparktide.spark import run_job

    jvm_gc(spark)
    start = time.perf_counter()
    metrics = run_job(
        job, once=True, flush=False, spark=spark, max_files_per_trigger=per_trigger, publish=False
    )
    seconds = time.perf_counter() - start
    assert metrics is not None
    return {"seconds": seconds, "released": metrics["released"], "input": metrics["input"]}


def session(cores: int) -> Any:
    from sparktide.spark import local_session

    # keep every job in the status store: the benchmark counts the jobs of each run
    keep = {k: "100000" for k in ("spark.ui.retainedJobs", "spark.ui.retainedStages")}
    spark = local_session(cores, conf={**keep, "spark.sql.ui.retainedExecutions": "100000"})
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master") == f"local[{cores}]", conf.get("spark.master")
    assert spark.conf.get("spark.sql.shuffle.partitions") == str(cores)
    return spark


def jvm_gc(spark: Any) -> None:
    gc.collect()
    with contextlib.suppress(Exception):
        spark.sparkContext._jvm.System.gc()


def jobs_of_group(spark: Any, group: str) -> list[int]:
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def tasks_of_jobs(spark: Any, jobs: list[int]) -> tuple[int, int]:
    """(stages that ran tasks, tasks completed) over ``jobs``."""
    tracker = spark.sparkContext.statusTracker()
    stages = tasks = 0
    for job in jobs:
        info = tracker.getJobInfo(job)
        if info is None:
            continue
        for stage in info.stageIds:
            s = tracker.getStageInfo(stage)
            if s is not None and s.numCompletedTasks > 0:
                stages += 1
                tasks += s.numCompletedTasks
    return stages, tasks


# ---------------------------------------------------------------------- (a) plain Spark
def run_plain(
    spark: Any, data: Path, work: Path, per_trigger: int, sink: str, fmt: str = "jsonl"
) -> dict:
    from pyspark.sql import functions as F

    out, checkpoint = work / "out", work / "checkpoint"
    reader = spark.readStream.schema(PLAIN_SCHEMA).option("maxFilesPerTrigger", str(per_trigger))
    frame = reader.parquet(str(data)) if fmt == "parquet" else reader.json(str(data))
    windows = (
        frame.withWatermark("event_time", "5 seconds")
        .groupBy(F.window("event_time", "1 minute"), "device")
        .agg(F.count("*").alias("n"), F.avg("value").alias("mean"))
    )
    writer = (
        windows.writeStream.outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
    )
    writer = writer.format("noop") if sink == "noop" else writer.format("parquet")
    if sink != "noop":
        writer = writer.option("path", str(out))
    jvm_gc(spark)
    start = time.perf_counter()
    query = writer.start()
    query.awaitTermination()
    seconds = time.perf_counter() - start
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    progress = query.recentProgress
    jobs = jobs_of_group(spark, str(query.runId))
    check: dict[str, Any] = {
        "batches": len(progress),
        "data_batches": sum(1 for p in progress if p["numInputRows"] > 0),
        "input_rows": sum(p["numInputRows"] for p in progress),
        "dropped_by_watermark": sum(
            op.get("numRowsDroppedByWatermark", 0)
            for p in progress
            for op in p.get("stateOperators", [])
        ),
        "state_rows_end": sum(
            op.get("numRowsTotal", 0) for op in (progress[-1].get("stateOperators", []))
        )
        if progress
        else None,
    }
    if sink != "noop":
        row = spark.read.parquet(str(out)).agg(F.count("*"), F.sum("n")).first()
        check["windows_emitted"] = row[0]
        check["events_in_emitted_windows"] = row[1]
    return {"seconds": seconds, "jobs": len(jobs), "check": check}


# ---------------------------------------------------------------------- (b) floor
def run_floor(spark: Any, data: Path) -> dict:
    from pyspark.sql import functions as F

    jvm_gc(spark)
    start = time.perf_counter()
    n = spark.read.schema(PLAIN_SCHEMA).json(str(data)).count()
    count_s = time.perf_counter() - start
    jvm_gc(spark)
    start = time.perf_counter()
    row = (
        spark.read.schema(PLAIN_SCHEMA)
        .json(str(data))
        .agg(F.count("event_time"), F.count("arrival_time"), F.count("device"), F.sum("value"))
        .first()
    )
    parse_s = time.perf_counter() - start
    return {
        "count_seconds": count_s,
        "count": n,
        "parse_seconds": parse_s,
        "parsed_event_times": row[0],
    }


# ---------------------------------------------------------------------- (c, d) sparktide
def sparktide_job(
    data: Path,
    work: Path,
    *,
    substreams: bool,
    source_extra: dict[str, Any] | None = None,
    fmt: str = "jsonl",
) -> Any:
    """Stream Analytics defaults and a 1-minute tumbling count/avg per device; the soak
    adds its partition column (``source_extra``)."""
    from sparktide.job import Job

    source: dict[str, Any] = {
        "format": fmt,
        "path": str(data),
        "timestamp_by": "event_time",
        "arrival_time": "arrival_time",
        **(source_extra or {}),
    }
    if substreams:
        source["over"] = "device"
    return Job.from_dict(
        {
            "source": source,
            "ordering": {
                "early_arrival": "5m",
                "late_arrival": "5s",
                "out_of_order": "0s",
                "action": "adjust",
            },
            "window": {
                "type": "tumbling",
                "size": "1m",
                "group_by": ["device"],
                "aggregates": {"n": "count(*)", "mean": "avg(value)"},
            },
            "output": {
                "path": "out/results",
                "dead_letter": "out/dead_letter",
                "metrics": "out/metrics",
                "checkpoint": "out/checkpoint",
            },
        },
        base_dir=work,
    )


@contextlib.contextmanager
def capture_queries() -> Iterator[list[Any]]:
    """The StreamingQuery objects that ``run_job`` starts (to read their run ids)."""
    import sparktide.spark.run as run_module

    original = run_module.start
    queries: list[Any] = []

    def start(*args: Any, **kwargs: Any) -> Any:
        query = original(*args, **kwargs)
        queries.append(query)
        return query

    run_module.start = start
    try:
        yield queries
    finally:
        run_module.start = original


def run_sparktide(
    spark: Any,
    data: Path,
    work: Path,
    per_trigger: int,
    *,
    substreams: bool,
    fmt: str = "jsonl",
    source_extra: dict[str, Any] | None = None,
) -> dict:
    from sparktide.spark import run_job

    job = sparktide_job(data, work, substreams=substreams, fmt=fmt, source_extra=source_extra)
    jvm_gc(spark)
    with capture_queries() as queries:
        start = time.perf_counter()
        metrics = run_job(
            job,
            once=True,
            flush=False,
            spark=spark,
            max_files_per_trigger=per_trigger,
            publish=False,  # the metrics publisher runs after the job: not the engine
        )
        seconds = time.perf_counter() - start
    jobs = jobs_of_group(spark, str(queries[0].runId)) if queries else []
    return {"seconds": seconds, "jobs": len(jobs), "check": sparktide_check(job, metrics)}


def sparktide_check(job: Any, metrics: dict | None) -> dict:
    out = job.output
    windows = events = 0
    for path in glob.glob(f"{out.path}/batch=*/flush=*/*.jsonl"):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    windows += 1
                    events += json.loads(line)["n"]
    dead = sum(
        1
        for path in glob.glob(f"{out.dead_letter}/batch=*/flush=*/*.jsonl")
        for line in open(path, encoding="utf-8")
        if line.strip()
    )
    m = metrics or {}
    return {
        "batches": len(glob.glob(f"{out.metrics}/batch=*.jsonl")),
        "input": m.get("input"),
        "admitted": m.get("admitted"),
        "late": m.get("late"),
        "out_of_order": m.get("out_of_order"),
        "adjusted": m.get("adjusted"),
        "dropped": m.get("dropped"),
        "dead_lettered": m.get("dead_lettered"),
        "dead_letter_lines": dead,
        "windows_emitted": windows,
        "events_in_emitted_windows": events,
    }


# ---------------------------------------------------------------------- profiling
_GROUPS = itertools.count(1)  # job group ids, unique over the whole process
_JOB_PROPS = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


class Tracer:
    """Times nested steps; each step's Spark jobs run under its own job group."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        self.stack: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self.batch: Any = None
        self.collects = 0

    @contextlib.contextmanager
    def step(self, label: str, scans: dict[str, int] | None = None) -> Iterator[None]:
        sc = self.sc
        previous = {key: sc.getLocalProperty(key) for key in _JOB_PROPS}
        group = f"bench-step-{next(_GROUPS)}"
        sc.setJobGroup(group, label)
        frame = {"label": label, "children": 0.0}
        self.stack.append(frame)
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds = time.perf_counter() - start
            path = " / ".join(f["label"] for f in self.stack)
            self.stack.pop()
            for key, value in previous.items():
                sc.setLocalProperty(key, value)
            if self.stack:
                self.stack[-1]["children"] += seconds
            self.records.append(
                {
                    "batch": self.batch,
                    "path": path,
                    "depth": len(self.stack),
                    "seconds": seconds,
                    "exclusive": seconds - frame["children"],
                    "group": group,
                    **({"scans": scans} if scans is not None else {}),
                }
            )

    def resolve_jobs(self) -> None:
        """Fill in each step's own jobs and tasks (after the listener bus caught up)."""
        time.sleep(1.0)
        for record in self.records:
            jobs = jobs_of_group(self.spark, record.pop("group"))
            record["jobs"] = len(jobs)
            record["stages"], record["tasks"] = tasks_of_jobs(self.spark, jobs)


@contextlib.contextmanager
def patched(patches: list[tuple[Any, str, Callable[[Callable[..., Any]], Callable[..., Any]]]]):
    """Replace ``owner.name`` by ``make(original)`` for each patch, then restore."""
    saved = []
    try:
        for owner, name, make in patches:
            original = owner.__dict__.get(name, getattr(owner, name))
            saved.append((owner, name, original))
            setattr(owner, name, make(getattr(owner, name)))
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def plan_scans(frame: Any) -> dict[str, int]:
    """What the physical plan of ``frame`` reads and shuffles (counted in its text)."""
    try:
        plan = frame._jdf.queryExecution().executedPlan().toString()
    except Exception:  # diagnostics only
        return {}
    return {
        # foreachBatch hands over the micro-batch as a LogicalRDD: "Scan ExistingRDD"
        "source_scans": plan.count("ExistingRDD"),
        "file_scans": plan.count("FileScan "),
        "cached_scans": plan.count("InMemoryTableScan"),
        "exchanges": plan.count("Exchange "),
        "sorts": plan.count("Sort ["),
        "windows": plan.count("Window ["),
    }


def tracing_patches(spark: Any, tracer: Tracer) -> tuple[list[Any], list[str]]:
    """Wrappers for every step of ``SparkEngine.process`` that exists in this version."""
    import sparktide.spark.engine as engine_module
    import sparktide.spark.judging as judging_module
    import sparktide.spark.policy as policy_module
    from sparktide.spark.engine import SparkEngine
    from sparktide.spark.state import StateStore

    frame = spark.range(1)
    DataFrame = type(frame)  # the classic DataFrame class
    Writer = type(frame.write)

    def step(
        label: str | Callable[..., str], frame_of: Callable[..., Any] | None = None
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                name = label(*args, **kwargs) if callable(label) else label
                scans = plan_scans(frame_of(*args)) if frame_of is not None else None
                with tracer.step(name, scans):
                    return original(*args, **kwargs)

            return wrapper

        return make

    def process(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, lines: Any, batch_id: int, *args: Any, **kwargs: Any) -> Any:
            tracer.batch = ("flush-" if kwargs.get("flush") else "") + str(batch_id)
            tracer.collects = 0
            with tracer.step("process"):
                return original(self, lines, batch_id, *args, **kwargs)

        return wrapper

    def collect_label(*_: Any) -> str:
        caller = sys._getframe(2).f_code.co_name
        if caller == "process":
            tracer.collects += 1
            names = {1: "collect: batch stats", 2: "collect: summary counters"}
            return names.get(tracer.collects, f"collect #{tracer.collects} in process")
        return f"collect in {caller}"

    def write_label(kind: str) -> Callable[..., str]:
        def label(_writer: Any, path: str, *args: Any, **kwargs: Any) -> str:
            parts = Path(str(path)).parts
            where = parts[-1] if kind == "parquet" else parts[-2]
            return f"write {kind}: {where}"

        return label

    patches: list[Any] = [
        (SparkEngine, "process", process),
        (DataFrame, "collect", step(collect_label, lambda df, *_: df)),
        (Writer, "text", step(write_label("text"), lambda w, *_, **__: w._df)),
        (Writer, "parquet", step(write_label("parquet"), lambda w, *_, **__: w._df)),
    ]
    missing = []
    # (each stage where the pipeline looks it up: the module that calls it)
    stages = (
        (policy_module, "judged_rows"),
        (judging_module, "next_keys"),
        (judging_module, "assign_windows"),
        (engine_module, "write_dead_letters"),
        (engine_module, "fold_windows"),
        (engine_module, "release"),
        (engine_module, "write_keys"),
        (engine_module, "metrics_record"),
        (engine_module, "write_metrics"),
    )
    for owner, name in stages:
        if hasattr(owner, name):
            patches.append((owner, name, step(name)))
        else:
            missing.append(f"{owner.__name__}.{name}")
    for name in ("processing_time", "load_clock", "load_table", "begin", "commit"):
        if hasattr(StateStore, name):
            patches.append((StateStore, name, step(f"state.{name}")))
        else:
            missing.append(f"StateStore.{name}")
    if hasattr(judging_module, "parse_lines"):
        patches.append((judging_module, "parse_lines", step("parse_lines (plan)")))
    return patches, missing


def experiment_patches(spark: Any, name: str) -> list[Any]:
    """Engine variants patched from here, to estimate what a change would gain."""

    import sparktide.spark.engine as engine_module
    import sparktide.spark.outputs.deadletters as deadletters_module
    import sparktide.spark.outputs.join as join_module
    import sparktide.spark.outputs.records as records_module
    import sparktide.spark.outputs.release as release_module

    if name == "baseline":
        return []
    if name == "no_coalesce":

        def write_text(original: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(batch: Any, frame: Any, directory: str | None, *_: Any) -> None:
                if directory is None:
                    return
                frame.select("value").write.mode("overwrite").text(f"{directory}/{batch.label}")

            return wrapper

        writers = (deadletters_module, join_module, records_module, release_module)
        return [(module, "write_text", write_text) for module in writers]
    if name == "no_dead_letters":

        def dead(original: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> None:
                return None

            return wrapper

        return [(engine_module, "write_dead_letters", dead)]
    raise ValueError(name)


EXPERIMENTS = ("baseline", "no_coalesce", "no_dead_letters")


def profile_run(
    spark: Any, data: Path, work: Path, per_trigger: int, *, substreams: bool, events: int
) -> dict:
    """One traced sparktide run: per-step times and job counts."""
    from sparktide.spark import run_job

    tracer = Tracer(spark)
    patches, missing = tracing_patches(spark, tracer)
    job = sparktide_job(data, work, substreams=substreams)
    jvm_gc(spark)
    with patched(patches), capture_queries() as queries:
        start = time.perf_counter()
        metrics = run_job(
            job, once=True, spark=spark, max_files_per_trigger=per_trigger, publish=False
        )
        seconds = time.perf_counter() - start
    tracer.resolve_jobs()
    run_group = jobs_of_group(spark, str(queries[0].runId)) if queries else []
    batches = sorted({r["batch"] for r in tracer.records}, key=str)
    process_s = sum(r["seconds"] for r in tracer.records if r["path"] == "process")
    steps: dict[str, dict[str, Any]] = {}
    for record in tracer.records:
        entry = steps.setdefault(
            record["path"],
            {
                "depth": record["depth"],
                "calls": 0,
                "seconds": 0.0,
                "exclusive": 0.0,
                "jobs": 0,
                "stages": 0,
                "tasks": 0,
            },
        )
        entry["calls"] += 1
        for key in ("seconds", "exclusive", "jobs", "stages", "tasks"):
            entry[key] += record[key]
        for key, value in record.get("scans", {}).items():
            entry.setdefault("plan", {}).setdefault(key, 0)
            entry["plan"][key] += value
    nb = max(1, len(batches))
    return {
        "mode": "substreams" if substreams else "merged",
        "events": events,
        "batches": len(batches),
        "seconds": seconds,
        "events_per_s": events / seconds,
        "process_seconds": process_s,
        "outside_process_seconds": seconds - process_s,
        "jobs_total": sum(r["jobs"] for r in tracer.records) + len(run_group),
        "jobs_per_batch": (sum(r["jobs"] for r in tracer.records) + len(run_group)) / nb,
        "jobs_outside_steps": len(run_group),
        "missing_hooks": missing,
        "metrics_admitted": (metrics or {}).get("admitted"),
        "steps": steps,
        "per_batch": [
            {
                "batch": b,
                "seconds": sum(
                    r["seconds"]
                    for r in tracer.records
                    if r["batch"] == b and r["path"] == "process"
                ),
                "jobs": sum(r["jobs"] for r in tracer.records if r["batch"] == b),
            }
            for b in batches
        ],
    }


def print_profile(profile: dict, out: Any = sys.stdout) -> None:
    nb = max(1, profile["batches"])
    total = profile["seconds"]
    print(
        f"\nsparktide {profile['mode']}, {profile['events']:,} events, {profile['batches']} "
        f"batch(es): {total:.2f} s ({profile['events_per_s']:,.0f} ev/s); "
        f"process {profile['process_seconds']:.2f} s, outside process (streaming + "
        f"foreachBatch) {profile['outside_process_seconds']:.2f} s; "
        f"{profile['jobs_per_batch']:.1f} Spark jobs per batch",
        file=out,
    )
    header = (
        f"  {'step (nested: exclusive time excludes sub-steps)':<62} {'calls':>5} {'incl s':>7} "
        f"{'excl s':>7} {'excl/batch':>10} {'% query':>7} {'jobs':>5} {'tasks':>5}  "
        "plan per call: source/parquet/cached scans/exchanges/sorts/windows"
    )
    print(header, file=out)
    for path, s in profile["steps"].items():
        name = "  " * s["depth"] + path.rsplit(" / ", 1)[-1]
        print(
            f"  {name:<62} {s['calls']:>5} {s['seconds']:>7.2f} {s['exclusive']:>7.2f} "
            f"{s['exclusive'] / nb:>10.3f} {100 * s['exclusive'] / total:>6.1f}% "
            f"{s['jobs']:>5} {s['tasks']:>5}  {_plan_text(s.get('plan'), s['calls'])}",
            file=out,
        )
    print(
        f"  {'(outside process: streaming machinery, file listing, commit)':<62} {'':>5} "
        f"{profile['outside_process_seconds']:>7.2f} {profile['outside_process_seconds']:>7.2f} "
        f"{profile['outside_process_seconds'] / nb:>10.3f} "
        f"{100 * profile['outside_process_seconds'] / total:>6.1f}% "
        f"{profile['jobs_outside_steps']:>5}",
        file=out,
    )


def _plan_text(plan: dict[str, int] | None, calls: int) -> str:
    if not plan:
        return ""
    keys = ("source_scans", "file_scans", "cached_scans", "exchanges", "sorts", "windows")
    return "/".join(f"{plan.get(k, 0) / calls:g}" for k in keys)


# ---------------------------------------------------------------------- reporting
def print_table(rows: list[dict], out: Any = sys.stdout) -> None:
    header = (
        f"{'keys':>9} {'batches':>7} {'query':<32} {'seconds':>8} {'events/s':>10} "
        f"{'vs plain':>8} {'jobs':>5} {'windows out':>11}"
    )
    print(header, file=out)
    print("-" * len(header), file=out)
    for row in rows:
        ratio = f"{row['ratio_vs_plain']:.2f}x" if row.get("ratio_vs_plain") else ""
        windows = row.get("check", {}).get("windows_emitted", "")
        jobs = row.get("jobs", "")
        print(
            f"{row['keys']:>9,} {row.get('batches', ''):>7} {row['query']:<32} "
            f"{row['seconds']:>8.2f} {row['events_per_s']:>10,.0f} {ratio:>8} {jobs:>5} "
            f"{windows:>11}",
            file=out,
        )
    print_ratios(rows, out)


def ratio_summary(rows: list[dict]) -> list[dict]:
    """Per configuration (devices, batches, query), the ratios to plain Spark of its
    repeats: median, lowest, highest (one run on a busy machine moves by a third)."""
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        if row.get("ratio_vs_plain"):
            key = (row["keys"], row["batches"], row["query"])
            groups.setdefault(key, []).append(row["ratio_vs_plain"])
    return [
        {
            "keys": keys,
            "batches": batches,
            "query": query,
            "runs": len(ratios),
            "median": statistics.median(ratios),
            "low": min(ratios),
            "high": max(ratios),
        }
        for (keys, batches, query), ratios in groups.items()
    ]


def print_ratios(rows: list[dict], out: Any = sys.stdout) -> None:
    summary = ratio_summary(rows)
    if not any(entry["runs"] > 1 for entry in summary):
        return
    print("\nratio to plain Spark per configuration: median (lowest - highest)", file=out)
    for entry in summary:
        print(
            f"{entry['keys']:>9,} {entry['batches']:>7} {entry['query']:<32} "
            f"{entry['median']:>5.2f}x ({entry['low']:.2f} - {entry['high']:.2f}, "
            f"{entry['runs']} runs)",
            file=out,
        )


def _git() -> dict[str, Any]:
    def run(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        rev = run("rev-parse", "--short", "HEAD")
        dirty = run("status", "--porcelain", "--", "src")
    except (OSError, subprocess.CalledProcessError):
        return {}
    engine = REPO / "src" / "sparktide" / "spark" / "engine.py"
    return {
        "commit": rev,
        "src_dirty": bool(dirty),
        "engine_py_sha1": hashlib.sha1(engine.read_bytes()).hexdigest()[:12],
    }


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2_000_000, help="events (2,000,000)")
    parser.add_argument("--keys", type=int, nargs="+", default=[10_000], help="devices (10000)")
    parser.add_argument("--batches", type=int, default=10, help="the many-batch run (10)")
    parser.add_argument("--files", type=int, default=20, help="input files (20)")
    parser.add_argument("--rate", type=int, default=10_000, help="events per s of arrival")
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration (1)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--plain-sink", choices=("parquet", "noop"), default="parquet")
    parser.add_argument(
        "--formats",
        nargs="+",
        choices=("jsonl", "parquet"),
        default=["jsonl"],
        help="input formats (jsonl; parquet: the same events converted)",
    )
    parser.add_argument(
        "--layout",
        choices=("time", "partition"),
        default="time",
        help="time: file k holds the k-th stretch of arrival time (one timeline); "
        "partition: each file is one partition of keyed input (partitions are timelines)",
    )
    parser.add_argument("--profile-events", type=int, default=200_000)
    parser.add_argument("--no-profile", action="store_true", help="skip the per-step profile")
    parser.add_argument(
        "--shape-warmup",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run each side once, unrecorded, on each data set and format before measuring",
    )
    parser.add_argument("--profile-only", action="store_true", help="only the profile")
    parser.add_argument(
        "--experiments",
        action="store_true",
        help="also time engine variants patched from here, at --profile-events",
    )
    parser.add_argument("--work", type=Path, default=None, help="scratch directory (temp)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    args = parser.parse_args(argv)
    if args.files % args.batches:
        parser.error("--files must be a multiple of --batches")

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = args.work or Path(tempfile.mkdtemp(prefix="sparktide-spark-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    report: dict[str, Any] = {
        "benchmark": "spark_vs_plain",
        "events": args.events,
        "keys": args.keys,
        "files": args.files,
        "batchings": [1, args.batches],
        "rate_per_s": args.rate,
        "late_fraction": P_LATE,
        "plain_sink": args.plain_sink,
        "formats": args.formats,
        "layout": args.layout,
        "cores": args.cores,
        "shuffle_partitions": args.cores,
        "sparktide": _git(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    runs: list[dict] = []
    counter = [0]

    def fresh() -> Path:
        counter[0] += 1
        path = work / "runs" / f"run-{counter[0]:03d}"
        path.mkdir(parents=True)
        return path

    try:
        start = time.perf_counter()
        spark = session(args.cores)
        report["session_seconds"] = time.perf_counter() - start
        import pyspark

        report["pyspark"] = pyspark.__version__
        log(f"session up in {report['session_seconds']:.1f} s; work dir {work}")

        # warm-up (not recorded): the first batch job and the first streaming query are
        # slow, and so is the first run over files of the measured size and layout (the
        # JVM's compiled paths, the Python workers' memory): each side runs once on a
        # fifth of the events, in the measured layout and formats
        warm = work / "data-warmup"
        generate(
            warm,
            events=max(args.events // 5, 20_000),
            keys=1_000,
            files=args.files,
            rate=args.rate,
            seed=1,
            partition_files=args.layout == "partition",
        )
        run_floor(spark, warm)
        warm_inputs = {"jsonl": warm}
        if "parquet" in args.formats:
            warm_inputs["parquet"] = to_parquet(warm, work / "data-warmup-parquet")
        extra = {"partition": "partition"} if args.layout == "partition" else None

        def warm_up(data: Path, fmt: str) -> None:
            """Each side once over ``data``, one batch, not recorded."""
            run_plain(spark, data, fresh(), args.files, args.plain_sink, fmt)
            for substreams in (False, True):
                run_sparktide(
                    spark,
                    data,
                    fresh(),
                    args.files,
                    substreams=substreams,
                    fmt=fmt,
                    source_extra=extra,
                )
            shutil.rmtree(work / "runs", ignore_errors=True)

        for fmt in args.formats:
            warm_up(warm_inputs[fmt], fmt)
        log("warm-up done")

        if not args.profile_only:
            for keys in args.keys:
                data = work / f"data-{args.events}-{keys}"
                t0 = time.perf_counter()
                info = generate(
                    data,
                    events=args.events,
                    keys=keys,
                    files=args.files,
                    rate=args.rate,
                    seed=args.seed,
                    partition_files=args.layout == "partition",
                )
                log(f"data {keys:,} keys: {info} in {time.perf_counter() - t0:.1f} s")
                report.setdefault("data", []).append(info)
                floor = run_floor(spark, data)
                runs.append(
                    {
                        "keys": keys,
                        "batches": "",
                        "query": "floor: batch count",
                        "seconds": floor["count_seconds"],
                        "events_per_s": args.events / floor["count_seconds"],
                        "check": {"count": floor["count"]},
                    }
                )
                runs.append(
                    {
                        "keys": keys,
                        "batches": "",
                        "query": "floor: batch parse all",
                        "seconds": floor["parse_seconds"],
                        "events_per_s": args.events / floor["parse_seconds"],
                        "check": {"parsed_event_times": floor["parsed_event_times"]},
                    }
                )
                log(f"  floor: {floor}")
                inputs = {"jsonl": data}
                if "parquet" in args.formats:
                    inputs["parquet"] = to_parquet(data, work / f"{data.name}-parquet")
                # (with a partition per file, a micro-batch of some files would hold some
                # partitions' whole history and nothing of the others: one batch only)
                batchings = (1,) if args.layout == "partition" else (1, args.batches)
                for fmt in args.formats if args.shape_warmup else ():
                    # the first run over these files carries the memory the processes
                    # first take for this many keys: 0.5-1 s more, either side
                    warm_up(inputs[fmt], fmt)
                    log(f"  {keys:,} keys, {fmt}: warmed up")
                for fmt, batches in itertools.product(args.formats, batchings):
                    per_trigger = args.files // batches
                    for rep in range(args.repeat):
                        plain_eps = None
                        for name in ("plain", "sparktide merged", "sparktide substreams"):
                            query = name if fmt == "jsonl" else f"{name} ({fmt})"
                            if name == "plain":
                                result = run_plain(
                                    spark, inputs[fmt], fresh(), per_trigger, args.plain_sink, fmt
                                )
                            else:
                                result = run_sparktide(
                                    spark,
                                    inputs[fmt],
                                    fresh(),
                                    per_trigger,
                                    substreams=name.endswith("substreams"),
                                    fmt=fmt,
                                    source_extra=extra,
                                )
                            eps = args.events / result["seconds"]
                            row = {
                                "keys": keys,
                                "batches": batches,
                                "repeat": rep,
                                "query": query,
                                "events_per_s": eps,
                                **result,
                            }
                            if name == "plain":
                                plain_eps = eps
                            elif plain_eps:
                                row["ratio_vs_plain"] = eps / plain_eps
                            runs.append(row)
                            log(
                                f"  {keys:,} keys, {batches} batch(es), {query}: "
                                f"{result['seconds']:.1f} s, {eps:,.0f} ev/s, "
                                f"{result['jobs']} jobs; {result['check']}"
                            )
                            shutil.rmtree(work / "runs", ignore_errors=True)
                            report["results"] = runs
                            _write(args.out, report, load_before)
                for path in inputs.values():
                    shutil.rmtree(path, ignore_errors=True)
            report["ratios"] = ratio_summary(runs)
            print_table(runs)

        if not args.no_profile:
            n = args.profile_events
            keys = args.keys[0]
            data = work / f"data-{n}-{keys}"
            info = generate(
                data, events=n, keys=keys, files=args.files, rate=args.rate, seed=args.seed
            )
            log(f"profile data: {info}")
            profiles = []
            for substreams in (False, True):
                for batches in (1, args.batches):
                    profile = profile_run(
                        spark,
                        data,
                        fresh(),
                        args.files // batches,
                        substreams=substreams,
                        events=n,
                    )
                    profile["keys"] = keys
                    profiles.append(profile)
                    print_profile(profile)
                    shutil.rmtree(work / "runs", ignore_errors=True)
            report["profile"] = profiles
            _write(args.out, report, load_before)
            if args.experiments:
                rows = []
                for batches in (1, args.batches):
                    for substreams in (False, True):
                        base = None
                        for name in EXPERIMENTS:
                            with patched(experiment_patches(spark, name)):
                                result = run_sparktide(
                                    spark,
                                    data,
                                    fresh(),
                                    args.files // batches,
                                    substreams=substreams,
                                )
                            shutil.rmtree(work / "runs", ignore_errors=True)
                            row = {
                                "variant": name,
                                "mode": "substreams" if substreams else "merged",
                                "batches": batches,
                                "events": n,
                                "seconds": result["seconds"],
                                "events_per_s": n / result["seconds"],
                                "jobs": result["jobs"],
                                "windows_emitted": result["check"]["windows_emitted"],
                            }
                            base = base or result["seconds"]
                            row["gain_vs_baseline"] = 1 - result["seconds"] / base
                            rows.append(row)
                            log(
                                f"  experiment {name} {row['mode']} {batches} batch(es): "
                                f"{row['seconds']:.2f} s ({row['gain_vs_baseline']:+.0%}), "
                                f"{row['jobs']} jobs, windows {row['windows_emitted']}"
                            )
                report["experiments"] = rows
                print("\nexperiments (engine variants patched from the bench script)")
                for row in rows:
                    print(
                        f"  {row['mode']:<11} {row['batches']:>2} batch(es) {row['variant']:<16} "
                        f"{row['seconds']:>6.2f} s {row['events_per_s']:>9,.0f} ev/s "
                        f"{row['gain_vs_baseline']:>+6.0%} time saved  {row['jobs']:>4} jobs"
                    )
            shutil.rmtree(data, ignore_errors=True)
        _write(args.out, report, load_before)
        log(f"wrote {args.out}")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def _write(path: Path, report: dict, load_before: tuple[float, float, float]) -> None:
    report["load_average_before_after"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
    write_json(path, report)


def write_json(path: Path, report: dict[str, Any]) -> None:
    """Write a benchmark's report as indented JSON (creating its directory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")


def finish_report(path: Path, report: dict[str, Any], show: Callable[[dict], None]) -> None:
    """Record the load average after a benchmark, write its report and print it."""
    report["load_average_after"] = round(os.getloadavg()[0], 2)
    write_json(path, report)
    show(report)
    log(f"wrote {path}")


#: The settings of :func:`sparktide_job` as the reports of the benchmarks using it say them.
JOB_SETTINGS: dict[str, Any] = {
    "ordering": {"early_arrival": "5m", "late_arrival": "5s", "out_of_order": "0s"},
    "window": "tumbling 1m, group_by device, n = count(*), mean = avg(value)",
}


def report_header(benchmark: str, args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """The start of a benchmark's JSON report: its settings, ``extra``, the code and the
    machine it ran on, and an empty ``runs`` list."""
    return {
        "benchmark": benchmark,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        **extra,
        "sparktide": _git(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_before": round(os.getloadavg()[0], 2),
        "runs": [],
    }


if __name__ == "__main__":
    raise SystemExit(main())
