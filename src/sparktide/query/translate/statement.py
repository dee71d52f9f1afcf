"""One statement of a Stream Analytics query → one job.

The statement is planned through its ``WITH`` steps (:mod:`~sparktide.query.translate.
planner`), then its job's tables are assembled in order: inputs, ordering and output,
the JOIN or UNION, the filter, and the window or the column list. Each part adds its
notes for a reader of the job; :func:`~sparktide.query.jobs.build_job` makes the job.
"""

from __future__ import annotations

from typing import Any

from sparktide import expr as E
from sparktide.job.apply import APPLY_MEMBERS
from sparktide.query.ast import Pos, Query, Select
from sparktide.query.bind import Bindings
from sparktide.query.exprs import convert
from sparktide.query.jobs import StatementJob, build_job
from sparktide.query.refusal import Refuse, check_column
from sparktide.query.translate.context import Context
from sparktide.query.translate.fields import Fields
from sparktide.query.translate.inputs import Inputs
from sparktide.query.translate.matches import Matches
from sparktide.query.translate.matchwindow import MatchFields
from sparktide.query.translate.outputs import output_table
from sparktide.query.translate.planner import Planner
from sparktide.query.translate.plans import Plan
from sparktide.query.translate.recognize import match_table
from sparktide.query.translate.window import Windows

__all__ = ["StatementTranslator"]


