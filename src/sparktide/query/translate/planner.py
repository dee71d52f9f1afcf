"""Following a statement through its ``WITH`` steps into a :class:`~sparktide.query.
translate.plans.Plan`.

A statement reads an input, a step defined before it, a JOIN or a UNION; each step it
reads is followed in turn. Steps that pass events through (``SELECT * FROM ...``) add
their ``WHERE`` conditions (joined by ``AND``); exactly one step (or the statement)
does the work: a window, a column list (the last statement only) or a JOIN.
"""

from __future__ import annotations

from dataclasses import replace

from sparktide import expr as E
from sparktide.query.ast import (
    Call,
    Column,
    CrossApply,
    FromSource,
    Query,
    Select,
    Star,
    Step,
    Union,
)
from sparktide.query.exprs import convert
from sparktide.query.translate.context import Context, describe, source_names
from sparktide.query.translate.fields import Fields
from sparktide.query.translate.inline import map_columns, reads_analytic
from sparktide.query.translate.joins import JoinPlanner
from sparktide.query.translate.lookupwindow import over_table
from sparktide.query.translate.matchwindow import over_matches
from sparktide.query.translate.plans import Plan, with_where
from sparktide.query.translate.streamtables import stream_tables
from sparktide.query.translate.tablejoins import chained_tables
from sparktide.query.translate.unions import Unions
from sparktide.query.translate.windowjoin import WindowStep, window_times

__all__ = ["Planner"]


