"""Composing a statement with the ``WITH`` steps it reads (issue 28.4, semantics §13.2, §13.3).

A step that filters and projects events (``SELECT x, y * 2 AS z FROM in WHERE c``) is
stateless: a SELECT that reads it reads the step's input, with the step's expressions in
place of the step's column names and the step's ``WHERE`` joined to its own by ``AND``
(Stream Analytics evaluates each step's ``WHERE`` on its own events; a condition over a
computed column is the same condition over the expression that computes it); the step's
``CROSS``/``OUTER APPLY`` comes with it, and the reader's own APPLY reads the step's
columns (semantics §13.2). A SELECT
without ``GROUP BY`` that reads a windowed step reads the window's records: its
``WHERE`` is a ``HAVING`` of the window and its columns are computed from the window's
columns. The result is a query whose steps the planner
(:mod:`sparktide.query.translate.planner`) follows as before; a chain of such steps
feeding several ``SELECT ... INTO`` statements becomes one job per statement.

A windowed SELECT over a windowed step is composed by :mod:`.rollup` when the two are one
window of the events (semantics §13.4), else refused there by name. Not composed (left
to the planner, which refuses them by name): a step that is a ``UNION``, a step with
``INTO``; a JOIN of steps is composed by :mod:`.joinsteps` when the steps only shape
their streams. An analytic function (``LAG``, ``LAST``, ``ISFIRST``, an aggregate with
``OVER``) over a step that filters is refused here (the function would then see the
events the step drops).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sparktide.query.ast import (
    Call,
    Clause,
    Column,
    Expr,
    GroupItem,
    Literal,
    Operation,
    Query,
    Select,
    SelectItem,
    Star,
    Step,
    Union,
)
from sparktide.query.bind import Bindings
from sparktide.query.refusal import Refuse
from sparktide.query.translate.analytic import is_analytic
from sparktide.query.translate.context import UNIT_CALLS
from sparktide.query.translate.joinsteps import JoinSteps
from sparktide.query.translate.rollup import Rollup
from sparktide.query.translate.unionwindows import apply_over, events_step_name, one_step

__all__ = ["columns_in", "inline_steps", "item_name", "map_columns", "reads_analytic", "substitute"]


def item_name(item: SelectItem) -> str | None:
    """The name a later step reads an item by: its ``AS`` name, or the column it selects
    (``None``: an unnamed expression, or ``*``)."""
    if item.alias is not None:
        return item.alias
    if isinstance(item.expr, Column):
        return item.expr.parts[-1]
    return None


def substitute(expr: Expr, columns: dict[tuple[str, ...], Expr]) -> Expr:
    """``expr`` with each column whose case-folded parts are a key of ``columns``
    replaced by its value."""
    return map_columns(expr, lambda c: columns.get(tuple(p.casefold() for p in c.parts), c))


def map_columns(expr: Expr, change: Callable[[Column], Expr]) -> Expr:
    """``expr`` with each column (also in an ``OVER``; not a date part) replaced by what
    ``change`` makes of it."""

    def walk(node: Expr) -> Expr:
        if isinstance(node, Column):
            return change(node)
        if isinstance(node, Literal):
            return node
        if isinstance(node, Operation):
            return replace(node, operands=tuple(walk(o) for o in node.operands))
        over = node.over
        if over is not None:
            over = replace(
                over,
                partition_by=tuple(walk(p) for p in over.partition_by),
                when=None if over.when is None else walk(over.when),
                order_by=tuple((walk(e), descending) for e, descending in over.order_by),
            )
        skip = 1 if node.function in UNIT_CALLS else 0  # the date part is no column
        args = node.args[:skip] + tuple(walk(a) for a in node.args[skip:])
        return replace(node, args=args, over=over)

    return walk(expr)


def _over(call: Call) -> list[Expr]:
    """The expressions of a call's ``OVER``: its ``PARTITION BY`` and ``WHEN``."""
    over = call.over
    if over is None:
        return []
    return [*over.partition_by, *([over.when] if over.when is not None else [])]


