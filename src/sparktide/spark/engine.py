"""The Spark engine: SPEC §2–6 per micro-batch, vectorised in Spark SQL.

Each micro-batch (``foreachBatch``) runs these steps; ``docs/design.md`` says why.

1. **Clock.** The batch's processing time comes from the journal (or is chosen and
   journaled). An aggregate over the batch says which partitions delivered and their
   largest arrival time (after the policy, with the counters, unless the policy needs
   it first: see ``_fused``); partitions that delivered nothing get their idle estimate.
2. **Policy.** Within a batch the arrival clock at an event is ``max(A0, arrival)``
   (rows are judged in arrival order), and the timeline's newest timestamp before an
   event is a running maximum of a per-row value ``h`` — one window function per
   timeline. Every verdict and system timestamp follows in closed form. The judged
   batch is computed once and kept (a local checkpoint) for the steps after it.
3. **Windows / release.** Admitted rows are assigned to their windows, aggregated into
   mergeable partials, merged with the open windows kept in state, and windows whose due
   watermark has been reached are written; held events are released likewise.
4. **State.** Clocks go to a JSON file, open windows / held events / substream keys to
   parquet, all under a directory named by the batch id, committed last. Outputs are
   written to directories named by the batch id (overwritten on replay): exactly once.

Steps 1–3 have a second plan for windowed jobs whose timelines are partitions: each task
parses, judges and folds its own partitions into window partials in one ``mapInArrow``
(:mod:`sparktide.spark.fused`, :meth:`SparkEngine._one_pass`), and nothing but partials
leaves it; a batch that does not qualify takes the plan above. Same answers either way.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema, from_arrow_type, to_arrow_schema

from sparktide.core.diagnostics import LateInput, PartitionView, not_progressing
from sparktide.core.hold import output_watermark
from sparktide.core.instants import NEG_INF, POS_INF
from sparktide.core.watermark import NEVER_SEEN_LAG
from sparktide.errors import ConfigError
from sparktide.job import Job, input_of
from sparktide.spark.aggregates import (
    INTEGRAL_FLOAT,
    distinct_key,
    group_inputs,
    plan_aggregates,
    present,
)
from sparktide.spark.ctiscan import SCAN_OUTPUT, scan_kernel
from sparktide.spark.edges import edge_starts, edges_schema, ended_edges, open_edges, pair_edges
from sparktide.spark.expr import (
    add_record_columns,
    filter_rows,
    join_projection,
    projected_event,
    record_columns,
    window_projection,
)
from sparktide.spark.fused import (
    ABORT,
    COUNTED,
    FILE_TEXT,
    KEY,
    KEY_SCHEMA,
    LINE,
    LINE_SCHEMA,
    PARTIAL,
    SUMMARY,
    TASK,
    TYPED,
    TYPED_TEXT,
    counter_column,
    fusable,
    fused_kernel,
    fused_plan,
    fused_schema,
    input_clock,
    merge_into,
    partial_schema,
    typed_columns,
)
from sparktide.spark.inputs.arrays import filled
from sparktide.spark.inputs.arrowjson import parse_files
from sparktide.spark.inputs.contract import FULL_TEXT
from sparktide.spark.inputs.parquet import parquet_rows
from sparktide.spark.inputs.sqlparse import parse_lines
from sparktide.spark.inputs.textfiles import json_texts, split_lines
from sparktide.spark.records import spark_doubles, window_lines, write_lines
from sparktide.spark.rowwindows import marks_schema, session_windows, sliding_windows
from sparktide.spark.sql import NEG, field, iso, lit_us, sql_string
from sparktide.spark.state import StateStore

__all__ = ["SparkEngine", "check_job"]

_COUNTERS = (
    *COUNTED,  # (the one-pass kernel counts these; the rest are 0 there)
    "dropped.window_closed",
    "dropped.filtered",
    "dropped.empty_edge",
    "dead_lettered.out_of_order",
    "dead_lettered.window_closed",
    "dead_lettered.unmatched_edge",
    "dead_lettered.duplicate_edge",
    "punctuations",
    "ctis_generated",
)
_JSON_OPTS = {"ignoreNullFields": "false"}
_log = logging.getLogger("sparktide")


@dataclass
class _Spilled:
    """Rows the one-pass tasks wrote as parquet files (``fused_kernel``), read by pyarrow
    on the driver or by Spark."""

    files: list[str]
    schema: pa.Schema

    def arrow(self) -> pa.Table:
        return _spilled(self.files, self.schema)

    def frame(self, spark: SparkSession) -> DataFrame:
        if not self.files:
            return spark.createDataFrame([], from_arrow_schema(self.schema))
        return spark.read.schema(from_arrow_schema(self.schema)).parquet(*self.files)


@dataclass
class _OnePass:
    """What the one-pass plan hands the rest of the batch (:meth:`SparkEngine._one_pass`)."""

    partial: _Spilled  # window partials, one row per (scope, group, start) of a task
    partial_rows: int
    summary: list[dict[str, Any]]  # one entry per partition
    malformed_lines: DataFrame | None  # the lines the SQL route found malformed
    malformed: int
    keys: pa.Table | None = None  # substreams: each key's largest h and events (kn)
    input_clock: int | None = None  # substreams: the input's arrival clock it judged by
    #: Whether the tasks read the batch's files themselves (JSONL by path, Parquet):
    #: ``arrow``; ``spark`` when Spark gave them the text or the rows.
    read_by: str = "spark"


@dataclass
class _Batch:
    """What the steps after the policy need to know of the micro-batch being processed."""

    id: int
    previous: int | None  # the committed batch whose state this one starts from
    now: int  # processing time
    label: str  # output directory name: batch=<id> or flush=<id>
    parts: dict[str, dict[str, Any]]  # partition clocks at the end of the batch
    clock: dict[str, Any]  # the clock state being built for this batch
    keys_next: DataFrame | pa.Table | None  # substream key state after this batch
    #: (a table when the one-pass plan judged the batch: it is merged on the driver)
    global_end: int  # the input's arrival clock at the end of the batch


def check_job(job: Job) -> None:
    """Check, before any Spark session starts, that the Spark engine can run ``job``.

    Raises
    ------
    ConfigError
        Naming the key: ``output.path`` or ``output.checkpoint`` missing, an output
        format or window option the Spark engine does not support yet.
    """
    if job.output.path is None:
        raise ConfigError("output.path", "is required to run on Spark")
    _check_supported(job)


def _check_supported(job: Job) -> None:
    output, window = job.output, job.window
    if output.checkpoint is None:
        raise ConfigError("output.checkpoint", "is required to run on Spark")
    if output.format != "jsonl":
        raise ConfigError(
            "output.format",
            f"{output.format!r} is not yet supported by the Spark engine (it writes JSON "
            'lines); use "jsonl"',
        )
    if window is not None and window.type in ("sliding", "session"):
        if window.idle_timeout is not None:
            raise ConfigError(
                "window.idle_timeout",
                f"is not yet supported by the Spark engine for {window.type} windows",
            )
        if job.ordering.out_of_order_action == "accept":
            raise ConfigError(
                "ordering.on_out_of_order",
                f"'accept' is not yet supported by the Spark engine for {window.type} windows",
            )


def _scans_ctis(job: Job) -> bool:
    """Whether ``job``'s generated CTIs run as one compiled pass per timeline
    (:mod:`sparktide.spark.ctiscan`) rather than in closed form: a negative delay that
    decides which events move the newest timestamp — below ``-1us`` with out-of-order
    events dropped or dead-lettered, or under ``adjust`` with CTIs every period or with
    interval events (``docs/design.md``, *CTIs and interval events*)."""
    punctuation = job.punctuation
    if punctuation is None or not punctuation.generated:
        return False
    ahead: int = -(punctuation.delay or 0)  # type: ignore[operator]
    action = job.ordering.out_of_order_action
    if action in ("drop", "dead_letter"):
        return ahead > 1
    return (
        action == "adjust"
        and ahead > 0
        and (punctuation.every is not None or job.source.end_time is not None)
    )


class SparkEngine:
    """Runs one job's micro-batches.

    Parameters
    ----------
    spark
        The session.
    job
        The job; ``job.output`` names the output, dead-letter, metrics and checkpoint
        directories.
    clock
        Processing time (microseconds) for a new batch id; the wall clock by default.
        Tests pass a fixed schedule so the reference engine can be given the same times.
    """

    #: Up to this many partitions the policy reads each partition's clock (A0, W0,
    #: newest0, n0) from a literal map by pid; beyond, from a broadcast join.
    INLINE_PARTITIONS = 64
    #: The one-pass plan reads a batch in one task only up to this many of Spark's file
    #: splits (at most 128 MB each by default): beyond, the general plan, which spills.
    ONE_TASK_SPLITS = 4
    #: The one-pass kernel reads local Parquet files of at most this many bytes itself;
    #: Spark reads the rows of a batch with a larger one (or one on another file system).
    KERNEL_FILE_BYTES = 256 << 20
    #: The one-pass plan folds a batch's partials into the open windows on the driver
    #: while the two together are at most this many rows (about 100 bytes each in
    #: Arrow); beyond, in Spark, with a shuffle. Substreams take the one-pass plan only
    #: while their keys' state is at most this many rows (the task reads it, and the
    #: driver computes the next one).
    DRIVER_WINDOW_ROWS = 2_000_000

    def __init__(
        self, spark: SparkSession, job: Job, *, clock: Callable[[int], int] | None = None
    ) -> None:
        _check_supported(job)
        output = job.output
        assert output.checkpoint is not None
        self.spark = spark
        # Reference data is read now, before any query starts: a table that cannot be
        # read stops the run here (InputError), as it stops simulate.
        self._reference_rows = _read_reference(job) if job.references else []
        self._reference: DataFrame | None = None  # its DataFrame (_reference_table)
        self.job = job
        self.window = job.window
        ordering = job.ordering
        self.E = ordering.early_arrival
        self.L = ordering.late_arrival
        self.O = ordering.out_of_order
        self.late_drop = ordering.action == "drop"
        self.ooo = ordering.out_of_order_action
        self.punctuation = job.punctuation
        only_cti = self.punctuation is not None and self.punctuation.watermark == "cti"
        # The watermark's heuristic terms (SPEC §4): absent when only CTIs move it.
        self.OT = None if only_cti else self.O
        self.LT = None if only_cti else self.L
        self.explicit = self.punctuation is not None and self.punctuation.explicit
        self.generated = self.punctuation is not None and self.punctuation.generated
        self.intervals = job.source.end_time is not None
        self.edges = job.edges
        self._scanned = _scans_ctis(job)  # generated CTIs as one compiled pass per timeline
        self._paired: DataFrame | None = None  # the batch with its edges paired
        self.mode = (
            "substreams"
            if job.source.over is not None
            else "partitioned"
            if ordering.partitioned
            else "merged"
        )
        self.store = StateStore(spark, output.checkpoint)
        self.output = output
        self.lateness = self.window.allowed_lateness if self.window else 0
        self.closed_end = bool(self.window) and (
            self.window.boundary == "end" or self.window.type in ("sliding", "snapshot")
        )
        self.plans = plan_aggregates(self.window.aggregates) if self.window else []
        self._flushing = False
        self._persisted: list[DataFrame] = []
        self._written: dict[str, int] = {}  # records written by this batch, by counter
        self._gauges: dict[str, int] = {}  # state table sizes after this batch
        self._clock = clock
        #: Whether the one-pass plan reads a batch's files in one task (spark/fused.py):
        #: from the start when the input is one partition (any split would cut it)
        self._one_task = job.source.partition is None
        #: Whether the kernel gets JSONL files' text rather than reading them by path
        #: (once a task could not: not a local file, or a compressed one)
        self._json_text = False
        self.last_metrics: dict[str, Any] | None = None
        #: Called with each micro-batch's metrics record (``sparktide run``'s status line).
        self.on_metrics: Callable[[dict[str, Any]], None] | None = None

    # ------------------------------------------------------------------ clocks
    def _initial_clock(self) -> dict[str, Any]:
        partitions = {}
        for pid in self.job.declared_partitions:
            partitions[str(pid)] = _new_partition()
        counters: dict[str, dict[str, int]] = {}
        return {
            "partitions": partitions,
            "arrival": NEG_INF,
            "job_watermark": NEG_INF,
            "counters": counters,
            "malformed": 0,
            "processing_time": NEG_INF,
        }

    def _refresh(self, part: dict[str, Any], arrival: int) -> int:
        w = part["watermark"]
        if self.OT is not None:
            w = max(w, part["newest"] - self.OT)
        if self.LT is not None:
            w = max(w, arrival - self.LT)
        return w

    def _floor(self, arrival: int, clock: dict[str, Any]) -> int:
        """Substreams: the watermark every substream has reached — the input's arrival
        clock minus L, and the CTIs without a key (SPEC §7)."""
        base = arrival - self.LT if self.LT is not None else NEG_INF
        return max(base, clock.get("cti_floor", NEG_INF))

    def _estimate(self, clock: dict[str, Any], delivering: dict[str, Any], now: int) -> int:
        """Idle estimates for the partitions that deliver nothing at ``now`` (SPEC §4);
        partitions seen for the first time get their entry. Returns the input's arrival
        clock at the start of the batch (the maximum over partitions)."""
        parts: dict[str, dict[str, Any]] = clock["partitions"]
        for pid, part in parts.items():
            if pid in delivering:
                continue
            part["arrival"] = _idle_arrival(part, now)
            if self.mode != "substreams":
                part["watermark"] = self._refresh(part, part["arrival"])
        for pid in delivering:
            parts.setdefault(pid, _new_partition())
        return max([clock["arrival"], *(p["arrival"] for p in parts.values())])

    def _import_ctis(self, parts: dict[str, dict[str, Any]]) -> None:
        """Imported CTIs at the batch instant (after the idle estimates, before the rows):
        an importing input's partitions take the watermark of the input they import from,
        the minimum over its partitions (as :meth:`ReferenceEngine._import_ctis`)."""
        for importer, exporter in self.job.imports.items():
            marks = [p["watermark"] for pid, p in parts.items() if input_of(pid) == exporter]
            if not marks:
                continue
            for pid, part in parts.items():
                if input_of(pid) == importer:
                    part["watermark"] = max(part["watermark"], min(marks))

    @property
    def _fused(self) -> bool:
        """Whether a batch is judged without first learning which partitions deliver.

        A row is judged against its own partition's clock, which an idle estimate never
        touches (only partitions that deliver nothing get one), and a partition seen for
        the first time starts at minus infinity, which the policy's ``greatest`` treats as
        it treats a missing value. Two cases read other partitions' clocks and so need
        the estimates first: substreams (the input's arrival clock is the maximum over
        partitions) and merged jobs whose within-batch watermark is the minimum over
        partitions (``accept``, or no out-of-order bound). Everywhere else one pass
        (parse, judge, count) saves persisting the parsed batch and a Spark job."""
        if self.mode == "substreams" or self.job.imports:  # (imports read other partitions)
            return False
        return not (self.mode == "merged" and (self.ooo == "accept" or self.OT is None))

    @property
    def _one_pass_ok(self) -> bool:
        """Whether a batch may be parsed, judged and folded in one pass per task
        (:mod:`sparktide.spark.fused`): the job allows it and the policy reads no other
        partition's clock — or, for substreams, the batch is read in one task, which then
        knows which partitions deliver."""
        return (self._fused or self.mode == "substreams") and fusable(self.job)

    def _one_pass(
        self, lines: DataFrame, clock: dict[str, Any], now: int, previous: int | None
    ) -> _OnePass | None:
        """The batch's window partials and their number of rows, per-partition summary,
        malformed lines (parsed by the SQL route) and their count, from one pass per
        task (for substreams, each key's newest timestamp and events too); or ``None``
        when the batch does not qualify (a line the kernel could not vouch for is an event
        after all): the caller then runs the general plan. Both give the same answers;
        this one moves no event."""
        parts: dict[str, dict[str, Any]] = clock["partitions"]
        columns = set(lines.columns)
        partition = self.job.source.partition
        stream_partition = partition if partition in columns else None  # (Kafka's, say)
        jsonl = self.job.source.format == "jsonl"
        read_by = "spark"
        if jsonl and "path" in columns and not self._json_text:  # (the tasks read them)
            files, read_by = lines.select("file", "path", "mtime"), "arrow"
        elif jsonl and "text" in columns:  # whole JSONL files
            files = lines.select("file", "text", "mtime")
        elif self._json_files(lines):  # (files no task could read by path: Spark reads them)
            files = json_texts(lines)
        elif self._parquet_files(lines):  # whole Parquet files (the kernel reads them)
            if stream_partition is not None:
                return None
            files, read_by = lines.select("file", "path", "length", "mtime"), "arrow"
        elif {"file", "line", "raw", "mtime"} <= columns and "input" not in columns:
            # lines: of a stream (broker_lines), or a Parquet row's JSON text (its full
            # text even where the typed route left ``raw`` out) — none where Spark made
            # the kernel's inputs from the row's typed columns (``fused.typed_columns``)
            raw = F.coalesce(FULL_TEXT, "raw") if FULL_TEXT in columns else F.col("raw")
            typed = []
            if TYPED in columns and stream_partition is None:
                typed = ["_kt", "_ka", "_kpid", "_kkey", *_typed_names(self.job)]
                typed.remove(TYPED_TEXT)
                raw = F.col(TYPED_TEXT)
            files = lines.select(
                "file",
                "line",
                raw.alias("raw"),
                "mtime",
                *(["pre_error"] if "pre_error" in columns else []),
                *filter(None, [stream_partition]),
                *typed,
            )
        else:
            return None
        plan = fused_plan(self.job, parts, stream_partition)
        substreams = self.mode == "substreams"
        if substreams:  # the input's arrival clock depends on who delivers
            if self.store.table_rows(previous, "keys") > self.DRIVER_WINDOW_ROWS:
                return None  # (the task and the driver would each hold every key's state)
            plan = dataclasses.replace(
                plan,
                arrival_clock=clock["arrival"],
                idle=tuple(
                    (pid, part["arrival"], _idle_arrival(part, now)) for pid, part in parts.items()
                ),
                keys=tuple(str(path) for path in self.store.table_files(previous, "keys")),
            )
        # Spark's own split of the files first (each task a share of them, in parallel),
        # unless a partition was found in two tasks before: then the files go through
        # one task (still far cheaper than the general plan, whose judging of a timeline
        # is one task anyway) — remembered for the rest of the run
        plan = dataclasses.replace(
            plan, spill=str(self.store.spill_directory()), file_bytes=self.KERNEL_FILE_BYTES
        )
        keys = None
        for single in (False, True) if not self._one_task else (True,):
            frame, task_plan = files, plan
            if single:
                splits = files.rdd.getNumPartitions()
                if splits > self.ONE_TASK_SPLITS:  # too much for one Python worker
                    return None
                frame = files.coalesce(1) if splits > 1 else files
                # the batch's other cores would idle: the task vouches for files in threads
                cores = self.spark.sparkContext.defaultParallelism
                task_plan = dataclasses.replace(plan, threads=cores)
            elif substreams:  # tasks share the batch: guess who delivers (checked below)
                seen = tuple(pid for pid, part in parts.items() if part["seen"])
                task_plan = dataclasses.replace(plan, assumed=seen)
            kernel = functools.partial(fused_kernel, task_plan)
            rows = frame.mapInArrow(kernel, fused_schema(task_plan)).collect()  # (few rows)
            if any(row["kind"] == ABORT for row in rows):
                return None
            if any(row["kind"] == FILE_TEXT for row in rows):  # (remembered for the run)
                self._json_text = True
                return self._one_pass(lines, clock, now, previous)
            tasks = [row for row in rows if row["kind"] == TASK]
            pids = [row["pid"] for row in rows if row["kind"] == SUMMARY]
            if len(pids) != len(set(pids)):
                self._one_task = True  # a partition's lines were in two tasks
                continue
            if substreams:
                keys = _spilled([row[f"{KEY}_file"] for row in tasks], KEY_SCHEMA)
                several = len(tasks) > 1  # (one task's keys are distinct)
                if several and len(pc.unique(keys.column("scope"))) < keys.num_rows:
                    self._one_task = True  # a key's events were in two tasks
                    continue
                if task_plan.assumed is not None and input_clock(
                    task_plan, task_plan.assumed
                ) != input_clock(task_plan, pids):
                    continue  # the guess was wrong (idle partitions): this batch in one task
            break
        else:  # pragma: no cover - one task cannot split a partition or a key
            return None
        slow = sum(row["slow"] for row in tasks)
        partial_rows = sum(row["parts"] for row in tasks)
        others = None
        if slow:
            # lines the kernel did not vouch for: the batch qualifies only if the SQL
            # route finds every one malformed (then they were never events)
            written = [row[f"{LINE}_file"] for row in tasks if row[f"{LINE}_file"]]
            others = self._keep(
                parse_lines(
                    self.spark.read.schema(from_arrow_schema(LINE_SCHEMA))
                    .parquet(*written)
                    .select(
                        "file",
                        "line",
                        "raw",
                        "mtime",
                        "pre_error",
                        *([F.col("lpart").alias(stream_partition)] if stream_partition else []),
                    ),
                    self.job,
                )
            )
            if others.filter("error IS NULL").limit(1).count():
                return None
        summary = []
        for found in rows:
            if found["kind"] != SUMMARY:
                continue
            row = found.asDict()
            entry: dict[str, Any] = {
                "pid": row["pid"],
                "max_h": row["max_h"],
                "max_a": row["max_a"],
                "bad": 0,
                "max_cti": None,
                "max_y": None,
                "late_example": None
                if row["late_a"] is None
                else (row["late_a"], row["late_file"], row["late_line"], row["late_t"]),
            }
            for name in _COUNTERS:
                column = _col(name)
                entry[column] = row.get(column) or 0
            summary.append(entry)
        partial = [row[f"{PARTIAL}_file"] for row in tasks if row[f"{PARTIAL}_file"]]
        result = _OnePass(
            _Spilled(partial, partial_schema(plan)),
            partial_rows,
            summary,
            others,
            slow,
            read_by=read_by,
        )
        if substreams:
            result.keys = keys
            result.input_clock = input_clock(
                task_plan, pids if task_plan.assumed is None else task_plan.assumed
            )
        return result

    # ------------------------------------------------------------------ one batch
    def process(
        self, lines: DataFrame, batch_id: int, now: int | None = None, *, flush: bool = False
    ) -> dict[str, Any]:
        """Process one micro-batch of raw lines (``file``, ``line``, ``raw``, ``mtime``), of
        whole JSONL files (``file``, ``text``, ``mtime``, maybe ``path``), or of the job's
        JSONL or Parquet files by name (``path``, ``file``, ``mtime``, ``length``: from the
        ``binaryFile`` source): the tasks read local files themselves.

        With ``flush``, ``batch_id`` is the last committed batch, ``lines`` is empty, and
        every governing watermark is taken as +infinity. Returns the metrics record.
        """
        try:
            return self._process(lines, batch_id, now, flush)
        finally:
            while self._persisted:
                self._release_kept(self._persisted.pop())
            self.store.clear_spill()

    def _whole_files(self, lines: DataFrame) -> bool:
        """Whether ``lines`` is a batch of the job's whole files (JSONL or Parquet) rather
        than lines or rows."""
        if self.job.source.format == "jsonl":
            return ("text" in lines.columns and not self.job.inputs) or self._json_files(lines)
        return self._parquet_files(lines)

    def _json_files(self, lines: DataFrame) -> bool:
        """Whether ``lines`` is a batch of the job's JSONL files by name (``path``,
        ``file``, ``mtime``, ``length``: the ``binaryFile`` stream) rather than their text."""
        return (
            self.job.source.format == "jsonl"
            and not self.job.inputs
            and {"path", "length"} <= set(lines.columns)
            and "text" not in lines.columns
        )

    def _parquet_files(self, lines: DataFrame) -> bool:
        """Whether ``lines`` is a batch of the job's Parquet files (``path``, ``file``,
        ``mtime``, ``length``) rather than their rows."""
        return (
            self.job.source.format == "parquet"
            and not self.job.inputs
            and {"path", "length"} <= set(lines.columns)
            and "raw" not in lines.columns
        )

    def _parse(self, lines: DataFrame) -> DataFrame:
        """Typed columns of a batch of lines, or of whole JSONL files (the Arrow fast path,
        :mod:`sparktide.spark.arrowparse`); a union's lines are parsed input by input,
        each by its own ``[inputs.<name>]`` table, their partitions named
        ``<input>/<partition>`` (as :func:`sparktide.reader.job_records` names them)."""
        if self.job.inputs:
            if "input" not in lines.columns:  # (the flush's empty batch)
                lines = lines.withColumn("input", F.lit(None).cast("string"))
            out = None
            for name, source in self.job.inputs:
                one = dataclasses.replace(source, import_ctis=None)  # (a union's key)
                view = dataclasses.replace(
                    self.job, source=one, inputs=(), join=None, references=(), select=()
                )
                parsed = parse_lines(lines.filter(F.col("input") == name).drop("input"), view)
                columns = ["file", "line", "raw", "mtime", "pre_error", "error", "m", "t", "a"]
                columns += [c for c in ("key", "cti", "e") if c in parsed.columns]
                parsed = parsed.select(
                    *columns,
                    F.when(F.col("pid").isNotNull(), F.concat(F.lit(f"{name}/"), "pid")).alias(
                        "pid"
                    ),
                )
                out = parsed if out is None else out.unionByName(parsed)
            assert out is not None
            return out
        if "text" in lines.columns:
            if self.explicit or self.intervals or self.edges:  # (unknown to the Arrow kernel)
                return parse_lines(split_lines(lines), self.job)
            return parse_files(lines, self.job)
        if FULL_TEXT in lines.columns:  # (dead letters' text: not parsed, not kept)
            lines = lines.drop(FULL_TEXT)
        if TYPED in lines.columns:  # (the one-pass kernel's inputs)
            lines = lines.drop(*_typed_names(self.job))
        return parse_lines(lines, self.job)

    def _keep(self, frame: DataFrame) -> DataFrame:
        """``frame``, computed once for the rest of the batch (released when it ends).

        The batch is parsed and judged once, and every later step (counters, dead
        letters, windows, state) reads the result. A lazy local checkpoint stores it as
        Spark's binary rows when the first step computes it; ``persist`` would encode it
        into compressed columns instead, which measured 2-4x slower for these rows (arrays
        and variants; ``docs/design.md``). If an executor holding the blocks is lost the
        batch fails and is replayed from the checkpoint, with the same results."""
        frame = frame.localCheckpoint(eager=False)
        self._persisted.append(frame)
        return frame

    @staticmethod
    def _release_kept(frame: DataFrame) -> None:
        """Free the blocks of a frame :meth:`_keep` returned (rather than waiting for the
        JVM's garbage collector to let Spark's cleaner find them)."""
        try:
            frame._jdf.queryExecution().analyzed().rdd().unpersist(False)
        except Exception:  # freeing early is an optimisation only
            pass

    def _process(
        self, lines: DataFrame, batch_id: int, now: int | None, flush: bool
    ) -> dict[str, Any]:
        self._flushing = flush
        self._written = {}
        self._gauges = {}
        self._merged_on: str | None = None  # where open windows merged (metrics)
        journal_id = f"flush-{batch_id}" if flush else batch_id
        previous = batch_id if flush else self.store.latest(below=batch_id)
        clock = self.store.load_clock(previous) or self._initial_clock()
        if now is None and self._clock is not None and not flush:
            now = self._clock(batch_id)
        now = self.store.processing_time(
            journal_id, max(now or 0, clock["processing_time"]) if flush else now
        )
        parts: dict[str, dict[str, Any]] = clock["partitions"]
        fused = None
        whole_files = not flush and self._whole_files(lines)
        json_files = self._json_files(lines)
        if json_files or self._parquet_files(lines):
            # files by name: the kernel reads them, else Spark their text (JSONL, which the
            # kernel has then judged already) or their rows (Parquet, typed below)
            if self._one_pass_ok and not flush:
                fused = self._one_pass(lines, clock, now, previous)
            if fused is None:
                lines = json_texts(lines) if json_files else parquet_rows(lines, self.job)
        if fused is None and self._one_pass_ok and not flush and not json_files:
            fused = self._one_pass(lines, clock, now, previous)
        # (who read the files' contents, for the metrics: the tasks, or Spark)
        read_by = (fused.read_by if fused is not None else "spark") if whole_files else None
        keys_next: DataFrame | pa.Table | None
        if fused is not None:  # parsed, judged and folded per task (spark/fused.py)
            partial, partial_rows, summary = fused.partial, fused.partial_rows, fused.summary
            lettered_from, malformed = fused.malformed_lines, fused.malformed
            decided = None
            keys_next = None
            delivering = {row["pid"]: row for row in summary}
            global_a0 = self._estimate(clock, delivering, now)
            if fused.keys is not None:
                if global_a0 != fused.input_clock:  # (the same rule: never expected)
                    raise RuntimeError("one-pass plan: the input's arrival clock differs")
                keys_next = self._next_keys_table(fused.keys, previous, global_a0, delivering, now)
        else:
            partial, partial_rows = None, 0
            decided, parsed, summary, delivering, malformed, global_a0, keys_next = self._judge(
                lines, clock, now, batch_id, previous
            )
            lettered_from = decided if self._fused else parsed  # (malformed records)
        # end-of-batch clocks
        for pid, row in delivering.items():
            part = parts[pid]
            part["arrival"] = max(part["arrival"], row["max_a"])
            part["last_arrival"] = row["max_a"]
            part["last_processing"] = now
            part["seen"] = True
        global_end = max([global_a0, *(p["arrival"] for p in parts.values())])
        counters: dict[str, dict[str, int]] = clock["counters"]
        for row in summary:
            pid = row["pid"]
            if pid is None:  # malformed rows only (counted above)
                continue
            if self.mode != "substreams":
                part = parts[pid]
                if row["max_h"] is not None:
                    part["newest"] = max(part["newest"], row["max_h"])
                if row["max_cti"] is not None:
                    part["watermark"] = max(part["watermark"], row["max_cti"])
                part["events"] = part.get("events", 0) + (row[_col("input")] or 0)
            elif row["max_y"] is not None:
                clock["cti_floor"] = max(clock.get("cti_floor", NEG_INF), row["max_y"])
            entry = counters.setdefault(pid, {})
            for name in _COUNTERS:
                entry[name] = entry.get(name, 0) + (row[_col(name)] or 0)
        if self.mode != "substreams":
            for part in parts.values():
                part["watermark"] = self._refresh(part, part["arrival"])
        clock["arrival"] = global_end
        clock["malformed"] = clock.get("malformed", 0) + malformed
        clock["processing_time"] = now
        clock.setdefault("started", now)
        # 3. governing watermarks at the end of the batch
        if self.mode == "merged":
            job_w = min((p["watermark"] for p in parts.values()), default=NEG_INF)
            clock["job_watermark"] = max(clock["job_watermark"], job_w)
        label = f"flush={batch_id:09d}" if flush else f"batch={batch_id:09d}"
        self.store.begin(batch_id, replace=flush)
        lettered = sum(
            row[_col(f"dead_lettered.{reason}")] or 0
            for row in summary
            for reason in ("out_of_order", "window_closed", "unmatched_edge", "duplicate_edge")
        )
        self._write_dead_letters(
            lettered_from,
            decided,
            label,
            lines if lettered else None,
            malformed,
        )
        batch = _Batch(batch_id, previous, now, label, parts, clock, keys_next, global_end)
        if self.window is not None:
            forced = self._windows(decided, batch, partial, partial_rows)
            keys_next = batch.keys_next  # (the driver's merge forces it in place)
            if forced is not None and isinstance(keys_next, DataFrame):
                keys_next = keys_next.join(forced, on="key", how="left").select(
                    "key",
                    "k_newest",
                    F.expr("greatest(k_watermark, coalesce(forced_w, k_watermark))").alias(
                        "k_watermark"
                    ),
                    "k_last",
                    "k_events",
                )
        elif self.job.join is not None and not self.job.references:
            self._join(decided, batch)
        else:  # (a join with reference data is a release that meets the table)
            self._release(decided, batch)
        if keys_next is not None:
            self._write_keys(keys_next, batch_id, global_end, clock)
        written = clock.setdefault("written", {})
        for name, value in self._written.items():
            written[name] = written.get(name, 0) + value
        clock["flushed"] = flush
        self.store.commit(batch_id, clock, replace=flush)
        metrics = self._metrics(clock, now, batch_id)
        metrics["flushed"] = flush
        metrics.update(self._gauges)  # state sizes: open windows, held events, keys
        metrics["this_batch"] = self._batch_counts(summary, malformed)
        # which plan judged the batch (docs/design.md): one pass per task, or the general
        metrics["plan"] = "flush" if flush else "one_pass" if fused is not None else "general"
        metrics["windows_merged_on"] = self._merged_on
        metrics["files_read_by"] = read_by
        metrics["diagnostics"] = self._diagnostics(clock, summary, now)
        self._write_metrics(metrics, label)
        for diagnostic in [] if flush else metrics["diagnostics"]:  # a flush repeats them
            _log.warning("batch %s: %s", batch_id, diagnostic["message"])
        self.last_metrics = metrics
        if self.on_metrics is not None:
            self.on_metrics(metrics)
        return metrics

    def _judge(
        self,
        lines: DataFrame,
        clock: dict[str, Any],
        now: int,
        batch_id: int,
        previous: int | None,
    ) -> tuple[Any, ...]:
        """Parse and judge a batch (the general plan): the judged rows (kept), the parsed
        rows (kept only when not fused), the per-partition summary, the delivering
        partitions, the malformed count, the input's arrival clock at the start of the
        batch and, for substreams, the keys' next state."""
        parsed = add_record_columns(self._parse(lines), self.job)  # [filter], [select]
        # Persist no raw line that no later step reads: it is the widest column, and the
        # cost of persisting grows with the width of the rows (docs/design.md).
        # Nor the record variant ``m`` (needed for malformed records only): the values
        # windows read are taken out of it here, as narrow typed columns (_inputs).
        keep_raw = "raw" if self.window is None else "CASE WHEN error IS NOT NULL THEN raw END"
        parsed = parsed.selectExpr(
            *(c for c in parsed.columns if c not in ("raw", "mtime", "pre_error", "m")),
            f"{keep_raw} AS raw",
            "CASE WHEN error IS NOT NULL THEN m END AS m",
            *(f"{expr} AS {name}" for name, expr in self._inputs()),
            *([] if "cti" in parsed.columns else ["false AS cti"]),  # SPEC §7: CTI rows
            *([] if "e" in parsed.columns else ["CAST(NULL AS BIGINT) AS e"]),  # intervals
            *([] if "edge" in parsed.columns else ["CAST(NULL AS STRING) AS edge"]),  # edges
            *([] if "eid" in parsed.columns else ["CAST(NULL AS STRING) AS eid"]),
        )
        parts: dict[str, dict[str, Any]] = clock["partitions"]
        if self._fused:
            # The policy does not depend on which partitions deliver (see _fused): judge
            # every row, malformed ones included, and learn that from the same pass.
            source, delivering, malformed = parsed, None, 0
            global_a0 = NEG_INF  # only substreams read it, and they are never fused
        else:
            parsed = self._keep(parsed)
            stats = {
                row["pid"]: row
                for row in parsed.groupBy("pid")
                .agg(
                    F.count("*").alias("n"),
                    F.max("a").alias("max_a"),
                    F.count(F.when(F.col("error").isNotNull(), 1)).alias("bad"),
                )
                .collect()
            }
            malformed = sum(row["bad"] for row in stats.values())
            delivering = {pid: row for pid, row in stats.items() if pid is not None}
            global_a0 = self._estimate(clock, delivering, now)
            self._import_ctis(parts)
            source = parsed.filter("error IS NULL")
        # 2. policy
        decided = filter_rows(
            self._policy(source, parts, global_a0, batch_id, clock.get("cti_floor", NEG_INF)),
            self.job,
        )
        decided = self._narrow(self._assign_windows(decided, parts))
        if self.edges:  # pair start and end edges (with the open ones in state)
            self._paired = self._keep(self._pair_edges(decided, previous))
            decided = self._paired.filter("NOT from_state")
        else:
            decided = self._keep(decided)
        keys_next = None
        if self.mode == "substreams":
            assert delivering is not None
            batch_keys = (
                decided.filter("key IS NOT NULL")  # (CTIs without a key: the floor)
                .groupBy("key")
                .agg(
                    F.max("h").alias("max_h"),
                    F.count("*").alias("n"),
                    F.max("cti_w").alias("max_cti"),
                    F.count(F.when(~F.col("cti"), 1)).alias("events"),
                )
            )
            keys_next = self._next_keys(batch_keys, previous, global_a0, delivering, now)
        summary = (
            decided.groupBy("pid")
            .agg(
                F.max("h").alias("max_h"),
                F.max("a").alias("max_a"),
                F.count(F.when(F.col("error").isNotNull(), 1)).alias("bad"),
                F.max("cti_w").alias("max_cti"),  # the partition's last CTI (or generated)
                F.max(F.expr("CASE WHEN cti AND key IS NULL THEN t END")).alias("max_y"),
                *self._counter_columns(),
                # the first late input event in arrival order (the diagnostic's example)
                F.min_by(
                    F.struct("a", "file", "line", "t"),
                    F.when(F.col("is_late"), F.struct("a", "file", "line")),
                ).alias("late_example"),
            )
            .collect()
        )
        if delivering is None:
            malformed = sum(row["bad"] for row in summary)
            delivering = {row["pid"]: row for row in summary if row["pid"] is not None}
            global_a0 = self._estimate(clock, delivering, now)
        return decided, parsed, summary, delivering, malformed, global_a0, keys_next

    def _batch_counts(self, summary: list[Any], malformed: int) -> dict[str, Any]:
        """The counters of this micro-batch alone (the metrics record's are cumulative)."""
        totals: dict[str, int] = {}
        for row in summary:
            if row["pid"] is None:
                continue
            for name in _COUNTERS:
                totals[name] = totals.get(name, 0) + (row[_col(name)] or 0)
        out = _summary(totals)
        out["input"] += malformed
        if malformed:
            out["dead_lettered"]["malformed"] = malformed
        out["in_no_window"] = totals.get("in_no_window", 0)
        out["windows_emitted"] = self._written.get("windows_emitted", 0)
        if self.window is not None and self.window.having is not None:
            out["windows_filtered"] = self._written.get("windows_filtered", 0)
        out["released"] = self._written.get("released", 0)
        return out

    def _diagnostics(
        self, clock: dict[str, Any], summary: list[Any], now: int
    ) -> list[dict[str, Any]]:
        """This micro-batch's diagnostics (:mod:`sparktide.core.diagnostics`)."""
        out: list[dict[str, Any]] = []
        if self.L is not None:
            late = LateInput(self.L)
            examples = sorted(
                (row["late_example"], row["pid"])
                for row in summary
                if row["late_example"] is not None
            )
            if examples:  # every late event of the batch arrived at processing time now
                (a, file, line, t), pid = examples[0]
                late.observe(
                    now,
                    count=sum(row[_col("late")] or 0 for row in summary),
                    partition=pid,
                    event_time=t,
                    arrival_time=a,
                    file=file,
                    line=line,
                )
            diagnostic = late.diagnostic()
            if diagnostic is not None:
                out.append(diagnostic)
        if self.mode == "merged":
            views = [
                PartitionView(
                    pid, part["watermark"], part["last_processing"] if part["seen"] else None
                )
                for pid, part in sorted(clock["partitions"].items())
            ]
            out.extend(
                not_progressing(
                    views,
                    now=now,
                    started=clock["started"],
                    late_arrival=self.L,
                    can_partition=self.job.join is None or bool(self.job.references),
                )
            )
        return out

    def _next_keys(
        self,
        batch_keys: DataFrame,
        previous: int | None,
        global_a0: int,
        delivering: dict[str, Any],
        now: int,
    ) -> DataFrame:
        """Substream key state after this batch: newest, watermark, last delivery per key."""
        global_end = max([global_a0, *(row["max_a"] for row in delivering.values())])
        floor = lit_us(global_end - self.LT) if self.LT is not None else NEG
        old = self.store.load_table(previous, "keys", _KEYS_SCHEMA)
        joined = old.join(batch_keys, on="key", how="full_outer")
        joined = joined.withColumn(
            "k_newest", F.expr(f"greatest(coalesce(k_newest, {NEG}), coalesce(max_h, {NEG}))")
        )
        newest = f", k_newest - {self.OT}" if self.OT is not None else ""
        return joined.select(
            "key",
            "k_newest",
            F.expr(
                f"greatest(coalesce(k_watermark, {NEG}), {floor}{newest}, coalesce(max_cti, {NEG}))"
            ).alias("k_watermark"),
            F.expr(f"CASE WHEN n IS NOT NULL THEN {lit_us(now)} ELSE k_last END").alias("k_last"),
            F.expr("coalesce(k_events, 0) + coalesce(events, 0)").alias("k_events"),
        )

    def _next_keys_table(
        self,
        batch_keys: pa.Table,
        previous: int | None,
        global_a0: int,
        delivering: dict[str, Any],
        now: int,
    ) -> pa.Table:
        """:meth:`_next_keys` on the driver, from the one-pass plan's key rows (``scope``
        the key, ``max_h``, ``kn`` its events): the keys' state after this batch."""
        global_end = max([global_a0, *(row["max_a"] for row in delivering.values())])
        floor = global_end - self.LT if self.LT is not None else NEG_INF
        old = self.store.load_arrow(previous, "keys", _KEYS_ARROW)
        batch_keys = batch_keys.rename_columns(["key", "max_h", "kn"])
        if old.num_rows:
            joined = old.join(batch_keys, keys="key", join_type="full outer")
        else:  # (no key state yet: nothing to join)
            joined = batch_keys
            for field in _KEYS_ARROW:
                if field.name != "key":
                    joined = joined.append_column(field, pa.nulls(joined.num_rows, field.type))

        def ints(name: str, default: int) -> np.ndarray:
            return pc.fill_null(joined.column(name), default).to_numpy()

        newest = np.maximum(ints("k_newest", NEG_INF), ints("max_h", NEG_INF))
        watermark = np.maximum(ints("k_watermark", NEG_INF), floor)
        if self.OT is not None:
            watermark = np.maximum(watermark, newest - self.OT)
        in_batch = filled(pc.is_valid(joined.column("kn")))
        last = np.where(in_batch, now, ints("k_last", NEG_INF))
        events = ints("k_events", 0) + ints("kn", 0)
        values = (newest, watermark, last, events)
        return pa.table(
            [joined.column("key"), *(pa.array(v, pa.int64()) for v in values)], schema=_KEYS_ARROW
        )

    # ------------------------------------------------------------------ policy (SQL)
    def _policy(
        self,
        good: DataFrame,
        parts: dict[str, dict[str, Any]],
        global_a0: int,
        batch_id: int,
        cti_floor: int,
    ) -> Any:
        E, L = self.E, self.L
        delay, late_term = self.OT, self.LT  # the watermark's heuristic terms
        if self.mode == "substreams" and self.explicit:
            # CTIs without a key punctuate every substream: the largest one before each
            # row in the input's arrival order (they are few; one ordered pass)
            good = good.withColumn(
                "Y",
                F.expr(
                    "greatest("
                    f"{lit_us(cti_floor)}, max(CASE WHEN cti AND key IS NULL THEN t END) "
                    "OVER (ORDER BY a, file, line ROWS BETWEEN UNBOUNDED PRECEDING AND "
                    "1 PRECEDING))"
                ),
            )
        else:
            good = good.withColumn("Y", F.expr(NEG))
        if self.mode == "substreams":
            keys = self.store.load_table(self.store.latest(below=batch_id), "keys", _KEYS_SCHEMA)
            rows = good.join(keys, on="key", how="left")
            rows = rows.withColumn("A0", F.expr(lit_us(global_a0)))
            rows = rows.withColumn("W0", F.expr(f"coalesce(k_watermark, {NEG})"))
            rows = rows.withColumn("newest0", F.expr(f"coalesce(k_newest, {NEG})"))
            rows = rows.withColumn("n0", F.expr("coalesce(k_events, 0)"))
            timeline = "key"
        elif parts and len(parts) <= self.INLINE_PARTITIONS:
            # The partitions' clocks as one literal map looked up by pid: the same values
            # as the broadcast join below, without its table, its broadcast job and its
            # planning. (In a map the values are not inlined into the generated code, so
            # a new batch's values do not make Spark compile it again, as CASE branches
            # with long literals did; docs/performance.md, "Fixed cost per micro-batch".)
            entries = ", ".join(
                f"{sql_string(pid)}, named_struct('A0', {lit_us(p['arrival'])}, "
                f"'W0', {lit_us(p['watermark'])}, 'newest0', {lit_us(p['newest'])}, "
                f"'n0', {lit_us(p.get('events', 0))})"
                for pid, p in parts.items()
            )
            others = [c for c in good.columns if c != "pid"]  # (the join's column order)
            rows = good.select(
                "pid", *others, F.expr(f"try_element_at(map({entries}), pid)").alias("_pc")
            ).select(
                "pid",
                *others,
                "_pc.A0",
                "_pc.W0",
                "_pc.newest0",
                F.expr("coalesce(_pc.n0, 0)").alias("n0"),  # (0 for a partition new here)
            )
            timeline = "pid"
        else:
            table = self.spark.createDataFrame(
                [
                    (pid, p["arrival"], p["watermark"], p["newest"], p.get("events", 0))
                    for pid, p in parts.items()
                ],
                "pid string, A0 bigint, W0 bigint, newest0 bigint, n0 bigint",
            )
            rows = good.join(F.broadcast(table), on="pid", how="left")
            rows = rows.withColumn("n0", F.expr("coalesce(n0, 0)"))  # (a partition new here)
            timeline = "pid"
        arrival_mode = not self.job.event_time_mode  # the policy never triggers
        late = f"(a - t > {L})" if L is not None and not arrival_mode else "false"
        early = f"(t - a > {E})" if E is not None and not arrival_mode else "false"
        floor = f"(greatest(A0, a) - {late_term})" if late_term is not None else NEG
        rows = rows.withColumn("is_early", F.expr(f"NOT cti AND {early}"))
        rows = rows.withColumn("is_late", F.expr(f"NOT cti AND {late}"))
        rows = rows.withColumn(
            "g", F.expr(f"CASE WHEN is_late THEN a - {L} ELSE t END" if L is not None else "t")
        )
        rows = rows.withColumn("floor_i", F.expr(floor))
        order = f"PARTITION BY {timeline} ORDER BY a, file, line"
        before = f"OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        # explicit CTIs of the timeline before the row (SPEC §7)
        x = f"max(CASE WHEN cti THEN t END) {before}" if self.explicit else NEG
        rows = rows.withColumn("X", F.expr(f"coalesce({x}, {NEG})"))
        threshold = "greatest(W0, floor_i, X, Y)"
        gone = "cti OR is_early" + (" OR is_late" if self.late_drop else "")
        if delay is None and not self.generated:
            h = NEG  # nothing reads the newest timestamp
        elif self.ooo == "adjust":
            h = f"greatest(g, {threshold})"
        elif self.ooo == "accept":
            h = "g"
        else:
            h = f"CASE WHEN g >= {threshold} THEN g ELSE {NEG} END"
        if self.intervals and h != NEG:
            # an interval whose start would reach its end is dropped: it moves nothing
            h = f"CASE WHEN e IS NOT NULL AND {h} >= e THEN {NEG} ELSE {h} END"
        rows = rows.withColumn("h", F.expr(f"CASE WHEN {gone} THEN {NEG} ELSE {h} END"))
        if self._scanned:  # h, gen and C from one compiled pass per timeline
            rows = self._generated_scan(rows, timeline)
        rows = rows.withColumn(
            "newest_x",
            F.expr(f"greatest(newest0, coalesce(max(h) {before}, {NEG}))"),
        )
        rows = rows.withColumn("cti_w", F.expr("CASE WHEN cti THEN t END"))
        if self.generated:
            rows = self._generated(rows, order, before)
        else:
            rows = rows.withColumn("C", F.expr(NEG))
        newest_term = f", newest_x - {delay}" if delay is not None else ""
        rows = rows.withColumn("W", F.expr(f"greatest({threshold}, C{newest_term})"))
        ooo = "false" if arrival_mode else f"(NOT ({gone}) AND g < W)"
        rows = rows.withColumn("is_ooo", F.expr(ooo))
        s_ooo = {"adjust": "W", "accept": "g"}.get(self.ooo, "CAST(NULL AS BIGINT)")
        rows = rows.withColumn(
            "s", F.expr(f"CASE WHEN {gone} THEN NULL WHEN is_ooo THEN {s_ooo} ELSE g END")
        )
        outcome_ooo = {"drop": "'dropped'", "dead_letter": "'dead_lettered'"}.get(self.ooo)
        # an interval event whose start was adjusted to its end or beyond is dropped
        ended = "e <= s"
        verdict = (
            "CASE WHEN error IS NOT NULL THEN 'malformed' WHEN cti THEN 'punctuation' "
            "WHEN is_early THEN 'dropped' "
            + ("WHEN is_late THEN 'dropped' " if self.late_drop else "")
            + (f"WHEN is_ooo THEN {outcome_ooo} " if outcome_ooo else "")
            + f"WHEN {ended} THEN 'dropped' "
            + "WHEN s <> t THEN 'adjusted' ELSE 'accepted' END"
        )
        rows = rows.withColumn("verdict", F.expr(verdict))
        rows = rows.withColumn(
            "reason",
            F.expr(
                "CASE WHEN is_early THEN 'early' "
                + ("WHEN is_late THEN 'late' " if self.late_drop else "")
                + "WHEN is_ooo AND verdict IN ('dropped', 'dead_lettered') THEN 'out_of_order' "
                + f"WHEN verdict = 'dropped' AND {ended} THEN "
                "CASE WHEN is_ooo THEN 'out_of_order' ELSE 'late' END END"
            ),
        )
        if self.intervals:
            rows = rows.withColumn(
                "s", F.expr("CASE WHEN verdict = 'dropped' THEN NULL ELSE s END")
            )
        if self.mode == "substreams":
            rows = rows.withColumn("scope", F.col("key"))
            return rows.withColumn("G", F.col("W"))
        rows = rows.withColumn("scope", F.col("pid") if self.mode == "partitioned" else F.lit(""))
        if self.mode == "merged" and (self.ooo == "accept" or delay is None) and len(parts) == 1:
            rows = rows.withColumn("G", F.col("W"))  # the one partition's watermark is the job's
        elif self.mode == "merged" and (self.ooo == "accept" or delay is None):
            # each partition's watermark just after the row: its own CTI or generated one too
            newest_after = f", greatest(newest_x, h) - {delay}" if delay is not None else ""
            rows = rows.withColumn("W_after", F.expr(f"greatest(W, cti_w{newest_after})"))
            columns = []
            for i, (pid, part) in enumerate(sorted(parts.items())):
                fill = (
                    f"max(CASE WHEN pid = {sql_string(pid)} THEN W_after END) OVER (ORDER BY a, "
                    "file, line ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
                )
                rows = rows.withColumn(f"_w{i}", F.expr(fill))
                columns.append(
                    f"CASE WHEN pid = {sql_string(pid)} THEN W ELSE "
                    f"coalesce(_w{i}, {lit_us(part['watermark'])}) END"
                )
            rows = rows.withColumn("G", F.expr(f"least({', '.join(columns)})"))
        elif self.mode == "merged":
            rows = rows.withColumn("G", F.expr(NEG))
        else:
            rows = rows.withColumn("G", F.col("W"))
        return rows

    def _generated(self, rows: DataFrame, order: str, before: str) -> DataFrame:
        """Generated CTIs (SPEC §7): ``gen`` marks the events after which one is due (every
        N events of the timeline, or when the newest timestamp enters a new period), at
        the newest timestamp minus ``delay``; ``C`` is the largest before each row.

        With a delay of zero or more a generated CTI is never above the newest timestamp,
        so the newest timestamp — a running maximum of ``h`` — does not depend on them and
        everything stays in closed form; so it does under ``accept`` (``h = g``). A negative
        delay under ``adjust``: :meth:`_generated_ahead`."""
        punctuation = self.punctuation
        assert punctuation is not None
        delay = punctuation.delay
        if self._scanned:  # (gen and C came from _generated_scan)
            return rows.withColumn(
                "cti_w",
                F.expr(f"CASE WHEN cti THEN t WHEN gen THEN greatest(newest_x, h) - {delay} END"),
            )
        if delay < 0 and self.ooo == "adjust":  # type: ignore[operator]
            return self._generated_ahead(rows, order, before)
        newest = "greatest(newest_x, h)"  # the timeline's newest timestamp after the row
        if punctuation.every_events is not None:
            count = (
                f"n0 + count(CASE WHEN NOT cti THEN 1 END) OVER ({order} ROWS BETWEEN "
                "UNBOUNDED PRECEDING AND CURRENT ROW)"
            )
            due = f"pmod({count}, {punctuation.every_events}) = 0"
        else:
            period = punctuation.every
            due = (
                f"(newest_x = {NEG} OR ({newest} - pmod({newest}, {period})) > "
                f"(newest_x - pmod(newest_x, {period})))"
            )
        rows = rows.withColumn(
            "gen", F.expr(f"NOT cti AND error IS NULL AND {newest} > {NEG} AND {due}")
        )
        rows = rows.withColumn(
            "cti_w", F.expr(f"CASE WHEN cti THEN t WHEN gen THEN {newest} - {delay} END")
        )
        return rows.withColumn(
            "C",
            F.expr(f"coalesce(max(CASE WHEN gen THEN {newest} - {delay} END) {before}, {NEG})"),
        )

    def _generated_scan(self, rows: DataFrame, timeline: str) -> DataFrame:
        """Generated CTIs that decide which events move the newest timestamp, where no
        closed form is known (:mod:`sparktide.spark.ctiscan`): ``h`` (replaced), ``gen``
        and ``C`` from one compiled pass over each timeline's rows in arrival order.

        The pass reads a few narrow columns; its results join the rows back by timeline
        and rank (null-safe: keyless CTIs have no substream key)."""
        punctuation = self.punctuation
        assert punctuation is not None
        rows = rows.withColumn(
            "_rank", F.expr(f"row_number() OVER (PARTITION BY {timeline} ORDER BY a, file, line)")
        )
        narrow = rows.select(
            F.col(timeline).alias("_tl"),
            F.col("_rank").alias("_rk"),
            "h",
            F.expr("coalesce(NOT cti, false)").alias("_counted"),  # (as _generated counts)
            F.expr("coalesce(NOT cti AND error IS NULL, false)").alias("_may"),
            "e",
            "newest0",
            "n0",
        )
        kernel = scan_kernel(
            keys=("_tl", "_rk"),
            adjust=self.ooo == "adjust",
            delay=punctuation.delay,  # type: ignore[arg-type]
            every_events=punctuation.every_events,
            every=punctuation.every,  # type: ignore[arg-type]
        )
        schema = T.StructType(
            [
                T.StructField("_tl", rows.schema[timeline].dataType),
                T.StructField("_rk", T.IntegerType()),
                *(T.StructField(n, from_arrow_type(t)) for n, t in SCAN_OUTPUT),
            ]
        )
        scanned = narrow.groupBy("_tl").applyInArrow(kernel, schema)
        return (
            rows.drop("h")
            .join(scanned, F.expr(f"{timeline} <=> _tl AND _rank = _rk"), "left")
            .drop("_tl", "_rk", "_rank")
        )

    def _generated_ahead(self, rows: DataFrame, order: str, before: str) -> DataFrame:
        """Generated CTIs every N events with a negative delay ``−δ`` under ``adjust``.

        Each CTI is δ above the newest timestamp, and the next event is adjusted up to it,
        so the newest timestamp depends on the CTIs: no longer a running maximum of a
        per-row value. But the CTI events split the timeline into segments, and the newest
        timestamp after the j-th CTI event is ``P_j = δ·S_j + max(N0, max z)`` over the
        rows before it, where ``S`` counts the segments (after the first) holding an
        admitted event up to a row and ``z = y − δ·S`` for each admitted row (``y`` = ``h``,
        the row's value without generated CTIs): a recurrence ``P_{j+1} = max(M_j, P_j +
        δ·A_j)`` unrolled into prefix sums and maxima (``docs/design.md``). The same form
        gives the newest timestamp after every row; ``newest_x`` and ``h`` are replaced by
        it (before and after the row), so the rest of the policy reads it unchanged."""
        punctuation = self.punctuation
        assert punctuation is not None
        ahead = -punctuation.delay  # type: ignore[operator]
        upto = f"OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        admitted = f"h > {NEG}"  # adjust: every row that is not gone
        rows = rows.withColumn(
            "gen",
            F.expr(
                "NOT cti AND error IS NULL "
                f"AND pmod(n0 + count(CASE WHEN NOT cti THEN 1 END) {upto}, "
                f"{punctuation.every_events}) = 0 "
                f"AND (newest0 > {NEG} OR count(CASE WHEN {admitted} THEN 1 END) {upto} > 0)"
            ),
        )
        rows = rows.withColumn("_na", F.expr(f"count(CASE WHEN {admitted} THEN 1 END) {upto}"))
        # an admitted row is the first of its segment when no admitted row lies between
        # the last CTI event and it (segment 0, before any CTI event, is not counted)
        rows = rows.withColumn(
            "_first",
            F.expr(
                f"{admitted} AND count(CASE WHEN gen THEN 1 END) {before} > 0 AND "
                f"_na - 1 = coalesce(max(CASE WHEN gen THEN _na END) {before}, 0)"
            ),
        )
        rows = rows.withColumn("_s", F.expr(f"count(CASE WHEN _first THEN 1 END) {upto}"))
        rows = rows.withColumn(
            "_sx", F.expr(f"coalesce(count(CASE WHEN _first THEN 1 END) {before}, 0)")
        )
        rows = rows.withColumn("_z", F.expr(f"CASE WHEN {admitted} THEN h - {ahead} * _s END"))
        newest = f"{ahead} * _s + greatest(newest0, coalesce(max(_z) {upto}, {NEG}))"
        newest_before = f"{ahead} * _sx + greatest(newest0, coalesce(max(_z) {before}, {NEG}))"
        rows = rows.withColumn("h", F.expr(newest))  # (δ·0 + newest0 before any row)
        rows = rows.withColumn("newest_x", F.expr(newest_before))
        rows = rows.withColumn(
            "cti_w", F.expr(f"CASE WHEN cti THEN t WHEN gen THEN h + {ahead} END")
        )
        return rows.withColumn(
            "C", F.expr(f"coalesce(max(CASE WHEN gen THEN h + {ahead} END) {before}, {NEG})")
        )

    # ------------------------------------------------------------------ windows
    def _due(self, end: str) -> str:
        return f"({end} + {self.lateness + (1 if self.closed_end else 0)})"

    def _pair_edges(self, decided: DataFrame, previous: int | None) -> DataFrame:
        """Edge events: the batch's edges paired with each other and with the open ones
        in state (:func:`sparktide.spark.edges.pair_edges`)."""
        payload = self._edge_payload()
        schema = edges_schema(decided, payload)
        state = self.store.load_table(previous, "edges", schema)
        timeline = "key" if self.mode == "substreams" else "pid"
        return pair_edges(decided, state, timeline, payload)

    def _edge_payload(self) -> list[str]:
        """What an open edge event keeps: its scope, group values and aggregate inputs."""
        assert self.window is not None
        groups = [f"g{i}" for i in range(len(self.window.group_by))]
        return ["scope", *groups, *(n for p in self.plans for n, _ in p.inputs)]

    def _edge_windows(self, edges: DataFrame, until: str | None) -> DataFrame:
        """``edges`` exploded into the windows they join now (``start``)."""
        w = self.window
        assert w is not None
        starts = edge_starts(
            size=w.size,  # type: ignore[arg-type]
            period=w.period,
            offset=w.offset,  # type: ignore[arg-type]
            lateness=self.lateness,  # type: ignore[arg-type]
            closed_end=self.closed_end,
            until=until,
        )
        return edges.select("*", F.explode(F.expr(starts)).alias("start"))

    def _assign_windows(self, rows: DataFrame, parts: dict[str, Any]) -> DataFrame:
        admitted = "s IS NOT NULL AND edge IS NULL"  # (edges join windows as they close)
        w = self.window
        if w is None or w.type in ("session", "sliding"):
            rows = rows.withColumn("starts", F.expr("CAST(NULL AS ARRAY<BIGINT>)"))
            rows = rows.withColumn("open_starts", F.col("starts"))
            rows = rows.withColumn("closed_start", F.lit(None).cast("bigint"))
        else:
            if w.type == "snapshot":
                candidates = "array(s)"
                end = "x"
            else:
                size, period, offset = w.size, w.period, w.offset
                x = "(s - 1)" if self.closed_end else "s"
                last = f"({x} - pmod({x} - {offset}, {period}))"
                count = -(-size // period)  # ceil
                candidates = (
                    f"filter(transform(sequence({count - 1}, 0, -1), k -> {last} - k * {period}), "
                    f"st -> st + {size} > {x})"
                )
                end = f"(x + {size})"
            one = w.type == "snapshot" or w.size == w.period  # one window per event
            if self.intervals:
                # an interval [s, e) is in every window sharing an instant with it
                shift = 1 if self.closed_end else 0
                low, high = f"(s - {shift})", f"(e - 1 - {shift})"
                first = f"({low} - pmod({low} - {offset}, {period}) - {count - 1} * {period})"
                final = f"({high} - pmod({high} - {offset}, {period}))"
                candidates = (
                    f"filter(sequence({first}, {final}, {period}), st -> st + {size} > {low})"
                )
                one = False
            elif one:  # no lambda: higher-order functions are interpreted, not compiled
                candidates = "array(s)" if w.type == "snapshot" else f"array({last})"
            rows = rows.withColumn("starts", F.expr(f"CASE WHEN {admitted} THEN {candidates} END"))
            if one:
                first_end = "starts[0]" if w.type == "snapshot" else f"(starts[0] + {w.size})"
                open_starts = (
                    f"CASE WHEN starts IS NULL THEN NULL WHEN {self._due(first_end)} > G THEN "
                    "starts ELSE CAST(array() AS ARRAY<BIGINT>) END"
                )
            else:
                open_starts = f"filter(starts, x -> {self._due(end)} > G)"
            rows = rows.withColumn("open_starts", F.expr(open_starts))
            closed = "(size(starts) > 0 AND size(open_starts) = 0)"
            late = "'dead_lettered'" if w.late == "dead_letter" else "'dropped'"
            rows = rows.withColumn(
                "reason",
                F.expr(f"CASE WHEN {admitted} AND {closed} THEN 'window_closed' ELSE reason END"),
            )
            rows = rows.withColumn(
                "verdict",
                F.expr(f"CASE WHEN reason = 'window_closed' THEN {late} ELSE verdict END"),
            )
            rows = rows.withColumn(
                "closed_start",
                F.expr("CASE WHEN reason = 'window_closed' THEN element_at(starts, -1) END"),
            )
        return rows

    def _narrow(self, decided: DataFrame) -> DataFrame:
        """Only the columns later steps read, before the judged batch is persisted (the
        cost of persisting grows with the width of its rows).

        The raw line is kept for released events (their field order) and malformed
        records; with windows, other dead letters find theirs in the batch's input
        (:meth:`_write_dead_letters`). ``error`` and, for malformed records, ``m`` are kept
        because a fused batch (:attr:`_fused`) writes its malformed records from here."""
        columns = [
            "file",
            "line",
            "t",
            "a",
            "s",
            "pid",
            "key",
            "h",
            "scope",
            "verdict",
            "reason",
            "is_early",
            "is_late",
            "is_ooo",
            "starts",
            "open_starts",
            "closed_start",
            "cti",
            "cti_w",
            "e",
        ]
        if self.edges:
            columns += ["edge", "eid", "G"]
        columns += ["error", "raw", "m"]  # the parsed batch keeps them only where needed
        columns += [name for name, _ in self._inputs()]
        columns += record_columns(self.job)
        return decided.selectExpr(*columns)

    def _inputs(self) -> list[tuple[str, str]]:
        """``(column, expression over m)``: the group-by values (``g<i>``, JSON text) and
        the aggregates' typed inputs, computed per row right after parsing."""
        if self.job.join is not None:  # the values a join matches on (j<i>)
            return [
                (f"j{i}", f"CASE WHEN {present(field(c))} THEN {distinct_key(field(c))} END")
                for i, c in enumerate(self.job.join.on)
            ]
        if self.window is None:
            return []
        inputs = group_inputs(self.window.group_by)
        return inputs + [item for plan in self.plans for item in plan.inputs]

    def _counter_columns(self) -> list[Any]:
        def count(condition: str, name: str) -> Any:
            return F.count(F.when(F.expr(condition), 1)).alias(_col(name))

        return [
            count("error IS NULL AND NOT cti", "input"),
            count("verdict IN ('accepted', 'adjusted')", "admitted"),
            count("is_early", "early"),
            count("is_late", "late"),
            count("is_ooo", "out_of_order"),
            count("verdict = 'adjusted'", "adjusted"),
            count("verdict IN ('accepted', 'adjusted') AND size(starts) = 0", "in_no_window"),
            count("verdict = 'dropped' AND reason = 'early'", "dropped.early"),
            count("verdict = 'dropped' AND reason = 'late'", "dropped.late"),
            count("verdict = 'dropped' AND reason = 'out_of_order'", "dropped.out_of_order"),
            count("verdict = 'dropped' AND reason = 'window_closed'", "dropped.window_closed"),
            count("verdict = 'dropped' AND reason = 'filtered'", "dropped.filtered"),
            count("verdict = 'dropped' AND reason = 'empty_edge'", "dropped.empty_edge"),
            count(
                "verdict = 'dead_lettered' AND reason = 'unmatched_edge'",
                "dead_lettered.unmatched_edge",
            ),
            count(
                "verdict = 'dead_lettered' AND reason = 'duplicate_edge'",
                "dead_lettered.duplicate_edge",
            ),
            count(
                "verdict = 'dead_lettered' AND reason = 'out_of_order'",
                "dead_lettered.out_of_order",
            ),
            count(
                "verdict = 'dead_lettered' AND reason = 'window_closed'",
                "dead_lettered.window_closed",
            ),
            count("cti", "punctuations"),
            count("NOT cti AND cti_w IS NOT NULL", "ctis_generated"),
        ]

    def _scope_watermarks(
        self, batch: _Batch, *, last: bool = False
    ) -> tuple[str, str, DataFrame | None]:
        """SQL for the governing end-of-batch watermark of a row's ``scope``, and for the
        processing time of the scope's last delivery (idle timeout); plus a table to join
        on ``scope`` when they are per key. At a flush the watermark is +inf, unless
        ``last`` asks for the last finite one."""
        if self._flushing and not last:
            return lit_us(POS_INF), NEG, None
        if self.mode == "merged":
            last = max((p["last_processing"] for p in batch.parts.values()), default=NEG_INF)
            return lit_us(batch.clock["job_watermark"]), lit_us(last), None
        if self.mode == "partitioned":
            cases = " ".join(
                f"WHEN scope = {sql_string(pid)} THEN {lit_us(p['watermark'])}"
                for pid, p in batch.parts.items()
            )
            lasts = " ".join(
                f"WHEN scope = {sql_string(pid)} THEN {lit_us(p['last_processing'])}"
                for pid, p in batch.parts.items()
            )
            return f"CASE {cases} ELSE {NEG} END", f"CASE {lasts} ELSE {NEG} END", None
        assert batch.keys_next is not None
        floor = lit_us(self._floor(batch.global_end, batch.clock))
        table = batch.keys_next.select(
            F.col("key").alias("scope"),
            F.expr(f"greatest(k_watermark, {floor})").alias("scope_w"),
            F.col("k_last").alias("scope_last"),
        )
        return f"coalesce(scope_w, {floor})", f"coalesce(scope_last, {NEG})", table

    def _windows(
        self,
        decided: DataFrame | None,
        batch: _Batch,
        spilled: _Spilled | None = None,
        partial_rows: int = 0,
    ) -> DataFrame | None:
        """Fold the batch's admitted rows (``decided``), or its partials already folded
        per task (``spilled``, the one-pass plan, ``partial_rows`` of them), into the open
        windows; write the windows that close."""
        w = self.window
        assert w is not None
        if w.type in ("session", "sliding"):
            assert decided is not None
            self._row_windows(decided, batch)
            return None
        if spilled is not None and self._driver_windows_ok(batch, partial_rows):
            self._merged_on = "driver"
            # (one task's partials are distinct by window already; so are several tasks'
            # when windows are per timeline: the one-pass plan gives a timeline, partition
            # or key, to one task only, or falls back to one task for the batch)
            distinct = len(spilled.files) == 1 or self.mode != "merged"
            self._driver_windows(spilled.arrow(), batch, distinct=distinct)
            return None
        self._merged_on = "spark"
        partial = None if spilled is None else spilled.frame(self.spark)
        if isinstance(batch.keys_next, pa.Table):  # (one-pass substreams, too many rows)
            batch.keys_next = self.spark.createDataFrame(batch.keys_next, _KEYS_SCHEMA)
        groups = [f"g{i}" for i in range(len(w.group_by))]
        keys = ["scope", *groups, "start"]
        scope_w, scope_last, table = self._scope_watermarks(batch)
        partial_aggregates = [
            F.expr(expr).alias(name) for plan in self.plans for name, expr in plan.partial
        ]
        opened: DataFrame | None = None
        reading: list[str] = []
        if partial is None:
            assert decided is not None
            partial, opened, reading = self._partials(decided, batch, keys, partial_aggregates)
        merge_aggregates = [
            F.expr(expr).alias(name) for plan in self.plans for name, expr in plan.merge
        ]
        state = self.store.load_table(batch.previous, "windows", partial.schema)
        merged = partial.unionByName(state).groupBy(*keys).agg(*merge_aggregates)

        def govern(frame: DataFrame, forced: DataFrame | None) -> DataFrame:
            """``frame`` with the watermark governing its ``scope`` now."""
            if table is not None:
                frame = frame.join(table, on="scope", how="left")
            frame = frame.withColumn("governing", F.expr(scope_w))
            if forced is not None:
                frame = frame.join(F.broadcast(forced), on="scope", how="left").withColumn(
                    "governing", F.expr("greatest(governing, coalesce(forced_w, governing))")
                )
            return frame

        end = "start" if w.type == "snapshot" else f"(start + {w.size})"
        forced = None
        if w.idle_timeout is not None and not self._flushing:
            # Idle timeout (SPEC §6): while the oldest open window of a scope has ended and
            # its source delivered nothing for idle_timeout since max(end, last delivery),
            # it closes and the watermark advances to its end (plus allowed lateness).
            due = self._due("end")
            forced = (
                govern(merged.withColumn("end", F.expr(end)), None)
                .filter(
                    f"{due} > governing AND "
                    f"greatest(end, {scope_last}) + {w.idle_timeout} <= {batch.now}"
                )
                .groupBy("scope")
                .agg(F.expr(f"max({due})").alias("forced_w"))
                .cache()
            )
            if self.mode != "substreams":
                for row in forced.collect():
                    self._force(batch.clock, batch.parts, row["scope"], row["forced_w"])
        if opened is not None:
            # events still open join the windows closing now, and are kept
            opened = govern(opened, forced)
            closing = self._edge_windows(opened, "governing").select(*reading)
            closing = closing.groupBy(*keys).agg(*partial_aggregates)
            merged = merged.unionByName(closing).groupBy(*keys).agg(*merge_aggregates)
            kept = opened.withColumn("cov", F.expr("greatest(cov, governing)"))
            self._write_state(kept.select(*self._edges_columns()), batch.id, "edges", "open_edges")
        elif self.edges:  # the flush ended every open event
            self._write_state(
                self._paired.filter("false").select(*self._edges_columns()),  # type: ignore[union-attr]
                batch.id,
                "edges",
                "open_edges",
            )
        merged = govern(merged.withColumn("end", F.expr(end)), forced)
        merged = merged.withColumn("closed", F.expr(f"{self._due('end')} <= governing"))
        merged = merged.cache()
        try:
            closed = merged.filter("closed")
            self._write_windows(closed, groups, batch.now, batch.label)
            still_open = merged.filter("NOT closed").select(*partial.columns)
            self._write_state(still_open, batch.id, "windows", "open_windows")
        finally:
            merged.unpersist()
        if forced is not None and self.mode == "substreams":
            return forced.withColumnRenamed("scope", "key")
        if forced is not None:
            forced.unpersist()
        return None

    def _driver_windows_ok(self, batch: _Batch, partial_rows: int) -> bool:
        """Whether the batch's partials fold into the open windows on the driver: few
        enough rows, and windows whose closing reads only the scopes' watermarks."""
        w = self.window
        assert w is not None
        if self._flushing or self.edges:
            return False
        if self.mode == "substreams" and not isinstance(batch.keys_next, pa.Table):
            return False
        if w.type not in ("tumbling", "hopping") or w.having is not None or self.job.select:
            return False
        held = self.store.table_rows(batch.previous, "windows")
        return partial_rows + held <= self.DRIVER_WINDOW_ROWS

    def _driver_windows(self, fresh: pa.Table, batch: _Batch, *, distinct: bool = False) -> None:
        """:meth:`_windows` on the driver, for partials folded per task (the one-pass
        plan): the partials and the open windows merge in Arrow, and the open ones (state)
        and the closed ones (records, the Spark route's very text: ``spark/records.py``)
        are written from here. Same answers, no shuffle, no Spark job (the tasks wrote the
        partials, ``fresh``, as files) instead of four or five (``docs/design.md``). With
        ``distinct``, ``fresh`` holds one row per window already."""
        w = self.window
        assert w is not None
        groups = [f"g{i}" for i in range(len(w.group_by))]
        keys = ["scope", *groups, "start"]
        held = self.store.load_arrow(batch.previous, "windows", fresh.schema)
        if distinct and held.num_rows == 0:  # (nothing to merge: 0.15 s for 1M windows)
            merged = fresh.combine_chunks()
        else:  # (held rows probed by start and one text key: the device, as a rule)
            merged = merge_into(fresh, held, keys, ["start", groups[-1] if groups else "scope"])
        end = merged.column("start").to_numpy() + w.size
        due = end + self.lateness + (1 if self.closed_end else 0)
        governing, last = self._scope_arrays(merged.column("scope"), batch)
        if w.idle_timeout is not None:
            # as in _windows: the oldest open window of an idle scope closes
            idle = (due > governing) & (np.maximum(end, last) + w.idle_timeout <= batch.now)
            if idle.any():
                scopes = pc.dictionary_encode(merged.column("scope")).combine_chunks()
                code = scopes.indices.to_numpy()
                forced = np.full(len(scopes.dictionary), NEG_INF, dtype=np.int64)
                np.maximum.at(forced, code[idle], due[idle])
                if isinstance(batch.keys_next, pa.Table):  # substreams: the keys' state
                    batch.keys_next = _forced_keys(batch.keys_next, scopes.dictionary, forced)
                for i in np.flatnonzero(forced > NEG_INF) if self.mode != "substreams" else []:
                    scope = scopes.dictionary[int(i)].as_py()
                    self._force(batch.clock, batch.parts, scope, int(forced[i]))
                governing = np.maximum(governing, forced[code])
        closed = due <= governing
        still_open = merged.filter(pa.array(~closed))
        self.store.write_arrow(still_open, batch.id, "windows")
        self._gauges["open_windows"] = still_open.num_rows
        if self.output.path is None:  # (as _write_text)
            return
        ended = merged.filter(pa.array(closed)).append_column(
            "end", pa.array(end[closed], pa.int64())
        )
        names = [tuple(name for name, _ in plan.partial) for plan in self.plans]
        doubles = functools.partial(spark_doubles, self.spark)
        lines = window_lines(ended, w, names, batch.now, doubles)
        write_lines(lines, f"{self.output.path}/{batch.label}")
        self._written["windows_emitted"] = self._written.get("windows_emitted", 0) + len(lines)

    def _scope_arrays(self, scope: pa.ChunkedArray, batch: _Batch) -> tuple[Any, Any]:
        """:meth:`_scope_watermarks` for the driver: the governing watermark and the last
        delivery's processing time of each row's ``scope`` (for substreams, the last
        delivery only when an idle timeout reads it)."""
        n = len(scope)
        parts = batch.parts
        if isinstance(batch.keys_next, pa.Table):  # substreams: the key's, or the floor
            keys = batch.keys_next
            floor = self._floor(batch.global_end, batch.clock)
            assert self.window is not None
            if self.window.idle_timeout is None:  # (no last delivery read)
                # only keys above the floor govern otherwise than the floor (one batch
                # of 1M events of 1M devices: 631k keys, 37k above it; 0.17 s → 0.02 s)
                keys = keys.filter(pc.greater(keys.column("k_watermark"), floor))
            where = pc.index_in(scope, value_set=keys.column("key"))
            index = pc.fill_null(where, keys.num_rows).to_numpy()
            watermark = np.append(keys.column("k_watermark").to_numpy(), NEG_INF)
            last = np.append(keys.column("k_last").to_numpy(), NEG_INF)
            return np.maximum(watermark[index], floor), last[index]
        if self.mode == "merged":
            last = max((p["last_processing"] for p in parts.values()), default=NEG_INF)
            return (
                np.full(n, batch.clock["job_watermark"], dtype=np.int64),
                np.full(n, last, dtype=np.int64),
            )
        pids = list(parts)
        where = pc.index_in(scope, value_set=pa.array(pids, pa.string()))
        index = pc.fill_null(where, len(pids)).to_numpy()  # (an unknown scope: -inf)
        watermark = np.array([*(parts[p]["watermark"] for p in pids), NEG_INF], dtype=np.int64)
        last = np.array([*(parts[p]["last_processing"] for p in pids), NEG_INF], dtype=np.int64)
        return watermark[index], last[index]

    def _partials(
        self, decided: DataFrame, batch: _Batch, keys: list[str], partial_aggregates: list[Any]
    ) -> tuple[DataFrame, DataFrame | None, list[str]]:
        """The batch's partial aggregates per window from its admitted rows; with edges,
        also the events still open and the columns their windows read."""
        groups = keys[1:-1]
        rows = decided.filter("verdict IN ('accepted', 'adjusted')").select(
            "*", F.explode("open_starts").alias("start")
        )
        reading: list[str] = []
        opened = None
        if self.edges:
            # edge events: those ended in the batch join their windows not closed yet
            # (and, at the flush, the open ones end at their scope's last watermark)
            assert self._paired is not None
            payload = self._edge_payload()
            reading = [*keys, "s", "a", "file", "line", *payload[len(groups) + 1 :]]
            ended = ended_edges(self._paired, payload)
            opened = open_edges(self._paired, payload)
            if self._flushing:
                last, _, last_table = self._scope_watermarks(batch, last=True)
                if last_table is not None:
                    opened = opened.join(last_table, on="scope", how="left")
                ended = ended.unionByName(
                    opened.select(
                        *ended.columns[:-2], F.expr(last).alias("e"), F.expr(NEG).alias("X")
                    )
                )
                opened = None
            rows = rows.select(*reading).unionByName(
                self._edge_windows(ended, None).select(*reading)
            )
        return rows.groupBy(*keys).agg(*partial_aggregates), opened, reading

    def _edges_columns(self) -> list[str]:
        """The columns of the ``edges`` state table, in order."""
        return ["tl", "eid", "cov", "s", "a", "file", "line", *self._edge_payload()]

    def _write_windows(self, closed: DataFrame, groups: list[str], now: int, label: str) -> None:
        """Write closed windows (``scope``, groups, ``start``, ``end``, merged partials)."""
        w = self.window
        assert w is not None
        # The record is put together from the values' JSON text: through a variant
        # (parse_json) a float such as 21.0 would be written as 21.
        fields = [(column, name) for name, column in zip(groups, w.group_by, strict=True)]
        fields.append(("window_start", f"concat('\"', {iso('start')}, '\"')"))
        fields.append(("window_end", f"concat('\"', {iso('end')}, '\"')"))
        for aggregate, plan in zip(w.aggregates, self.plans, strict=True):
            fields.append((aggregate.name, f"coalesce({plan.final}, 'null')"))
        kept = None
        if w.having is not None or self.job.select:  # see sparktide.spark.expr
            closed, having, selected = window_projection(
                closed, self.job, dict(fields), ("start", "end")
            )
            fields = selected or fields
            if having is not None:
                # Windows that fail it are counted by a query of their own: an observation
                # is lost when every closed window fails (Spark then prunes the write).
                kept = closed = closed.cache()
                failed = closed.agg(F.count_if(~F.col(having)).alias("n")).collect()[0]["n"]
                self._written["windows_filtered"] = (
                    self._written.get("windows_filtered", 0) + failed
                )
                closed = closed.filter(having)
        fields.append(("emitted_at", f"concat('\"', {iso(lit_us(now))}, '\"')"))
        members = ", ',', ".join(
            f"{sql_string(json.dumps(name) + ':')}, {text}" for name, text in fields
        )
        record = f"concat('{{', {members}, '}}')"
        order = _ordered("end", "start", "scope", *groups)
        out = closed.select(*order, F.expr(record).alias("value"))
        self._write_text(out, self.output.path, label, "windows_emitted")
        if kept is not None:
            kept.unpersist()

    def _row_windows(self, decided: DataFrame, batch: _Batch) -> None:
        """Session and sliding windows (see :mod:`sparktide.spark.rowwindows`)."""
        w = self.window
        assert w is not None
        groups = [f"g{i}" for i in range(len(w.group_by))]
        rows = decided.filter("verdict IN ('accepted', 'adjusted')").select(
            "scope",
            *groups,
            "s",
            "a",
            "file",
            "line",
            *(n for p in self.plans for n, _ in p.inputs),
        )
        state = self.store.load_table(batch.previous, "rows", rows.schema)
        marks = self.store.load_table(batch.previous, "marks", marks_schema(groups))
        every = rows.unionByName(state)
        scope_w, _, table = self._scope_watermarks(batch)
        if table is not None:
            every = every.join(table, on="scope", how="left")
        every = every.withColumn("governing", F.expr(scope_w))
        offset = self.lateness + (1 if self.closed_end else 0)
        if w.type == "session":
            closed, still_open, new_marks = session_windows(
                every, marks, w, groups, offset, self.closed_end
            )
        else:
            closed, still_open, new_marks = sliding_windows(every, marks, w, groups, offset)
        keys = ["scope", *groups, "window_start", "window_end"]
        results = (
            closed.groupBy(*keys)
            .agg(*(F.expr(expr).alias(name) for plan in self.plans for name, expr in plan.partial))
            .withColumnRenamed("window_start", "start")
            .withColumnRenamed("window_end", "end")
        )
        self._write_windows(results, groups, batch.now, batch.label)
        self._write_state(still_open.select(*rows.columns), batch.id, "rows", "window_rows")
        self._write_state(new_marks, batch.id, "marks")

    def _force(self, clock: dict[str, Any], parts: dict[str, Any], scope: str, to: int) -> None:
        """Advance the watermark governing ``scope`` to ``to`` (idle timeout)."""
        if self.mode == "merged":
            for part in parts.values():
                part["watermark"] = max(part["watermark"], to)
            clock["job_watermark"] = max(clock["job_watermark"], to)
        else:
            parts[scope]["watermark"] = max(parts[scope]["watermark"], to)

    # ------------------------------------------------------------------ ordered release
    def _release(self, decided: DataFrame, batch: _Batch) -> None:
        reserved = "'timestamp', 'type'"
        end = ""
        if self.intervals:  # interval events carry their end (SPEC §7)
            reserved += ", 'end_timestamp'"
            end = f", 'end_timestamp', parse_json(concat('\"', {iso('e')}, '\"'))"
        event = (
            # from the line, not the variant ``m``, to keep the record's field order
            "to_json(map_concat(transform_keys(transform_values(from_json(raw, "
            "'map<string,variant>'), (k, v) -> CASE WHEN schema_of_variant(v) RLIKE "
            f"{INTEGRAL_FLOAT} THEN CAST(try_variant_get(v, '$', 'double') AS VARIANT) "
            "ELSE v END), "
            f"(k, x) -> CASE WHEN k IN ({reserved}) THEN concat('input_', k) ELSE k END), "
            f"map('timestamp', parse_json(concat('\"', {iso('s')}, '\"')){end})))"
        )
        if self.job.select:  # [select]: the projected columns (computed after parsing)
            event = projected_event(self.job, iso("s"))
        if self.job.references:  # a join with reference data: the record, met on release
            event = "raw"
        admitted = decided.filter("verdict IN ('accepted', 'adjusted')").select(
            "scope", "s", "a", "file", "line", F.expr(event).alias("value")
        )
        held = self.store.load_table(batch.previous, "held", _HELD_SCHEMA)
        rows = admitted.unionByName(held)
        scope_w, _, table = self._scope_watermarks(batch)
        if table is not None:
            rows = rows.join(table, on="scope", how="left")
        rows = rows.withColumn("ready", F.expr(f"s <= {scope_w}")).cache()
        try:
            ready = rows.filter("ready")
            if self.job.references:
                out = self._meet(ready)
            else:
                out = ready.select(*_ordered("s", "a", "file", "line"), "value")
            self._write_text(out, self.output.path, batch.label, "released")
            held = rows.filter("NOT ready").select(*_HELD_SCHEMA.names)
            self._write_state(held, batch.id, "held", "held")
        finally:
            rows.unpersist()

    # ------------------------------------------------------------------ reference data
    def _meet(self, ready: DataFrame) -> DataFrame:
        """Released events (``value``: the record's JSON text) joined with the reference
        data (:class:`sparktide.core.join.ReferenceJoin`): one record per matching row,
        in (timestamp, arrival order, the row's place in the table) order; under
        ``type = "left"`` an event without a match once, its right side ``null``. Both
        sides' keys are the same SQL (:func:`distinct_key` of each ``on`` field of a
        variant), so they match as the reference engine's :func:`join_key` does."""
        join = self.job.join
        assert join is not None
        keys = [f"j{i}" for i in range(len(join.on))]
        events = self._with_keys(ready.selectExpr("s", "a", "file", "line", "value"), "value")
        events = events.alias("e")
        table = F.broadcast(self._reference_table()).alias("r")
        condition = " AND ".join(f"e.{k} = r.{k}" for k in keys)
        met = events.join(table, F.expr(condition), "left" if join.type == "left" else "inner")
        met = met.select(
            *_ordered("e.s", "e.a", "e.file", "e.line", "r.ro"),
            F.col("e.s").alias("s"),
            F.col("e.value").alias("lraw"),
            F.col("r.text").alias("rraw"),
        )
        met, value = self._match_record(met)
        order = [c for c in met.columns if c.startswith("_o")]
        return met.selectExpr(*order, f"{value} AS value")

    def _match_record(self, matches: DataFrame) -> tuple[DataFrame, str]:
        """SQL of the event record a join writes for each match (columns ``lraw`` and
        ``rraw``, both records' JSON text, the right one null when a left join met no
        row; ``s``, the match's timestamp): ``[select]``'s columns then ``timestamp``
        (:func:`join_projection`), else ``{left: ..., right: ..., "timestamp": ...}``.
        Returns the frame (with what the projection needs) and the SQL."""
        join = self.job.join
        assert join is not None
        if self.job.select:
            return join_projection(matches, self.job, ("lraw", "rraw"), "s")
        members = [
            sql_string(json.dumps(join.left) + ":"),
            "lraw",
            sql_string("," + json.dumps(join.right) + ":"),
            "coalesce(rraw, 'null')",
            sql_string(',"timestamp":"'),
            iso("s"),
            "'\"'",
        ]
        return matches, f"concat('{{', {', '.join(members)}, '}}')"

    def _reference_table(self) -> DataFrame:
        """The reference data as ``ro`` (its place), ``text`` (the row's JSON) and the
        ``j<i>`` keys: read on the driver by the reference engine's reader, once."""
        if self._reference is None:
            frame = self.spark.createDataFrame(self._reference_rows, "ro bigint, text string")
            self._reference = self._with_keys(frame, "text").cache()
        return self._reference

    def _with_keys(self, frame: DataFrame, text: str) -> DataFrame:
        """``frame`` with the ``j<i>`` keys of the JSON record in column ``text``, by the
        expressions the stream's keys are computed with (:meth:`_inputs`)."""
        keyed = frame.withColumn("m", F.expr(f"parse_json({text})"))
        return keyed.selectExpr(
            *frame.columns, *(f"{expr} AS {name}" for name, expr in self._inputs())
        )

    # ------------------------------------------------------------------ temporal join
    def _join(self, decided: DataFrame, batch: _Batch) -> None:
        """A temporal join (SPEC §7, :mod:`sparktide.core.join`): the batch's admitted
        events of each side meet the other side's — this batch's and those kept from
        earlier ones — on equal ``j<i>`` values and ``low ≤ right.s − left.s ≤ high``;
        a pair of two kept events was matched before, so at least one is new. Matches
        (at the later timestamp) wait in state until the job watermark reaches them, and
        are written in (timestamp, left's arrival order, right's) order. A kept event is
        forgotten once no future event of the other side can match it: every later one
        starts at or above that side's watermark (the minimum over its partitions, when
        they are all declared; else events are kept)."""
        join = self.job.join
        assert join is not None
        assert join.between is not None
        low, high = join.between
        keys = [f"j{i}" for i in range(len(join.on))]
        columns = ["side", *keys, "s", "a", "file", "line", "raw"]
        admitted = (
            decided.filter("verdict IN ('accepted', 'adjusted')")
            .withColumn("side", F.expr("split(pid, '/')[0]"))
            .select(*columns)
        )
        kept = self.store.load_table(batch.previous, "joined", _join_schema(keys))
        every = admitted.withColumn("new", F.lit(True)).unionByName(
            kept.withColumn("new", F.lit(False))
        )
        left = every.filter(F.col("side") == join.left).alias("l")
        right = every.filter(F.col("side") == join.right).alias("r")
        condition = " AND ".join(f"l.{k} = r.{k}" for k in keys)
        condition += f" AND r.s - l.s BETWEEN {low} AND {high} AND (l.new OR r.new)"
        pairs = left.join(right, F.expr(condition))
        matches = pairs.selectExpr(
            "greatest(l.s, r.s) AS s",
            "l.a AS la",
            "l.file AS lfile",
            "l.line AS lline",
            "r.a AS ra",
            "r.file AS rfile",
            "r.line AS rline",
            "l.raw AS lraw",
            "r.raw AS rraw",
        )
        matches, value = self._match_record(matches)
        matches = matches.selectExpr(
            *(f.name for f in _MATCHES_SCHEMA.fields[:-1]), f"{value} AS value"
        )
        held = self.store.load_table(batch.previous, "matches", _MATCHES_SCHEMA)
        scope_w, _, _ = self._scope_watermarks(batch)
        rows = matches.unionByName(held).withColumn("ready", F.expr(f"s <= {scope_w}")).cache()
        try:
            out = rows.filter("ready").select(
                *_ordered("s", "la", "lfile", "lline", "ra", "rfile", "rline"), "value"
            )
            self._write_text(out, self.output.path, batch.label, "released")
            waiting = rows.filter("NOT ready").select(*_MATCHES_SCHEMA.names)
            self._write_state(waiting, batch.id, "matches", "held")
        finally:
            rows.unpersist()
        keep = {join.left: f"s + {high} >= {self._side_floor(join.right, batch)}"}
        keep[join.right] = f"s - {low} >= {self._side_floor(join.left, batch)}"
        still = every.filter(
            " OR ".join(f"(side = {sql_string(side)} AND {c})" for side, c in keep.items())
        )
        self._write_state(still.select(*columns), batch.id, "joined", "join_events")

    def _side_floor(self, name: str, batch: _Batch) -> str:
        """SQL for the lowest timestamp a future event of input ``name`` can have: the
        minimum watermark over its partitions when they are all declared, else −∞."""
        if self._flushing:
            return lit_us(POS_INF)
        source = dict(self.job.inputs)[name]
        if source.partitions is None:
            return NEG
        marks = [p["watermark"] for pid, p in batch.parts.items() if input_of(pid) == name]
        return lit_us(min(marks)) if marks else NEG

    # ------------------------------------------------------------------ outputs
    def _write_dead_letters(
        self,
        parsed: DataFrame,
        decided: DataFrame,
        label: str,
        lines: DataFrame | None,
        malformed_count: int,
    ) -> None:
        """Malformed records (from ``parsed``) and dead-lettered events (from ``decided``;
        ``lines``, the batch's input, when there are any: with windows their raw lines are
        not kept, so they are looked up there by file and line)."""
        if self.output.dead_letter is None:
            return
        if lines is None and not malformed_count:  # nothing to write: no Spark job
            self._empty_directory(f"{self.output.dead_letter}/{label}")
            return
        # The record goes in as JSON text, never through parse_json: a malformed line may
        # be far longer than a variant (or Jackson's longest string) can hold. A record
        # that parsed (``m``) is its own JSON text (every format's ``raw`` is): through the
        # variant a float such as 3.0 would come out as 3.
        original = (
            "CASE WHEN m IS NOT NULL THEN raw "
            "ELSE substr(to_json(array(raw)), 2, length(to_json(array(raw))) - 2) END"
        )
        malformed = parsed.filter("error IS NOT NULL").select(
            "file",
            "line",
            F.lit("malformed").alias("reason"),
            F.expr(original).alias("record"),
            "error",
            F.lit(None).cast("bigint").alias("closed_start"),
        )
        rows = malformed
        if lines is not None:
            lettered = decided.filter("verdict = 'dead_lettered'")
            if self.window is not None:  # raw lines are kept for malformed records only
                lettered = lettered.drop("raw").join(
                    self._raw_lines(lines, lettered), ["file", "line"]
                )
            rows = rows.unionByName(
                lettered.select(
                    "file",
                    "line",
                    "reason",
                    F.col("raw").alias("record"),  # a well-formed record: JSON text already
                    F.lit(None).cast("string").alias("error"),
                    "closed_start",
                )
            )
        head = ["'file', file", "'line', line", "'reason', reason"]
        tail = ["'error', error"]
        if self.window is not None:
            size = self.window.size if self.window.type in ("tumbling", "hopping") else 0
            tail.append(f"'window_start', {iso('closed_start')}")
            tail.append(f"'window_end', {iso(f'(closed_start + {size})')}")
        options = "map('ignoreNullFields', 'false')"
        head_json = f"to_json(named_struct({', '.join(head)}), {options})"
        tail_json = f"to_json(named_struct({', '.join(tail)}), {options})"
        record = (
            f"concat(left({head_json}, length({head_json}) - 1), ',\"record\":', record, ',', "
            f"substr({tail_json}, 2))"
        )
        out = rows.select(*_ordered("file", "line"), F.expr(record).alias("value"))
        self._write_text(out, self.output.dead_letter, label)

    def _empty_directory(self, directory: str) -> None:
        """Replace ``directory`` by an empty one (what an overwrite with no rows leaves),
        through Hadoop's file system API, so any file system Spark writes to works."""
        jvm = self.spark.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(directory)
        fs = path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())
        fs.delete(path, True)
        fs.mkdirs(path)

    @staticmethod
    def _raw_lines(lines: DataFrame, wanted: DataFrame) -> DataFrame:
        """``file``, ``line``, ``raw`` of the input lines ``wanted`` names (few: only the
        files holding them are split into lines again)."""
        if FULL_TEXT in lines.columns:  # typed Parquet rows: raw may be left out
            return lines.select("file", "line", F.col(FULL_TEXT).alias("raw"))
        if "raw" in lines.columns:
            return lines.select("file", "line", "raw")
        files = wanted.select("file").distinct()
        return split_lines(lines.join(F.broadcast(files), "file", "left_semi")).select(
            "file", "line", "raw"
        )

    def _write_text(
        self, frame: DataFrame, directory: str | None, label: str, counter: str | None = None
    ) -> None:
        """Write ``frame``'s ``value`` as one text file, in the order of its ``_o<i>``
        columns (see :func:`_ordered`); with ``counter``, add the number of records
        written to that counter of the batch (observed by the write itself: no job).

        One partition sorted locally, rather than a global ``orderBy`` then
        ``coalesce(1)``: the same single ordered file without the range-sampling job."""
        if directory is None:
            return
        order = sorted((c for c in frame.columns if c.startswith("_o")), key=lambda c: int(c[2:]))
        observation = Observation() if counter is not None else None
        if observation is not None:
            frame = frame.observe(observation, F.count(F.lit(1)).alias("n"))
        (
            frame.repartition(1)
            .sortWithinPartitions(*order)
            .select("value")
            .write.mode("overwrite")
            .text(f"{directory}/{label}")
        )
        if observation is not None and counter is not None:
            self._written[counter] = self._written.get(counter, 0) + _observed_count(observation)

    def _write_state(
        self, frame: DataFrame, batch_id: int, table: str, gauge: str | None = None
    ) -> None:
        """Write a state table of the batch; with ``gauge``, its row count becomes that
        state gauge of the metrics record (observed by the write: no extra job)."""
        observation = Observation() if gauge is not None else None
        if observation is not None:
            frame = frame.observe(observation, F.count(F.lit(1)).alias("n"))
        frame.write.mode("overwrite").parquet(self.store.table_path(batch_id, table))
        if observation is not None and gauge is not None:
            self._gauges[gauge] = _observed_count(observation)

    def _write_keys(
        self,
        keys_next: DataFrame | pa.Table,
        batch_id: int,
        global_end: int,
        clock: dict[str, Any],
    ) -> None:
        floor = self._floor(global_end, clock)
        # a key whose watermark and newest timestamp the floor has passed can no longer
        # matter — unless generated CTIs (they count a key's events and read its newest
        # timestamp) or an idle timeout (it reads its last delivery) need it kept
        evicts = (self.window is None or self.window.idle_timeout is None) and not self.generated
        if isinstance(keys_next, pa.Table):  # (the one-pass plan's, on the driver)
            kept = pc.scalar(True)
            if evicts:
                kept = pc.field("k_watermark") > floor
                if self.OT is not None:
                    kept = kept | (pc.subtract(pc.field("k_newest"), self.OT) > floor)
            table = keys_next.filter(kept)
            self.store.write_arrow(table, batch_id, "keys")
            self._gauges["substream_keys"] = table.num_rows
            return
        keep = "true"
        if evicts:
            newest = f"k_newest - {self.OT} > {floor}" if self.OT is not None else "false"
            keep = f"({newest} OR k_watermark > {floor})"
        self._write_state(keys_next.filter(keep), batch_id, "keys", "substream_keys")

    def _metrics(self, clock: dict[str, Any], now: int, batch_id: int) -> dict[str, Any]:
        totals: dict[str, int] = {}
        for entry in clock["counters"].values():
            for name, value in entry.items():
                totals[name] = totals.get(name, 0) + value
        parts = clock["partitions"]
        if self.mode == "merged":
            watermark = clock["job_watermark"]
        elif self.mode == "partitioned":
            watermark = min((p["watermark"] for p in parts.values()), default=NEG_INF)
        else:
            watermark = self._floor(clock["arrival"], clock)
        record = {"type": "metrics", "batch": batch_id, **_summary(totals)}
        record["input"] += clock.get("malformed", 0)
        if clock.get("malformed"):
            record["dead_lettered"]["malformed"] = clock["malformed"]
        record["in_no_window"] = totals.get("in_no_window", 0)
        written = clock.get("written", {})
        record["windows_emitted"] = written.get("windows_emitted", 0)
        if self.window is not None and self.window.having is not None:
            record["windows_filtered"] = written.get("windows_filtered", 0)
        record["released"] = written.get("released", 0)
        record["processing_time"] = _iso(now)
        record["watermark"] = _iso(watermark)
        record["watermark_delay_us"] = now - watermark if -(1 << 61) < watermark else None
        if self.window is not None:  # (substreams: the watermark above is the floor)
            record["output_watermark"] = _iso(output_watermark(self.window, watermark))
        record["partitions"] = [
            {
                "partition": pid,
                **_summary(clock["counters"].get(pid, {})),
                "arrival_clock": _iso(p["arrival"]),
                **({"watermark": _iso(p["watermark"])} if self.mode != "substreams" else {}),
            }
            for pid, p in sorted(parts.items())
        ]
        return record

    @staticmethod
    def metrics_directory_of(job: Job) -> str:
        """Where a job's metrics records go: ``[output] metrics``, else beside its state
        (they are also what :func:`sparktide.spark.run.publish_metrics` publishes)."""
        if job.output.metrics is not None:
            return job.output.metrics
        assert job.output.checkpoint is not None
        return f"{job.output.checkpoint}/sparktide/metrics"

    def _write_metrics(self, metrics: dict[str, Any], label: str) -> None:
        """One JSON file per batch, renamed into place whole (a stream reading the
        directory never sees half a file: Spark skips names starting with a dot)."""
        from pathlib import Path

        path = Path(self.metrics_directory_of(self.job).removeprefix("file:"))
        path.mkdir(parents=True, exist_ok=True)
        tmp = path / f".{label}.json.tmp"
        tmp.write_text(json.dumps(metrics) + "\n")
        tmp.replace(path / f"{label}.json")

    # ------------------------------------------------------------------ flush
    def flush(self) -> dict[str, Any] | None:
        """Close every open window and release every held event (end of a finite input).

        The outputs go to directories named ``flush=<last batch>``; the last batch's state
        is then replaced by a flushed one, so flushing twice writes nothing twice.
        """
        previous = self.store.latest()
        if previous is None:
            return None
        clock = self.store.load_clock(previous)
        assert clock is not None
        if clock.get("flushed"):
            return None
        empty = self.spark.createDataFrame([], "file string, line bigint, raw string, mtime bigint")
        return self.process(empty, previous, flush=True)


