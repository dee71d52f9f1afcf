"""Window partials merged: within a task, and on the driver into the open windows.

Every partial of the one-pass plan (counts and sums) merges by ``sum``, as in Spark,
where a column whose values are all null stays null.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["merge_into", "merge_partials", "telling_keys"]


def merge_partials(table: pa.Table, keys: list[str], *, threads: bool = False) -> pa.Table:
    """``table``'s rows of equal ``keys`` merged into one: every other column (counts
    and sums: all partials of the one-pass plan merge by ``sum``, as in Spark, where a
    column whose values are all null stays null) summed; the columns keep their order.

    Keys that tell no rows apart (:func:`telling_keys`: ``scope`` of a merged job, a
    group that is the substream key) are left out of the grouping and put back: hashing
    text is most of the cost, and Arrow's grouping in threads was slower, not faster,
    here."""
    others = [name for name in table.column_names if name not in keys]
    kept, implied = telling_keys(table, keys)
    folded = table.group_by(kept, use_threads=threads).aggregate([(name, "sum") for name in others])
    named = {f"{name}_sum": name for name in others}
    folded = folded.rename_columns([named.get(name, name) for name in folded.column_names])
    for name, source in implied.items():
        kind = table.schema.field(name).type
        value = folded.column(source) if source is not None else table.column(name)[0]
        if source is None:
            value = pa.repeat(value, folded.num_rows).cast(kind)
        folded = folded.append_column(name, value)
    return folded.select(table.column_names).cast(table.schema)


def merge_into(fresh: pa.Table, held: pa.Table, keys: list[str], probe: list[str]) -> pa.Table:
    """:func:`merge_partials` of ``fresh`` and ``held`` together, where ``held`` (the
    open windows' state) has one row per window already: only the held rows whose every
    ``probe`` key (a subset of ``keys``) occurs in ``fresh`` can share a window with a
    fresh row, so only they are grouped with it; the others are kept as they are.

    Grouping hashes every row's text keys, so grouping only the held rows a fresh row
    may meet costs less than grouping them all (``docs/design.md``)."""
    if not held.num_rows:
        return merge_partials(fresh, keys)
    touched = pa.array(np.ones(held.num_rows, dtype=bool))
    for name in probe:
        touched = pc.and_(touched, pc.is_in(held.column(name), value_set=fresh.column(name)))
    merged = merge_partials(pa.concat_tables([fresh, held.filter(touched)]), keys)
    return pa.concat_tables([merged, held.filter(pc.invert(touched))])


def telling_keys(table: pa.Table, keys: list[str]) -> tuple[list[str], dict[str, str | None]]:
    """``keys`` split into those that tell rows apart and the others, each with the
    kept key it equals row for row, or ``None`` when it holds one value throughout
    (columns with nulls always tell)."""
    kept: list[str] = []
    implied: dict[str, str | None] = {}
    for name in keys:
        column = table.column(name)
        if len(column) == 0 or column.null_count:
            kept.append(name)
            continue
        if pc.all(pc.equal(column, column[0])).as_py():
            implied[name] = None
            continue
        same = [
            other
            for other in kept
            if table.column(other).type == column.type
            and not table.column(other).null_count
            and pc.all(pc.equal(column, table.column(other))).as_py()
        ]
        if same:
            implied[name] = same[0]
        else:
            kept.append(name)
    if not kept and keys:  # (Arrow groups by at least one key)
        kept.append(keys[0])
        implied.pop(keys[0], None)
    return kept, implied
