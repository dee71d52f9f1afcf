"""Input fields: the columns a statement reads, its ``WHERE`` conditions and the column
list of a ``SELECT`` without ``GROUP BY``.

A column is ``x`` or ``alias.x`` / ``input.x`` of the FROM source; in ``WHERE`` and a
``SELECT`` without ``GROUP BY``, ``x.a.b`` reads into it (``GetRecordPropertyValue``),
elsewhere nested fields are refused; a ``WHERE`` condition becomes the job's
``[filter] where``; ``SELECT a, b, expr AS c`` becomes ``[select]``. Every output
column needs a name sparktide does not write itself (:meth:`Fields.output_name`).
"""

from __future__ import annotations

from collections.abc import Callable

from sparktide import expr as E
from sparktide.job import RESERVED_EVENT_COLUMNS, RESERVED_WINDOW_COLUMNS
from sparktide.job.expressions import STAR
from sparktide.query.ast import Call, Column, Expr, FromSource, Pos, Select, SelectItem, Star
from sparktide.query.bind import Bindings
from sparktide.query.exprs import Leaf, convert
from sparktide.query.refusal import Refuse, check_column
from sparktide.query.translate.analytic import AnalyticColumns, is_analytic
from sparktide.query.translate.context import (
    describe,
    inside,
    is_scalar,
    is_timestamp,
    qualify_over_join,
    source_names,
    unsupported_call,
)
from sparktide.query.translate.metadata import metadata_field
from sparktide.query.translate.plans import JoinPlan
from sparktide.query.translate.unionwindows import INPUT_CALL

__all__ = ["Fields"]


