"""The reference evaluator: an expression's value over one record, with SQL's
three-valued logic and JSON's values (:mod:`sparktide.expr` lists the rules)."""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from sparktide.expr import casts, functions, nodes, records
from sparktide.expr.casts import finite, is_number
from sparktide.expr.walk import desugar
from sparktide.time import instant_or_problem

__all__ = ["ConversionError", "datediff", "evaluate", "like_regex", "passes", "value_of"]

ConversionError = casts.ConversionError


def value_of(value: Any) -> Any:
    """A field's value as expressions see it: ``None``, ``bool``, a 64-bit ``int``, a
    finite ``float``, ``str``, or :data:`OTHER` (an integer beyond 64 bits becomes a
    float; dates and times from Parquet are read as their ISO text)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if nodes.INT64[0] <= value <= nodes.INT64[1] else float(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    import datetime as _dt

    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        from sparktide.core.records import jsonable

        return jsonable(value)
    if isinstance(value, (list, dict)):
        return nodes.Composite(value)
    return nodes.OTHER


def _compare(op: str, a: Any, b: Any) -> bool | None:
    if a is None or b is None or nodes.is_other(a) or nodes.is_other(b):
        return None
    if is_number(a) and is_number(b):
        if not (isinstance(a, int) and isinstance(b, int)):
            a, b = float(a), float(b)
    elif isinstance(a, bool) and isinstance(b, bool):
        pass
    elif isinstance(a, str) and isinstance(b, str):
        pass
    else:
        return None
    if op == "=":
        return a == b
    if op == "<>":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


def _arith(op: str, a: Any, b: Any) -> Any:
    if not (is_number(a) and is_number(b)):
        return None
    if op == "/":
        return None if b == 0 else finite(float(a) / float(b))
    if op == "%":
        if b == 0:
            return None
        if isinstance(a, int) and isinstance(b, int):
            r = abs(a) % abs(b)
            return -r if a < 0 else r
        return math.fmod(float(a), float(b))
    if isinstance(a, int) and isinstance(b, int):
        r = a + b if op == "+" else a - b if op == "-" else a * b
        return r if nodes.INT64[0] <= r <= nodes.INT64[1] else None
    x, y = float(a), float(b)
    try:
        r2 = x + y if op == "+" else x - y if op == "-" else x * y
    except OverflowError:  # pragma: no cover - IEEE arithmetic gives inf, not an error
        return None
    return finite(r2)


def _instant(value: Any) -> int | None:
    """A value as ``DATEDIFF`` reads it: the instant of an ISO-8601 time text with a zone
    (microseconds), else ``None``."""
    if not isinstance(value, str):
        return None
    instant = instant_or_problem(value)
    return instant if isinstance(instant, int) else None


def datediff(unit: int, start: int, end: int) -> int:
    """``DATEDIFF``: the number of boundaries of ``unit`` (microseconds; a unit of a day
    or less, so its boundaries are multiples of it since the epoch) crossed from the
    instant ``start`` to ``end``: ``floor(end / unit) - floor(start / unit)``."""
    return end // unit - start // unit


def _truth(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


@functools.lru_cache(maxsize=256)
def like_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression of a LIKE pattern (``%``: any text, ``_``: one character)."""
    parts = []
    for char in pattern:
        parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
    return re.compile("".join(parts), re.DOTALL)


def evaluate(expr: nodes.Expr, lookup: Any, *, strict: bool = False, present: Any = None) -> Any:
    """The value of ``expr`` (see the module docstring), with ``lookup(name)`` giving a
    column's value as :func:`value_of` reads it (``name``: :attr:`Ref.key`) and
    ``present(name)`` whether the record has the field at all (``IS MISSING``; an
    expression with one needs it).

    Returns ``None`` (null), a ``bool``, an ``int``, a ``float``, a ``str`` or
    :data:`OTHER`. A ``CAST`` that fails is null unless ``strict``.

    Raises
    ------
    ConversionError
        With ``strict``, at the first ``CAST`` (left to right, only the taken branch of a
        ``CASE``) that cannot convert its value.
    """
    return _Evaluator(lookup, strict, present).value(expr)


class _Evaluator:
    def __init__(self, lookup: Any, strict: bool, present: Any) -> None:
        self.lookup = lookup
        self.strict = strict
        self.present = present

    def value(self, expr: nodes.Expr) -> Any:
        if isinstance(expr, nodes.Ref):
            return self.lookup(expr.key)
        if isinstance(expr, nodes.Lit):
            return value_of(expr.value)
        if isinstance(expr, nodes.DateDiff):
            start = _instant(self.value(expr.start))
            end = _instant(self.value(expr.end))
            if start is None or end is None:
                return None
            if expr.unit in nodes.CALENDAR_UNITS:
                return functions.datediff_calendar(expr.unit, start, end)
            return datediff(expr.micros, start, end)
        if isinstance(expr, nodes.Func) and expr.name == "COALESCE":
            return self.value(desugar(expr))  # (its arguments in order: a CASE)
        if isinstance(expr, nodes.Func):
            args = [self.value(a) for a in expr.args]
            if expr.name in nodes.ACCESS_FUNCTIONS:
                return records.record_access(expr, args)
            return functions.call(expr, args)
        if isinstance(expr, nodes.Cast):
            operand = self.value(expr.operand)
            return casts.cast(operand, expr.type, expr.safe or not self.strict)
        if isinstance(expr, nodes.Case):
            for condition, result in expr.whens:
                if self.value(condition) is True:
                    return self.value(result)
            return None if expr.default is None else self.value(expr.default)
        if isinstance(expr, nodes.Unary):
            value = self.value(expr.operand)
            if expr.op == "NOT":
                truth = _truth(value)
                return None if truth is None else not truth
            if isinstance(value, int) and not isinstance(value, bool):
                return -value if -value <= nodes.INT64[1] else None
            return -value if isinstance(value, float) else None
        if isinstance(expr, nodes.Binary):
            return self.binary(expr)
        if isinstance(expr, nodes.IsNull) and expr.missing:
            assert isinstance(expr.operand, nodes.Ref) and self.present is not None
            result = not self.present(expr.operand.key)
            return not result if expr.negated else result
        if isinstance(expr, nodes.IsNull):
            result = self.value(expr.operand) is None
            return not result if expr.negated else result
        if isinstance(expr, nodes.Like):
            value = self.value(expr.operand)
            if not isinstance(value, str):
                return None
            matched = like_regex(expr.pattern).fullmatch(value) is not None
            return not matched if expr.negated else matched
        return self.value(desugar(expr))  # IN, BETWEEN

    def binary(self, expr: nodes.Binary) -> Any:
        op = expr.op
        if op in ("AND", "OR"):
            a = _truth(self.value(expr.left))
            b = _truth(self.value(expr.right))
            if op == "AND":
                if a is False or b is False:
                    return False
                return None if a is None or b is None else True
            if a is True or b is True:
                return True
            return None if a is None or b is None else False
        a, b = self.value(expr.left), self.value(expr.right)
        if op in nodes.COMPARISONS:
            return _compare(op, a, b)
        return _arith(op, a, b)


def passes(expr: nodes.Expr, fields: dict[str, Any]) -> bool:
    """Whether a record with ``fields`` passes the filter ``expr`` (the predicate is
    true: null and false both fail)."""
    lookup = lambda name: value_of(fields.get(name))  # noqa: E731
    return evaluate(expr, lookup, present=fields.__contains__) is True