def _calls(expr: Expr) -> list[Call]:
    """Every call in ``expr`` (also in an ``OVER``)."""
    if isinstance(expr, Call):
        found = [expr]
        for arg in (*expr.args, *_over(expr)):
            found.extend(_calls(arg))
        return found
    if isinstance(expr, Operation):
        return [c for o in expr.operands for c in _calls(o)]
    return []


def columns_in(expr: Expr) -> list[Column]:
    """Every column in ``expr`` (also in an ``OVER``)."""
    if isinstance(expr, Column):
        return [expr]
    if isinstance(expr, Call):
        args = expr.args[1:] if expr.function in UNIT_CALLS else expr.args
        return [c for a in (*args, *_over(expr)) for c in columns_in(a)]
    if isinstance(expr, Operation):
        return [c for o in expr.operands for c in columns_in(o)]
    return []


def _select_exprs(select: Select) -> list[Expr]:
    """The expressions of a SELECT's items, WHERE, GROUP BY and HAVING."""
    exprs: list[Expr] = [i.expr for i in select.items if not isinstance(i.expr, Star)]
    exprs += [c.expr for c in (select.where, select.having) if c is not None]
    exprs += [g.expr for g in select.group_by if g.window is None]
    return exprs


def reads_analytic(select: Select) -> bool:
    """Whether ``select`` computes an analytic function (LAG, LAST, ISFIRST, ...)."""
    return any(is_analytic(c) for e in _select_exprs(select) for c in _calls(e))


def _filters_its_input(body: Union, steps: dict[str, Union]) -> bool:
    """Whether the step ``body`` is one SELECT that filters an input (not a step) by a
    WHERE, and computes no analytic function itself: then its WHERE can filter the
    input before a reader's analytic functions (its ``System.Timestamp()`` is the
    event's, as the input's ``where`` reads it, semantics §11.20)."""
    if len(body.selects) != 1:
        return False
    step = body.selects[0]
    return (
        step.where is not None
        and not step.joins
        and step.source.name.casefold() not in steps
        and step.source.where is None
        and not reads_analytic(step)
    )


def _and(first: Clause | None, second: Clause | None) -> Clause | None:
    """Two optional conditions joined by ``AND`` (the first's place)."""
    if first is None or second is None:
        return first or second
    return Clause(Operation("AND", (first.expr, second.expr), first.expr.pos, "AND"), first.pos)


