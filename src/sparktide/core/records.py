"""Input records as the engines see them, and the output record shapes of semantics §10."""

from __future__ import annotations

import datetime as _dt
from dataclasses import KW_ONLY, dataclass
from typing import Any

from sparktide.core.instants import is_finite
from sparktide.time import format_instant

__all__ = ["InputRecord", "jsonable", "time_or_none", "value_at", "value_key"]


@dataclass(slots=True, eq=False, repr=False)
class InputRecord:
    """One input record: parsed times plus the original fields.

    A malformed record has ``error`` set and carries its raw text in ``raw``; its
    times may be ``None``.

    Attributes
    ----------
    seq
        0-based position in the input (files in name order, then lines).
    partition
        Partition id (``0`` when the source has no partition column).
    key
        Substream key value, or ``None`` without substreams.
    event_time, arrival_time, processing_time
        Integer microseconds (``processing_time`` is ``arrival_time`` unless given).
    fields
        The record as read (column name → value).
    file, line
        The input file's name and the record's 1-based line (or row) in it.
    end_time
        Interval events: the (exclusive) end time; ``None`` for point events.
    cti
        True when the row is an explicit CTI at ``event_time`` (not an event).
    edge
        Edge events (``source.edge``): ``"start"`` or ``"end"``; ``None`` otherwise.
    edge_id
        Edge events: the id pairing a start edge with its end edge.
    """

    seq: int
    fields: dict[str, Any] | None
    _: KW_ONLY
    partition: Any = 0
    key: Any = None
    event_time: int | None = None
    arrival_time: int | None = None
    processing_time: int | None = None
    raw: str | None = None
    error: str | None = None
    file: str | None = None
    line: int | None = None
    end_time: int | None = None
    cti: bool = False
    edge: str | None = None
    edge_id: Any = None

    def __post_init__(self) -> None:
        if self.processing_time is None:
            self.processing_time = self.arrival_time

    @property
    def malformed(self) -> bool:
        """True when the record could not be parsed into an event."""
        return self.error is not None

    def original(self) -> Any:
        """The original record for a dead letter: its fields, else its raw text."""
        return jsonable(self.fields) if self.fields is not None else self.raw

    def __repr__(self) -> str:
        return (
            f"InputRecord(seq={self.seq}, partition={self.partition!r}, key={self.key!r}, "
            f"event_time={format_instant(self.event_time)}, "
            f"arrival_time={format_instant(self.arrival_time)}, error={self.error!r})"
        )


def time_or_none(instant: int | None) -> str | None:
    """ISO text for a finite instant; ``None`` for infinity or no value."""
    if instant is None or not is_finite(instant):
        return None
    return format_instant(instant)


def value_key(value: Any) -> Any:
    """A hashable key under which two field values are the same value: equal numbers
    whatever their JSON form (``3`` and ``3.0``), ``true`` never ``1``, lists and objects
    by their text (``count_distinct``, join keys)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (list, dict)):
        return ("json", repr(value))
    return value


def jsonable(value: Any) -> Any:
    """Make a field value JSON-serialisable (datetimes as ISO text, bytes as text)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return value.isoformat()
        return format_instant((value - _EPOCH) // _ONE_US)
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_ONE_US = _dt.timedelta(microseconds=1)


def value_at(fields: dict[str, Any], column: str) -> Any:
    """The value of ``column`` in ``fields``; a name with dots (``IoTHub.DeviceId``)
    reads inside records, ``None`` where a part is missing or no record."""
    if "." not in column:
        return fields.get(column)
    value: Any = fields
    for part in column.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value
