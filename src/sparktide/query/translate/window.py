"""``GROUP BY`` one window and plain columns → the job's ``[window]``.

Tumbling, hopping, sliding, session and snapshot windows keep Stream Analytics' ``(start,
end]`` (``boundary = "end"``); grids must divide a day (Stream Analytics aligns them to
midnight, sparktide to the Unix epoch); sessions are per group, so their ``OVER
(PARTITION BY ...)`` names exactly the grouping columns. The window's columns come from
:mod:`sparktide.query.translate.aggregates`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sparktide import expr as E
from sparktide.errors import QueryError
from sparktide.job.window import group_by_names
from sparktide.query.ast import (
    Call,
    Column,
    Expr,
    FromSource,
    Select,
    SelectItem,
    Star,
    WindowSpec,
)
from sparktide.query.exprs import convert
from sparktide.query.translate.aggregates import Aggregates, WindowColumns
from sparktide.query.translate.analytic import is_analytic
from sparktide.query.translate.context import Context, is_aggregate, is_scalar, is_timestamp
from sparktide.query.translate.fields import Fields
from sparktide.time import DAY, format_duration

__all__ = ["Windows"]


class Windows:
    """Translates the window of a statement's GROUP BY."""

    def __init__(self, context: Context, fields: Fields) -> None:
        self.refuse = context.refuse
        self.notes = context.notes
        self.bindings = context.bindings
        self.fields = fields
        self.aggregates = Aggregates(context, fields)

    def window(self, select: Select, source: FromSource) -> tuple[dict[str, Any], WindowColumns]:
        """The ``[window]`` table of ``select`` (without ``having``) and its columns."""
        spec = self.spec(select)
        group_by = self.group_by(select, source)
        names = group_by_names(group_by)
        window = self.window_shape(spec, group_by, source)
        window["group_by"] = group_by
        computed = {k: v for g in group_by if isinstance(g, dict) for k, v in g.items()}
        select = self.grouped_items(select, computed, source)
        columns = self.aggregates.columns(select, names, source)
        window["aggregates"] = columns.aggregates
        for key, value in self.bindings.window.items():
            window.setdefault(key, value)
        return window, columns

    def spec(self, select: Select) -> WindowSpec:
        """The one window of ``GROUP BY``."""
        windows = [g for g in select.group_by if g.window is not None]
        if not windows:
            raise self.refuse(
                select.group_pos or select.pos,
                "GROUP BY without a window: Stream Analytics groups streams by a window "
                "(TumblingWindow, HoppingWindow, SlidingWindow, SessionWindow, SnapshotWindow)",
            )
        if len(windows) > 1:
            raise self.refuse(windows[1].pos, "GROUP BY has a second window: a job has one")
        spec = windows[0].window
        assert spec is not None
        return spec

    def group_by(self, select: Select, source: FromSource) -> list[str | dict[str, str]]:
        """The grouping columns of ``GROUP BY`` besides its window: a column's name, or
        for an expression (semantics §6.13) a table of its name and its text."""
        group_by: list[str | dict[str, str]] = []
        names: list[str] = []
        for item in select.group_by:
            if item.window is not None:
                continue
            if isinstance(item.expr, Call) and item.expr.function == "windows":
                raise self.refuse(item.pos, "Windows(...) (several windows) is not supported yet")
            if item.alias is None and self.fields.plain(item.expr, source):
                name = self.fields.column(item.expr, source)  # type: ignore[arg-type]
                entry: str | dict[str, str] = name
            else:  # (an expression, or a value inside a record: r.a.b)
                text = E.to_text(self.key_expression(item.expr, source))
                name = item.alias or self.selected_name(select, text, source)
                name = name or self.nested_name(item.expr, names, select)
                name = name or self.invented_name(names, select)
                entry = {name: text}
            if name.casefold() in (g.casefold() for g in names):
                raise self.refuse(item.pos, f"GROUP BY names {name} twice")
            names.append(name)
            group_by.append(entry)
        return group_by

    def key_expression(self, expr: Expr, source: FromSource) -> E.Expr:
        """A GROUP BY expression over the record's fields (no aggregate, analytic
        function or ``System.Timestamp()``: those are refused, naming them)."""

        def leaf(node: Column | Call) -> E.Expr:
            if is_timestamp(node):
                raise self.refuse(
                    node.pos,
                    "System.Timestamp() inside a GROUP BY expression is not supported: "
                    "GROUP BY System.Timestamp() alone is the snapshot window",
                )
            if isinstance(node, Call) and is_analytic(node):
                raise self.refuse(
                    node.pos,
                    f"{node.text[:-2].upper()}(...) in GROUP BY is not supported: the "
                    "analytic functions are not computed with a window yet",
                )
            if isinstance(node, Call) and is_aggregate(node):
                raise self.refuse(node.pos, f"GROUP BY {node.text[:-2].upper()}(...): an aggregate")
            return self.fields.field_leaf(node, source, "GROUP BY")

        return convert(expr, leaf, self.refuse, "GROUP BY")

    def key_text(self, expr: Expr, source: FromSource) -> str:
        """A column's name, or the text of a value inside a record (``r.a``) or of an
        expression, as :meth:`group_by` writes it."""
        if self.fields.plain(expr, source):
            return self.fields.column(expr, source)  # type: ignore[arg-type]
        return E.to_text(self.key_expression(expr, source))

    def selected_name(self, select: Select, text: str, source: FromSource) -> str | None:
        """The name of the SELECT item that computes the GROUP BY expression ``text``
        (``SELECT DATEPART(hour, t) AS h ... GROUP BY DATEPART(hour, t)``), if any."""
        for item in select.items:
            if item.alias is not None and not self.fields.plain(item.expr, source):
                if self.item_key(item, source) == text:
                    return item.alias
        return None

    @staticmethod
    def nested_name(expr: Expr, names: list[str], select: Select) -> str | None:
        """The name Stream Analytics gives a value inside a record, ``r.a.b``: its last
        part (``b``), unless a grouping or SELECT column has it."""
        if not isinstance(expr, Column):
            return None
        name = expr.parts[-1]
        taken = {n.casefold() for n in names}
        taken |= {i.alias.casefold() for i in select.items if i.alias is not None}
        return None if name.casefold() in taken else name

    def grouped_items(self, select: Select, computed: dict[str, str], source: FromSource) -> Select:
        """``select`` with each item that computes a GROUP BY expression reading it as
        its grouping column instead."""
        if not computed:
            return select
        items = []
        for item in select.items:
            alias = item.alias
            if (
                alias is not None
                and alias in computed
                and self.item_key(item, source) == computed[alias]
            ):
                item = replace(item, expr=Column((alias,), item.pos))
            elif alias is None and isinstance(item.expr, Column):  # (r.a.b, unnamed)
                key = self.item_key(item, source)
                name = next((n for n, text in computed.items() if text == key), None)
                if name is not None and not self.fields.plain(item.expr, source):
                    item = replace(item, expr=Column((name,), item.pos))
            items.append(item)
        return replace(select, items=tuple(items))

    def item_key(self, item: SelectItem, source: FromSource) -> str | None:
        """The text of the SELECT ``item``'s expression as a GROUP BY expression, or
        ``None`` when it cannot be one (``*``, an aggregate, an expression over them)."""
        expr = item.expr
        if isinstance(expr, Star) or (isinstance(expr, Call) and not is_scalar(expr)):
            return None
        try:
            return E.to_text(self.key_expression(expr, source))
        except QueryError:
            return None

    @staticmethod
    def invented_name(names: list[str], select: Select) -> str:
        """A name for a GROUP BY expression the SELECT does not name: ``_group1`` ...,
        clashing with no grouping column nor SELECT column."""
        taken = {n.casefold() for n in names}
        taken |= {i.alias.casefold() for i in select.items if i.alias is not None}
        n = 1
        while f"_group{n}" in taken:
            n += 1
        return f"_group{n}"

    def window_shape(
        self, spec: WindowSpec, group_by: list[str | dict[str, str]], source: FromSource
    ) -> dict[str, Any]:
        """The window's type, boundary (Stream Analytics' ``(start, end]``) and durations
        (``group_by``: the grouping columns, as :meth:`group_by` gives them)."""
        window: dict[str, Any] = {"type": spec.kind, "boundary": "end"}
        if spec.kind in ("tumbling", "hopping"):
            self.grid(spec, window)
        elif spec.kind == "sliding":
            assert spec.size is not None
            window["size"] = format_duration(spec.size)
        elif spec.kind == "session":
            self.session(spec, window, group_by, source)
        return window

    def grid(self, spec: WindowSpec, window: dict[str, Any]) -> None:
        """A tumbling or hopping window's size, hop and offset, on a grid that divides a day."""
        assert spec.size is not None
        period = spec.hop if spec.kind == "hopping" else spec.size
        assert period is not None
        if DAY % period:
            raise self.refuse(
                spec.pos,
                f"a window period of {format_duration(period)} does not divide a day: "
                "Stream Analytics aligns windows to midnight and sparktide to the Unix "
                "epoch, which agree only for periods that divide 24 hours",
            )
        if spec.size % period:
            raise self.refuse(
                spec.pos,
                f"a hopping window of {format_duration(spec.size)} is not a whole number "
                f"of hops of {format_duration(period)}: where Stream Analytics puts its "
                "ends is not documented for that case",
            )
        window["size"] = format_duration(spec.size)
        if spec.kind == "hopping":
            window["hop"] = format_duration(period)
        if spec.offset:
            offset = spec.offset % period
            window["offset"] = format_duration(offset)
            if offset != spec.offset:
                self.notes.append(
                    f"Offset {format_duration(abs(spec.offset))}"
                    f"{' before' if spec.offset < 0 else ''} the grid is the same grid as "
                    f"offset = {format_duration(offset)}"
                )

    def session(
        self,
        spec: WindowSpec,
        window: dict[str, Any],
        group_by: list[str | dict[str, str]],
        source: FromSource,
    ) -> None:
        """A session window's gap and maximum duration, per group: its ``OVER (PARTITION
        BY ...)`` names the GROUP BY's columns or values (``r.a`` as in GROUP BY)."""
        assert spec.timeout is not None and spec.max_duration is not None
        if DAY % spec.max_duration:
            raise self.refuse(
                spec.pos,
                f"a session maximum duration of {format_duration(spec.max_duration)} does "
                "not divide a day: Stream Analytics aligns its cuts to midnight and "
                "sparktide to the Unix epoch, which agree only for durations that divide "
                "24 hours",
            )
        window["gap"] = format_duration(spec.timeout)
        window["max_duration"] = format_duration(spec.max_duration)
        keys = {self.key_text(c, source).casefold() for c in spec.partition_by}
        # (a grouping column is named by its name, or by its expression's text)
        grouped = [
            {g.casefold()} if isinstance(g, str) else {n.casefold() for n in (*g, *g.values())}
            for g in group_by
        ]
        covered = all(names & keys for names in grouped)
        if len(keys) != len(grouped) or not covered or not keys <= set().union(*grouped):
            group_by = group_by_names(group_by)  # type: ignore[assignment]
            if not keys:
                raise self.refuse(
                    spec.pos,
                    "SessionWindow without OVER (PARTITION BY ...) and GROUP BY "
                    f"{', '.join(group_by)}: Stream Analytics' sessions then span all "
                    "groups, sparktide's are per group; add OVER (PARTITION BY "
                    f"{', '.join(group_by)})",
                )
            raise self.refuse(
                spec.partition_by[0].pos,
                "SessionWindow OVER (PARTITION BY ...) must name exactly the GROUP BY "
                "columns: sparktide's sessions are per group",
            )
