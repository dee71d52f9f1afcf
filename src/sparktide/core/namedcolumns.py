"""The input columns a job names, and the ``missing_column`` diagnostic (semantics §8.4):
a column the job names that holds a value in none of an interval's input records, with
its roles in the job and what its absence does to the answers.

Both engines take the columns from :func:`named_columns` and count, per interval, the
records that hold each (:class:`ColumnPresence` here, Spark SQL and the one-pass tally
on Spark); :func:`missing_columns` words the diagnostic, and :func:`check_columns`
refuses, before a run, a column a typed stream's schema lacks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ColumnPresence",
    "NamedColumn",
    "check_columns",
    "is_source_role",
    "missing_columns",
    "named_columns",
]


@dataclass(frozen=True)
class NamedColumn:
    """A column of the input that the job names, and the keys naming it (``roles``:
    ``source.timestamp_by``, ``window.group_by``, ``window.aggregates.avg_t =
    avg(temp)``, ``filter.where``, ``select.<name>``, ``join.on``...)."""

    column: str
    roles: tuple[str, ...]

    @property
    def read_by_source(self) -> bool:
        """Whether an input reads it for its events' time, partition, key, end or edge
        (then an event holds it, else it is malformed): not an input's ``where``."""
        return any(is_source_role(role) for role in self.roles)


def is_source_role(role: str) -> bool:
    """Whether ``role`` names an input's time, partition, key, end or edge column
    (``source.<key>``, ``inputs.<name>.<key>``), not an input's ``where``."""
    return role.startswith(("source.", "inputs.")) and not role.endswith(".where")


#: What a column missing from every record does to the answers, by the key naming it.
_CONSEQUENCES = (
    ("inputs.*.where", "the input's where reads it as null (its events are filtered)"),
    ("source.", "every record is dead-lettered as malformed"),
    ("inputs.", "every record is dead-lettered as malformed"),
    ("window.group_by", "every window's group value is null"),
    ("window.aggregates", "the aggregate has no input (null; count 0)"),
    ("filter.where", "the filter reads it as null"),
    ("select.", "the output column reads it as null"),
    ("join.on", "no event can match"),
    ("join.then", "no event meets that table (under type = left, its member is null)"),
    ("analytic.", "the analytic column reads it as null"),
    ("match.define", "the variable's condition reads it as null: no event meets it"),
    ("match.partition_by", "every event falls in the partition of null"),
    ("match.measures", "the measure is null"),
    (
        "apply.",
        "no event expands into anything (dropped: no_elements; kept, its element null, "
        "with apply.outer)",
    ),
)


def _input_field(job: Any, column: str) -> str | None:
    """The input column a window's ``column`` reads: itself, or over a join's matches
    (semantics §7.11) the field of ``<input>.<field>`` (``None`` for an input's record
    whole, which is no column)."""
    if not job.windows_matches:
        return column
    inputs = {name for name, _ in job.inputs}
    tables = set(job.join.stream_tables)  # (a table's fields are its rows', §11.26)
    if column in inputs or column.partition(".")[0] in tables:
        return None
    side, _, field = column.partition(".")
    return field if side in inputs and field else column


def _join_columns(job: Any, add: Any) -> None:
    """The columns a join compares: both inputs' ``on`` (a reference table's columns are
    in its rows, not an input's), and those by which an event meets a further table."""
    join = job.join
    assert join is not None
    if job.window_meets_table:  # (its on columns are the window's, §13.5)
        return
    for column in dict.fromkeys(join.left_on + (() if job.references_joined else join.right_on)):
        add(column.split(".", 1)[0], "join.on")  # (a value inside: its record's field)
    streams = (join.left,) if job.references_joined else (join.left, join.right)
    for k, step in enumerate(join.then):  # (a further table met by an event's fields, §11.26)
        for column in step.left_on if step.left in streams else ():
            add(column.split(".", 1)[0], f"join.then[{k}].on")


