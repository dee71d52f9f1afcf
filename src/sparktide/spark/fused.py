"""One pass per task: parse, judge and pre-aggregate a micro-batch with no shuffle of events.

The general plan (``docs/design.md``, *One micro-batch*) parses the batch in one stage,
shuffles every event by timeline and judges each timeline in a second stage. When the
source's partitions are the timelines and every partition's events of the batch sit in
one Spark task — a file per partition, or keyed Kafka-like input — nothing needs to move:
each task can parse its lines, run the ordering policy per partition in arrival order
and fold the admitted events into window partials itself, writing only the partials (one
row per window and group, as a parquet file beside the checkpoint, which the driver reads
with pyarrow) and sending back one summary row per partition. This is the plan of the
fastest prototype in ``../shared/notes/spark-facts.md``. Parquet files are read by the
task itself (pyarrow, by path) when every value is one Spark's typed route reads the
same way (:func:`_parquet_values`).

Whether a batch qualifies is known only after its lines are parsed, so the pass is
*optimistic*: :func:`fused_kernel` runs it per task over the lines it vouches for
(:mod:`sparktide.spark.arrowparse`) and writes the others out as they are; the engine
takes the result only when those others all turn out malformed in the SQL route (so
they were never events) and no partition appeared in two tasks; otherwise the batch
runs the general plan. Both
plans compute the same answers (``tests/spark/test_fused.py`` holds them to the reference
engine), so the choice changes the cost only.

The kernel is the reference engine's policy in closed form (as ``SparkEngine._policy``
writes it in SQL): within a batch the arrival clock at an event is ``max(A0, arrival)``,
and the newest timestamp of the partition before an event is a running maximum of ``h``
over the partition's earlier events in arrival order — here a segmented
``numpy.maximum.accumulate`` after one ``lexsort``, instead of a window function.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type

from sparktide.core.instants import NEG_INF
from sparktide.job import Job
from sparktide.spark.aggregates import plan_aggregates
from sparktide.spark.inputs.arrays import filled, masked, string_bytes
from sparktide.spark.inputs.arrowjson import Vouched, vouch, vouch_lines
from sparktide.spark.inputs.arrowvalues import (
    TOKEN,
    KernelPlan,
    field_column,
    kernel_plan,
    key_texts,
    partition_ids,
    printable,
    raw_token,
)
from sparktide.spark.inputs.contract import FIRST_INSTANT, LAST_INSTANT, WHITE_SPACE

__all__ = [
    "ABORT",
    "COUNTED",
    "FILE_TEXT",
    "KEY",
    "KEY_SCHEMA",
    "LINE",
    "LINE_SCHEMA",
    "PARTIAL",
    "SUMMARY",
    "TASK",
    "TYPED",
    "TYPED_TEXT",
    "FusedPlan",
    "counter_column",
    "fusable",
    "fused_kernel",
    "fused_plan",
    "fused_schema",
    "input_clock",
    "merge_into",
    "merge_partials",
    "partial_schema",
    "telling_keys",
    "typed_columns",
]

#: The kinds of the kernel's output rows: window partials, one summary per partition,
#: one row per task (how many lines it could not judge, how many partials it wrote),
#: those lines, "give up", and (substreams) one row per key of the batch.
PARTIAL, SUMMARY, TASK, LINE, ABORT, KEY = "p", "s", "t", "l", "x", "k"
#: The row of a task that could not read a JSONL file by its path (not a local file, or
#: compressed): the engine gives the kernel the files' text instead.
FILE_TEXT = "r"
#: Names Hadoop's codecs claim (Spark's text source decompresses such files).
_COMPRESSED = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".br", ".xz")

#: Counters the kernel counts per partition (the engine's other counters are 0 here).
COUNTED = (
    "input",
    "admitted",
    "early",
    "late",
    "out_of_order",
    "adjusted",
    "in_no_window",
    "dropped.early",
    "dropped.late",
    "dropped.out_of_order",
)

#: The column saying a typed Parquet row's kernel inputs are exact (:func:`typed_columns`),
#: and the JSON text of the rows it leaves to the kernel's parse (null where it holds).
TYPED, TYPED_TEXT = "_kf", "_ktext"

_INTEGER_TOKEN = "^-?[0-9]+$"
#: Text that is its own JSON string's inside: printable ASCII, no quote or backslash.
_PLAIN = r"^[ !#-\[\]-~]*$"


def fusable(job: Job) -> bool:
    """Whether the job's batches may take the one-pass plan (before looking at data).

    JSONL files, Parquet rows or broker lines; one timeline per partition, or per key
    (substreams); no union, no imports; the ordering policy with ``adjust`` or ``drop``
    (nothing it decides is dead-lettered); no CTIs, intervals or edges; tumbling or
    hopping windows whose aggregates are ``count``, ``sum`` or ``avg``; no ``[filter]``,
    ``[select]``, ``having`` or join. The engine also requires that the policy need no
    other partition's clock (``SparkEngine._fused``), except for substreams, whose
    input arrival clock the tasks compute (or guess, and the engine checks)."""
    source, window = job.source, job.window
    return (
        source.format in ("jsonl", "parquet")
        and source.end_time is None
        and not job.edges
        and not job.inputs
        and not job.imports
        and job.join is None
        and not job.references
        and job.filter is None
        and not job.select
        and job.punctuation is None
        and job.ordering.out_of_order_action in ("adjust", "drop")
        and window is not None
        and window.type in ("tumbling", "hopping")
        and window.having is None
        and all(a.function in ("count", "sum", "avg") for a in window.aggregates)
    )


def typed_columns(job: Job) -> list[tuple[str, str]]:
    """The columns (name, SQL type) by which a typed Parquet row reaches the kernel with
    no JSON text (``sparktide.spark.run``'s typed route makes them): :data:`TYPED`, the
    JSON text of the rows it does not hold for (:data:`TYPED_TEXT`), the group-by values'
    text (``_kg<i>``, as :func:`_group_text` gives it), and per aggregate with a column
    its present flag (``_kn<k>``: ``count``) or its exact integer and float (``_ki<k>``,
    ``_kd<k>``: ``sum`` / ``avg``); the row's times, partition and key come in the typed
    route's own ``_kt``, ``_ka``, ``_kpid``, ``_kkey``."""
    window = job.window
    assert window is not None
    columns = [(TYPED, "boolean"), (TYPED_TEXT, "string")]
    columns += [(f"_kg{i}", "string") for i in range(len(window.group_by))]
    for k, aggregate in enumerate(window.aggregates):
        if aggregate.column is None:
            continue
        if aggregate.function == "count":
            columns.append((f"_kn{k}", "bigint"))
        else:
            columns += [(f"_ki{k}", "bigint"), (f"_kd{k}", "double")]
    return columns


@dataclass(frozen=True)
class FusedPlan:
    """What one task needs to judge and fold its lines (picklable).

    ``clocks`` holds each known partition's ``(pid, A0, W0, newest0)`` at the start of
    the batch; a partition not in it starts at minus infinity."""

    parse: KernelPlan
    event_mode: bool
    early: int | None
    late: int | None
    delay: int | None
    late_drop: bool
    ooo_drop: bool
    shift: int
    size: int
    period: int
    offset: int
    closed_end: bool
    lateness: int
    partitioned: bool
    group_by: tuple[str, ...]
    aggregates: tuple[tuple[str, str | None, tuple[str, ...]], ...]  # function, column, names
    clocks: tuple[tuple[str, int, int, int], ...]
    stream_partition: str | None = None  # the lines' column holding the partition
    threads: int = 1  # files vouched for at once (a task holding a whole batch)
    #: Substreams: the input's arrival clock before the batch, each known partition's
    #: ``(pid, arrival clock, clock if it delivers nothing)`` (its idle estimate), and
    #: the parquet files of the keys' state.
    substreams: bool = False
    arrival_clock: int = NEG_INF
    idle: tuple[tuple[str, int, int], ...] = ()
    keys: tuple[str, ...] = ()
    #: The partitions assumed to deliver when tasks share the batch (the engine checks
    #: the guess); ``None``: those the task finds (it holds the whole batch).
    assumed: tuple[str, ...] | None = None
    #: The directory the tasks write their partials, keys and unvouched lines to.
    spill: str | None = None
    #: The largest Parquet file the task reads itself (:func:`_read_parquet`).
    file_bytes: int = 0


def fused_plan(
    job: Job, clocks: dict[str, dict[str, int]], stream_partition: str | None = None
) -> FusedPlan:
    """The plan of one batch of ``job`` (:func:`fusable`), given the partitions' clocks
    (and the column of the input lines holding the partition, if the stream has it:
    then records need not name it, as the SQL route reads it)."""
    window, ordering = job.window, job.ordering
    assert window is not None
    plans = plan_aggregates(window.aggregates)
    parse = dataclasses.replace(kernel_plan(job), carried=())  # (no ``mj``: unread)
    if stream_partition is not None:
        parse = dataclasses.replace(parse, partition=None)
    return FusedPlan(
        parse=parse,
        event_mode=job.event_time_mode,
        early=ordering.early_arrival,
        late=ordering.late_arrival,
        delay=ordering.out_of_order,
        late_drop=ordering.action == "drop",
        ooo_drop=ordering.out_of_order_action == "drop",
        shift=job.source.shift,
        size=window.size,
        period=window.period,
        offset=window.offset,
        closed_end=window.boundary == "end",
        lateness=window.allowed_lateness,
        partitioned=ordering.partitioned,
        substreams=job.source.over is not None,
        group_by=tuple(window.group_by),
        aggregates=tuple(
            (a.function, a.column, tuple(name for name, _ in plan.partial))
            for a, plan in zip(window.aggregates, plans, strict=True)
        ),
        clocks=tuple((pid, p["arrival"], p["watermark"], p["newest"]) for pid, p in clocks.items()),
        stream_partition=stream_partition,
    )


def _partial_fields(plan: FusedPlan) -> list[pa.Field]:
    fields = []
    for function, _, names in plan.aggregates:
        for name in names:
            if name.endswith("_si"):
                fields.append(pa.field(name, pa.decimal128(38, 0)))
            elif name.endswith("_sd"):
                fields.append(pa.field(name, pa.float64()))
            else:
                fields.append(pa.field(name, pa.int64()))
        assert function in ("count", "sum", "avg")
    return fields


def _schema(plan: FusedPlan) -> pa.Schema:
    """The kernel's rows: one summary per partition, one row per task, or "give up"."""
    return pa.schema(
        [
            pa.field("kind", pa.string()),
            pa.field("task", pa.int64()),
            pa.field("pid", pa.string()),
            pa.field("max_h", pa.int64()),
            pa.field("max_a", pa.int64()),
            pa.field("late_a", pa.int64()),
            pa.field("late_file", pa.string()),
            pa.field("late_line", pa.int64()),
            pa.field("late_t", pa.int64()),
            *(pa.field(counter_column(name), pa.int64()) for name in COUNTED),
            pa.field("slow", pa.int64()),
            pa.field("parts", pa.int64()),
            *(pa.field(f"{kind}_file", pa.string()) for kind in (PARTIAL, KEY, LINE)),
        ]
    )


def partial_schema(plan: FusedPlan) -> pa.Schema:
    """The window partials a task writes (:data:`PARTIAL`): one row per (scope, group,
    start), the partial aggregates' columns."""
    return pa.schema(
        [
            pa.field("scope", pa.string()),
            *(pa.field(f"g{i}", pa.string()) for i in range(len(plan.group_by))),
            pa.field("start", pa.int64()),
            *_partial_fields(plan),
        ]
    )


#: The rows a task writes for substreams (:data:`KEY`): each key's largest ``h`` and events.
KEY_SCHEMA = pa.schema(
    [pa.field("scope", pa.string()), pa.field("max_h", pa.int64()), pa.field("kn", pa.int64())]
)
#: The lines a task did not vouch for (:data:`LINE`), for the SQL route.
LINE_SCHEMA = pa.schema(
    [
        pa.field("file", pa.string()),
        pa.field("line", pa.int64()),
        pa.field("raw", pa.string()),
        pa.field("mtime", pa.int64()),
        pa.field("pre_error", pa.string()),
        pa.field("lpart", pa.int64()),
    ]
)


def fused_schema(plan: FusedPlan) -> T.StructType:
    """The kernel's output as a Spark schema."""
    return T.StructType([T.StructField(f.name, from_arrow_type(f.type)) for f in _schema(plan)])


def counter_column(name: str) -> str:
    """The column (and summary key) of counter ``name``: ``dropped.late`` → ``c_dropped__late``."""
    return "c_" + name.replace(".", "__")


# ---------------------------------------------------------------------- the kernel
class _Unreadable(Exception):
    """A JSONL file the task cannot read by its path (the engine sends its text)."""


class _Abort(Exception):
    """This task's lines cannot be judged here (the engine runs the general plan)."""


def fused_kernel(plan: FusedPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body over whole files (``file``, ``text``, ``mtime``; Parquet:
    ``file``, ``path``, ``length``, ``mtime``) or lines: one summary row per partition
    (``SUMMARY``) and one row per task
    (``TASK``: how many lines it did not vouch for and how many partial rows it wrote, and
    the files in ``plan.spill`` holding its window partials, its keys and those lines);
    or a single ``ABORT`` row when it cannot judge its lines at all (``FILE_TEXT``
    when it could not read a JSONL file by its path: ``file``, ``path``, ``mtime``).

    The bulky rows go to files rather than back through Spark: the engine reads the
    partials with pyarrow when it merges them on the driver (or has Spark read them), so
    they are converted once, and the small rows need no cached copy of the output."""
    from pyspark import TaskContext

    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    # (a stage of the batch and an attempt of the task: Spark may run a task twice)
    name = f"{context.stageId()}-{task}-{context.attemptNumber()}" if context else "0-0-0"
    schema = _schema(plan)
    try:
        slow: list[pa.RecordBatch] = []
        rows = _read(plan, batches, slow)
        out: dict[str, pa.Array] = {
            "kind": pa.array([TASK]),
            "task": pa.array([task], pa.int64()),
            "slow": pa.array([sum(batch.num_rows for batch in slow)], pa.int64()),
            "parts": pa.array([0], pa.int64()),
        }
        if rows is not None:
            partials, keys, summary = _judge(plan, schema, task, rows)
            out["parts"] = pa.array([partials.num_rows], pa.int64())
            out[f"{PARTIAL}_file"] = _spill(plan, f"{PARTIAL}-{name}", partials)
            if keys is not None:
                out[f"{KEY}_file"] = _spill(plan, f"{KEY}-{name}", keys)
            yield summary
        if slow:
            lines = pa.Table.from_batches([_rows(LINE_SCHEMA, _columns(b)) for b in slow])
            out[f"{LINE}_file"] = _spill(plan, f"{LINE}-{name}", lines)
        yield _rows(schema, out)
    except _Abort:
        yield _rows(schema, {"kind": pa.array([ABORT]), "task": pa.array([task], pa.int64())})
    except _Unreadable:
        yield _rows(schema, {"kind": pa.array([FILE_TEXT]), "task": pa.array([task], pa.int64())})


def _spill(plan: FusedPlan, name: str, table: pa.Table) -> pa.Array:
    """Write ``table`` as ``<plan.spill>/<name>.parquet``; its path, as the row's value."""
    assert plan.spill is not None
    path = os.path.join(plan.spill, f"{name}.parquet")
    # (read once, soon: neither compressed nor dictionary-encoded, half the cost)
    pq.write_table(table, path, compression="none", use_dictionary=False)
    return pa.array([path])


def _columns(batch: pa.RecordBatch) -> dict[str, pa.Array]:
    return {name: batch.column(name) for name in batch.schema.names}


@dataclass
class _Rows:
    file: np.ndarray  # rank of the row's file name among the task's files
    files: list[str]  # the names, by rank
    line: np.ndarray
    t: np.ndarray
    a: np.ndarray
    pid: pa.Array
    key: pa.Array  # substream keys (null without substreams)
    groups: list[pa.Array]
    inputs: list[dict[str, np.ndarray]]  # per aggregate

    def take(self, where: np.ndarray) -> _Rows:
        """The rows at ``where`` (positions), with the same files."""
        at = pa.array(where)
        return _Rows(
            file=self.file[where],
            files=self.files,
            line=self.line[where],
            t=self.t[where],
            a=self.a[where],
            pid=self.pid.take(at),
            key=self.key.take(at),
            groups=[group.take(at) for group in self.groups],
            inputs=[{name: v[where] for name, v in given.items()} for given in self.inputs],
        )


def _read(
    plan: FusedPlan, batches: Iterator[pa.RecordBatch], slow: list[pa.RecordBatch]
) -> _Rows | None:
    """The vouched lines of the task, as columns; the other lines go to ``slow``
    (``file``, ``line``, ``raw``, ``mtime``, ``pre_error``, ``lpart``) for the SQL route.
    The input is whole JSONL files (``file``, ``text``, ``mtime``, or ``file``, ``path``,
    ``mtime`` to read), Parquet files (``file``, ``path``, ``length``, ``mtime``) or lines
    (``file``, ``line``, ``raw``, ``mtime``, maybe ``pre_error``, and the stream's
    partition column if the job reads it)."""
    rows = _Collector(plan)
    for batch in batches:
        names = batch.schema.names
        if "text" in names:
            _read_files(plan, batch, rows, slow)
        elif "length" in names:
            _read_parquet(plan, batch, rows)
        elif "path" in names:
            _read_json_files(plan, batch, rows, slow)
        else:
            _read_lines(plan, batch, rows, slow)
    return rows.result(plan)


class _Collector:
    """The columns of the task's vouched lines, chunk by chunk."""

    def __init__(self, plan: FusedPlan) -> None:
        self.names: dict[str, int] = {}
        self.parts: dict[str, list] = {k: [] for k in ("file", "line", "t", "a", "pid", "key")}
        self.groups: list[list[pa.Array]] = [[] for _ in plan.group_by]
        self.inputs: list[list[dict[str, np.ndarray]]] = [[] for _ in plan.aggregates]

    def code(self, name: str) -> int:
        return self.names.setdefault(name, len(self.names))

    def add(
        self,
        plan: FusedPlan,
        chunk: Vouched,
        file: np.ndarray,
        line: np.ndarray,
        pid: pa.Array | None = None,
    ) -> None:
        """One chunk, its rows' file codes and line numbers (and partition ids, when they
        come from the stream rather than the record)."""
        table, texts = chunk.table, chunk.lines
        if len(chunk.rows) < table.num_rows:
            table, texts = table.filter(chunk.good), texts.filter(chunk.good)
        values = chunk.values
        self.append(
            file,
            line,
            (values["t"], values["a"], values["pid"] if pid is None else pid, values["key"]),
            [_group_text(field_column(table, column)) for column in plan.group_by],
            [
                _inputs(
                    function,
                    column,
                    table,
                    texts,
                    values.get(TOKEN + column) if column is not None else None,
                )
                for function, column, _ in plan.aggregates
            ],
        )

    def add_typed(self, plan: FusedPlan, batch: pa.RecordBatch) -> None:
        """Typed Parquet rows whose kernel inputs Spark computed (:func:`typed_columns`)."""
        self.append(
            _file_codes(self, batch.column("file")),
            batch.column("line").to_numpy(zero_copy_only=False).astype(np.int64),
            tuple(batch.column(name) for name in ("_kt", "_ka", "_kpid", "_kkey")),
            [batch.column(f"_kg{g}") for g in range(len(plan.group_by))],
            [
                _typed_inputs(function, column, batch, k)
                for k, (function, column, _) in enumerate(plan.aggregates)
            ],
        )

    def append(
        self,
        file: np.ndarray,
        line: np.ndarray,
        values: tuple[pa.Array, pa.Array, pa.Array, pa.Array],
        groups: list[pa.Array],
        inputs: list[dict[str, np.ndarray]],
    ) -> None:
        """Rows' file codes, line numbers, (event time, arrival time, partition id, key),
        group-by texts and aggregate inputs."""
        t, a, pid, key = values
        self.parts["file"].append(file)
        self.parts["line"].append(line)
        self.parts["t"].append(_ints(t))
        self.parts["a"].append(_ints(a))
        self.parts["pid"].append(pid)
        self.parts["key"].append(key)
        for g, text in enumerate(groups):
            self.groups[g].append(text)
        for k, given in enumerate(inputs):
            self.inputs[k].append(given)

    def result(self, plan: FusedPlan) -> _Rows | None:
        parts = self.parts
        if not parts["t"]:
            return None
        names = list(self.names)
        rank = np.argsort(np.argsort(np.array(names, dtype=object)))
        return _Rows(
            file=rank[np.concatenate(parts["file"])],
            files=sorted(names),
            line=np.concatenate(parts["line"]),
            t=np.concatenate(parts["t"]) + plan.shift,
            a=np.concatenate(parts["a"]),
            pid=pa.concat_arrays(parts["pid"]),
            key=pa.concat_arrays(parts["key"]),
            groups=[pa.concat_arrays(g) for g in self.groups],
            inputs=[
                {name: np.concatenate([c[name] for c in chunks]) for name in chunks[0]}
                for chunks in self.inputs
            ],
        )


def _read_files(
    plan: FusedPlan, batch: pa.RecordBatch, rows: _Collector, slow: list[pa.RecordBatch]
) -> None:
    files, contents, mtimes = (batch.column(c) for c in ("file", "text", "mtime"))
    texts = [contents.slice(i, 1) for i in range(batch.num_rows)]
    _vouch_files(plan, rows, slow, files.to_pylist(), texts, mtimes.to_pylist())


def _read_json_files(
    plan: FusedPlan, batch: pa.RecordBatch, rows: _Collector, slow: list[pa.RecordBatch]
) -> None:
    """Whole JSONL files (``file``, ``path``, ``mtime``) read by their paths: the bytes
    Spark's text source would give (``_Unreadable`` for a file that is not local, or
    that Spark would decompress — the engine then sends the text itself). Reading the
    file here spares the JVM copying it into a row and Arrow sending it to this worker:
    0.5 s per 65 MB task of the 1.8 s it took, measured on two cores."""
    contents = []
    for path in batch.column("path").to_pylist():
        local = _local_path(path)
        if local is None or local.lower().endswith(_COMPRESSED):
            raise _Unreadable
        try:
            with open(local, "rb") as handle:
                data = handle.read()
        except OSError:  # (gone, or not readable here: Spark's reading decides)
            raise _Unreadable from None
        contents.append(data)
    texts = [pa.array([data], pa.binary()).view(pa.string()) for data in contents]
    files, mtimes = (batch.column(c).to_pylist() for c in ("file", "mtime"))
    _vouch_files(plan, rows, slow, files, texts, mtimes, contents)


def _local_path(path: str | None) -> str | None:
    """The local file of a ``file:`` path (``None`` for other file systems)."""
    if path is None or not path.startswith("file:"):
        return None
    return path[len("file://") :] if path.startswith("file:///") else path[len("file:") :]


def _vouch_files(
    plan: FusedPlan,
    rows: _Collector,
    slow: list[pa.RecordBatch],
    files: list[str],
    texts: list[pa.Array],
    mtimes: list[int | None],
    contents: list[bytes] | None = None,
) -> None:
    """Each whole file's (``texts``: one string each; ``contents``: their bytes, if at
    hand) lines to ``rows`` or ``slow``."""
    for text in texts:
        try:
            text.validate(full=True)
        except pa.ArrowInvalid:  # bad UTF-8: the SQL route reports those lines
            raise _Abort from None
    # a task holding fewer files than it has threads splits them into pieces of lines
    parts = max(1, plan.threads // max(len(texts), 1))
    work, owner, before = [], [], []
    for i, (text, data) in enumerate(zip(texts, contents or [None] * len(texts), strict=True)):
        for piece, piece_data, lines_before in _pieces(text, data, parts):
            work.append((piece, mtimes[i], piece_data))
            owner.append(i)
            before.append(lines_before)
    results: list[list[Any]] = [[] for _ in texts]
    for k, result in enumerate(_vouch_all(plan, work)):
        results[owner[k]].append((result, before[k]))
    for i, pieces in enumerate(results):
        _add_file(plan, rows, slow, files[i], mtimes[i], _joined(pieces))


#: Files of at least this many bytes are split into pieces for a task's threads.
_PIECE_BYTES = 1 << 20


def _pieces(
    text: pa.Array, data: bytes | None, parts: int
) -> Iterator[tuple[pa.Array, bytes | None, int]]:
    """A file's text in up to ``parts`` pieces of whole lines (each with its bytes and
    the number of lines before it); whole when small or when its bytes are not at hand."""
    if parts <= 1 or data is None or len(data) < _PIECE_BYTES:
        yield text, data, 0
        return
    start, lines_before = 0, 0
    for k in range(1, parts + 1):
        end = len(data) if k == parts else data.find(b"\n", len(data) * k // parts) + 1
        if end <= start:  # (no newline after the cut: the rest is one piece)
            continue
        piece = data[start:end]
        yield pa.array([piece], pa.binary()).view(pa.string()), piece, lines_before
        lines_before += piece.count(b"\n")
        start = end
        if end == len(data):
            break


def _joined(
    pieces: list[tuple[tuple[pa.Array, pa.Array, np.ndarray, list[Vouched]], int]],
) -> tuple[pa.Array, pa.Array, np.ndarray, list[Vouched]]:
    """One file's :func:`~sparktide.spark.arrowparse.vouch` from those of its pieces
    (their line numbers and positions among the file's non-blank lines shifted)."""
    if len(pieces) == 1:  # (a whole file)
        return pieces[0][0]
    raws, lines, unvouched, chunks = [], [], [], []
    base = 0
    for (raw, line, slow, vouched), lines_before in pieces:
        raws.append(raw)
        lines.append(pc.add(line, lines_before))
        unvouched.append(slow)
        chunks += [dataclasses.replace(chunk, rows=chunk.rows + base) for chunk in vouched]
        base += len(raw)
    return pa.concat_arrays(raws), pa.concat_arrays(lines), np.concatenate(unvouched), chunks


def _read_parquet(plan: FusedPlan, batch: pa.RecordBatch, rows: _Collector) -> None:
    """Whole Parquet files (``file``, ``path``, ``length``, ``mtime``), read by pyarrow:
    every row to ``rows`` (:func:`_parquet_values`), or ``_Abort`` when one is beyond the
    rules — the engine then has Spark read the files' rows (``sparktide.spark.parquet``).
    Only local files (``file:`` paths, as Spark's own reading of them needs on every node)
    of at most ``plan.file_bytes``; others are Spark's to read."""
    files, paths, lengths, mtimes = (
        batch.column(c).to_pylist() for c in ("file", "path", "length", "mtime")
    )
    work = []
    for path, length, mtime in zip(paths, lengths, mtimes, strict=True):
        local = _local_path(path)
        if local is None or (length or 0) > plan.file_bytes:
            raise _Abort
        work.append((local, mtime))
    for i, values in enumerate(_map(plan, lambda item: _parquet_values(plan, *item), work)):
        if values is None:
            continue
        count = len(values[0][0])
        rows.append(
            np.full(count, rows.code(files[i]), dtype=np.int64),
            np.arange(1, count + 1, dtype=np.int64),
            *values,
        )


def _readable(kind: pa.DataType) -> bool:
    """Whether Spark reads a Parquet column of this type as pyarrow does (others, e.g.
    nanosecond timestamps or nested values, leave the batch to Spark's reading)."""
    return (
        pa.types.is_string(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_signed_integer(kind)  # (Spark does not read unsigned 64 bits)
        or pa.types.is_float32(kind)
        or pa.types.is_float64(kind)
        or pa.types.is_decimal128(kind)
        or pa.types.is_date32(kind)
        or pa.types.is_binary(kind)
        or (pa.types.is_timestamp(kind) and kind.unit != "ns")
    )


def _parquet_values(
    plan: FusedPlan, path: str, mtime: int | None
) -> tuple[tuple[pa.Array, pa.Array, pa.Array, pa.Array], list, list] | None:
    """One Parquet file's rows as the kernel's inputs — exactly what Spark's typed route
    (``sparktide.spark.parquet``: ``_vouched``, ``_kernel_typed``) makes of them: times
    from zone-aware timestamps within years 1-9999, partitions from integers or text
    (digit strings as integers), keys from integers, booleans or plain text, group-by
    values as their JSON text, ``sum`` / ``avg`` inputs from integers or finite doubles.
    ``None`` for a file without rows; ``_Abort`` for anything else."""
    try:
        if os.path.getsize(path) == 0:
            raise _Abort  # (Spark's reading decides what an empty file is)
        table = pq.read_table(path)
    except _Abort:
        raise
    except Exception:  # pyarrow raises several kinds for a bad (or vanished) file
        raise _Abort from None
    names = table.column_names
    if len({name.lower() for name in names}) < len(names):
        raise _Abort  # (Spark resolves names without case)
    if not all(_readable(f.type) for f in table.schema):
        raise _Abort
    n = table.num_rows
    if n == 0:
        return None

    def column(name: str | None) -> pa.Array | None:
        return None if name is None or name not in names else table.column(name).combine_chunks()

    parse = plan.parse
    if parse.arrival is not None:
        a = _parquet_micros(column(parse.arrival))
    elif mtime is not None:
        a = pa.repeat(pa.scalar(mtime, pa.int64()), n)
    else:
        raise _Abort
    t = _parquet_micros(column(parse.event)) if parse.event is not None else a
    pid = pa.repeat(pa.scalar("0"), n)
    if parse.partition is not None:
        pid = _parquet_partition(column(parse.partition))
    key = pa.nulls(n, pa.string())
    if parse.over is not None:
        key = _parquet_key(column(parse.over))
    groups = [
        _parquet_group(column(name), n) if name != parse.over else _key_group(key, column(name))
        for name in plan.group_by
    ]
    inputs = [_parquet_input(function, name, table) for function, name, _ in plan.aggregates]
    return (t, a, pid, key), groups, inputs


def _parquet_micros(value: pa.Array | None) -> pa.Array:
    """A time column's instants: a zone-aware timestamp of every row in years 1-9999."""
    if value is None or not pa.types.is_timestamp(value.type) or value.type.tz is None:
        raise _Abort
    try:
        out = pc.cast(pc.cast(value, pa.timestamp("us", value.type.tz)), pa.int64())
    except pa.ArrowInvalid:  # (beyond 64 bits of microseconds)
        raise _Abort from None
    inside = pc.and_(pc.greater_equal(out, FIRST_INSTANT), pc.less_equal(out, LAST_INSTANT))
    if out.null_count or not _all(inside):
        raise _Abort
    return out


def _signed(value: pa.Array) -> bool:
    return pa.types.is_integer(value.type) and not pa.types.is_unsigned_integer(value.type)


def _text(value: pa.Array) -> bool:
    """Whether a column is valid UTF-8 text (pyarrow does not check Parquet's)."""
    if not pa.types.is_string(value.type):
        return False
    try:
        value.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _plain(value: pa.Array) -> bool:
    """Whether a column is text whose every value is its own JSON string's inside."""
    return _text(value) and _all(pc.match_substring_regex(value, _PLAIN))


def _parquet_partition(value: pa.Array | None) -> pa.Array:
    """Partition ids as the SQL route's ``partition_id`` (the JSON kernel's rules:
    :func:`~sparktide.spark.arrowparse.partition_ids`), of signed integers or valid UTF-8
    text; never null."""
    if value is None or not (_signed(value) or _text(value)):
        raise _Abort
    ids, ok = partition_ids(value)
    if not ok.all():  # (nulls, and 19 digits or more: the route's call)
        raise _Abort
    return ids


def _parquet_key(value: pa.Array | None) -> pa.Array:
    """Substream keys as the route's JSON text (:func:`~sparktide.spark.arrowparse.key_texts`)
    of signed integers, booleans or plain text; never null."""
    if value is None or not (_signed(value) or pa.types.is_boolean(value.type) or _plain(value)):
        raise _Abort
    keys, ok = key_texts(value)
    if not ok.all():
        raise _Abort
    return keys


def _parquet_group(value: pa.Array | None, n: int) -> pa.Array:
    """A group-by value's JSON text (:func:`_group_text`), ``null`` when missing; text
    must be plain (Parquet's may hold quotes, which JSON lines the kernel vouched for
    cannot)."""
    if value is None:
        return _group_text(pa.nulls(n))
    if pa.types.is_string(value.type) and not _plain(value):
        raise _Abort
    return _group_text(value)  # (no unsigned integers: ``_readable``)


def _key_group(key: pa.Array, value: pa.Array | None) -> pa.Array:
    """:func:`_parquet_group` of the substream key's own column, whose text ``key``
    already is (every value valid; text printable): the same, without making it again."""
    if value is None or (pa.types.is_string(value.type) and not _plain(value)):
        raise _Abort
    return key


def _parquet_input(function: str, name: str | None, table: pa.Table) -> dict[str, np.ndarray]:
    """An aggregate's inputs (:func:`_inputs`) from a typed column: ``count`` of signed
    integers, booleans, text or finite doubles; ``sum`` / ``avg`` of signed integers
    (exact) or finite doubles (no float in a Parquet column is an integer token)."""
    if name is not None and name in table.column_names:
        kind = table.schema.field(name).type
        value = table.column(name)
        double = pa.types.is_float64(kind)
        if double and not _all(pc.is_finite(value)):
            raise _Abort  # (NaN and infinities: the route's text for them is its own)
        numbers = pa.types.is_signed_integer(kind) or double
        counted = numbers or pa.types.is_boolean(kind) or _text(value.combine_chunks())
        if not (numbers if function != "count" else counted):
            raise _Abort
    tokens = pa.nulls(table.num_rows, pa.string())
    return _inputs(function, name, table, tokens, tokens)


def _map(plan: FusedPlan, function: Any, work: list) -> Iterator[Any]:
    """``function`` of each item of ``work``, in order; several at once in a task holding
    a whole batch (``plan.threads``, at most the machine's cores): Arrow's compute and
    readers release the GIL."""
    threads = min(plan.threads, os.cpu_count() or 1, len(work))
    if threads <= 1:
        yield from (function(item) for item in work)
        return
    with ThreadPoolExecutor(threads) as pool:
        yield from pool.map(function, work)


def _vouch_all(
    plan: FusedPlan, work: list[tuple[pa.Array, int | None, bytes | None]]
) -> Iterator[tuple[pa.Array, pa.Array, np.ndarray, list[Vouched]]]:
    """:func:`~sparktide.spark.arrowparse.vouch` of each ``(text, mtime, data)``, in
    order."""
    return _map(plan, lambda item: vouch(plan.parse, *item), work)


def _add_file(
    plan: FusedPlan,
    rows: _Collector,
    slow: list[pa.RecordBatch],
    name: str,
    mtime: int | None,
    result: tuple[pa.Array, pa.Array, np.ndarray, list[Vouched]],
) -> None:
    """One file's vouched lines to ``rows``, the others to ``slow``."""
    raw, line, unvouched, chunks = result
    index = rows.code(name)
    if unvouched.any():  # lines only the SQL route can judge
        others = pa.array(np.flatnonzero(unvouched))
        count = len(others)
        slow.append(
            pa.RecordBatch.from_pydict(
                {
                    "file": pa.repeat(pa.scalar(name, pa.string()), count),
                    "line": line.take(others),
                    "raw": raw.take(others),
                    "mtime": pa.repeat(pa.scalar(mtime, pa.int64()), count),
                }
            )
        )
    for chunk in chunks:
        rows.add(
            plan,
            chunk,
            np.full(len(chunk.rows), index, dtype=np.int64),
            line.take(pa.array(chunk.rows)).to_numpy(),
        )


def _read_lines(
    plan: FusedPlan, batch: pa.RecordBatch, rows: _Collector, slow: list[pa.RecordBatch]
) -> None:
    if batch.column("file").null_count or batch.column("line").null_count:
        raise _Abort  # (no arrival order to sort by: the general plan decides)
    if TYPED in batch.schema.names:  # typed Parquet rows: Spark made the kernel's inputs
        typed = filled(batch.column(TYPED))
        if typed.any():
            rows.add_typed(plan, batch.filter(pa.array(typed)))
        if typed.all():
            return
        batch = batch.filter(pa.array(~typed))
    raw = batch.column("raw")
    try:
        raw.validate(full=True)
    except pa.ArrowInvalid:  # bad UTF-8: the SQL route reports those lines
        raise _Abort from None
    stripped = pc.utf8_trim(pc.fill_null(raw, ""), WHITE_SPACE)
    usable = pc.not_equal(pc.utf8_length(stripped), 0)
    if "pre_error" in batch.schema.names:  # (a Parquet file that could not be read)
        usable = pc.and_(usable, pc.is_null(batch.column("pre_error")))
    kept = np.flatnonzero(filled(usable))
    at = pa.array(kept)
    unvouched, chunks = vouch_lines(plan.parse, stripped.take(at), batch.column("mtime").take(at))
    partition = None
    if plan.stream_partition is not None:
        partition = batch.column(plan.stream_partition)
        if not pa.types.is_integer(partition.type) or partition.null_count:
            raise _Abort  # (the SQL route's text form of other types is its own)
    blank = np.ones(batch.num_rows, dtype=bool)
    blank[kept] = False
    others = np.sort(np.concatenate([np.flatnonzero(blank), kept[unvouched]]))
    if others.size:
        taken = pa.array(others)
        slow.append(
            pa.RecordBatch.from_pydict(
                {
                    "file": batch.column("file").take(taken),
                    "line": batch.column("line").take(taken),
                    "raw": raw.take(taken),
                    "mtime": batch.column("mtime").take(taken),
                    **(
                        {"pre_error": batch.column("pre_error").take(taken)}
                        if "pre_error" in batch.schema.names
                        else {}
                    ),
                    **({"lpart": pc.cast(partition.take(taken), pa.int64())} if partition else {}),
                }
            )
        )
    if not chunks:
        return
    file = _file_codes(rows, batch.column("file"))
    line = batch.column("line").to_numpy(zero_copy_only=False)
    for chunk in chunks:
        where = kept[chunk.rows]
        pid = None
        if partition is not None:
            pid = pc.cast(partition.take(pa.array(where)), pa.string())
        rows.add(plan, chunk, file[where], line[where].astype(np.int64), pid)


def _file_codes(rows: _Collector, files: pa.Array) -> np.ndarray:
    """Each row's file as the collector's code of its name."""
    names = files.dictionary_encode()
    codes = np.array([rows.code(name) for name in names.dictionary.to_pylist()], dtype=np.int64)
    return codes[names.indices.to_numpy(zero_copy_only=False)]


def _typed_inputs(
    function: str, column: str | None, batch: pa.RecordBatch, k: int
) -> dict[str, np.ndarray]:
    """:func:`_inputs` of aggregate ``k`` from the typed columns Spark made."""
    if column is None:
        return {"n": np.ones(batch.num_rows, dtype=np.int64)}
    if function == "count":
        return {"n": _ints(batch.column(f"_kn{k}"))}
    whole, real = batch.column(f"_ki{k}"), batch.column(f"_kd{k}")
    return {
        "i": pc.fill_null(whole, 0).to_numpy().astype(np.int64),
        "isint": filled(pc.is_valid(whole)),
        "d": pc.fill_null(real, 0.0).to_numpy().astype(np.float64),
        "isfloat": filled(pc.is_valid(real)),
    }


def _ints(array: pa.Array) -> np.ndarray:
    if array.null_count:  # (a vouched line always has its times)
        raise _Abort
    return array.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _group_text(column: pa.Array) -> pa.Array:
    """A group-by value's JSON text as the general plan writes it (``g<i>``): strings of
    printable ASCII (vouched lines hold no backslash, hence no quote), integers and
    booleans as written, ``null`` when missing. A float leaves to the general plan (its
    text depends on how it was written)."""
    n = len(column)
    if pa.types.is_null(column.type):
        return pa.repeat(pa.scalar("null"), n)
    if pa.types.is_string(column.type):
        if not printable(column).all():
            raise _Abort
        text = pc.binary_join_element_wise('"', column, '"', "")
    elif pa.types.is_integer(column.type) or pa.types.is_boolean(column.type):
        text = pc.cast(column, pa.string())
    else:
        raise _Abort
    return pc.fill_null(text, "null")


def _all(mask: pa.Array) -> bool:
    return bool(pc.all(pc.fill_null(mask, True)).as_py())


def _inputs(
    function: str,
    column: str | None,
    table: pa.Table,
    lines: pa.Array,
    token: pa.Array | None = None,
) -> dict[str, np.ndarray]:
    """An aggregate's per-row inputs: ``n`` (counted) for ``count``; for ``sum``/``avg``
    the exact integer (``i``, with ``isint``), the float (``d``) and the flags
    (``token``: the column's raw tokens when the parse found them already)."""
    n = table.num_rows
    if column is None:
        return {"n": np.ones(n, dtype=np.int64)}
    values = field_column(table, column)
    present = np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), dtype=bool)
    if function == "count":
        return {"n": present.astype(np.int64)}
    if pa.types.is_null(values.type):
        isint = np.zeros(n, dtype=bool)
        ints = np.zeros(n, dtype=np.int64)
        floats = np.zeros(n, dtype=np.float64)
    elif pa.types.is_integer(values.type):
        isint = present
        ints = pc.fill_null(values, 0).to_numpy().astype(np.int64)
        floats = np.zeros(n, dtype=np.float64)
    elif pa.types.is_floating(values.type):
        # a column Arrow reads as floats may hold integer tokens: those sum exactly
        token = pc.fill_null(token if token is not None else raw_token(lines, column), "")
        isint = present & np.asarray(
            pc.match_substring_regex(token, _INTEGER_TOKEN).to_numpy(zero_copy_only=False),
            dtype=bool,
        )
        whole = pc.if_else(pa.array(isint), token, pa.scalar("0"))
        ints = pc.cast(whole, pa.int64()).to_numpy()
        floats = pc.fill_null(values, 0.0).to_numpy().astype(np.float64)
    else:  # (the arrowparse kernel vouches only for numbers here)
        raise _Abort
    isfloat = present & ~isint
    return {
        "i": np.where(isint, ints, 0),
        "isint": isint,
        "d": np.where(isfloat, floats, 0.0),
        "isfloat": isfloat,
    }


#: Up to this many groups, :func:`_running_max_before` scans each group (a loop in Python);
#: beyond, it scans them all together, each group's values lifted above the last's.
_SCAN_GROUPS = 64


def _running_max_before(h: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For rows sorted by ``group``: the largest ``h`` of the same group's earlier rows
    (``NEG_INF`` for a group's first row)."""
    if len(h) == 0:
        return h.copy()
    firsts = np.concatenate([[0], np.flatnonzero(np.diff(group)) + 1])
    if len(firsts) <= _SCAN_GROUPS:  # (partitions: a running max each)
        before = np.empty_like(h)
        for start, end in zip(firsts, [*firsts[1:], len(h)], strict=True):
            before[start] = NEG_INF
            np.maximum.accumulate(h[start : end - 1], out=before[start + 1 : end])
        return before
    # a later group's keys all larger: h's offset from the least value (no sort) when
    # the groups times the span fit in 63 bits, else h's rank among its values
    finite = h[h > NEG_INF]
    low = int(finite.min()) - 1 if len(finite) else 0
    span = int(finite.max()) - low + 1 if len(finite) else 1
    if span * (int(group[-1]) + 1) < 2**62:
        offset = np.where(h > NEG_INF, h - low, 0)
        width = np.int64(span)
        values = None
    else:
        values, offset = np.unique(h, return_inverse=True)
        width = np.int64(len(values))
    key = group.astype(np.int64) * width + offset
    found = np.maximum.accumulate(key) - group.astype(np.int64) * width
    if values is not None:
        inclusive = values[found]
    else:
        inclusive = np.where(found > 0, found + low, NEG_INF)
    before = np.empty_like(h)
    before[0] = NEG_INF
    before[1:] = inclusive[:-1]
    before[np.flatnonzero(np.diff(group)) + 1] = NEG_INF
    return before


#: a task judging in threads splits its rows by timeline into pieces of at least this many
_SHARD_ROWS = 50_000


def _judge(
    plan: FusedPlan, schema: pa.Schema, task: int, rows: _Rows
) -> tuple[pa.Table, pa.Table | None, pa.RecordBatch]:
    """The task's window partials, its keys' rows (substreams) and its partitions'
    summary rows.

    Timelines are judged apart from each other, so a task with threads
    (``plan.threads``: the whole batch in one task) splits its rows by timeline — by a
    hash of the key's bytes for substreams, by partition otherwise — and judges the
    pieces at once (numpy and Arrow release the GIL; 1M events of 1M keys: 0.59 s in one
    piece, 0.29 s in four on two cores, the split included)."""
    encoded = rows.pid.dictionary_encode()
    pids = encoded.dictionary.to_pylist()
    code = encoded.indices.to_numpy().astype(np.int64)
    known = _known_keys(plan) if plan.substreams else None
    pieces = min(2 * plan.threads, len(code) // _SHARD_ROWS)
    shard = None
    if pieces > 1 and plan.substreams:
        shard = _key_shards(rows.key, pieces)
    elif pieces > 1 and len(pids) > 1:
        shard = code % pieces
    parts = [(known, rows, code)]
    if shard is not None:  # (each piece with the state of its own keys)
        known_shard = None if known is None else _key_shards(known["key"].combine_chunks(), pieces)
        parts = []
        for k in range(pieces):
            where = np.flatnonzero(shard == k)
            if len(where):
                state = known.filter(pa.array(known_shard == k)) if known is not None else None
                parts.append((state, rows.take(where), code[where]))
    judged = list(_map(plan, lambda part: _judge_part(plan, pids, *part), parts))
    partials = pa.concat_tables([partial for partial, _, _ in judged])
    if len(judged) > 1 and not (plan.partitioned or plan.substreams):
        # (pieces of partitions share the merged job's windows: one row per window)
        partials = merge_partials(partials, ["scope", *_group_names(plan), "start"])
    keys = None
    if plan.substreams:  # (a key is in one piece: the pieces' keys are distinct)
        keys = pa.concat_tables([key_rows for _, key_rows, _ in judged])
    summary = _summary(schema, task, pids, rows.files, [tally for _, _, tally in judged])
    return partials, keys, summary


def _key_shards(keys: pa.Array, pieces: int) -> np.ndarray:
    """A piece in ``range(pieces)`` for each of ``keys`` (text), from its length and last
    four bytes: equal keys, equal pieces."""
    if not pa.types.is_string(keys.type) or len(keys) == 0:
        return np.zeros(len(keys), dtype=np.int64)
    offsets, octets = string_bytes(keys)
    ends = offsets[1:].astype(np.int64)
    lengths = ends - offsets[:-1]
    if keys.null_count:  # (a null's bytes are not its value)
        lengths = np.where(filled(pc.is_valid(keys)), lengths, 0)
    h = lengths.astype(np.uint64)
    for back in range(1, 5):
        has = lengths >= back
        byte = octets[np.where(has, ends - back, 0)] if len(octets) else np.zeros(len(h), np.uint8)
        h = h * np.uint64(31) + np.where(has, byte, 0).astype(np.uint64)
    return (h % np.uint64(pieces)).astype(np.int64)


def _known_keys(plan: FusedPlan) -> pa.Table | None:
    """The keys' state after the previous batch (``key``, ``k_newest``, ``k_watermark``),
    or ``None`` when there is none."""
    tables = [pq.read_table(path, columns=["key", "k_newest", "k_watermark"]) for path in plan.keys]
    return pa.concat_tables(tables) if tables else None


def _judge_part(
    plan: FusedPlan, pids: list[str], known: pa.Table | None, rows: _Rows, code: np.ndarray
) -> tuple[pa.Table, pa.Table | None, dict[str, Any]]:
    """:func:`_judge` of whole timelines of the task (``code``: each row's partition, an
    index of ``pids``): their window partials, keys' rows and partitions' tally."""
    keys = pa.array([], pa.string())
    if plan.substreams:  # a timeline per key, judged against the input's arrival clock
        by_key = rows.key.dictionary_encode()
        keys = by_key.dictionary
        timeline = by_key.indices.to_numpy().astype(np.int64)
        start = _key_state(known, by_key.dictionary)
        start[:, 0] = input_clock(plan, pids if plan.assumed is None else plan.assumed)
    else:
        timeline = code
        clocks = {pid: (a0, w0, n0) for pid, a0, w0, n0 in plan.clocks}
        start = np.array([clocks.get(pid, (NEG_INF,) * 3) for pid in pids], dtype=np.int64)
    order = np.lexsort((rows.line, rows.file, rows.a, timeline))
    p, t, a = timeline[order], rows.t[order], rows.a[order]
    a0, w0, newest0 = start[p, 0], start[p, 1], start[p, 2]
    n = len(t)
    no = np.zeros(n, dtype=bool)
    E, L, delay = plan.early, plan.late, plan.delay
    is_early = (t - a > E) if plan.event_mode and E is not None else no
    is_late = (a - t > L) if plan.event_mode and L is not None else no
    g = np.where(is_late, a - (L or 0), t)
    threshold = w0
    if L is not None:
        threshold = np.maximum(threshold, np.maximum(a0, a) - L)
    gone = is_early | (is_late if plan.late_drop else no)
    if delay is None:
        h = np.full(n, NEG_INF, dtype=np.int64)
    elif plan.ooo_drop:
        h = np.where(g >= threshold, g, NEG_INF)
    else:
        h = np.maximum(g, threshold)
    h = np.where(gone, NEG_INF, h)
    watermark = threshold
    if delay is not None:
        newest = np.maximum(newest0, _running_max_before(h, p))
        watermark = np.maximum(watermark, newest - delay)
    is_ooo = (~gone & (g < watermark)) if plan.event_mode else no
    dropped_ooo = is_ooo if plan.ooo_drop else no
    admitted = ~gone & ~dropped_ooo
    s = np.where(is_ooo, watermark, g)
    adjusted = admitted & (s != t)
    # windows: every start whose window holds s (a hop beyond the size leaves gaps)
    x = s - 1 if plan.closed_end else s
    last = x - np.mod(x - plan.offset, plan.period)
    per_timeline = plan.partitioned or plan.substreams  # (windows close on their own)
    governing = watermark if per_timeline else np.full(n, NEG_INF, dtype=np.int64)
    due = plan.size + plan.lateness + (1 if plan.closed_end else 0)
    members, starts = [], []
    in_some = np.zeros(n, dtype=bool)
    open_some = np.zeros(n, dtype=bool)
    for k in range(-(-plan.size // plan.period)):
        st = last - k * plan.period
        inside = admitted & (st + plan.size > x)
        is_open = inside & (st + due > governing)
        in_some |= inside
        open_some |= is_open
        members.append(np.flatnonzero(is_open))
        starts.append(st[is_open])
    if (in_some & ~open_some).any():  # late for every window: the general plan letters it
        raise _Abort
    member = np.concatenate(members)
    columns: dict[str, pa.Array] = {
        "scope": (keys if plan.substreams else pa.array(pids, pa.string())).take(p[member])
        if per_timeline
        else pa.repeat(pa.scalar(""), len(member)),
    }
    taken = pa.array(order[member])
    for i, group in enumerate(rows.groups):
        columns[f"g{i}"] = group.take(taken)
    columns["start"] = pa.array(np.concatenate(starts), pa.int64())
    sources = order[member]
    for k, (_, _, names) in enumerate(plan.aggregates):
        given = rows.inputs[k]
        if len(names) == 1:
            columns[names[0]] = pa.array(given["n"][sources])
            continue
        si, sd, nn, nf = names
        columns[si] = masked(given["i"][sources], given["isint"][sources], pa.int64()).cast(
            pa.decimal128(38, 0)
        )
        columns[sd] = masked(given["d"][sources], given["isfloat"][sources], pa.float64())
        columns[nn] = pa.array((given["isint"] | given["isfloat"])[sources].astype(np.int64))
        columns[nf] = pa.array(given["isfloat"][sources].astype(np.int64))
    partials = _partials(plan, columns)
    key_rows = None
    if plan.substreams:  # each key's newest timestamp and events, for its next state
        firsts = np.concatenate([[0], np.flatnonzero(np.diff(p)) + 1])
        key_rows = pa.table(
            {
                "scope": keys,
                "max_h": _by(p[firsts], np.maximum.reduceat(h, firsts), len(keys)),
                "kn": pa.array(np.bincount(p, minlength=len(keys)).astype(np.int64)),
            },
            schema=KEY_SCHEMA,
        )
    tally = _tally(
        len(pids),
        code[order],
        rows,
        order,
        {
            "max_h": h,
            "max_a": a,
            "late": is_late,
            "counts": {
                "input": np.ones(n, dtype=bool),
                "admitted": admitted,
                "early": is_early,
                "late": is_late,
                "out_of_order": is_ooo,
                "adjusted": adjusted,
                "in_no_window": admitted & ~in_some,
                "dropped.early": is_early,
                "dropped.late": is_late & ~is_early if plan.late_drop else no,
                "dropped.out_of_order": dropped_ooo,
            },
        },
    )
    return partials, key_rows, tally


def _partials(plan: FusedPlan, columns: dict[str, pa.Array]) -> pa.Table:
    """One row per (scope, group, start): the batch's partial aggregates."""
    schema = partial_schema(plan)
    table = pa.table({f.name: columns[f.name].cast(f.type) for f in schema}, schema=schema)
    return merge_partials(table, ["scope", *_group_names(plan), "start"])


def _group_names(plan: FusedPlan) -> list[str]:
    return [f"g{i}" for i in range(len(plan.group_by))]


def merge_partials(table: pa.Table, keys: list[str], *, threads: bool = False) -> pa.Table:
    """``table``'s rows of equal ``keys`` merged into one: every other column (counts
    and sums: all partials of the one-pass plan merge by ``sum``, as in Spark, where a
    column whose values are all null stays null) summed; the columns keep their order.

    Keys that tell no rows apart (:func:`telling_keys`: ``scope`` of a merged job, a
    group that is the substream key) are left out of the grouping and put back: hashing
    text is most of the cost (520k rows: 88 ms by three keys, 44 ms by two), and Arrow's
    grouping in threads was slower, not faster, here."""
    others = [name for name in table.column_names if name not in keys]
    kept, implied = telling_keys(table, keys)
    folded = table.group_by(kept, use_threads=threads).aggregate([(name, "sum") for name in others])
    named = {f"{name}_sum": name for name in others}
    folded = folded.rename_columns([named.get(name, name) for name in folded.column_names])
    for name, source in implied.items():
        kind = table.schema.field(name).type
        value = folded.column(source) if source is not None else table.column(name)[0]
        if source is None:
            value = pa.repeat(value, folded.num_rows).cast(kind)
        folded = folded.append_column(name, value)
    return folded.select(table.column_names).cast(table.schema)


def merge_into(fresh: pa.Table, held: pa.Table, keys: list[str], probe: list[str]) -> pa.Table:
    """:func:`merge_partials` of ``fresh`` and ``held`` together, where ``held`` (the
    open windows' state) has one row per window already: only the held rows whose every
    ``probe`` key (a subset of ``keys``) occurs in ``fresh`` can share a window with a
    fresh row, so only they are grouped with it; the others are kept as they are.

    Grouping hashes every row's text keys: with 1M devices, 95k fresh rows met 386k held
    ones of which 37k shared a device — 75 ms merged whole, 38 ms so, on their own (112
    and 48 ms within a batch; ``docs/design.md``)."""
    if not held.num_rows:
        return merge_partials(fresh, keys)
    touched = pa.array(np.ones(held.num_rows, dtype=bool))
    for name in probe:
        touched = pc.and_(touched, pc.is_in(held.column(name), value_set=fresh.column(name)))
    merged = merge_partials(pa.concat_tables([fresh, held.filter(touched)]), keys)
    return pa.concat_tables([merged, held.filter(pc.invert(touched))])


def telling_keys(table: pa.Table, keys: list[str]) -> tuple[list[str], dict[str, str | None]]:
    """``keys`` split into those that tell rows apart and the others, each with the
    kept key it equals row for row, or ``None`` when it holds one value throughout
    (columns with nulls always tell)."""
    kept: list[str] = []
    implied: dict[str, str | None] = {}
    for name in keys:
        column = table.column(name)
        if len(column) == 0 or column.null_count:
            kept.append(name)
            continue
        if pc.all(pc.equal(column, column[0])).as_py():
            implied[name] = None
            continue
        same = [
            other
            for other in kept
            if table.column(other).type == column.type
            and not table.column(other).null_count
            and pc.all(pc.equal(column, table.column(other))).as_py()
        ]
        if same:
            implied[name] = same[0]
        else:
            kept.append(name)
    if not kept and keys:  # (Arrow groups by at least one key)
        kept.append(keys[0])
        implied.pop(keys[0], None)
    return kept, implied


def _tally(count: int, p: np.ndarray, rows: _Rows, order: np.ndarray, values: dict) -> dict:
    """Per partition (``p``: each judged row's partition, of ``count``, in judging
    order): its counters, largest ``h`` and arrival, and its first late event in arrival
    order (``late_a``, ``late_file`` (the file's rank, -1 for none), ``late_line``,
    ``late_t``)."""
    out: dict[str, Any] = {}
    for name in ("max_h", "max_a"):
        best = np.full(count, NEG_INF, dtype=np.int64)
        np.maximum.at(best, p, values[name])
        out[name] = best
    out["counts"] = {
        name: np.bincount(p[mask], minlength=count).astype(np.int64)
        for name, mask in values["counts"].items()
    }
    late = order[values["late"]]  # (rows of the task, by their position in it)
    first_late = np.full(count, -1, dtype=np.int64)
    if late.size:
        code = p[values["late"]]
        by_arrival = np.lexsort((rows.line[late], rows.file[late], rows.a[late], code))
        seen, where = np.unique(code[by_arrival], return_index=True)
        first_late[seen] = late[by_arrival[where]]
    has = first_late >= 0
    chosen = np.where(has, first_late, 0)
    out["late_a"], out["late_t"] = rows.a[chosen], rows.t[chosen]
    out["late_line"] = rows.line[chosen]
    out["late_file"] = np.where(has, rows.file[chosen], -1)
    return out


def _summary(
    schema: pa.Schema, task: int, pids: list[str], files: list[str], tallies: list[dict]
) -> pa.RecordBatch:
    """One row per partition from the tallies of the task's pieces (:func:`_tally`):
    counters summed, the largest ``h`` and arrival, the earliest late event by (arrival,
    file, line)."""
    count = len(pids)
    out: dict[str, pa.Array] = {
        "kind": pa.repeat(pa.scalar(SUMMARY), count),
        "task": pa.repeat(pa.scalar(task, pa.int64()), count),
        "pid": pa.array(pids, pa.string()),
    }
    first, *others = tallies
    for name in ("max_h", "max_a"):
        out[name] = pa.array(np.maximum.reduce([t[name] for t in tallies]), pa.int64())
    for name in first["counts"]:
        total = np.sum([t["counts"][name] for t in tallies], axis=0)
        out[counter_column(name)] = pa.array(total.astype(np.int64))
    late = {name: first[name].copy() for name in ("late_a", "late_file", "late_line", "late_t")}
    for other in others:
        a, f, line = other["late_a"], other["late_file"], other["late_line"]
        earlier = (a < late["late_a"]) | (
            (a == late["late_a"])
            & ((f < late["late_file"]) | ((f == late["late_file"]) & (line < late["late_line"])))
        )
        better = (f >= 0) & ((late["late_file"] < 0) | earlier)
        for name in late:
            late[name] = np.where(better, other[name], late[name])
    has = late["late_file"] >= 0
    for name in ("late_a", "late_t", "late_line"):
        out[name] = masked(late[name], has, pa.int64())
    names = np.array(files, dtype=object)[np.where(has, late["late_file"], 0)]
    out["late_file"] = pa.array(names.tolist(), pa.string(), mask=~has)
    return _rows(schema, out)


def input_clock(plan: FusedPlan, delivering: list[str]) -> int:
    """The input's arrival clock at the start of a substreams batch whose delivering
    partitions are ``delivering`` (as ``SparkEngine._estimate`` finds it): the others
    take their idle estimates; a partition new here starts at minus infinity."""
    seen = set(delivering)
    clocks = [busy if pid in seen else idle for pid, busy, idle in plan.idle]
    return max([plan.arrival_clock, *clocks])


def _key_state(known: pa.Table | None, keys: pa.Array) -> np.ndarray:
    """``(A0, W0, newest0)`` per key of ``keys`` (``A0`` left to the caller): the
    keys' state after the previous batch (``known``), minus infinity for a key new here."""
    start = np.full((len(keys), 3), NEG_INF, dtype=np.int64)
    if known is None:
        return start
    where = pc.index_in(known.column("key"), value_set=keys)
    found = filled(pc.is_valid(where))
    if found.any():
        at = pc.filter(where, pa.array(found)).to_numpy().astype(np.int64)
        start[at, 1] = pc.filter(known.column("k_watermark"), pa.array(found)).to_numpy()
        start[at, 2] = pc.filter(known.column("k_newest"), pa.array(found)).to_numpy()
    return start


def _by(segment: np.ndarray, values: np.ndarray, count: int) -> pa.Array:
    out = np.full(count, NEG_INF, dtype=np.int64)
    out[segment] = values
    return pa.array(out, pa.int64())


def _rows(schema: pa.Schema, columns: dict[str, pa.Array]) -> pa.RecordBatch:
    count = len(next(iter(columns.values())))
    return pa.RecordBatch.from_arrays(
        [
            columns[f.name].cast(f.type) if f.name in columns else pa.nulls(count, f.type)
            for f in schema
        ],
        schema=schema,
    )
