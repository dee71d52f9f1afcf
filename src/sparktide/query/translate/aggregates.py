"""The columns of a windowed ``SELECT``: grouped columns, aggregates, ``System.Timestamp()``
and the expressions over them.

``COUNT(*)``, ``COUNT(x)``, ``COUNT(DISTINCT x)``, ``SUM``, ``AVG``, ``MIN``, ``MAX`` of a
column ``AS name`` become the window's ``aggregates``; ``System.Timestamp()`` is the
window records' ``window_end``. Computed columns (``SUM(Toll) / COUNT(*)``) and renamed
grouped columns become ``[select]``, with the aggregates they use as aggregates of their
own (an invented name when the SELECT does not name one); ``HAVING`` becomes ``[window]
having``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from sparktide import expr as E
from sparktide.job.values import OWN_WINDOW_FIELDS, own_names
from sparktide.query.ast import Call, Column, Expr, FromSource, Pos, Select, SelectItem, Star
from sparktide.query.exprs import convert
from sparktide.query.refusal import is_column_name
from sparktide.query.translate.context import (
    AGGREGATES,
    ORDERED_AGGREGATES,
    OTHER_AGGREGATES,
    Context,
    is_scalar,
    is_timestamp,
)
from sparktide.query.translate.fields import Fields
from sparktide.query.translate.ordered import ordered_aggregate

__all__ = ["Aggregates", "WindowColumns"]


@dataclass(frozen=True)
class WindowColumns:
    """What a windowed SELECT computes.

    Attributes
    ----------
    aggregates
        The window's aggregates: output name → ``function(column)``.
    select
        The ``[select]`` table, when the SELECT computes or renames columns, else ``None``.
    having
        The ``HAVING`` condition as text, or ``None``.
    """

    aggregates: dict[str, str]
    select: dict[str, str] | None = None
    having: str | None = None


@dataclass
class _Reading:
    """The columns of one windowed SELECT as its items are read."""

    grouped: dict[str, str]  # case-folded grouping column → as written
    aggregates: dict[str, str] = field(default_factory=dict)
    selected: set[str] = field(default_factory=set)  # grouping columns the SELECT names
    taken: dict[str, Pos] = field(default_factory=dict)  # output names so far
    entries: list[tuple[str, E.Expr | SelectItem]] = field(default_factory=list)
    invented: list[str] = field(default_factory=list)  # aggregates named for expressions
    project: bool = False  # whether the SELECT needs a [select]


#: ``System.Timestamp()`` over a window while the SELECT is read: the window end, whose
#: name is known once every column is (a user's ``window_end`` keeps its name, and the
#: window's own end is then ``sparktide_window_end``, semantics §10.3).
_WINDOW_END = "__system-timestamp__"
_WINDOW_END_TEXT = E.to_text(E.Ref(_WINDOW_END))


class Aggregates:
    """Reads the columns of a statement's windowed SELECT."""

    def __init__(self, context: Context, fields: Fields) -> None:
        self.refuse = context.refuse
        self.notes = context.notes
        self.fields = fields

    def columns(self, select: Select, group_by: list[str], source: FromSource) -> WindowColumns:
        """The window's aggregates, its ``[select]`` (computed columns and renamed grouped
        columns) and its ``HAVING``."""
        reading = _Reading({g.casefold(): g for g in group_by})
        for item in select.items:
            self.item(item, reading, source)
        leaf = partial(self.leaf, reading=reading, group_by=group_by, source=source)
        table: dict[str, str] = {}
        aliases: dict[str, E.Expr] = {}
        for name, entry in reading.entries:
            if isinstance(entry, SelectItem):
                entry = convert(entry.expr, leaf, self.refuse, "SELECT")
            table[name] = E.to_text(entry)
            aliases[name.casefold()] = entry
        having = None
        if select.having is not None:

            def having_leaf(node: Column | Call) -> E.Expr:
                # a SELECT column's name (HAVING Count > 1), as Stream Analytics reads it
                # when no grouping column has that name: the column's own expression
                if isinstance(node, Column) and len(node.parts) == 1:
                    found = aliases.get(node.parts[0].casefold())
                    if found is not None and node.parts[0].casefold() not in reading.grouped:
                        return found
                return leaf(node)

            having = E.to_text(convert(select.having.expr, having_leaf, self.refuse, "HAVING"))
        own = own_names(OWN_WINDOW_FIELDS, [*group_by, *reading.aggregates])["window_end"]
        if own != "window_end" and _WINDOW_END_TEXT in table.values():
            reading.project = True  # (the records' window_end is the user's column)
        table = {k: v.replace(_WINDOW_END_TEXT, own) for k, v in table.items()}
        if having is not None:
            having = having.replace(_WINDOW_END_TEXT, own)
        return WindowColumns(reading.aggregates, self.finish(reading, table, group_by), having)

    def item(self, item: SelectItem, reading: _Reading, source: FromSource) -> None:
        """Read one item of the SELECT: a grouped column, an aggregate, the window end or an
        expression (kept in ``reading.entries`` until every named aggregate is known)."""
        expr = item.expr
        if isinstance(expr, Star):
            raise self.refuse(
                item.pos, "SELECT * with GROUP BY: name the grouped columns and aggregates"
            )
        if is_timestamp(expr):
            self.notes.append(
                f"System.Timestamp(){f' AS {item.alias}' if item.alias else ''} is the "
                "window end: the window records carry it as window_end"
            )
            if item.alias is not None:
                name = self.fields.output_name(item, reading.taken)
                reading.entries.append((name, E.Ref(_WINDOW_END)))
            return
        name = self.fields.output_name(item, reading.taken)
        if isinstance(expr, Column):
            column = self.grouped(expr, reading, source)
            if item.alias is not None and item.alias != reading.grouped[column.casefold()]:
                reading.project = True  # a renamed grouped column: [select] names it
            reading.selected.add(column.casefold())
            reading.entries.append((name, E.Ref(reading.grouped[column.casefold()])))
            return
        if isinstance(expr, Call) and not is_scalar(expr):
            reading.aggregates[name] = self.aggregate(expr, source)
            reading.entries.append((name, E.Ref(name)))
            return
        reading.entries.append((name, item))
        reading.project = True

    def leaf(
        self, node: Column | Call, *, reading: _Reading, group_by: list[str], source: FromSource
    ) -> E.Expr:
        """A column or call in an expression over the window: the window end, a grouped
        column, or an aggregate (named by the SELECT, else invented)."""
        if is_timestamp(node):
            return E.Ref(_WINDOW_END)
        if isinstance(node, Column):
            return E.Ref(reading.grouped[self.grouped(node, reading, source).casefold()])
        spec = self.aggregate(node, source)
        for existing, text in reading.aggregates.items():
            if text == spec:
                return E.Ref(existing)
        base = "_" + spec.replace("(*)", "").replace("(", "_").replace(")", "")
        if not is_column_name(base):  # an aggregate of an expression: sum(CASE ... END)
            base = "_" + spec.split("(", 1)[0]
        name, n = base, 1
        used = {k.casefold() for k in (*reading.aggregates, *group_by, *reading.taken)}
        while name.casefold() in used:
            n += 1
            name = f"{base}_{n}"
        reading.aggregates[name] = spec
        reading.invented.append(name)
        return E.Ref(name)

    def grouped(self, node: Column, reading: _Reading, source: FromSource) -> str:
        """The column ``node`` reads, which must be a grouping column."""
        column = self.fields.column(node, source)
        if column.casefold() not in reading.grouped:
            raise self.refuse(
                node.pos,
                f"column {node.name} is neither in GROUP BY nor in an aggregate",
            )
        return column

    def finish(
        self, reading: _Reading, table: dict[str, str], group_by: list[str]
    ) -> dict[str, str] | None:
        """The ``[select]`` table when the SELECT needs one (else ``None``), with the notes
        on invented aggregates and on grouping columns the records carry."""
        invented = reading.invented
        if invented:
            reading.project = True
            self.notes.append(
                f"aggregate{'s' if len(invented) > 1 else ''} {', '.join(invented)} "
                f"{'are' if len(invented) > 1 else 'is'} computed for the expressions that use "
                f"{'them' if len(invented) > 1 else 'it'}"
            )
        if reading.project:
            self.notes.append(
                "[select] lists the SELECT's columns: the window records carry window_start, "
                "window_end and them"
            )
            return table
        missing = [g for g in group_by if g.casefold() not in reading.selected]
        if missing:
            self.notes.append(
                "the window records also carry the grouping column"
                f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} (not in SELECT)"
            )
        return None

    def aggregate(self, call: Call, source: FromSource) -> str:
        """The sparktide aggregate of ``call``: ``count(*)``, ``count_distinct(x)``,
        ``sum(x)``, ``avg(x) over (distinct x, System.Timestamp())`` ..."""
        text = self.plain_aggregate(call, source)
        if call.each is None:
            return text
        columns = [self.fields.column(c, source) for c in call.each]
        return f"{text} over (distinct {', '.join([*columns, 'System.Timestamp()'])})"

    def plain_aggregate(self, call: Call, source: FromSource) -> str:
        """The aggregate of ``call`` without its ``over (distinct ...)``."""
        function = call.function
        if function not in AGGREGATES:
            if function in OTHER_AGGREGATES:
                raise self.refuse(
                    call.pos,
                    f"the aggregate {call.text[:-2].upper()} is not supported yet; use COUNT, "
                    "COUNTIF, SUM, AVG, MIN, MAX, COLLECT, TOPONE, COLLECTTOP, PERCENTILE_CONT, "
                    "PERCENTILE_DISC, STDEV, STDEVP, VAR or VARP",
                )
            raise self.refuse(
                call.pos,
                f"{call.text[:-2]}(...) is not supported yet: functions are not translated "
                "(only the scalar functions of docs/semantics.md §11.11, aggregates and "
                "System.Timestamp())",
            )
        name = AGGREGATES[function]
        if function in ORDERED_AGGREGATES:
            return ordered_aggregate(call, self._value(source), self._order(source), self.refuse)
        if call.over is not None:
            raise self.refuse(
                call.over.pos,
                f"{call.text[:-2].upper()}(...) OVER (...): the analytic form of an aggregate "
                "is not supported with GROUP BY yet (analytic columns are computed over "
                "events, without a window); use it without GROUP BY, or aggregate over a "
                "window in GROUP BY",
            )
        if function == "collect" and not call.args and not call.star:
            return "collect()"  # the whole records
        if call.star:
            if name != "count":
                raise self.refuse(call.pos, f"{call.text[:-2]}(*): only COUNT takes *")
            return "count(*)"
        if len(call.args) != 1:
            raise self.refuse(call.pos, f"{call.text[:-2]}(...) takes one column")
        arg = call.args[0]
        if not self.fields.plain(arg, source):  # SUM(CAST(Weight AS bigint)), AVG(a.b)
            inner = convert(
                arg,
                lambda n: self.fields.field_leaf(n, source, "an aggregate"),
                self.refuse,
                "an aggregate",
            )
            if call.distinct:
                if name != "count":
                    raise self.refuse(
                        call.pos, f"{call.text[:-2].upper()}(DISTINCT ...) is not supported yet"
                    )
                return f"count_distinct({E.to_text(inner)})"
            return f"{name}({E.to_text(inner)})"
        column = self.fields.column(arg, source)
        if call.distinct:
            if name != "count":
                raise self.refuse(
                    call.pos, f"{call.text[:-2].upper()}(DISTINCT ...) is not supported yet"
                )
            return f"count_distinct({column})"
        return f"{name}({column})"

    def _value(self, source: FromSource) -> Callable[[Expr], str]:
        """Reads an aggregate's argument: a column's name, or an expression's text."""

        def value(arg: Expr) -> str:
            if self.fields.plain(arg, source):
                assert isinstance(arg, Column)
                return self.fields.column(arg, source)
            inner = convert(
                arg,
                lambda n: self.fields.field_leaf(n, source, "an aggregate"),
                self.refuse,
                "an aggregate",
            )
            return E.to_text(inner)

        return value

    def _order(self, source: FromSource) -> Callable[[Column], str]:
        """Reads an ORDER BY column: ``x``, or a value inside a record as its path
        (``Reading.Speed``)."""
        return lambda column: self.fields.path(column, source)
