"""Expressions of a job file: ``[filter] where``, ``[window] having`` and ``[select]``.

A small SQL subset (grammar ``expr/expr.lark``, LALR(1), parsed by lark): column references
(``speed``, ``[lane-id]``, and ``input.field`` for the records of a join), numbers,
``'strings'``, ``true``/``false``/``null``, ``= <> != < <= > >=``, ``AND OR NOT``,
``+ - * / %``, unary minus, ``IS [NOT] NULL``, ``IS [NOT] MISSING``, ``[NOT] IN (...)``,
``[NOT] BETWEEN a AND b``, ``[NOT] LIKE 'pattern'``, ``DATEDIFF(unit, start, end)``, Stream
Analytics' scalar functions (:data:`FUNCTIONS`, :mod:`~sparktide.expr.functions`),
``CASE`` and ``CAST``/``TRY_CAST`` (``docs/semantics.md`` §11.11-§11.13).

The values are those of JSON, with SQL's three-valued logic (``docs/semantics.md``):

- a missing field is null; a value is an *integer* (64-bit), a *float* (a double), a
  *string*, a *boolean*, null, or *other* (arrays, objects: only ``IS NULL`` sees them);
  an integer beyond 64 bits is read as a float;
- comparisons between numbers are numeric (two integers exactly, an integer and a float
  as doubles), strings compare by code point, booleans ``false < true``; a comparison
  between other kinds (a string and a number, a boolean and a number ...) is null;
- ``+ - *`` of two integers is an integer (null when it leaves 64 bits), of numbers
  otherwise a float; ``/`` is always a float division; ``%`` is the remainder with the
  sign of the dividend (SQL's, not Python's); division or remainder by zero is null; a
  float result beyond the range of a double is null; arithmetic on anything but numbers
  is null;
- ``AND``, ``OR``, ``NOT`` are Kleene's; an operand that is not a boolean is null;
- ``x IS MISSING`` is true when the record has no field ``x`` at all (one holding null
  is not missing), for a field ``x`` of the record only (``docs/semantics.md`` §11.16);
- ``x IN (a, b)`` is ``x = a OR x = b``; ``x BETWEEN a AND b`` is ``x >= a AND x <= b``;
- ``LIKE`` takes a string literal pattern (``%`` any text, ``_`` one character, no
  escape character) and matches strings only, case-sensitively;
- ``DATEDIFF(unit, start, end)`` is Stream Analytics' (and SQL Server's): the number of
  ``unit`` boundaries crossed from ``start`` to ``end`` (``DATEDIFF(minute,
  '...T09:00:59Z', '...T09:01:00Z')`` is 1), an integer, negative when ``end`` is
  before ``start``; the times are ISO-8601 text with a zone (as sparktide reads every
  time); null when either is null, not a string, or not such a time. Units: ``day``
  (``dd``, ``d``), ``hour`` (``hh``), ``minute`` (``mi``, ``n``), ``second`` (``ss``,
  ``s``), ``millisecond`` (``ms``), ``microsecond`` (``mcs``); days are UTC days.

A row passes a filter only when the predicate is true. :func:`evaluate` is the reference
engine's evaluator; ``sparktide.spark.expr`` compiles the same trees to Spark SQL.

The package: :mod:`~sparktide.expr.nodes` (the tree), :mod:`~sparktide.expr.parse`
(text to tree), :mod:`~sparktide.expr.text` (tree to canonical text),
:mod:`~sparktide.expr.walk` (the columns read; the desugared form) and
:mod:`~sparktide.expr.evaluation` (the reference evaluator).
"""

from sparktide.expr import evaluation, nodes, parse, text, walk
from sparktide.expr.evaluation import *  # noqa: F403
from sparktide.expr.nodes import *  # noqa: F403
from sparktide.expr.parse import *  # noqa: F403
from sparktide.expr.text import *  # noqa: F403
from sparktide.expr.walk import *  # noqa: F403

#: The names of the modules above, together.
__all__ = [*nodes.__all__, *evaluation.__all__, *parse.__all__, *text.__all__, *walk.__all__]
