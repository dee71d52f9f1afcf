"""The ``metrics`` record of a reference run (semantics §8), and its diagnostics."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from sparktide.core.counts import summary
from sparktide.core.diagnostics import PartitionView, all_dead_lettered, not_progressing
from sparktide.core.hold import output_watermark
from sparktide.core.instants import is_finite
from sparktide.core.records import time_or_none

if TYPE_CHECKING:
    from sparktide.core.engine import ReferenceEngine

__all__ = ["metrics_record", "output_start_fields", "run_diagnostics"]


def output_start_fields(start: int, read_point: int | None) -> dict[str, Any]:
    """The metrics fields of a run with an output start time (semantics §12): the start
    time and the read point (null: the whole input is read)."""
    return {"output_start_time": time_or_none(start), "read_point": time_or_none(read_point)}


def metrics_record(engine: ReferenceEngine) -> dict[str, Any]:
    """The ``metrics`` record of ``engine``'s run so far."""
    clocks, counts, job, sink = engine.clocks, engine.counts, engine.job, engine.sink
    watermark = engine.flushed_watermark
    if watermark is None:
        watermark = engine.job_watermark_view()
    record: dict[str, Any] = {"type": "metrics"}
    record.update(summary(counts.total()))
    record["input"] += counts.malformed
    if counts.malformed:
        record["dead_lettered"]["malformed"] = counts.malformed
    record["in_no_window"] = getattr(sink, "in_no_window", 0)
    record["windows_emitted"] = len(engine.result.windows)
    if engine.having is not None:
        # (a window joined by a [join], semantics §7.12: its sink counts those)
        record["windows_filtered"] = engine.windows_filtered + getattr(sink, "windows_filtered", 0)
    if job.analytics and job.filter is not None:
        record["events_filtered"] = engine.events_filtered
    record["released"] = len(engine.result.events)
    record["held"] = sink.held
    record["open_windows"] = sink.open_windows()
    if job.edges:
        record["open_edges"] = sink.open_edges()  # type: ignore[attr-defined]
    now = clocks.now
    record["processing_time"] = time_or_none(now)
    record["watermark"] = time_or_none(watermark)
    record["watermark_delay_us"] = (
        now - watermark if is_finite(watermark) and is_finite(now) else None
    )
    if job.window is not None:
        # Substreams: the floor every key's watermark has reached, not the lowest key
        # watermark above: a key seen for the first time starts at the floor.
        governing = clocks.floor() if clocks.substreams else watermark
        record["output_watermark"] = time_or_none(output_watermark(job.window, governing))
    record["flushed"] = engine.flushed_watermark is not None
    if engine.output_start is not None:  # (semantics §12)
        record.update(output_start_fields(engine.output_start, engine.read_point))
        record["skipped_before_start"] = counts.total()["before_start"]
    record["partitions"] = _partitions(engine)
    record["diagnostics"] = run_diagnostics(engine)
    return record


def _partitions(engine: ReferenceEngine) -> list[dict[str, Any]]:
    """The per-partition entries of the metrics record."""
    clocks = engine.clocks
    partitions = []
    for pid, clock in clocks.partitions.items():
        counter = engine.counts.by_partition.get(pid, Counter())
        entry = {"partition": pid, **summary(counter)}
        if engine.output_start is not None:
            entry["skipped_before_start"] = counter["before_start"]
        entry["arrival_clock"] = time_or_none(clock.arrival)
        if not clocks.substreams:
            before = engine.flushed_timelines
            entry["watermark"] = time_or_none(before.get(pid, clocks.timelines[pid].watermark))
        partitions.append(entry)
    return partitions


def run_diagnostics(engine: ReferenceEngine) -> list[dict[str, Any]]:
    """The diagnostics of ``engine``'s run so far (:mod:`sparktide.core.diagnostics`):
    one interval, the whole run."""
    clocks, job = engine.clocks, engine.job
    out = []
    late_input = engine.step.late_input
    late = late_input.diagnostic() if late_input is not None else None
    if late is not None:
        out.append(late)
    if not clocks.substreams and not clocks.partitioned and engine.started is not None:
        before = engine.flushed_timelines
        views = [
            PartitionView(
                pid,
                before.get(pid, clocks.timelines[pid].watermark),
                clock.last_processing if clock.seen else None,
            )
            for pid, clock in clocks.partitions.items()
        ]
        out.extend(
            not_progressing(
                views,
                now=clocks.now,
                started=engine.started,
                late_arrival=lambda pid: (
                    job.policy_of(clocks.input_name(pid)).ordering.late_arrival
                ),
                can_partition=job.join is None or job.references_joined,
            )
        )
    totals = summary(engine.counts.total())
    lettered = dict(totals["dead_lettered"])
    if engine.counts.malformed:
        lettered["malformed"] = engine.counts.malformed
    out.extend(all_dead_lettered(totals["input"] + engine.counts.malformed, lettered))
    out.extend(engine.presence.diagnostics())
    return out
