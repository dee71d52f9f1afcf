"""The JOIN of a statement: two streams within a time bound, or a stream with reference
data.

``FROM a ... JOIN b ... ON a.k = b.k AND DATEDIFF(unit, a, b) BETWEEN x AND y`` joins two
inputs within a time bound; when the job file says one side is reference data
(``[inputs.<name>] reference = true``), ``FROM stream [LEFT OUTER] JOIN table ON s.k =
r.k`` joins each event with the table's rows. Either becomes a :class:`~sparktide.query.
translate.plans.JoinPlan`; every other shape, and what a job cannot compute over a JOIN
(a window, ``SELECT a.*``, columns of a JOIN step), is refused here.
"""

from __future__ import annotations

from dataclasses import replace

from sparktide import expr as E
from sparktide.query.ast import (
    Call,
    Clause,
    Column,
    Expr,
    FromSource,
    Join,
    Operation,
    Select,
    Star,
    Step,
)
from sparktide.query.translate.context import (
    UNIT_CALLS,
    Context,
    describe,
    qualify_over_join,
    reads_timestamp,
    source_names,
)
from sparktide.query.translate.fields import Fields
from sparktide.query.translate.inline import columns_in
from sparktide.query.translate.joinon import JoinCondition, all_of, conjuncts
from sparktide.query.translate.plans import JoinPlan, Plan, with_where
from sparktide.query.translate.windowjoin import WindowStep

__all__ = ["JoinPlanner"]


