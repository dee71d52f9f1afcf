"""``SELECT * ... FROM input MATCH_RECOGNIZE (...)`` → the job's ``[match]`` (semantics
§11.25).

- ``LIMIT DURATION(unit, n)`` is ``limit_duration``; ``PARTITION BY`` the partition
  expressions; ``PATTERN`` the pattern, its variables spelled as ``DEFINE`` spells them
  (names are case-insensitive, as in Stream Analytics).
- ``DEFINE v AS condition``: a condition over the event itself, so ``v.x`` is the field
  ``x`` (``v.r.y``: the value ``y`` inside the record ``r``); reading another variable's
  fields is refused.
- ``MEASURES``: ``First(v.x)``, ``Last(v.x)`` (``v`` may be left out: the whole match),
  ``Count(v)`` and ``Count(*)``, each ``AS`` a name.
- Only ``SELECT *`` over it, as in Stream Analytics (the record is the measures), and
  no ``WHERE``, ``GROUP BY``, ``JOIN`` or ``APPLY`` beside it.
"""

from __future__ import annotations

import re
from typing import Any

from sparktide import expr as E
from sparktide.errors import ConfigError
from sparktide.job.pattern import compile_pattern
from sparktide.query.ast import Call, Column, FromSource, Query, Recognize, Select
from sparktide.query.exprs import convert
from sparktide.query.refusal import Refuse, check_column
from sparktide.query.translate.context import (
    Context,
    duration_micros,
    is_timestamp,
)
from sparktide.query.translate.fields import Fields
from sparktide.query.translate.plans import Plan

__all__ = ["check_recognize_places", "match_table"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_recognize_places(query: Query) -> None:
    """Refuse ``MATCH_RECOGNIZE`` but in a statement's first ``SELECT``: a job matches
    its input's events and writes the matches (a step's, or a later branch's, would be
    read by another ``SELECT``)."""
    refuse = Refuse(query.source)
    for step in query.steps:
        for select in step.body.selects:
            if select.recognize is not None:
                raise refuse(
                    select.recognize.pos,
                    f"MATCH_RECOGNIZE in the WITH step {step.name} is not supported yet: "
                    "write it in the statement that writes the matches (SELECT * ... INTO)",
                )
    for statement in query.statements:
        for select in statement.selects[1:]:
            if select.recognize is not None:
                raise refuse(select.recognize.pos, "MATCH_RECOGNIZE in a branch of UNION")


def match_table(
    context: Context, fields: Fields, plan: Plan, select: Select
) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The ``[match]`` table of ``select``'s ``MATCH_RECOGNIZE`` (refused with its place
    when the statement does more than match), and the ``[select]`` of its measures that
    are expressions (``None`` without such)."""
    recognize = select.recognize
    assert recognize is not None
    refuse = context.refuse
    others = {
        "a column list (Stream Analytics writes SELECT * over MATCH_RECOGNIZE)": (
            plan.projection is not None
        ),
        "WHERE (filter the input in a WITH step that MATCH_RECOGNIZE reads)": bool(plan.wheres),
        "GROUP BY": plan.window is not None,
        "JOIN": plan.join is not None,
        "UNION": plan.union is not None,
        "CROSS APPLY": plan.apply is not None,
    }
    for what, present in others.items():
        if present:
            raise refuse(recognize.pos, f"MATCH_RECOGNIZE with {what} is not supported")
    source = plan.sources[0]
    assert recognize.limit is not None and recognize.pattern is not None
    unit, length, at = recognize.limit
    variables = _variables(context, recognize)
    table: dict[str, Any] = {
        "limit_duration": duration_micros(unit, length, at, refuse),
        "pattern": _pattern(context, recognize, variables),
    }
    if recognize.partition_by:

        def key_leaf(node: Column | Call) -> E.Expr:
            return fields.field_leaf(node, source, "PARTITION BY")

        table["partition_by"] = [
            E.to_text(convert(e, key_leaf, refuse, "PARTITION BY")) for e in recognize.partition_by
        ]
    define = {}
    for name, condition, _ in recognize.define:
        own = variables[name.casefold()]
        leaf = _own_fields(context, fields, source, own, variables)
        define[own] = E.to_text(convert(condition, leaf, refuse, f"DEFINE {own}"))
    if define:
        table["define"] = define
    table["measures"], columns = _measures(context, recognize, variables)
    context.notes.append(
        "MATCH_RECOGNIZE is [match]: each partition's events, as they are released in "
        "timestamp order, are matched against the pattern (every event starts an attempt: "
        "AFTER MATCH SKIP TO NEXT ROW); a match is written once no later event can change "
        "it, with its measures and the timestamp of its last event"
    )
    return table, columns


def _variables(context: Context, recognize: Recognize) -> dict[str, str]:
    """The pattern's variables by their case-folded names, spelled as ``DEFINE`` spells
    them (else as the pattern first does); refuses a ``DEFINE`` of no variable."""
    assert recognize.pattern is not None
    text, at = recognize.pattern
    spelled: dict[str, str] = {}
    for name in _NAME.findall(text):
        spelled.setdefault(name.casefold(), name)
    seen: set[str] = set()
    for name, _, pos in recognize.define:
        key = name.casefold()
        if key in seen:
            raise context.refuse(pos, f"DEFINE {name} a second time")
        if key not in spelled:
            raise context.refuse(pos, f"DEFINE {name}: {name} is not a variable of the PATTERN")
        seen.add(key)
        spelled[key] = name
    del at
    return spelled


def _pattern(context: Context, recognize: Recognize, variables: dict[str, str]) -> str:
    """The pattern with its variables spelled one way, checked by the job model's
    grammar (refused at its place)."""
    assert recognize.pattern is not None
    text, at = recognize.pattern
    pattern = _NAME.sub(lambda m: variables[m.group(0).casefold()], text)
    try:
        compile_pattern(pattern, "PATTERN")
    except ConfigError as exc:
        raise context.refuse(at, f"PATTERN ({text}): {exc.message}") from None
    return " ".join(pattern.split())


def _own_fields(
    context: Context, fields: Fields, source: FromSource, own: str, variables: dict[str, str]
) -> Any:
    """The leaf reader of ``DEFINE own``'s condition: ``own.x`` is the event's ``x``."""

    def leaf(node: Column | Call) -> E.Expr:
        if isinstance(node, Column) and len(node.parts) > 1:
            head = node.parts[0].casefold()
            if head == own.casefold():
                node = Column(node.parts[1:], node.pos)
            elif head in variables:
                raise context.refuse(
                    node.pos,
                    f"DEFINE {own} reads {node.name}: a condition reads its own event "
                    f"({own}.x), not another variable's",
                )
        return fields.field_leaf(node, source, f"DEFINE {own}")

    return leaf


def _measures(
    context: Context, recognize: Recognize, variables: dict[str, str]
) -> tuple[dict[str, str], dict[str, str] | None]:
    """The measures, and the ``[select]`` computing those that are expressions over
    measures (``DATEDIFF(second, First(a.t), Last(b.t))``: each ``First``, ``Last`` or
    ``Count`` in it a measure of its own, ``_measure<i>``); ``None`` without such.
    A bare ``v.x`` (or ``x``) is ``Last(v.x)``: its value on the last row given to
    ``v``, as SQL's row patterns read it."""
    refuse = context.refuse
    measures: dict[str, str] = {}
    columns: dict[str, str] = {}
    named: set[str] = set()  # (the hidden measures: one per distinct one)
    computed = False
    for expr, name, at in recognize.measures:
        name = check_column(name, at, refuse, "measure")
        if _is_measure(expr):
            measures[name] = _measure(context, expr, variables)
            columns[name] = name
            continue
        computed = True

        def leaf(node: Column | Call) -> E.Expr:
            if is_timestamp(node):  # (the match's time: its last row's)
                return E.SYSTEM_TIMESTAMP
            if not _is_measure(node):
                raise refuse(
                    node.pos,
                    f"{node.function.upper()}(...) in MEASURES: MEASURES takes First(v.column), "
                    "Last(v.column), Count(v) and Count(*), and expressions over them",
                )
            text = _measure(context, node, variables)
            hidden = next((n for n, t in measures.items() if t == text and n in named), None)
            if hidden is None:
                hidden = f"_measure{len(measures)}"
                measures[hidden] = text
                named.add(hidden)
            return E.Ref(hidden)

        columns[name] = E.to_text(convert(expr, leaf, refuse, "MEASURES"))
    return measures, (columns if computed else None)


