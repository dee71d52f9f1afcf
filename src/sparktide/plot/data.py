"""What a chart draws: a run's decisions as integer-microsecond arrays, in input order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparktide.core.engine import Result
from sparktide.core.records import InputRecord
from sparktide.job import Job
from sparktide.time import parse_instant

__all__ = ["MISSING", "VERDICTS", "VERDICT_CODE", "ChartData", "chart_data", "instant"]

VERDICTS = ("accepted", "adjusted", "dropped", "dead_lettered")
#: A verdict's index in :data:`VERDICTS`.
VERDICT_CODE = {name: code for code, name in enumerate(VERDICTS)}
#: No time: an event not admitted (no timestamp), or a watermark at minus infinity.
MISSING = np.iinfo(np.int64).min


@dataclass(frozen=True)
class ChartData:
    """The decisions of a run as integer-microsecond arrays, in input order.

    Attributes
    ----------
    x
        Arrival time (or processing time) of each drawn event.
    event_time
        Its event time.
    timestamp
        Its system timestamp; ``MISSING`` (int64 minimum) when it was not admitted.
    watermark
        Its timeline's watermark just before it; ``MISSING`` for minus infinity.
    verdict
        Index into :data:`VERDICTS`.
    timeline
        Index into ``timelines``.
    seq
        The record's input position.
    order
        Positions of the events in the order the engine judged them
        (processing time, arrival time, seq).
    timelines
        Timeline keys of the drawn events (partition ids, or substream key values).
    malformed
        Input records not drawn (malformed: they have no times).
    series
        The watermark lines drawn: ``(timeline key, x, watermark)`` for the busiest
        timelines, as step functions (each value holds until the next x).
    job_series
        The merged job watermark (minimum over partitions) as ``(x, watermark)``, for a
        merged job with more than one partition; else ``None``.
    timeline_count
        How many timelines the job had (declared partitions included).
    substreams
        True when the timelines are substream keys (``source.over``).
    """

    x: np.ndarray
    event_time: np.ndarray
    timestamp: np.ndarray
    watermark: np.ndarray
    verdict: np.ndarray
    timeline: np.ndarray
    seq: np.ndarray
    order: np.ndarray
    timelines: list[Any]
    malformed: int
    series: list[tuple[Any, np.ndarray, np.ndarray]]
    job_series: tuple[np.ndarray, np.ndarray] | None
    timeline_count: int
    substreams: bool

    @property
    def size(self) -> int:
        """How many events are drawn."""
        return int(self.x.size)

    def counts(self) -> dict[str, int]:
        """Events per verdict, every verdict listed."""
        found = np.bincount(self.verdict, minlength=len(VERDICTS))
        return {name: int(found[i]) for i, name in enumerate(VERDICTS)}


def instant(text: str | None, cache: dict[str, int]) -> int:
    """An instant of a decision or window record (``MISSING`` for none), parsed once."""
    if text is None:
        return MISSING
    value = cache.get(text)
    if value is None:
        value = cache[text] = parse_instant(text)
    return value


def chart_data(
    job: Job, records: list[InputRecord], result: Result, *, time_across: str
) -> dict[str, Any]:
    """The drawn events as arrays, from the decisions of ``result`` (every field of
    :class:`ChartData` but the watermark lines); ``time_across`` is ``arrival`` or
    ``processing``."""
    if len(result.decisions) != len(records):
        raise ValueError("the result must come from a run with explain=True over these records")
    substreams = job.source.over is not None
    cache: dict[str, int] = {}
    keys: dict[Any, int] = {}
    rows: list[tuple[int, int, int, int, int, int, int, int, int]] = []
    malformed = 0
    for decision in result.decisions:
        record = records[decision["seq"]]
        if record.malformed:
            malformed += 1
            continue
        if record.cti:  # not an event: its effect shows in the next events' watermarks
            continue
        key = record.key if substreams else record.partition
        index = keys.setdefault(key, len(keys))
        across = record.arrival_time if time_across == "arrival" else record.processing_time
        rows.append(
            (
                across,  # type: ignore[arg-type]
                record.event_time,  # type: ignore[arg-type]
                instant(decision["timestamp"], cache),
                instant(decision["watermark"], cache),
                VERDICT_CODE[decision["verdict"]],
                index,
                record.processing_time,  # type: ignore[arg-type]
                record.arrival_time,  # type: ignore[arg-type]
                record.seq,
            )
        )
    table = np.array(rows, dtype=np.int64).reshape(-1, 9)
    return {
        "x": table[:, 0].copy(),
        "event_time": table[:, 1].copy(),
        "timestamp": table[:, 2].copy(),
        "watermark": table[:, 3].copy(),
        "verdict": table[:, 4].copy(),
        "timeline": table[:, 5].copy(),
        "seq": table[:, 8].copy(),
        "order": np.lexsort((table[:, 8], table[:, 7], table[:, 6])),
        "timelines": list(keys),
        "malformed": malformed,
        "substreams": substreams,
    }