class JoinPlanner:
    """Plans the JOIN of a statement.

    Parameters
    ----------
    context
        The statement's translation.
    steps
        The query's WITH steps by case-folded name, each with its index.
    """

    def __init__(self, context: Context, steps: dict[str, tuple[int, Step]]) -> None:
        self.refuse = context.refuse
        self.bindings = context.bindings
        self.steps = steps
        self.on = JoinCondition(context.refuse)

    def join_plan(self, select: Select, visible: int) -> Plan:
        """``FROM a ... JOIN b ... ON a.k = b.k AND DATEDIFF(unit, a, b) BETWEEN x AND y``."""
        if len(select.joins) > 1:
            raise self.refuse(
                select.joins[1].pos, "a second JOIN is not supported yet: a job joins two inputs"
            )
        join = select.joins[0]
        left, right = select.source, join.source
        for side in (left, right):
            found = self.steps.get(side.name.casefold())
            if found is not None and found[0] < visible:
                step = found[1]
                windowed = len(step.body.selects) == 1 and WindowStep.windowed(step.body.selects[0])
                if side is right and windowed:  # (semantics §7.12)
                    return self.window_join_plan(join, left, right, step)
                if windowed and self.bindings.is_reference(right.name):  # (§13.5)
                    return self.window_table_plan(join, left, right, step)
                if windowed:
                    raise self.refuse(
                        side.pos,
                        f"a JOIN of the windowed step {side.name} on its left is not "
                        f"supported yet: put it on the right (FROM input ... JOIN {side.name} "
                        "ON ... DATEDIFF(unit, input, step) ...)",
                    )
                raise self.refuse(
                    side.pos,
                    f"a JOIN of the step {side.name} is not supported yet: join the inputs "
                    "themselves (FROM input TIMESTAMP BY ... JOIN input TIMESTAMP BY ...)",
                )
        if self.bindings.is_reference(left.name) or self.bindings.is_reference(right.name):
            return self.lookup_plan(join, left, right)
        self.check_streams(join, left, right)
        if left.name.casefold() == right.name.casefold():
            left, right = self.self_join(left, right)
        self.distinct_names(left, right)
        on, between, condition = self.on.join_condition(join, left, right)
        assert between is not None
        kind = "left" if join.kind.startswith("LEFT") else "inner"  # (semantics §7.9)
        plan = JoinPlan(left, right, on, between, join.pos, kind, condition=condition)
        return Plan((left, right), join=plan)

    def window_join_plan(self, join: Join, left: FromSource, right: FromSource, step: Step) -> Plan:
        """``FROM input JOIN windowed_step ON ... AND DATEDIFF(...) BETWEEN x AND y``: the
        input joined with the step's window's records (semantics §7.12,
        :mod:`.windowjoin`)."""
        windowed = WindowStep(self.refuse, step.name, step.body.selects[0])
        windowed.check(right, set(self.steps))
        if self.bindings.is_reference(left.name):
            raise self.refuse(left.pos, f"{left.name} is reference data: JOIN a stream")
        self.check_streams(join, left, right)
        taken = {left.name.casefold(), step.name.casefold(), *self.bindings.inputs}
        reading = windowed.reading(left, taken)
        records = windowed.records(right)
        self.distinct_names(left, records)
        on, between, condition = self.on.join_condition(join, left, records, window=True)
        assert between is not None
        kind = "left" if join.kind.startswith("LEFT") else "inner"
        window = replace(windowed.window_select(), source=reading)
        plan = JoinPlan(left, records, on, between, join.pos, kind, condition=condition)
        return Plan((left, reading), join=replace(plan, window=window))

    def window_table_plan(
        self, join: Join, left: FromSource, right: FromSource, step: Step
    ) -> Plan:
        """``FROM windowed_step JOIN table ON step.k = table.k``: the step's window's
        records meet the reference data (semantics §13.5): ``[join] left`` the window's
        name, ``on`` the equal columns; the rest of an inner JOIN's ``ON`` is its
        ``where``, with the statement's ``WHERE``, and of a ``LEFT OUTER JOIN``'s its
        ``condition`` (a record none of whose rows meets it is written once, the row
        null)."""
        windowed = WindowStep(self.refuse, step.name, step.body.selects[0])
        windowed.check(left, set(self.steps))
        if join.kind not in ("INNER", "LEFT", "LEFT OUTER"):
            raise self.refuse(
                join.pos,
                f"{join.kind} JOIN with reference data is not supported: Stream Analytics "
                "joins reference data by JOIN (inner) or LEFT OUTER JOIN",
            )
        self.check_table(right)
        records = windowed.records(left)
        self.distinct_names(records, right)
        on, _, condition = self.on.join_condition(join, records, right, reference=True)
        kind = "inner" if join.kind == "INNER" else "left"
        plan = JoinPlan(records, right, on, None, join.pos, kind, True)
        if kind == "left":  # (a pair that fails it is no match: the record once, row null)
            plan = replace(plan, condition=tuple(condition))
        else:
            plan = replace(plan, where_after=tuple(condition))
        window = windowed.window_select()
        reading = windowed.reading(records, {step.name.casefold()})
        plan = replace(plan, table_window=replace(window, source=reading))
        return Plan((reading, right), join=plan)

    def lookup_plan(self, join: Join, left: FromSource, right: FromSource) -> Plan:
        """A JOIN with reference data (Stream Analytics' reference-data JOIN; the job file
        says which input is reference data): ``[join]`` of the stream (``left``) and the
        table (``right``) on equal columns, without a time bound; ``LEFT OUTER JOIN`` is
        ``type = "left"``. ``FROM table JOIN stream`` (an inner join) is the same join
        with the sides swapped; every other shape is refused."""
        if self.bindings.is_reference(left.name) and self.bindings.is_reference(right.name):
            raise self.refuse(
                join.pos,
                f"a JOIN of two reference inputs ({left.name} and {right.name}) is not "
                "supported: reference data is joined to a stream (FROM stream JOIN "
                "reference ON ...)",
            )
        if join.kind not in ("INNER", "LEFT", "LEFT OUTER"):
            raise self.refuse(
                join.pos,
                f"{join.kind} JOIN with reference data is not supported: Stream Analytics "
                "joins reference data by JOIN (inner) or LEFT OUTER JOIN",
            )
        swapped = self.bindings.is_reference(left.name)
        stream, table = (right, left) if swapped else (left, right)
        if swapped and join.kind != "INNER":
            raise self.refuse(
                join.pos,
                f"{join.kind} JOIN with the reference data {table.name} on its left is not "
                "supported: it would keep the table's rows that meet no event; Stream "
                f"Analytics puts reference data on the right (FROM {stream.name} "
                f"{join.kind} JOIN {table.name})",
            )
        self.check_table(table)
        self.distinct_names(left, right)
        on, between, condition = self.on.join_condition(join, stream, table, reference=True)
        assert between is None
        kind = "inner" if join.kind == "INNER" else "left"
        plan = JoinPlan(stream, table, on, None, join.pos, kind, True, swapped, condition=condition)
        return Plan((stream, table), join=plan, partition=stream.partition_by)

    def check_streams(self, join: Join, left: FromSource, right: FromSource) -> None:
        """Refuse what a JOIN of two streams cannot be: other than inner or left,
        partitioned, or keyed by OVER."""
        if join.kind != "INNER" and not join.kind.startswith("LEFT"):
            why = "Stream Analytics joins need a time bound (DATEDIFF)"
            raise self.refuse(join.pos, f"{join.kind} JOIN is not supported yet: {why}")
        for side in (left, right):
            if side.partition_by is not None:
                raise self.refuse(
                    side.partition_by.pos,
                    "PARTITION BY in a JOIN is not supported yet: a join follows the merged "
                    "watermark of both inputs",
                )
            if side.over:
                raise self.refuse(
                    side.over[0].pos,
                    "TIMESTAMP BY ... OVER in a JOIN is not supported yet: a join follows the "
                    "merged watermark of both inputs",
                )

    def self_join(self, left: FromSource, right: FromSource) -> tuple[FromSource, FromSource]:
        """The two sides of a JOIN of an input with itself (``FROM i a JOIN i b``), each
        renamed by its alias: the job reads the input once per alias, as two inputs
        ``a`` and ``b`` bound to ``i``'s table (``docs/query.md``, *Self-joins*). Both
        sides need an alias, and different ones."""
        for side in (left, right):
            if side.alias is None:
                raise self.refuse(
                    side.pos,
                    f"a JOIN of {side.name} with itself needs an alias on each side "
                    f"(FROM {side.name} a JOIN {side.name} b ON ...)",
                )
        assert left.alias is not None and right.alias is not None
        if left.alias.casefold() == right.alias.casefold():
            raise self.refuse(
                right.pos,
                f"{right.alias} names both sides of the JOIN; give them different aliases",
            )
        for alias, side in ((left.alias, left), (right.alias, right)):
            if alias.casefold() in self.bindings.inputs:
                raise self.refuse(
                    side.pos,
                    f"the alias {alias} of {side.name} is also an input of the job file: a "
                    "self-join reads its input once per alias, named by the alias; choose "
                    "another",
                )
        left = replace(left, name=left.alias, alias=None, bound=left.name)
        right = replace(right, name=right.alias, alias=None, bound=right.name)
        return left, right

    def check_table(self, table: FromSource) -> None:
        """Refuse TIMESTAMP BY and PARTITION BY on reference data: it has neither."""
        if table.timestamp_by is not None:
            assert table.timestamp_pos is not None
            raise self.refuse(
                table.timestamp_pos,
                f"TIMESTAMP BY on the reference data {table.name}: reference data has no "
                "time (Stream Analytics refuses it too); the stream's events carry the "
                "time of each match",
            )
        if table.partition_by is not None:
            raise self.refuse(
                table.partition_by.pos,
                f"PARTITION BY on the reference data {table.name}: reference data has no "
                "partitions; partition the stream",
            )

    def distinct_names(self, left: FromSource, right: FromSource) -> None:
        """Refuse a JOIN whose two sides share a name or an alias."""
        if source_names(left) & source_names(right):
            raise self.refuse(
                right.pos,
                f"{right.alias or right.name} names both inputs of the JOIN; give them "
                "different aliases",
            )

    def refuse_over_join(self, select: Select, join: JoinPlan, where: str) -> None:
        """What a job cannot compute over a JOIN: a window, ``SELECT a.*``, columns in a
        ``WITH`` step or over a JOIN step (only the JOIN's own SELECT projects)."""
        if select.group_by:
            raise self.refuse(
                select.group_pos or select.pos,
                "a window over a step that selects a JOIN's matches whole (SELECT *) is not "
                "supported yet: name the step's columns (SELECT a.k AS k, ...), or group "
                "the JOIN where it is read (FROM a JOIN b ... GROUP BY)",
            )
        star = next(
            (i for i in select.items if isinstance(i.expr, Star) and i.expr.qualifier), None
        )
        if star is not None:
            raise self.refuse(
                star.pos,
                f"SELECT {describe(star.expr)} over a JOIN is not supported yet: name the "
                f"columns ({join.left.alias or join.left.name}.k, ...), or SELECT * for "
                f"each match whole ({{{join.left.name}: {{...}}, {join.right.name}: {{...}}, "
                "timestamp})",
            )
        item = next((i for i in select.items if not isinstance(i.expr, Star)), select.items[0])
        if not select.joins:
            raise self.refuse(
                item.pos,
                f"SELECT {describe(item.expr)} over the JOIN of the step {select.source.name} "
                "is not supported yet: select the columns in the JOIN's own SELECT",
            )
        raise self.refuse(
            item.pos,
            f"SELECT {describe(item.expr)} over a JOIN in the WITH step {where} is not "
            "supported yet: only the last statement may project or compute columns",
        )

    def where_over_join(self, select: Select, plan: Plan, fields: Fields) -> Plan:
        """The WHERE of a JOIN of two streams (semantics §11.20): a term that reads one
        input's fields is that input's own ``where`` (its events are filtered before they
        meet the other input's); a term that reads both, or ``System.Timestamp()`` (the
        match's time, semantics §11.8), is part of the ``[join] condition`` (a pair must
        meet it, as the rest of ON). For an inner join both keep exactly the matches the
        WHERE over the JOIN keeps."""
        join = plan.join
        assert join is not None and select.where is not None
        wheres = plan.input_wheres
        pairs: list[Expr] = []
        after: list[Expr] = []  # (over the tables each match meets: where, §11.26)
        tables = set().union(*(source_names(t) for t, _ in join.then))
        for term in conjuncts(select.where.expr):
            if any(c.parts[0].casefold() in tables for c in columns_in(term)):
                after.append(term)
                continue
            sides = self.sides_read(term, join)
            own = len(sides) == 1 and not reads_timestamp(term)
            right = own and sides[0] is join.right
            if not own or (right and (join.type == "left" or join.window is not None)):
                pairs.append(term)
                continue
            (side,) = sides
            text = E.to_text(fields.condition(term, side))
            wheres = with_where(wheres, side.name, text)
        if join.type == "left":  # (over what it writes: semantics §7.9)
            after = pairs + after
            pairs = []
        return replace(
            plan,
            input_wheres=wheres,
            join=replace(
                join,
                where_pairs=(*join.where_pairs, *pairs),
                where_after=(*join.where_after, *after),
            ),
        )

    def where_over_window_table(
        self, select: Select, plan: Plan, fields: Fields
    ) -> tuple[Plan, Select]:
        """The WHEREs of a windowed step joined with reference data (semantics §13.5):
        the step's filters the events its window reads (that input's own ``where``);
        the statement's reads the window's records and the rows they met: ``[join]
        where``. A window over such a JOIN is refused."""
        join = plan.join
        assert join is not None and join.table_window is not None
        if select.group_by:
            raise self.refuse(
                select.group_by[0].pos,
                f"GROUP BY over the JOIN of the windowed step {join.left.name} with "
                f"{join.right.name} is not supported yet: a job has one window",
            )
        reading = join.table_window.source
        if reading.where is not None:
            text = E.to_text(fields.condition(reading.where, reading))
            plan = replace(plan, input_wheres=with_where(plan.input_wheres, reading.name, text))
        if select.where is not None:
            after = (*join.where_after, *conjuncts(select.where.expr))
            plan = replace(plan, join=replace(join, where_after=after))
            select = replace(select, where=None)
        return plan, select

    def where_over_lookup(self, select: Select, plan: Plan) -> tuple[Plan, Clause | None]:
        """The WHERE of a JOIN with reference data (semantics §11.8): a term that reads
        the table's fields (``WHERE r.Expired = 1``) is part of the ``[join] condition``,
        which an inner join's matches must meet, as the WHERE over the JOIN keeps them;
        under ``LEFT OUTER JOIN`` it is ``[join] where``, over what the join writes (an
        event no row met reads the table's fields as null: ``WHERE r.Plate IS NULL``
        keeps exactly those). The other terms stay the statement's WHERE (the job's
        ``[filter]``, on the stream's events before they meet the table)."""
        join = plan.join
        assert join is not None and select.where is not None
        table = source_names(join.right)
        over_table: list[Expr] = []
        rest: list[Expr] = []
        for term in conjuncts(select.where.expr):
            reads = any(
                len(c.parts) > 1 and c.parts[0].casefold() in table for c in columns_in(term)
            )
            (over_table if reads else rest).append(term)
        if not over_table:
            return plan, select.where
        if join.type == "inner":
            join = replace(join, where_pairs=(*join.where_pairs, *over_table))
        else:
            join = replace(join, where_after=(*join.where_after, *over_table))
        plan = replace(plan, join=join)
        return plan, (None if not rest else Clause(all_of(rest), select.where.pos))

    def sides_read(self, expr: Expr, join: JoinPlan) -> list[FromSource]:
        """The inputs of ``join`` whose fields ``expr`` reads (each named by its input's
        name or alias; none for ``System.Timestamp()``, the match's); an unqualified
        column is refused."""
        out: list[FromSource] = []
        sides = (join.left, join.right)
        if isinstance(expr, Column):
            named = [s for s in sides if expr.name.casefold() in source_names(s)]
            if len(expr.parts) == 1 and named:  # (an input itself: DATEDIFF(unit, a, b))
                return named
            if len(expr.parts) < 2:
                raise qualify_over_join(self.refuse, expr, join.left)
            qualifier = expr.parts[0].casefold()
            out += [s for s in sides if qualifier in source_names(s)]
        elif isinstance(expr, Call):
            skip = 1 if expr.function in UNIT_CALLS else 0  # (a date part, no column)
            for arg in expr.args[skip:]:
                out += self.sides_read(arg, join)
        elif isinstance(expr, Operation):
            for operand in expr.operands:
                out += self.sides_read(operand, join)
        return list({id(s): s for s in out}.values())