class Inliner:
    """Composes the SELECTs of one query with the steps they read.

    Parameters
    ----------
    query
        The parsed query.
    """

    def __init__(self, query: Query, bindings: Bindings) -> None:
        self.refuse = Refuse(query.source)
        self.steps: dict[str, Union] = {}  # case-folded name -> composed body
        self.rollup = Rollup(self.refuse, bindings)
        self.joins = JoinSteps(self.refuse, self.steps)
        #: the events steps of UNION steps a window reads (:mod:`.unionwindows`)
        self.events_steps: dict[str, Union] = {}

    def run(self, query: Query) -> Query:
        """The query with every composable SELECT composed (and, after a UNION step a
        window reads, its events step)."""
        steps: list[Step] = []
        for step in query.steps:
            body = self.union(step.body)
            self.steps[step.name.casefold()] = body
            steps.append(replace(step, body=body))
        statements = tuple(self.union(s) for s in query.statements)
        out: list[Step] = []
        for step in steps:
            out.append(step)
            events = self.events_steps.get(step.name.casefold())
            if events is not None:
                out.append(Step(events_step_name(step.name), events, step.pos))
        return replace(query, steps=tuple(out), statements=statements)

    def union(self, union: Union) -> Union:
        """Each branch of ``union`` composed (one over a UNION step that computes its
        columns, one per branch of that step: :meth:`spread`)."""
        selects: list[Select] = []
        for select in union.selects:
            spread = self.spread(select)
            selects += [self.select(select)] if spread is None else spread
        return replace(union, selects=tuple(selects))

    def spread(self, select: Select) -> list[Select] | None:
        """``select`` over a UNION step whose branches compute their columns, as the
        union of ``select`` composed with each branch (semantics §11.21): a SELECT of
        events over a union is the union of that SELECT over each branch, its WHERE and
        columns read through the branch's; a window or an analytic function over the
        step reads it as one step (:meth:`window_over_union`). An APPLY over the step
        expands each branch's events by one value (:func:`apply_over`), then its columns
        and WHERE are the branch's. ``None`` where this does not apply (a JOIN over the
        step, or branches of ``*``)."""
        body = self.steps.get(select.source.name.casefold())
        if body is None or len(body.selects) < 2 or all(map(_passes_through, body.selects)):
            return None
        source = select.source
        if select.group_by and any(g.window is not None for g in select.group_by):
            return [self.window_over_union(select, body)]  # (semantics §11.22)
        if (
            select.joins
            or select.group_by
            or select.having is not None
            or source.timestamp_by is not None
            or source.over
            or source.partition_by is not None
        ):
            return None
        if reads_analytic(select):  # (one partition over every input's events, §11.22)
            return [self.window_over_union(select, body, "an analytic function")]
        for branch in body.selects:
            if branch.group_by or branch.joins or branch.applies or branch.having is not None:
                return None
            if reads_analytic(branch) or branch.into is not None:
                return None
        out = []
        for i, branch in enumerate(body.selects):
            composed = self.over_events(select, branch)
            out.append(composed if i == 0 else replace(composed, into=None, into_pos=None))
        if select.applies:  # (one [apply] for every input, semantics §11.21)
            return apply_over(source.name, body.selects, out)
        return out

    def window_over_union(self, select: Select, body: Union, reader: str = "a window") -> Select:
        """A window (or, ``reader``, an analytic function) over a UNION step whose
        branches compute their columns: over one step choosing each column's expression
        by ``System.Input()``, which reads the union's events step (:mod:`.unionwindows`,
        semantics §11.22)."""
        name = select.source.name
        step, events = one_step(name, body, self.refuse, set(self.steps), reader)
        self.events_steps[name.casefold()] = events
        return self.over_events(select, step)

    def select(self, select: Select) -> Select:
        """``select`` composed with the step it reads, if that step is composable."""
        if select.joins:
            return self.joins.compose(select)
        body = self.steps.get(select.source.name.casefold())
        if body is None or len(body.selects) != 1:
            return select
        step = body.selects[0]
        source = select.source
        if step.into is not None or (step.having is not None and not step.group_by):
            return select  # refused by the planner
        if source.timestamp_by is not None or source.over:
            return select  # TIMESTAMP BY on a step: refused by the planner
        if not step.group_by:
            self.check_analytic(select, body)
        if _passes_through(step) and not step.group_by:
            return select  # a pass-through step: the planner follows it
        if step.group_by:
            if select.applies:
                apply = select.applies[0]
                raise self.refuse(
                    apply.pos,
                    f"{apply.keyword} over the windowed step {source.name} is not supported "
                    "yet: the engines expand events, not a window's records; apply it in the "
                    "step, to the events it windows",
                )
            if source.partition_by is not None or (step.joins and select.group_by):
                return select
            if select.group_by and any(g.window is not None for g in select.group_by):
                return self.rollup.compose(select, step)  # semantics §13.4
            if select.group_by or (_passes_through(select) and select.where is None):
                return select  # GROUP BY without a window (refused), or SELECT * over it
            return self.over_window(select, step)
        return self.over_events(select, step)

    def check_analytic(self, select: Select, body: Union) -> None:
        """Refuse an analytic function (LAG, LAST, ISFIRST, an aggregate with OVER) over a
        step whose records are not all its input's events (it filters or joins, itself or
        through the steps it reads): a job computes them before every WHERE, so they
        would see the events the step drops."""
        calls = [c for e in _select_exprs(select) for c in _calls(e)]
        analytic = [c for c in calls if is_analytic(c)]
        why = self.filters(body) if analytic else None
        if why == "filters" and _filters_its_input(body, self.steps):
            return  # (its WHERE filters the input before them: over_events, §11.20)
        if why is not None:
            raise self.refuse(
                analytic[0].pos,
                f"{analytic[0].text[:-2].upper()}(...) over the step {select.source.name}, "
                f"which {why}, is not supported yet: compute it in the step that reads the "
                "input",
            )

    def filters(self, body: Union) -> str | None:
        """``"filters"`` or ``"joins"`` when a step's records are not all its input's
        events (through the steps it reads too), else ``None``."""
        for branch in body.selects:
            if branch.joins:
                return "joins"
            if branch.where is not None:
                return "filters"
            inner = self.steps.get(branch.source.name.casefold())
            found = self.filters(inner) if inner is not None else None
            if found is not None:
                return found
        return None

    def columns(self, select: Select, step: Select) -> dict[tuple[str, ...], Expr]:
        """The step's named columns, as ``select`` may write them (``z``, ``s.z``)."""
        qualifiers = {select.source.name.casefold()}
        if select.source.alias is not None:
            qualifiers.add(select.source.alias.casefold())
        columns: dict[tuple[str, ...], Expr] = {}
        for item in step.items:
            name = item_name(item)
            if name is None or isinstance(item.expr, Star):
                continue
            key = name.casefold()
            columns[(key,)] = item.expr
            for qualifier in qualifiers:
                columns[(qualifier, key)] = item.expr
        star = next((i.expr for i in step.items if isinstance(i.expr, Star)), None)
        if step.joins and isinstance(star, Star) and star.qualifier is not None:
            # (a JOIN step's input.*: only the columns it names are composed)
            applied = {a.alias.casefold() for a in select.applies}
            for expr in [*_select_exprs(select), *(a.value for a in select.applies)]:
                self.check_known(expr, columns, applied, select.source.name, star.qualifier)
            return columns
        if star is not None:
            for name, guarded in _shadowed(step).items():
                for key in columns:
                    if key[-1] == name:
                        columns[key] = guarded
            return columns
        applied = {a.alias.casefold() for a in select.applies}
        for expr in [*_select_exprs(select), *(a.value for a in select.applies)]:
            self.check_known(expr, columns, applied, select.source.name)
        return columns

    def check_known(
        self,
        expr: Expr,
        columns: dict[tuple[str, ...], Expr],
        applied: set[str],
        step: str,
        star: str | None = None,
    ) -> None:
        """Refuse a column of ``expr`` that the step (which has no ``*``, or ``star.*``
        over a JOIN) does not name (``applied``: the aliases of the reader's own APPLY,
        whose members are no step columns)."""
        if isinstance(expr, Column):
            parts = tuple(p.casefold() for p in expr.parts)
            if parts not in columns and not (len(parts) > 1 and parts[0] in applied):
                why, name = f"{expr.name} is not a column of the step {step}", expr.parts[-1]
                if star is not None:  # (its JOIN's star.*: only the columns it names)
                    why += f": name it there ({star}.{name} AS {name}), {star}.* is not read"
                raise self.refuse(expr.pos, why)
        elif isinstance(expr, Operation):
            for operand in expr.operands:
                self.check_known(operand, columns, applied, step, star)
        elif isinstance(expr, Call):
            args = expr.args[1:] if expr.function in UNIT_CALLS else expr.args
            for arg in (*args, *_over(expr)):  # (an OVER's PARTITION BY and WHEN too)
                self.check_known(arg, columns, applied, step, star)

    def items(self, select: Select, step: Select, columns: dict) -> tuple[SelectItem, ...]:
        """``select``'s items over the step's expressions (``*``: the step's items)."""
        items: list[SelectItem] = []
        for item in select.items:
            if isinstance(item.expr, Star):
                items.extend(step.items)
                continue
            name = item_name(item)
            expr = substitute(item.expr, columns)
            alias = item.alias
            if alias is None and name is not None and item_name(replace(item, expr=expr)) != name:
                alias = name  # SELECT z over z = y * 2 keeps the name z
            items.append(replace(item, expr=expr, alias=alias))
        return tuple(items)

    def over_events(self, select: Select, step: Select) -> Select:
        """``select`` over a step that filters and projects events (maybe over a JOIN)."""
        columns = self.columns(select, step)
        where = None
        if select.where is not None:
            where = replace(select.where, expr=substitute(select.where.expr, columns))
        group_by = tuple(self.group_item(g, columns) for g in select.group_by)
        having = None
        if select.having is not None:
            having = replace(select.having, expr=substitute(select.having.expr, columns))
        source, mine = step.source, select.source.partition_by
        if mine is not None and source.partition_by is None:
            source = replace(source, partition_by=mine)
        elif mine is not None and source.partition_by is not None:
            theirs = source.partition_by
            if mine.name.casefold() != theirs.name.casefold():
                raise self.refuse(
                    mine.pos, f"PARTITION BY {mine.name} differs from PARTITION BY {theirs.name}"
                )
        # the step's APPLY, then the reader's over the step's columns: two are refused by
        # the planner; WHERE runs after them (semantics §13.2)
        mine = tuple(replace(a, value=substitute(a.value, columns)) for a in select.applies)
        before = step.where
        if before is not None and reads_analytic(select):  # (its input's own where, §11.20)
            source = replace(source, where=before.expr)
            before = None
        return replace(
            select,
            items=self.items(select, step, columns),
            source=source,
            joins=step.joins,
            where=_and(before, where),
            group_by=group_by,
            having=having,
            applies=(*step.applies, *mine),
        )

    def group_item(self, group: GroupItem, columns: dict) -> GroupItem:
        """A GROUP BY item over the step's expressions (a window's own columns too)."""
        if group.window is None:
            expr = substitute(group.expr, columns)
            if isinstance(group.expr, Column) and not isinstance(expr, Column):
                # a column the step computes: grouped by its expression, under its name
                return replace(group, expr=expr, alias=group.expr.parts[-1])
            return replace(group, expr=expr)
        window = group.window
        partition = tuple(_as_column(substitute(c, columns), c) for c in window.partition_by)
        over = tuple(_as_column(substitute(c, columns), c) for c in group.over)
        return replace(group, window=replace(window, partition_by=partition), over=over)

    def over_window(self, select: Select, step: Select) -> Select:
        """``select`` (no GROUP BY) over a windowed step: its WHERE is the window's
        HAVING, its columns are computed from the window's."""
        columns = self.columns(select, step)
        where = None
        if select.where is not None:
            where = Clause(substitute(select.where.expr, columns), select.where.pos)
        return replace(
            step,
            items=self.items(select, step, columns),
            into=select.into,
            into_pos=select.into_pos,
            pos=select.pos,
            having=_and(step.having, where),
        )


