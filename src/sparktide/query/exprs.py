"""Stream Analytics expressions → job-file expressions (:mod:`sparktide.expr`).

``WHERE`` conditions, ``HAVING`` conditions and computed ``SELECT`` columns become the
job's ``[filter] where``, ``[window] having`` and ``[select]``. Columns and function
calls are resolved by the caller (input fields for ``WHERE``; group-by columns,
aggregates and ``System.Timestamp()`` over a window; ``input.field`` over a join's
matches), except the scalar functions (``DATEDIFF``, ``UPPER``, ``DATEADD`` ...,
:data:`sparktide.expr.FUNCTIONS`), ``CAST``, ``TRY_CAST`` and ``CASE``, translated here
operator by operator (their columns resolved by the caller).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sparktide import expr as E
from sparktide.errors import ConfigError
from sparktide.query.ast import Call, Column, Expr, Literal, Operation, Pos
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
        if isinstance(n, Call) and n.function.upper() in E.FUNCTIONS:
            return _function(n, go, refuse)
        if isinstance(n, (Column, Call)):
            return leaf(n)
        kind, ops = n.kind, n.operands
        if kind == "CAST":
            keyword, type_ = n.operator.split(" ", 1)
            if type_ not in E.CAST_TYPES:
                raise refuse(
                    n.pos,
                    f"{keyword}(... AS {type_}) is not supported yet: the types are "
                    + ", ".join(E.CAST_TYPES),
                )
            return E.Cast(go(ops[0]), E.CAST_TYPES[type_], safe=keyword == "TRY_CAST")
        if kind == "CASE":
            return _case(n, go)
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
        negated = n.operator.startswith("NOT ") or n.operator.startswith("IS NOT ")
        if kind == "IS NULL":
            return E.IsNull(go(ops[0]), negated)
        if kind == "IS MISSING":  # (made by composing steps: semantics §11.16)
            operand = go(ops[0])
            if not isinstance(operand, E.Ref) or operand.input is not None:
                what = ops[0].name if isinstance(ops[0], Column) else "IS MISSING's operand"
                raise refuse(n.pos, f"{what} is no field of the record")
            return E.IsNull(operand, negated, missing=True)
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


def _unit(node: Expr, name: str, refuse: Any, clause: str) -> str:
    """A date part written as a bare word (``minute``, ``mi``, ``yyyy`` ...)."""
    found = (
        E.DATE_PARTS.get(node.parts[0].lower())
        if isinstance(node, Column) and len(node.parts) == 1
        else None
    )
    if found is None:
        shown = node.name if isinstance(node, Column) else "this"
        raise refuse(
            _pos(node),
            f"{name}({shown}, ...) in {clause}: the date part is one of year, quarter, month, "
            "dayofyear, week, weekday, day, hour, minute, second, millisecond, microsecond "
            "(or their abbreviations)",
        )
    return found


def _time_literal(node: Expr, name: str, refuse: Any) -> None:
    """A text literal used as a time must be in the one form sparktide reads."""
    if isinstance(node, Literal) and isinstance(node.value, str):
        problem = instant_or_problem(node.value)
        if isinstance(problem, str):
            raise refuse(
                node.pos,
                f"{name}'s time {node.value!r} {problem}: sparktide reads times as "
                "ISO-8601 text with a zone, such as '2026-03-01T09:00:00Z'",
            )


def _datediff(call: Call, go: Callable[[Expr], E.Expr], refuse: Any, clause: str) -> E.Expr:
    """``DATEDIFF(unit, start, end)`` outside a JOIN's ON: the count of unit boundaries
    crossed (:class:`sparktide.expr.DateDiff`); each time an expression (a text literal
    must be an ISO-8601 time with a zone)."""
    if call.star or call.distinct or len(call.args) != 3:
        raise refuse(call.pos, "DATEDIFF(unit, start, end) takes a unit and two times")
    unit, *times = call.args
    part = _unit(unit, "DATEDIFF", refuse, clause)
    for time in times:
        _time_literal(time, "DATEDIFF", refuse)
    part = "day" if part in ("dayofyear", "weekday") else part
    return E.DateDiff(part, go(times[0]), go(times[1]))


def _function(call: Call, go: Callable[[Expr], E.Expr], refuse: Any) -> E.Expr:
    """A scalar function (:data:`sparktide.expr.FUNCTIONS`), checked by the expression
    language's own parser (arity, patterns, ROUND's length)."""
    name = call.function.upper()
    if call.star or call.distinct:
        raise refuse(call.pos, f"{name}(...) takes values, not * or DISTINCT")
    args = list(call.args)
    unit = None
    if name in E.UNIT_FUNCTIONS and args:
        unit = _unit(args[0], name, refuse, "this query")
        args = args[1:]
    if name in ("DATEADD", "DATEPART", "DATENAME", "DAY", "MONTH", "YEAR") and args:
        _time_literal(args[-1], name, refuse)
    made = E.Func(name, tuple(go(a) for a in args), unit)
    try:
        return E.parse_expression(E.to_text(made))
    except ConfigError as exc:
        reason = str(exc).split(": ", 2)[-1]
        raise refuse(call.pos, reason) from None


def _case(node: Operation, go: Callable[[Expr], E.Expr]) -> E.Expr:
    """``CASE`` (searched or simple, with or without ``ELSE``)."""
    operands = list(node.operands)
    operand = go(operands.pop(0)) if " x" in node.operator else None
    default = go(operands.pop()) if node.operator.endswith("ELSE") else None
    whens = []
    for i in range(0, len(operands), 2):
        condition, result = go(operands[i]), go(operands[i + 1])
        if operand is not None:
            condition = E.Binary("=", operand, condition)
        whens.append((condition, result))
    return E.Case(tuple(whens), default)


def _pos(node: Expr) -> Pos:
    return node.pos