def _forced_keys(keys: pa.Table, scopes: pa.Array, forced: np.ndarray) -> pa.Table:
    """The keys' state with the watermarks the idle timeout forced (``forced[i]`` for the
    key ``scopes[i]``; minus infinity where none was)."""
    where = pc.index_in(keys.column("key"), value_set=scopes)
    index = pc.fill_null(where, len(scopes)).to_numpy()
    raised = np.append(forced, NEG_INF)[index]
    watermark = np.maximum(keys.column("k_watermark").to_numpy(), raised)
    at = keys.schema.get_field_index("k_watermark")
    return keys.set_column(at, "k_watermark", pa.array(watermark, pa.int64()))


_KEYS_SCHEMA = T.StructType(
    [
        T.StructField("key", T.StringType()),
        T.StructField("k_newest", T.LongType()),
        T.StructField("k_watermark", T.LongType()),
        T.StructField("k_last", T.LongType()),
        T.StructField("k_events", T.LongType()),  # events judged (generated CTIs count them)
    ]
)
_MATCHES_SCHEMA = T.StructType(
    [
        T.StructField("s", T.LongType()),
        T.StructField("la", T.LongType()),
        T.StructField("lfile", T.StringType()),
        T.StructField("lline", T.LongType()),
        T.StructField("ra", T.LongType()),
        T.StructField("rfile", T.StringType()),
        T.StructField("rline", T.LongType()),
        T.StructField("value", T.StringType()),
    ]
)


