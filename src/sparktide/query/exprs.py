"""Stream Analytics expressions → job-file expressions (:mod:`sparktide.expr`).

``WHERE`` conditions, ``HAVING`` conditions and computed ``SELECT`` columns become the
job's ``[filter] where``, ``[window] having`` and ``[select]``. Columns and function
calls are resolved by the caller (input fields for ``WHERE``; group-by columns,
aggregates and ``System.Timestamp()`` over a window; ``input.field`` over a join's
matches), except ``DATEDIFF(unit, start, end)``, translated here (its times resolved
by the caller); ``CAST``, ``CASE`` and other functions are refused by name, with their
place.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sparktide import expr as E
from sparktide.query.ast import Call, Column, Expr, Literal, Pos
from sparktide.time import instant_or_problem

__all__ = ["Leaf", "convert"]

#: Resolves a column or a function call of an expression (or refuses it).
Leaf = Callable[[Column | Call], E.Expr]


def convert(node: Expr, leaf: Leaf, refuse: Any, clause: str) -> E.Expr:
    """The job-file expression of the Stream Analytics expression ``node``.

    Parameters
    ----------
    node
        The expression.
    leaf
        Resolves a column or a function call (or refuses it).
    refuse
        Makes the :class:`~sparktide.errors.QueryError` of a place and a message.
    clause
        Where the expression is (``WHERE``, ``HAVING``, ``SELECT``), for messages.
    """

    def go(n: Expr) -> E.Expr:
        if isinstance(n, Literal):
            value = n.value
            if isinstance(value, Decimal):
                number = float(value)
                if number in (float("inf"), float("-inf")):
                    raise refuse(n.pos, f"the number {value} is beyond the range of a double")
                return E.Lit(number)
            return E.Lit(value)
        if isinstance(n, Call) and n.function == "datediff":
            return _datediff(n, go, refuse, clause)
        if isinstance(n, (Column, Call)):
            return leaf(n)
        kind, ops = n.kind, n.operands
        if kind == "comparison":
            op = "<>" if n.operator == "!=" else n.operator
            return E.Binary(op, go(ops[0]), go(ops[1]))
        if kind in ("AND", "OR"):
            return E.Binary(kind, go(ops[0]), go(ops[1]))
        if kind == "arithmetic":
            return E.Binary(n.operator, go(ops[0]), go(ops[1]))
        if kind == "NOT":
            return E.Unary("NOT", go(ops[0]))
        if kind == "sign":
            inner = go(ops[0])
            return inner if n.operator == "+" else E.Unary("-", inner)
        negated = n.operator.startswith("NOT ") or n.operator == "IS NOT NULL"
        if kind == "IS NULL":
            return E.IsNull(go(ops[0]), negated)
        if kind == "BETWEEN":
            return E.Between(go(ops[0]), go(ops[1]), go(ops[2]), negated)
        if kind == "IN":
            return E.In(go(ops[0]), tuple(go(o) for o in ops[1:]), negated)
        if kind == "LIKE":
            pattern = ops[1]
            if not (isinstance(pattern, Literal) and isinstance(pattern.value, str)):
                raise refuse(_pos(pattern), "LIKE takes a 'string' pattern")
            if "[" in pattern.value:
                raise refuse(
                    pattern.pos,
                    "LIKE patterns with [character classes] are not supported yet; use % and _",
                )
            return E.Like(go(ops[0]), pattern.value, negated)
        raise refuse(n.pos, f"{n.operator or kind} in {clause} is not supported yet")

    return go(node)


def _datediff(call: Call, go: Callable[[Expr], E.Expr], refuse: Any, clause: str) -> E.Expr:
    """``DATEDIFF(unit, start, end)`` outside a JOIN's ON: the count of unit boundaries
    crossed (:class:`sparktide.expr.DateDiff`), for the units of windows; each time is a
    column, ``System.Timestamp()`` or an ISO-8601 text with a zone."""
    if call.star or call.distinct or len(call.args) != 3:
        raise refuse(call.pos, "DATEDIFF(unit, start, end) takes a unit and two times")
    unit, *times = call.args
    found = (
        E.DATEDIFF_UNITS.get(unit.parts[0].lower())
        if isinstance(unit, Column) and len(unit.parts) == 1
        else None
    )
    if found is None:
        shown = unit.name if isinstance(unit, Column) else "this"
        raise refuse(
            _pos(unit),
            f"DATEDIFF({shown}, ...) in {clause} is not supported yet: the units are day, "
            "hour, minute, second, millisecond and microsecond",
        )
    converted = []
    for time in times:
        if isinstance(time, Literal) and isinstance(time.value, str):
            problem = instant_or_problem(time.value)
            if isinstance(problem, str):
                raise refuse(
                    time.pos,
                    f"DATEDIFF's time {time.value!r} {problem}: sparktide reads times as "
                    "ISO-8601 text with a zone, such as '2026-03-01T09:00:00Z'",
                )
        elif not isinstance(time, (Column, Call)) or (
            isinstance(time, Call) and time.function not in ("system.timestamp", "lag", "last")
        ):
            what = (
                f"{time.text[:-2]}(...)"
                if isinstance(time, Call)
                else "a constant"
                if isinstance(time, Literal)
                else "an expression"
            )
            raise refuse(
                _pos(time),
                f"DATEDIFF of {what} is not supported yet: its times are columns, "
                "System.Timestamp(), LAG(...) or LAST(...) OVER (...), or 'ISO-8601 text'",
            )
        converted.append(go(time))
    return E.DateDiff(found[0], converted[0], converted[1])


def _pos(node: Expr) -> Pos:
    return node.pos
