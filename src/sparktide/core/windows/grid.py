"""Tumbling and hopping windows (and snapshot windows, one instant long): a fixed grid."""

from __future__ import annotations

import heapq
from typing import Any

from sparktide.core.aggregates import Accumulator, OrderKey
from sparktide.core.windows.groups import GAP, Closed, WindowGroup
from sparktide.core.windows.spec import WindowSpec

__all__ = ["GridGroup"]


class GridGroup(WindowGroup):
    """Tumbling and hopping windows (and snapshot windows, whose size is one instant)."""

    __slots__ = ("_starts", "_windows")

    def __init__(self, spec: WindowSpec) -> None:
        super().__init__(spec)
        self._windows: dict[int, Accumulator] = {}
        self._starts: list[int] = []  # heap of open window starts

    def insert(
        self, ts: int, order: OrderKey, fields: dict[str, Any], watermark: int, end: int | None
    ) -> Any:
        """Add an event to its open windows (see :meth:`WindowGroup.insert`)."""
        spec = self.spec
        starts = spec.starts_of(ts, end)
        if not starts:
            return GAP
        joined = []
        for start in starts:
            end = spec.end_of(start)
            if spec.due(end) <= watermark:
                continue
            accumulator = self._windows.get(start)
            if accumulator is None:
                accumulator = self._windows[start] = Accumulator(spec.aggregates)
                heapq.heappush(self._starts, start)
            accumulator.add(fields, order)
            joined.append((start, end))
        if not joined:
            start = starts[-1]
            return ("closed", start, spec.end_of(start))
        return joined

    def add_edge(
        self, starts: range, order: OrderKey, fields: dict[str, Any]
    ) -> list[tuple[int, int]]:
        """Add an edge event to the windows starting at ``starts`` (open or created)."""
        spec = self.spec
        joined = []
        for start in starts:
            accumulator = self._windows.get(start)
            if accumulator is None:
                accumulator = self._windows[start] = Accumulator(spec.aggregates)
                heapq.heappush(self._starts, start)
            accumulator.add(fields, order)
            joined.append((start, spec.end_of(start)))
        return joined

    def close(self, watermark: int) -> list[Closed]:
        """Close the windows ``watermark`` allows: ``(start, end, aggregates)`` each."""
        spec = self.spec
        out = []
        while self._starts and spec.due(spec.end_of(self._starts[0])) <= watermark:
            start = heapq.heappop(self._starts)
            out.append((start, spec.end_of(start), self._windows.pop(start).results()))
        return out

    def next_due(self) -> int | None:
        """The watermark at which the oldest open window closes, or ``None``."""
        if not self._starts:
            return None
        return self.spec.due(self.spec.end_of(self._starts[0]))

    def open_windows(self) -> int:
        """How many windows are open."""
        return len(self._windows)
