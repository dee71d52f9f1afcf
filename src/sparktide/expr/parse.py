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
    "day (dd, d), hour (hh), minute (mi, n), second (ss, s), millisecond (ms) or microsecond (mcs)"
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

    def call(self, items: list[Any]) -> nodes.Expr:
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
            nodes.DATEDIFF_UNITS.get(unit.name.lower())
            if isinstance(unit, nodes.Ref) and unit.input is None
            else None
        )
        if found is None:
            shown = to_text(unit)
            raise self.fail(
                token,
                f"DATEDIFF({shown}, ...): the unit is {_UNIT_HELP}, written as a bare word "
                "(DATEDIFF(minute, start, end))",
            )
        return nodes.DateDiff(found[0], start, end)

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
