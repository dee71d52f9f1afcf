"""Windows in the reference engine (SPEC §6): tumbling, hopping, sliding, session, snapshot.

Every window belongs to a *scope* (the job, a partition, or a substream) and a group
(the ``group_by`` values). A window with end ``e`` closes when the scope's watermark
``W`` satisfies ``W − allowed_lateness ≥ e`` for ``[start, end)`` windows and ``> e`` for
``(start, end]`` windows; on integer microseconds both are ``W ≥ due`` with
``due = e + allowed_lateness`` (plus one microsecond for ``(start, end]``).

Window arithmetic uses floor modulo (Python's ``%``), so it is correct before 1970:
``start = x − (x − offset) mod period``.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable
from typing import Any

from sparktide.core.aggregates import Accumulator, OrderKey, accumulate
from sparktide.core.instants import NEG_INF, is_finite
from sparktide.core.records import jsonable, time_or_none
from sparktide.core.sink import Admitted
from sparktide.job import Job, Window

__all__ = ["GAP", "WindowOperator", "grid_starts"]

#: Returned by a group's ``insert`` when the event falls in a hopping gap.
GAP = "gap"

Row = tuple[int, OrderKey, dict[str, Any]]
Closed = tuple[int, int, dict[str, Any]]  # start, end, aggregates


def grid_starts(x: int, size: int, period: int, offset: int, first: int | None = None) -> list[int]:
    """Starts of the grid windows ``[start, start + size)`` that contain instant ``x`` —
    or, given ``first ≤ x``, some instant of ``[first, x]``.

    Windows start at ``offset + k * period``; with ``period > size`` some instants are in
    no window (an empty list).
    """
    low = x if first is None else first
    last = x - (x - offset) % period
    starts = []
    start = last
    while start + size > low:
        starts.append(start)
        start -= period
    starts.reverse()
    return starts


class _Group:
    """Open windows of one (scope, group) — base class."""

    __slots__ = ("op",)

    def __init__(self, op: WindowOperator) -> None:
        self.op = op

    def insert(
        self, ts: int, order: OrderKey, fields: dict[str, Any], watermark: int, end: int | None
    ) -> Any:
        """Add an event at ``ts`` (an interval event: ``[ts, end)``) to its open windows.

        Returns the ``(start, end)`` pairs it joined, :data:`GAP`, or
        ``("closed", start, end)`` naming the last window it would have joined."""
        raise NotImplementedError

    def close(self, watermark: int) -> list[Closed]:
        raise NotImplementedError

    def next_due(self) -> int | None:
        raise NotImplementedError

    def open_windows(self) -> int:
        raise NotImplementedError


class _GridGroup(_Group):
    """Tumbling and hopping windows (and snapshot windows, whose size is one instant)."""

    __slots__ = ("_starts", "_windows")

    def __init__(self, op: WindowOperator) -> None:
        super().__init__(op)
        self._windows: dict[int, Accumulator] = {}
        self._starts: list[int] = []  # heap of open window starts

    def insert(
        self, ts: int, order: OrderKey, fields: dict[str, Any], watermark: int, end: int | None
    ) -> Any:
        op = self.op
        starts = op.starts_of(ts, end)
        if not starts:
            return GAP
        joined = []
        for start in starts:
            end = op.end_of(start)
            if op.due(end) <= watermark:
                continue
            accumulator = self._windows.get(start)
            if accumulator is None:
                accumulator = self._windows[start] = Accumulator(op.aggregates)
                heapq.heappush(self._starts, start)
            accumulator.add(fields, order)
            joined.append((start, end))
        if not joined:
            start = starts[-1]
            return ("closed", start, op.end_of(start))
        return joined

    def add_edge(
        self, starts: range, order: OrderKey, fields: dict[str, Any]
    ) -> list[tuple[int, int]]:
        """Add an edge event to the windows starting at ``starts`` (open or created)."""
        op = self.op
        joined = []
        for start in starts:
            accumulator = self._windows.get(start)
            if accumulator is None:
                accumulator = self._windows[start] = Accumulator(op.aggregates)
                heapq.heappush(self._starts, start)
            accumulator.add(fields, order)
            joined.append((start, op.end_of(start)))
        return joined

    def close(self, watermark: int) -> list[Closed]:
        op = self.op
        out = []
        while self._starts and op.due(op.end_of(self._starts[0])) <= watermark:
            start = heapq.heappop(self._starts)
            out.append((start, op.end_of(start), self._windows.pop(start).results()))
        return out

    def next_due(self) -> int | None:
        if not self._starts:
            return None
        return self.op.due(self.op.end_of(self._starts[0]))

    def open_windows(self) -> int:
        return len(self._windows)


class _SlidingGroup(_Group):
    """Stream Analytics sliding windows: a result at every instant an event enters
    (window ``(ts − size, ts]``) or leaves (window ``(ts, ts + size]``), when non-empty."""

    __slots__ = ("_points", "_rows")

    def __init__(self, op: WindowOperator) -> None:
        super().__init__(op)
        self._rows: list[Row] = []  # sorted by (ts, order)
        self._points: list[int] = []  # sorted change points (window ends), unique

    def _add_point(self, point: int) -> None:
        i = bisect.bisect_left(self._points, point)
        if i == len(self._points) or self._points[i] != point:
            self._points.insert(i, point)

    def insert(
        self, ts: int, order: OrderKey, fields: dict[str, Any], watermark: int, end: int | None
    ) -> Any:
        op = self.op
        size = op.size
        entry_open = op.due(ts) > watermark
        lo = bisect.bisect_left(self._points, ts)
        hi = bisect.bisect_left(self._points, ts + size)
        containing = [p for p in self._points[lo:hi] if op.due(p) > watermark]
        if entry_open:
            containing = sorted({ts, *containing})
        if not containing:
            return ("closed", ts - size, ts)
        bisect.insort(self._rows, (ts, order, fields), key=lambda r: (r[0], r[1]))
        for point in containing:
            self._add_point(point)
        if op.due(ts + size) > watermark:
            self._add_point(ts + size)
        return [(p - size, p) for p in containing]

    def close(self, watermark: int) -> list[Closed]:
        op = self.op
        size = op.size
        out = []
        while self._points and op.due(self._points[0]) <= watermark:
            end = self._points.pop(0)
            lo = bisect.bisect_right(self._rows, end - size, key=lambda r: r[0])
            hi = bisect.bisect_right(self._rows, end, key=lambda r: r[0])
            rows = self._rows[lo:hi]
            if rows:
                out.append(
                    (end - size, end, accumulate(op.aggregates, [(r[1], r[2]) for r in rows]))
                )
        # Every window still to come ends at p ≥ W − allowed_lateness (its due is above W),
        # so rows at or before W − allowed_lateness − size are in none of them. (Pending
        # points are no bound: a later event within the out-of-order tolerance may add a
        # point below them.)
        horizon = watermark - op.lateness - size
        cut = bisect.bisect_right(self._rows, horizon, key=lambda r: r[0])
        if cut:
            del self._rows[:cut]
        return out

    def next_due(self) -> int | None:
        return self.op.due(self._points[0]) if self._points else None

    def open_windows(self) -> int:
        return len(self._points)


class _SessionGroup(_Group):
    """Stream Analytics session windows with optional ``max_duration`` cuts."""

    __slots__ = ("_carry", "_closed_until", "_last_closed", "_rows")

    def __init__(self, op: WindowOperator) -> None:
        super().__init__(op)
        self._rows: list[Row] = []
        self._carry: tuple[int, int] | None = None  # (cut instant, last event before it)
        self._closed_until = NEG_INF
        self._last_closed: tuple[int, int] | None = None

    def sessions(self) -> list[tuple[int, int, list[Row]]]:
        """Split the open rows into sessions: (start, end, rows); the last end is tentative."""
        op = self.op
        out: list[tuple[int, int, list[Row]]] = []
        start = last = 0
        members: list[Row] = []
        for row in self._rows:
            ts = row[0]
            if not members:
                start = ts
                if self._carry is not None:
                    cut, before = self._carry
                    if op.joins(before, ts) and op.crosses(cut, ts):
                        start = cut
                        while op.max_duration and op.crosses(op.cut_after(start), ts):
                            start = op.cut_after(start)
                members, last = [row], ts
                continue
            if op.joins(last, ts):
                cut = op.cut_after(start) if op.max_duration else None
                if cut is not None and op.crosses(cut, ts):
                    out.append((start, cut, members))
                    start = cut
                    while op.crosses(op.cut_after(start), ts):
                        start = op.cut_after(start)
                    members = [row]
                else:
                    members.append(row)
                last = ts
            else:
                out.append((start, op.session_end(start, last), members))
                start, last, members = ts, ts, [row]
        if members:
            out.append((start, op.session_end(start, last), members))
        return out

    def insert(
        self, ts: int, order: OrderKey, fields: dict[str, Any], watermark: int, end: int | None
    ) -> Any:
        op = self.op
        if self._last_closed is not None and not op.after_end(ts, self._closed_until):
            return ("closed", *self._last_closed)
        row = (ts, order, fields)
        bisect.insort(self._rows, row, key=lambda r: (r[0], r[1]))
        for start, end, members in self.sessions():
            if any(m is row for m in members):
                if op.due(end) <= watermark:
                    self._rows.remove(row)
                    return ("closed", start, end)
                return [(start, end)]
        raise AssertionError("inserted row not in any session")  # pragma: no cover

    def close(self, watermark: int) -> list[Closed]:
        op = self.op
        out: list[Closed] = []
        consumed = 0
        for start, end, members in self.sessions():
            if op.due(end) > watermark:
                break
            rows = [(r[1], r[2]) for r in members]
            out.append((start, end, accumulate(op.aggregates, rows)))
            consumed += len(members)
            last = members[-1][0]
            natural = last + op.gap
            self._carry = (end, last) if end < natural else None
            self._closed_until = end
            self._last_closed = (start, end)
        if consumed:
            del self._rows[:consumed]
        return out

    def next_due(self) -> int | None:
        if not self._rows:
            return None
        _, end, _ = self.sessions()[0]
        return self.op.due(end)

    def open_windows(self) -> int:
        return len(self.sessions()) if self._rows else 0


class _Edge:
    """An open edge event (SPEC §7): started, its end not known yet.

    It is in every window that shares an instant with ``[start, +inf)``, so it is added to
    each such window as the window closes (``covered`` is the watermark up to which that
    has been done: windows due at or below it have it, or were closed before it started).
    """

    __slots__ = ("covered", "fields", "group", "order", "scope", "start")

    def __init__(
        self,
        scope: Any,
        group: tuple[Any, ...],
        start: int,
        order: OrderKey,
        fields: dict[str, Any],
        covered: int,
    ) -> None:
        self.scope = scope
        self.group = group
        self.start = start
        self.order = order
        self.fields = fields
        self.covered = covered


class WindowOperator:
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
        self.window: Window = window
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
        self._emit = emit
        self._force = force
        self._groups: dict[tuple[Any, tuple[Any, ...]], _Group] = {}
        self._heaps: dict[Any, list[tuple[int, int, tuple[Any, ...]]]] = {}
        self._all: list[tuple[int, int, Any, tuple[Any, ...]]] | None = [] if shared_floor else None
        self._watermarks: dict[Any, int] = {}
        self._floor = NEG_INF
        self._counter = itertools.count()
        self._last_delivery: dict[Any, int] = {}
        self._timers: list[tuple[int, int, Any]] = []
        self.in_no_window = 0
        self.held = 0
        self._edges: dict[Any, _Edge] = {}  # open edge events by (timeline, edge id)
        self._scope_edges: dict[Any, dict[Any, _Edge]] = {}  # the same, by scope
        self._make = {
            "tumbling": _GridGroup,
            "hopping": _GridGroup,
            "snapshot": _GridGroup,
            "sliding": _SlidingGroup,
            "session": _SessionGroup,
        }[self.kind]

    # ---------------------------------------------------------------- arithmetic
    def due(self, end: int) -> int:
        """The watermark at which a window ending at ``end`` closes."""
        return end + self.lateness + (1 if self.closed_end else 0)

    def starts_of(self, ts: int, end: int | None = None) -> list[int]:
        """Starts of the grid (or snapshot) windows an event at ``ts`` belongs to; an
        interval event ``[ts, end)`` belongs to every window sharing an instant with it."""
        if self.kind == "snapshot":
            return [ts]
        shift = 1 if self.closed_end else 0  # (start, end] holds the instants start+1 .. end
        if end is None:
            return grid_starts(ts - shift, self.size, self.period, self.offset)
        return grid_starts(end - 1 - shift, self.size, self.period, self.offset, ts - shift)

    def edge_starts(
        self, start: int, covered: int, *, until: int | None = None, end: int | None = None
    ) -> range:
        """Starts of the grid windows an edge event from ``start`` is added to now: those
        sharing an instant with ``[start, +inf)`` whose due is above ``covered`` and — for an
        open edge — at most ``until`` (the windows closing now), or — for an edge that
        ends at ``end`` — that share an instant with ``[start, end)``."""
        shift = 1 if self.closed_end else 0
        size, period, offset = self.size, self.period, self.offset
        # due(end) > covered and the window's last instant (end - 1 + shift) >= start
        lower = max(start, covered - self.lateness) - shift
        low = lower - size + 1  # the first start whose window ends after ``lower``
        first = low + (offset - low) % period
        if until is not None:  # due(window end) <= until
            high = until - self.lateness - shift - size
        else:  # the window's first instant (start + shift) is before ``end``
            assert end is not None
            high = end - 1 - shift
        last = high - (high - offset) % period
        return range(first, last + 1, period)

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

    # ---------------------------------------------------------------- sink interface
    def delivered(self, scope: Any, now: int) -> None:
        """The source of ``scope`` delivered an event at processing time ``now``."""
        if self.idle_timeout is not None:
            self._last_delivery[scope] = now
            self._schedule_timer(scope)

    def admit(self, event: Admitted, watermark: int, now: int) -> tuple[int, int] | None:
        """Add ``event`` to its windows; return window bounds when all are closed."""
        scope = event.scope
        if watermark > self._watermarks.get(scope, NEG_INF):
            self._watermarks[scope] = watermark
        fields = event.record.fields or {}
        key = tuple(_hashable(fields.get(c)) for c in self.group_by)
        group = self._groups.get((scope, key))
        if group is None:
            group = self._groups[(scope, key)] = self._make(self)
        order = (event.timestamp, event.record.arrival_time or 0, event.record.seq)
        outcome = group.insert(event.timestamp, order, fields, watermark, event.record.end_time)
        if outcome == GAP:
            self.in_no_window += 1
            event.windows = []
            return None
        if isinstance(outcome, tuple):
            return outcome[1], outcome[2]
        event.windows = outcome
        self._schedule(scope, key, group)
        return None

    def open_edge(self, pair: Any, event: Admitted, watermark: int) -> None:
        """Open the edge event ``event`` (a start edge) under ``pair`` (its timeline and
        id); ``watermark`` governs its scope now (windows due at or below it are closed)."""
        scope = event.scope
        if watermark > self._watermarks.get(scope, NEG_INF):
            self._watermarks[scope] = watermark
        fields = event.record.fields or {}
        key = tuple(_hashable(fields.get(c)) for c in self.group_by)
        order = (event.timestamp, event.record.arrival_time or 0, event.record.seq)
        edge = _Edge(scope, key, event.timestamp, order, fields, watermark)
        self._edges[pair] = self._scope_edges.setdefault(scope, {})[pair] = edge

    def edge_start(self, pair: Any) -> int | None:
        """The start of the open edge event ``pair``, or ``None`` if none is open."""
        edge = self._edges.get(pair)
        return None if edge is None else edge.start

    def end_edge(self, pair: Any, end: int) -> list[tuple[int, int]]:
        """End the open edge event ``pair`` at ``end``: it joins the windows not closed yet
        that share an instant with ``[start, end)`` (closed ones already have it)."""
        edge = self._edges.pop(pair)
        del self._scope_edges[edge.scope][pair]
        if end <= edge.start:  # an empty event: in no window
            return []
        return self._add_edge(edge, self.edge_starts(edge.start, edge.covered, end=end))

    def open_edges(self) -> int:
        """How many edge events are open."""
        return len(self._edges)

    def _add_edge(self, edge: _Edge, starts: range) -> list[tuple[int, int]]:
        if not starts:
            return []
        group = self._groups.get((edge.scope, edge.group))
        if group is None:
            group = self._groups[(edge.scope, edge.group)] = self._make(self)
        assert isinstance(group, _GridGroup)
        joined = group.add_edge(starts, edge.order, edge.fields)
        self._schedule(edge.scope, edge.group, group)
        return joined

    def _close_edges(self, scope: Any, watermark: int | None) -> None:
        """Add every open edge of ``scope`` (of every scope when ``watermark`` is None: the
        substreams' floor moved) to the windows that close at its scope's watermark."""
        edges = self._edges if watermark is None else self._scope_edges.get(scope, {})
        for edge in edges.values():
            mark = watermark
            if mark is None:
                mark = max(self._watermarks.get(edge.scope, NEG_INF), self._floor)
            if mark > edge.covered and is_finite(mark):
                self._add_edge(edge, self.edge_starts(edge.start, edge.covered, until=mark))
                edge.covered = mark

    def advance(self, scope: Any, watermark: int, now: int) -> None:
        """The watermark of ``scope`` reached ``watermark``: close what it allows."""
        if watermark > self._watermarks.get(scope, NEG_INF):
            self._watermarks[scope] = watermark
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
        for edge in self._edges.values():
            mark = max(self._watermarks.get(edge.scope, NEG_INF), self._floor)
            if is_finite(mark) and mark > edge.start:
                self._add_edge(edge, self.edge_starts(edge.start, edge.covered, end=mark))
        self._edges.clear()
        self._scope_edges.clear()
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

    # ---------------------------------------------------------------- timers
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
        end = due - self.lateness - (1 if self.closed_end else 0)
        last = self._last_delivery.get(scope, NEG_INF)
        return max(end, last) + self.idle_timeout, due  # type: ignore[operator]

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

    # ---------------------------------------------------------------- internals
    def _schedule(self, scope: Any, key: tuple[Any, ...], group: _Group) -> None:
        due = group.next_due()
        if due is None:
            return
        heapq.heappush(self._heaps.setdefault(scope, []), (due, next(self._counter), key))
        if self._all is not None:
            heapq.heappush(self._all, (due, next(self._counter), scope, key))
        if self.idle_timeout is not None:
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
            if not isinstance(group, _SessionGroup):
                del self._groups[(scope, key)]
        else:
            self._schedule(scope, key, group)

    def _emit_sorted(self, closed: list[tuple[Any, ...]], now: int) -> None:
        closed.sort(key=lambda c: c[:4])
        for end, start, _, _, key, values in closed:
            record: dict[str, Any] = {"type": "window"}
            for column, value in zip(self.group_by, key, strict=True):
                record[column] = jsonable(value)
            record["window_start"] = time_or_none(start)
            record["window_end"] = time_or_none(end)
            for name, value in values.items():
                record[name] = jsonable(value)
            record["emitted_at"] = time_or_none(now)
            self._emit(record)


_INFINITY = 1 << 62


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return repr(value)
    return value


def _sort_key(value: Any) -> tuple[Any, ...]:
    if isinstance(value, tuple):
        return tuple(_sort_key(v) for v in value)
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, repr(value))
