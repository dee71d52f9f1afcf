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
from typing import TYPE_CHECKING

from sparktide.spark.columns import PARTITION
from sparktide.spark.sql import sql_string

if TYPE_CHECKING:
    from sparktide.spark.context import Context

__all__ = ["ROW_INPUT", "by_input"]

#: SQL: the input a row of a union or a join belongs to (its partition id's prefix).
ROW_INPUT = f"substring_index({PARTITION}, '/', 1)"


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