class Planner:
    """Plans the statements of one query.

    Parameters
    ----------
    context
        The statement's translation.
    fields
        Reads the inputs' fields.
    steps
        The query's WITH steps by case-folded name, each with its index.
    """

    def __init__(
        self,
        context: Context,
        fields: Fields,
        steps: dict[str, tuple[int, Step]],
        query: Query | None = None,
    ) -> None:
        self.refuse = context.refuse
        self.fields = fields
        self.steps = steps
        self.joins = JoinPlanner(context, steps)
        self.unions = Unions(context.refuse, fields, query)

    def plan(self, union: Union, visible: int, where: str) -> Plan:
        """Follow ``union`` through the WITH steps defined before index ``visible``
        (``where``: ``"statement"``, or the name of the step being followed)."""
        if len(union.selects) > 1:
            if any(select.applies for select in union.selects):
                apply = self.branch_apply(union, where)
                bare = tuple(replace(select, applies=()) for select in union.selects)
                plan = self.union_plan(replace(union, selects=bare), visible, where)
                return replace(plan, apply=apply)
            return self.union_plan(union, visible, where)
        return self.select_plan(union.selects[0], visible, where)

    def branch_apply(self, union: Union, where: str) -> CrossApply:
        """The one APPLY every branch of a UNION statement writes alike (the same
        function, alias and field, each of its own input: semantics §11.18): the union's
        ``[apply]``. Branches that apply differently, or some not at all, are refused."""
        found: list[tuple[CrossApply, str]] = []
        for select in union.selects:
            if not select.applies:
                raise self.refuse(
                    select.pos,
                    "a branch of UNION without the CROSS APPLY the others write: every "
                    "branch applies the same, or apply it over a UNION step",
                )
            self.check_clauses(select, where)
            if len(select.applies) > 1:
                second = select.applies[1]
                raise self.refuse(second.pos, f"a second {second.keyword} is not supported yet")
            apply = select.applies[0]
            found.append((apply, self.apply_text(apply, select.source)))
        first, text = found[0]
        for apply, other in found[1:]:
            if other != text:
                raise self.refuse(
                    apply.pos,
                    f"the branches of UNION apply differently: every branch must write the "
                    f"same {first.keyword} (function, field of its own input, AS name)",
                )
        return first

    def apply_text(self, apply: CrossApply, source: FromSource) -> str:
        """What an APPLY over ``source`` does, as text: its keyword, function, name and
        the field of the input it expands (two branches apply alike when equal)."""

        def leaf(node: Column | Call) -> E.Expr:
            return self.fields.field_leaf(node, source, apply.keyword)

        value = E.to_text(convert(apply.value, leaf, self.refuse, apply.keyword))
        return f"{apply.keyword} {apply.function} {apply.alias.casefold()} {value}"

    def union_plan(self, union: Union, visible: int, where: str) -> Plan:
        """``SELECT ... UNION SELECT ...``: the union of the branches' inputs."""
        self.unions.check_into(union)
        branches = [self.select_plan(s, visible, where) for s in union.selects]
        return self.unions.combine(union, branches)

    def select_plan(self, select: Select, visible: int, where: str) -> Plan:
        """One SELECT: its FROM (an input, a step or a JOIN), WHERE, window or columns."""
        self.check_clauses(select, where)
        if select.joins:  # (a windowed step's System.Timestamp() is its window's end)
            select = window_times(select, self.windowed_steps(visible))
        is_reference = self.joins.bindings.is_reference
        select, then = stream_tables(select, self.refuse, is_reference)  # (§11.26)
        if not then:
            select, then = chained_tables(select, self.refuse, is_reference)
        inner, from_step = self.inner(select, visible)
        if then:  # (later JOINs of reference data: [[join.then]], semantics §11.8, §11.26)
            assert inner.join is not None
            inner = replace(inner, join=replace(inner.join, then=then))
        joined = inner.join
        if joined is not None and joined.table_window is not None:  # (§13.5)
            inner, select = self.joins.where_over_window_table(select, inner, self.fields)
        elif joined is not None and joined.window is not None:  # (§7.12)
            reading = joined.window.source
            if reading.where is not None:
                text = E.to_text(self.fields.condition(reading.where, reading))
                inner = replace(
                    inner, input_wheres=with_where(inner.input_wheres, reading.name, text)
                )
        if select.applies:
            inner = replace(inner, apply=self.cross_apply(select, from_step, inner))
        self.check_partition(select, inner)
        partition = self.partition(inner.partition, select.source)
        if inner.wheres and inner.join is None and (reads_analytic(select) or select.recognize):
            # the WHERE of the steps it reads filters each input before the analytic
            # columns or MATCH_RECOGNIZE (§11.20), as each step runs before the next
            condition = inner.combined
            assert condition is not None
            wheres = inner.input_wheres
            for source in inner.sources:
                wheres = with_where(wheres, source.name, condition)
            inner = replace(inner, wheres=(), input_wheres=wheres)
        for side in (select.source, *(j.source for j in select.joins)):
            if side.where is not None:  # (a step's WHERE before LAG... or a JOIN, §11.20)
                text = E.to_text(self.fields.condition(side.where, side))
                inner = replace(inner, input_wheres=with_where(inner.input_wheres, side.name, text))
        if select.joins and select.group_by and inner.lookup:  # (a window over it, §11.23)
            assert inner.join is not None
            select = over_table(select, inner.join)
        elif select.joins and select.where is not None and not inner.lookup:
            inner = self.joins.where_over_join(select, inner, self.fields)  # (§11.20)
            select = replace(select, where=None)
        elif select.joins and select.where is not None:  # (reference data, §11.8)
            inner, where_clause = self.joins.where_over_lookup(select, inner)
            select = replace(select, where=where_clause)
        if select.joins and select.group_by and not inner.lookup:
            assert inner.join is not None  # (a window over the matches, §7.11)
            select = over_matches(select, inner.join)
        wheres = self.wheres(select, inner, from_step)
        if (
            select.joins
            and where != "statement"
            and any(isinstance(i.expr, Star) and i.expr.qualifier is not None for i in select.items)
        ):
            assert inner.join is not None
            self.joins.refuse_over_join(select, inner.join, where)
        return self.shape(
            select, replace(inner, partition=partition, wheres=wheres), where, from_step
        )

    def windowed_steps(self, visible: int) -> dict[str, Select]:
        """The windowed steps a SELECT may JOIN (semantics §7.12), by case-folded name."""
        out = {}
        for name, (index, step) in self.steps.items():
            if index < visible and len(step.body.selects) == 1:
                if WindowStep.windowed(step.body.selects[0]):
                    out[name] = step.body.selects[0]
        return out

    def check_clauses(self, select: Select, where: str) -> None:
        """Refuse INTO inside a WITH step and HAVING without GROUP BY."""
        if select.applies and where != "statement":
            raise self.refuse(
                select.applies[0].pos,
                f"{select.applies[0].keyword} inside the WITH step {where} is not supported "
                "yet: apply it in the statement that reads the input",
            )
        if select.into is not None and where != "statement":
            assert select.into_pos is not None
            raise self.refuse(select.into_pos, f"INTO inside the WITH step {where}")
        if select.having is not None and not select.group_by:
            raise self.refuse(
                select.having.pos, "HAVING without GROUP BY: HAVING filters a window's results"
            )

    def cross_apply(self, select: Select, from_step: str | None, inner: Plan) -> CrossApply:
        """The one CROSS (or OUTER) APPLY of a statement over an input, or over steps
        that only pass its events on (``SELECT *``, maybe with ``WHERE``, or a ``UNION``
        of such: semantics §11.18, §13.2)."""
        apply = select.applies[0]
        if len(select.applies) > 1:
            second = select.applies[1]
            raise self.refuse(second.pos, f"a second {second.keyword} is not supported yet")
        if select.joins:
            raise self.refuse(apply.pos, f"{apply.keyword} with a JOIN is not supported yet")
        plain = (
            (len(inner.sources) == 1 or inner.union is not None)
            and inner.window is None
            and inner.join is None
            and inner.projection is None
            and inner.apply is None
        )
        if from_step is not None and not plain:
            raise self.refuse(
                apply.pos,
                f"{apply.keyword} over the step {from_step} is not supported yet: apply it to "
                "the input",
            )
        names = source_names(select.source)
        if apply.alias.casefold() in names:
            raise self.refuse(apply.pos, f"{apply.keyword} ... AS {apply.alias}: names the input")
        if from_step is None:
            return apply

        def field(column: Column) -> Column:  # (s.Readings over the step s: the input's)
            parts = column.parts
            if len(parts) > 1 and parts[0].casefold() in names:
                return replace(column, parts=parts[1:])
            return column

        return replace(apply, value=map_columns(apply.value, field))

    def inner(self, select: Select, visible: int) -> tuple[Plan, str | None]:
        """The plan of what ``select`` reads (a JOIN, a step or an input), and the name of
        the step it reads, if any."""
        source = select.source
        if select.joins:
            return self.joins.join_plan(select, visible), None
        found = self.steps.get(source.name.casefold())
        if found is None or found[0] >= visible:
            return Plan((source,)), None
        index, step = found
        if source.timestamp_by is not None:
            assert source.timestamp_pos is not None
            raise self.refuse(
                source.timestamp_pos,
                f"TIMESTAMP BY on the step {step.name}: Stream Analytics takes TIMESTAMP "
                "BY on inputs only; move it to the step that reads the input",
            )
        return self.plan(step.body, index, step.name), step.name

    def check_partition(self, select: Select, inner: Plan) -> None:
        """Refuse PARTITION BY over a step that joins or unions."""
        source = select.source
        if (
            source.partition_by is not None
            and not select.joins  # (a JOIN's own sides: join_plan, lookup_plan)
            and (len(inner.sources) > 1 or inner.join)
        ):
            what = "a JOIN" if inner.join else "a UNION"
            raise self.refuse(
                source.partition_by.pos,
                f"PARTITION BY over {what} is not supported yet: "
                + (
                    "a join follows the merged watermark of both inputs"
                    if inner.join
                    else "sparktide keeps each input's partitions apart (<input>/<id>)"
                ),
            )

    def partition(self, inner: Column | None, source: FromSource) -> Column | None:
        """The PARTITION BY column: the source's own, the same as the step's it reads."""
        mine = source.partition_by
        if mine is None:
            return inner
        if inner is not None and inner.name.casefold() != mine.name.casefold():
            raise self.refuse(
                mine.pos, f"PARTITION BY {mine.name} differs from PARTITION BY {inner.name}"
            )
        return mine

    def wheres(self, select: Select, inner: Plan, from_step: str | None) -> tuple[E.Expr, ...]:
        """The WHERE conditions on the way, with this SELECT's last."""
        wheres = inner.wheres
        if select.where is None:
            return wheres
        if inner.window is not None:
            raise self.refuse(
                select.where.pos,
                f"WHERE over the results of the windowed step {from_step} is not supported "
                "yet: a job filters events before its window (use HAVING in that step)",
            )
        if inner.lookup and select.joins and select.group_by:  # (each match: over_table)
            condition = self.fields.condition(select.where.expr, select.source)
        elif inner.join is not None and inner.join.reference and select.joins:
            condition = self.fields.stream_condition(select.where.expr, inner.join)
        elif inner.join is not None:
            raise self.refuse(
                select.where.pos,
                "WHERE over a JOIN is not supported yet: the job's [filter] applies to each "
                "input's events, not to the matches",
            )
        else:
            condition = self.fields.condition(select.where.expr, select.source)
        return (*wheres, condition)

    def shape(self, select: Select, inner: Plan, where: str, from_step: str | None) -> Plan:
        """What ``select`` does with what it reads (``inner``, with its partition and
        conditions): pass it through, project its columns, or window it."""
        if self.passes_through(select):
            return inner
        if inner.lookup and select.joins and select.group_by and where == "statement":
            return replace(inner, window=select)  # (the matches windowed, §11.23)
        if inner.join is not None and inner.join.window is not None and select.group_by:
            raise self.refuse(
                select.group_pos or select.pos,
                f"a window over the JOIN of the windowed step {inner.join.right.name} is not "
                "supported yet: a job has one window",
            )
        if inner.join is not None and select.group_by and select.joins:
            return replace(inner, window=select)  # (the matches windowed, §7.11)
        if inner.window is not None and select.group_by:
            raise self.refuse(
                select.group_pos or select.pos,
                f"a window over the results of the windowed step {from_step} is not "
                "supported yet: a job has one window",
            )
        if inner.join is not None:
            if select.group_by or not select.joins or where != "statement":
                self.joins.refuse_over_join(select, inner.join, where)
            return replace(inner, projection=select)
        if not select.group_by and where == "statement" and inner.window is None:
            return replace(inner, projection=select)
        if not select.group_by:
            item = (
                next(i for i in select.items if not isinstance(i.expr, Star))
                if any(not isinstance(i.expr, Star) for i in select.items)
                else select.items[0]
            )
            raise self.refuse(
                item.pos,
                f"SELECT {describe(item.expr)} without GROUP BY is not supported yet "
                f"{'in a WITH step' if inner.window is None else 'over a windowed step'}: "
                "only the last statement may project or compute columns",
            )
        return replace(inner, window=select)

    def passes_through(self, select: Select) -> bool:
        """Whether ``select`` is ``SELECT *`` (or ``alias.*`` of its one input) without
        GROUP BY."""
        if select.group_by or len(select.items) != 1:
            return False
        star = select.items[0].expr
        if not isinstance(star, Star):
            return False
        if star.qualifier is not None and select.joins:  # (a.*: one input's fields)
            return False
        if star.qualifier is not None and star.qualifier.casefold() not in source_names(
            select.source
        ):
            raise self.refuse(star.pos, f"{star.qualifier}.* names no input of this SELECT")
        return True
