"""Expressions of a job file: ``[filter] where``, ``[window] having`` and ``[select]``.

A small SQL subset (grammar ``expr.lark``, LALR(1), parsed by lark): column references
(``speed``, ``[lane-id]``, and ``input.field`` for the records of a join), numbers,
``'strings'``, ``true``/``false``/``null``, ``= <> != < <= > >=``, ``AND OR NOT``,
``+ - * / %``, unary minus, ``IS [NOT] NULL``, ``[NOT] IN (...)``,
``[NOT] BETWEEN a AND b``, ``[NOT] LIKE 'pattern'`` and ``DATEDIFF(unit, start, end)``.

The values are those of JSON, with SQL's three-valued logic (``docs/semantics.md``):

- a missing field is null; a value is an *integer* (64-bit), a *float* (a double), a
  *string*, a *boolean*, null, or *other* (arrays, objects: only ``IS NULL`` sees them);
  an integer beyond 64 bits is read as a float;
- comparisons between numbers are numeric (two integers exactly, an integer and a float
  as doubles), strings compare by code point, booleans ``false < true``; a comparison
  between other kinds (a string and a number, a boolean and a number ...) is null;
- ``+ - *`` of two integers is an integer (null when it leaves 64 bits), of numbers
  otherwise a float; ``/`` is always a float division; ``%`` is the remainder with the
  sign of the dividend (SQL's, not Python's); division or remainder by zero is null; a
  float result beyond the range of a double is null; arithmetic on anything but numbers
  is null;
- ``AND``, ``OR``, ``NOT`` are Kleene's; an operand that is not a boolean is null;
- ``x IN (a, b)`` is ``x = a OR x = b``; ``x BETWEEN a AND b`` is ``x >= a AND x <= b``;
- ``LIKE`` takes a string literal pattern (``%`` any text, ``_`` one character, no
  escape character) and matches strings only, case-sensitively;
- ``DATEDIFF(unit, start, end)`` is Stream Analytics' (and SQL Server's): the number of
  ``unit`` boundaries crossed from ``start`` to ``end`` (``DATEDIFF(minute,
  '...T09:00:59Z', '...T09:01:00Z')`` is 1), an integer, negative when ``end`` is
  before ``start``; the times are ISO-8601 text with a zone (as sparktide reads every
  time); null when either is null, not a string, or not such a time. Units: ``day``
  (``dd``, ``d``), ``hour`` (``hh``), ``minute`` (``mi``, ``n``), ``second`` (``ss``,
  ``s``), ``millisecond`` (``ms``), ``microsecond`` (``mcs``); days are UTC days.

A row passes a filter only when the predicate is true. :func:`evaluate` is the reference
engine's evaluator; ``sparktide.spark.expr`` compiles the same trees to Spark SQL.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from sparktide.errors import ConfigError
from sparktide.time import DAY, HOUR, MILLISECOND, MINUTE, SECOND, instant_or_problem

__all__ = [
    "DATEDIFF_UNITS",
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
    "datediff",
    "desugar",
    "evaluate",
    "like_regex",
    "parse_expression",
    "passes",
    "ref_nodes",
    "references",
    "to_text",
    "value_of",
]

INT64 = (-(2**63), 2**63 - 1)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
_KEYWORDS = {"and", "or", "not", "between", "is", "null", "like", "in", "true", "false"}
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
_UNIT_HELP = (
    "day (dd, d), hour (hh), minute (mi, n), second (ss, s), millisecond (ms) or microsecond (mcs)"
)


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


# ---------------------------------------------------------------------- parsing
@functools.cache
def _parser() -> Lark:
    grammar = resources.files("sparktide").joinpath("expr.lark").read_text("utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=False, maybe_placeholders=False)


class _Build(Transformer[Token, Expr]):
    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key

    def fail(self, token: Token, message: str) -> ConfigError:
        return ConfigError(self.key, f"column {token.column}: {message}")

    def number(self, items: list[Token]) -> Expr:
        (token,) = items
        text = str(token)
        if "." not in text and "e" not in text.lower():
            return Lit(int(text))
        value = float(text)
        if math.isinf(value):
            raise self.fail(token, f"the number {text} is beyond the range of a double")
        return Lit(value)

    def string(self, items: list[Token]) -> Expr:
        return Lit(str(items[0])[1:-1].replace("''", "'"))

    def null(self, items: list[Token]) -> Expr:
        return Lit(None)

    def true(self, items: list[Token]) -> Expr:
        return Lit(True)

    def false(self, items: list[Token]) -> Expr:
        return Lit(False)

    def _column(self, token: Token) -> str:
        text = str(token)
        name = text[1:-1].replace("]]", "]") if token.type == "BRACKETED" else text
        if not _COLUMN.match(name):
            raise self.fail(
                token,
                f"{name!r} is not a column name (letters, digits, '_' or '-', not starting "
                "with a digit)",
            )
        return name

    def ref(self, items: list[Token]) -> Expr:
        (token,) = items
        return Ref(self._column(token))

    def qualified(self, items: list[Token]) -> Expr:
        first, second = items
        return Ref(self._column(second), self._column(first))

    def call(self, items: list[Any]) -> Expr:
        token, *args = items
        function = str(token)
        if function.lower() != "datediff":
            raise self.fail(
                token,
                f"unknown function {function}(...); the one function is DATEDIFF(unit, start, end)",
            )
        if len(args) != 3:
            raise self.fail(
                token,
                f"{function}(...) takes a unit and two times, as DATEDIFF(minute, start, end); "
                f"got {len(args)} argument{'' if len(args) == 1 else 's'}",
            )
        unit, start, end = args
        found = (
            DATEDIFF_UNITS.get(unit.name.lower())
            if isinstance(unit, Ref) and unit.input is None
            else None
        )
        if found is None:
            shown = to_text(unit)
            raise self.fail(
                token,
                f"DATEDIFF({shown}, ...): the unit is {_UNIT_HELP}, written as a bare word "
                "(DATEDIFF(minute, start, end))",
            )
        return DateDiff(found[0], start, end)

    def sign(self, items: list[Any]) -> Expr:
        op, operand = items
        return operand if str(op) == "+" else Unary("-", operand)

    def not_op(self, items: list[Any]) -> Expr:
        return Unary("NOT", items[1])

    def and_op(self, items: list[Any]) -> Expr:
        return Binary("AND", items[0], items[2])

    def or_op(self, items: list[Any]) -> Expr:
        return Binary("OR", items[0], items[2])

    def arith(self, items: list[Any]) -> Expr:
        return Binary(str(items[1]), items[0], items[2])

    def compare(self, items: list[Any]) -> Expr:
        op = str(items[1])
        return Binary("<>" if op == "!=" else op, items[0], items[2])

    @staticmethod
    def _negated(items: list[Any]) -> tuple[bool, list[Any]]:
        rest = [i for i in items if not (isinstance(i, Token) and i.type == "NOT")]
        return len(rest) != len(items), rest

    def between(self, items: list[Any]) -> Expr:
        negated, rest = self._negated(items)
        operand, _, low, _, high = rest
        return Between(operand, low, high, negated)

    def is_null(self, items: list[Any]) -> Expr:
        negated, rest = self._negated(items)
        return IsNull(rest[0], negated)

    def like(self, items: list[Any]) -> Expr:
        negated, rest = self._negated(items)
        operand, keyword, pattern = rest
        if not isinstance(pattern, Lit) or not isinstance(pattern.value, str):
            raise self.fail(keyword, "LIKE takes a 'string' pattern")
        return Like(operand, pattern.value, negated)

    def in_list(self, items: list[Any]) -> Expr:
        negated, rest = self._negated(items)
        operand, _, *values = rest
        return In(operand, tuple(values), negated)


@functools.lru_cache(maxsize=256)
def parse_expression(text: str, key: str = "expression") -> Expr:
    """Parse ``text`` into an expression tree.

    Parameters
    ----------
    text
        The expression, such as ``"speed > 50 AND lane = 'A'"``.
    key
        The job-file key it comes from, named by errors.

    Raises
    ------
    ConfigError
        Naming ``key`` and the column of the first mistake.
    """
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(key, f'expected an expression such as "speed > 50", got {text!r}')
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        raise ConfigError(key, _syntax_message(text, exc)) from None
    try:
        return _Build(key).transform(tree)
    except Exception as exc:  # lark wraps errors raised in callbacks
        inner = getattr(exc, "orig_exc", exc)
        if isinstance(inner, ConfigError):
            raise inner from None
        raise


def _syntax_message(text: str, exc: UnexpectedInput) -> str:
    if isinstance(exc, UnexpectedCharacters):
        char = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        hint = " (strings use 'single quotes'; names with other characters use [brackets])"
        return f"column {exc.column}: unexpected character {char!r}" + (
            hint if char in '"`' else ""
        )
    if isinstance(exc, UnexpectedEOF) or (
        isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
    ):
        return f"the expression {text!r} ends too early"
    assert isinstance(exc, UnexpectedToken)
    if str(exc.token) == ".":
        return (
            f"column {exc.column}: unexpected '.': a name is a column or input.column "
            "(nested fields are not read)"
        )
    return f"column {exc.column}: unexpected {str(exc.token)!r}"


# ---------------------------------------------------------------------- text
_LEVEL = {"OR": 1, "AND": 2, "NOT": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}


def _level(expr: Expr) -> int:
    if isinstance(expr, Binary):
        return _LEVEL["cmp"] if expr.op in COMPARISONS else _LEVEL[expr.op]
    if isinstance(expr, Unary):
        return 3 if expr.op == "NOT" else 7
    if isinstance(expr, (IsNull, In, Between, Like)):
        return 4
    return 8


def _wrap(expr: Expr, at_least: int) -> str:
    text = to_text(expr)
    return f"({text})" if _level(expr) < at_least else text


def _literal(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        text = repr(value)
        return text if ("." in text or "e" in text) else text + ".0"
    return str(value)


def _name(name: str) -> str:
    if _NAME.match(name) and name.lower() not in _KEYWORDS:
        return name
    return "[" + name.replace("]", "]]") + "]"


def to_text(expr: Expr) -> str:
    """The canonical text of ``expr``: it parses back into an equal tree."""
    if isinstance(expr, Ref):
        if expr.input is not None:
            return f"{_name(expr.input)}.{_name(expr.name)}"
        return _name(expr.name)
    if isinstance(expr, DateDiff):
        return f"DATEDIFF({expr.unit}, {to_text(expr.start)}, {to_text(expr.end)})"
    if isinstance(expr, Lit):
        return _literal(expr.value)
    if isinstance(expr, Unary):
        if expr.op == "NOT":
            return f"NOT {_wrap(expr.operand, 3)}"
        inner = _wrap(expr.operand, 8 if isinstance(expr.operand, Unary) else 7)
        return f"-{inner}"
    if isinstance(expr, Binary):
        level = _level(expr)
        if expr.op in COMPARISONS:
            return f"{_wrap(expr.left, 5)} {expr.op} {_wrap(expr.right, 5)}"
        return f"{_wrap(expr.left, level)} {expr.op} {_wrap(expr.right, level + 1)}"
    not_ = "NOT " if expr.negated else ""
    if isinstance(expr, IsNull):
        return f"{_wrap(expr.operand, 5)} IS {not_}NULL"
    if isinstance(expr, In):
        items = ", ".join(to_text(i) for i in expr.items)
        return f"{_wrap(expr.operand, 5)} {not_}IN ({items})"
    if isinstance(expr, Between):
        return (
            f"{_wrap(expr.operand, 5)} {not_}BETWEEN {_wrap(expr.low, 5)} AND {_wrap(expr.high, 5)}"
        )
    return f"{_wrap(expr.operand, 5)} {not_}LIKE {_literal(expr.pattern)}"


def references(expr: Expr) -> list[str]:
    """The column names ``expr`` reads (:attr:`Ref.key`: ``input.field`` for qualified
    names), in first-use order."""
    return list(dict.fromkeys(ref.key for ref in ref_nodes(expr)))


def ref_nodes(expr: Expr) -> list[Ref]:
    """The columns ``expr`` reads, each once, in first-use order."""
    out: dict[Ref, None] = {}

    def walk(node: Expr) -> None:
        if isinstance(node, Ref):
            out.setdefault(node)
        elif isinstance(node, DateDiff):
            walk(node.start)
            walk(node.end)
        elif isinstance(node, Unary):
            walk(node.operand)
        elif isinstance(node, Binary):
            walk(node.left)
            walk(node.right)
        elif isinstance(node, IsNull | Like):
            walk(node.operand)
        elif isinstance(node, In):
            walk(node.operand)
            for item in node.items:
                walk(item)
        elif isinstance(node, Between):
            walk(node.operand)
            walk(node.low)
            walk(node.high)

    walk(expr)
    return list(out)


def desugar(expr: Expr) -> Expr:
    """``expr`` with ``IN`` and ``BETWEEN`` written as comparisons joined by ``OR``/``AND``
    and ``IS NOT NULL``/``NOT LIKE`` as ``NOT``: the forms both engines evaluate."""
    if isinstance(expr, Unary):
        return Unary(expr.op, desugar(expr.operand))
    if isinstance(expr, Binary):
        return Binary(expr.op, desugar(expr.left), desugar(expr.right))
    if isinstance(expr, IsNull):
        inner: Expr = IsNull(desugar(expr.operand))
        return Unary("NOT", inner) if expr.negated else inner
    if isinstance(expr, Like):
        inner = Like(desugar(expr.operand), expr.pattern)
        return Unary("NOT", inner) if expr.negated else inner
    if isinstance(expr, In):
        operand = desugar(expr.operand)
        inner = Binary("=", operand, desugar(expr.items[0]))
        for item in expr.items[1:]:
            inner = Binary("OR", inner, Binary("=", operand, desugar(item)))
        return Unary("NOT", inner) if expr.negated else inner
    if isinstance(expr, DateDiff):
        return DateDiff(expr.unit, desugar(expr.start), desugar(expr.end))
    if isinstance(expr, Between):
        operand = desugar(expr.operand)
        inner = Binary(
            "AND",
            Binary(">=", operand, desugar(expr.low)),
            Binary("<=", operand, desugar(expr.high)),
        )
        return Unary("NOT", inner) if expr.negated else inner
    return expr


# ---------------------------------------------------------------------- evaluation
def value_of(value: Any) -> Any:
    """A field's value as expressions see it: ``None``, ``bool``, a 64-bit ``int``, a
    finite ``float``, ``str``, or :data:`OTHER` (an integer beyond 64 bits becomes a
    float; dates and times from Parquet are read as their ISO text)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if INT64[0] <= value <= INT64[1] else float(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    import datetime as _dt

    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        from sparktide.core.records import jsonable

        return jsonable(value)
    return OTHER


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _compare(op: str, a: Any, b: Any) -> bool | None:
    if a is None or b is None or a is OTHER or b is OTHER:
        return None
    if _is_number(a) and _is_number(b):
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
    if not (_is_number(a) and _is_number(b)):
        return None
    if op == "/":
        return None if b == 0 else _finite(float(a) / float(b))
    if op == "%":
        if b == 0:
            return None
        if isinstance(a, int) and isinstance(b, int):
            r = abs(a) % abs(b)
            return -r if a < 0 else r
        return math.fmod(float(a), float(b))
    if isinstance(a, int) and isinstance(b, int):
        r = a + b if op == "+" else a - b if op == "-" else a * b
        return r if INT64[0] <= r <= INT64[1] else None
    x, y = float(a), float(b)
    try:
        r2 = x + y if op == "+" else x - y if op == "-" else x * y
    except OverflowError:  # pragma: no cover - IEEE arithmetic gives inf, not an error
        return None
    return _finite(r2)


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


def evaluate(expr: Expr, lookup: Any) -> Any:
    """The value of ``expr`` (see the module docstring), with ``lookup(name)`` giving a
    column's value as :func:`value_of` reads it (``name``: :attr:`Ref.key`).

    Returns ``None`` (null), a ``bool``, an ``int``, a ``float``, a ``str`` or
    :data:`OTHER`.
    """
    if isinstance(expr, Ref):
        return lookup(expr.key)
    if isinstance(expr, Lit):
        return value_of(expr.value)
    if isinstance(expr, DateDiff):
        start = _instant(evaluate(expr.start, lookup))
        end = _instant(evaluate(expr.end, lookup))
        return None if start is None or end is None else datediff(expr.micros, start, end)
    if isinstance(expr, Unary):
        value = evaluate(expr.operand, lookup)
        if expr.op == "NOT":
            truth = _truth(value)
            return None if truth is None else not truth
        if isinstance(value, int) and not isinstance(value, bool):
            return -value if -value <= INT64[1] else None
        return -value if isinstance(value, float) else None
    if isinstance(expr, Binary):
        op = expr.op
        if op in ("AND", "OR"):
            a = _truth(evaluate(expr.left, lookup))
            b = _truth(evaluate(expr.right, lookup))
            if op == "AND":
                if a is False or b is False:
                    return False
                return None if a is None or b is None else True
            if a is True or b is True:
                return True
            return None if a is None or b is None else False
        a, b = evaluate(expr.left, lookup), evaluate(expr.right, lookup)
        if op in COMPARISONS:
            return _compare(op, a, b)
        return _arith(op, a, b)
    if isinstance(expr, IsNull):
        result = evaluate(expr.operand, lookup) is None
        return not result if expr.negated else result
    if isinstance(expr, Like):
        value = evaluate(expr.operand, lookup)
        if not isinstance(value, str):
            return None
        matched = like_regex(expr.pattern).fullmatch(value) is not None
        return not matched if expr.negated else matched
    return evaluate(desugar(expr), lookup)  # IN, BETWEEN


def passes(expr: Expr, fields: dict[str, Any]) -> bool:
    """Whether a record with ``fields`` passes the filter ``expr`` (the predicate is
    true: null and false both fail)."""
    return evaluate(expr, lambda name: value_of(fields.get(name))) is True