class StatementTranslator:
    """Translates statement number ``index`` of ``query``.

    Attributes
    ----------
    output_key
        The job-file table the statement's output comes from (set by :meth:`run`).
    """

    def __init__(self, query: Query, bindings: Bindings, index: int = 0) -> None:
        self.query = query
        self.index = index
        self.context = Context(Refuse(query.source), bindings)
        steps = {step.name.casefold(): (i, step) for i, step in enumerate(query.steps)}
        self.fields = Fields(self.context.refuse, bindings)
        self.planner = Planner(self.context, self.fields, steps, query)
        self.inputs = Inputs(self.context, self.fields)
        self.matches = Matches(self.context, self.fields)
        self.windows = Windows(self.context, self.fields)
        self.output_key = ""

    def run(self) -> StatementJob:
        """The statement's job, with its notes and its place."""
        union = self.query.statements[self.index]
        select = union.selects[0]
        plan = self.planner.plan(union, len(self.query.steps), "statement")
        data = self.tables(plan, select)
        self.join_or_union(plan, data)
        self.apply(plan, data)
        self.filter(plan, data)
        if select.recognize is not None:  # MATCH_RECOGNIZE (semantics §11.25)
            data["match"], columns = match_table(self.context, self.fields, plan, select)
            if columns is not None:  # (MEASURES computed over measures: [select])
                data["select"] = columns
        else:
            self.columns(plan, data)
        if self.fields.analytics.tables:  # LAG, LAST, ISFIRST, SUM(x) OVER ... (§11.19)
            data["analytic"] = self.fields.analytics.tables
            self.context.notes.append(
                "LAG, LAST, ISFIRST and aggregates with OVER are [analytic.<name>] columns, "
                "computed as events are released in timestamp order, before WHERE ([filter] "
                "then runs at release)"
            )
        context = self.context
        job = build_job(data, context.bindings.base_dir, context.refuse, self.anchor(plan, select))
        return StatementJob(
            job, tuple(context.notes), select.into, select.pos.line, select.pos.column
        )

    def tables(self, plan: Plan, select: Select) -> dict[str, Any]:
        """The job's inputs, ordering and output."""
        data: dict[str, Any] = {**self.inputs.inputs(plan), "ordering": self.inputs.ordering(plan)}
        self.output_key, data["output"] = output_table(
            select, self.context.bindings, self.context.refuse
        )
        return data

    def join_or_union(self, plan: Plan, data: dict[str, Any]) -> None:
        """``[join]`` of a JOIN, or the note on a UNION."""
        names = [s.name for s in plan.sources]
        if plan.lookup:
            self.matches.lookup_join(plan, data)
        elif plan.join is not None:
            self.matches.stream_join(plan, data)
        elif len(names) > 1:
            self.context.notes.append(
                f"UNION is a union of the inputs {', '.join(names)} (Stream Analytics' UNION "
                "keeps duplicates, as UNION ALL): their partitions are named <input>/<id> and "
                "the job watermark is the minimum over all of them"
            )

    def apply(self, plan: Plan, data: dict[str, Any]) -> None:
        """``[apply]`` of ``CROSS APPLY GetArrayElements(x) AS a`` (or
        ``GetRecordProperties``; ``OUTER APPLY``: ``outer = true``): ``a.ArrayValue`` is
        then ``GetRecordPropertyValue(a, 'ArrayValue')`` wherever the statement reads it
        (semantics §11.18)."""
        apply = plan.apply
        if apply is None:
            return
        refuse = self.context.refuse
        keyword = apply.keyword
        members = APPLY_MEMBERS[apply.function]
        if plan.window is None and plan.projection is None:
            raise refuse(
                apply.pos,
                f"SELECT * with {keyword} is not supported yet: name the columns "
                f"(the element is {apply.alias}.{members[1]})",
            )
        source = plan.sources[0]
        value = convert(
            apply.value,
            lambda n: self.fields.field_leaf(n, source, keyword),
            refuse,
            keyword,
        )
        name = check_column(apply.alias, apply.pos, refuse, f"{keyword} alias")
        data["apply"] = {"function": apply.function, "value": E.to_text(value), "name": name}
        if apply.outer:
            data["apply"]["outer"] = True
        none = (
            f"an event with none stays one event, its {name} null"
            if apply.outer
            else "an event with none is dropped: no_elements"
        )
        self.context.notes.append(
            f"{keyword} is [apply]: each admitted event becomes one event per "
            f"{'element' if apply.function == 'elements' else 'property'}, its field {name} "
            f"holding {members[0]} and {members[1]}; then WHERE, SELECT and the window read "
            f"those events ({none})"
        )

    def filter(self, plan: Plan, data: dict[str, Any]) -> None:
        """``[filter] where`` of the WHERE conditions on the way."""
        if not plan.wheres:
            return
        data["filter"] = {"where": plan.combined}
        self.context.notes.append(
            "WHERE is [filter] where: it applies after the ordering policy; an event that "
            "fails it is counted as dropped (filtered)"
            + (
                f" (with {plan.apply.keyword} it reads each element; an event none of "
                "whose elements passes is dropped)"
                if plan.apply is not None
                else ""
            )
            + (
                f" (over the JOIN it reads {plan.join.left.name}'s fields only: it stops "
                "events before they meet the table, which keeps the same matches)"
                if plan.join is not None and plan.join.reference and plan.window is None
                else ""
            )
            + (
                f" (over the JOIN with a window it reads each match, {plan.join.right.name}'s "
                "row among its fields; an event none of whose matches passes is dropped)"
                if plan.join is not None and plan.join.reference and plan.window is not None
                else ""
            )
        )

    def columns(self, plan: Plan, data: dict[str, Any]) -> None:
        """``[window]`` (and its ``[select]``), or the ``[select]`` of the events or the
        matches, or nothing (``SELECT *``)."""
        notes = self.context.notes
        if plan.join is not None and plan.join.window is not None:  # (semantics §7.12)
            self.joined_window(plan, data)
        elif plan.join is not None and plan.join.table_window is not None:  # (§13.5)
            self.table_window(plan, data)
        elif plan.window is not None:
            windows = self.windows
            if plan.join is not None and not plan.join.reference:  # (the matches, §7.11)
                fields = MatchFields(self.context.refuse, self.context.bindings, plan.join)
                windows = Windows(self.context, fields)
            window, columns = windows.window(plan.window, plan.window.source)
            if columns.having is not None:
                window["having"] = columns.having
            data["window"] = window
            if columns.select is not None:
                data["select"] = columns.select
        elif plan.join is not None and plan.projection is not None:
            self.matches.select(plan, data)
        elif plan.union_columns:  # (branches computing columns differently, §11.21)
            data["select"] = {
                name: text if isinstance(text, str) else dict(text)
                for name, text in plan.union_columns
            }
        elif plan.projection is not None:
            data["select"] = self.fields.projection(plan.projection, plan.projection.source)
            notes.append(
                "the job releases every admitted event that passes, in timestamp order, with "
                "the SELECT's columns and its system timestamp as the field timestamp"
            )
        elif plan.join is None:
            notes.append(
                "SELECT *: the job releases every admitted event, in timestamp order, "
                "with its system timestamp as the field timestamp"
            )

    def step_window(self, step: Select, name: str) -> dict[str, Any]:
        """``[window]`` of the windowed step ``name`` a JOIN reads (semantics §7.12,
        §13.5), named by it; a step computing columns over its aggregates is refused."""
        window, columns = self.windows.window(step, step.source)
        if columns.select is not None:
            raise self.context.refuse(
                step.pos,
                f"the windowed step {name} computes columns over its aggregates: a JOIN "
                "reads a window's grouping columns, aggregates and System.Timestamp() "
                "only; compute the rest in the statement",
            )
        window["name"] = name
        if columns.having is not None:
            window["having"] = columns.having
        return window

    def table_window(self, plan: Plan, data: dict[str, Any]) -> None:
        """``[window]`` of a windowed step joined with reference data, named by the
        step, and the ``[select]`` over its records and the rows met (semantics §13.5)."""
        join = plan.join
        assert join is not None and join.table_window is not None
        step = join.table_window
        data["window"] = self.step_window(step, join.left.name)
        if plan.projection is not None:
            data["select"] = self.matches.join_projection(plan.projection, join)
        self.context.notes.append(
            f"JOIN of the windowed step {join.left.name} with the reference data "
            f"{join.right.name}: each record the window writes (after its HAVING) meets the "
            f"rows of {join.right.name} with equal {', '.join(map(str, join.on))} and is "
            f"written once per row met (semantics §13.5)"
            + (
                f", once with {join.right.name} null if none (LEFT OUTER JOIN)"
                if join.type == "left"
                else ", not at all if none"
            )
            + f"; [select] reads {join.left.name}.<column> and {join.right.name}.<field>"
        )

    def joined_window(self, plan: Plan, data: dict[str, Any]) -> None:
        """``[window]`` of a windowed step a JOIN reads, named by the step, and the
        ``[select]`` over the JOIN's matches (semantics §7.12)."""
        assert plan.join is not None and plan.join.window is not None
        step = plan.join.window
        data["window"] = self.step_window(step, plan.join.right.name)
        if plan.projection is not None:
            self.matches.select(plan, data)

    def anchor(self, plan: Plan, select: Select) -> Pos:
        """Where a rule of the job model that the statement breaks is refused: its window,
        its JOIN, its UNION, else its SELECT."""
        if plan.window is not None:
            return plan.window.group_pos or plan.window.pos
        if plan.join is not None:
            return plan.join.pos
        if plan.union is not None:
            return plan.union
        return select.pos
