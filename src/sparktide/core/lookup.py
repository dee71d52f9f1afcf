"""Reference data met by a stream's events (semantics §11.8, §11.23): the table's rows by
their ``on`` values, and the rows one event meets. Further tables (``[[join.then]]``)
keyed by a table meet its rows when the run reads them (:func:`reference_rows`); those
keyed by the event's own fields are met per event (:func:`event_tables_met`).

A job that releases its events (:class:`sparktide.core.join.ReferenceJoin`) writes one
record per row an event meets; a windowed job (:func:`looked_up`) turns each admitted
event into one event per row it meets, the row under the table's name, before
``[filter]`` and the window, as ``[apply]`` expands an event (§11.18).
"""

from __future__ import annotations

from typing import Any

from sparktide.core.join import join_condition_met, join_key
from sparktide.expr import evaluate, value_of
from sparktide.job import Job, TableJoin

__all__ = [
    "ReferenceTable",
    "event_tables",
    "event_tables_met",
    "keyed_rows",
    "looked_up",
    "reference_rows",
    "tables_met",
]


def reference_rows(job: Job) -> list[dict[str, Any]]:
    """The rows of the job's table (``[join] right``) as its events meet them, in the
    table's order: each met, in ``[[join.then]]``'s order, by the further tables
    (:func:`tables_met`). Both engines read the table through this function (Spark on
    its driver), so they see the same rows."""
    from sparktide.reader import read_reference

    join = job.join
    assert join is not None
    tables = dict(job.references)
    rows = read_reference(join.right, tables[join.right])
    for step in join.then:
        if step.left == join.left:  # (met by each event: event_tables_met; its member
            rows = [{k: v for k, v in row.items() if k != step.right} for row in rows]
            continue  # replaces a field of that name)
        rows = tables_met(join.right, step, rows, read_reference(step.right, tables[step.right]))
    return rows


def event_tables(
    job: Job, sides: tuple[str, ...] | None = None
) -> list[tuple[TableJoin, list[dict[str, Any]]]]:
    """The ``[[join.then]]`` tables each event meets by its own fields (``left`` the
    stream; ``sides``: the inputs whose fields meet tables, by default ``[join] left``),
    in order, each with its rows that meet its ``condition`` (which reads the table's
    own fields only)."""
    from sparktide.reader import read_reference

    join = job.join
    assert join is not None
    tables = dict(job.references)
    out = []
    for step in join.then:
        if step.left not in (sides or (join.left,)):
            continue
        rows = read_reference(step.right, tables[step.right])
        condition = step.condition_expression  # (over the table's own fields: its rows)
        if condition is not None:
            rows = [row for row in rows if _meets(condition, {step.right: row})]
        out.append((step, rows))
    return out


def event_tables_met(
    tables: list[tuple[TableJoin, dict[tuple[Any, ...], list[dict[str, Any]]]]],
    fields: dict[str, Any],
    rows: list[dict[str, Any] | None],
) -> list[dict[str, Any] | None]:
    """The rows an event with ``fields`` meets (``rows``: the table's) with, for each
    table it meets by its own fields (``tables``: each step and its rows by key), the
    rows of that table it meets (semantics §11.8, *Further tables*): one row per pair,
    in both tables' order, the row met as the member ``step.right`` (a table row the
    event did not meet under a left join holds only that member); under ``type =
    "left"`` a pair for a row that meets none, the member null."""
    for step, by_key in tables:  # (their rows met the tables' conditions: event_tables)
        key = join_key(fields, step.left_on)
        met: list[dict[str, Any] | None] = list(by_key.get(key, ())) if key is not None else []
        if not met and step.type == "left":
            met = [None]
        out: list[dict[str, Any] | None] = []
        for row in rows:
            if row is None and met == [None]:
                out.append(None)
                continue
            out += [{**(row or {}), step.right: m} for m in met]
        rows = out
    return rows


def keyed_rows(
    step: TableJoin, rows: list[dict[str, Any]]
) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """A further table's ``rows`` by their ``on`` values (a row missing one: none)."""
    by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        key = join_key(row, step.right_on)
        if key is not None:
            by_key.setdefault(key, []).append(row)
    return by_key


def tables_met(
    name: str, step: TableJoin, rows: list[dict[str, Any]], table: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The rows of table ``name`` (holding the earlier tables' rows as members) with the
    rows of ``step.right`` (``table``) each meets (semantics §11.8, *Further tables*):
    one row per row met, that row as the member ``step.right``, in both tables' order;
    under ``type = "left"`` a row that meets none kept once, the member null."""
    by_key = keyed_rows(step, table)
    condition = step.condition_expression
    out: list[dict[str, Any]] = []
    for row in rows:
        held = {name: row, **{k: v for k, v in row.items() if k != name}}
        left = row if step.left == name else row.get(step.left)
        key = join_key(left, step.left_on) if isinstance(left, dict) else None
        met = [] if key is None else by_key.get(key, [])
        if condition is not None:
            met = [m for m in met if _meets(condition, {**held, step.right: m})]
        if not met and step.type == "left":
            met = [None]  # type: ignore[list-item]
        out += [{**row, step.right: m} for m in met]
    return out


def _meets(condition: Any, tables: dict[str, Any]) -> bool:
    """Whether ``condition`` over ``<table>.<field>`` of ``tables`` (a table's row, or a
    member that is not a record: its fields read null) is true."""

    def record(side: str) -> dict[str, Any]:
        value = tables.get(side)
        return value if isinstance(value, dict) else {}

    def lookup(key: str) -> Any:
        side, field = key.split(".", 1)
        return value_of(record(side).get(field))

    def present(key: str) -> bool:
        side, field = key.split(".", 1)
        return field in record(side)

    return evaluate(condition, lookup, present=present) is True


class ReferenceTable:
    """The rows of a job's reference table (:func:`reference_rows`), by
    the values of ``[join] on`` (compared as :func:`join_key` compares them); a row
    missing one of them is met by no event.

    Parameters
    ----------
    job
        The job: its ``[join]`` and its one ``references`` table, read now.
    """

    def __init__(self, job: Job) -> None:
        join = job.join
        assert join is not None
        self.join = join
        self._rows: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        self._events = [(step, keyed_rows(step, rows)) for step, rows in event_tables(job)]
        for row in reference_rows(job):
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
            rows = [None]
        return event_tables_met(self._events, fields, rows) if self._events else rows


def looked_up(
    table: ReferenceTable, fields: dict[str, Any], timestamp: int
) -> list[dict[str, Any]]:
    """The fields of each event an admitted event with ``fields`` at ``timestamp``
    becomes in a window over a join with reference data: its own fields and, under the
    table's name, the row it met (``None`` for a left join's event that met none; a
    field of that name is replaced). None when it meets no row under an inner join."""
    name = table.join.right
    return [{**fields, name: row} for row in table.rows_met(fields, timestamp)]
