"""A window over a windowed step that is one window of the events (semantics §13.4).

Stream Analytics gives a windowed step's records the window end as their time, so a
second window over them groups whole windows of the first. When the first window is a
tumbling window and each window of the second is a union of the first's (a tumbling
window whose size is a multiple of the first's, on the same grid, or a snapshot window,
``GROUP BY System.Timestamp()``, which groups the records of one window), and the second
window's aggregates can be computed from the events directly (``SUM`` of a ``COUNT`` or
a ``SUM``, ``MIN`` of a ``MIN``, ``MAX`` of a ``MAX``, ``MIN``/``MAX`` of a grouping
column), the two windows are one window over the events with the second's grouping
columns (a subset of the first's) — Stream Analytics' "query parallelization" roll-up.

A snapshot step (``GROUP BY k, System.Timestamp()``, no other window) writes one record
per distinct (``k``, event timestamp) at that timestamp, so any window over it (its
records are in the windows, hops, sliding instants and sessions of their events) is one
window of the events in which ``AVG``, ``SUM``, ``COUNT`` of a grouping
column and ``COUNT(*)`` count each distinct (other grouping columns, timestamp) once:
``over (distinct ...)`` in the job (Stream Analytics' "remove duplicates" pattern).
:class:`Rollup` makes that one SELECT; everything else stays refused, naming why.
"""

from __future__ import annotations

from dataclasses import replace

from sparktide.query.ast import Call, Column, Expr, GroupItem, Literal, Operation, Select
from sparktide.query.bind import Bindings
from sparktide.query.refusal import Refuse
from sparktide.query.translate.context import is_timestamp
from sparktide.time import parse_duration

__all__ = ["ROLLUPS", "Rollup"]

#: (second window's aggregate, the step's aggregate it reads): the pairs that are the
#: step's aggregate over the second window's events.
ROLLUPS = frozenset({("sum", "count"), ("sum", "sum"), ("min", "min"), ("max", "max")})


