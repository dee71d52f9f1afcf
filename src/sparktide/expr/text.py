"""The canonical text of an expression tree: it parses back into an equal tree."""

from __future__ import annotations

import re
from typing import Any

from sparktide.expr import nodes

__all__ = ["to_text"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KEYWORDS = {
    *("and", "or", "not", "between", "is", "null", "like", "in", "true", "false"),
    *("case", "when", "then", "else", "end", "cast", "try_cast", "as"),
}
_LEVEL = {"OR": 1, "AND": 2, "NOT": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}


def _level(expr: nodes.Expr) -> int:
    if isinstance(expr, nodes.Binary):
        return _LEVEL["cmp"] if expr.op in nodes.COMPARISONS else _LEVEL[expr.op]
    if isinstance(expr, nodes.Unary):
        return 3 if expr.op == "NOT" else 7
    if isinstance(expr, (nodes.IsNull, nodes.In, nodes.Between, nodes.Like)):
        return 4
    return 8


def _wrap(expr: nodes.Expr, at_least: int) -> str:
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


def to_text(expr: nodes.Expr) -> str:
    """The canonical text of ``expr``: it parses back into an equal tree."""
    if isinstance(expr, nodes.Ref):
        if expr == nodes.SYSTEM_TIMESTAMP:
            return "System.Timestamp()"
        if expr == nodes.EVENT_INPUT:
            return "System.Input()"
        if expr.input is not None:
            return f"{_name(expr.input)}.{_name(expr.name)}"
        return _name(expr.name)
    if isinstance(expr, nodes.DateDiff):
        return f"DATEDIFF({expr.unit}, {to_text(expr.start)}, {to_text(expr.end)})"
    if isinstance(expr, nodes.Lit):
        return _literal(expr.value)
    if isinstance(expr, nodes.Func):
        args = [expr.unit] if expr.unit is not None else []
        args += [to_text(a) for a in expr.args]
        return f"{expr.name}({', '.join(args)})"
    if isinstance(expr, nodes.Cast):
        return f"{'TRY_CAST' if expr.safe else 'CAST'}({to_text(expr.operand)} AS {expr.type})"
    if isinstance(expr, nodes.Case):
        whens = " ".join(f"WHEN {to_text(c)} THEN {to_text(r)}" for c, r in expr.whens)
        default = f" ELSE {to_text(expr.default)}" if expr.default is not None else ""
        return f"CASE {whens}{default} END"
    if isinstance(expr, nodes.Unary):
        if expr.op == "NOT":
            return f"NOT {_wrap(expr.operand, 3)}"
        inner = _wrap(expr.operand, 8 if isinstance(expr.operand, nodes.Unary) else 7)
        return f"-{inner}"
    if isinstance(expr, nodes.Binary):
        level = _level(expr)
        if expr.op in nodes.COMPARISONS:
            return f"{_wrap(expr.left, 5)} {expr.op} {_wrap(expr.right, 5)}"
        return f"{_wrap(expr.left, level)} {expr.op} {_wrap(expr.right, level + 1)}"
    not_ = "NOT " if expr.negated else ""
    if isinstance(expr, nodes.IsNull):
        return f"{_wrap(expr.operand, 5)} IS {not_}{'MISSING' if expr.missing else 'NULL'}"
    if isinstance(expr, nodes.In):
        items = ", ".join(to_text(i) for i in expr.items)
        return f"{_wrap(expr.operand, 5)} {not_}IN ({items})"
    if isinstance(expr, nodes.Between):
        return (
            f"{_wrap(expr.operand, 5)} {not_}BETWEEN {_wrap(expr.low, 5)} AND {_wrap(expr.high, 5)}"
        )
    return f"{_wrap(expr.operand, 5)} {not_}LIKE {_literal(expr.pattern)}"
