"""The expressions of a query's parse tree → :mod:`sparktide.query.ast` expressions.

Names, literals, function calls and operators, each with its place. Operators are kept
generic (:class:`~sparktide.query.ast.Operation` with its kind and operator): the
translator decides what it runs.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from lark import Token

from sparktide.query.asaql.positions import Ident, identifier, keyword, position
from sparktide.query.ast import Call, Column, Expr, Literal, Operation, Over

__all__ = ["ExpressionRules"]


class ExpressionRules:
    """The rules of the expression grammar (methods named as the grammar's rules)."""

    # ------------------------------------------------------------- names
    def ident(self, children: list[Token]) -> Ident:
        token = children[0]
        return Ident(identifier(token), position(token))

    def dotted(self, children: list[Any]) -> list[Ident]:
        return [c if isinstance(c, Ident) else Ident(str(c), position(c)) for c in children]

    def column(self, children: list[Any]) -> Column:
        parts = children[0]
        return Column(tuple(str(p) for p in parts), parts[0].pos)

    def column_ref(self, children: list[Any]) -> Column:
        return self.column(children)

    # ---------------------------------------------------------- literals
    def number(self, children: list[Token]) -> Literal:
        text = str(children[0])
        value: Any = int(text) if text.isdigit() else Decimal(text)
        return Literal(value, position(children[0]))

    def string(self, children: list[Token]) -> Literal:
        text = str(children[0])
        return Literal(text[1:-1].replace("''", "'"), position(children[0]))

    def null(self, children: list[Token]) -> Literal:
        return Literal(None, position(children[0]))

    def true(self, children: list[Token]) -> Literal:
        return Literal(True, position(children[0]))

    def false(self, children: list[Token]) -> Literal:
        return Literal(False, position(children[0]))

    # ------------------------------------------------------------- calls
    def call(self, children: list[Any]) -> Call:
        parts = children[0]
        args: tuple[Expr, ...] = ()
        star = distinct = False
        if len(children) > 1:
            kind, values = children[1]
            star, distinct, args = kind == "star", kind == "distinct", tuple(values)
        return Call(tuple(str(p) for p in parts), args, parts[0].pos, star=star, distinct=distinct)

    def over_call(self, children: list[Any]) -> Call:
        over = children[-1]
        return replace(self.call(children[:-1]), over=over)

    def over_name(self, children: list[Any]) -> Call:
        """``name OVER (...)``: not a function; read as a call so that its refusal names
        its place (OVER applies to SessionWindow and analytic functions)."""
        parts = children[0]
        return Call(tuple(str(p) for p in parts), (), parts[0].pos, over=children[-1])

    def over(self, children: list[Any]) -> Over:
        partition: tuple[Expr, ...] = ()
        order: tuple[tuple[Expr, bool], ...] = ()
        limit = when = None
        for child in children[1:]:
            if isinstance(child, tuple) and child and child[0] == "partition":
                partition = child[1]
            elif isinstance(child, tuple) and child and child[0] == "order":
                order = child[1]
            elif isinstance(child, tuple) and child and child[0] == "limit":
                limit = child[1:]
            elif isinstance(child, tuple) and child and child[0] == "when":
                when = child[1]
        return Over(partition, limit, when, position(children[0]), order)  # type: ignore[arg-type]

    def over_order(self, children: list[Any]) -> tuple[str, tuple[tuple[Expr, bool], ...]]:
        word = children[0]
        if str(word).casefold() != "order":
            raise ValueError(f"{word.pos.line}:{word.pos.column}: expected ORDER BY")
        return ("order", tuple(c for c in children[1:] if isinstance(c, tuple)))

    def order_key(self, children: list[Any]) -> tuple[Expr, bool]:
        if len(children) == 1:
            return (children[0], False)
        word = children[1]
        if str(word).casefold() not in ("asc", "desc"):
            raise ValueError(f"{word.pos.line}:{word.pos.column}: expected ASC or DESC")
        return (children[0], str(word).casefold() == "desc")

    def over_partition(self, children: list[Any]) -> tuple[str, tuple[Expr, ...]]:
        return ("partition", tuple(c for c in children if not isinstance(c, Token)))

    def over_limit(self, children: list[Any]) -> tuple[Any, ...]:
        keyword_token, word, unit, length = children
        if str(word).casefold() != "duration":
            raise ValueError(f"{word.pos.line}:{word.pos.column}: expected DURATION")
        return (
            "limit",
            str(unit),
            int(str(length)) if str(length).isdigit() else Decimal(str(length)),
            position(keyword_token),
        )

    def over_when(self, children: list[Any]) -> tuple[str, Expr]:
        return ("when", children[1])

    def star_arg(self, children: list[Any]) -> tuple[str, list[Expr]]:
        return ("star", [])

    def distinct_arg(self, children: list[Any]) -> tuple[str, list[Expr]]:
        return ("distinct", [children[1]])

    def expr_args(self, children: list[Any]) -> tuple[str, list[Expr]]:
        return ("args", list(children))

    # --------------------------------------------------------- operators
    def _chain(self, kind: str, children: list[Any]) -> Expr:
        operands = [c for c in children if not isinstance(c, Token)]
        ops = [str(c) for c in children if isinstance(c, Token)]
        result = operands[0]
        for op, right in zip(ops, operands[1:], strict=True):
            result = Operation(kind, (result, right), position(result), op.upper())
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
        return Operation("NOT", (children[1],), position(children[0]), "NOT")

    def sign(self, children: list[Any]) -> Operation:
        return Operation("sign", (children[1],), position(children[0]), str(children[0]))

    def compare(self, children: list[Any]) -> Operation:
        left, op, right = children
        return Operation("comparison", (left, right), position(left), str(op))

    def _negated(self, children: list[Any]) -> str:
        return "NOT " if keyword(children, "NOT") is not None else ""

    def between(self, children: list[Any]) -> Operation:
        values = [c for c in children if not isinstance(c, Token)]
        return Operation(
            "BETWEEN", tuple(values), position(values[0]), self._negated(children) + "BETWEEN"
        )

    def is_null(self, children: list[Any]) -> Operation:
        return Operation(
            "IS NULL",
            (children[0],),
            position(children[0]),
            "IS " + self._negated(children) + "NULL",
        )

    def like(self, children: list[Any]) -> Operation:
        values = [c for c in children if not isinstance(c, Token)]
        return Operation(
            "LIKE", tuple(values), position(values[0]), self._negated(children) + "LIKE"
        )

    def in_list(self, children: list[Any]) -> Operation:
        values = [c for c in children if not isinstance(c, Token)]
        return Operation("IN", tuple(values), position(values[0]), self._negated(children) + "IN")

    def cast(self, children: list[Any]) -> Operation:
        """``CAST(x AS type)`` / ``TRY_CAST``: the operator is ``"CAST <type>"`` or
        ``"TRY_CAST <type>"``, the type in lower case (``nvarchar(max)``)."""
        keyword = str(children[0]).upper()
        return Operation("CAST", (children[1],), position(children[0]), f"{keyword} {children[3]}")

    def type_name(self, children: list[Any]) -> str:
        names = [str(c).lower() for c in children]
        return names[0] if len(names) == 1 else f"{names[0]}({names[1]})"

    def case(self, children: list[Any]) -> Operation:
        """``CASE [x] WHEN ... THEN ... [ELSE ...] END``: operands ``[x,] w1, t1, ...
        [, else]``; the operator says which are there (``"CASE"``, ``"CASE x"``,
        ``"CASE ELSE"``, ``"CASE x ELSE"``)."""
        operands: list[Expr] = []
        simple = has_else = False
        for child in children[1:]:
            if isinstance(child, tuple):
                operands.extend(child)
            elif isinstance(child, Token):
                has_else = has_else or child.type == "ELSE"
            else:
                simple = simple or not operands
                operands.append(child)
        operator = "CASE" + (" x" if simple else "") + (" ELSE" if has_else else "")
        return Operation("CASE", tuple(operands), position(children[0]), operator)

    def when(self, children: list[Any]) -> tuple[Expr, Expr]:
        return (children[1], children[3])