def _match_columns(job: Any, add: Any) -> None:
    """``add`` the fields ``[match]``'s conditions, keys and measures read (§11.25)."""
    from sparktide.expr import references

    if job.match is None:
        return
    for key, expression in job.match.expressions():
        for column in references(expression):
            add(column, key)
    for measure in job.match.measure_list:
        if measure.column is not None:  # (a value inside: its record's field)
            add(measure.column.split(".", 1)[0], f"match.measures.{measure.name}")


def named_columns(job: Any) -> list[NamedColumn]:
    """The input columns ``job`` names, each once, in this order: every input's time,
    arrival time, partition, substream key, end time and edge columns
    (``source.processing_time`` is ``simulate``'s alone: ``run`` times batches itself),
    the window's group-by and aggregate inputs, the join's ``on`` columns, the fields
    analytic columns read, the inputs' ``where`` fields, the filter's fields and, in a job
    without a window or a join, ``[select]``'s fields (not the analytic columns they
    read: those are computed), and
    the fields ``[match]``'s keys, conditions and measures read,
    the fields ``[apply]``'s value reads (not its name: the element each event holds; nor,
    in a window over a join with reference data, the table's: the row each event met);
    not the fields the job tests with ``IS MISSING`` (but as a source's column).

    ``missing_column`` (:func:`missing_columns`) is checked for each (semantics §8.4)."""
    from sparktide.expr import EVENT_INPUT, SYSTEM_TIMESTAMP, references
    from sparktide.job import analytic_fields

    roles: dict[str, list[str]] = {}

    def add(column: str | None, role: str) -> None:
        if column in (SYSTEM_TIMESTAMP.key, EVENT_INPUT.key):  # the event's, no field
            return
        if column is not None and role not in roles.setdefault(column, []):
            roles[column].append(role)

    for name, source in job.input_sources:
        prefix = "source" if name is None else f"inputs.{name}"
        computed = {"timestamp_by": source.time_fields, "over": source.key_fields}
        for key in ("timestamp_by", "arrival_time", "partition", "over", "end_time", "edge"):
            for read in computed.get(key, [getattr(source, key)]):  # (an expression's fields)
                add(read, f"{prefix}.{key}")
        add(source.edge_id, f"{prefix}.edge_id")
    window = job.window
    if window is not None:
        for name, expression in window.group_keys:
            if expression is None:
                add(name, "window.group_by")
                continue
            for column in references(expression):  # (a computed column: its fields)
                add(_input_field(job, column), f"window.group_by.{name}")
        for a in window.aggregates:
            for column in a.columns:
                add(_input_field(job, column), f"window.aggregates.{a.name} = {a}")
    if job.join is not None:
        _join_columns(job, add)
    computed = {analytic.name for analytic in job.analytics}
    for analytic in job.analytics:  # the fields it reads; the other columns' names are none
        for column in analytic_fields(analytic, computed):
            add(column, f"analytic.{analytic.name}")
    for name, condition in job.input_conditions.items():  # (semantics §11.20)
        for column in references(condition):
            add(column, job.where_key(name))
    if job.filter is not None:
        for column in references(job.filter.expression):
            if column not in computed:
                add(column, "filter.where")
    if window is None and job.join is None and job.match is None:  # ([match]: measures)
        for projection in job.select:
            for own, expression in projection.expressions():  # (per input, §11.21)
                for column in references(expression):
                    if column not in computed:
                        key = f"select.{projection.name}"
                        add(column, key if own is None else f"{key}.{own}")
    _match_columns(job, add)
    if job.apply is not None:  # the fields its value reads; its name is the element's
        for column in references(job.apply.expression):
            add(column, "apply.value")
        roles.pop(job.apply.name, None)
    if job.looks_up_in_window:  # (the table's name holds the row each event met, §11.23)
        roles.pop(job.join.right, None)
    for column in _tested_missing(job):  # (absent from records by design: not diagnosed)
        if all(not (is_source_role(k) or k.startswith("join.")) for k in roles.get(column, [])):
            roles.pop(column, None)
    return [NamedColumn(column, tuple(keys)) for column, keys in roles.items()]


