"""Window aggregates with SQL null rules (semantics §10).

``count(*)`` counts rows; every other aggregate ignores nulls, and returns null over
no non-null value (``count`` returns 0). ``first``/``last`` take the value of the
window's first/last row in (system timestamp, arrival order), nulls included, as
Spark's ``min_by``/``max_by`` would. ``collect_list`` keeps non-null values in that
order (as Spark's does). Float sums are exact (``math.fsum``), so a result never
depends on the order rows arrived in; integers beyond 64 bits are summed as floats, as
Spark sums them; a float sum (or the sum under an average) beyond
the range of a double is null, as JSON has no infinity.

An aggregate ``over (distinct c, ..., System.Timestamp())`` keeps, per open window, the
set of distinct (system timestamp, values of the columns) combinations, each with the
value it adds, and aggregates those values once the window closes (semantics §13.4).
Values are told apart as ``count_distinct`` tells them (``3`` and ``3.0`` are one value),
but for the aggregate's own column an integer and a float of the same number are two
combinations, as Spark's set of typed values keeps them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sparktide.core.ordered import (
    order_rank,
    ordered_values,
    percentile_cont,
    percentile_disc,
    ranked,
    spread,
)
from sparktide.core.records import jsonable, value_at, value_key
from sparktide.expr import EVENT_INPUT, evaluate, is_other, value_of
from sparktide.job import Aggregate
from sparktide.job.aggregates import NUMERIC_FUNCTIONS, ORDERED_FUNCTIONS

__all__ = [
    "Accumulator",
    "accumulate",
    "aggregated_value",
    "distinct_combinations_add",
    "distinct_combinations_value",
]

OrderKey = tuple[int, int, int, int]
#: Integers outside this range are summed as floats (Spark reads them as decimals).
_INT64 = (-(2**63), 2**63 - 1)


def _rank(value: Any) -> tuple[int, Any, int]:
    """A total order over scalars of mixed type: numbers, then text, then anything else.

    Equal numbers of different JSON types are ordered integer < float < boolean (``5``,
    ``5.0``, ``true`` for 1), as their JSON texts sort on Spark: ``min`` of ``5`` and
    ``5.0`` is ``5``, ``max`` is ``5.0``, whatever order they came in."""
    if isinstance(value, bool):
        return (0, int(value), 2)
    if isinstance(value, int):
        return (0, value, 0)
    if isinstance(value, float):
        return (0, value, 1)
    if isinstance(value, str):
        return (1, value, 0)
    return (2, repr(value), 0)


class Accumulator:
    """Accumulates the rows of one window for all of a job's aggregates.

    Parameters
    ----------
    aggregates
        The job's aggregates, in output order.
    """

    __slots__ = ("_aggregates", "_state")

    def __init__(self, aggregates: Sequence[Aggregate]) -> None:
        self._aggregates = aggregates
        self._state: list[Any] = [
            {} if a.distinct is not None else _initial(a.function) for a in aggregates
        ]

    def add(self, fields: dict[str, Any], order: OrderKey) -> None:
        """Add one row with its (timestamp, arrival, seq) order key."""
        state = self._state
        for i, aggregate in enumerate(self._aggregates):
            function = aggregate.function
            if aggregate.distinct is not None:
                distinct_combinations_add(state[i], aggregate, fields, order[0])
                continue
            if aggregate.counts_rows:  # count(*)
                state[i] += 1
                continue
            value = _value(aggregate, fields)
            if function in _KEEPS_ALL:
                state[i].append((order, _order_keys(aggregate, fields), value))
                continue
            if function in ("first", "last"):
                current = state[i]
                if (
                    current is None
                    or (function == "first" and order < current[0])
                    or (function == "last" and order > current[0])
                ):
                    state[i] = (order, value)
                continue
            if value is None:
                continue
            if function in ("count", "count_if"):
                state[i] += 1
            elif function in ("sum", "avg", "stdev", "stdevp", "var", "varp"):
                state[i].append(value)
            elif function == "min":
                if state[i] is None or _rank(value) < _rank(state[i]):
                    state[i] = value
            elif function == "max":
                if state[i] is None or _rank(value) > _rank(state[i]):
                    state[i] = value
            elif function == "collect_list":
                state[i].append((order, value))
            elif function == "count_distinct":
                state[i].add(value_key(value))

    def results(self) -> dict[str, Any]:
        """The aggregate values, by output name."""
        out: dict[str, Any] = {}
        for aggregate, state in zip(self._aggregates, self._state, strict=True):
            if aggregate.distinct is not None:
                out[aggregate.name] = distinct_combinations_value(aggregate, state)
            elif aggregate.function in _KEEPS_ALL:
                out[aggregate.name] = _ordered_final(aggregate, state)
            else:
                out[aggregate.name] = _final(aggregate.function, state)
        return out


#: Aggregates that keep every row's (order, order keys, value) until the window closes.
_KEEPS_ALL = ("collect", *ORDERED_FUNCTIONS)


def distinct_combinations_add(
    state: dict[Any, Any], aggregate: Aggregate, fields: dict[str, Any], timestamp: int
) -> None:
    """Add one row to an aggregate ``over (distinct ...)``: its combination of timestamp
    and distinct values, with the value it adds (``count(*)``: none)."""
    assert aggregate.distinct is not None
    value = fields.get(aggregate.column) if aggregate.column is not None else None
    typed = isinstance(value, float)
    keys = tuple(value_key(fields.get(column)) for column in aggregate.distinct)
    state.setdefault((timestamp, keys, typed), value)


def distinct_combinations_value(aggregate: Aggregate, state: dict[Any, Any]) -> Any:
    """The value of an aggregate ``over (distinct ...)``: of each combination's value."""
    if aggregate.counts_rows:
        return len(state)
    values = [value for value in state.values() if value is not None]
    if aggregate.function == "count":
        return len(values)
    if aggregate.function in ("sum", "avg"):
        return _final(aggregate.function, values)
    pick = min if aggregate.function == "min" else max
    return pick(values, key=_rank) if values else None


