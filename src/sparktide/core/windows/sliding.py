"""Sliding windows: a result wherever an event enters or leaves the window (semantics §6)."""

from __future__ import annotations

import bisect
from typing import Any

from sparktide.core.aggregates import OrderKey, accumulate
from sparktide.core.windows.groups import Closed, Row, WindowGroup
from sparktide.core.windows.spec import WindowSpec

__all__ = ["SlidingGroup", "sliding_windows"]


def sliding_windows(spec: WindowSpec, points: list[int], ts: int, watermark: int) -> list[int]:
    """The ends of the open sliding windows an event at ``ts`` belongs to (semantics
    §6.2), given the sorted change points (window ends) of its group so far: the window
    it enters (ending at ``ts``) and every point in ``[ts, ts + size)``, each while the
    watermark has not closed it."""
    lo = bisect.bisect_left(points, ts)
    hi = bisect.bisect_left(points, ts + spec.size)
    containing = [p for p in points[lo:hi] if spec.due(p) > watermark]
    if spec.due(ts) > watermark:
        containing = sorted({ts, *containing})
    return containing


class SlidingGroup(WindowGroup):
    """Stream Analytics sliding windows: a result at every instant an event enters
    (window ``(ts − size, ts]``) or leaves (window ``(ts, ts + size]``), when non-empty."""

    __slots__ = ("_points", "_rows")

    def __init__(self, spec: WindowSpec) -> None:
        super().__init__(spec)
        self._rows: list[Row] = []  # sorted by (ts, order)
        self._points: list[int] = []  # sorted change points (window ends), unique

    def _add_point(self, point: int) -> None:
        i = bisect.bisect_left(self._points, point)
        if i == len(self._points) or self._points[i] != point:
            self._points.insert(i, point)

    def insert(
        self, ts: int, order: OrderKey, fields: dict[str, Any], watermark: int, end: int | None
    ) -> Any:
        """Add an event to its open windows (see :meth:`WindowGroup.insert`)."""
        spec = self.spec
        size = spec.size
        containing = sliding_windows(spec, self._points, ts, watermark)
        if not containing:
            return ("closed", ts - size, ts)
        bisect.insort(self._rows, (ts, order, fields), key=lambda r: (r[0], r[1]))
        for point in containing:
            self._add_point(point)
        if spec.due(ts + size) > watermark:
            self._add_point(ts + size)
        return [(p - size, p) for p in containing]

    def close(self, watermark: int) -> list[Closed]:
        """Close the windows ``watermark`` allows: ``(start, end, aggregates)`` each."""
        spec = self.spec
        size = spec.size
        out = []
        while self._points and spec.due(self._points[0]) <= watermark:
            end = self._points.pop(0)
            lo = bisect.bisect_right(self._rows, end - size, key=lambda r: r[0])
            hi = bisect.bisect_right(self._rows, end, key=lambda r: r[0])
            rows = self._rows[lo:hi]
            if rows:
                out.append(
                    (end - size, end, accumulate(spec.aggregates, [(r[1], r[2]) for r in rows]))
                )
        # Every window still to come ends at p ≥ W − allowed_lateness (its due is above W),
        # so rows at or before W − allowed_lateness − size are in none of them. (Pending
        # points are no bound: a later event within the out-of-order tolerance may add a
        # point below them.)
        horizon = watermark - spec.lateness - size
        cut = bisect.bisect_right(self._rows, horizon, key=lambda r: r[0])
        if cut:
            del self._rows[:cut]
        return out

    def next_due(self) -> int | None:
        """The watermark at which the oldest open window closes, or ``None``."""
        return self.spec.due(self._points[0]) if self._points else None

    def open_windows(self) -> int:
        """How many windows are open."""
        return len(self._points)
