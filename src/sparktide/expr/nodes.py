"""The expression tree: one frozen dataclass per kind of node, and the values they see.

:func:`~sparktide.expr.parse.parse_expression` builds these trees;
:func:`~sparktide.expr.evaluation.evaluate` (the reference engine) and
``sparktide.spark.expr`` (Spark SQL) evaluate the same trees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparktide.time import DAY, HOUR, MILLISECOND, MINUTE, SECOND

__all__ = [
    "ARITHMETIC",
    "COMPARISONS",
    "DATEDIFF_UNITS",
    "INT64",
    "OTHER",
    "Between",
    "Binary",
    "DateDiff",
    "Expr",
    "In",
    "IsNull",
    "Like",
    "Lit",
    "Ref",
    "Unary",
]

#: The range of a 64-bit integer: the integers expressions compute with.
INT64 = (-(2**63), 2**63 - 1)
COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")
ARITHMETIC = ("+", "-", "*", "/", "%")
#: ``DATEDIFF``'s units, Stream Analytics' names and abbreviations (any case): the
#: canonical name and the length in microseconds.
DATEDIFF_UNITS: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("day", "dd", "d"), ("day", DAY)),
    **dict.fromkeys(("hour", "hh"), ("hour", HOUR)),
    **dict.fromkeys(("minute", "mi", "n"), ("minute", MINUTE)),
    **dict.fromkeys(("second", "ss", "s"), ("second", SECOND)),
    **dict.fromkeys(("millisecond", "ms"), ("millisecond", MILLISECOND)),
    **dict.fromkeys(("microsecond", "mcs"), ("microsecond", 1)),
}


class _Other:
    """The value of an array or object field: not null, comparable to nothing."""

    _instance: _Other | None = None

    def __new__(cls) -> _Other:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OTHER"


#: The value of an array or object (or any value JSON has no scalar for).
OTHER = _Other()


@dataclass(frozen=True)
class Ref:
    """A column: a top-level field, or a window record's column; with ``input``, the
    field ``name`` of that input's record in a join's match (``EntryStream.TollId``)."""

    name: str
    input: str | None = None

    @property
    def key(self) -> str:
        """``name``, or ``input.name`` for a qualified name (column names hold no dot, so
        the two never meet)."""
        return self.name if self.input is None else f"{self.input}.{self.name}"


@dataclass(frozen=True)
class Lit:
    """A literal: ``int``, ``float``, ``str``, ``bool`` or ``None``."""

    value: Any


@dataclass(frozen=True)
class Unary:
    """``-x`` (``op = "-"``) or ``NOT x`` (``op = "NOT"``)."""

    op: str
    operand: Expr


@dataclass(frozen=True)
class Binary:
    """``a op b``: a comparison (``= <> < <= > >=``), arithmetic (``+ - * / %``),
    ``AND`` or ``OR``."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class IsNull:
    """``x IS [NOT] NULL``."""

    operand: Expr
    negated: bool = False


@dataclass(frozen=True)
class In:
    """``x [NOT] IN (a, b, ...)``."""

    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False


@dataclass(frozen=True)
class Between:
    """``x [NOT] BETWEEN low AND high``."""

    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False


@dataclass(frozen=True)
class Like:
    """``x [NOT] LIKE 'pattern'``."""

    operand: Expr
    pattern: str
    negated: bool = False


@dataclass(frozen=True)
class DateDiff:
    """``DATEDIFF(unit, start, end)``: the number of ``unit`` boundaries crossed from
    ``start`` to ``end`` (``unit``: the canonical name, see :data:`DATEDIFF_UNITS`)."""

    unit: str
    start: Expr
    end: Expr

    @property
    def micros(self) -> int:
        """The unit's length in microseconds."""
        return DATEDIFF_UNITS[self.unit][1]


Expr = Ref | Lit | Unary | Binary | IsNull | In | Between | Like | DateDiff
