"""A window's aggregates: ``total = "sum(value)"``, ``fastest = "topone() over (order by
speed desc)"`` (semantics §6.12).

``count_if(condition)`` counts the rows where the condition is true (Stream Analytics'
``CountIf``). An aggregate reads a column, an expression over the record's fields, or (``count(*)``,
and ``collect``, ``topone``, ``collecttop``, ``topn``, ``bottomone``, ``bottomn`` with
no argument) the whole record. The ordered aggregates (``topone``, ``collecttop``,
``topn``, ``bottomone``, ``bottomn``, ``percentile_cont``, ``percentile_disc``) take
``over (order by column [asc|desc], ...)`` as Stream Analytics writes them.

``count``, ``sum``, ``avg``, ``min`` and ``max`` take ``over (distinct Value,
System.Timestamp())``: the window's distinct combinations of those columns and the event's
system timestamp, each counted once (semantics §13.4, a window over a snapshot step:
Stream Analytics' "remove duplicates" pattern); the aggregate's column is one of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from sparktide.errors import ConfigError
from sparktide.expr import Expr, Ref, parse_expression, to_text
from sparktide.job.expressions import no_input_fields, parse_text
from sparktide.job.values import COLUMN_NAME, check_choice, check_column, check_column_path

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "ALL_AGGREGATE_FUNCTIONS",
    "DISTINCT_FUNCTIONS",
    "NUMERIC_FUNCTIONS",
    "ORDERED_FUNCTIONS",
    "RECORD_FUNCTIONS",
    "SPREAD_FUNCTIONS",
    "Aggregate",
]

#: Aggregate functions of one column or expression: ``function(column)``.
AGGREGATE_FUNCTIONS = (
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "first",
    "last",
    "collect_list",
    "count_distinct",
    "count_if",
    "collect",
    "stdev",
    "stdevp",
    "var",
    "varp",
)
#: Aggregates over the window's rows in an order of their own: ``over (order by ...)``.
ORDERED_FUNCTIONS = (
    "topone",
    "collecttop",
    "topn",
    "bottomone",
    "bottomn",
    "percentile_cont",
    "percentile_disc",
)
#: The spread of numbers: sample and population standard deviation and variance.
SPREAD_FUNCTIONS = ("stdev", "stdevp", "var", "varp")
#: Every aggregate function a job may name.
ALL_AGGREGATE_FUNCTIONS = AGGREGATE_FUNCTIONS + ORDERED_FUNCTIONS
#: Aggregates that give the whole record when they name no column (``topone()``).
RECORD_FUNCTIONS = ("collect", "topone", "collecttop", "topn", "bottomone", "bottomn")
#: Aggregates of numbers: a column they read holds numbers (or null), semantics §8.2.
NUMERIC_FUNCTIONS = ("sum", "avg", "stdev", "stdevp", "var", "varp")
#: Aggregates that may count each distinct combination once: ``over (distinct ...)``.
DISTINCT_FUNCTIONS = ("count", "sum", "avg", "min", "max")
#: How ``over (distinct ...)`` names the event's system timestamp.
TIMESTAMP = "System.Timestamp()"
#: Ordered aggregates with a count (``collecttop(3)``) or a fraction (``percentile_cont(0.9)``).
_COUNTED = ("collecttop", "topn", "bottomn")
_PERCENTILES = ("percentile_cont", "percentile_disc")

_CALL = re.compile(r"\s*([A-Za-z_]+)\s*\((.*)\)\s*\Z", re.DOTALL)
_OVER = re.compile(
    r"(?P<call>.*\))\s*over\s*\(\s*order\s+by\s+(?P<order>[^()]*?)\s*\)\s*\Z",
    re.DOTALL | re.IGNORECASE,
)
_DISTINCT = re.compile(
    r"(?P<call>.*\))\s*over\s*\(\s*distinct\s+(?P<columns>.*)\)\s*\Z", re.DOTALL | re.IGNORECASE
)
_TIMESTAMP = re.compile(r"\s*system\s*\.\s*timestamp\s*\(\s*\)\s*\Z", re.IGNORECASE)
_ORDER_KEY = re.compile(
    r"\s*([A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z_][A-Za-z0-9_\-]*)*)(?:\s+(asc|desc))?\s*\Z",
    re.IGNORECASE,
)
_FORMS = (
    "expected FUNCTION(column), FUNCTION(expression), count(*) or an ordered aggregate "
    "such as topone() over (order by speed desc)"
)


@dataclass(frozen=True)
class Aggregate:
    """One named aggregate of a window, such as ``total = "sum(value)"``.

    Parameters
    ----------
    name
        The output column.
    function
        One of :data:`ALL_AGGREGATE_FUNCTIONS`.
    column
        The input column; ``None`` for ``count(*)``, an expression, or the whole record
        (:data:`RECORD_FUNCTIONS` with no argument; a percentile reads its order column).
    expression
        An expression over the record's fields (:mod:`sparktide.expr`) aggregated in
        place of a column, such as ``"CAST(weight AS bigint)"`` (semantics §6.12).
    argument
        The count of ``collecttop`` and ``topn`` (a positive integer), the fraction of
        ``percentile_cont`` and ``percentile_disc`` (from 0 to 1).
    order_by
        ``(column, descending)`` pairs of an ordered aggregate's ``over (order by ...)``.
    distinct
        The columns of ``over (distinct ..., System.Timestamp())``: the aggregate counts
        each distinct combination of their values and the event's system timestamp once
        (``()``: each timestamp once); ``None``: every row.
    """

    name: str
    function: str
    column: str | None = None
    expression: str | None = None
    argument: int | float | None = None
    order_by: tuple[tuple[str, bool], ...] = ()
    distinct: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        key = f"window.aggregates.{self.name}"
        check_column(self.name, key, optional=False)
        check_choice(self.function, ALL_AGGREGATE_FUNCTIONS, key)
        self._check_order(key)
        self._check_distinct(key)
        if self.function == "count_if" and self.column is not None:
            if self.expression is not None:
                raise ConfigError(key, "takes a column or an expression, not both")
            check_column(self.column, key)  # a condition: the column's value is true
            object.__setattr__(self, "expression", to_text(Ref(self.column)))
            object.__setattr__(self, "column", None)
        if self.expression is not None:
            if self.column is not None:
                raise ConfigError(key, "takes a column or an expression, not both")
            if self.function in _PERCENTILES:
                raise ConfigError(key, f"{self.function} reads its order by column only")
            no_input_fields(  # (System.Timestamp(): the event's own, semantics §6.12)
                parse_text(self.expression, key),
                key,
                system_time=True,
                event_input=True,
                input_fields=True,
            )
            return
        if self.column is None and self.function not in ("count", *RECORD_FUNCTIONS):
            if self.function not in _PERCENTILES:
                raise ConfigError(key, f"{self.function}(*) is not allowed; name a column")
        if self.function in _PERCENTILES and self.column is not None:
            raise ConfigError(key, f"{self.function} reads its order by column; name no column")
        check_column(self.column, key)

    def _check_distinct(self, key: str) -> None:
        """``over (distinct ...)``: a column (or ``*``) of :data:`DISTINCT_FUNCTIONS`, the
        column among the distinct ones, each named once."""
        if self.distinct is None:
            return
        object.__setattr__(self, "distinct", tuple(self.distinct))
        if self.function not in DISTINCT_FUNCTIONS:
            raise ConfigError(
                key,
                f"{self.function} takes no over (distinct ...); {', '.join(DISTINCT_FUNCTIONS)} do",
            )
        if self.expression is not None:
            raise ConfigError(
                key, f"{self.function} over (distinct ...) reads a column, not an expression"
            )
        seen: set[str] = set()
        for column in self.distinct:
            check_column(column, f"{key}.distinct", optional=False)
            if column in seen:
                raise ConfigError(f"{key}.distinct", f"names {column} twice")
            seen.add(column)
        if self.column is not None and self.column not in seen:
            raise ConfigError(
                key,
                f"{self.function}({self.column}) over (distinct ...) must list {self.column} "
                "among its columns: each distinct combination gives the value it counts once",
            )

    def _check_order(self, key: str) -> None:
        """The ``order by`` and the count or fraction an ordered aggregate needs."""
        object.__setattr__(self, "order_by", tuple(tuple(k) for k in self.order_by))
        if self.function not in ORDERED_FUNCTIONS:
            if self.order_by or self.argument is not None:
                raise ConfigError(key, f"{self.function} takes no over (order by ...)")
            return
        if not self.order_by:
            raise ConfigError(key, f"{self.function} needs over (order by column [asc|desc])")
        for column, descending in self.order_by:
            if self.function in _PERCENTILES or "." not in str(column):
                check_column(column, f"{key}.order_by", optional=False)
            else:  # (a value inside a record: Reading.Speed)
                check_column_path(column, f"{key}.order_by")
            if not isinstance(descending, bool):
                raise ConfigError(
                    f"{key}.order_by", f"descending must be true or false, got {descending!r}"
                )
        argument = self.argument
        if self.function in _COUNTED:
            if isinstance(argument, bool) or not isinstance(argument, int) or argument < 1:
                raise ConfigError(
                    key, f"{self.function} needs a count of at least 1, got {argument!r}"
                )
        elif self.function in _PERCENTILES:
            if len(self.order_by) != 1:
                raise ConfigError(key, f"{self.function} orders by one column")
            if (
                isinstance(argument, bool)
                or not isinstance(argument, (int, float))
                or not 0 <= argument <= 1
            ):
                raise ConfigError(
                    key, f"{self.function} needs a fraction from 0 to 1, got {argument!r}"
                )
            object.__setattr__(self, "argument", float(argument))
        elif argument is not None:
            raise ConfigError(key, f"{self.function} takes no count, got {argument!r}")

    @property
    def parsed(self) -> Expr | None:
        """The parsed expression (``None`` for a column, ``count(*)`` or a record)."""
        if self.expression is None:
            return None
        return parse_expression(self.expression, f"window.aggregates.{self.name}")

    @property
    def value_column(self) -> str | None:
        """The column whose values the aggregate takes: its column, or a percentile's
        order column."""
        if self.function in _PERCENTILES:
            return self.order_by[0][0]
        return self.column

    @property
    def whole_record(self) -> bool:
        """Whether the aggregate takes the whole record (``topone()``, ``collect()``)."""
        return self.function in RECORD_FUNCTIONS and self.column is None and self.expression is None

    @property
    def counts_rows(self) -> bool:
        """Whether it is ``count(*)``."""
        return self.function == "count" and self.column is None and self.expression is None

    @property
    def columns(self) -> tuple[str, ...]:
        """The record's columns the aggregate names: its column and its order columns."""
        named = [self.value_column] if self.value_column is not None else []
        named += [c.split(".", 1)[0] for c, _ in self.order_by]  # (a value inside: its field)
        return tuple(dict.fromkeys([*named, *(self.distinct or ())]))

    @classmethod
    def parse(cls, name: str, text: Any) -> Aggregate:
        """Parse ``"sum(value)"``, ``"count(*)"``, ``"collecttop(3, plate) over (order by
        speed desc)"``, ``"avg(v) over (distinct v, System.Timestamp())"`` by a strict
        grammar (no SQL, no eval)."""
        key = f"window.aggregates.{name}"
        if not isinstance(text, str):
            raise ConfigError(key, f"{_FORMS}, got {text!r}")
        over = _DISTINCT.match(text)
        if over is None:
            return cls._parse_call(name, text, key)
        aggregate = cls._parse_call(name, over.group("call"), key)
        return replace(aggregate, distinct=_distinct_columns(over.group("columns"), key, text))

    @classmethod
    def _parse_call(cls, name: str, text: str, key: str) -> Aggregate:
        """An aggregate without ``over (distinct ...)``."""
        order: tuple[tuple[str, bool], ...] = ()
        over = _OVER.match(text)
        if over is not None:
            order = _order_keys(over.group("order"), key, text)
            text_call = over.group("call")
        else:
            text_call = text
        call = _CALL.match(text_call)
        if call is None:
            raise ConfigError(key, f"{_FORMS}, got {text!r}")
        function = call.group(1).lower()
        if function not in ALL_AGGREGATE_FUNCTIONS:
            raise ConfigError(
                key,
                f"unknown aggregate {function!r}; use one of {', '.join(ALL_AGGREGATE_FUNCTIONS)}",
            )
        if function in ORDERED_FUNCTIONS and over is None:
            raise ConfigError(key, f"{function} needs over (order by column [asc|desc]): {text!r}")
        args = _split_arguments(call.group(2))
        argument: int | float | None = None
        if function in (*_COUNTED, *_PERCENTILES):
            if not args:
                what = "count" if function in _COUNTED else "fraction"
                raise ConfigError(key, f"{function} needs a {what}: {text!r}")
            argument = _number(args.pop(0), key, text)
        if function in _PERCENTILES and args:
            raise ConfigError(key, f"{function} takes only its fraction: {text!r}")
        if len(args) > 1:
            raise ConfigError(key, f"{_FORMS}, got {text!r}")
        if not args or args[0].strip() in ("", "*"):
            if args and args[0].strip() == "*" and function != "count":
                raise ConfigError(key, f"{function}(*) is not allowed; name a column")
            if not args and function not in (*RECORD_FUNCTIONS, *_PERCENTILES):
                raise ConfigError(key, f"{_FORMS}, got {text!r}")
            return cls(name, function, argument=argument, order_by=order)
        if COLUMN_NAME.match(args[0].strip()):  # a column (its name may hold '-')
            return cls(name, function, args[0].strip(), argument=argument, order_by=order)
        try:
            inner = parse_text(args[0], key)
        except ConfigError as exc:
            raise ConfigError(
                key, f"{_FORMS}, got {text!r}: {str(exc).split(': ', 1)[-1]}"
            ) from None
        if isinstance(inner, Ref) and inner.input is None:
            return cls(name, function, inner.name, argument=argument, order_by=order)
        return cls(name, function, expression=to_text(inner), argument=argument, order_by=order)

    def __str__(self) -> str:
        inner = self.expression or self.column or ("*" if self.counts_rows else "")
        if self.argument is not None:
            count = repr(self.argument)
            inner = f"{count}, {inner}" if inner else count
        text = f"{self.function}({inner})"
        if self.order_by:
            keys = ", ".join(f"{c} {'desc' if d else 'asc'}" for c, d in self.order_by)
            text += f" over (order by {keys})"
        if self.distinct is not None:
            text += f" over (distinct {', '.join([*self.distinct, TIMESTAMP])})"
        return text


