"""Ordered release of admitted events when no window is configured (semantics §4).

Admitted events wait in a heap per scope (the whole job, a partition, or a substream)
and are released in (system timestamp, arrival order) once the scope's watermark has
reached their timestamp (:func:`release_ready`: strictly passed it where CTIs make the
watermark).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from sparktide.core.sink import Admitted, Windowless

__all__ = ["OrderedRelease", "release_ready", "written_from_start"]


def written_from_start(timestamp: int, start: int | None) -> bool:
    """Whether a result — a window record by its ``window_end``, a released event or a
    join's match by its timestamp — is written in a run whose output starts at ``start``
    (semantics §12.3; ``None``: no start time): Stream Analytics' "the first possible
    output event would have a timestamp equal to or greater than" the start.

    Examples
    --------
    >>> written_from_start(9, 10), written_from_start(10, 10), written_from_start(9, None)
    (False, True, True)
    """
    return start is None or timestamp >= start


def release_ready(timestamp: int, watermark: int, *, strict: bool) -> bool:
    """Whether an admitted event (or a join's match) at ``timestamp`` is released once its
    scope's watermark is ``watermark`` (semantics §4.8, §7.1).

    Stream Analytics' heuristic watermark releases what it has reached (``t ≤ W``). A
    StreamInsight CTI at *c* commits what lies strictly before *c* (an event starting
    at *c* may still come), so where CTIs make the watermark (``strict``: the job has
    ``[punctuation]``) release waits until it has passed (``t < W``).

    Examples
    --------
    >>> release_ready(10, 10, strict=False), release_ready(10, 10, strict=True)
    (True, False)
    """
    return timestamp < watermark if strict else timestamp <= watermark


class OrderedRelease(Windowless):
    """A sink that releases admitted events in timestamp order.

    Parameters
    ----------
    emit
        Called with each released event and the processing time of its release.
    shared_floor
        True for substreams: every scope's watermark is at least a common floor
        (the input's arrival clock minus L), so one heap over all scopes serves it.
    strict
        True where CTIs make the watermark: release waits until it has passed an
        event's timestamp (:func:`release_ready`).
    on_watermark
        Called with ``(scope, watermark, every_scope)`` after each release the watermark
        of a scope (or, with ``every_scope``, of every scope) allowed (analytic columns
        drop what it left behind).
    """

    def __init__(
        self,
        emit: Callable[[Admitted, int], None],
        *,
        shared_floor: bool,
        strict: bool = False,
        on_watermark: Callable[[Any, int, bool], None] | None = None,
    ) -> None:
        self._emit = emit
        self._on_watermark = on_watermark
        self._strict = strict
        self._heaps: dict[Any, list[tuple[int, int, int, int, Admitted]]] = {}
        self._all: list[tuple[int, int, int, int, Admitted]] | None = [] if shared_floor else None
        self.held = 0

    def admit(self, event: Admitted, watermark: int, now: int) -> None:
        """Hold ``event``; release at once what its scope's ``watermark`` already allows."""
        entry = (event.timestamp, event.record.arrival_time, event.record.seq, event.part, event)
        heapq.heappush(self._heaps.setdefault(event.scope, []), entry)
        if self._all is not None:
            heapq.heappush(self._all, entry)
        self.held += 1
        if release_ready(event.timestamp, watermark, strict=self._strict):
            self.advance(event.scope, watermark, now)
        return None

    def advance(self, scope: Any, watermark: int, now: int) -> None:
        """The watermark of ``scope`` reached ``watermark``: release what it allows."""
        heap = self._heaps.get(scope)
        while heap and release_ready(heap[0][0], watermark, strict=self._strict):
            event = heapq.heappop(heap)[4]
            if not event.done:
                self._release(event, now)
        if self._on_watermark is not None:
            self._on_watermark(scope, watermark, False)

    def advance_floor(self, floor: int, now: int) -> None:
        """Every scope's watermark reached ``floor`` (substreams)."""
        heap = self._all
        while heap and release_ready(heap[0][0], floor, strict=self._strict):
            event = heapq.heappop(heap)[4]
            if not event.done:
                self._release(event, now)
        if self._on_watermark is not None:
            self._on_watermark(None, floor, True)

    def flush(self, now: int) -> None:
        """End of input: release everything still held, in timestamp order."""
        pending = [entry for heap in self._heaps.values() for entry in heap if not entry[4].done]
        for entry in sorted(pending, key=lambda e: e[:4]):
            self._release(entry[4], now)
        self._heaps.clear()
        if self._all is not None:
            self._all.clear()

    def _release(self, event: Admitted, now: int) -> None:
        event.done = True
        self.held -= 1
        self._emit(event, now)