def _value(aggregate: Aggregate, fields: dict[str, Any]) -> Any:
    """The value one record adds: its expression's, its column's, or the whole record."""
    if aggregate.expression is not None:
        return aggregated_value(aggregate, fields)
    if aggregate.whole_record:  # (the record's own fields: not System.Input())
        return jsonable({k: v for k, v in fields.items() if k != EVENT_INPUT.key})
    column = aggregate.value_column
    value = fields.get(column) if column is not None else None
    return jsonable(value) if aggregate.function in _KEEPS_ALL else value


def _order_keys(aggregate: Aggregate, fields: dict[str, Any]) -> tuple[Any, ...]:
    """The ranks of a row's ``order by`` values (a name with dots reads inside records)."""
    return tuple(order_rank(value_at(fields, column)) for column, _ in aggregate.order_by)


def _ordered_final(aggregate: Aggregate, state: list[Any]) -> Any:
    """The value of an aggregate of :data:`_KEEPS_ALL` from its rows."""
    function = aggregate.function
    if function == "collect":
        return [value for _, _, value in sorted(state, key=lambda row: row[0])]
    descending = [d for _, d in aggregate.order_by]
    if function == "percentile_cont":
        values = [value for _, _, value in state]
        return percentile_cont(values, aggregate.argument, descending[0])  # type: ignore[arg-type]
    if function == "percentile_disc":
        rows = [(order, value) for order, _, value in state]
        return percentile_disc(rows, aggregate.argument, descending[0])  # type: ignore[arg-type]
    items = ordered_values(state, descending)
    if function == "topone":
        return items[0][1] if items else None
    if function == "bottomone":
        return items[-1][1] if items else None
    n = aggregate.argument
    assert isinstance(n, int)
    if function == "topn":
        return [value for _, value in items[:n]]
    if function == "bottomn":
        return [value for _, value in items[-n:]]
    return ranked(items, n)


def aggregated_value(aggregate: Aggregate, fields: dict[str, Any]) -> Any:
    """The value an aggregate of an expression adds for one record (semantics §6.12):
    the expression's value (a ``CAST`` that fails is null here: the reader has already
    made such a record malformed); an array or object is null, and for ``sum`` and
    ``avg`` so is anything but a number."""
    expr = aggregate.parsed
    assert expr is not None
    value = evaluate(expr, lambda name: value_of(fields.get(name)), present=fields.__contains__)
    if aggregate.function == "count_if":  # a row counts when its condition is true
        return True if value is True else None
    if is_other(value):
        return None
    if aggregate.function in NUMERIC_FUNCTIONS and (
        isinstance(value, bool) or not isinstance(value, (int, float))
    ):
        return None
    return value


def _initial(function: str) -> Any:
    if function in ("count", "count_if"):
        return 0
    if function in ("sum", "avg", "collect_list", *_KEEPS_ALL, "stdev", "stdevp", "var", "varp"):
        return []
    if function == "count_distinct":
        return set()
    return None


def _final(function: str, state: Any) -> Any:
    if function in ("count", "count_if"):
        return state
    if function == "sum":
        return _sum(state)
    if function == "avg":
        if not state:
            return None
        total = _sum(state)
        if total is None or isinstance(total, int):
            return None if total is None else total / len(state)
        return total / len(state)
    if function in ("first", "last"):
        return None if state is None else state[1]
    if function == "collect_list":
        return [value for _, value in sorted(state, key=lambda item: item[0])]
    if function == "count_distinct":
        return len(state)
    if function in ("stdev", "stdevp", "var", "varp"):
        return spread(function, state)
    return state  # min, max


def _sum(values: list[Any]) -> Any:
    if not values:
        return None
    if all(isinstance(v, int) and _INT64[0] <= v <= _INT64[1] for v in values):
        return sum(values)  # exact, as Spark's DECIMAL(38,0) sum of 64-bit integers
    try:
        total = math.fsum(values)
    except OverflowError:  # the sum leaves the range of a double
        return None
    return total if math.isfinite(total) else None


def accumulate(
    aggregates: Sequence[Aggregate], rows: Sequence[tuple[OrderKey, dict[str, Any]]]
) -> dict[str, Any]:
    """Aggregate ``rows`` (order key, fields) in one go."""
    accumulator = Accumulator(aggregates)
    for order, fields in rows:
        accumulator.add(fields, order)
    return accumulator.results()
