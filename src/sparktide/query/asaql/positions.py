"""Where each piece of the parse tree is, and the names it holds.

Every node of :mod:`sparktide.query.ast` carries its :class:`~sparktide.query.ast.Pos`;
these helpers read it from Lark tokens and trees, and keep it with identifiers
(:class:`Ident`), which are plain strings in the tree.
"""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

from sparktide.query.ast import Pos

__all__ = ["Ident", "identifier", "keyword", "position"]


def position(item: Any) -> Pos:
    """The place of a token, a tree or a node."""
    if isinstance(item, Token):
        return Pos(item.line or 1, item.column or 1)
    if isinstance(item, (Tree,)):
        return Pos(item.meta.line, item.meta.column)
    pos = getattr(item, "pos", None)
    if isinstance(pos, Pos):
        return pos
    raise AssertionError(f"no position for {item!r}")  # pragma: no cover


def identifier(token: Token) -> str:
    """The name a ``NAME`` or ``[BRACKETED]`` token spells (brackets removed)."""
    text = str(token)
    if token.type == "BRACKETED":
        return text[1:-1].replace("]]", "]")
    return text


def keyword(children: list[Any], name: str) -> Token | None:
    """The first token of type ``name`` among ``children``, or ``None``."""
    for child in children:
        if isinstance(child, Token) and child.type == name:
            return child
    return None


class Ident(str):
    """A name with its position (identifiers are plain strings in the tree)."""

    pos: Pos

    def __new__(cls, text: str, pos: Pos) -> Ident:
        obj = super().__new__(cls, text)
        obj.pos = pos
        return obj
