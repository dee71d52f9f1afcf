"""A batch judged by the route its plan takes (:mod:`sparktide.spark.plans`): one pass
per task (:mod:`.taskpass`), else the general plan (:mod:`.judging`), which a declined
one-pass batch falls back to. Both hand the rest of the batch a :class:`Judgement`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from sparktide.spark import judging, plans, taskpass
from sparktide.spark.batch import Batch
from sparktide.spark.clocks import idle_estimates
from sparktide.spark.columns import (
    PARTITION,
)
from sparktide.spark.context import Context
from sparktide.spark.inputs.parquet import parquet_rows
from sparktide.spark.inputs.textfiles import json_texts
from sparktide.spark.keys import next_keys_table
from sparktide.spark.lineshapes import json_files, parquet_files, whole_files
from sparktide.spark.plans import BatchPlan
from sparktide.spark.taskpass import OnePass, Spilled, TaskMemory

__all__ = ["Judgement", "judge_batch"]


@dataclass
class Judgement:
    """What the steps after judging read of a batch, whichever route judged it."""

    plan: BatchPlan
    lines: DataFrame  # the batch's input as the route read it (dead letters' lines)
    summary: list[Any]  # one row per partition: clocks' and counters' figures
    delivering: dict[str, Any]  # the partitions that delivered, by pid
    malformed: int
    arrival_at_start: int  # the input's arrival clock at the start of the batch
    decided: DataFrame | None  # the judged rows (general route)
    malformed_from: DataFrame | None  # where the malformed records are read
    keys_next: DataFrame | pa.Table | None = None  # substreams: the keys' next state
    partial: Spilled | None = None  # the one-pass route's window partials (or records)
    kept: Spilled | None = None  # the one-pass route's analytic kept events (no window)
    partial_rows: int = 0
    read_by: str | None = None  # who read whole files' contents: arrow or spark
    #: per named column (``missing_column``): the input records holding a value
    present: list[int] | None = None
    #: one row per input record, where the dead letters are read (``decided`` but with
    #: [apply], whose rows are its events' elements: sparktide.spark.apply)
    counted: DataFrame | None = None


def judge_batch(context: Context, memory: TaskMemory, batch: Batch, lines: DataFrame) -> Judgement:
    """Judge ``batch`` by its plan; a one-pass batch the tasks decline is judged by the
    general plan, the reason recorded in the judgement's plan."""
    job = context.job
    starts = context.output_start is not None
    skip = plans.skips_one_pass(batch.clock)
    plan = plans.plan_batch(
        job, flush=batch.flushing, silent=batch.silent, starts=starts, skip=skip
    )
    if plan.no_task:  # (no general plan built only to learn the schema of no rows)
        nothing = taskpass.no_input(context, batch)
        if not isinstance(nothing, taskpass.Declined):
            return _one_pass_judgement(context, batch, plan, lines, nothing)
    whole = not batch.no_input and whole_files(job, lines)
    by_name = json_files(job, lines)
    declined: list[str] = []

    def attempt(lines: DataFrame) -> OnePass | None:
        outcome = taskpass.one_pass(context, memory, batch, lines)
        if isinstance(outcome, taskpass.Declined):
            declined.append(outcome.reason)
            return None
        return outcome

    fused = None
    if by_name or parquet_files(job, lines):
        # files by name: the kernel reads them, else Spark their text (JSONL, which the
        # kernel has then judged already) or their rows (Parquet, typed below)
        fused = attempt(lines) if plan.one_pass else None
        if fused is None:
            lines = json_texts(lines) if by_name else parquet_rows(lines, job)
    if fused is None and plan.one_pass and not by_name:
        fused = attempt(lines)
    _remember(batch, plan, fused, declined)
    if fused is None and plan.one_pass:
        plan = plan.fall_back("; ".join(declined))
    if fused is not None:
        judgement = _one_pass_judgement(context, batch, plan, lines, fused)
    else:
        judgement = _general_judgement(context, batch, plan, lines)
    # (who read the files' contents, for the metrics: the tasks, or Spark)
    judgement.read_by = (fused.read_by if fused is not None else "spark") if whole else None
    return judgement


def _remember(batch: Batch, plan: BatchPlan, fused: OnePass | None, declined: list[str]) -> None:
    """What became of a batch the one-pass plan would take, in the state it commits
    (:func:`sparktide.spark.plans.remember_one_pass`)."""
    if plan.skipped:
        plans.remember_one_pass(batch.clock, "skipped")
    elif plan.one_pass:
        unvouched = taskpass.UNVOUCHED_EVENT in declined
        if fused is not None:
            plans.remember_one_pass(batch.clock, "ran")
        else:
            plans.remember_one_pass(batch.clock, "unvouched" if unvouched else "declined")


def _one_pass_judgement(
    context: Context, batch: Batch, plan: BatchPlan, lines: DataFrame, fused: OnePass
) -> Judgement:
    """The judgement of a batch parsed, judged and folded per task."""
    delivering = {row[PARTITION]: row for row in fused.summary}
    arrival = idle_estimates(batch.clock, delivering, batch.now, context.watermark_terms)
    keys_next = None
    if fused.keys is not None:
        if arrival != fused.input_clock:  # (the same rule: never expected)
            raise RuntimeError("one-pass plan: the input's arrival clock differs")
        arrival_at_end = max([arrival, *(row["max_a"] for row in delivering.values())])
        keys_next = next_keys_table(context, fused.keys, batch.previous, arrival_at_end, batch.now)
    return Judgement(
        plan,
        lines,
        fused.summary,
        delivering,
        fused.malformed,
        arrival,
        decided=None,
        malformed_from=fused.malformed_lines,
        keys_next=keys_next,
        partial=fused.partial,
        partial_rows=fused.partial_rows,
        present=fused.present,
        kept=fused.kept,
    )


def _general_judgement(
    context: Context, batch: Batch, plan: BatchPlan, lines: DataFrame
) -> Judgement:
    """The judgement of a batch by the general plan (Spark SQL)."""
    judged = judging.judge(context, batch, lines, estimates_first=plan.estimates_first)
    return Judgement(
        plan,
        lines,
        judged.summary,
        judged.delivering,
        judged.malformed,
        judged.arrival_at_start,
        decided=judged.decided,
        malformed_from=judged.parsed if plan.estimates_first else judged.counted,
        counted=judged.counted,
        keys_next=judged.keys_next,
        present=judged.present,
    )
