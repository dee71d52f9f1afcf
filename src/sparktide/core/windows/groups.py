"""The open windows of one (scope, group): what every kind of window group does.

Every window belongs to a *scope* (the job, a partition, or a substream) and a group
(the ``group_by`` values); the window operator keeps one group object per pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparktide.core.aggregates import OrderKey
from sparktide.core.outputs import written_value
from sparktide.core.sink import Admitted
from sparktide.core.windows.spec import WindowSpec
from sparktide.expr import Expr, evaluate, value_of

__all__ = [
    "GAP",
    "Closed",
    "ComputedValue",
    "Row",
    "WindowGroup",
    "group_key",
    "order_of",
    "written_group_value",
]

#: Returned by a group's ``insert`` when the event falls in a hopping gap.
GAP = "gap"

Row = tuple[int, OrderKey, dict[str, Any]]
#: ``(name, expression)`` per grouping column, the expression ``None`` for a field.
GroupKeys = tuple[tuple[str, Expr | None], ...]
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


def group_key(fields: dict[str, Any], keys: GroupKeys) -> tuple[Any, ...]:
    """The grouping values of an event's ``fields`` (lists and objects by their text):
    a column's value, or a computed column's (``keys``: ``(name, expression or None)``,
    :attr:`sparktide.job.Window.group_keys`; a ``CAST`` that fails is null here: the
    reader has already made such a record malformed)."""
    return tuple(
        _hashable(fields.get(name)) if expr is None else _computed(expr, fields)
        for name, expr in keys
    )


@dataclass(frozen=True)
class ComputedValue:
    """A computed grouping column's value in a group's key: equal to another only when of
    the same kind (``2`` is not ``2.0``, ``true`` is not ``1``), as values written as JSON
    differ (semantics §6.13); ``written`` is the value the window's record holds."""

    kind: str
    same: Any
    written: Any = field(compare=False)


def written_group_value(value: Any) -> Any:
    """The value a window's record holds for one element of a group's key."""
    return value.written if isinstance(value, ComputedValue) else value


def _computed(expr: Expr, fields: dict[str, Any]) -> ComputedValue:
    lookup = lambda name: value_of(fields.get(name))  # noqa: E731
    value = written_value(evaluate(expr, lookup, present=fields.__contains__))
    return ComputedValue(type(value).__name__, _hashable(value), value)


def order_of(event: Admitted) -> OrderKey:
    """Where ``event`` comes among a window's events: (timestamp, arrival, input order,
    place among the events ``[apply]`` made of one record)."""
    return (event.timestamp, event.record.arrival_time or 0, event.record.seq, event.part)


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return repr(value)
    return value
