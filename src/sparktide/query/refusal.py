"""Refusals: the :class:`~sparktide.errors.QueryError` at a place of a query or pipeline,
and the rule every name it gives a column must follow.

Both front ends (Stream Analytics queries and Atlas pipelines) and the query parser
refuse what the engines cannot run by naming it and its line and column; a
:class:`Refuse` made once per text builds those errors.
"""

from __future__ import annotations

from typing import Any

from sparktide.errors import QueryError
from sparktide.query.ast import Pos

__all__ = ["Refuse", "check_column", "is_column_name"]

_COLUMN_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class Refuse:
    """Makes the :class:`QueryError` at a position of one query text.

    Parameters
    ----------
    source
        The name of the text in messages (its file name).
    """

    def __init__(self, source: str) -> None:
        self.source = source

    def __call__(self, pos: Pos, message: str) -> QueryError:
        return QueryError(self.source, pos.line, pos.column, message)


def is_column_name(name: str) -> bool:
    """Whether ``name`` is a sparktide column name: letters, digits, ``_`` and ``-``, not
    starting with a digit."""
    return bool(name) and (name[0].isalpha() or name[0] == "_") and set(name) <= _COLUMN_CHARS


def check_column(name: str, pos: Pos, refuse: Any, what: str = "column") -> str:
    """Return ``name`` if it is a sparktide column name, else refuse it at ``pos``."""
    if is_column_name(name):
        return name
    raise refuse(
        pos,
        f"{what} {name!r} cannot be a sparktide column name (letters, digits, '_' and '-', "
        "not starting with a digit)",
    )
