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
    "ACCESS_FUNCTIONS",
    "ARITHMETIC",
    "CALENDAR_UNITS",
    "CAST_TYPES",
    "COMPARISONS",
    "COMPOSITE_TYPES",
    "DATEDIFF_UNITS",
    "DATE_PARTS",
    "EVENT_INPUT",
    "FUNCTIONS",
    "INT64",
    "OTHER",
    "SYSTEM_TIMESTAMP",
    "UNIT_FUNCTIONS",
    "Between",
    "Binary",
    "Case",
    "Cast",
    "Composite",
    "DateDiff",
    "Expr",
    "Func",
    "In",
    "IsNull",
    "Like",
    "Lit",
    "Ref",
    "Unary",
    "conjunction",
    "is_other",
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


#: The date parts of ``DATEPART``, ``DATENAME`` and ``DATEADD``, and ``DATEDIFF``'s
#: calendar units: Stream Analytics' names and abbreviations (any case) → the canonical
#: name (the fixed-length ones are :data:`DATEDIFF_UNITS` too).
DATE_PARTS: dict[str, str] = {
    **dict.fromkeys(("year", "yy", "yyyy"), "year"),
    **dict.fromkeys(("quarter", "qq", "q"), "quarter"),
    **dict.fromkeys(("month", "mm", "m"), "month"),
    **dict.fromkeys(("dayofyear", "dy", "y"), "dayofyear"),
    **dict.fromkeys(("week", "wk", "ww"), "week"),
    **dict.fromkeys(("weekday", "dw", "w"), "weekday"),
    **{k: v[0] for k, v in DATEDIFF_UNITS.items()},
}
#: The units whose boundaries are the calendar's, not multiples of a length.
CALENDAR_UNITS = ("year", "quarter", "month", "week")
#: ``CAST``'s target types (any case) → the canonical name.
CAST_TYPES: dict[str, str] = {
    "bigint": "bigint",
    "float": "float",
    "nvarchar(max)": "nvarchar(max)",
    "datetime": "datetime",
    "bit": "bit",
    "record": "record",
    "array": "array",
}
#: The ``CAST`` types whose values are JSON objects and arrays, and their names in
#: messages (``'abc' is not a record``).
COMPOSITE_TYPES = {"record": "a record", "array": "an array"}
#: The scalar functions (canonical upper-case name → (fewest, most) arguments; ``-1``:
#: no limit). ``DATEADD``, ``DATEPART`` and ``DATENAME`` take a date part first, held
#: in :attr:`Func.unit` (not counted here).
FUNCTIONS: dict[str, tuple[int, int]] = {
    "ABS": (1, 1),
    "CEILING": (1, 1),
    "FLOOR": (1, 1),
    "ROUND": (2, 2),
    "POWER": (2, 2),
    "SQRT": (1, 1),
    "SQUARE": (1, 1),
    "EXP": (1, 1),
    "SIGN": (1, 1),
    "CONCAT": (2, -1),
    "LEN": (1, 1),
    "LOWER": (1, 1),
    "UPPER": (1, 1),
    "SUBSTRING": (3, 3),
    "REPLACE": (3, 3),
    "CHARINDEX": (2, 3),
    "PATINDEX": (2, 2),
    "REGEXMATCH": (2, 2),
    "LTRIM": (1, 1),
    "RTRIM": (1, 1),
    "TRIM": (1, 1),
    "DATEADD": (2, 2),
    "DATEPART": (1, 1),
    "DATENAME": (1, 1),
    "DAY": (1, 1),
    "MONTH": (1, 1),
    "YEAR": (1, 1),
    "DATEFROMPARTS": (3, 3),
    "DATETIMEFROMPARTS": (7, 7),
    "GETRECORDPROPERTYVALUE": (2, 2),
    "GETARRAYELEMENT": (2, 2),
    "GETARRAYLENGTH": (1, 1),
    "COALESCE": (2, -1),
    "GETTYPE": (1, 1),
    "PARSEINT": (2, 2),
}
#: The functions that look into a record or an array (:mod:`sparktide.expr.records`).
ACCESS_FUNCTIONS = ("GETRECORDPROPERTYVALUE", "GETARRAYELEMENT", "GETARRAYLENGTH")
#: Functions that take a date part as their first argument.
UNIT_FUNCTIONS = ("DATEADD", "DATEPART", "DATENAME")


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


class Composite(_Other):
    """An array or object as expressions see it: :data:`OTHER` to every operator, but
    holding its JSON value (``raw``) for the record and array functions."""

    def __new__(cls, raw: Any) -> Composite:
        made = object.__new__(cls)
        made.raw = raw
        return made

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def __repr__(self) -> str:
        return f"Composite({self.raw!r})"


def is_other(value: Any) -> bool:
    """Whether ``value`` is an array or object (:data:`OTHER` or a :class:`Composite`)."""
    return isinstance(value, _Other)


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


def conjunction(terms: list[Expr] | tuple[Expr, ...]) -> Expr:
    """``terms[0] AND terms[1] AND ...``, in order (one term or more)."""
    condition = terms[0]
    for term in terms[1:]:
        condition = Binary("AND", condition, term)
    return condition


@dataclass(frozen=True)
class IsNull:
    """``x IS [NOT] NULL``; with ``missing``, ``x IS [NOT] MISSING``: whether the record
    has no field ``x`` at all (a field holding null is not missing), ``x`` a
    :class:`Ref` of the record's own fields (semantics §11.16)."""

    operand: Expr
    negated: bool = False
    missing: bool = False


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
        """The unit's length in microseconds (0 for :data:`CALENDAR_UNITS`)."""
        return DATEDIFF_UNITS[self.unit][1] if self.unit in DATEDIFF_UNITS else 0


@dataclass(frozen=True)
class Func:
    """A scalar function call, ``name(args)`` (``name``: a key of :data:`FUNCTIONS`);
    ``unit`` is the canonical date part of ``DATEADD``, ``DATEPART`` and ``DATENAME``."""

    name: str
    args: tuple[Expr, ...]
    unit: str | None = None


@dataclass(frozen=True)
class Case:
    """``CASE WHEN c THEN r ... [ELSE d] END``; the simple form ``CASE x WHEN v THEN r``
    is held with ``x = v`` as each condition."""

    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None = None


@dataclass(frozen=True)
class Cast:
    """``CAST(x AS type)`` (``safe``: ``TRY_CAST``, null where a ``CAST`` fails);
    ``type``: a value of :data:`CAST_TYPES`."""

    operand: Expr
    type: str
    safe: bool = False


#: ``System.Timestamp()`` in an event's ``[filter]`` or ``[select]``: the event's system
#: timestamp (semantics §11.17), as ISO-8601 text. Its key is no field's: a column name
#: holds no parenthesis.
SYSTEM_TIMESTAMP = Ref("Timestamp()", "System")
#: ``System.Input()``: the name of the union's input an event comes from (semantics
#: §11.22), as text. A ``[select]`` column with an expression per input (§11.21) reads
#: it to choose one; a union's window reads it in its grouping columns and aggregates of
#: expressions. Its key is no field's either.
EVENT_INPUT = Ref("Input()", "System")

Expr = Ref | Lit | Unary | Binary | IsNull | In | Between | Like | DateDiff | Func | Case | Cast