def _tested_missing(job: Any) -> set[str]:
    """The fields the job's expressions test with ``IS [NOT] MISSING`` (semantics §11.16):
    a job that asks whether a record has the field expects some to have none."""
    from sparktide.expr import missing_tests
    from sparktide.job.expressions import record_expressions

    return {name for _, e in record_expressions(job) for name in missing_tests(e)}


class ColumnPresence:
    """Counts, over an interval's input records, those holding a value (present, not
    null) in each column the job names (:func:`named_columns`); the reference
    engine's copy of ``column_present`` (``sparktide.rules``).

    Input records are the ones the ``input`` counter counts: events and malformed
    records, not CTI rows. An event holds its time, partition, key and edge columns
    (else it would be malformed); otherwise a record counts by its fields, when it has
    any."""

    def __init__(self, job: Any) -> None:
        self.columns = named_columns(job)
        self.input = 0
        self.present = [0] * len(self.columns)
        self._source = [named.read_by_source for named in self.columns]

    def column_present(self, fields: dict[str, Any] | None, *, event: bool) -> None:
        """Count one input record (``fields``: its fields, None when it has none;
        ``event``: it is an event, not a malformed record)."""
        self.input += 1
        for i, named in enumerate(self.columns):
            if (event and self._source[i]) or (fields and fields.get(named.column) is not None):
                self.present[i] += 1

    def diagnostics(self) -> list[dict[str, Any]]:
        """The interval's ``missing_column`` diagnostics (:func:`missing_columns`)."""
        return missing_columns(self.columns, self.input, self.present)


def missing_columns(
    columns: list[NamedColumn], input_count: int, present: list[int] | None
) -> list[dict[str, Any]]:
    """One ``missing_column`` diagnostic per column of ``columns`` that holds a value in
    none of the interval's ``input_count`` input records (``present``: per column, how
    many hold one; None: not counted, as in a flush). None without input.

    A misspelled column reads as null in every record: ``avg(temprature)`` gives null
    averages, ``group_by = ["devce"]`` one null group, ``timestamp_by = "event_tme"``
    dead-letters every record (semantics §8.4)."""
    if input_count <= 0 or present is None:
        return []
    out = []
    plural = "s" if input_count != 1 else ""
    for named, count in zip(columns, present, strict=True):
        if count:
            continue
        role = ", ".join(named.roles)
        first = named.roles[0]
        where = first.startswith(("inputs.", "source.")) and first.endswith(".where")
        shape = "inputs.*.where" if where else first
        consequence = next(text for prefix, text in _CONSEQUENCES if shape.startswith(prefix))
        out.append(
            {
                "kind": "missing_column",
                "column": named.column,
                "role": role,
                "count": input_count,
                "message": f"column {named.column!r} ({role}) holds a value in none of the "
                f"{input_count} input record{plural}: {consequence}; check its spelling "
                "against the input",
            }
        )
    return out


def check_columns(job: Any, names: Iterable[str], *, exempt: Iterable[str] = ()) -> None:
    """Check, where the input's schema is known before any batch (a typed streaming
    DataFrame: ``names`` is ``frame.schema.fieldNames()``), that every column the job
    names (:func:`named_columns`) is one of ``names``: where ``missing_column`` would
    be reported at every batch, the run is refused before it starts.

    ``exempt``: named columns the caller supplies itself (a partition taken from
    another column of the stream, say).

    Raises
    ------
    ConfigError
        Naming the job key of the first missing column, the column, and the schema's
        columns.
    """
    from sparktide.errors import ConfigError

    have, free = set(names), set(exempt)
    for named in named_columns(job):
        if named.column in have or named.column in free:
            continue
        shown = ", ".join(sorted(have)) or "none"
        raise ConfigError(
            named.roles[0].split(" = ", 1)[0],
            f"column {named.column!r} is not in the input's schema (its columns: {shown})",
        )
