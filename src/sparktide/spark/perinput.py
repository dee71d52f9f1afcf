"""Per-input settings in Spark SQL (semantics §7.8): a rule's SQL as a ``CASE`` on the
row's input.

Where the inputs of a union or a join carry their own ordering policy or punctuation
(``[inputs.<name>.ordering]``, ``[inputs.<name>.punctuation]``), each rule's SQL is
written once per input from that input's settings (:meth:`Context.for_input`) and the
forms are joined by one ``CASE`` on the input named in the row's partition id
(``<input>/<partition>``) — evaluated per row inside the same projection or window
function, never a Python call per event. Inputs whose forms are the same share a
branch; when every input's form is the job-wide one, the SQL is exactly the job's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparktide.expr import EVENT_INPUT, SYSTEM_TIMESTAMP, Ref
from sparktide.spark.aggregates import json_text
from sparktide.spark.columns import FILE, PARTITION
from sparktide.spark.expr import Compiled, json_of
from sparktide.spark.sql import sql_string

if TYPE_CHECKING:
    from sparktide.spark.context import Context

__all__ = ["RELEASED_INPUT", "ROW_INPUT", "by_input", "per_input_column_text"]

#: SQL: the input a row of a union or a join belongs to (its partition id's prefix).
ROW_INPUT = f"substring_index({PARTITION}, '/', 1)"
#: SQL: the same of a released row (held rows keep no partition): its file's prefix, as
#: a union labels its inputs' files (``<input>/<file>``, like its partition ids).
RELEASED_INPUT = f"substring_index({FILE}, '/', 1)"


def by_input(context: Context, build: Callable[[Context], str]) -> str:
    """The SQL ``build`` writes for each input's settings, as one expression: the
    job-wide form when every input's is the same, else a ``CASE`` on :data:`ROW_INPUT`
    (a row with no partition takes the job-wide form)."""
    own = build(context)
    if not context.inputs:
        return own
    forms: dict[str, list[str]] = {}
    for name, input_context in context.inputs.items():
        forms.setdefault(build(input_context), []).append(name)
    if list(forms) == [own]:
        return own
    whens = " ".join(
        f"WHEN {ROW_INPUT} IN ({', '.join(sql_string(n) for n in names)}) THEN ({form})"
        for form, names in forms.items()
    )
    return f"(CASE {whens} ELSE ({own}) END)"


def per_input_column_text(
    compiled: Compiled,
    projection: Any,
    field: Callable[[str], str],
    row_input: str = ROW_INPUT,
    text_of: Callable[[Any], str | None] | None = None,
) -> tuple[str, list[str | None]]:
    """SQL of a ``[select]`` column's JSON text over a record (a bare column passes the
    record's value, read by ``field``, through), and of its ``CAST`` failures; with one
    expression per input, each event's own input's (semantics §11.21), the input being
    the SQL ``row_input``. ``text_of``, if given, gives an expression's text where it
    knows it (``None`` where it does not)."""

    def one(expr: Any) -> tuple[str, str | None]:
        known = text_of(expr) if text_of is not None else None
        if known is not None:
            return known, None
        if isinstance(expr, Ref) and expr not in (SYSTEM_TIMESTAMP, EVENT_INPUT):
            return f"coalesce({json_text(field(expr.name))}, 'null')", None
        value = compiled.value(expr)
        return json_of(value), value.err

    if not projection.by_input:
        text, failure = one(projection.parsed)
        return text, [failure]
    cases, failures = [], []
    for name, expression in projection.expressions():
        text, failure = one(expression)
        own = f"{row_input} = {sql_string(name)}"
        cases.append(f"WHEN {own} THEN {text}")
        failures.append(failure and f"CASE WHEN {own} THEN {failure} END")
    return f"CASE {' '.join(cases)} END", failures
