"""Further JOINs of reference data: ``FROM s JOIN devices d ON s.DeviceId = d.DeviceId
JOIN sites x ON d.SiteId = x.SiteId`` (semantics §11.8, *Further tables*).

The job meets one table, ``[join] right`` (the first JOIN's); each later JOIN of
reference data is a ``[[join.then]]``: one whose ``ON`` reads the tables meets them when
the run reads them, one whose ``ON`` reads the stream (``JOIN units u ON s.Unit =
u.Unit``) meets each event; either way the row of ``sites`` becomes the member ``sites``
of the row of ``devices``. :func:`chained_tables` takes those JOINs off the
SELECT and rewrites its columns of a later table to read that member (``x.Region`` is
``d.sites.Region``), so the rest of the translation sees one JOIN with reference data.

SQL's chain of joins and the job's agree: a later JOIN's ``ON`` compares a table's
columns, so an event whose row met nothing under an inner later JOIN is dropped as SQL
drops it; an inner later JOIN therefore makes the JOINs it reads inner too (``FROM s
LEFT JOIN d ... JOIN x ON d.k = x.k`` keeps only events with a ``d`` row that meets
``x``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sparktide import expr as E
from sparktide.query.ast import Call, Clause, Column, Expr, FromSource, Join, Select, Star
from sparktide.query.exprs import convert
from sparktide.query.refusal import Refuse, check_column
from sparktide.query.translate.context import (
    describe,
    inside,
    is_timestamp,
    source_names,
    unsupported_call,
)
from sparktide.query.translate.inline import columns_in, map_columns
from sparktide.query.translate.joinon import JoinCondition

__all__ = ["chained_tables", "check_later_table", "then_entry"]


def chained_tables(
    select: Select, refuse: Refuse, is_reference: Any
) -> tuple[Select, tuple[tuple[FromSource, dict[str, Any]], ...]]:
    """``select`` with one JOIN (inner when a later inner JOIN reads its table), and its
    later JOINs of reference data: each table and its ``[[join.then]]`` entry (see the
    module). ``is_reference(name)`` says whether an input is reference data. A later
    JOIN that is not of reference data, or whose ``ON`` reads both the stream and an
    earlier table, is refused."""
    if len(select.joins) < 2:
        return select, ()
    first = select.joins[0]
    if not is_reference(first.source.name) or is_reference(select.source.name):
        raise refuse(
            select.joins[1].pos,
            "a second JOIN is not supported yet but after a JOIN of a stream with reference "
            "data (FROM stream JOIN table ON ... JOIN table ON ...): a job joins two inputs",
        )
    held = [first.source]
    then: list[dict[str, Any]] = []
    kinds = {first.source.name: first.kind}
    lefts: dict[str, str] = {}
    for join in select.joins[1:]:
        table = join.source
        check_later_table(join, held, select.source, refuse, is_reference)
        left, entry = _table_join(join, held, select.source, refuse)
        then.append(entry)
        held.append(table)
        kinds[table.name] = join.kind
        lefts[table.name] = left.name
    inner = set()
    for name, kind in kinds.items():  # (an inner JOIN makes those it reads inner)
        if kind == "INNER":
            while name in lefts:
                name = lefts[name]
                inner.add(name)
    for entry in then:
        if entry["right"] in inner:
            entry.pop("type", None)
    if first.source.name in inner:
        first = replace(first, kind="INNER")
    rewritten = _read_members(replace(select, joins=(first,)), first.source, held[1:], refuse)
    return rewritten, tuple(zip(held[1:], then, strict=True))


def then_entry(left: str, join: Join, on: Any) -> dict[str, Any]:
    """The ``[[join.then]]`` entry of the later JOIN ``join`` of a table: ``left``, the
    table, the ``on`` columns (a pair as a list) and, for a LEFT OUTER JOIN, its type."""
    entry: dict[str, Any] = {
        "left": left,
        "right": join.source.name,
        "on": [e if isinstance(e, str) else list(e) for e in on],
    }
    if join.kind != "INNER":
        entry["type"] = "left"
    return entry


def check_later_table(
    join: Join, held: list[FromSource], stream: FromSource, refuse: Refuse, is_reference: Any
) -> None:
    """Refuse a later JOIN that is not a JOIN of another table of reference data (or not
    inner or left, or with a time or partitions), or whose alias another input has;
    ``stream`` and ``held``: the inputs before it."""
    table = join.source
    if not is_reference(table.name):
        raise refuse(
            join.pos,
            f"a JOIN of the stream {table.name} after a JOIN with reference data is not "
            "supported yet: a later JOIN meets more reference data",
        )
    if join.kind not in ("INNER", "LEFT", "LEFT OUTER"):
        raise refuse(
            join.pos,
            f"{join.kind} JOIN with reference data is not supported: Stream Analytics joins "
            "reference data by JOIN (inner) or LEFT OUTER JOIN",
        )
    if table.timestamp_by is not None or table.partition_by is not None:
        raise refuse(
            table.pos,
            f"TIMESTAMP BY or PARTITION BY on the reference data {table.name}: reference data "
            "has neither time nor partitions",
        )
    taken = set().union(*(source_names(s) for s in (stream, *held)))
    if source_names(table) & taken:
        raise refuse(
            table.pos,
            f"{table.alias or table.name} names two inputs of the JOINs; give them different "
            "aliases",
        )


def _table_join(
    join: Join, held: list[FromSource], stream: FromSource, refuse: Refuse
) -> tuple[FromSource, dict[str, Any]]:
    """The table a later JOIN's ``ON`` reads besides its own (its left: a table before
    it, or the stream) and its ``[[join.then]]`` entry."""
    table = join.source
    sources = (*held, table, stream)
    known = {name: source for source in sources for name in source_names(source)}
    left: FromSource | None = None
    for column in columns_in(join.condition):
        if len(column.parts) < 2 or column.parts[0].casefold() not in known:
            raise refuse(
                column.pos,
                f"{column.name} in the ON of a JOIN with the reference data {table.name}: "
                f"qualify it (alias.column of {', '.join(s.alias or s.name for s in sources)})",
            )
        source = known[column.parts[0].casefold()]
        if source is table:
            continue
        if left is not None and source is not left and stream in (source, left):
            raise refuse(
                column.pos,
                f"the ON of the JOIN with {table.name} reads the stream and the table "
                f"{(source if left is stream else left).name}: a later JOIN compares "
                "the table's columns with one earlier table's, or with the stream's",
            )
        left = left or source
    if left is None:
        raise refuse(
            join.pos,
            f"the ON of the JOIN with {table.name} reads no column of the stream or of the "
            f"tables before it ({', '.join(s.alias or s.name for s in held)})",
        )
    on, _, others = JoinCondition(refuse).join_condition(join, left, table, reference=True)
    if left is stream:
        for term in others:
            reads = {known[c.parts[0].casefold()] for c in columns_in(term)}
            if reads - {table}:
                raise refuse(
                    term.pos,
                    f"{describe(term)} in the ON of the JOIN with {table.name}: a table met "
                    "by the event's fields takes conditions on its own columns only (for "
                    "now); compare the stream's in WHERE",
                )
    entry = then_entry(left.name, join, on)
    if others:

        def leaf(node: Column | Call) -> E.Expr:
            if isinstance(node, Call) or is_timestamp(node):
                if is_timestamp(node):
                    raise refuse(
                        node.pos,
                        f"System.Timestamp() in the ON of the JOIN with {table.name}: the "
                        "tables meet before any event, without a time",
                    )
                assert isinstance(node, Call)
                raise unsupported_call(node, refuse, "in ON is not supported")
            return _table_field(node, known[node.parts[0].casefold()], refuse)

        terms = [convert(term, leaf, refuse, "ON") for term in others]
        entry["condition"] = E.to_text(E.conjunction(terms))
    return left, entry


def _table_field(node: Column, source: FromSource, refuse: Refuse) -> E.Expr:
    """``x.k`` (``<table>.k``) or ``x.k.y`` (a value inside it) of a table's row."""
    field = E.Ref(check_column(node.parts[1], node.pos, refuse), source.name)
    return inside(field, node.parts[2:])


