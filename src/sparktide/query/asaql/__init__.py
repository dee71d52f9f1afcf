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

The package: :mod:`.syntax` holds the grammar and the messages of syntax errors;
:mod:`.tree` builds the :mod:`sparktide.query.ast` nodes, with :mod:`.expressions` and
:mod:`.windows` (the windows of ``GROUP BY`` and the time units), on :mod:`.positions`.
"""

from __future__ import annotations

from lark.exceptions import UnexpectedInput, VisitError

from sparktide.errors import QueryError
from sparktide.query.asaql.syntax import parser, syntax_error
from sparktide.query.asaql.tree import TreeBuilder
from sparktide.query.asaql.windows import TIME_UNITS, WINDOW_FUNCTIONS
from sparktide.query.ast import Query

__all__ = ["TIME_UNITS", "WINDOW_FUNCTIONS", "parse_query"]


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
        tree = parser().parse(text)
    except UnexpectedInput as exc:
        raise syntax_error(exc, source, text) from None
    try:
        return TreeBuilder(source).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, QueryError):
            raise exc.orig_exc from None
        raise  # pragma: no cover - a bug in the tree builder
