"""A window over a JOIN with reference data (semantics §11.23): ``SELECT r.Region,
COUNT(*) FROM Input i JOIN Devices r ON i.DeviceId = r.DeviceId GROUP BY r.Region,
TumblingWindow(minute, 5)``.

The job's events are the stream's, each met with the table's rows it matches, the row
under the table's name: ``r.Region`` is then ``GetRecordPropertyValue(Devices,
'Region')`` and ``i.Value`` the event's ``Value``. :func:`over_table` rewrites the
windowed SELECT into one over the stream (its JOIN kept, for the planner) that reads
the table's fields so; a grouping column of the table's keeps its own name (``GROUP BY
r.Region`` is the computed grouping column ``Region``). The window, its aggregates,
``HAVING`` and the ``WHERE`` (the job's ``[filter]``, over each match) then translate
as over one input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sparktide.query.ast import Clause, Column, Expr, Select, SelectItem, Star
from sparktide.query.translate.context import source_names
from sparktide.query.translate.inline import map_columns
from sparktide.query.translate.plans import JoinPlan

__all__ = ["grouped_reader", "over_table"]


def over_table(select: Select, join: JoinPlan) -> Select:
    """``select`` (windowed, over ``join`` with reference data) as a SELECT from the
    stream whose columns of the table read the table's record (see the module)."""
    table = source_names(join.right)
    grouped: dict[tuple[str, ...], str] = {}  # (the table's grouping columns: their names)

    def of_table(column: Column) -> bool:
        return len(column.parts) > 1 and column.parts[0].casefold() in table

    def nested(column: Column) -> Expr:
        if not of_table(column):
            return column
        return Column((join.right.name, *column.parts[1:]), column.pos)

    def read(expr: Expr) -> Expr:
        return map_columns(expr, nested)

    group_by = []
    for item in select.group_by:
        if item.window is None and isinstance(item.expr, Column) and of_table(item.expr):
            name = item.alias or item.expr.parts[-1]
            grouped[tuple(p.casefold() for p in item.expr.parts)] = name
            item = replace(item, expr=read(item.expr), alias=name)
        elif item.window is None:
            item = replace(item, expr=read(item.expr))
        group_by.append(item)

    result = grouped_reader(grouped, nested)  # (SELECT and HAVING)

    items = []
    for item in select.items:
        if isinstance(item.expr, Star):
            items.append(item)
            continue
        alias = item.alias
        if alias is None and isinstance(item.expr, Column) and of_table(item.expr):
            alias = item.expr.parts[-1]
        items.append(SelectItem(result(item.expr), alias, item.pos))
    return replace(
        select,
        source=join.left,
        items=tuple(items),
        group_by=tuple(group_by),
        where=None if select.where is None else Clause(read(select.where.expr), select.where.pos),
        having=None
        if select.having is None
        else Clause(result(select.having.expr), select.having.pos),
    )


def grouped_reader(
    grouped: dict[tuple[str, ...], str], otherwise: Callable[[Column], Expr]
) -> Callable[[Expr], Expr]:
    """Reads an expression over a window's result: a grouping column (its case-folded
    parts a key of ``grouped``) by its name, any other column as ``otherwise`` makes it."""

    def column(node: Column) -> Expr:
        name = grouped.get(tuple(p.casefold() for p in node.parts))
        return Column((name,), node.pos) if name is not None else otherwise(node)

    return lambda expr: map_columns(expr, column)


def _clause(clause: Clause | None, change: Callable[[Expr], Expr]) -> Clause | None:
    return None if clause is None else Clause(change(clause.expr), clause.pos)