def _shadowed(step: Select) -> dict[str, Expr]:
    """The columns a step computes right of its ``*`` (case-folded names), each as a
    later statement reads it: the record's field of that name where the record has one
    (null included), else the computed value, as the step writes it per record
    (semantics §11.16): ``CASE WHEN x IS NOT MISSING THEN x ELSE expr END``."""
    star = next(n for n, i in enumerate(step.items) if isinstance(i.expr, Star))
    out: dict[str, Expr] = {}
    for item in step.items[star + 1 :]:
        name = item_name(item)
        if name is None or (isinstance(item.expr, Column) and item.expr.parts[-1] == name):
            continue
        pos = item.expr.pos
        field = Column((name,), pos)
        present = Operation("IS MISSING", (field,), pos, "IS NOT MISSING")
        out[name.casefold()] = Operation("CASE", (present, field, item.expr), pos, "CASE ELSE")
    return out


def _as_column(expr: Expr, original: Column) -> Column:
    """A window's column (``OVER``, session ``PARTITION BY``) over a step: the step's
    column it names, when that is a column; else the name as written."""
    return expr if isinstance(expr, Column) else original


def _passes_through(select: Select) -> bool:
    """Whether ``select`` is ``SELECT *`` (or ``alias.*``) alone."""
    return len(select.items) == 1 and isinstance(select.items[0].expr, Star)


def inline_steps(query: Query, bindings: Bindings) -> Query:
    """``query`` with each SELECT composed with the stateless (or windowed) step it
    reads; see the module's docstring (``bindings``: the job file's, which a window over
    a windowed step checks)."""
    return Inliner(query, bindings).run(query)