class Fields:
    """Reads the fields of a statement's inputs, refusing with ``refuse``."""

    def __init__(self, refuse: Refuse, bindings: Bindings | None = None) -> None:
        self.refuse = refuse
        self.bindings = bindings or Bindings()
        self.analytics = AnalyticColumns(refuse)

    def column(self, expr: Column, source: FromSource, what: str = "column") -> str:
        """A plain column of ``source``: ``x``, or ``alias.x`` / ``input.x``."""
        parts = expr.parts
        if len(parts) == 2 and parts[0].casefold() in source_names(source):
            parts = parts[1:]
        if len(parts) != 1:
            raise self.refuse(
                expr.pos,
                f"{expr.name}: nested fields (record.field) are not supported yet; "
                "flatten the input",
            )
        return check_column(parts[0], expr.pos, self.refuse, what)

    def path(self, expr: Column, source: FromSource) -> str:
        """A column of ``source`` (:meth:`column`), or a value inside one as its path
        with dots (``Reading.Speed``: an ordered aggregate's order key, semantics §6.12)."""
        parts = expr.parts
        if len(parts) > 1 and parts[0].casefold() in source_names(source):
            parts = parts[1:]
        if len(parts) == 1:
            return self.column(expr, source)
        return ".".join(check_column(part, expr.pos, self.refuse, "column") for part in parts)

    def plain(self, expr: Expr, source: FromSource) -> bool:
        """Whether ``expr`` is a plain column of ``source`` (``x``, ``alias.x``), not a
        value inside one (``r.a``, ``a.ArrayValue`` of a CROSS APPLY) nor an expression."""
        if not isinstance(expr, Column):
            return False
        parts = expr.parts
        return len(parts) == 1 or (len(parts) == 2 and parts[0].casefold() in source_names(source))

    def nested(self, expr: Column, source: FromSource) -> E.Expr:
        """A field, or with dots a value inside it (``r.a.b``, Stream Analytics' dot
        notation): ``GetRecordPropertyValue(r, 'a.b')`` (semantics §11.14)."""
        parts = expr.parts
        if len(parts) > 1 and parts[0].casefold() in source_names(source):
            parts = parts[1:]
        if len(parts) == 1:
            return E.Ref(self.column(expr, source))
        field = check_column(parts[0], expr.pos, self.refuse, "column")
        return inside(E.Ref(field), parts[1:])

    def field_leaf(self, node: Column | Call, source: FromSource, clause: str) -> E.Expr:
        """An input field in a WHERE condition or a SELECT without GROUP BY."""
        if is_timestamp(node):  # the event's system timestamp (semantics §11.17)
            return E.SYSTEM_TIMESTAMP
        if isinstance(node, Column):
            return self.nested(node, source)
        if node.function == INPUT_CALL and not node.args:  # (a union's input, §11.22)
            return E.EVENT_INPUT
        if node.function == "getmetadatapropertyvalue":  # (semantics §11.15)
            return metadata_field(node, source, self.bindings, self.refuse)
        if is_analytic(node):  # LAG, LAST, ISFIRST, SUM(x) OVER (...) ... (semantics §11.19)
            return self.analytics.column(node, lambda n: self.field_leaf(n, source, clause), clause)
        if node.over is not None and node.over.limit is not None:
            raise self.refuse(
                node.pos,
                f"{node.text[:-2].upper()}(...) OVER (... LIMIT DURATION ...) is not supported: "
                "the aggregates with an analytic form are SUM, COUNT, AVG, MIN and MAX",
            )
        raise unsupported_call(
            node,
            self.refuse,
            "without GROUP BY: aggregates need a window (GROUP BY TumblingWindow(...) ...); "
            "conditions on them go in HAVING",
        )

    def condition(self, expr: Expr, source: FromSource) -> E.Expr:
        """A WHERE condition over the fields of ``source``."""
        return convert(expr, lambda n: self.field_leaf(n, source, "WHERE"), self.refuse, "WHERE")

    def stream_condition(self, expr: Expr, join: JoinPlan) -> E.Expr:
        """The WHERE of a JOIN with reference data, when it reads the stream's fields only
        (``s.Temperature > 20``): the job's ``[filter]``, which stops the stream's events
        before they meet the table. As every match of an event carries the event's own
        fields, it keeps exactly the matches (and, under LEFT OUTER JOIN, the unmatched
        events) that the WHERE over the JOIN keeps."""
        stream, table = join.left, join.right

        def leaf(node: Column | Call) -> E.Expr:
            if isinstance(node, Call):
                return self.field_leaf(node, stream, "WHERE")  # (refuses it)
            if len(node.parts) == 1:
                raise qualify_over_join(self.refuse, node, stream)
            qualifier = node.parts[0].casefold()
            if qualifier in source_names(table):
                raise self.refuse(
                    node.pos,
                    f"WHERE on {node.name}, a field of the reference data {table.name}, is not "
                    f"supported yet: the job's [filter] reads the events of {stream.name} "
                    "before they meet the table (a condition on the stream's fields is "
                    "translated)",
                )
            if qualifier not in source_names(stream):
                raise self.refuse(node.pos, f"{node.parts[0]} names neither input of the JOIN")
            return self.nested(node, stream)

        return convert(expr, leaf, self.refuse, "WHERE")

    def projection(self, select: Select, source: FromSource) -> dict[str, str]:
        """``[select]`` of ``SELECT a, b, expr AS c`` without GROUP BY."""

        def leaf(node: Column | Call) -> E.Expr:
            return self.field_leaf(node, source, "SELECT")

        def functions_first(item: SelectItem) -> None:
            if isinstance(item.expr, Call) and not is_scalar(item.expr):
                leaf(item.expr)  # refuses it

        return self.event_columns(select, leaf, functions_first, source)

    def event_columns(
        self,
        select: Select,
        leaf: Leaf,
        check: Callable[[SelectItem], None] | None = None,
        source: FromSource | None = None,
        sides: tuple[FromSource, FromSource] | None = None,
    ) -> dict[str, str]:
        """``[select]`` of a column list whose records are events (the input's, or a JOIN's
        matches): each item named (``check`` first), its expression read by ``leaf``;
        with ``source`` (the input's events), ``*`` among them is ``"*" = "*"``, the
        record's fields (semantics §11.16); with the JOIN's ``sides``, ``a.*`` is ``"*" =
        "<a's input>"``, that input's fields."""
        out: dict[str, str] = {}
        taken: dict[str, Pos] = {}
        for item in select.items:
            if isinstance(item.expr, Star) and sides is not None:
                self.side_star(item, sides, out)
                continue
            if isinstance(item.expr, Star):
                self.star(item, source, out)
                continue
            if check is not None:
                check(item)
            name = self.output_name(item, taken, RESERVED_EVENT_COLUMNS)
            out[name] = E.to_text(convert(item.expr, leaf, self.refuse, "SELECT"))
        return out

    def star(self, item: SelectItem, source: FromSource | None, out: dict[str, str]) -> None:
        """``*`` (or ``input.*``) among the columns of a SELECT over the input's events."""
        star = item.expr
        assert isinstance(star, Star)
        if source is None:
            raise self.refuse(
                item.pos, "SELECT * with other columns is not supported yet here: name them"
            )
        if star.qualifier is not None and star.qualifier.casefold() not in source_names(source):
            raise self.refuse(star.pos, f"{star.qualifier}.* names no input of this SELECT")
        if STAR in out:
            raise self.refuse(item.pos, "SELECT * twice: the record's fields are written once")
        out[STAR] = STAR

    def side_star(
        self, item: SelectItem, sides: tuple[FromSource, FromSource], out: dict[str, str]
    ) -> None:
        """``a.*`` among the columns of a SELECT over a JOIN's matches: the fields of the
        input ``a`` names (by name or alias), once."""
        star = item.expr
        assert isinstance(star, Star)
        if star.qualifier is None:
            raise self.refuse(
                item.pos,
                "SELECT * with other columns over a JOIN: name the input whose fields it "
                f"writes ({sides[0].alias or sides[0].name}.*)",
            )
        side = next((s for s in sides if star.qualifier.casefold() in source_names(s)), None)
        if side is None:
            raise self.refuse(star.pos, f"{star.qualifier}.* names neither input of the JOIN")
        if STAR in out:
            raise self.refuse(
                item.pos,
                f"{star.qualifier}.*: a SELECT over a JOIN writes one input's fields whole; "
                "name the other's columns",
            )
        out[STAR] = side.name

    def output_name(
        self,
        item: SelectItem,
        taken: dict[str, Pos],
        reserved: tuple[str, ...] = RESERVED_WINDOW_COLUMNS,
    ) -> str:
        """The output column of ``item``: its ``AS`` name, or the column it selects; each
        named once (``taken``), none of the names sparktide writes itself."""
        expr = item.expr
        if item.alias is not None:
            name = check_column(item.alias, item.pos, self.refuse, "output name")
        elif isinstance(expr, Column):
            name = expr.parts[-1]
        else:
            raise self.refuse(
                item.pos,
                f"{describe(expr)} needs a name: add AS name (sparktide does not invent "
                "output column names)",
            )
        if name in reserved:
            raise self.refuse(item.pos, f"{name!r} is a name sparktide writes itself; use another")
        if name.casefold() in taken:
            raise self.refuse(item.pos, f"the output column {name} is named twice")
        taken[name.casefold()] = item.pos
        return name