def _distinct_columns(text: str, key: str, whole: str) -> tuple[str, ...]:
    """``Value, DeviceId, System.Timestamp()`` → ``("Value", "DeviceId")``: the columns,
    with the system timestamp named exactly once."""
    columns, stamps = [], 0
    for part in _split_arguments(text):
        if _TIMESTAMP.match(part):
            stamps += 1
        elif COLUMN_NAME.match(part.strip()):
            columns.append(part.strip())
        else:
            raise ConfigError(
                key,
                f"over (distinct ...) takes column names and {TIMESTAMP}, got {part.strip()!r} "
                f"in {whole!r}",
            )
    if stamps != 1:
        raise ConfigError(
            key,
            f"over (distinct ...) names {TIMESTAMP} once: the combinations are per event "
            f"timestamp, got {whole!r}",
        )
    return tuple(columns)


def _order_keys(text: str, key: str, whole: str) -> tuple[tuple[str, bool], ...]:
    """``speed desc, plate`` → ``(("speed", True), ("plate", False))``."""
    keys = []
    for part in text.split(","):
        match = _ORDER_KEY.match(part)
        if match is None:
            raise ConfigError(key, f"order by takes column names, each with asc or desc: {whole!r}")
        keys.append((match.group(1), (match.group(2) or "asc").lower() == "desc"))
    return tuple(keys)


def _split_arguments(text: str) -> list[str]:
    """The top-level comma-separated arguments of a call (``[]`` for none)."""
    if not text.strip():
        return []
    parts, depth, quote, start = [], 0, False, 0
    for i, char in enumerate(text):
        if char == "'":
            quote = not quote
        elif not quote and char == "(":
            depth += 1
        elif not quote and char == ")":
            depth -= 1
        elif not quote and depth == 0 and char == ",":
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _number(text: str, key: str, whole: str) -> int | float:
    """A count (``3``) or a fraction (``0.95``) written as the first argument."""
    text = text.strip()
    try:
        return int(text) if re.fullmatch(r"[0-9]+", text) else float(text)
    except ValueError:
        raise ConfigError(key, f"expected a number as the first argument, got {whole!r}") from None
