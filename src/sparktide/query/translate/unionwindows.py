"""A window or an analytic function over a ``UNION`` step whose branches compute their
columns (semantics §11.22).

``WITH u AS (SELECT id, speed FROM north UNION SELECT id, velocity * 2 AS speed FROM
south) SELECT AVG(speed) ... FROM u GROUP BY TumblingWindow(...)`` is one window over the
union of the inputs: the step reads as one step whose columns choose each input's
expression by ``System.Input()`` (``CASE System.Input() WHEN 'north' THEN speed WHEN
'south' THEN velocity * 2 END``; a column every branch computes alike stays that one
expression), over the *events step* of the union: the same branches passing their
events through (``SELECT * FROM north [WHERE ...] UNION ...``), each with its own
``WHERE``. The inliner composes the window with that one step as with any step that
computes columns (:meth:`Inliner.over_events`); the events step goes into the query right
after the union step, named :func:`events_step_name`. ``LAG``, ``LAST``, ``ISFIRST`` and
the analytic aggregates over such a step read it the same way: they must see the events
of every input in one partition, not one union branch each. An APPLY over such a step is
composed with each branch, as a SELECT without a window is; where the branches compute
the value it expands differently, :func:`apply_over` chooses it by ``System.Input()``.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any

from sparktide.query.ast import (
    Call,
    Column,
    Expr,
    FromSource,
    Literal,
    Operation,
    Pos,
    Select,
    SelectItem,
    Star,
)
from sparktide.query.ast import Union as UnionBody
from sparktide.query.refusal import Refuse
from sparktide.query.translate.context import source_names

__all__ = ["INPUT_CALL", "apply_over", "events_step_name", "input_call", "one_step"]

#: ``System.Input()`` in a composed query: the function the window's columns choose by.
INPUT_CALL = "system.input"


def events_step_name(step: str) -> str:
    """The name of the events step of the union step ``step`` (no query can write it)."""
    return f"{step} events"


def input_call(pos: Any) -> Call:
    """``System.Input()`` at ``pos``."""
    return Call(("System", "Input"), (), pos)


def one_step(
    name: str, body: UnionBody, refuse: Refuse, steps: set[str], reader: str = "a window"
) -> tuple[Select, UnionBody]:
    """The union step ``body`` (named ``name``; ``steps``: the query's steps' case-folded
    names) as one step choosing each column's expression by input, and its events step
    (see the module's docstring); ``reader`` names what reads it, for the refusals."""
    branches = body.selects
    for branch in branches:
        if branch.source.name.casefold() in steps:  # (System.Input() names inputs)
            raise refuse(
                branch.source.pos,
                f"{reader} over the UNION step {name}, whose branch reads the step "
                f"{branch.source.name}, is not supported yet: its branches read inputs",
            )
        if branch.joins or branch.applies or any(isinstance(i.expr, Star) for i in branch.items):
            raise refuse(branch.pos, f"{reader} over the UNION step {name}: {_SIMPLE}")
        for item in branch.items:
            if item.alias is None and not isinstance(item.expr, Column):
                raise refuse(
                    item.pos,
                    f"{reader} over the UNION step {name}: name each column its branches "
                    "compute (AS name), as it reads them by name",
                )
    names = [[_name(i) for i in b.items] for b in branches]
    if any([n.casefold() for n in other] != [n.casefold() for n in names[0]] for other in names):
        raise refuse(
            body.pos,
            f"the branches of the UNION step {name} name different columns: Stream Analytics "
            "matches a UNION's columns by name and order",
        )
    first = branches[0]
    items = []
    for index, item in enumerate(first.items):
        column = names[0][index]
        exprs = [_own(b.items[index].expr, b) for b in branches]
        items.append(SelectItem(_by_input(branches, exprs, item.pos), column, item.pos))
    passing = tuple(
        replace(b, items=(SelectItem(Star(None, b.pos), None, b.pos),), into=None, into_pos=None)
        for b in branches
    )
    events = FromSource(events_step_name(name), None, None, (), None, first.source.pos)
    step = replace(first, items=tuple(items), source=events, where=None, into=None, into_pos=None)
    return step, replace(body, selects=passing)


def apply_over(name: str, branches: tuple[Select, ...], composed: list[Select]) -> list[Select]:
    """An APPLY over the UNION step ``name`` (``branches``), ``composed``: the reader
    composed with each branch. A job expands every input's events by one ``[apply]``
    (semantics §11.18): where the branches compute the value it expands differently,
    that value is chosen by ``System.Input()`` in each (``CASE System.Input() WHEN
    'north' THEN readings WHEN 'south' THEN samples END``, §11.22)."""
    owns = [
        tuple(_own(a.value, branch) for a in select.applies)
        for branch, select in zip(branches, composed, strict=True)
    ]
    if len({_shape(own) for own in owns}) == 1:
        return composed
    out = []
    for select in composed:
        applies = tuple(
            replace(apply, value=_by_input(branches, [own[i] for own in owns], apply.pos))
            for i, apply in enumerate(select.applies)
        )
        out.append(replace(select, applies=applies))
    return out


def _by_input(branches: tuple[Select, ...], exprs: list[Expr], pos: Pos) -> Expr:
    """One expression of the branches' own ``exprs``: theirs when all alike, else the
    one ``System.Input()`` chooses (``CASE System.Input() WHEN 'north' THEN ... END``)."""
    if len({_shape(e) for e in exprs}) == 1:
        return exprs[0]
    operands: list[Expr] = [input_call(pos)]
    for branch, own in zip(branches, exprs, strict=True):
        operands += [Literal(branch.source.name, pos), own]
    return Operation("CASE", tuple(operands), pos, "CASE x")


_SIMPLE = (
    "its branches read inputs, without JOIN or APPLY, to be composed with it "
    "(compute the columns in a step per input)"
)


def _name(item: SelectItem) -> str:
    if item.alias is not None:
        return item.alias
    assert isinstance(item.expr, Column)  # (one_step refused the others)
    return item.expr.parts[-1]


def _own(expr: Expr | Star, branch: Select) -> Expr:
    """A branch's column expression with the branch's own qualifiers dropped (``n.speed``
    is ``speed`` of its input)."""
    assert not isinstance(expr, Star)
    names = source_names(branch.source)

    def walk(node: Any) -> Any:
        if isinstance(node, Column) and len(node.parts) > 1 and node.parts[0].casefold() in names:
            return replace(node, parts=node.parts[1:])
        if isinstance(node, tuple):
            return tuple(walk(n) for n in node)
        if is_dataclass(node) and not isinstance(node, type) and not isinstance(node, Literal):
            return replace(node, **{f.name: walk(getattr(node, f.name)) for f in fields(node)})
        return node

    return walk(expr)


def _shape(node: Any) -> Any:
    """``node`` without its positions (two branches' expressions compare by it)."""
    if isinstance(node, tuple):
        return tuple(_shape(n) for n in node)
    if isinstance(node, Pos):
        return None
    if is_dataclass(node) and not isinstance(node, type):
        return (type(node).__name__, *(_shape(getattr(node, f.name)) for f in fields(node)))
    return node
