"""A JOIN of steps that compute columns or filter (semantics §13.2, §11.20).

A step without ``WHERE`` that computes columns of each event of one input keeps every
event and its time: a JOIN that reads it reads its input instead, under the name the
JOIN gives it (its alias, else the step's name), with the step's expressions in place of
the step's columns (``a.w`` over ``v * 2 AS w`` is ``a.v * 2``). The matches are the same:
each event of the step is an event of its input at the same time, and ``ON`` and the
column list read the same values. A step's ``WHERE`` joins the JOIN's (over the side's
name), where it reads one input's fields: that input's own ``where`` (semantics §11.20).
A step's ``WHERE`` that reads ``System.Timestamp()`` (the event's time in the step, the
match's over the JOIN) is its input's ``where`` as it stands, never part of the JOIN's.
A step whose columns read ``System.Timestamp()`` or whose columns ``SELECT *`` would
write whole is left to the planner, which refuses a JOIN of a step.
"""

from __future__ import annotations

from dataclasses import replace

from sparktide.query.ast import (
    Call,
    Clause,
    Column,
    Expr,
    FromSource,
    Operation,
    Select,
    Star,
    Union,
)
from sparktide.query.refusal import Refuse
from sparktide.query.translate.analytic import is_analytic
from sparktide.query.translate.context import UNIT_CALLS, reads_timestamp
from sparktide.query.translate.joinon import all_of

__all__ = ["JoinSteps"]


class JoinSteps:
    """Composes a JOIN with the computing steps it reads.

    Parameters
    ----------
    refuse
        Makes the refusals.
    steps
        The composed bodies of the steps defined so far, by case-folded name.
    """

    def __init__(self, refuse: Refuse, steps: dict[str, Union]) -> None:
        self.refuse = refuse
        self.steps = steps

    def compose(self, select: Select) -> Select:
        """``select`` (which has a JOIN) reading the inputs of the steps it joins."""
        if any(isinstance(i.expr, Star) for i in select.items):
            return select
        sides = [select.source, *(j.source for j in select.joins)]
        columns: dict[tuple[str, ...], Expr] = {}
        strict: dict[str, str] = {}  # qualifiers of steps without *: the step's name
        filters: list[Expr] = []  # the steps' WHEREs, over their sides (semantics §11.20)
        composed = [self.side(side, columns, strict, filters) for side in sides]
        if composed == sides:
            return select
        exprs = [i.expr for i in select.items] + [j.condition for j in select.joins]
        exprs += [c.expr for c in (select.where, select.having) if c is not None]
        for expr in exprs:
            self.check_known(expr, columns, strict)  # type: ignore[arg-type]

        def over(expr: Expr) -> Expr:
            return _substitute(expr, columns)

        items = []
        for item in select.items:
            assert not isinstance(item.expr, Star)
            expr = over(item.expr)
            alias = item.alias
            if alias is None and isinstance(item.expr, Column) and expr != item.expr:
                alias = item.expr.parts[-1]  # a.w over v * 2 AS w keeps the name w
            items.append(replace(item, expr=expr, alias=alias))
        joins = tuple(
            replace(j, source=s, condition=over(j.condition))
            for j, s in zip(select.joins, composed[1:], strict=True)
        )
        where = select.where
        if where is not None:
            where = replace(where, expr=over(where.expr))
        if filters:  # (the steps' first: each side's own, then the JOIN's WHERE)
            terms = (*filters, *(() if where is None else (where.expr,)))
            condition = all_of(terms)
            where = Clause(condition, where.pos if where is not None else select.pos)
        return replace(
            select,
            items=tuple(items),
            source=composed[0],
            joins=joins,
            where=where,
            group_by=tuple(replace(g, expr=over(g.expr)) for g in select.group_by),
            having=None
            if select.having is None
            else replace(select.having, expr=over(select.having.expr)),
        )

    def check_known(
        self, expr: Expr, columns: dict[tuple[str, ...], Expr], strict: dict[str, str]
    ) -> None:
        """Refuse ``s.x`` where the step ``s`` (without ``*``) has no column ``x``."""
        if isinstance(expr, Column):
            parts = tuple(p.casefold() for p in expr.parts)
            if len(parts) == 2 and parts[0] in strict and parts not in columns:
                raise self.refuse(
                    expr.pos, f"{expr.name} is not a column of the step {strict[parts[0]]}"
                )
        elif isinstance(expr, Operation):
            for operand in expr.operands:
                self.check_known(operand, columns, strict)
        elif isinstance(expr, Call):
            skip = 1 if expr.function in UNIT_CALLS else 0
            for arg in expr.args[skip:]:
                self.check_known(arg, columns, strict)

    def side(
        self,
        side: FromSource,
        columns: dict[tuple[str, ...], Expr],
        strict: dict[str, str],
        filters: list[Expr],
    ) -> FromSource:
        """The input a side of the JOIN reads (adding its step's columns to
        ``columns``, its qualifiers to ``strict`` when it has no ``*``, and its WHERE
        over the side to ``filters``), or the side itself when it is no composable
        step."""
        body = self.steps.get(side.name.casefold())
        if body is None or len(body.selects) != 1:
            return side
        step = body.selects[0]
        if (
            step.joins
            or step.applies
            or step.group_by
            or step.having is not None
            or step.into is not None
            or step.source.name.casefold() in self.steps
            or side.timestamp_by is not None
            or side.over
            or side.partition_by is not None
            or any(_reads_time(i.expr) for i in step.items if not isinstance(i.expr, Star))
            or (step.where is not None and reads_analytic_call(step.where.expr))
        ):
            return side
        alias = side.alias or side.name
        names = {step.source.name.casefold()}
        if step.source.alias is not None:
            names.add(step.source.alias.casefold())
        for item in step.items:
            if isinstance(item.expr, Star):
                continue
            name = item.alias or (item.expr.parts[-1] if isinstance(item.expr, Column) else None)
            if name is not None:
                qualified = _qualify(item.expr, alias, names)
                for qualifier in {alias.casefold(), side.name.casefold()}:
                    columns[(qualifier, name.casefold())] = qualified
        if not any(isinstance(i.expr, Star) for i in step.items):
            for qualifier in {alias.casefold(), side.name.casefold()}:
                strict[qualifier] = side.name
        if step.where is not None and _reads_time(step.where.expr):
            # (System.Timestamp() in it is the event's, not the match's: the input's own
            # where as it stands, never a term of the JOIN's WHERE)
            return replace(step.source, alias=alias, where=_qualify(step.where.expr, alias, names))
        if step.where is not None:  # (its input's fields, now named through the side)
            filters.append(_qualify(step.where.expr, alias, names))
        return replace(step.source, alias=alias)


