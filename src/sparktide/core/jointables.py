"""Reference data met by a join of two streams (semantics §11.26): each match meets the
tables of ``[[join.then]]``, each by the fields of one of its two events, and is written
once per combination of the rows it meets.

The tables are read once, when the run starts (:func:`stream_tables`, by key); a match
meets them when it is released (:func:`tables_met`), so a held match needs no row.
"""

from __future__ import annotations

from typing import Any

from sparktide.core.join import join_key
from sparktide.core.lookup import event_tables, keyed_rows
from sparktide.job import Job, TableJoin

__all__ = ["StreamTables", "stream_tables", "tables_met"]

#: Each table of ``[[join.then]]`` with its rows by their ``on`` values.
StreamTables = list[tuple[TableJoin, dict[tuple[Any, ...], list[dict[str, Any]]]]]


def stream_tables(job: Job) -> StreamTables:
    """The tables a job's join of two streams meets, in ``[[join.then]]``'s order, each
    with its rows that meet the entry's ``condition``, by key."""
    join = job.join
    assert join is not None
    tables = event_tables(job, (join.left, join.right, *join.stream_tables))
    return [(step, keyed_rows(step, rows)) for step, rows in tables]


def tables_met(
    tables: StreamTables,
    left: str,
    fields: dict[str, Any],
    other: dict[str, Any] | None,
) -> list[dict[str, dict[str, Any] | None]]:
    """The rows a match meets (``fields``: its ``left`` input's event's, ``other`` its
    right one's, ``None`` for a left join's lone event): one entry per combination, each
    table's row under its name, in the tables' order and each table's. A table met by
    an earlier table's row meets each combination's row of it. A table that meets none
    under ``type = "left"`` gives its name ``None``; under ``inner`` the combination is
    not written (nor the match, when none is left). A missing or null key meets no
    row."""
    combinations: list[dict[str, dict[str, Any] | None]] = [{}]
    for step, by_key in tables:
        grown = []
        for combination in combinations:
            if step.left in combination:  # (an earlier table's row, or None)
                own = combination[step.left]
            else:
                own = fields if step.left == left else other
            key = None if own is None else join_key(own, step.left_on)
            rows: list[Any] = list(by_key.get(key, ())) if key is not None else []
            if not rows and step.type == "left":
                rows = [None]
            grown += [{**combination, step.right: row} for row in rows]
        combinations = grown
    return combinations
