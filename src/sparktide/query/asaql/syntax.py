"""The grammar of Stream Analytics queries and the messages of text outside it.

The grammar is ``asaql.lark`` (LALR(1), `lark <https://github.com/lark-parser/lark>`_):
keywords are case-insensitive, identifiers may be ``[bracketed]``, ``--`` and ``/* */``
are comments. A text outside it is a :class:`~sparktide.errors.QueryError` naming the
line and column and what was expected there, in words (``a name``, ``';'``).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from sparktide.errors import QueryError

__all__ = ["parser", "syntax_error"]

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
def parser() -> Lark:
    """The LALR parser of ``asaql.lark`` (built once)."""
    grammar = resources.files("sparktide.query").joinpath("asaql.lark").read_text("utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)


def syntax_error(exc: UnexpectedInput, source: str, text: str) -> QueryError:
    """The :class:`QueryError` of the parser's ``exc`` on ``text``."""
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
    hint = ""
    if token.type == "OVER":  # (OVER follows a call: SessionWindow(...), LAG(...) ...)
        hint = (
            " (OVER (PARTITION BY ...) applies to SessionWindow only, and to the analytic "
            "functions LAG, LAST and ISFIRST and the aggregates SUM, COUNT, AVG, MIN, MAX)"
        )
    return QueryError(
        source,
        line,
        column,
        f"unexpected {str(token)!r}{_expected(exc.expected)}{hint}",
    )


def _expected(names: Any) -> str:
    shown = sorted({_TERMINAL_TEXT.get(n, n if n.isupper() else repr(n)) for n in names})
    if not shown:
        return ""
    if len(shown) > 8:
        shown = [*shown[:8], "..."]
    return "; expected " + ", ".join(shown)