def _read_members(
    select: Select, first: FromSource, later: list[FromSource], refuse: Refuse
) -> Select:
    """``select`` with each column of a later table (``x.Region``) reading the member of
    the first table's row that holds it (``d.sites.Region``)."""
    names = {name: source for source in later for name in source_names(source)}
    for item in select.items:
        star = item.expr
        if isinstance(star, Star) and star.qualifier and star.qualifier.casefold() in names:
            raise refuse(
                item.pos,
                f"SELECT {describe(star)} of a later JOIN's table is not supported yet: name "
                f"its columns ({star.qualifier}.k AS k, ...)",
            )

    def member(column: Column) -> Expr:
        source = names.get(column.parts[0].casefold())
        if source is None:
            return column
        return Column((first.alias or first.name, source.name, *column.parts[1:]), column.pos)

    def read(expr: Expr) -> Expr:
        return map_columns(expr, member)

    def clause(found: Clause | None) -> Clause | None:
        return None if found is None else Clause(read(found.expr), found.pos)

    items = tuple(
        item if isinstance(item.expr, Star) else replace(item, expr=read(item.expr))
        for item in select.items
    )
    group_by = tuple(
        item if item.window is not None else replace(item, expr=read(item.expr))
        for item in select.group_by
    )
    return replace(
        select,
        items=items,
        where=clause(select.where),
        having=clause(select.having),
        group_by=group_by,
    )