def _join_schema(keys: list[str]) -> T.StructType:
    """The events a join keeps (``joined``): side, join values, timestamp, arrival order
    and the record's text."""
    return T.StructType(
        [
            T.StructField("side", T.StringType()),
            *(T.StructField(k, T.StringType()) for k in keys),
            T.StructField("s", T.LongType()),
            T.StructField("a", T.LongType()),
            T.StructField("file", T.StringType()),
            T.StructField("line", T.LongType()),
            T.StructField("raw", T.StringType()),
        ]
    )


_HELD_SCHEMA = T.StructType(
    [
        T.StructField("scope", T.StringType()),
        T.StructField("s", T.LongType()),
        T.StructField("a", T.LongType()),
        T.StructField("file", T.StringType()),
        T.StructField("line", T.LongType()),
        T.StructField("value", T.StringType()),
    ]
)


def _read_reference(job: Job) -> list[tuple[int, str]]:
    """The rows of a job's reference data as ``(place, JSON text)``, read on the driver
    by the reference engine's reader (:func:`sparktide.reader.read_reference`), so both
    engines see the same values."""
    from sparktide.core.records import jsonable
    from sparktide.reader import read_reference

    ((name, reference),) = job.references
    return [
        (i, json.dumps(jsonable(row), ensure_ascii=False))
        for i, row in enumerate(read_reference(name, reference))
    ]


