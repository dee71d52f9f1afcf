"""The window sink of the reference engine (semantics §6): windows per scope and group, closed
as watermarks pass their due instants, written in a deterministic order.

Each (scope, group) has one window group of the job's kind (grid, sliding or
session: :mod:`sparktide.core.windows`); a lazy heap per scope (and one over every
scope for substreams' shared floor) says which group closes next. The windows closed
by one watermark move are written sorted by (end, start, scope, group).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from sparktide.core.instants import NEG_INF
from sparktide.core.records import jsonable, time_or_none
from sparktide.core.sink import Admitted
from sparktide.core.windows.edges import EdgeEvents, OpenEdge
from sparktide.core.windows.grid import GridGroup
from sparktide.core.windows.groups import (
    GAP,
    WindowGroup,
    group_key,
    order_of,
    written_group_value,
)
from sparktide.core.windows.session import SessionGroup
from sparktide.core.windows.sliding import SlidingGroup
from sparktide.core.windows.spec import WindowSpec
from sparktide.core.windows.timers import IdleTimers
from sparktide.job import Job

__all__ = ["WindowOperator"]

#: The group class of each kind of window.
GROUPS: dict[str, type[WindowGroup]] = {
    "tumbling": GridGroup,
    "hopping": GridGroup,
    "snapshot": GridGroup,
    "sliding": SlidingGroup,
    "session": SessionGroup,
}


class WindowOperator(EdgeEvents, IdleTimers):
    """The window sink of the reference engine.

    Parameters
    ----------
    job
        The job (its ``[window]`` table must be set).
    emit
        Called with each ``window`` record.
    shared_floor
        True for substreams (see :class:`~sparktide.core.release.OrderedRelease`).
    """

    def __init__(
        self,
        job: Job,
        emit: Callable[[dict[str, Any]], None],
        *,
        shared_floor: bool,
        force: Callable[[Any, int], None] | None = None,
    ) -> None:
        window = job.window
        assert window is not None
        self.spec = WindowSpec(window)
        self._emit = emit
        self._force = force
        self._groups: dict[tuple[Any, tuple[Any, ...]], WindowGroup] = {}
        self._heaps: dict[Any, list[tuple[int, int, tuple[Any, ...]]]] = {}
        self._all: list[tuple[int, int, Any, tuple[Any, ...]]] | None = [] if shared_floor else None
        self._watermarks: dict[Any, int] = {}
        self._floor = NEG_INF
        self._counter = itertools.count()
        self._last_delivery: dict[Any, int] = {}
        self._timers: list[tuple[int, int, Any]] = []
        self.in_no_window = 0
        self.held = 0
        self._edges: dict[Any, OpenEdge] = {}  # open edge events by (timeline, edge id)
        self._scope_edges: dict[Any, dict[Any, OpenEdge]] = {}  # the same, by scope
        self._make = GROUPS[self.spec.kind]

    def delivered(self, scope: Any, now: int) -> None:
        """The source of ``scope`` delivered an event at processing time ``now``."""
        if self.spec.idle_timeout is not None:
            self._last_delivery[scope] = now
            self._schedule_timer(scope)

    def admit(self, event: Admitted, watermark: int, now: int) -> tuple[int, int] | None:
        """Add ``event`` to its windows; return window bounds when all are closed."""
        scope = event.scope
        self._note_watermark(scope, watermark)
        fields = self.spec.fields_of(event)
        key = group_key(fields, self.spec.group_keys)
        group = self._group(scope, key)
        outcome = group.insert(
            event.timestamp, order_of(event), fields, watermark, event.record.end_time
        )
        if outcome == GAP:
            self.in_no_window += 1
            event.windows = []
            return None
        if isinstance(outcome, tuple):
            return outcome[1], outcome[2]
        event.windows = outcome
        self._schedule(scope, key, group)
        return None

    def advance(self, scope: Any, watermark: int, now: int) -> None:
        """The watermark of ``scope`` reached ``watermark``: close what it allows."""
        self._note_watermark(scope, watermark)
        if self._edges:
            self._close_edges(scope, max(watermark, self._floor))
        heap = self._heaps.get(scope)
        closed: list[tuple[Any, ...]] = []
        while heap and heap[0][0] <= watermark:
            _, _, key = heapq.heappop(heap)
            self._close_group(scope, key, watermark, closed)
        self._emit_sorted(closed, now)

    def advance_floor(self, floor: int, now: int) -> None:
        """Every scope's watermark reached ``floor`` (substreams)."""
        self._floor = max(self._floor, floor)
        if self._edges:
            self._close_edges(None, None)
        heap = self._all
        closed: list[tuple[Any, ...]] = []
        while heap and heap[0][0] <= floor:
            _, _, scope, key = heapq.heappop(heap)
            watermark = max(self._watermarks.get(scope, NEG_INF), floor)
            self._close_group(scope, key, watermark, closed)
        self._emit_sorted(closed, now)

    def flush(self, now: int) -> None:
        """Close every open window (end of a finite input).

        An edge event still open ends at its scope's last watermark: it surely lasted
        until then, and nothing says for how long after."""
        self._flush_edges()
        closed: list[tuple[Any, ...]] = []
        for (scope, key), group in list(self._groups.items()):
            for start, end, values in group.close(_INFINITY):
                closed.append((end, start, _sort_key(scope), _sort_key(key), key, values))
        self._heaps.clear()
        if self._all is not None:
            self._all.clear()
        self._timers.clear()
        self._emit_sorted(closed, now)

    def open_windows(self) -> int:
        """How many windows are open now."""
        return sum(group.open_windows() for group in self._groups.values())

    def _group(self, scope: Any, key: tuple[Any, ...]) -> WindowGroup:
        """The window group of ``(scope, key)``, made when it has none yet."""
        group = self._groups.get((scope, key))
        if group is None:
            group = self._groups[(scope, key)] = self._make(self.spec)
        return group

    def _note_watermark(self, scope: Any, watermark: int) -> None:
        """Keep the highest watermark ``scope`` has had."""
        if watermark > self._watermarks.get(scope, NEG_INF):
            self._watermarks[scope] = watermark

    def _schedule(self, scope: Any, key: tuple[Any, ...], group: WindowGroup) -> None:
        due = group.next_due()
        if due is None:
            return
        heapq.heappush(self._heaps.setdefault(scope, []), (due, next(self._counter), key))
        if self._all is not None:
            heapq.heappush(self._all, (due, next(self._counter), scope, key))
        if self.spec.idle_timeout is not None:
            self._schedule_timer(scope)

    def _close_group(
        self, scope: Any, key: tuple[Any, ...], watermark: int, closed: list[tuple[Any, ...]]
    ) -> None:
        group = self._groups.get((scope, key))
        if group is None:
            return
        due = group.next_due()
        if due is None or due > watermark:
            return
        for start, end, values in group.close(watermark):
            closed.append((end, start, _sort_key(scope), _sort_key(key), key, values))
        if group.next_due() is None:
            if not isinstance(group, SessionGroup):
                del self._groups[(scope, key)]
        else:
            self._schedule(scope, key, group)

    def _emit_sorted(self, closed: list[tuple[Any, ...]], now: int) -> None:
        closed.sort(key=lambda c: c[:4])
        own = self.spec.window.own_fields  # (a user's column keeps its name, semantics §10.3)
        for end, start, _, _, key, values in closed:
            record: dict[str, Any] = {"type": "window"}
            for column, value in zip(self.spec.group_by, key, strict=True):
                record[column] = jsonable(written_group_value(value))
            record[own["window_start"]] = time_or_none(start)
            record[own["window_end"]] = time_or_none(end)
            for name, value in values.items():
                record[name] = jsonable(value)
            record[own["emitted_at"]] = time_or_none(now)
            self._emit(record)


#: Closes every window at a flush.
_INFINITY = 1 << 62


def _sort_key(value: Any) -> tuple[Any, ...]:
    if isinstance(value, tuple):
        return tuple(_sort_key(v) for v in value)
    value = written_group_value(value)
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, repr(value))
