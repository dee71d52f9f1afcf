"""A window over the matches of a temporal join (semantics §7.11; Stream Analytics'
``GROUP BY ..., TumblingWindow(...)`` over ``a JOIN b ON ... AND DATEDIFF(...)``).

The join keeps and matches events as :class:`~sparktide.core.join.TemporalJoin` does,
and each match it releases, instead of being written, becomes one event of the window:
at the match's timestamp, governed by the job watermark, its record the two events'
fields under their inputs' names and as ``<input>.<field>`` (:func:`match_record`). The
join releases a match once the job watermark reaches its timestamp, and a window closes
once the watermark passes its end: each step of the watermark releases the matches
first, then closes the windows, so a match always finds its windows open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparktide.core.instants import NEG_INF
from sparktide.core.join import TemporalJoin
from sparktide.core.records import InputRecord, jsonable
from sparktide.core.sink import Admitted
from sparktide.core.windows import WindowOperator
from sparktide.job import Job

__all__ = ["JoinedWindows", "match_place", "match_record"]


def match_record(
    left: str,
    right: str,
    left_fields: dict[str, Any],
    right_fields: dict[str, Any] | None,
    rows: dict[str, dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """The record a window reads of a match: each input's record under its name (``null``
    for a left join's unmatched right side), and each of its fields as
    ``<input>.<field>``, which ``a.k`` in an expression reads; so too each table's row
    the match met (``rows``, semantics §11.26)."""
    records = {left: left_fields, right: right_fields, **(rows or {})}
    record: dict[str, Any] = {name: jsonable(fields) for name, fields in records.items()}
    for name, fields in records.items():
        for field, value in (fields or {}).items():
            record[f"{name}.{field}"] = jsonable(value)
    return record


def match_place(left: Admitted, right: Admitted | None) -> tuple[InputRecord, Any]:
    """Where a match comes among a window's events at its timestamp, as the window
    orders events (arrival time, place in the input, then ``part``): the left event's
    arrival and place, then the right event's (``()`` when there is none, first)."""
    if right is None:
        return left.record, ()
    other = right.record
    return left.record, (other.arrival_time or 0, other.file or "", other.line or 0, other.seq)


class JoinedWindows(TemporalJoin):
    """The sink of a job with a ``[join]`` of two streams and a ``[window]``.

    Parameters
    ----------
    job
        The job (its ``join`` and ``window``).
    emit
        Called with each ``window`` record, as :class:`WindowOperator` emits them.
    """

    def __init__(self, job: Job, emit: Callable[[dict[str, Any]], None]) -> None:
        super().__init__(job, lambda record, now: None)
        self.windows = WindowOperator(job, emit, shared_floor=False)
        #: The watermark the windows last closed by: the matches a step releases join
        #: their windows before the step closes any.
        self._closed_by = NEG_INF

    def admit(self, event: Admitted, watermark: int, now: int) -> None:
        """Match and keep ``event``; release the matches the watermark allows into the
        windows (never too late for them), and close the windows it allows."""
        super().admit(event, watermark, now)
        self._close(watermark, now)

    def advance(self, scope: Any, watermark: int, now: int) -> None:
        """Release the matches ``watermark`` allows into the windows, then close the
        windows it allows."""
        super().advance(scope, watermark, now)
        self._close(watermark, now)

    def _close(self, watermark: int, now: int) -> None:
        self._closed_by = max(self._closed_by, watermark)
        self.windows.advance(None, self._closed_by, now)

    def flush(self, now: int) -> None:
        """End of input: every held match into the windows, then every window closed."""
        super().flush(now)
        self.windows.flush(now)

    def open_windows(self) -> int:
        """The windows open now."""
        return self.windows.open_windows()

    def _write(
        self,
        timestamp: int,
        left: Admitted,
        right: Admitted | None,
        now: int,
        rows: dict[str, dict[str, Any] | None] | None = None,
        place: int = 0,
    ) -> None:
        """The match of ``left`` and ``right`` at ``timestamp`` (with the table ``rows``
        it met, the combination's ``place``, semantics §11.26) joins its windows."""
        join = self._join
        fields = left.record.fields or {}
        other = None if right is None else (right.record.fields or {})
        at, part = match_place(left, right)
        part = (part, place) if rows is not None else part
        record = InputRecord(
            at.seq,
            match_record(join.left, join.right, fields, other, rows),
            partition=None,
            arrival_time=at.arrival_time,
            file=at.file,
            line=at.line,
        )
        self.windows.admit(Admitted(record, timestamp, None, part), self._closed_by, now)
