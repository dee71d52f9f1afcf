"""The ``event`` and ``window`` records a reference run writes (semantics §10), after
``having`` and ``[select]``."""

from __future__ import annotations

from typing import Any

from sparktide.core.records import jsonable, time_or_none
from sparktide.core.sink import Admitted
from sparktide.expr import Composite, Expr, Ref, evaluate, is_other, value_of
from sparktide.job import Job

__all__ = [
    "EVENT_RESERVED",
    "INTERVAL_RESERVED",
    "event_record",
    "join_record",
    "project",
    "window_result",
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
    if job.select:
        seen = {**fields, **analytic} if analytic else fields
        out.update(project(job, lambda name: seen.get(name)))
    else:
        reserved = INTERVAL_RESERVED if intervals else EVENT_RESERVED
        for name, value in fields.items():
            out[f"input_{name}" if name in reserved or name == "type" else name] = jsonable(value)
    out[own["timestamp"]] = time_or_none(event.timestamp)
    if intervals:
        out[own["end_timestamp"]] = time_or_none(event.record.end_time)
    return out


def join_record(job: Job, record: dict[str, Any]) -> dict[str, Any]:
    """The ``event`` record of a join's match: as matched, or ``[select]`` over it
    (``<input>.<field>``, ``timestamp``)."""
    if not job.select:
        return record
    return {
        "type": "event",
        **project(job, lambda key: _match_value(record, key)),
        job.event_fields["timestamp"]: record["timestamp"],
    }


def project(job: Job, lookup: Any) -> dict[str, Any]:
    """The ``[select]`` columns of one record (``lookup(key)``: a column's raw value,
    ``key`` as :attr:`sparktide.expr.Ref.key`): a bare column passes its value through,
    anything else is computed."""
    out: dict[str, Any] = {}
    for projection in job.select:
        expr = projection.parsed
        if isinstance(expr, Ref):
            out[projection.name] = jsonable(lookup(expr.key))
            continue
        value = evaluate(expr, lambda name: value_of(lookup(name)))
        if isinstance(value, Composite):  # an array or object a function found
            out[projection.name] = jsonable(value.raw)
        else:
            out[projection.name] = None if is_other(value) else value
    return out


def _match_value(record: dict[str, Any], key: str) -> Any:
    """The value a ``[select]`` over a join reads (``key``: ``timestamp``, the match's
    time, or ``<input>.<field>``, a field of that input's record) from the match
    ``record`` (``{left: {...}, right: {...}, "timestamp": ...}``)."""
    if key == "timestamp":
        return record["timestamp"]
    side, name = key.split(".", 1)
    fields = record[side]  # (null: a left join's event that met no reference row)
    return fields.get(name) if fields is not None else None


def window_result(job: Job, record: dict[str, Any], having: Expr | None) -> dict[str, Any] | None:
    """A window record after ``having`` (``None`` when the window fails it) and
    ``[select]`` (``window_start``, ``window_end``, the selected columns, ``emitted_at``)."""
    if having is not None and evaluate(having, lambda name: value_of(record.get(name))) is not True:
        return None
    if not job.select:
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
