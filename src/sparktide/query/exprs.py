"""Stream Analytics expressions → job-file expressions (:mod:`sparktide.expr`).

``WHERE`` conditions, ``HAVING`` conditions and computed ``SELECT`` columns become the
job's ``[filter] where``, ``[window] having`` and ``[select]``. Columns and function
calls are resolved by the caller (input fields for ``WHERE``; group-by columns,
aggregates and ``System.Timestamp()`` over a window); ``CAST``, ``CASE`` and other
functions are refused by name, with their place.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sparktide import expr as E
from sparktide.query.ast import Call, Column, Expr, Literal, Pos

__all__ = ["convert"]

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


def _pos(node: Expr) -> Pos:
    return node.pos
