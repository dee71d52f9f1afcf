"""Parse Stream Analytics queries (the subset of docs/query.md) into a syntax tree.

The grammar is ``asaql.lark`` (LALR(1), `lark <https://github.com/lark-parser/lark>`_):
keywords are case-insensitive, identifiers may be ``[bracketed]``, ``--`` and ``/* */``
are comments. The grammar is wider than what the engines run (``WHERE``, ``JOIN``,
``UNION`` ... parse); :mod:`sparktide.query.translate` refuses those by name and place.
A text outside the grammar is refused here, as a :class:`~sparktide.errors.QueryError`
naming the line and column.

Windows of ``GROUP BY`` are recognised while parsing, in both of Stream Analytics'
forms (``TumblingWindow(minute, 5)`` and ``TumblingWindow(Duration(minute, 5),
Offset(second, 1))``), with all its time units (``day``/``dd``/``d``, ``hour``/``hh``,
``minute``/``mi``/``n``, ``second``/``ss``/``s``, ``millisecond``/``ms``,
``microsecond``/``mcs``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from sparktide.errors import QueryError
from sparktide.query.ast import (
    Call,
    Clause,
    Column,
    Expr,
    FromSource,
    GroupItem,
    Join,
    Literal,
    Operation,
    Pos,
    Query,
    Select,
    SelectItem,
    Star,
    Step,
    Union,
    WindowSpec,
)
from sparktide.time import DAY, HOUR, MILLISECOND, MINUTE, SECOND

__all__ = ["TIME_UNITS", "WINDOW_FUNCTIONS", "parse_query"]

#: Stream Analytics' time units and their abbreviations, in microseconds.
TIME_UNITS: dict[str, int] = {
    "day": DAY,
    "dd": DAY,
    "d": DAY,
    "hour": HOUR,
    "hh": HOUR,
    "minute": MINUTE,
    "mi": MINUTE,
    "n": MINUTE,
    "second": SECOND,
    "ss": SECOND,
    "s": SECOND,
    "millisecond": MILLISECOND,
    "ms": MILLISECOND,
    "microsecond": 1,
    "mcs": 1,
}
_UNIT_LIST = (
    "day (dd, d), hour (hh), minute (mi, n), second (ss, s), millisecond (ms), microsecond (mcs)"
)
#: Window function names (lower case), with their short aliases.
WINDOW_FUNCTIONS: dict[str, str] = {
    "tumblingwindow": "tumbling",
    "tumbling": "tumbling",
    "hoppingwindow": "hopping",
    "hopping": "hopping",
    "slidingwindow": "sliding",
    "sliding": "sliding",
    "sessionwindow": "session",
    "session": "session",
    "snapshotwindow": "snapshot",
}
#: Stream Analytics' longest window.
MAX_WINDOW = 7 * DAY

#: Terminal names as people read them, for syntax errors.
_TERMINAL_TEXT = {
    "NAME": "a name",
    "BRACKETED": "a [name]",
    "NUMBER": "a number",
    "STRING": "a 'string'",
    "STAR": "'*'",
    "COMPARE": "a comparison",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'/' or '%'",
    "_SEMI": "';'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "DOT": "'.'",
    "$END": "the end of the query",
}


@functools.cache
def _parser() -> Lark:
    grammar = resources.files("sparktide.query").joinpath("asaql.lark").read_text("utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)


def parse_query(text: str, source: str = "query") -> Query:
    """Parse a Stream Analytics query.

    Parameters
    ----------
    text
        The query text.
    source
        The name used in messages (the file name).

    Returns
    -------
    Query
        The syntax tree.

    Raises
    ------
    QueryError
        If the text is outside the grammar, or a window's arguments are wrong; the
        message names the line and column.
    """
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, source, text) from None
    try:
        return _Build(source).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, QueryError):
            raise exc.orig_exc from None
        raise  # pragma: no cover - a bug in the tree builder


def _syntax_error(exc: UnexpectedInput, source: str, text: str) -> QueryError:
    line, column = max(exc.line, 1), max(exc.column, 1)
    if isinstance(exc, UnexpectedCharacters):
        char = exc.char
        hint = (
            " (strings use 'single quotes'; names with spaces use [brackets])"
            if char == '"'
            else ""
        )
        return QueryError(source, line, column, f"unexpected character {char!r}{hint}")
    if isinstance(exc, UnexpectedEOF) or (
        isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
    ):
        lines = text.split("\n")  # the position just after the last character
        expected = _expected(getattr(exc, "expected", ()) or ())
        return QueryError(
            source, len(lines), len(lines[-1]) + 1, f"unexpected end of the query{expected}"
        )
    assert isinstance(exc, UnexpectedToken)
    token = exc.token
    return QueryError(
        source,
        line,
        column,
        f"unexpected {str(token)!r}{_expected(exc.expected)}",
    )


def _expected(names: Any) -> str:
    shown = sorted({_TERMINAL_TEXT.get(n, n if n.isupper() else repr(n)) for n in names})
    if not shown:
        return ""
    if len(shown) > 8:
        shown = [*shown[:8], "..."]
    return "; expected " + ", ".join(shown)


def _pos(item: Any) -> Pos:
    if isinstance(item, Token):
        return Pos(item.line or 1, item.column or 1)
    if isinstance(item, (Tree,)):
        return Pos(item.meta.line, item.meta.column)
    pos = getattr(item, "pos", None)
    if isinstance(pos, Pos):
        return pos
    raise AssertionError(f"no position for {item!r}")  # pragma: no cover


def _ident(token: Token) -> str:
    text = str(token)
    if token.type == "BRACKETED":
        return text[1:-1].replace("]]", "]")
    return text


def _kw(children: list[Any], name: str) -> Token | None:
    for child in children:
        if isinstance(child, Token) and child.type == name:
            return child
    return None


class _Ident(str):
    """A name with its position (identifiers are plain strings in the tree)."""

    pos: Pos

    def __new__(cls, text: str, pos: Pos) -> _Ident:
        obj = super().__new__(cls, text)
        obj.pos = pos
        return obj


@dataclass(frozen=True)
class _Where:
    clause: Clause


@dataclass(frozen=True)
class _Having:
    clause: Clause


class _Build(Transformer):  # type: ignore[type-arg]
    """Lark tree → :mod:`sparktide.query.ast` nodes."""

    def __init__(self, source: str) -> None:
        super().__init__(visit_tokens=False)
        self.source = source

    def _error(self, pos: Pos, message: str) -> QueryError:
        return QueryError(self.source, pos.line, pos.column, message)

    # ------------------------------------------------------------------ names
    def ident(self, children: list[Token]) -> _Ident:
        token = children[0]
        return _Ident(_ident(token), _pos(token))

    def dotted(self, children: list[Any]) -> list[_Ident]:
        return [c if isinstance(c, _Ident) else _Ident(str(c), _pos(c)) for c in children]

    def column(self, children: list[Any]) -> Column:
        parts = children[0]
        return Column(tuple(str(p) for p in parts), parts[0].pos)

    def column_ref(self, children: list[Any]) -> Column:
        return self.column(children)

    # ---------------------------------------------------------------- literals
    def number(self, children: list[Token]) -> Literal:
        text = str(children[0])
        value: Any = int(text) if text.isdigit() else Decimal(text)
        return Literal(value, _pos(children[0]))

    def string(self, children: list[Token]) -> Literal:
        text = str(children[0])
        return Literal(text[1:-1].replace("''", "'"), _pos(children[0]))

    def null(self, children: list[Token]) -> Literal:
        return Literal(None, _pos(children[0]))

    def true(self, children: list[Token]) -> Literal:
        return Literal(True, _pos(children[0]))

    def false(self, children: list[Token]) -> Literal:
        return Literal(False, _pos(children[0]))

    # ------------------------------------------------------------- expressions
    def call(self, children: list[Any]) -> Call:
        parts = children[0]
        args: tuple[Expr, ...] = ()
        star = distinct = False
        if len(children) > 1:
            kind, values = children[1]
            star, distinct, args = kind == "star", kind == "distinct", tuple(values)
        return Call(tuple(str(p) for p in parts), args, parts[0].pos, star=star, distinct=distinct)

    def star_arg(self, children: list[Any]) -> tuple[str, list[Expr]]:
        return ("star", [])

    def distinct_arg(self, children: list[Any]) -> tuple[str, list[Expr]]:
        return ("distinct", [children[1]])

    def expr_args(self, children: list[Any]) -> tuple[str, list[Expr]]:
        return ("args", list(children))

    def _chain(self, kind: str, children: list[Any]) -> Expr:
        operands = [c for c in children if not isinstance(c, Token)]
        ops = [str(c) for c in children if isinstance(c, Token)]
        result = operands[0]
        for op, right in zip(ops, operands[1:], strict=True):
            result = Operation(kind, (result, right), _pos(result), op.upper())
        return result

    def or_expr(self, children: list[Any]) -> Expr:
        return self._chain("OR", children)

    def and_expr(self, children: list[Any]) -> Expr:
        return self._chain("AND", children)

    def sum(self, children: list[Any]) -> Expr:
        return self._chain("arithmetic", children)

    def product(self, children: list[Any]) -> Expr:
        return self._chain("arithmetic", children)

    def not_op(self, children: list[Any]) -> Operation:
        return Operation("NOT", (children[1],), _pos(children[0]), "NOT")

    def sign(self, children: list[Any]) -> Operation:
        return Operation("sign", (children[1],), _pos(children[0]), str(children[0]))

    def compare(self, children: list[Any]) -> Operation:
        left, op, right = children
        return Operation("comparison", (left, right), _pos(left), str(op))

    def _negated(self, children: list[Any]) -> str:
        return "NOT " if _kw(children, "NOT") is not None else ""

    def between(self, children: list[Any]) -> Operation:
        values = [c for c in children if not isinstance(c, Token)]
        return Operation(
            "BETWEEN", tuple(values), _pos(values[0]), self._negated(children) + "BETWEEN"
        )

    def is_null(self, children: list[Any]) -> Operation:
        return Operation(
            "IS NULL", (children[0],), _pos(children[0]), "IS " + self._negated(children) + "NULL"
        )

    def like(self, children: list[Any]) -> Operation:
        values = [c for c in children if not isinstance(c, Token)]
        return Operation("LIKE", tuple(values), _pos(values[0]), self._negated(children) + "LIKE")

    def in_list(self, children: list[Any]) -> Operation:
        values = [c for c in children if not isinstance(c, Token)]
        return Operation("IN", tuple(values), _pos(values[0]), self._negated(children) + "IN")

    def cast(self, children: list[Any]) -> Operation:
        return Operation("CAST", (children[1],), _pos(children[0]), "CAST")

    def case(self, children: list[Any]) -> Operation:
        operands: list[Expr] = []
        for child in children[1:]:
            if isinstance(child, tuple):
                operands.extend(child)
            elif not isinstance(child, Token):
                operands.append(child)
        return Operation("CASE", tuple(operands), _pos(children[0]), "CASE")

    def when(self, children: list[Any]) -> tuple[Expr, Expr]:
        return (children[1], children[3])

    # ------------------------------------------------------------------ select
    def star_item(self, children: list[Token]) -> SelectItem:
        pos = _pos(children[0])
        return SelectItem(Star(None, pos), None, pos)

    def qualified_star_item(self, children: list[Any]) -> SelectItem:
        name = children[0]
        return SelectItem(Star(str(name), name.pos), None, name.pos)

    def expr_item(self, children: list[Any]) -> SelectItem:
        expr = children[0]
        alias = str(children[-1]) if len(children) == 3 else None
        return SelectItem(expr, alias, _pos(expr))

    def select_items(self, children: list[SelectItem]) -> tuple[SelectItem, ...]:
        return tuple(children)

    def into(self, children: list[Any]) -> _Ident:
        return children[1]

    def alias(self, children: list[Any]) -> _Ident:
        return children[-1]

    def timestamp_by(self, children: list[Any]) -> tuple[str, Any, tuple[Column, ...], Pos]:
        values = [c for c in children if not isinstance(c, Token)]
        return ("timestamp", values[0], tuple(values[1:]), _pos(children[0]))

    def partition_by(self, children: list[Any]) -> tuple[str, Column, Pos]:
        return ("partition", children[2], _pos(children[0]))

    def from_item(self, children: list[Any]) -> FromSource:
        name = children[0]
        alias = timestamp = partition = None
        over: tuple[Column, ...] = ()
        timestamp_pos = partition_pos = None
        for child in children[1:]:
            if isinstance(child, _Ident):
                alias = str(child)
            elif child[0] == "timestamp":
                _, timestamp, over, timestamp_pos = child
            else:
                _, partition, partition_pos = child
        return FromSource(
            str(name),
            alias,
            timestamp,
            over,
            partition,
            name.pos,
            timestamp_pos=timestamp_pos,
            partition_pos=partition_pos,
        )

    def join_kind(self, children: list[Token]) -> str:
        return " ".join(str(c).upper() for c in children) or "INNER"

    def join(self, children: list[Any]) -> Join:
        kind, _join, source, _on, condition = children
        return Join(kind, source, condition, _pos(_join))

    def where(self, children: list[Any]) -> _Where:
        return _Where(Clause(children[1], _pos(children[0])))

    def having(self, children: list[Any]) -> _Having:
        return _Having(Clause(children[1], _pos(children[0])))

    def group_item(self, children: list[Any]) -> GroupItem:
        expr = children[0]
        over = tuple(c for c in children[1:] if isinstance(c, Column))
        window = self._window(expr, over)
        if over and window is None:
            raise self._error(
                _pos(children[1]), "OVER (PARTITION BY ...) applies to SessionWindow only"
            )
        return GroupItem(expr, _pos(expr), window, over)

    def group_by(self, children: list[Any]) -> tuple[Pos, tuple[GroupItem, ...]]:
        return (_pos(children[0]), tuple(c for c in children if isinstance(c, GroupItem)))

    def select(self, children: list[Any]) -> Select:
        pos = _pos(children[0])
        items: tuple[SelectItem, ...] = children[1]
        into = into_pos = source = where = having = group_pos = None
        joins: list[Join] = []
        group: tuple[GroupItem, ...] = ()
        for child in children[2:]:
            if isinstance(child, Token):
                continue
            if isinstance(child, _Ident):
                into, into_pos = str(child), child.pos
            elif isinstance(child, FromSource):
                source = child
            elif isinstance(child, Join):
                joins.append(child)
            elif isinstance(child, tuple):
                group_pos, group = child
            elif isinstance(child, _Where):
                where = child.clause
            elif isinstance(child, _Having):
                having = child.clause
        assert source is not None
        return Select(
            items,
            into,
            source,
            pos,
            into_pos=into_pos,
            joins=tuple(joins),
            where=where,
            group_by=group,
            group_pos=group_pos,
            having=having,
        )

    def union(self, children: list[Any]) -> Union:
        selects = tuple(c for c in children if isinstance(c, Select))
        positions = tuple(_pos(c) for c in children if isinstance(c, Token) and c.type == "UNION")
        return Union(selects, selects[0].pos, positions)

    def statement(self, children: list[Any]) -> Union:
        return children[0]

    def step(self, children: list[Any]) -> Step:
        name = children[0]
        return Step(str(name), children[-1], name.pos)

    def with_clause(self, children: list[Any]) -> tuple[Step, ...]:
        return tuple(c for c in children if isinstance(c, Step))

    def start(self, children: list[Any]) -> Query:
        steps: tuple[Step, ...] = ()
        statements = []
        for child in children:
            if isinstance(child, tuple):
                steps = child
            elif isinstance(child, Union):
                statements.append(child)
        return Query(steps, tuple(statements), self.source)

    # ----------------------------------------------------------------- windows
    def _window(self, expr: Expr, over: tuple[Column, ...]) -> WindowSpec | None:
        if isinstance(expr, Call) and expr.function == "system.timestamp" and not expr.args:
            return WindowSpec("snapshot", expr.pos)
        if isinstance(expr, Column) and expr.name.lower() == "system.timestamp":
            return WindowSpec("snapshot", expr.pos)
        if not isinstance(expr, Call):
            return None
        kind = WINDOW_FUNCTIONS.get(expr.function)
        if kind is None:
            return None
        if expr.star or expr.distinct:
            raise self._error(expr.pos, f"{expr.text[:-2]}(...) takes a time unit and sizes")
        if over and kind != "session":
            raise self._error(over[0].pos, "OVER (PARTITION BY ...) applies to SessionWindow only")
        name = ".".join(expr.name)
        args = list(expr.args)
        if kind == "snapshot":
            if args:
                raise self._error(expr.pos, f"{name}() takes no arguments")
            return WindowSpec("snapshot", expr.pos)
        wrapped = bool(args) and isinstance(args[0], Call)
        if wrapped:
            return self._wrapped_window(kind, name, expr, args, over)
        return self._short_window(kind, name, expr, args, over)

    def _short_window(
        self, kind: str, name: str, expr: Call, args: list[Expr], over: tuple[Column, ...]
    ) -> WindowSpec:
        shapes = {
            "tumbling": ("timeunit, windowsize[, offsetsize]", 2, 3),
            "hopping": ("timeunit, windowsize, hopsize[, offsetsize]", 3, 4),
            "sliding": ("timeunit, windowsize", 2, 2),
            "session": ("timeunit, timeoutsize, maxdurationsize", 3, 3),
        }
        usage, least, most = shapes[kind]
        if not least <= len(args) <= most:
            raise self._error(
                expr.pos, f"{name}({usage}) takes {_count(least, most)}, got {len(args)}"
            )
        unit = self._unit(args[0])
        sizes = [
            self._amount(a, unit, signed=(i == least)) for i, a in enumerate(args[1:], start=1)
        ]
        offset = sizes[least - 1] if len(args) > least else None
        if kind == "tumbling":
            return self._checked(WindowSpec(kind, expr.pos, size=sizes[0], offset=offset), args)
        if kind == "hopping":
            return self._checked(
                WindowSpec(kind, expr.pos, size=sizes[0], hop=sizes[1], offset=offset), args
            )
        if kind == "sliding":
            return self._checked(WindowSpec(kind, expr.pos, size=sizes[0]), args)
        return self._checked(
            WindowSpec(kind, expr.pos, timeout=sizes[0], max_duration=sizes[1], partition_by=over),
            args,
        )

    def _wrapped_window(
        self, kind: str, name: str, expr: Call, args: list[Expr], over: tuple[Column, ...]
    ) -> WindowSpec:
        expected = {
            "tumbling": (("duration",), ("offset",)),
            "hopping": (("duration", "hop"), ("offset",)),
            "sliding": (("duration",), ()),
            "session": (("timeout", "maxduration"), ()),
        }[kind]
        required, optional = expected
        names = [*required, *optional]
        values: dict[str, int] = {}
        for index, arg in enumerate(args):
            if not isinstance(arg, Call) or arg.function not in names:
                wanted = ", ".join(
                    n.capitalize() if n != "maxduration" else "MaxDuration" for n in names
                )
                raise self._error(
                    _pos(arg), f"{name}(...) takes {wanted}(timeunit, size) arguments here"
                )
            if arg.function in values or names.index(arg.function) < index:
                raise self._error(arg.pos, f"{arg.text[:-2]}(...) is out of place in {name}(...)")
            if len(arg.args) != 2 or arg.star or arg.distinct:
                raise self._error(arg.pos, f"{arg.text[:-2]}(timeunit, size) takes 2 arguments")
            unit = self._unit(arg.args[0])
            values[arg.function] = self._amount(arg.args[1], unit, signed=arg.function == "offset")
        for needed in required:
            if needed not in values:
                raise self._error(
                    expr.pos, f"{name}(...) needs {needed.capitalize()}(timeunit, size)"
                )
        spec = WindowSpec(
            kind,
            expr.pos,
            size=values.get("duration"),
            hop=values.get("hop"),
            offset=values.get("offset"),
            timeout=values.get("timeout"),
            max_duration=values.get("maxduration"),
            partition_by=over if kind == "session" else (),
        )
        return self._checked(spec, args)

    def _checked(self, spec: WindowSpec, args: list[Expr]) -> WindowSpec:
        for value in (spec.size, spec.hop, spec.timeout, spec.max_duration):
            if value is not None and value > MAX_WINDOW:
                raise self._error(spec.pos, "Stream Analytics windows last at most 7 days")
        return spec

    def _unit(self, expr: Expr) -> int:
        if isinstance(expr, Column) and len(expr.parts) == 1:
            unit = TIME_UNITS.get(expr.parts[0].lower())
            if unit is not None:
                return unit
        shown = expr.name if isinstance(expr, Column) else "this"
        raise self._error(_pos(expr), f"unknown time unit {shown!r}; use {_UNIT_LIST}")

    def _amount(self, expr: Expr, unit: int, *, signed: bool) -> int:
        negative = False
        node = expr
        if isinstance(node, Operation) and node.kind == "sign" and not signed:
            raise self._error(_pos(expr), "a window size must be greater than zero")
        if isinstance(node, Operation) and node.kind == "sign":
            negative = node.operator == "-"
            node = node.operands[0]
        if (
            not isinstance(node, Literal)
            or isinstance(node.value, (bool, str))
            or node.value is None
        ):
            raise self._error(_pos(expr), "expected a number (a size in the time unit)")
        try:
            micros = Decimal(node.value) * unit
        except InvalidOperation:  # pragma: no cover - the grammar only lets numbers through
            raise self._error(_pos(expr), "expected a number") from None
        if micros != micros.to_integral_value():
            raise self._error(_pos(expr), f"{node.value} is not a whole number of microseconds")
        value = int(micros)
        if not signed and value <= 0:
            raise self._error(_pos(expr), "a window size must be greater than zero")
        return -value if negative else value


def _count(least: int, most: int) -> str:
    return f"{least} arguments" if least == most else f"{least} or {most} arguments"
