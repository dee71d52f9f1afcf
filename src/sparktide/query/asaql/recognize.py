"""``MATCH_RECOGNIZE (...)`` (semantics §11.25) → its :class:`~sparktide.query.ast.
Recognize` node: the tree builder's rules for its clauses, which the grammar reads in
any order and which are checked here (each once; ``AFTER MATCH SKIP TO NEXT ROW``, the
only skip Stream Analytics has)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from lark import Token

from sparktide.query.asaql.positions import Ident, position
from sparktide.query.ast import Expr, Pos, Recognize
from sparktide.query.refusal import Refuse

__all__ = ["RecognizeRules"]

_CLAUSES = {
    "limit": "LIMIT DURATION",
    "partition": "PARTITION BY",
    "measures": "MEASURES",
    "after": "AFTER MATCH",
    "pattern": "PATTERN",
    "define": "DEFINE",
}


class RecognizeRules:
    """The tree builder's rules for ``MATCH_RECOGNIZE``."""

    refuse: Refuse

    def recognize_limit(self, children: list[Any]) -> tuple[str, Any, Pos]:
        keyword, word, unit, length = children
        if str(word).casefold() != "duration":
            raise self.refuse(word.pos, f"LIMIT {word}: expected LIMIT DURATION(unit, length)")
        text = str(length)
        value = int(text) if text.isdigit() else Decimal(text)
        return ("limit", (str(unit), value, position(keyword)), position(keyword))

    def recognize_partition(self, children: list[Any]) -> tuple[str, Any, Pos]:
        exprs = tuple(c for c in children[2:] if not isinstance(c, Token))
        return ("partition", exprs, position(children[0]))

    def measure(self, children: list[Any]) -> tuple[Expr, str, Pos]:
        expr, _as, name = children
        return (expr, str(name), name.pos)

    def recognize_measures(self, children: list[Any]) -> tuple[str, Any, Pos]:
        return (
            "measures",
            tuple(c for c in children[1:] if isinstance(c, tuple)),
            position(children[0]),
        )

    def recognize_after(self, children: list[Any]) -> tuple[str, Any, Pos]:
        words = " ".join(str(w).upper() for w in children[1:])
        pos = position(children[0])
        if words == "MATCH SKIP PAST LAST ROW":
            raise self.refuse(
                pos,
                "AFTER MATCH SKIP PAST LAST ROW is not supported: Stream Analytics skips to "
                "the next row (every event starts an attempt, and matches may overlap)",
            )
        if words != "MATCH SKIP TO NEXT ROW":
            raise self.refuse(pos, f"AFTER {words}: expected AFTER MATCH SKIP TO NEXT ROW")
        return ("after", ("next row", pos), pos)

    def recognize_pattern(self, children: list[Any]) -> tuple[str, Any, Pos]:
        body = children[1]
        return ("pattern", (str(body)[1:-1], _inside(body)), position(children[0]))

    def definition(self, children: list[Any]) -> tuple[str, Expr, Pos]:
        name, _as, expr = children
        return (str(name), expr, name.pos)

    def recognize_define(self, children: list[Any]) -> tuple[str, Any, Pos]:
        return (
            "define",
            tuple(c for c in children[1:] if isinstance(c, tuple)),
            position(children[0]),
        )

    def recognize(self, children: list[Any]) -> Recognize:
        pos = position(children[0])
        found: dict[str, Any] = {}
        alias = None
        for child in children[1:]:
            if isinstance(child, Ident):
                alias = str(child)
                continue
            if not isinstance(child, tuple):
                continue
            kind, value, at = child
            if kind in found:
                raise self.refuse(at, f"a second {_CLAUSES[kind]} in MATCH_RECOGNIZE")
            found[kind] = value
        for needed in ("limit", "pattern", "measures"):
            if needed not in found:
                raise self.refuse(pos, f"MATCH_RECOGNIZE needs {_CLAUSES[needed]}")
        return Recognize(
            pos,
            limit=found["limit"],
            partition_by=found.get("partition", ()),
            measures=found["measures"],
            after=found.get("after"),
            pattern=found["pattern"],
            define=found.get("define", ()),
            alias=alias,
        )


def _inside(token: Token) -> Pos:
    """The place of the first character inside the pattern's parentheses."""
    return Pos(token.line or 1, (token.column or 1) + 1)
