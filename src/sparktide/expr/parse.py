"""Parsing expression text (grammar ``expr.lark``, LALR(1), by lark) into trees.

Errors name the job-file key the text comes from and the column of the first mistake.
"""

from __future__ import annotations

import functools
import math
import re
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from sparktide.errors import ConfigError
from sparktide.expr import nodes
from sparktide.expr.text import to_text

__all__ = ["parse_expression"]

_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
_UNIT_HELP = (
    "year (yy, yyyy), quarter (qq, q), month (mm, m), dayofyear (dy, y), week (wk, ww), "
    "weekday (dw, w), day (dd, d), hour (hh), minute (mi, n), second (ss, s), "
    "millisecond (ms) or microsecond (mcs)"
)


@functools.cache
def _parser() -> Lark:
    grammar = resources.files("sparktide.expr").joinpath("expr.lark").read_text("utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=False, maybe_placeholders=False)


class _Build(Transformer[Token, nodes.Expr]):
    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key

    def fail(self, token: Token, message: str) -> ConfigError:
        return ConfigError(self.key, f"column {token.column}: {message}")

    def number(self, items: list[Token]) -> nodes.Expr:
        (token,) = items
        text = str(token)
        if "." not in text and "e" not in text.lower():
            return nodes.Lit(int(text))
        value = float(text)
        if math.isinf(value):
            raise self.fail(token, f"the number {text} is beyond the range of a double")
        return nodes.Lit(value)

    def string(self, items: list[Token]) -> nodes.Expr:
        return nodes.Lit(str(items[0])[1:-1].replace("''", "'"))

    def null(self, items: list[Token]) -> nodes.Expr:
        return nodes.Lit(None)

    def true(self, items: list[Token]) -> nodes.Expr:
        return nodes.Lit(True)

    def false(self, items: list[Token]) -> nodes.Expr:
        return nodes.Lit(False)

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

    def ref(self, items: list[Token]) -> nodes.Expr:
        (token,) = items
        return nodes.Ref(self._column(token))

    def qualified(self, items: list[Token]) -> nodes.Expr:
        first, second = items
        return nodes.Ref(self._column(second), self._column(first))

    def system_call(self, items: list[Token]) -> nodes.Expr:
        first, second = items
        names = (str(first).casefold(), str(second).casefold())
        known = {
            ("system", "timestamp"): nodes.SYSTEM_TIMESTAMP,
            ("system", "input"): nodes.EVENT_INPUT,
        }
        if names not in known or "BRACKETED" in (first.type, second.type):
            raise self.fail(
                first,
                f"unknown function {first}.{second}(); the ones are System.Timestamp() and "
                "System.Input()",
            )
        return known[names]

    def call(self, items: list[Any]) -> nodes.Expr:
        token, *args = items
        function = str(token)
        name = function.upper()
        if name == "DATEDIFF":
            return self._datediff(token, args)
        if name not in nodes.FUNCTIONS:
            raise self.fail(
                token,
                f"unknown function {function}(...); the functions are DATEDIFF, "
                + ", ".join(nodes.FUNCTIONS),
            )
        unit = None
        if name in nodes.UNIT_FUNCTIONS:
            if not args:
                raise self.fail(token, f"{name}(...) takes a date part first, as {name}(day, ...)")
            unit = self._unit(token, name, args[0], nodes.DATE_PARTS)
            args = args[1:]
        low, high = nodes.FUNCTIONS[name]
        if len(args) < low or (high >= 0 and len(args) > high):
            wanted = (
                str(low) if low == high else f"{low} or more" if high < 0 else f"{low} to {high}"
            )
            raise self.fail(
                token,
                f"{name}(...) takes {wanted} argument{'' if wanted == '1' else 's'}"
                + (" after its date part" if unit else "")
                + f"; got {len(args)}",
            )
        if name == "ROUND" and not _integer_literal(args[1]):
            raise self.fail(token, "ROUND(x, length): the length is an integer number")
        if name == "PARSEINT" and not (
            _integer_literal(args[1])
            and isinstance(args[1], nodes.Lit)
            and 2 <= args[1].value <= 36
        ):
            raise self.fail(token, "PARSEINT(text, radix): the radix is an integer from 2 to 36")
        if name in ("PATINDEX", "REGEXMATCH"):
            _check_pattern(self, token, name, args[1 if name == "REGEXMATCH" else 0])
        if unit in ("dayofyear", "weekday") and name == "DATEADD":
            unit = "day"  # as SQL Server: both add days
        return nodes.Func(name, tuple(args), unit)

    def _unit(self, token: Token, name: str, unit: Any, table: dict[str, Any]) -> Any:
        found = (
            table.get(unit.name.lower())
            if isinstance(unit, nodes.Ref) and unit.input is None
            else None
        )
        if found is None:
            raise self.fail(
                token,
                f"{name}({to_text(unit)}, ...): the date part is {_UNIT_HELP}, written as a bare "
                f"word ({name}(minute, ...))",
            )
        return found

    def _datediff(self, token: Token, args: list[Any]) -> nodes.Expr:
        function = str(token)
        if len(args) != 3:
            raise self.fail(
                token,
                f"{function}(...) takes a unit and two times, as DATEDIFF(minute, start, end); "
                f"got {len(args)} argument{'' if len(args) == 1 else 's'}",
            )
        unit, start, end = args
        part = self._unit(token, "DATEDIFF", unit, nodes.DATE_PARTS)
        if part in ("dayofyear", "weekday"):
            part = "day"  # as SQL Server: both count day boundaries
        return nodes.DateDiff(part, start, end)

    def case(self, items: list[Any]) -> nodes.Expr:
        operand = None
        whens: list[tuple[nodes.Expr, nodes.Expr]] = []
        default = None
        else_seen = False
        for item in items[1:]:
            if isinstance(item, Token):
                else_seen = else_seen or item.type == "ELSE"
                continue
            if isinstance(item, tuple):
                whens.append(item)
            elif else_seen:
                default = item
            else:
                operand = item
        if operand is not None:
            whens = [(nodes.Binary("=", operand, value), result) for value, result in whens]
        return nodes.Case(tuple(whens), default)

    def when(self, items: list[Any]) -> tuple[nodes.Expr, nodes.Expr]:
        return (items[1], items[3])

    def type_name(self, items: list[Token]) -> str:
        text = str(items[0]) if len(items) == 1 else f"{items[0]}({items[1]})"
        found = nodes.CAST_TYPES.get(text.lower())
        if found is None:
            raise self.fail(
                items[0],
                f"CAST to {text} is not supported; the types are " + ", ".join(nodes.CAST_TYPES),
            )
        return found

    def cast(self, items: list[Any]) -> nodes.Expr:
        keyword, operand, _, type_ = items
        return nodes.Cast(operand, type_, safe=str(keyword).upper() == "TRY_CAST")

    def sign(self, items: list[Any]) -> nodes.Expr:
        op, operand = items
        return operand if str(op) == "+" else nodes.Unary("-", operand)

    def not_op(self, items: list[Any]) -> nodes.Expr:
        return nodes.Unary("NOT", items[1])

    def and_op(self, items: list[Any]) -> nodes.Expr:
        return nodes.Binary("AND", items[0], items[2])

    def or_op(self, items: list[Any]) -> nodes.Expr:
        return nodes.Binary("OR", items[0], items[2])

    def arith(self, items: list[Any]) -> nodes.Expr:
        return nodes.Binary(str(items[1]), items[0], items[2])

    def compare(self, items: list[Any]) -> nodes.Expr:
        op = str(items[1])
        return nodes.Binary("<>" if op == "!=" else op, items[0], items[2])

    @staticmethod
    def _negated(items: list[Any]) -> tuple[bool, list[Any]]:
        rest = [i for i in items if not (isinstance(i, Token) and i.type == "NOT")]
        return len(rest) != len(items), rest

    def between(self, items: list[Any]) -> nodes.Expr:
        negated, rest = self._negated(items)
        operand, _, low, _, high = rest
        return nodes.Between(operand, low, high, negated)

    def is_null(self, items: list[Any]) -> nodes.Expr:
        negated, rest = self._negated(items)
        return nodes.IsNull(rest[0], negated)

    def is_missing(self, items: list[Any]) -> nodes.Expr:
        negated, rest = self._negated(items)
        operand, keyword = rest[0], rest[1]
        if (
            not isinstance(operand, nodes.Ref)
            or operand.input is not None
            or operand in (nodes.SYSTEM_TIMESTAMP, nodes.EVENT_INPUT)
        ):
            raise self.fail(keyword, "IS MISSING takes a field of the record: x IS MISSING")
        return nodes.IsNull(operand, negated, missing=True)

    def like(self, items: list[Any]) -> nodes.Expr:
        negated, rest = self._negated(items)
        operand, keyword, pattern = rest
        if not isinstance(pattern, nodes.Lit) or not isinstance(pattern.value, str):
            raise self.fail(keyword, "LIKE takes a 'string' pattern")
        return nodes.Like(operand, pattern.value, negated)

    def in_list(self, items: list[Any]) -> nodes.Expr:
        negated, rest = self._negated(items)
        operand, _, *values = rest
        return nodes.In(operand, tuple(values), negated)


def _integer_literal(expr: Any) -> bool:
    if isinstance(expr, nodes.Unary) and expr.op == "-":
        expr = expr.operand
    return isinstance(expr, nodes.Lit) and type(expr.value) is int


def _check_pattern(build: _Build, token: Token, name: str, pattern: Any) -> None:
    """``PATINDEX`` and ``REGEXMATCH`` take a 'string' pattern (a regular expression both
    engines read alike: no lookbehind, named groups or inline flags)."""
    if not isinstance(pattern, nodes.Lit) or not isinstance(pattern.value, str):
        raise build.fail(token, f"{name}(...) takes a 'string' pattern")
    if name == "REGEXMATCH":
        text = pattern.value
        if any(mark in text for mark in ("(?", "\\p", "\\P", "\\Q", "\\Z", "\\A", "[[")):
            raise build.fail(
                token,
                f"REGEXMATCH pattern {text!r}: groups with (?...), \\p, \\Q, \\A, \\Z and "
                "nested classes are not supported (both engines must read it alike)",
            )
        try:
            re.compile(text)
        except re.error as exc:
            raise build.fail(token, f"REGEXMATCH pattern {text!r} is not valid: {exc}") from None


@functools.lru_cache(maxsize=256)
def parse_expression(text: str, key: str = "expression") -> nodes.Expr:
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
