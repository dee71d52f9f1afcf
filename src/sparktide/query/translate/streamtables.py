"""JOINs of reference data after a JOIN of two streams: ``FROM Entry e JOIN Exit x ON
... AND DATEDIFF(...) BETWEEN 0 AND 15 JOIN Registration r ON x.Plate = r.Plate``
(semantics §11.26).

Each later JOIN is a ``[[join.then]]`` entry whose ``left`` is the stream its ``ON``
compares with the table, or an earlier table (``JOIN Owners o ON r.OwnerId = o.Id``):
each match meets the table by that event's fields or that table's row, once per row,
as SQL's chain of joins makes one row per combination. :func:`stream_tables` takes
those JOINs off the SELECT, so the rest of the translation sees one JOIN of two streams;
the columns of a table (``r.Owner``) read the row met (``Registration.Owner``), and a
WHERE term that reads one is ``[join] where``, over what the join writes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sparktide import expr as E
from sparktide.query.ast import Column, FromSource, Join, Select
from sparktide.query.exprs import convert
from sparktide.query.refusal import Refuse, check_column
from sparktide.query.translate.context import describe, inside, source_names, unsupported_call
from sparktide.query.translate.inline import columns_in
from sparktide.query.translate.joinon import JoinCondition
from sparktide.query.translate.tablejoins import check_later_table, then_entry

__all__ = ["stream_tables"]

#: A table met by a JOIN of two streams and its ``[[join.then]]`` entry.
Tables = tuple[tuple[FromSource, dict[str, Any]], ...]


def stream_tables(select: Select, refuse: Refuse, is_reference: Any) -> tuple[Select, Tables]:
    """``select`` with its first JOIN only, and its later JOINs of reference data when
    the first joins two streams (``is_reference(name)`` says whether an input is
    reference data): each table and its ``[[join.then]]`` entry. A later JOIN of a
    stream, or whose ``ON`` reads both streams or none, is refused; a select whose
    first JOIN is not of two streams is left as it is."""
    if len(select.joins) < 2:
        return select, ()
    streams = (select.source, select.joins[0].source)
    if any(is_reference(s.name) for s in streams):
        return select, ()
    tables: list[tuple[FromSource, dict[str, Any]]] = []
    for join in select.joins[1:]:
        _check_table(join, streams, [t for t, _ in tables], refuse, is_reference)
        held = tuple(t for t, _ in tables)
        tables.append((join.source, _entry(join, streams, held, refuse)))
    return replace(select, joins=select.joins[:1]), tuple(tables)


def _check_table(
    join: Join,
    streams: tuple[FromSource, FromSource],
    held: list[FromSource],
    refuse: Refuse,
    is_reference: Any,
) -> None:
    """Refuse a later JOIN that is not an inner or left JOIN of another table."""
    table = join.source
    if not is_reference(table.name):
        raise refuse(
            join.pos,
            f"a JOIN of a third stream ({table.name}) is not supported yet: a job joins two "
            "streams, then reference data (reference = true in the job file)",
        )
    check_later_table(join, [streams[1], *held], streams[0], refuse, is_reference)


def _entry(
    join: Join,
    streams: tuple[FromSource, FromSource],
    held: tuple[FromSource, ...],
    refuse: Refuse,
) -> dict[str, Any]:
    """The ``[[join.then]]`` entry of a later JOIN: the stream (or the earlier table,
    of ``held``) its ``ON`` compares with the table, the columns, and the terms over the
    table's own columns."""
    table = join.source
    known = {name: s for s in (*streams, *held, table) for name in source_names(s)}
    side: FromSource | None = None
    for column in columns_in(join.condition):
        source = known.get(column.parts[0].casefold()) if len(column.parts) > 1 else None
        if source is None:
            raise refuse(
                column.pos,
                f"{column.name} in the ON of the JOIN with the reference data {table.name}: "
                "qualify it (alias.column of "
                + ", ".join(s.alias or s.name for s in (*streams, *held, table))
                + ")",
            )
        if source is table:
            continue
        if side is not None and source is not side:
            raise refuse(
                column.pos,
                f"the ON of the JOIN with {table.name} reads two inputs: a table meets "
                "each match by the fields of one of its two events, or by the row of one "
                "table met before it",
            )
        side = source
    if side is None:
        raise refuse(
            join.pos,
            f"the ON of the JOIN with {table.name} reads no column of "
            f"{streams[0].alias or streams[0].name}, {streams[1].alias or streams[1].name} "
            "or a table met before it",
        )
    on, _, others = JoinCondition(refuse).join_condition(join, side, table, reference=True)
    itself = streams[0].name.casefold() == streams[1].name.casefold()  # (inputs by alias)
    by_alias = itself and side in streams
    entry = then_entry((side.alias or side.name) if by_alias else side.name, join, on)
    if others:

        def leaf(node: Column | Any) -> E.Expr:
            if not isinstance(node, Column) or known.get(node.parts[0].casefold()) is not table:
                raise (
                    unsupported_call(node, refuse, "in ON is not supported")
                    if not isinstance(node, Column)
                    else refuse(
                        node.pos,
                        f"{describe(node)} in the ON of the JOIN with {table.name}: a table "
                        "met by a JOIN of two streams takes conditions on its own columns "
                        "only (for now); compare the others in WHERE",
                    )
                )
            field = E.Ref(check_column(node.parts[1], node.pos, refuse), table.name)
            return inside(field, node.parts[2:])

        entry["condition"] = E.to_text(
            E.conjunction([convert(term, leaf, refuse, "ON") for term in others])
        )
    return entry
