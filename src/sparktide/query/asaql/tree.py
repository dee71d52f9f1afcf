"""The parse tree of a query → its :class:`~sparktide.query.ast.Query`.

:class:`TreeBuilder` is the Lark transformer: its methods are named as the grammar's
rules and build, bottom up, the SELECT items, FROM sources, JOINs, clauses, SELECTs,
UNIONs, WITH steps and the query. Expressions come from
:class:`~sparktide.query.asaql.expressions.ExpressionRules`; the windows of ``GROUP BY``
are recognised and checked here, as they are met
(:class:`~sparktide.query.asaql.windows.WindowReader`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lark import Token, Transformer

from sparktide.query.asaql.expressions import ExpressionRules
from sparktide.query.asaql.positions import Ident, position
from sparktide.query.asaql.recognize import RecognizeRules
from sparktide.query.asaql.windows import WindowReader
from sparktide.query.ast import (
    Call,
    Clause,
    Column,
    CrossApply,
    FromSource,
    GroupItem,
    Join,
    Pos,
    Query,
    Recognize,
    Select,
    SelectItem,
    Star,
    Step,
    Union,
)
from sparktide.query.refusal import Refuse

__all__ = ["TreeBuilder"]


#: The functions of ``CROSS APPLY`` (as :class:`Call` names them) and their expansions.
_APPLIED = {"getarrayelements": "elements", "getrecordproperties": "properties"}


@dataclass(frozen=True)
class _Condition:
    """A ``WHERE`` or (``having``) a ``HAVING`` clause, on its way into its ``Select``."""

    having: bool
    clause: Clause


class TreeBuilder(ExpressionRules, RecognizeRules, Transformer):  # type: ignore[type-arg]
    """Lark tree → :mod:`sparktide.query.ast` nodes, for the query named ``source``."""

    def __init__(self, source: str) -> None:
        super().__init__(visit_tokens=False)
        self.source = source
        self.refuse = Refuse(source)
        self.windows = WindowReader(self.refuse)

    # ------------------------------------------------------- select list
    def star_item(self, children: list[Token]) -> SelectItem:
        pos = position(children[0])
        return SelectItem(Star(None, pos), None, pos)

    def qualified_star_item(self, children: list[Any]) -> SelectItem:
        name = children[0]
        return SelectItem(Star(str(name), name.pos), None, name.pos)

    def expr_item(self, children: list[Any]) -> SelectItem:
        expr = children[0]
        alias = str(children[-1]) if len(children) >= 2 else None  # (AS is optional)
        return SelectItem(expr, alias, position(expr))

    def select_items(self, children: list[SelectItem]) -> tuple[SelectItem, ...]:
        return tuple(children)

    def into(self, children: list[Any]) -> Ident:
        return children[1]

    def alias(self, children: list[Any]) -> Ident:
        return children[-1]

    # ----------------------------------------------------- from and join
    def timestamp_by(self, children: list[Any]) -> tuple[str, Any, tuple[Column, ...], Pos]:
        values = [c for c in children if not isinstance(c, Token)]
        return ("timestamp", values[0], tuple(values[1:]), position(children[0]))

    def partition_by(self, children: list[Any]) -> tuple[str, Column, Pos]:
        return ("partition", children[2], position(children[0]))

    def from_item(self, children: list[Any]) -> FromSource:
        name = children[0]
        alias = timestamp = partition = None
        over: tuple[Column, ...] = ()
        timestamp_pos = partition_pos = None
        for child in children[1:]:
            if isinstance(child, Ident):
                alias = str(child)
            elif child[0] == "timestamp":
                _, timestamp, over, timestamp_pos = child
            else:
                _, partition, partition_pos = child
        return FromSource(
            str(name),
            alias,
            timestamp,
            over,
            partition,
            name.pos,
            timestamp_pos=timestamp_pos,
            partition_pos=partition_pos,
        )

    def join_kind(self, children: list[Token]) -> str:
        return " ".join(str(c).upper() for c in children) or "INNER"

    def join(self, children: list[Any]) -> Join:
        kind, _join, source, _on, condition = children
        return Join(kind, source, condition, position(_join))

    def cross_apply(self, children: list[Any]) -> CrossApply:
        cross, keyword, value, alias = children
        if str(keyword).casefold() != "apply":
            raise self.refuse(keyword.pos, f"{cross} {keyword}: expected CROSS JOIN or CROSS APPLY")
        outer = str(cross).casefold() == "outer"
        keyword = "OUTER APPLY" if outer else "CROSS APPLY"
        function = value.function if isinstance(value, Call) else None
        if function not in _APPLIED or value.over is not None or value.star or value.distinct:
            raise self.refuse(
                position(value),
                f"{keyword} takes GetArrayElements(value) or GetRecordProperties(value)",
            )
        if len(value.args) != 1:
            raise self.refuse(value.pos, f"{value.text[:-2]}(...) takes one value")
        return CrossApply(_APPLIED[function], value.args[0], str(alias), position(cross), outer)

    # ----------------------------------------------------------- clauses
    def where(self, children: list[Any]) -> _Condition:
        return _Condition(False, Clause(children[1], position(children[0])))

    def having(self, children: list[Any]) -> _Condition:
        return _Condition(True, Clause(children[1], position(children[0])))

    def group_item(self, children: list[Any]) -> GroupItem:
        expr = children[0]
        over: tuple[Column, ...] = ()
        if isinstance(expr, Call) and expr.over is not None:  # SessionWindow(...) OVER (...)
            spec = expr.over
            if spec.limit is not None or spec.when is not None or spec.order_by:
                raise self.refuse(spec.pos, "OVER in GROUP BY takes PARTITION BY only")
            for column in spec.partition_by:
                if not isinstance(column, Column):
                    raise self.refuse(position(column), "PARTITION BY in GROUP BY names columns")
            over = tuple(spec.partition_by)
            expr = replace(expr, over=None)
            window = self.windows.window(expr, over)
            if window is None:
                raise self.refuse(spec.pos, "OVER (PARTITION BY ...) applies to SessionWindow only")
            return GroupItem(expr, position(expr), window, over)
        window = self.windows.window(expr, over)
        return GroupItem(expr, position(expr), window, over)

    def group_by(self, children: list[Any]) -> tuple[Pos, tuple[GroupItem, ...]]:
        return (position(children[0]), tuple(c for c in children if isinstance(c, GroupItem)))

    # -------------------------------------------------------- statements
    def select(self, children: list[Any]) -> Select:
        pos = position(children[0])
        items: tuple[SelectItem, ...] = children[1]
        into = into_pos = source = where = having = group_pos = recognize = None
        joins: list[Join] = []
        applies: list[CrossApply] = []
        group: tuple[GroupItem, ...] = ()
        for child in children[2:]:
            if isinstance(child, Token):
                continue
            if isinstance(child, Ident):
                into, into_pos = str(child), child.pos
            elif isinstance(child, FromSource):
                source = child
            elif isinstance(child, Join):
                joins.append(child)
            elif isinstance(child, CrossApply):
                applies.append(child)
            elif isinstance(child, Recognize):
                recognize = child
            elif isinstance(child, tuple):
                group_pos, group = child
            elif isinstance(child, _Condition) and child.having:
                having = child.clause
            elif isinstance(child, _Condition):
                where = child.clause
        assert source is not None
        return Select(
            items,
            into,
            source,
            pos,
            into_pos=into_pos,
            joins=tuple(joins),
            where=where,
            group_by=group,
            group_pos=group_pos,
            having=having,
            applies=tuple(applies),
            recognize=recognize,
        )

    def union(self, children: list[Any]) -> Union:
        selects = tuple(c for c in children if isinstance(c, Select))
        positions = tuple(
            position(c) for c in children if isinstance(c, Token) and c.type == "UNION"
        )
        return Union(selects, selects[0].pos, positions)

    def statement(self, children: list[Any]) -> Union:
        return children[0]

    def step(self, children: list[Any]) -> Step:
        name = children[0]
        return Step(str(name), children[-1], name.pos)

    def with_clause(self, children: list[Any]) -> tuple[Step, ...]:
        return tuple(c for c in children if isinstance(c, Step))

    def start(self, children: list[Any]) -> Query:
        steps: tuple[Step, ...] = ()
        statements = []
        for child in children:
            if isinstance(child, tuple):
                steps = child
            elif isinstance(child, Union):
                statements.append(child)
        return Query(steps, tuple(statements), self.source)
