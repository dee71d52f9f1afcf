"""The ``event`` and ``window`` records a reference run writes (semantics §10), after
``having`` and ``[select]``."""

from __future__ import annotations

from typing import Any

from sparktide.core.records import jsonable, time_or_none
from sparktide.core.sink import Admitted
from sparktide.expr import (
    EVENT_INPUT,
    SYSTEM_TIMESTAMP,
    Composite,
    Expr,
    Ref,
    evaluate,
    is_other,
    value_of,
)
from sparktide.job import Job, Projection, input_of

__all__ = [
    "EVENT_RESERVED",
    "INTERVAL_RESERVED",
    "event_input_fields",
    "event_record",
    "join_record",
    "project",
    "window_result",
    "with_fields",
    "with_time",
    "written_fields",
]

#: Output names that sparktide writes into event records itself.
EVENT_RESERVED = ("timestamp",)
#: ... and into event records of interval events (``source.end_time``).
INTERVAL_RESERVED = ("timestamp", "end_timestamp")


def event_record(
    job: Job, event: Admitted, analytic: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``event`` record of a released event: its fields (or ``[select]``'s columns,
    which read the ``analytic`` columns too, over fields of the same name), its
    ``timestamp`` and, for interval events, its ``end_timestamp``."""
    intervals = job.source.intervals
    fields = event.record.fields or {}
    out: dict[str, Any] = {"type": "event"}
    own = job.event_fields
    reserved = INTERVAL_RESERVED if intervals else EVENT_RESERVED
    if job.select:
        seen = with_time({**fields, **(analytic or {})}, event.timestamp)
        own_input = input_of(event.record.partition) if job.inputs else None
        if own_input is not None:  # (System.Input(), semantics §11.22)
            seen[EVENT_INPUT.key] = own_input
        columns = project(job, lambda name: seen.get(name), fields.__contains__, own_input)
        if job.select_star is None:
            out.update(columns)
        else:  # SELECT *, expr AS c: the record's fields beside the columns
            out.update(with_fields(job, columns, written_fields(fields, reserved)))
            for name in own.values():  # (sparktide's own fields come last)
                out.pop(name, None)
    else:
        out.update(written_fields(fields, reserved))
    out[own["timestamp"]] = time_or_none(event.timestamp)
    if intervals:
        out[own["end_timestamp"]] = time_or_none(event.record.end_time)
    return out


def event_input_fields(fields: dict[str, Any], partition: Any) -> dict[str, Any]:
    """``fields`` of an event of a union's partition ``partition``, with the name of its
    input as ``System.Input()`` reads it (semantics §11.22)."""
    return {**fields, EVENT_INPUT.key: input_of(partition)}


def with_time(fields: dict[str, Any], timestamp: int | None) -> dict[str, Any]:
    """``fields`` with the event's system ``timestamp`` as ``System.Timestamp()`` reads
    it (ISO-8601 text, semantics §11.17)."""
    return {**fields, SYSTEM_TIMESTAMP.key: time_or_none(timestamp)}


def written_fields(fields: dict[str, Any], reserved: tuple[str, ...]) -> dict[str, Any]:
    """A record's fields as an event record writes them: names that sparktide writes
    itself (``reserved``, and ``type``) take the prefix ``input_``."""
    return {
        f"input_{name}" if name in reserved or name == "type" else name: jsonable(value)
        for name, value in fields.items()
    }


def with_fields(job: Job, columns: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """``[select]``'s ``columns`` with the record's ``fields`` where ``"*"`` stands
    (``job.select_star``): a name written twice keeps the value on the left, as Stream
    Analytics ignores the columns of ``*`` that a column before it names, and a column
    after ``*`` that it names (semantics §11.16)."""
    assert job.select_star is not None
    names = [p.name for p in job.select]
    out = {name: columns[name] for name in names[: job.select_star]}
    for name, value in fields.items():
        out.setdefault(name, value)
    for name in names[job.select_star :]:
        out.setdefault(name, columns[name])
    return out


def join_record(job: Job, record: dict[str, Any]) -> dict[str, Any]:
    """The ``event`` record of a join's match: as matched, or ``[select]`` over it
    (``<input>.<field>``, ``timestamp``), with the fields of the input ``"*"`` names
    (``job.select_star_input``: ``SELECT s.*, r.Model``) where it stands, as
    :func:`with_fields` places a record's fields (an input a left join met nothing of
    has none)."""
    if not job.select and job.select_star is None:
        return record
    columns = project(job, lambda key: _match_value(record, key))
    own = job.event_fields
    if job.select_star is not None:
        assert job.select_star_input is not None
        fields = record[job.select_star_input] or {}
        columns = with_fields(job, columns, written_fields(fields, EVENT_RESERVED))
        for name in own.values():  # (sparktide's own fields come last)
            columns.pop(name, None)
    return {"type": "event", **columns, own["timestamp"]: record["timestamp"]}


def project(
    job: Job, lookup: Any, present: Any = None, input_name: str | None = None
) -> dict[str, Any]:
    """The ``[select]`` columns of one record (``lookup(key)``: a column's raw value,
    ``key`` as :attr:`sparktide.expr.Ref.key`; ``present(name)``: whether the event has
    the field, for ``IS MISSING``; ``input_name``: the union's input it comes from, whose
    own expression a column with one per input takes, semantics §11.21): a bare column
    passes its value through, anything else is computed."""
    out: dict[str, Any] = {}
    for projection in job.select:
        expr = per_input_column(projection, input_name)
        if isinstance(expr, Ref):
            out[projection.name] = jsonable(lookup(expr.key))
            continue
        value = evaluate(expr, lambda name: value_of(lookup(name)), present=present)
        out[projection.name] = written_value(value)
    return out


def per_input_column(projection: Projection, input_name: str | None) -> Expr:
    """The expression of ``projection`` that an event of the union's input
    ``input_name`` is projected by: its input's own, for a column with one per input
    (semantics §11.21), else the column's one."""
    return projection.parsed_for(input_name)


def written_value(value: Any) -> Any:
    """An expression's value as a record holds it: an array or object a function found
    as itself, any other array or object as null."""
    if isinstance(value, Composite):
        return jsonable(value.raw)
    return None if is_other(value) else value


def _match_value(record: dict[str, Any], key: str) -> Any:
    """The value a ``[select]`` over a join reads (``key``: ``timestamp``, the match's
    time, or ``<input>.<field>``, a field of that input's record) from the match
    ``record`` (``{left: {...}, right: {...}, "timestamp": ...}``)."""
    if key == "timestamp":
        return record["timestamp"]
    side, name = key.split(".", 1)
    fields = record[side]  # (null: a left join's event that met no reference row)
    return fields.get(name) if fields is not None else None


def window_result(
    job: Job, record: dict[str, Any], having: Expr | None, projected: bool = True
) -> dict[str, Any] | None:
    """A window record after ``having`` (``None`` when the window fails it) and
    ``[select]`` (``window_start``, ``window_end``, the selected columns, ``emitted_at``;
    not with ``projected`` false)."""
    if having is not None and evaluate(having, lambda name: value_of(record.get(name))) is not True:
        return None
    if not job.select or not projected:
        return record
    assert job.window is not None
    result, written = job.window.own_fields, job.window_fields
    out: dict[str, Any] = {
        "type": "window",
        written["window_start"]: record[result["window_start"]],
        written["window_end"]: record[result["window_end"]],
    }
    out.update(project(job, record.get))
    out[written["emitted_at"]] = record.get(result["emitted_at"])
    return out
