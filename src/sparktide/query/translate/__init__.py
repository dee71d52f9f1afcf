"""Stream Analytics queries → sparktide jobs (:class:`~sparktide.job.Job`; docs/query.md).

The job model reads one input, or the union of several (``[inputs.<name>]``), or joins
two (``[join]``), or joins one with reference data; it has an optional filter, an optional
window with grouping columns, named aggregates and a ``having`` condition, and optional
output columns (``[select]``).
Everything that model expresses exactly is translated; every other construct is
refused with a :class:`~sparktide.errors.QueryError` that names it and its line and
column. Nothing is translated approximately.

What is translated:

- ``FROM input [TIMESTAMP BY column [OVER key]] [PARTITION BY column]`` → ``[source]``
  (``timestamp_by``, ``over``, ``partition``) and ``ordering.partitioned = true``;
- ``GROUP BY`` one window and plain columns → ``[window]`` with ``boundary = "end"``
  (Stream Analytics' ``(start, end]``) and ``group_by``;
- ``SELECT`` grouped columns, ``COUNT(*)``, ``COUNT(x)``, ``COUNT(DISTINCT x)``,
  ``SUM``, ``AVG``, ``MIN``, ``MAX`` of a column ``AS name``, and ``System.Timestamp()``
  (the window records' ``window_end``) → ``window.aggregates``;
- ``WHERE`` → ``[filter] where`` (conditions of pass-through steps are joined by
  ``AND``); ``HAVING`` → ``[window] having``;
- computed ``SELECT`` columns (and renamed grouped columns) → ``[select]``, with the
  aggregates they use (``SUM(Toll) / COUNT(*)``) as aggregates of their own;
- ``SELECT *`` without ``GROUP BY`` → a job without a window (ordered events);
  ``SELECT a, b, expr AS c`` without ``GROUP BY`` → the same with ``[select]``;
- ``WITH`` steps that pass events through (``SELECT * FROM ...``) around the one step
  that does the work; steps that filter and compute columns, and windowed steps read
  by a SELECT without ``GROUP BY``, composed with the SELECTs that read them
  (:mod:`.inline`, semantics §13);
- ``UNION`` (= ``UNION ALL``: Stream Analytics keeps duplicates) of SELECTs that each
  read another input → a union, ``[inputs.<name>]`` per branch with its ``TIMESTAMP
  BY``; a ``WHERE`` or a column list only when every branch has the same one (the job
  has one ``[filter]`` and one ``[select]``); a window over the union in a later step;
- ``FROM a ... JOIN b ... ON a.k = b.k AND DATEDIFF(unit, a, b) BETWEEN x AND y`` →
  ``[join]`` (``on`` the equal columns, ``between`` the bounds of ``b − a`` turned into
  ``right − left``); with ``SELECT *`` matches written whole, with ``SELECT a.k, b.t AS
  t, DATEDIFF(minute, a.t, b.t) AS d`` a ``[select]`` over the matches
  (``a.k`` → ``input.field``);
- ``FROM stream ... [LEFT OUTER] JOIN ref ON s.k = r.k`` where the job file says ``ref``
  is reference data (``[inputs.ref] reference = true``, as a Stream Analytics job's
  configuration says it) → ``[join]`` without ``between`` (``type = "left"`` for ``LEFT
  OUTER JOIN``); ``FROM ref JOIN stream`` (inner) is the same join, sides swapped; a
  ``WHERE`` on the stream's fields → ``[filter]`` (it stops events before they meet the
  table); columns → ``[select]`` as over any join;
- ``DATEDIFF(unit, start, end)`` outside ``ON`` (columns, ``System.Timestamp()``,
  ISO-8601 text) → the expression language's ``DATEDIFF``;
- several ``SELECT ... INTO`` statements → one job per statement
  (:class:`~sparktide.query.jobs.Translation`),
  each bound to its output.

The package, in the order a statement is translated: :mod:`.inline` composes each
SELECT with the steps it reads (a window over a windowed step: :mod:`.rollup`; a JOIN of
steps: :mod:`.joinsteps`); :mod:`.statement` strings the
parts together; :mod:`.planner` follows the ``WITH`` steps into a :mod:`.plans` plan,
with :mod:`.unions` and :mod:`.joins` (its ``ON``: :mod:`.joinon`); :mod:`.inputs` binds
the inputs, :mod:`.outputs` the outputs; :mod:`.fields` reads columns, ``WHERE`` and
column lists, :mod:`.matches` what a JOIN writes, :mod:`.window` and
:mod:`.aggregates` the window and its columns; :mod:`.context` is what they share.
"""

from __future__ import annotations

from sparktide.query.ast import Query
from sparktide.query.bind import Bindings
from sparktide.query.javascript import expand_calls
from sparktide.query.jobs import StatementJob, Translation
from sparktide.query.refusal import Refuse
from sparktide.query.translate.context import AGGREGATES
from sparktide.query.translate.inline import inline_steps
from sparktide.query.translate.joinon import MAX_JOIN_BOUND
from sparktide.query.translate.outputs import OutputClaims
from sparktide.query.translate.recognize import check_recognize_places
from sparktide.query.translate.statement import StatementTranslator

__all__ = ["AGGREGATES", "MAX_JOIN_BOUND", "translate_query"]


def translate_query(query: Query, bindings: Bindings) -> Translation:
    """Translate a parsed Stream Analytics query into jobs, one per statement.

    Several statements (``SELECT ... INTO a ...; SELECT ... INTO b ...``) must write to
    different outputs, and their outputs must not share a folder (each job has its own
    output, dead letters, metrics and checkpoint).

    Parameters
    ----------
    query
        The query (:func:`sparktide.query.asaql.parse_query`).
    bindings
        The job file's bindings of input and output names
        (:func:`sparktide.query.bind.load_bindings`).

    Raises
    ------
    QueryError
        For a construct the engines cannot run yet, naming it and its place.
    ConfigError
        When the job file contradicts the query (naming the key), or two statements'
        outputs share a folder.
    """
    # udf.<name>(...): the job file's JavaScript function, read as an expression (§11.24)
    query = expand_calls(query, bindings.functions, Refuse(query.source))
    check_recognize_places(query)  # (before steps are composed into their readers)
    query = inline_steps(query, bindings)  # stateless steps composed with their readers
    statements: list[StatementJob] = []
    claims = OutputClaims(query)
    for index in range(len(query.statements)):
        translator = StatementTranslator(query, bindings, index)
        statement = translator.run()
        claims.claim(index, translator.output_key, statement.job)
        statements.append(statement)
    return Translation(tuple(statements), query.source)
