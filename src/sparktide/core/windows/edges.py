"""Edge events in windows (semantics §7): an event opened by a start edge, ended by an end edge.

An open edge event is in every window that shares an instant with ``[start, +inf)``, so
it is added to each such grid window as the window closes; its end edge adds it to the
windows still open that share an instant with ``[start, end)``. A flush ends it at its
scope's last watermark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparktide.core.aggregates import OrderKey
from sparktide.core.instants import NEG_INF, is_finite
from sparktide.core.sink import Admitted
from sparktide.core.windows.grid import GridGroup
from sparktide.core.windows.groups import WindowGroup, group_key, order_of
from sparktide.core.windows.spec import WindowSpec

__all__ = ["EdgeEvents", "OpenEdge"]


@dataclass(slots=True, eq=False, repr=False)
class OpenEdge:
    """An open edge event (semantics §7): started, its end not known yet.

    It is in every window that shares an instant with ``[start, +inf)``, so it is added to
    each such window as the window closes (``covered`` is the watermark up to which that
    has been done: windows due at or below it have it, or were closed before it started).
    """

    scope: Any
    group: tuple[Any, ...]
    start: int
    order: OrderKey
    fields: dict[str, Any]
    covered: int


class EdgeEvents:
    """The edge-event part of the window sink (:class:`~sparktide.core.windows.sink.
    WindowOperator`): open edges by ``(timeline, edge id)`` and by scope."""

    spec: WindowSpec
    _edges: dict[Any, OpenEdge]
    _scope_edges: dict[Any, dict[Any, OpenEdge]]
    _watermarks: dict[Any, int]
    _floor: int

    def _group(self, scope: Any, key: tuple[Any, ...]) -> WindowGroup:
        raise NotImplementedError  # pragma: no cover - the operator's

    def _note_watermark(self, scope: Any, watermark: int) -> None:
        raise NotImplementedError  # pragma: no cover - the operator's

    def _schedule(self, scope: Any, key: tuple[Any, ...], group: WindowGroup) -> None:
        raise NotImplementedError  # pragma: no cover - the operator's

    def open_edge(self, pair: Any, event: Admitted, watermark: int) -> None:
        """Open the edge event ``event`` (a start edge) under ``pair`` (its timeline and
        id); ``watermark`` governs its scope now (windows due at or below it are closed)."""
        scope = event.scope
        self._note_watermark(scope, watermark)
        fields = self.spec.fields_of(event)
        key = group_key(fields, self.spec.group_keys)
        edge = OpenEdge(scope, key, event.timestamp, order_of(event), fields, watermark)
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
        return self._add_edge(edge, self.spec.edge_starts(edge.start, edge.covered, end=end))

    def open_edges(self) -> int:
        """How many edge events are open."""
        return len(self._edges)

    def _add_edge(self, edge: OpenEdge, starts: range) -> list[tuple[int, int]]:
        if not starts:
            return []
        group = self._group(edge.scope, edge.group)
        assert isinstance(group, GridGroup)
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
                self._add_edge(edge, self.spec.edge_starts(edge.start, edge.covered, until=mark))
                edge.covered = mark

    def _flush_edges(self) -> None:
        """End every open edge event at its scope's last watermark: it surely lasted until
        then, and nothing says for how long after."""
        for edge in self._edges.values():
            mark = max(self._watermarks.get(edge.scope, NEG_INF), self._floor)
            if is_finite(mark) and mark > edge.start:
                self._add_edge(edge, self.spec.edge_starts(edge.start, edge.covered, end=mark))
        self._edges.clear()
        self._scope_edges.clear()