def _observed_count(observation: Observation) -> int:
    """The count an :class:`Observation` of ``count(1) AS n`` saw.

    When Spark proves the observed rows empty at run time (adaptive execution over a
    cached frame), it drops the observing node and the observation completes with an
    empty row, which ``Observation.get`` cannot convert (measured with PySpark 4.3): that
    row means nothing was written."""
    row = observation._jo.getRow()  # type: ignore[union-attr]
    return 0 if row.size() == 0 else int(row.getLong(0))


def _spilled(files: list[str | None], schema: pa.Schema) -> pa.Table:
    """The rows of the files the one-pass tasks wrote (``None``: a task wrote none)."""
    tables = [pq.read_table(path).cast(schema) for path in files if path]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _typed_names(job: Job) -> list[str]:
    """The columns typed Parquet rows carry for the one-pass kernel alone."""
    return [name for name, _ in typed_columns(job)]


def _idle_arrival(part: dict[str, Any], now: int) -> int:
    """A partition's arrival clock at ``now`` if it delivers nothing (SPEC §4): its last
    arrival plus the processing time since, or ``now`` − 5 s if never seen."""
    guess = (
        part["last_arrival"] + (now - part["last_processing"])
        if part["seen"]
        else now - NEVER_SEEN_LAG
    )
    return max(part["arrival"], guess)


