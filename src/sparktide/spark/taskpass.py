"""The one-pass plan on the driver's side: hand a batch to tasks that parse, judge and
fold their partitions into window partials in one ``mapInArrow``
(:mod:`sparktide.spark.onepass`), and collect what they report.

The tasks may decline a batch (a line the kernel could not vouch for is an event after
all, a partition in two tasks, too much for one task...): :func:`one_pass` then returns
:class:`Declined` with the reason, and the batch is re-planned ``general``
(:meth:`sparktide.spark.plans.BatchPlan.fall_back`). Both give the same answers.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from sparktide.spark import plans
from sparktide.spark.batch import Batch
from sparktide.spark.columns import (
    ERROR,
    PARTITION,
)
from sparktide.spark.context import Context
from sparktide.spark.counters import COUNTERS
from sparktide.spark.inputs.contract import FULL_TEXT
from sparktide.spark.inputs.sqlparse import parse_lines
from sparktide.spark.inputs.textfiles import json_texts
from sparktide.spark.judging import column_present
from sparktide.spark.lineshapes import json_files, parquet_files, typed_names
from sparktide.spark.onepass import (
    ABORT,
    FILE_TEXT,
    KEPT,
    KEPT_SCHEMA,
    KEY,
    KEY_SCHEMA,
    LINE,
    LINE_SCHEMA,
    PARTIAL,
    SUMMARY,
    TASK,
    TYPED,
    TYPED_TEXT,
    FusedPlan,
    counter_column,
    fused_kernel,
    fused_plan,
    fused_schema,
    input_clock,
    partial_schema,
)

__all__ = [
    "KERNEL_FILE_BYTES",
    "ONE_TASK_SPLITS",
    "UNVOUCHED_EVENT",
    "Declined",
    "OnePass",
    "Spilled",
    "TaskMemory",
    "no_input",
    "one_pass",
]

#: Why the tasks decline a batch whose lines they could not all vouch for (nested or
#: escaped values) when one of those is an event: the run remembers it
#: (:func:`sparktide.spark.plans.remember_one_pass`).
UNVOUCHED_EVENT = "a line the kernel did not vouch for is an event"
#: The one-pass plan reads a batch in one task only up to this many of Spark's file
#: splits (at most 128 MB each by default): beyond, the general plan, which spills.
ONE_TASK_SPLITS = 4
#: The one-pass kernel reads local Parquet files of at most this many bytes itself;
#: Spark reads the rows of a batch with a larger one (or one on another file system).
KERNEL_FILE_BYTES = 256 << 20


@dataclass
class Spilled:
    """Rows the one-pass tasks wrote as parquet files (``fused_kernel``), read by pyarrow
    on the driver or by Spark."""

    files: list[str]
    schema: pa.Schema

    def arrow(self) -> pa.Table:
        """The rows, read by pyarrow on the driver."""
        return spilled_table(self.files, self.schema)

    def frame(self, spark: SparkSession) -> DataFrame:
        """The rows, read by Spark."""
        if not self.files:
            return spark.createDataFrame([], from_arrow_schema(self.schema))
        return spark.read.schema(from_arrow_schema(self.schema)).parquet(*self.files)


@dataclass
class OnePass:
    """What the one-pass plan hands the rest of the batch."""

    partial: Spilled  # window partials, one row per (scope, group, start) of a task
    partial_rows: int
    summary: list[dict[str, Any]]  # one entry per partition
    malformed_lines: DataFrame | None  # the lines the SQL route found malformed
    malformed: int
    keys: pa.Table | None = None  # substreams: each key's largest h and events (kn)
    input_clock: int | None = None  # substreams: the input's arrival clock it judged by
    #: Whether the tasks read the batch's files themselves (JSONL by path, Parquet):
    #: ``arrow``; ``spark`` when Spark gave them the text or the rows.
    read_by: str = "spark"
    #: per named column (``missing_column``): the input records holding a value
    present: list[int] | None = None
    #: A windowless job's: the analytic columns' kept events (``partial`` holds the
    #: released records, :mod:`sparktide.spark.onepass.release`).
    kept: Spilled | None = None


@dataclass(frozen=True)
class Declined:
    """The one-pass plan did not take the batch, for ``reason``."""

    reason: str


@dataclass
class TaskMemory:
    """What a run learned of its input, for every later batch."""

    #: Whether the one-pass plan reads a batch's files in one task: from the start when
    #: the input is one partition (any split would cut it), or once a partition was
    #: found in two tasks
    one_task: bool
    #: Whether the kernel gets JSONL files' text rather than reading them by path (once
    #: a task could not: not a local file, or a compressed one)
    json_text: bool = False


@dataclass
class _Tasks:
    """The rows the tasks reported, and the plan they ran."""

    rows: list[Any]
    plan: FusedPlan
    keys: pa.Table | None

    @property
    def tasks(self) -> list[Any]:
        """One row per task."""
        return [row for row in self.rows if row["kind"] == TASK]

    @property
    def pids(self) -> list[str]:
        """The partitions the tasks judged (once each, unless one was split)."""
        return [row[PARTITION] for row in self.rows if row["kind"] == SUMMARY]


def one_pass(
    context: Context, memory: TaskMemory, batch: Batch, lines: DataFrame
) -> OnePass | Declined:
    """The batch's window partials and their number of rows, per-partition summary,
    malformed lines (parsed by the SQL route) and their count, from one pass per task
    (for substreams, each key's newest timestamp and events too); or :class:`Declined`."""
    json_text = memory.json_text
    result = _attempt(context, memory, batch, lines)
    if memory.json_text and not json_text:  # (a task could not read a file by path)
        return _attempt(context, memory, batch, lines)
    return result


def no_input(context: Context, batch: Batch) -> OnePass | Declined:
    """What one pass over no input hands on, without running a task (a flush, or a
    silent batch, of a job whose batches take the one-pass plan): no partials, no
    summary, no malformed line; for substreams no key, and the input's arrival clock
    with no partition delivering.
    :class:`Declined` when the kernel's plan is (the keys' state too large)."""
    plan = _task_plan(context, batch, None)
    if isinstance(plan, Declined):
        return plan
    nothing = OnePass(
        Spilled([], partial_schema(plan)), 0, [], None, 0, present=[0] * len(plan.present)
    )
    if plan.release is not None:
        nothing.kept = Spilled([], KEPT_SCHEMA)
    if context.timeline.by_key:
        nothing.keys = KEY_SCHEMA.empty_table()
        nothing.input_clock = input_clock(plan, [])
    return nothing


def _attempt(
    context: Context, memory: TaskMemory, batch: Batch, lines: DataFrame
) -> OnePass | Declined:
    """One try of :func:`one_pass` (another follows when a task asked for the text)."""
    stream_partition = context.job.source.partition
    if stream_partition not in lines.columns:
        stream_partition = None  # (Kafka's column, say)
    found = _kernel_input(context, memory, lines, stream_partition)
    if isinstance(found, Declined):
        return found
    files, read_by = found
    plan = _task_plan(context, batch, stream_partition)
    if isinstance(plan, Declined):
        return plan
    ran = _run_tasks(context, memory, batch, files, plan)
    if isinstance(ran, Declined):
        return ran
    tasks = ran.tasks
    slow = sum(row["slow"] for row in tasks)
    others = None
    present = [sum(row[f"_nc{i}"] or 0 for row in tasks) for i in range(len(plan.present))]
    if slow:
        found = _malformed_lines(context, batch, tasks, stream_partition)
        if found is None:
            return Declined(UNVOUCHED_EVENT)
        others, more = found
        present = [a + b for a, b in zip(present, more, strict=True)]
    partial = [row[f"{PARTIAL}_file"] for row in tasks if row[f"{PARTIAL}_file"]]
    result = OnePass(
        Spilled(partial, partial_schema(plan)),
        sum(row["parts"] for row in tasks),
        _summary(ran.rows),
        others,
        slow,
        read_by=read_by,
        present=present,
    )
    if plan.release is not None:
        kept = [row[f"{KEPT}_file"] for row in tasks if row[f"{KEPT}_file"]]
        result.kept = Spilled(kept, KEPT_SCHEMA)
    if context.timeline.by_key:
        assumed = ran.plan.assumed
        result.keys = ran.keys
        result.input_clock = input_clock(ran.plan, ran.pids if assumed is None else assumed)
    return result


def _kernel_input(
    context: Context, memory: TaskMemory, lines: DataFrame, stream_partition: str | None
) -> tuple[DataFrame, str] | Declined:
    """What the tasks read of the batch, and who reads the files' contents."""
    columns = set(lines.columns)
    job = context.job
    jsonl = job.source.format == "jsonl"
    if jsonl and "path" in columns and not memory.json_text:  # (the tasks read them)
        return lines.select("file", "path", "mtime"), "arrow"
    if jsonl and "text" in columns:  # whole JSONL files
        return lines.select("file", "text", "mtime"), "spark"
    if json_files(job, lines):  # (files no task could read by path: Spark reads them)
        return json_texts(lines), "spark"
    if parquet_files(job, lines):  # whole Parquet files (the kernel reads them)
        if stream_partition is not None:
            return Declined("Parquet files with the partition in the stream")
        return lines.select("file", "path", "length", "mtime"), "arrow"
    if not ({"file", "line", "raw", "mtime"} <= columns and "input" not in columns):
        return Declined("the batch's shape is not the kernel's")
    # lines: of a stream (broker_lines), or a Parquet row's JSON text (its full text even
    # where the typed route left ``raw`` out) — none where Spark made the kernel's inputs
    # from the row's typed columns (``fused.typed_columns``)
    raw = F.coalesce(FULL_TEXT, "raw") if FULL_TEXT in columns else F.col("raw")
    typed = []
    if TYPED in columns and stream_partition is None:
        typed = ["_kt", "_ka", "_kpid", "_kkey", *typed_names(job)]
        typed.remove(TYPED_TEXT)
        raw = F.col(TYPED_TEXT)
    frame = lines.select(
        "file",
        "line",
        raw.alias("raw"),
        "mtime",
        *(["pre_error"] if "pre_error" in columns else []),
        *filter(None, [stream_partition]),
        *typed,
    )
    return frame, "spark"


def _task_plan(
    context: Context, batch: Batch, stream_partition: str | None
) -> FusedPlan | Declined:
    """The kernel's plan of the batch, given the partitions' clocks."""
    store, parts = context.store, batch.parts
    clocks = {pid: part.as_json() for pid, part in parts.items()}
    plan = fused_plan(context.job, clocks, stream_partition)
    if context.timeline.by_key:  # the input's arrival clock depends on who delivers
        if store.table_rows(batch.previous, "keys") > plans.DRIVER_WINDOW_ROWS:
            # (the task and the driver would each hold every key's state)
            return Declined("the keys' state is too large for a task")
        plan = dataclasses.replace(
            plan,
            arrival_clock=batch.clock["arrival"],
            idle=tuple(
                (pid, part.arrival, part.idle_estimate(batch.now)) for pid, part in parts.items()
            ),
            keys=tuple(str(path) for path in store.table_files(batch.previous, "keys")),
        )
    if plan.release is not None:  # (the tasks read the kept events of their scopes)
        if store.table_rows(batch.previous, "held"):  # (the general plan held them)
            return Declined("events held from an earlier batch wait for release")
        files = tuple(str(path) for path in store.table_files(batch.previous, "analytic"))
        plan = dataclasses.replace(plan, release=dataclasses.replace(plan.release, state=files))
    return dataclasses.replace(
        plan, spill=str(store.spill_directory()), file_bytes=KERNEL_FILE_BYTES
    )


def _run_tasks(
    context: Context, memory: TaskMemory, batch: Batch, files: DataFrame, plan: FusedPlan
) -> _Tasks | Declined:
    """Run the kernel: Spark's own split of the files first (each task a share of them,
    in parallel), unless a partition was found in two tasks before: then the files go
    through one task (still far cheaper than the general plan, whose judging of a
    timeline is one task anyway) — remembered for the rest of the run."""
    substreams = context.timeline.by_key
    for single in (False, True) if not memory.one_task else (True,):
        frame, task_plan = files, plan
        if single:
            splits = _splits(files)
            if splits > ONE_TASK_SPLITS:  # too much for one Python worker
                return Declined(f"{splits} file splits for one task")
            frame = files.coalesce(1)
            # the batch's other cores would idle: the task vouches for files in threads
            cores = context.spark.sparkContext.defaultParallelism
            task_plan = dataclasses.replace(plan, threads=cores)
        elif substreams:  # tasks share the batch: guess who delivers (checked below)
            seen = tuple(pid for pid, part in batch.parts.items() if part.seen)
            task_plan = dataclasses.replace(plan, assumed=seen)
        kernel = functools.partial(fused_kernel, task_plan)
        rows = frame.mapInArrow(kernel, fused_schema(task_plan)).collect()  # (few rows)
        if any(row["kind"] == ABORT for row in rows):
            return Declined("the kernel gave up")
        if any(row["kind"] == FILE_TEXT for row in rows):  # (remembered for the run)
            memory.json_text = True
            return Declined("a task could not read a file by path")
        ran = _Tasks(rows, task_plan, None)
        if len(ran.pids) != len(set(ran.pids)):
            memory.one_task = True  # a partition's lines were in two tasks
            continue
        if substreams:
            ran.keys = spilled_table([row[f"{KEY}_file"] for row in ran.tasks], KEY_SCHEMA)
            several = len(ran.tasks) > 1  # (one task's keys are distinct)
            if several and len(pc.unique(ran.keys.column("scope"))) < ran.keys.num_rows:
                memory.one_task = True  # a key's events were in two tasks
                continue
            assumed = task_plan.assumed
            if assumed is not None and input_clock(task_plan, assumed) != input_clock(
                task_plan, ran.pids
            ):
                continue  # the guess was wrong (idle partitions): this batch in one task
        return ran
    return Declined("one task split a partition")  # pragma: no cover


#: Above this many bytes, a plan's statistics say only that the size is unknown (Spark's
#: ``spark.sql.defaultSizeInBytes`` is the largest long): a stream's batch, not files.
_UNKNOWN_SIZE = 1 << 62


def _splits(files: DataFrame) -> int:
    """How many of Spark's file splits the batch's input is: from the size of what its
    plan reads (the optimiser's statistics of the plan's leaves, the files' sizes for a
    file source, without planning the query: a tenth of the time), or, for a source that
    reports no size (a broker, the rate source), the partitions of its RDD."""
    jdf = files._jdf  # type: ignore[attr-defined]
    leaves = jdf.queryExecution().optimizedPlan().collectLeaves()
    sizes = [int(str(leaves.apply(i).stats().sizeInBytes())) for i in range(leaves.size())]
    size = sum(sizes)
    if size >= _UNKNOWN_SIZE:
        return files.rdd.getNumPartitions()
    split = int(jdf.sparkSession().sessionState().conf().filesMaxPartitionBytes())
    return max(1, -(-size // split))


def _malformed_lines(
    context: Context, batch: Batch, tasks: list[Any], stream_partition: str | None
) -> tuple[DataFrame, list[int]] | None:
    """The lines the kernel did not vouch for, parsed by the SQL route, when every one
    is malformed (then they were never events), and how many of them hold a value in
    each named column (:func:`~sparktide.spark.judging.column_present`); ``None``
    otherwise. One aggregate tells both."""
    written = [row[f"{LINE}_file"] for row in tasks if row[f"{LINE}_file"]]
    lines = context.spark.read.schema(from_arrow_schema(LINE_SCHEMA)).parquet(*written)
    partition = [F.col("lpart").alias(stream_partition)] if stream_partition else []
    columns = ["file", "line", "raw", "mtime", "pre_error"]
    rows = lines.select(*columns, *partition)
    others = batch.keep(parse_lines(rows, context.job, epochs=not context.typed_input))
    flags = column_present(context, others, stream_partition is not None)
    found = (
        others.selectExpr(ERROR, *(f"{flag} AS {name}" for name, flag in flags))
        .agg(
            F.count(F.when(F.col(ERROR).isNull(), 1)).alias("events"),
            *(F.count(F.when(F.col(name), 1)).alias(name) for name, _ in flags),
        )
        .first()
    )
    assert found is not None
    if found["events"]:
        return None
    return others, [found[name] for name, _ in flags]


def _summary(rows: list[Any]) -> list[dict[str, Any]]:
    """The tasks' per-partition rows as the general plan's summary has them."""
    summary = []
    for found in rows:
        if found["kind"] != SUMMARY:
            continue
        row = found.asDict()
        late = row["late_a"]
        entry: dict[str, Any] = {
            PARTITION: row[PARTITION],
            "max_h": row["max_h"],
            "max_a": row["max_a"],
            "bad": 0,
            "max_cti": None,
            "max_y": None,
            "counted": row.get(counter_column("input")) or 0,  # (no CTIs, no edges)
            "late_example": None
            if late is None
            else (late, row["late_file"], row["late_line"], row["late_t"]),
        }
        for name in COUNTERS:
            column = counter_column(name)
            entry[column] = row.get(column) or 0
        summary.append(entry)
    return summary


def spilled_table(files: list[str | None], schema: pa.Schema) -> pa.Table:
    """The rows of the files the one-pass tasks wrote (``None``: a task wrote none)."""
    tables = [pq.read_table(path).cast(schema) for path in files if path]
    return pa.concat_tables(tables) if tables else schema.empty_table()
