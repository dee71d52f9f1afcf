"""The ``mapInArrow`` body of the one-pass plan: one task reads, judges and folds.

:func:`fused_kernel` reads the task's input (:func:`read`: whole JSONL files, Parquet
files or lines), judges and folds the rows it vouched for
(:func:`~sparktide.spark.onepass.judge.judge`), spills the bulky rows to files and
answers with few rows; or with one row saying why it cannot
(:class:`~sparktide.spark.onepass.signals.Abort`,
:class:`~sparktide.spark.onepass.signals.Unreadable`). The function is pickled by
reference, so this module imports no Spark session.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from sparktide.spark.onepass.collect import RowCollector, TaskRows
from sparktide.spark.onepass.files import spill
from sparktide.spark.onepass.jsonl import read_files, read_json_files
from sparktide.spark.onepass.judge import judge
from sparktide.spark.onepass.lines import read_lines
from sparktide.spark.onepass.parquetfiles import read_parquet
from sparktide.spark.onepass.plan import FusedPlan
from sparktide.spark.onepass.schema import (
    ABORT,
    FILE_TEXT,
    KEPT,
    KEY,
    LINE,
    LINE_SCHEMA,
    PARTIAL,
    TASK,
    kernel_schema,
    record_batch,
)
from sparktide.spark.onepass.signals import Abort, Unreadable
from sparktide.spark.onepass.tally import column_present_counts

__all__ = ["fused_kernel", "read"]


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
    schema = kernel_schema(plan)
    try:
        yield from _one_pass(plan, batches, schema, task, name)
    except Abort:
        yield record_batch(
            schema, {"kind": pa.array([ABORT]), "task": pa.array([task], pa.int64())}
        )
    except Unreadable:
        yield record_batch(
            schema, {"kind": pa.array([FILE_TEXT]), "task": pa.array([task], pa.int64())}
        )


def _one_pass(
    plan: FusedPlan, batches: Iterator[pa.RecordBatch], schema: pa.Schema, task: int, name: str
) -> Iterator[pa.RecordBatch]:
    """The task's rows when it can judge its input (``name``: its attempt's, for the
    files it spills)."""
    slow: list[pa.RecordBatch] = []
    rows = read(plan, batches, slow)
    out: dict[str, pa.Array] = {
        "kind": pa.array([TASK]),
        "task": pa.array([task], pa.int64()),
        "slow": pa.array([sum(batch.num_rows for batch in slow)], pa.int64()),
        "parts": pa.array([0], pa.int64()),
    }
    for i, count in enumerate(column_present_counts(plan, rows)):
        out[f"_nc{i}"] = pa.array([count], pa.int64())
    if rows is not None:
        partials, keys, summary = judge(plan, schema, task, rows)
        out["parts"] = pa.array([partials.num_rows], pa.int64())
        out[f"{PARTIAL}_file"] = spill(plan, f"{PARTIAL}-{name}", partials)
        if keys is not None:  # (a windowless job's: the analytic columns' kept events)
            kind = KEY if plan.release is None else KEPT
            out[f"{kind}_file"] = spill(plan, f"{kind}-{name}", keys)
        yield summary
    if slow:
        lines = pa.Table.from_batches([record_batch(LINE_SCHEMA, _columns(b)) for b in slow])
        out[f"{LINE}_file"] = spill(plan, f"{LINE}-{name}", lines)
    yield record_batch(schema, out)


def _columns(batch: pa.RecordBatch) -> dict[str, pa.Array]:
    return {name: batch.column(name) for name in batch.schema.names}


def read(
    plan: FusedPlan, batches: Iterator[pa.RecordBatch], slow: list[pa.RecordBatch]
) -> TaskRows | None:
    """The vouched lines of the task, as columns; the other lines go to ``slow``
    (``file``, ``line``, ``raw``, ``mtime``, ``pre_error``, ``lpart``) for the SQL route.
    The input is whole JSONL files (``file``, ``text``, ``mtime``, or ``file``, ``path``,
    ``mtime`` to read), Parquet files (``file``, ``path``, ``length``, ``mtime``) or lines
    (``file``, ``line``, ``raw``, ``mtime``, maybe ``pre_error``, and the stream's
    partition column if the job reads it)."""
    rows = RowCollector(plan)
    for batch in batches:
        names = batch.schema.names
        if "text" in names:
            read_files(plan, batch, rows, slow)
        elif "length" in names:
            read_parquet(plan, batch, rows)
        elif "path" in names:
            read_json_files(plan, batch, rows, slow)
        else:
            read_lines(plan, batch, rows, slow)
    return rows.result(plan)