def _new_partition() -> dict[str, Any]:
    return {
        "arrival": NEG_INF,
        "last_arrival": NEG_INF,
        "last_processing": NEG_INF,
        "seen": False,
        "newest": NEG_INF,
        "watermark": NEG_INF,
    }


def _ordered(*columns: str) -> list[Any]:
    """``columns`` renamed ``_o0, _o1, ...``: the sort key :meth:`SparkEngine._write_text`
    writes in."""
    return [F.col(c).alias(f"_o{i}") for i, c in enumerate(columns)]


_col = counter_column


def _iso(instant: int) -> str | None:
    from sparktide.core.records import time_or_none

    return time_or_none(instant)


def _summary(counter: dict[str, int]) -> dict[str, Any]:
    dropped = {k.split(".", 1)[1]: v for k, v in counter.items() if k.startswith("dropped.") and v}
    dead = {
        k.split(".", 1)[1]: v for k, v in counter.items() if k.startswith("dead_lettered.") and v
    }
    return {
        "input": counter.get("input", 0),
        "admitted": counter.get("admitted", 0),
        "early": counter.get("early", 0),
        "late": counter.get("late", 0),
        "out_of_order": counter.get("out_of_order", 0),
        "adjusted": counter.get("adjusted", 0),
        "dropped": dict(sorted(dropped.items())),
        "dead_lettered": dict(sorted(dead.items())),
        "punctuations": counter.get("punctuations", 0),
        "ctis_generated": counter.get("ctis_generated", 0),
    }


#: :data:`_KEYS_SCHEMA` in Arrow (the keys' state read and written on the driver).
_KEYS_ARROW = to_arrow_schema(_KEYS_SCHEMA)