def reads_analytic_call(expr: Expr) -> bool:
    """Whether ``expr`` calls an analytic function."""
    if isinstance(expr, Call):
        return is_analytic(expr) or any(reads_analytic_call(a) for a in expr.args)
    if isinstance(expr, Operation):
        return any(reads_analytic_call(o) for o in expr.operands)
    return False


def _reads_time(expr: Expr) -> bool:
    """Whether ``expr`` reads ``System.Timestamp()`` or an analytic function."""
    return reads_timestamp(expr) or reads_analytic_call(expr)


def _qualify(expr: Expr, alias: str, names: set[str]) -> Expr:
    """``expr`` of a step with its input's columns qualified by ``alias``."""
    if isinstance(expr, Column):
        if len(expr.parts) == 1:
            return replace(expr, parts=(alias, expr.parts[0]))
        if len(expr.parts) == 2 and expr.parts[0].casefold() in names:
            return replace(expr, parts=(alias, expr.parts[1]))
        return expr
    if isinstance(expr, Operation):
        return replace(expr, operands=tuple(_qualify(o, alias, names) for o in expr.operands))
    if isinstance(expr, Call):
        skip = 1 if expr.function in UNIT_CALLS else 0
        args = expr.args[:skip] + tuple(_qualify(a, alias, names) for a in expr.args[skip:])
        return replace(expr, args=args)
    return expr


def _substitute(expr: Expr, columns: dict[tuple[str, ...], Expr]) -> Expr:
    """``expr`` with each qualified column of a composed step replaced."""
    if isinstance(expr, Column):
        return columns.get(tuple(p.casefold() for p in expr.parts), expr)
    if isinstance(expr, Operation):
        return replace(expr, operands=tuple(_substitute(o, columns) for o in expr.operands))
    if isinstance(expr, Call):
        skip = 1 if expr.function in UNIT_CALLS else 0
        args = expr.args[:skip] + tuple(_substitute(a, columns) for a in expr.args[skip:])
        return replace(expr, args=args)
    return expr
