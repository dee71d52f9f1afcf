"""A JOIN of an input with a windowed step (semantics §7.12): Stream Analytics' "last
event in a window" (``WITH Last AS (SELECT MAX(Time) AS LastTime FROM Input TIMESTAMP
BY Time GROUP BY TumblingWindow(minute, 10)) SELECT ... FROM Input TIMESTAMP BY Time
JOIN Last ON DATEDIFF(minute, Input, Last) BETWEEN 0 AND 10 AND Input.Time =
Last.LastTime``) and "correlate two event types" (a sliding window's maximum joined
with the events of the same stream).

The job's ``[window]`` is the step's window, named by the step (``[window] name``),
over the events of the step's input: a reading of its own (``<input>_2``, bound to the
input's table, with the step's ``WHERE`` as its ``where``) when the JOIN's left side
reads the same input. The ``[join]`` joins the left input with the window's records:
``ON``'s equal columns are ``on``, ``DATEDIFF`` the time bound, the rest the condition.
A step's ``System.Timestamp() AS t`` is the window's end: ``Last.t`` is
``Last.window_end``.
"""

from __future__ import annotations

from dataclasses import replace

from sparktide.query.ast import Column, FromSource, Select, SelectItem, Star
from sparktide.query.refusal import Refuse
from sparktide.query.translate.context import is_timestamp, source_names
from sparktide.query.translate.inline import map_columns

__all__ = ["WindowStep", "window_times"]


class WindowStep:
    """A windowed step a JOIN reads as its right side.

    Parameters
    ----------
    refuse
        Makes the refusals.
    name
        The step's name (the window's, and the join's ``right``).
    select
        The step's SELECT (it has a window in its ``GROUP BY``).
    """

    def __init__(self, refuse: Refuse, name: str, select: Select) -> None:
        self.refuse = refuse
        self.name = name
        self.select = select

    @staticmethod
    def windowed(select: Select) -> bool:
        """Whether ``select`` groups by a window."""
        return any(g.window is not None for g in select.group_by)

    def check(self, right: FromSource, steps: set[str]) -> None:
        """Refuse what the job cannot run: a step that joins, applies or reads a step,
        ``TIMESTAMP BY`` or ``PARTITION BY`` on the step where the JOIN reads it, a
        column computed over the step's aggregates."""
        select = self.select
        where = f"the JOIN of the windowed step {self.name}"
        if select.joins or select.applies:
            raise self.refuse(select.pos, f"{where} whose window reads a JOIN or an APPLY")
        if select.source.name.casefold() in steps:
            raise self.refuse(
                select.source.pos,
                f"{where}, over the step {select.source.name}, is not supported yet: its "
                "window must read an input",
            )
        if right.timestamp_by is not None or right.partition_by is not None:
            raise self.refuse(
                right.pos,
                f"TIMESTAMP BY or PARTITION BY on the step {self.name}: its records are "
                "at the window's end",
            )
        for item in select.items:
            if isinstance(item.expr, Star):
                raise self.refuse(item.pos, f"SELECT * in the windowed step {self.name}")

    def window_select(self) -> Select:
        """The step's SELECT without its ``System.Timestamp()`` columns (the window's end)."""
        items = tuple(i for i in self.select.items if not is_timestamp(i.expr))
        return replace(self.select, items=items)

    def reading(self, left: FromSource, taken: set[str]) -> FromSource:
        """The input reading the window reads, the step's ``WHERE`` its own: the step's
        input, or (when the JOIN's left reads it too) a reading of its own, ``<input>_2``
        (the first free name), bound to the input's table and keeping the name the
        step's columns qualify."""
        source = self.select.source
        where = None if self.select.where is None else self.select.where.expr
        if source.name.casefold() != left.input_name.casefold():
            return replace(source, where=where)
        n = 2
        while f"{source.name}_{n}".casefold() in taken:
            n += 1
        alias = source.alias or source.name
        name = f"{source.name}_{n}"
        return replace(source, name=name, alias=alias, bound=source.name, where=where)

    def records(self, right: FromSource) -> FromSource:
        """The JOIN's right side: the window's records, named by the step."""
        return replace(right, name=self.name, timestamp_by=None, over=(), bound=None)


def window_times(select: Select, steps: dict[str, Select]) -> Select:
    """``select`` (with a JOIN) with each column naming a windowed step's
    ``System.Timestamp()`` (``Last.t`` over ``System.Timestamp() AS t``) read as the
    step's ``window_end``; ``steps``: the windowed steps its JOIN reads, by case-folded
    name or alias."""
    ends: dict[tuple[str, str], str] = {}
    for source in (select.source, *(j.source for j in select.joins)):  # (§7.12, §13.5)
        step = steps.get(source.name.casefold())
        if step is None:
            continue
        names = source_names(source)
        for item in step.items:
            if is_timestamp(item.expr) and item.alias is not None:
                for name in names:
                    ends[(name, item.alias.casefold())] = "window_end"
    if not ends:
        return select

    def column(node: Column) -> Column:
        parts = node.parts
        if len(parts) == 2 and (parts[0].casefold(), parts[1].casefold()) in ends:
            return replace(node, parts=(parts[0], "window_end"))
        return node

    def read(item: SelectItem) -> SelectItem:
        if isinstance(item.expr, Star):
            return item
        alias = item.alias
        if alias is None and isinstance(item.expr, Column) and column(item.expr) != item.expr:
            alias = item.expr.parts[-1]  # (Last.t keeps its name t)
        return replace(item, expr=map_columns(item.expr, column), alias=alias)

    joins = tuple(replace(j, condition=map_columns(j.condition, column)) for j in select.joins)
    where = select.where
    if where is not None:
        where = replace(where, expr=map_columns(where.expr, column))
    return replace(select, items=tuple(read(i) for i in select.items), joins=joins, where=where)
