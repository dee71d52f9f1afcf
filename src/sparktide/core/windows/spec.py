"""The window of a job in integer microseconds, and its arithmetic (semantics §6).

A window with end ``e`` closes when the scope's watermark ``W`` satisfies
``W − allowed_lateness ≥ e`` for ``[start, end)`` windows and ``> e`` for
``(start, end]`` windows; on integer microseconds both are ``W ≥ due`` with
``due = e + allowed_lateness`` (plus one microsecond for ``(start, end]``).

Window arithmetic uses floor modulo (Python's ``%``), so it is correct before 1970:
``start = x − (x − offset) mod period``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparktide.core.outputs import event_input_fields, with_time
from sparktide.expr import EVENT_INPUT, SYSTEM_TIMESTAMP, ref_nodes
from sparktide.job import Window

if TYPE_CHECKING:
    from sparktide.core.sink import Admitted

__all__ = [
    "WindowSpec",
    "assign_windows",
    "edge_starts",
    "grid_starts",
    "window_due",
]


def grid_starts(
    instant: int, size: int, period: int, offset: int, first: int | None = None
) -> list[int]:
    """Starts of the grid windows ``[start, start + size)`` that contain ``instant`` —
    or, given ``first ≤ instant``, some instant of ``[first, instant]``.

    Windows start at ``offset + k * period``; with ``period > size`` some instants are in
    no window (an empty list).
    """
    low = instant if first is None else first
    last = instant - (instant - offset) % period
    starts = []
    start = last
    while start + size > low:
        starts.append(start)
        start -= period
    starts.reverse()
    return starts


def window_due(end: int, lateness: int, closed_end: bool) -> int:
    """The watermark at which a window ending at ``end`` closes (semantics §6.7): its end
    plus the allowed lateness, plus one microsecond when the window holds its end."""
    return end + lateness + (1 if closed_end else 0)


def assign_windows(spec: WindowSpec, ts: int, end: int | None = None) -> list[int]:
    """Starts of the grid (or snapshot) windows an event at ``ts`` belongs to (semantics
    §6.1, §6.4); an interval event ``[ts, end)`` belongs to every window sharing an
    instant with it."""
    if spec.kind == "snapshot":
        return [ts]
    shift = 1 if spec.closed_end else 0  # (start, end] holds the instants start+1 .. end
    if end is None:
        return grid_starts(ts - shift, spec.size, spec.period, spec.offset)
    return grid_starts(end - 1 - shift, spec.size, spec.period, spec.offset, ts - shift)


def edge_starts(
    spec: WindowSpec, start: int, covered: int, *, until: int | None = None, end: int | None = None
) -> range:
    """Starts of the grid windows an edge event from ``start`` is added to now (semantics
    §7.6): those sharing an instant with ``[start, +inf)`` whose due is above ``covered``
    and — for an open edge — at most ``until`` (the windows closing now), or — for an
    edge that ends at ``end`` — that share an instant with ``[start, end)``."""
    shift = 1 if spec.closed_end else 0
    size, period, offset = spec.size, spec.period, spec.offset
    # due(end) > covered and the window's last instant (end - 1 + shift) >= start
    lower = max(start, covered - spec.lateness) - shift
    low = lower - size + 1  # the first start whose window ends after ``lower``
    first = low + (offset - low) % period
    if until is not None:  # due(window end) <= until
        high = until - spec.lateness - shift - size
    else:  # the window's first instant (start + shift) is before ``end``
        assert end is not None
        high = end - 1 - shift
    last = high - (high - offset) % period
    return range(first, last + 1, period)


class WindowSpec:
    """The job's ``[window]`` table as the window groups read it: its lengths in integer
    microseconds, and where windows start, end and close.

    Parameters
    ----------
    window
        The job's ``[window]`` table.
    """

    def __init__(self, window: Window) -> None:
        self.window = window
        self.kind = window.type
        self.size: int = window.size or 0  # type: ignore[assignment]
        self.period: int = window.hop or window.size or 0  # type: ignore[assignment]
        self.gap: int = window.gap or 0  # type: ignore[assignment]
        self.max_duration: int = window.max_duration or 0  # type: ignore[assignment]
        self.offset: int = window.offset  # type: ignore[assignment]
        self.lateness: int = window.allowed_lateness  # type: ignore[assignment]
        self.idle_timeout: int | None = window.idle_timeout  # type: ignore[assignment]
        self.closed_end = window.boundary == "end" or self.kind in ("sliding", "snapshot")
        self.aggregates = window.aggregates
        self.group_by = window.group_by
        self.group_keys = window.group_keys  # (parsed once: computed per event)
        #: Whether they read ``System.Input()``, the event's union input (§11.22)
        self.reads_input = any(EVENT_INPUT in ref_nodes(e) for _, e in window.keyed_expressions())
        #: Whether its aggregates read ``System.Timestamp()``, the event's own (§6.12)
        self.reads_time = any(
            SYSTEM_TIMESTAMP in ref_nodes(a.parsed) for a in window.aggregates if a.parsed
        )

    def fields_of(self, event: Admitted) -> dict[str, Any]:
        """The fields the window reads of ``event``: its record's, the name of its input
        as ``System.Input()`` (semantics §11.22) and its system timestamp as
        ``System.Timestamp()`` (§6.12) where an expression reads them."""
        fields = event.record.fields or {}
        if self.reads_time:
            fields = with_time(fields, event.timestamp)
        return event_input_fields(fields, event.record.partition) if self.reads_input else fields

    def due(self, end: int) -> int:
        """The watermark at which a window ending at ``end`` closes (:func:`window_due`)."""
        return window_due(end, self.lateness, self.closed_end)

    def starts_of(self, ts: int, end: int | None = None) -> list[int]:
        """Starts of the windows an event at ``ts`` (to ``end``) belongs to
        (:func:`assign_windows`)."""
        return assign_windows(self, ts, end)

    def edge_starts(
        self, start: int, covered: int, *, until: int | None = None, end: int | None = None
    ) -> range:
        """Starts of the grid windows an edge event from ``start`` is added to now
        (:func:`edge_starts`)."""
        return edge_starts(self, start, covered, until=until, end=end)

    def end_of(self, start: int) -> int:
        """End of the grid window starting at ``start`` (snapshots: the same instant)."""
        return start if self.kind == "snapshot" else start + self.size

    def joins(self, last: int, ts: int) -> bool:
        """Whether an event at ``ts`` continues a session whose last event is at ``last``."""
        return ts - last < self.gap if not self.closed_end else ts - last <= self.gap

    def crosses(self, cut: int, ts: int) -> bool:
        """Whether an event at ``ts`` lies after the session cut at ``cut``."""
        return ts >= cut if not self.closed_end else ts > cut

    def after_end(self, ts: int, end: int) -> bool:
        """Whether ``ts`` lies after a window ending at ``end``."""
        return self.crosses(end, ts)

    def cut_after(self, start: int) -> int:
        """The first ``max_duration`` boundary at which a session from ``start`` has lasted
        longer than ``max_duration``."""
        m = self.max_duration
        threshold = start + m
        # smallest offset + k*m strictly greater than threshold
        return threshold - (threshold - self.offset) % m + m

    def session_end(self, start: int, last: int) -> int:
        """End of a session from ``start`` whose last event is ``last``."""
        natural = last + self.gap
        if self.max_duration:
            cut = self.cut_after(start)
            if cut < natural:
                return cut
        return natural
