"""Session windows, with optional ``max_duration`` cuts (semantics §6)."""

from __future__ import annotations

import bisect
from typing import Any

from sparktide.core.aggregates import OrderKey, accumulate
from sparktide.core.instants import NEG_INF
from sparktide.core.windows.groups import Closed, Row, WindowGroup
from sparktide.core.windows.spec import WindowSpec

__all__ = ["SessionGroup", "session_windows"]


def session_windows(
    spec: WindowSpec, rows: list[Row], carry: tuple[int, int] | None
) -> list[tuple[int, int, list[Row]]]:
    """Split a group's open rows (sorted) into sessions (semantics §6.3): ``(start, end,
    rows)`` each, the last end tentative. ``carry`` is ``(cut instant, last event before
    it)`` when the last closed session was cut at ``max_duration``: a row joining it
    starts at the cut."""
    out: list[tuple[int, int, list[Row]]] = []
    start = last = 0
    members: list[Row] = []
    for row in rows:
        ts = row[0]
        if not members:
            start = ts
            if carry is not None:
                cut, before = carry
                if spec.joins(before, ts) and spec.crosses(cut, ts):
                    start = cut
                    while spec.max_duration and spec.crosses(spec.cut_after(start), ts):
                        start = spec.cut_after(start)
            members, last = [row], ts
            continue
        if spec.joins(last, ts):
            cut = spec.cut_after(start) if spec.max_duration else None
            if cut is not None and spec.crosses(cut, ts):
                out.append((start, cut, members))
                start = cut
                while spec.crosses(spec.cut_after(start), ts):
                    start = spec.cut_after(start)
                members = [row]
            else:
                members.append(row)
            last = ts
        else:
            out.append((start, spec.session_end(start, last), members))
            start, last, members = ts, ts, [row]
    if members:
        out.append((start, spec.session_end(start, last), members))
    return out


class SessionGroup(WindowGroup):
    """Stream Analytics session windows with optional ``max_duration`` cuts."""

    __slots__ = ("_carry", "_closed_until", "_last_closed", "_rows")

    def __init__(self, spec: WindowSpec) -> None:
        super().__init__(spec)
        self._rows: list[Row] = []
        self._carry: tuple[int, int] | None = None  # (cut instant, last event before it)
        self._closed_until = NEG_INF
        self._last_closed: tuple[int, int] | None = None

    def sessions(self) -> list[tuple[int, int, list[Row]]]:
        """Split the open rows into sessions: (start, end, rows); the last end is tentative
        (:func:`session_windows`)."""
        return session_windows(self.spec, self._rows, self._carry)

    def insert(
        self, ts: int, order: OrderKey, fields: dict[str, Any], watermark: int, end: int | None
    ) -> Any:
        """Add an event to its open windows (see :meth:`WindowGroup.insert`)."""
        spec = self.spec
        if self._last_closed is not None and not spec.after_end(ts, self._closed_until):
            return ("closed", *self._last_closed)
        row = (ts, order, fields)
        bisect.insort(self._rows, row, key=lambda r: (r[0], r[1]))
        for start, end, members in self.sessions():
            if any(m is row for m in members):
                if spec.due(end) <= watermark:
                    self._rows.remove(row)
                    return ("closed", start, end)
                return [(start, end)]
        raise AssertionError("inserted row not in any session")  # pragma: no cover

    def close(self, watermark: int) -> list[Closed]:
        """Close the windows ``watermark`` allows: ``(start, end, aggregates)`` each."""
        spec = self.spec
        out: list[Closed] = []
        consumed = 0
        for start, end, members in self.sessions():
            if spec.due(end) > watermark:
                break
            rows = [(r[1], r[2]) for r in members]
            out.append((start, end, accumulate(spec.aggregates, rows)))
            consumed += len(members)
            last = members[-1][0]
            natural = last + spec.gap
            self._carry = (end, last) if end < natural else None
            self._closed_until = end
            self._last_closed = (start, end)
        if consumed:
            del self._rows[:consumed]
        return out

    def next_due(self) -> int | None:
        """The watermark at which the oldest open window closes, or ``None``."""
        if not self._rows:
            return None
        _, end, _ = self.sessions()[0]
        return self.spec.due(end)

    def open_windows(self) -> int:
        """How many windows are open."""
        return len(self.sessions()) if self._rows else 0
