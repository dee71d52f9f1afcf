"""Analytic columns (``LAG``, ``LAST``, ``ISFIRST`` and the analytic forms of ``SUM``,
``COUNT``, ``AVG``, ``MIN``, ``MAX``; semantics §11.19) in the reference engine: computed
for each released event, in release order, from what the earlier released events of its
scope and partition left.

The columns are computed in levels (:func:`sparktide.job.analytic_levels`): a column
whose expressions name other columns sees their values for the same event. Per column
and ``(scope, partition values)`` the state keeps the latest ``depth`` matching events
(timestamp and looked-up value, as evaluated at their release; whether ``when`` held is
their being kept), every one for an aggregate (its ``depth`` is ``None``). An event kept
there can matter only to an event at most ``limit_duration`` later (``lag``, ``last``,
the aggregates) or in its own period (``isfirst``); since every event released later
has a timestamp at or above its scope's watermark, the state drops what the watermark
has left behind (:func:`analytic_expired`).
An aggregate's value follows the window aggregates' rules, from their one home
(:mod:`sparktide.core.aggregates`): what an event adds is
:func:`~sparktide.core.aggregates.aggregated_value`, and the aggregate of the kept
values is :func:`~sparktide.core.aggregates.accumulate`'s.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from sparktide.core.aggregates import accumulate, aggregated_value
from sparktide.core.outputs import with_time
from sparktide.expr import Ref, evaluate, value_of
from sparktide.expr.nodes import Expr, is_other
from sparktide.job import Aggregate, Analytic, Job, analytic_levels, analytic_reads

__all__ = [
    "AnalyticColumns",
    "added_value",
    "analytic_aggregate",
    "analytic_expired",
    "analytic_key",
    "analytic_value",
    "period_start",
]


def period_start(timestamp: int, period: int) -> int:
    """The start of the ``isfirst`` period holding ``timestamp`` (periods aligned like
    tumbling windows: on multiples of ``period`` since the epoch)."""
    return timestamp - timestamp % period


def analytic_expired(analytic: Analytic, timestamp: int, watermark: int) -> bool:
    """Whether a matching event at ``timestamp`` can no longer matter to an event
    released after its scope's watermark reached ``watermark`` (every such event is at or
    after ``watermark``): ``lag``, ``last`` and the aggregates look back
    ``limit_duration``, ``isfirst`` within a period."""
    if analytic.function == "isfirst":
        return timestamp < period_start(watermark, analytic.period)  # type: ignore[arg-type]
    return timestamp < watermark - analytic.limit_duration  # type: ignore[operator]


def analytic_key(value: Any) -> Any:
    """A partition value as its partition's key: values of different kinds never meet (an
    integer ``1`` is not the float ``1.0``, nor the text ``'1'``); null, arrays and objects
    are one partition."""
    if value is None or is_other(value):
        return None
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int):
        return ("i", value)
    if isinstance(value, float):
        return ("d", value, math.copysign(1.0, value))
    return ("s", value)


def analytic_value(
    analytic: Analytic,
    kept: deque[tuple[int, Any]] | None,
    timestamp: int,
    *,
    matches: bool,
    current: Any,
    default: Any,
) -> Any:
    """The value of ``analytic`` for an event at ``timestamp`` (``matches``: whether its
    ``when`` holds; ``current``: its looked-up value; ``default``: its default), given
    ``kept``, the latest matching events before it (oldest first).

    ``isfirst`` is 1 when the event matches and the latest kept event is in another
    period; ``last`` is the current value when the event matches; otherwise (and for
    ``lag``) the ``offset``-th latest kept event's value, if at most ``limit_duration``
    before the event, else the default."""
    if analytic.function == "isfirst":
        period: int = analytic.period  # type: ignore[assignment]
        same = bool(kept) and period_start(kept[-1][0], period) == period_start(timestamp, period)  # type: ignore[index]
        return 1 if matches and not same else 0
    if analytic.function == "last" and matches:
        return current
    if kept and len(kept) >= analytic.depth:
        seen, value = kept[-analytic.depth]
        if seen >= timestamp - analytic.limit_duration:  # type: ignore[operator]
            return value
    return default


#: The field an aggregate's kept values are read from (:func:`analytic_aggregate`).
_KEPT = "v"


def analytic_aggregate(
    analytic: Analytic,
    kept: deque[tuple[int, Any]] | None,
    timestamp: int,
    *,
    matches: bool,
    current: Any,
) -> Any:
    """The value of the aggregate column ``analytic`` for an event at ``timestamp``
    (``matches``: whether its ``when`` holds; ``current``: what it adds,
    :func:`added_value`), given ``kept``, the matching events released before it (oldest
    first, ``(timestamp, added value)``).

    The aggregate, by the window aggregates' rules (:func:`accumulate`), of the kept
    events at least ``limit_duration`` before the event (the bound included) and of the
    event itself when it matches; ``count`` of none is 0, the others null."""
    floor = timestamp - analytic.limit_duration  # type: ignore[operator]
    values = [value for seen, value in kept or () if seen >= floor]
    if matches:
        values.append(current)
    column = Aggregate(analytic.name, analytic.function, column=_KEPT)
    rows = [((0, 0, i), {_KEPT: value}) for i, value in enumerate(values)]
    return accumulate((column,), rows)[analytic.name]


def added_value(analytic: Analytic, fields: dict[str, Any]) -> Any:
    """What an event adds to the aggregate column ``analytic``
    (:func:`~sparktide.core.aggregates.aggregated_value` of its aggregate: an array or
    object is null, and so is anything but a number for ``sum`` and ``avg``); ``True``
    for ``COUNT(*)``, which counts every matching event."""
    aggregate = analytic.aggregate
    if aggregate.counts_rows:
        return True
    return aggregated_value(aggregate, fields)


def _raw(expr: Expr, fields: dict[str, Any]) -> Any:
    """A looked-up value: a field as it is (kept whole for the output), else computed."""
    if isinstance(expr, Ref):
        return fields.get(expr.key)
    return evaluate(expr, lambda name: value_of(fields.get(name)), present=fields.__contains__)


class AnalyticColumns:
    """The analytic columns of a job and their state.

    Parameters
    ----------
    job
        The job (its ``analytics``).
    """

    def __init__(self, job: Job) -> None:
        self.analytics = job.analytics
        self._state: list[dict[tuple[Any, Any], deque[tuple[int, Any]]]] = [
            {} for _ in self.analytics
        ]
        names = [a.name for a in self.analytics]
        #: The columns in the order they are computed (level by level) and the other
        #: columns each reads.
        self._order = [k for level in analytic_levels(self.analytics) for k in level]
        self._reads = [tuple(analytic_reads(a, names)) for a in self.analytics]

    def values(self, scope: Any, timestamp: int, fields: dict[str, Any]) -> dict[str, Any]:
        """Each column's value for the event released now (``fields`` at ``timestamp`` in
        ``scope``), as raw values; the event then joins the state. The columns are
        computed level by level: one that reads others sees their values for this event
        (hiding fields of their names), and so does its ``when``, whose verdict (and the
        value it looks up) is what the event leaves in its state."""
        values: dict[str, Any] = {}
        fields = with_time(fields, timestamp)  # (System.Timestamp(), semantics §11.19)
        for k in self._order:
            analytic, reads = self.analytics[k], self._reads[k]
            seen = {**fields, **{n: values[n] for n in reads}} if reads else fields
            values[analytic.name] = self._value(k, scope, timestamp, seen)
        return {a.name: values[a.name] for a in self.analytics}

    def _value(self, k: int, scope: Any, timestamp: int, fields: dict[str, Any]) -> Any:
        """Column ``k``'s value for the event (``fields``: its fields and the columns it
        reads); the event then joins the column's state when it matches."""
        analytic, state = self.analytics[k], self._state[k]
        lookup: Callable[[str], Any] = lambda name: value_of(fields.get(name))  # noqa: E731
        present = fields.__contains__
        partition = analytic.partition_expressions
        key = tuple(analytic_key(evaluate(e, lookup, present=present)) for e in partition)
        kept = state.get((scope, key))
        when = analytic.when_expression
        matches = when is None or evaluate(when, lookup, present=present) is True
        current = None
        if analytic.is_aggregate:
            current = added_value(analytic, fields)
            value = analytic_aggregate(analytic, kept, timestamp, matches=matches, current=current)
        else:
            if analytic.function != "isfirst":
                current = _raw(analytic.value_expression, fields)  # type: ignore[arg-type]
            default = analytic.default_expression
            fallback = None if default is None else _raw(default, fields)
            value = analytic_value(
                analytic, kept, timestamp, matches=matches, current=current, default=fallback
            )
        if matches:
            if kept is None:
                kept = state[(scope, key)] = deque(maxlen=analytic.depth)
            kept.append((timestamp, current))
        return value

    def evict(self, scope: Any, watermark: int, *, every_scope: bool = False) -> None:
        """Drop what ``scope``'s watermark (every scope's, with ``every_scope``) has left
        behind (:func:`analytic_expired`)."""
        for analytic, state in zip(self.analytics, self._state, strict=True):
            for pair in [p for p in state if every_scope or p[0] == scope]:
                kept = state[pair]
                while kept and analytic_expired(analytic, kept[0][0], watermark):
                    kept.popleft()
                if not kept:
                    del state[pair]

    def evict_at(self, scope: Any, watermark: int, every_scope: bool) -> None:
        """:meth:`evict`, as :class:`~sparktide.core.release.OrderedRelease` calls it."""
        self.evict(scope, watermark, every_scope=every_scope)

    def size(self) -> int:
        """How many events the state keeps, over every column and partition."""
        return sum(len(kept) for state in self._state for kept in state.values())
