"""Reference data met by a stream's events (semantics §11.8, §11.23): the table's rows by
their ``on`` values, and the rows one event meets.

A job that releases its events (:class:`sparktide.core.join.ReferenceJoin`) writes one
record per row an event meets; a windowed job (:func:`looked_up`) turns each admitted
event into one event per row it meets, the row under the table's name, before
``[filter]`` and the window, as ``[apply]`` expands an event (§11.18).
"""

from __future__ import annotations

from typing import Any

from sparktide.core.join import join_condition_met, join_key
from sparktide.job import Job

__all__ = ["ReferenceTable", "looked_up"]


class ReferenceTable:
    """The rows of a job's one reference table (``[inputs.<name>] reference = true``), by
    the values of ``[join] on`` (compared as :func:`join_key` compares them); a row
    missing one of them is met by no event.

    Parameters
    ----------
    job
        The job: its ``[join]`` and its one ``references`` table, read now.
    """

    def __init__(self, job: Job) -> None:
        from sparktide.reader import read_reference

        join = job.join
        assert join is not None
        ((name, reference),) = job.references
        self.join = join
        self._rows: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for row in read_reference(name, reference):
            key = join_key(row, join.right_on)
            if key is not None:
                self._rows.setdefault(key, []).append(row)

    def rows_met(self, fields: dict[str, Any], timestamp: int) -> list[dict[str, Any] | None]:
        """The rows an event with ``fields`` at ``timestamp`` meets, in the table's order:
        equal ``on`` values and ``[join] condition`` true. Under ``type = "left"`` an
        event that meets none meets ``None`` (its right side null) once."""
        join = self.join
        key = join_key(fields, join.left_on)
        rows: list[dict[str, Any] | None] = list(self._rows.get(key, ())) if key is not None else []
        rows = [row for row in rows if join_condition_met(join, fields, row, timestamp)]
        if not rows and join.type == "left":
            return [None]
        return rows


def looked_up(
    table: ReferenceTable, fields: dict[str, Any], timestamp: int
) -> list[dict[str, Any]]:
    """The fields of each event an admitted event with ``fields`` at ``timestamp``
    becomes in a window over a join with reference data: its own fields and, under the
    table's name, the row it met (``None`` for a left join's event that met none; a
    field of that name is replaced). None when it meets no row under an inner join."""
    name = table.join.right
    return [{**fields, name: row} for row in table.rows_met(fields, timestamp)]
