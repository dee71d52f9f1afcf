"""The metrics record of a batch (semantics §8): cumulative counters, watermarks, state
sizes, this batch's own counts, its plan and its diagnostics, one JSON file per batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparktide.core.diagnostics import LateInput, PartitionView, all_dead_lettered, not_progressing
from sparktide.core.hold import output_watermark
from sparktide.core.instants import NEG_INF
from sparktide.core.metrics import output_start_fields
from sparktide.core.namedcolumns import missing_columns
from sparktide.core.records import time_or_none
from sparktide.job import Job
from sparktide.spark.batch import Batch
from sparktide.spark.clocks import ClockState, governing_watermark_floor
from sparktide.spark.columns import (
    PARTITION,
)
from sparktide.spark.context import Context
from sparktide.spark.counters import grouped, summed
from sparktide.spark.onepass import counter_column

__all__ = ["batch_counts", "diagnostics", "metrics_directory_of", "metrics_record", "write_metrics"]


def metrics_record(context: Context, clock: ClockState, now: int, batch_id: int) -> dict[str, Any]:
    """The cumulative part of a batch's metrics record, from its clock state."""
    totals: dict[str, int] = {}
    for entry in clock["counters"].values():
        for name, value in entry.items():
            totals[name] = totals.get(name, 0) + value
    parts = clock["partitions"]
    timeline, window = context.timeline, context.written_window
    if timeline.job_watermark:
        watermark = clock["job_watermark"]
    elif timeline.partition_watermarks:
        watermark = min((p.watermark for p in parts.values()), default=NEG_INF)
    else:
        watermark = governing_watermark_floor(
            clock["arrival"], clock, context.watermark_late_arrival
        )
    record = {"type": "metrics", "batch": batch_id, **grouped(totals)}
    record["input"] += clock.get("malformed", 0)
    if clock.get("malformed"):
        record["dead_lettered"]["malformed"] = clock["malformed"]
    record["in_no_window"] = totals.get("in_no_window", 0)
    written = clock.get("written", {})
    record["windows_emitted"] = written.get("windows_emitted", 0)
    if window is not None and window.having is not None:
        record["windows_filtered"] = written.get("windows_filtered", 0)
    if context.job.analytics and context.job.filter is not None:  # (semantics §11.19)
        record["events_filtered"] = written.get("events_filtered", 0)
    record["released"] = written.get("released", 0)
    record["processing_time"] = time_or_none(now)
    record["watermark"] = time_or_none(watermark)
    record["watermark_delay_us"] = now - watermark if -(1 << 61) < watermark else None
    if window is not None:  # (substreams: the watermark above is the floor)
        record["output_watermark"] = time_or_none(output_watermark(window, watermark))
    starts = context.output_start is not None  # (semantics §12)
    if starts:
        record.update(output_start_fields(context.output_start, context.read_point))  # type: ignore[arg-type]
        record["skipped_before_start"] = totals.get("skipped_before_start", 0)
    record["partitions"] = [
        {
            "partition": pid,
            **grouped(clock["counters"].get(pid, {})),
            **_skipped(clock["counters"].get(pid, {}), starts),
            "arrival_clock": time_or_none(p.arrival),
            **({"watermark": time_or_none(p.watermark)} if timeline.partition_watermarks else {}),
        }
        for pid, p in sorted(parts.items())
    ]
    return record


def _skipped(counter: dict[str, int], starts: bool) -> dict[str, int]:
    """A partition's ``skipped_before_start`` in a run with an output start time."""
    return {"skipped_before_start": counter.get("skipped_before_start", 0)} if starts else {}


def batch_counts(
    context: Context, batch: Batch, summary: list[Any], malformed: int
) -> dict[str, Any]:
    """The counters of this micro-batch alone (the metrics record's are cumulative)."""
    totals = summed(summary)
    out = grouped(totals)
    out["input"] += malformed
    if malformed:
        out["dead_lettered"]["malformed"] = malformed
    out["in_no_window"] = totals.get("in_no_window", 0)
    out["windows_emitted"] = batch.written.get("windows_emitted", 0)
    window = context.written_window
    if window is not None and window.having is not None:
        out["windows_filtered"] = batch.written.get("windows_filtered", 0)
    if context.job.analytics and context.job.filter is not None:
        out["events_filtered"] = batch.written.get("events_filtered", 0)
    out["released"] = batch.written.get("released", 0)
    out.update(_skipped(totals, context.output_start is not None))
    return out


def diagnostics(
    context: Context,
    clock: ClockState,
    summary: list[Any],
    now: int,
    this_batch: dict[str, Any] | None = None,
    present: list[int] | None = None,
) -> list[dict[str, Any]]:
    """This micro-batch's diagnostics (:mod:`sparktide.core.diagnostics`);
    ``this_batch``, its own counters (:func:`batch_counts`), for ``all_dead_lettered``
    and ``missing_column`` (``present``: per named column, the input records holding a
    value; None when not counted)."""
    out: list[dict[str, Any]] = []
    bounds = [context.late_arrival] + [c.late_arrival for c in context.inputs.values()]
    late_bound = next((bound for bound in bounds if bound is not None), None)
    if late_bound is not None:
        late = LateInput(late_bound)
        examples = sorted(
            (row["late_example"], row[PARTITION])
            for row in summary
            if row["late_example"] is not None
        )
        if examples:  # every late event of the batch arrived at processing time now
            (a, file, line, t), pid = examples[0]
            late.observe(
                now,
                count=sum(row[counter_column("late")] or 0 for row in summary),
                partition=pid,
                event_time=t,
                arrival_time=a,
                file=file,
                line=line,
                late_arrival=context.of_partition(pid).late_arrival,
            )
        diagnostic = late.diagnostic()
        if diagnostic is not None:
            out.append(diagnostic)
    if context.timeline.job_watermark:
        views = [
            PartitionView(pid, part.watermark, part.last_processing if part.seen else None)
            for pid, part in sorted(clock["partitions"].items())
        ]
        job = context.job
        out.extend(
            not_progressing(
                views,
                now=now,
                started=clock["started"],
                late_arrival=lambda pid: context.of_partition(pid).late_arrival,
                can_partition=job.join is None or job.references_joined,
            )
        )
    if this_batch is not None:
        out.extend(all_dead_lettered(this_batch["input"], this_batch["dead_lettered"]))
        out.extend(missing_columns(context.named_columns, this_batch["input"], present))
    return out


def metrics_directory_of(job: Job) -> str:
    """Where a job's metrics records go: ``[output] metrics``, else beside its state
    (they are also what :func:`sparktide.spark.run.publish_metrics` publishes)."""
    if job.output.metrics is not None:
        return job.output.metrics
    assert job.output.checkpoint is not None
    return f"{job.output.checkpoint}/sparktide/metrics"


def write_metrics(job: Job, metrics: dict[str, Any], label: str) -> None:
    """One JSON-lines file of one line per batch, ``<label>.jsonl``, renamed into
    place whole (a stream reading the directory never sees half a file: Spark skips
    names starting with a dot)."""
    path = Path(metrics_directory_of(job).removeprefix("file:"))
    path.mkdir(parents=True, exist_ok=True)
    tmp = path / f".{label}.jsonl.tmp"
    tmp.write_text(json.dumps(metrics) + "\n")
    tmp.replace(path / f"{label}.jsonl")
