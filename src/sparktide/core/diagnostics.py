"""Diagnostics (semantics §8): what an operator should look at, aggregated per interval.

Both engines build the same two kinds of diagnostic from what they already track; the
interval is the stretch of processing time one ``metrics`` record covers (a micro-batch
on Spark, the whole run in ``simulate``).

``late_input``
    Input events later than ``late_arrival`` (arrival − event time > L): how many, the
    range of processing times they arrived at, and the first of them as an example.
``partition_not_progressing``
    A partition of a merged job (one job watermark, the minimum over partitions) that
    has delivered nothing for longer than ``late_arrival`` and whose watermark is the one
    holding the job watermark back, while another partition's is ahead; or the input's
    only partition, silent for longer than ``late_arrival`` (Stream Analytics'
    *InputPartitionNotProgressing* is raised for a single-partition input too).
``all_dead_lettered``
    Every input record of the interval was dead-lettered for one reason (a column name
    of the job that the input does not have makes every record malformed, for
    instance): the reason and the count.
``missing_column``
    A column the job names (:func:`sparktide.core.namedcolumns.named_columns`) holds a
    value in none of the interval's input records: the column, its roles in the job and
    the record count.

Each diagnostic is a JSON-able dict with a ``kind`` and a ``message`` in plain words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sparktide.core.instants import is_finite
from sparktide.core.records import time_or_none
from sparktide.time import format_duration, round_duration

__all__ = [
    "LateInput",
    "PartitionView",
    "all_dead_lettered",
    "not_progressing",
]


@dataclass
class LateInput:
    """Late input events seen in one interval: count, processing-time range, one example.

    ``observe`` is called for each late input event in arrival order; the first one
    observed is the example. ``late_arrival`` is the tolerance the message names: the
    example's own input's where inputs have their own (semantics §7.8).
    """

    late_arrival: int
    count: int = 0
    first_processing: int | None = None
    last_processing: int | None = None
    example: dict[str, Any] | None = None

    def observe(
        self,
        processing: int,
        *,
        partition: Any,
        event_time: int,
        arrival_time: int,
        file: str | None,
        line: int | None,
        count: int = 1,
        late_arrival: int | None = None,
    ) -> None:
        """Count a late input event (or ``count`` late events arriving at ``processing``,
        this one the first in arrival order), judged late by ``late_arrival`` (``None``:
        the job's)."""
        self.count += count
        if self.first_processing is None or processing < self.first_processing:
            self.first_processing = processing
        if self.last_processing is None or processing > self.last_processing:
            self.last_processing = processing
        if self.example is None:
            if late_arrival is not None:
                self.late_arrival = late_arrival
            self.example = {
                "partition": partition,
                "file": file,
                "line": line,
                "event_time": time_or_none(event_time),
                "arrival_time": time_or_none(arrival_time),
                "lateness_us": arrival_time - event_time,
            }

    def diagnostic(self) -> dict[str, Any] | None:
        """The ``late_input`` diagnostic of the interval, or None when nothing was late."""
        if not self.count or self.example is None:
            return None
        example = self.example
        where = f" ({example['file']}:{example['line']})" if example.get("file") else ""
        message = (
            f"{self.count} late input event{'s' if self.count != 1 else ''} "
            f"(arrival - event time > late_arrival {format_duration(self.late_arrival)}); "
            f"e.g. partition {example['partition']}{where}: event time "
            f"{example['event_time']}, arrived {example['arrival_time']}, "
            f"{round_duration(example['lateness_us'])} late"
        )
        return {
            "kind": "late_input",
            "count": self.count,
            "processing_from": time_or_none(self.first_processing),
            "processing_to": time_or_none(self.last_processing),
            "example": example,
            "message": message,
        }


@dataclass(frozen=True)
class PartitionView:
    """What the ``partition_not_progressing`` check reads of one partition.

    ``last_processing`` is the processing time of its last delivery (None: never
    delivered); ``since`` is when the job started watching it (its first observation).
    """

    partition: Any
    watermark: int
    last_processing: int | None


def not_progressing(
    partitions: Iterable[PartitionView],
    *,
    now: int,
    started: int,
    late_arrival: int | Callable[[Any], int | None] | None,
    can_partition: bool = True,
) -> list[dict[str, Any]]:
    """``partition_not_progressing`` diagnostics of a merged job at processing time ``now``.

    A partition is reported when it has delivered nothing for longer than
    ``late_arrival`` (a partition that never delivered counts from ``started``) and,
    when there are several, its watermark is the job's (the minimum) while some other
    partition's is ahead; the only partition of a job is reported on its silence alone
    (semantics §8.4). Without a late-arrival bound nothing is reported (there is no
    "longer than L"). ``late_arrival`` may be a function of the partition: each input's
    own tolerance (semantics §7.8). The message advises ``ordering.partitioned = true`` only when
    ``can_partition`` and there are several partitions (a join cannot: it follows the
    minimum over both inputs' partitions).
    """
    views = list(partitions)
    bound_of = late_arrival if callable(late_arrival) else lambda _: late_arrival
    if not views:
        return []
    if len(views) == 1:
        bound = bound_of(views[0].partition)
        return [] if bound is None else _silent_only_partition(views[0], now, started, bound)
    lowest = min(v.watermark for v in views)
    out = []
    for view in views:
        if view.watermark != lowest:
            continue
        if not any(other.watermark > lowest for other in views):
            continue
        bound = bound_of(view.partition)
        since = view.last_processing if view.last_processing is not None else started
        idle = now - since
        if bound is None or not is_finite(since) or idle <= bound:
            continue
        ahead = max(other.watermark for other in views)
        delivered = (
            f"has delivered nothing for {round_duration(idle)}"
            if view.last_processing is not None
            else f"has delivered nothing since the job started {round_duration(idle)} ago"
        )
        held = time_or_none(lowest) or "-infinity"
        advice = (
            "send data to it, or set ordering.partitioned = true so each partition keeps "
            "its own watermark"
            if can_partition
            else "send data to it (a join follows the lowest watermark of all its inputs' "
            "partitions)"
        )
        message = (
            f"partition {view.partition} {delivered} (longer than late_arrival "
            f"{format_duration(bound)}) and holds the job watermark back at {held}: "
            f"{advice}"
        )
        out.append(
            {
                "kind": "partition_not_progressing",
                "partition": view.partition,
                "idle_us": idle,
                "last_delivery": time_or_none(view.last_processing),
                "watermark": time_or_none(lowest),
                "ahead": time_or_none(ahead),
                "message": message,
            }
        )
    return out


def _silent_only_partition(
    view: PartitionView, now: int, started: int, late_arrival: int
) -> list[dict[str, Any]]:
    """``partition_not_progressing`` for the input's only partition: silent for longer
    than ``late_arrival``; nobody is ahead of it, so ``ahead`` is null and the advice is
    only to look at its source."""
    since = view.last_processing if view.last_processing is not None else started
    idle = now - since
    if not is_finite(since) or idle <= late_arrival:
        return []
    delivered = (
        f"has delivered nothing for {round_duration(idle)}"
        if view.last_processing is not None
        else f"has delivered nothing since the job started {round_duration(idle)} ago"
    )
    held = time_or_none(view.watermark) or "-infinity"
    message = (
        f"partition {view.partition}, the input's only partition, {delivered} (longer "
        f"than late_arrival {format_duration(late_arrival)}); the job watermark is at "
        f"{held}: check that its source is still sending"
    )
    return [
        {
            "kind": "partition_not_progressing",
            "partition": view.partition,
            "idle_us": idle,
            "last_delivery": time_or_none(view.last_processing),
            "watermark": time_or_none(view.watermark),
            "ahead": None,
            "message": message,
        }
    ]


def all_dead_lettered(input_count: int, dead_lettered: dict[str, int]) -> list[dict[str, Any]]:
    """The ``all_dead_lettered`` diagnostic of an interval in which every one of its
    ``input_count`` records was dead-lettered for the same reason (``dead_lettered``:
    the interval's counts by reason); none otherwise (no input, some admitted, or
    several reasons).

    A job whose time, partition or key column is misspelled dead-letters every record
    as malformed and would otherwise finish without an alarm (semantics §8.4)."""
    reasons = [reason for reason, n in dead_lettered.items() if n]
    if input_count <= 0 or len(reasons) != 1 or dead_lettered[reasons[0]] != input_count:
        return []
    reason = reasons[0]
    advice = (
        ": check that the job's column names (source.timestamp_by, arrival_time, "
        "partition, over) and time formats match the input; the dead letters say why "
        "each record was refused"
        if reason == "malformed"
        else ""
    )
    plural = "s" if input_count != 1 else ""
    return [
        {
            "kind": "all_dead_lettered",
            "reason": reason,
            "count": input_count,
            "message": f"all {input_count} input record{plural} were dead-lettered "
            f"({reason}){advice}",
        }
    ]
