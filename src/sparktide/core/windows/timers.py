"""Idle timeouts of windows (``[window] idle_timeout``): timers in processing time.

When a scope has open windows and its source delivers nothing for ``idle_timeout``
(counted from the later of the oldest open window's end and the last delivery), the
timer forces the scope's watermark to that window's due instant, closing it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from sparktide.core.instants import NEG_INF
from sparktide.core.windows.groups import WindowGroup
from sparktide.core.windows.spec import WindowSpec

__all__ = ["IdleTimers"]


class IdleTimers:
    """The idle-timeout part of the window sink (:class:`~sparktide.core.windows.sink.
    WindowOperator`): a lazy heap of timers, one live timer per scope."""

    spec: WindowSpec
    _groups: dict[tuple[Any, tuple[Any, ...]], WindowGroup]
    _heaps: dict[Any, list[tuple[int, int, tuple[Any, ...]]]]
    _counter: itertools.count[int]
    _last_delivery: dict[Any, int]
    _timers: list[tuple[int, int, Any]]
    _force: Callable[[Any, int], None] | None

    def _oldest(self, scope: Any) -> int | None:
        """Due of the oldest open window of ``scope`` (validating the lazy heap)."""
        heap = self._heaps.get(scope)
        while heap:
            due, _, key = heap[0]
            group = self._groups.get((scope, key))
            if group is not None and group.next_due() == due:
                return due
            heapq.heappop(heap)
            if group is not None:
                current = group.next_due()
                if current is not None:
                    heapq.heappush(heap, (current, next(self._counter), key))
        return None

    def _timer_due(self, scope: Any) -> tuple[int, int] | None:
        due = self._oldest(scope)
        if due is None:
            return None
        spec = self.spec
        end = due - spec.lateness - (1 if spec.closed_end else 0)
        last = self._last_delivery.get(scope, NEG_INF)
        return max(end, last) + spec.idle_timeout, due  # type: ignore[operator]

    def _schedule_timer(self, scope: Any) -> None:
        timer = self._timer_due(scope)
        if timer is not None:
            heapq.heappush(self._timers, (timer[0], next(self._counter), scope))

    def next_timer(self) -> int | None:
        """When the next idle-timeout timer is due, if any."""
        while self._timers:
            due, _, scope = self._timers[0]
            timer = self._timer_due(scope)
            if timer is not None and timer[0] == due:
                return due
            heapq.heappop(self._timers)
            if timer is not None:
                heapq.heappush(self._timers, (timer[0], next(self._counter), scope))
        return None

    def fire_timers(self, now: int) -> None:
        """Fire the idle-timeout timers due at or before ``now``."""
        due = self.next_timer()
        while due is not None and due <= now:
            _, _, scope = heapq.heappop(self._timers)
            timer = self._timer_due(scope)
            if timer is not None and self._force is not None:
                self._force(scope, timer[1])
            self._schedule_timer(scope)
            due = self.next_timer()
