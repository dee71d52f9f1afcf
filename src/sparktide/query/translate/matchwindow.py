"""A window over the matches of a JOIN of two streams (semantics §7.11): ``SELECT
e.TollId, COUNT(*) FROM Entry e JOIN Exit x ON e.Plate = x.Plate AND DATEDIFF(minute,
e, x) BETWEEN 0 AND 15 GROUP BY e.TollId, TumblingWindow(minute, 10)``.

Each match is one event of the window; its fields are ``<input>.<field>`` of either
input (the input's name, not its alias) and each input's record whole by its name.
:func:`over_matches` names each grouping column of an input (``GROUP BY e.TollId`` is the
computed grouping column ``TollId = "Entry.TollId"``) and has the SELECT and ``HAVING``
read it by that name; :class:`MatchFields` reads the rest of the window's columns as
the match's fields. The window, its aggregates and ``HAVING`` then translate as over
one input; the ``WHERE`` and the rest of ``ON`` are the join's, as without a window.
"""

from __future__ import annotations

from dataclasses import replace

from sparktide import expr as E
from sparktide.query.ast import Call, Clause, Column, Expr, FromSource, Select, SelectItem, Star
from sparktide.query.bind import Bindings
from sparktide.query.refusal import Refuse, check_column
from sparktide.query.translate.context import (
    inside,
    is_timestamp,
    qualify_over_join,
    source_names,
)
from sparktide.query.translate.fields import Fields
from sparktide.query.translate.lookupwindow import grouped_reader
from sparktide.query.translate.plans import JoinPlan

__all__ = ["MatchFields", "over_matches"]


def _grouping_name(column: Column, join: JoinPlan) -> str | None:
    """The name a ``GROUP BY`` column of an input's takes: its field's (``e.TollId`` is
    ``TollId``); ``None`` for any other column."""
    sides = source_names(join.left) | source_names(join.right)
    if len(column.parts) == 2 and column.parts[0].casefold() in sides:
        return column.parts[1]
    return None


def over_matches(select: Select, join: JoinPlan) -> Select:
    """``select`` (windowed, over ``join`` of two streams) with each grouping column of
    an input named by its field, and read by that name in the SELECT and ``HAVING``."""
    grouped: dict[tuple[str, ...], str] = {}
    group_by = []
    for item in select.group_by:
        if item.window is None and isinstance(item.expr, Column):
            name = item.alias or _grouping_name(item.expr, join)
            if name is not None:
                grouped[tuple(p.casefold() for p in item.expr.parts)] = name
                item = replace(item, alias=name)
        group_by.append(item)

    result = grouped_reader(grouped, lambda node: node)

    items = []
    for item in select.items:
        if isinstance(item.expr, Star):
            items.append(item)
            continue
        alias = item.alias
        if alias is None and isinstance(item.expr, Column):
            alias = grouped.get(tuple(p.casefold() for p in item.expr.parts))
        items.append(SelectItem(result(item.expr), alias, item.pos))
    having = select.having
    return replace(
        select,
        items=tuple(items),
        group_by=tuple(group_by),
        having=None if having is None else Clause(result(having.expr), having.pos),
    )


class MatchFields(Fields):
    """The fields of a JOIN's matches as a window reads them: ``a.k`` is the match's
    field ``<input>.k``, ``a`` alone the input's record whole."""

    def __init__(self, refuse: Refuse, bindings: Bindings, join: JoinPlan) -> None:
        super().__init__(refuse, bindings)
        self.join = join

    def plain(self, expr: Expr, source: FromSource) -> bool:
        """No column of a match is a plain column of one input: each is an expression."""
        return False

    def path(self, expr: Column, source: FromSource) -> str:
        """A match's field is no plain column, nor a value inside one (:meth:`column`)."""
        return self.column(expr, source)

    def column(self, expr: Column, source: FromSource, what: str = "column") -> str:
        """A column of the window's result by its name (a grouping column); an input's
        field as a plain column (``ORDER BY`` of an ordered aggregate, ``COUNT(DISTINCT
        ...)`` of several) is refused: a match's fields are no plain columns."""
        if len(expr.parts) == 1:
            return check_column(expr.parts[0], expr.pos, self.refuse, what)
        raise self.refuse(
            expr.pos,
            f"{expr.name} as a plain column over a JOIN's matches (an ORDER BY or "
            "several columns of an aggregate) is not supported yet: aggregate an "
            "expression of one column",
        )

    def field_leaf(self, node: Column | Call, source: FromSource, clause: str) -> E.Expr:
        """A match's field, or what :class:`Fields` reads of a call."""
        if isinstance(node, Column):
            return self.match_field(node)
        if is_timestamp(node) and clause != "an aggregate":  # (there: the match's, §6.12)
            raise self.refuse(
                node.pos,
                f"System.Timestamp() in {clause} over a JOIN's matches is not supported "
                "yet: outside an aggregate, the match's time is its window's",
            )
        return super().field_leaf(node, source, clause)

    def match_field(self, node: Column) -> E.Expr:
        """``a.k`` (``<input>.k``), ``a.k.x`` (a value inside it), or ``a`` (the record)."""
        left, right = self.join.left, self.join.right
        tables = [t for t, _ in self.join.then]  # (the rows each match meets, §11.26)
        parts = node.parts
        sides = [s for s in (left, right, *tables) if parts[0].casefold() in source_names(s)]
        if not sides:
            raise qualify_over_join(self.refuse, node, left)
        side = sides[0].name
        if len(parts) == 1:
            return E.Ref(side)
        return inside(E.Ref(check_column(parts[1], node.pos, self.refuse), side), parts[2:])
