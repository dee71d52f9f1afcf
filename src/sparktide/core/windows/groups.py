"""The open windows of one (scope, group): what every kind of window group does.

Every window belongs to a *scope* (the job, a partition, or a substream) and a group
(the ``group_by`` values); the window operator keeps one group object per pair.
"""

from __future__ import annotations

from typing import Any

from sparktide.core.aggregates import OrderKey
from sparktide.core.sink import Admitted
from sparktide.core.windows.spec import WindowSpec

__all__ = ["GAP", "Closed", "Row", "WindowGroup", "group_key", "order_of"]

#: Returned by a group's ``insert`` when the event falls in a hopping gap.
GAP = "gap"

Row = tuple[int, OrderKey, dict[str, Any]]
Closed = tuple[int, int, dict[str, Any]]  # start, end, aggregates


class WindowGroup:
    """Open windows of one (scope, group) — base class."""

    __slots__ = ("spec",)

    def __init__(self, spec: WindowSpec) -> None:
        self.spec = spec

    def insert(
        self, ts: int, order: OrderKey, fields: dict[str, Any], watermark: int, end: int | None
    ) -> Any:
        """Add an event at ``ts`` (an interval event: ``[ts, end)``) to its open windows.

        Returns the ``(start, end)`` pairs it joined, :data:`GAP`, or
        ``("closed", start, end)`` naming the last window it would have joined."""
        raise NotImplementedError

    def close(self, watermark: int) -> list[Closed]:
        """Close the windows ``watermark`` allows: ``(start, end, aggregates)`` each."""
        raise NotImplementedError

    def next_due(self) -> int | None:
        """The watermark at which the oldest open window closes, or ``None``."""
        raise NotImplementedError

    def open_windows(self) -> int:
        """How many windows are open."""
        raise NotImplementedError


def group_key(fields: dict[str, Any], group_by: tuple[str, ...]) -> tuple[Any, ...]:
    """The ``group_by`` values of an event's ``fields`` (lists and objects by their text)."""
    return tuple(_hashable(fields.get(column)) for column in group_by)


def order_of(event: Admitted) -> OrderKey:
    """Where ``event`` comes among a window's events: (timestamp, arrival, input order,
    place among the events ``[apply]`` made of one record)."""
    return (event.timestamp, event.record.arrival_time or 0, event.record.seq, event.part)


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return repr(value)
    return value
