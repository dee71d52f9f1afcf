"""What a reference run produces about its inputs (semantics §10): the :class:`Result`, and the
``decision`` and ``dead_letter`` records of each input record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparktide.core.event_step import Case
from sparktide.core.policy import DEAD_LETTERED
from sparktide.core.records import InputRecord, jsonable, time_or_none
from sparktide.job import Job

__all__ = [
    "PUNCTUATION",
    "Result",
    "dead_letter",
    "decision",
    "event_decision",
    "malformed_decision",
]

#: The verdict of an explicit CTI row in ``decision`` records: not an event.
PUNCTUATION = "punctuation"


@dataclass
class Result:
    """Everything a reference run produced, as semantics §10 records (plain dicts).

    Attributes
    ----------
    decisions
        One ``decision`` record per input record, in input order.
    events
        Released ``event`` records, in release order.
    windows
        ``window`` records, in emission order.
    dead_letters
        ``dead_letter`` records, in the order they happened.
    metrics
        The final ``metrics`` record.
    """

    decisions: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    windows: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)

    def records(self, *, explain: bool = False) -> list[dict[str, Any]]:
        """All records in output order: decisions (if ``explain``), events, windows,
        dead letters, metrics."""
        out: list[dict[str, Any]] = list(self.decisions) if explain else []
        return out + self.events + self.windows + self.dead_letters + [self.metrics]


def decision(record: InputRecord, watermark: int) -> dict[str, Any]:
    """The ``decision`` record of ``record``, judged against ``watermark``, before its
    verdict is known."""
    return {
        "type": "decision",
        "seq": record.seq,
        "file": record.file,
        "line": record.line,
        "partition": record.partition,
        "key": jsonable(record.key),
        "event_time": time_or_none(record.event_time),
        "arrival_time": time_or_none(record.arrival_time),
        "processing_time": time_or_none(record.processing_time),
        "timestamp": None,
        "verdict": None,
        "reasons": [],
        "watermark": time_or_none(watermark),
    }


def event_decision(job: Job, record: InputRecord, case: Case) -> dict[str, Any]:
    """The ``decision`` record of the event ``record``, with what happened to it."""
    out = decision(record, case.watermark)
    if job.punctuation is not None:
        out["cti"] = time_or_none(case.cti)
    if job.source.intervals:
        out["end_time"] = time_or_none(record.end_time)
    if job.edges:
        out["edge"] = record.edge
        out["edge_id"] = record.edge_id
    out["timestamp"] = time_or_none(case.timestamp)
    out["verdict"] = case.verdict
    out["reasons"] = list(case.reasons)
    admitted = case.admitted
    if admitted is not None and admitted.windows is not None and case.bounds is None:
        out["windows"] = [
            [time_or_none(start), time_or_none(end)] for start, end in admitted.windows
        ]
    return out


def malformed_decision(record: InputRecord) -> dict[str, Any]:
    """The ``decision`` record of a malformed record: dead-lettered, no times."""
    return {
        "type": "decision",
        "seq": record.seq,
        "file": record.file,
        "line": record.line,
        "partition": None,
        "key": None,
        "event_time": None,
        "arrival_time": None,
        "processing_time": None,
        "timestamp": None,
        "verdict": DEAD_LETTERED,
        "reasons": ["malformed"],
        "watermark": None,
    }


def dead_letter(
    job: Job,
    record: InputRecord,
    reason: str | None,
    error: str | None,
    bounds: tuple[int, int] | None,
) -> dict[str, Any]:
    """The ``dead_letter`` record of ``record``; a windowed job's carry the bounds of the
    window the event came too late for (``null`` for other reasons)."""
    letter = {
        "type": "dead_letter",
        "seq": record.seq,
        "file": record.file,
        "line": record.line,
        "reason": reason,
        "record": record.original(),
        "error": error,
    }
    if job.window is not None:  # windowed jobs always carry the window bounds
        letter["window_start"] = time_or_none(bounds[0]) if bounds else None
        letter["window_end"] = time_or_none(bounds[1]) if bounds else None
    return letter