class Rollup:
    """Composes a windowed SELECT with the windowed step it reads, or refuses it.

    Parameters
    ----------
    refuse
        Makes the refusals.
    """

    def __init__(self, refuse: Refuse, bindings: Bindings) -> None:
        self.refuse = refuse
        self.bindings = bindings
        #: While composing over a snapshot step: its grouping columns (``None``: a
        #: tumbling step) and the second window's.
        self.step_keys: tuple[Column, ...] | None = None
        self.outer_keys: tuple[Column, ...] = ()

    def compose(self, select: Select, step: Select) -> Select:
        """One SELECT over the step's input computing ``select``'s windows."""
        name = select.source.name
        inner, outer = self.window(step), self.window(select)
        assert inner.window is not None and outer.window is not None
        self.check_step(step, name, inner)
        self.check_settings(outer)
        group = self.check_windows(select, inner, outer, name)
        columns = self.columns(step, name)
        if select.where is not None:
            raise self.refuse(
                select.where.pos,
                f"WHERE over the windowed step {name} under a second window is not "
                "supported yet: filter in the step (HAVING there filters its groups)",
            )
        keys = [self.key(g, columns, name) for g in select.group_by if g.window is None]
        self.step_keys = self.snapshot_keys(step, inner, name)
        self.outer_keys = tuple(k.expr for k in keys if isinstance(k.expr, Column))
        items = tuple(
            replace(item, expr=self.expr(item.expr, columns, name)) for item in select.items
        )
        having = select.having
        if having is not None:
            having = replace(having, expr=self.expr(having.expr, columns, name))
        return replace(
            select,
            items=items,
            source=step.source,
            joins=step.joins,
            where=step.where,
            group_by=(*keys, group),
            having=having,
            applies=step.applies,  # (the step's elements are the events it windows)
        )

    def window(self, select: Select) -> GroupItem:
        """The window item of ``select``'s GROUP BY."""
        return next(g for g in select.group_by if g.window is not None)

    def check_step(self, step: Select, name: str, inner: GroupItem) -> None:
        """Refuse a first window whose records a second window cannot regroup exactly."""
        assert inner.window is not None
        if inner.window.kind not in ("tumbling", "snapshot"):
            raise self.refuse(
                inner.pos,
                f"a window over the {inner.window.kind} window of the step {name} is not "
                "supported yet: only a tumbling step's windows tile time (and a snapshot "
                "step's records are its events' timestamps)",
            )
        if step.having is not None:
            raise self.refuse(
                step.having.pos,
                f"HAVING in the step {name} under a second window is not supported yet: "
                "the second window would see the groups it keeps only",
            )
        if step.source.partition_by is not None:
            raise self.refuse(
                step.source.partition_by.pos,
                f"PARTITION BY in the step {name} under a second window is not supported "
                "yet: the second window merges the partitions' windows",
            )

    def check_settings(self, outer: GroupItem) -> None:
        """Refuse job-file settings under which a window takes events behind the
        watermark or closes on processing time: the first window's records would then
        differ from the events' windows."""
        window, ordering = self.bindings.window, self.bindings.ordering
        lateness = window.get("allowed_lateness")
        late = isinstance(lateness, str) and parse_duration(lateness) != 0
        for key, bad in (
            ("window.allowed_lateness", late),
            ("window.idle_timeout", window.get("idle_timeout") not in (None, "none")),
            ("ordering.on_out_of_order", ordering.get("on_out_of_order") == "accept"),
        ):
            if bad:
                raise self.refuse(
                    outer.pos,
                    f"a window over a windowed step with {key} in the job file is not "
                    "supported yet: the step's windows would then take events the "
                    "composed window does not",
                )

    def check_windows(
        self, select: Select, inner: GroupItem, outer: GroupItem, name: str
    ) -> GroupItem:
        """The window of the composed SELECT: the outer one when each of its windows is a
        union of the inner one's, or when the inner one is a snapshot window (any kind of
        outer window); the inner one for an outer snapshot window."""
        first, second = inner.window, outer.window
        assert first is not None and second is not None
        if second.kind == "snapshot":
            return inner
        if first.kind == "snapshot":  # (its records lie at their events' timestamps)
            return outer
        assert first.size is not None
        size = first.size
        if (
            second.kind == "tumbling"
            and second.size is not None
            and second.size % size == 0
            and ((second.offset or 0) - (first.offset or 0)) % size == 0
        ):
            return outer
        raise self.refuse(
            outer.pos,
            f"a {second.kind} window over the windowed step {name} is not supported yet: "
            "only a snapshot window, or a tumbling window made of whole windows of the step "
            "(a multiple of its size, on its grid), regroups its records exactly",
        )

    def snapshot_keys(self, step: Select, inner: GroupItem, name: str) -> tuple[Column, ...] | None:
        """The grouping columns of a snapshot step (``None`` for a tumbling one)."""
        assert inner.window is not None
        if inner.window.kind != "snapshot":
            return None
        if step.applies:
            apply = step.applies[0]
            raise self.refuse(
                apply.pos,
                f"{apply.keyword} in the snapshot step {name} under a second window is not "
                "supported yet: its records are distinct element values",
            )
        keys = []
        for group in step.group_by:
            if group.window is not None:
                continue
            if not isinstance(group.expr, Column):
                raise self.refuse(
                    group.pos,
                    f"GROUP BY an expression in the snapshot step {name} under a second "
                    "window is not supported yet: group by columns",
                )
            keys.append(group.expr)
        return tuple(keys)

    def columns(self, step: Select, name: str) -> dict[str, Expr]:
        """The step's named columns (case-folded): grouping columns, aggregates and
        ``System.Timestamp()``."""
        columns: dict[str, Expr] = {}
        for item in step.items:
            expr = item.expr
            label = item.alias or (expr.parts[-1] if isinstance(expr, Column) else None)
            if label is not None and isinstance(expr, Column | Call):
                columns[label.casefold()] = expr
        return columns

    def lookup(self, column: Column, columns: dict[str, Expr], name: str) -> Expr:
        """The step's expression of ``column`` (``w.n`` or ``n``)."""
        found = columns.get(column.parts[-1].casefold())
        if found is None or len(column.parts) > 2:
            raise self.refuse(column.pos, f"{column.name} is not a column of the step {name}")
        return found

    def key(self, group: GroupItem, columns: dict[str, Expr], name: str) -> GroupItem:
        """A grouping column of the second window: one of the step's grouping columns."""
        expr = group.expr
        found = self.lookup(expr, columns, name) if isinstance(expr, Column) else None
        if not isinstance(found, Column):
            raise self.refuse(
                group.pos,
                f"GROUP BY over the windowed step {name}: group by the step's grouping "
                "columns (not its aggregates or expressions)",
            )
        return replace(group, expr=found)

    def expr(self, expr: Expr, columns: dict[str, Expr], name: str) -> Expr:
        """``expr`` of the second window over the events: outside its aggregates only
        grouping columns and the window end are read."""
        if isinstance(expr, Literal) or is_timestamp(expr):
            return expr
        if isinstance(expr, Column):
            found = self.lookup(expr, columns, name)
            if not isinstance(found, Column):
                raise self.refuse(
                    expr.pos,
                    f"{expr.name} of the windowed step {name} outside an aggregate of the "
                    "second window: read it inside SUM, MIN or MAX",
                )
            return found
        if isinstance(expr, Operation):
            operands = tuple(self.expr(o, columns, name) for o in expr.operands)
            return replace(expr, operands=operands)
        if expr.function in ("sum", "min", "max", "count", "avg"):
            return self.aggregate(expr, columns, name)
        args = tuple(self.expr(a, columns, name) for a in expr.args)
        return replace(expr, args=args)

    def aggregate(self, call: Call, columns: dict[str, Expr], name: str) -> Call:
        """An aggregate of the second window as one of the events."""
        arg = call.args[0] if len(call.args) == 1 and not call.distinct else None
        found = self.lookup(arg, columns, name) if isinstance(arg, Column) else None
        if isinstance(found, Column) and call.function in ("min", "max"):
            return replace(call, args=(found,))  # the extremes of a grouping column
        if isinstance(found, Call) and not found.distinct and not is_timestamp(found):
            if (call.function, found.function) in ROLLUPS:
                return replace(found, pos=call.pos)
        if self.step_keys is not None and not call.distinct and call.over is None:
            if call.star and call.function == "count":
                return replace(call, each=self.each(None))
            if isinstance(found, Column) and call.function in ("avg", "sum", "count"):
                self.check_key(found, arg, name)
                return replace(call, args=(found,), each=self.each(found))
        extra = (
            "; and AVG, SUM, COUNT of its grouping columns and COUNT(*) count each "
            "distinct record once"
            if self.step_keys is not None
            else ""
        )
        raise self.refuse(
            call.pos,
            f"{_describe(call)} over the windowed step {name} is not supported yet: "
            "only SUM of a COUNT or SUM, MIN of a MIN, MAX of a MAX (and MIN, MAX of a "
            f"grouping column) are aggregates of its events{extra}",
        )

    def check_key(self, found: Column, arg: Expr | None, name: str) -> None:
        """Refuse an aggregate of a step column that the step does not group by."""
        assert self.step_keys is not None
        if _folded(found) not in {_folded(k) for k in self.step_keys}:
            what = arg.name if isinstance(arg, Column) else found.name
            raise self.refuse(
                found.pos,
                f"{what} is neither in the GROUP BY of the step {name} nor an aggregate of it",
            )

    def each(self, column: Column | None) -> tuple[Column, ...]:
        """The columns an aggregate over a snapshot step counts each distinct combination
        of (with the timestamp): the step's grouping columns the second window does not
        group by, and the aggregate's own column."""
        assert self.step_keys is not None
        outer = {_folded(k) for k in self.outer_keys}
        mine = _folded(column) if column is not None else None
        return tuple(k for k in self.step_keys if _folded(k) not in outer or _folded(k) == mine)


def _folded(column: Column) -> str:
    """A column's name as a key: its last part, case-folded."""
    return column.parts[-1].casefold()


def _describe(call: Call) -> str:
    """``SUM(n)``, ``COUNT(*)`` ... as the message names it."""
    if call.star:
        return f"{call.text[:-2].upper()}(*)"
    args = ", ".join(a.name if isinstance(a, Column) else "..." for a in call.args)
    return f"{call.text[:-2].upper()}({args})"