def _is_measure(expr: Any) -> bool:
    """Whether ``expr`` is one measure: ``First(...)``, ``Last(...)``, ``Count(...)``,
    or a bare column (``Last`` of it)."""
    if isinstance(expr, Column):
        return True
    return isinstance(expr, Call) and expr.function in ("first", "last", "count")


def _measure(context: Context, expr: Any, variables: dict[str, str]) -> str:
    """A measure's job-file text: ``first(v.x)``, ``last(x)``, ``count(v)``, ``count(*)``
    (a bare column ``v.x``: ``last(v.x)``)."""
    refuse = context.refuse
    if isinstance(expr, Column):
        expr = Call(("last",), (expr,), expr.pos)
    function = expr.function if isinstance(expr, Call) else None
    if function not in ("first", "last", "count") or expr.over is not None or expr.distinct:
        raise refuse(
            expr.pos, "MEASURES takes First(v.column), Last(v.column), Count(v) and Count(*)"
        )
    if function == "count" and expr.star:
        return "count(*)"
    if len(expr.args) != 1 or not isinstance(expr.args[0], Column):
        raise refuse(expr.pos, f"{function.capitalize()}(...) takes one column: v.column")
    parts = list(expr.args[0].parts)
    head = variables.get(parts[0].casefold())
    if head is not None:
        parts = [head, *parts[1:]]
    for part in parts[1 if head is not None else 0 :]:
        check_column(part, expr.args[0].pos, refuse, "column")
    text = ".".join(parts)
    if function == "count" and (head is None or len(parts) > 1):
        raise refuse(expr.pos, "Count(...) in MEASURES takes a pattern variable or *")
    if function != "count" and head is not None and len(parts) == 1:
        raise refuse(expr.pos, f"{function.capitalize()}({head}) needs a column: {head}.column")
    return f"{function}({text})"
