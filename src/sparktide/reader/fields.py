"""One row's fields → an :class:`~sparktide.core.records.InputRecord`, or a malformed one.

The source says which columns carry the times, the partition, the substream key and the
edges; each is checked here, in a fixed order, and the first failure is the record's
error (its dead letter's reason).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sparktide.core.records import InputRecord
from sparktide.expr import ConversionError, Expr, evaluate, is_other, value_of
from sparktide.job import Punctuation, Source
from sparktide.job.tuplekey import key_label
from sparktide.reader.contract import INT64_RANGE, INTEGER, shown_text
from sparktide.time import (
    FIRST_INSTANT,
    LAST_INSTANT,
    epoch_micros,
    from_datetime,
    instant_or_problem,
)

__all__ = [
    "computed_key",
    "computed_key_label",
    "computed_time",
    "computed_time_label",
    "parse_fields",
]


def _present(fields: dict[str, Any], column: str, what: str) -> Any:
    """The value of ``column``, which must be there and not null."""
    value = fields.get(column)
    if value is None:
        raise ValueError(f"missing {what} column {column!r}")
    return value


def _time(
    fields: dict[str, Any], column: str, what: str, unit: str | None = None, label: str = ""
) -> int:
    """The instant in ``column``: ISO-8601 text with a zone, or with ``unit``
    (``source.time_unit``) an integer of ``unit`` since 1970 (semantics §1.4). The
    errors name ``label`` (``column 'name'`` by default)."""
    label = label or f"column {column!r}"
    value = _present(fields, column, what)
    if isinstance(value, datetime):  # Parquet: judged by its ISO text, as Spark does
        if value.tzinfo is not None:
            return from_datetime(value)
        value = value.isoformat()
    if isinstance(value, float) and value.is_integer() and unit is not None:
        value = int(value)  # (21.0 and 1e3 hold integers too, as on Spark)
    if unit is not None and isinstance(value, int) and not isinstance(value, bool):
        instant = epoch_micros(value, unit)
        if not FIRST_INSTANT <= instant <= LAST_INSTANT:
            raise ValueError(f"{label}: {value} ({unit} since 1970) is no instant of years 1-9999")
        return instant
    if not isinstance(value, str):
        expected = "an ISO-8601 time string"
        if unit is not None:
            expected += f" or an integer of {unit} since 1970"
        raise ValueError(f"{label}: expected {expected}")
    instant = instant_or_problem(value)
    if isinstance(instant, str):
        raise ValueError(f"{label}: time '{shown_text(value)}' {instant}")
    return instant


def _event_time(fields: dict[str, Any], source: Source) -> int:
    """The event time: the ``timestamp_by`` column's, or its expression's."""
    column = source.timestamp_by
    assert column is not None
    if source.computes_time:
        return computed_time(fields, source)
    return _time(fields, column, "timestamp", source.time_unit)


def computed_time(fields: dict[str, Any], source: Source) -> int:
    """The event time ``timestamp_by``'s expression computes (semantics §1.4), judged
    as a time column's would be; a failing ``CAST`` in the expression, or a null, is
    the record's error."""
    column, expression = source.timestamp_by, source.timestamp_expression
    assert column is not None and expression is not None
    label = computed_time_label(column)
    value = _computed(fields, expression, label)
    if value is None:
        raise ValueError(f"{label} is null")
    return _time({column: value}, column, "timestamp", source.time_unit, label)


def _computed(fields: dict[str, Any], expression: Expr, label: str) -> Any:
    """The value of a computed field's ``expression`` over ``fields``; a failing ``CAST``
    in it is a :class:`ValueError` whose message starts with ``label``."""
    try:
        lookup = lambda name: value_of(fields.get(name))  # noqa: E731
        return evaluate(expression, lookup, strict=True, present=fields.__contains__)
    except ConversionError as exc:
        raise ValueError(f"{label}: {exc}") from None


def computed_time_label(expression: str) -> str:
    """How a dead letter names a computed event time (``timestamp_by`` an expression)."""
    return f"timestamp {expression}"


def _fits_int64(text: str) -> bool:
    """Whether the integer text (``-?[0-9]+``) fits in a signed 64-bit integer."""
    if len(text.lstrip("-").lstrip("0")) > 19:
        return False
    return INT64_RANGE[0] <= int(text) <= INT64_RANGE[1]


def _int64_or_text(value: Any) -> bool:
    """Whether ``value`` is a string or an integer of at most 64 bits (not a boolean)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return INT64_RANGE[0] <= value <= INT64_RANGE[1]
    return isinstance(value, str)


def _partition(fields: dict[str, Any], column: str) -> Any:
    value = _present(fields, column, "partition")
    if not _int64_or_text(value):
        raise ValueError(
            f"partition column {column!r} must be an integer of at most 64 bits or a string"
        )
    if isinstance(value, str) and INTEGER.fullmatch(value) and _fits_int64(value):
        return int(value)  # digit strings name the same partition as the integer
    return value


def _key(fields: dict[str, Any], column: str) -> Any:
    value = _present(fields, column, "substream key")
    if isinstance(value, (dict, list)):
        raise ValueError(f"substream key column {column!r} must be a single value")
    return value


def _substream_key(fields: dict[str, Any], source: Source, cti: bool) -> Any:
    """The substream key: the ``over`` column's, or its expression's (semantics §1.4); a
    CTI row without one punctuates every substream (``None``)."""
    column = source.over
    assert column is not None
    if not source.computes_key:
        return None if cti and fields.get(column) is None else _key(fields, column)
    return computed_key(fields, source, cti)


def computed_key(fields: dict[str, Any], source: Source, cti: bool = False) -> Any:
    """The substream key ``over``'s expression computes (semantics §1.4): a single value;
    a failing ``CAST`` in the expression, or a null (but on a CTI row), is the record's
    error."""
    column, expression = source.over, source.key_expression
    assert column is not None and expression is not None
    label = computed_key_label(column)
    value = _computed(fields, expression, label)
    if value is None and not cti:
        raise ValueError(f"{label} is null")
    if is_other(value):  # (an array or object)
        raise ValueError(f"{label} must be a single value")
    return value


def computed_key_label(expression: str) -> str:
    """How a dead letter names a computed substream key (``over`` an expression; one of
    several columns by their names, :func:`~sparktide.job.tuplekey.key_label`)."""
    return f"substream key {key_label(expression)}"


def _edge(fields: dict[str, Any], column: str, id_column: str) -> tuple[str, Any]:
    """An edge event's kind (``"start"`` or ``"end"``) and its id (semantics §7)."""
    kind = fields.get(column)
    if kind not in ("start", "end") or not isinstance(kind, str):
        raise ValueError(f'column {column!r} must be "start" or "end" (an edge event)')
    value = _present(fields, id_column, "edge id")
    if not _int64_or_text(value):
        raise ValueError(
            f"edge id column {id_column!r} must be a string or an integer of at most 64 bits"
        )
    return kind, value


def _arrival_time(fields: dict[str, Any], source: Source, default_arrival: int | None) -> int:
    """The arrival time: the source's column, else the default (the file's)."""
    if source.arrival_time is not None:
        return _time(fields, source.arrival_time, "arrival time", source.time_unit)
    if default_arrival is not None:
        return default_arrival
    raise ValueError("no arrival time: set source.arrival_time")


def _end_time(fields: dict[str, Any], source: Source, event_time: int) -> int | None:
    """An interval event's end time (shifted as its start), after its start time; with
    ``source.duration``, its start time plus the duration (semantics §7.6)."""
    if source.duration is not None:
        return event_time + source.duration  # type: ignore[operator]
    if source.end_time is None:
        return None
    end_time = _time(fields, source.end_time, "end time", source.time_unit) + source.shift  # type: ignore[operator]
    if end_time <= event_time:
        raise ValueError(f"column {source.end_time!r}: the end time must be after the start time")
    return end_time


def _check_numbers(fields: dict[str, Any], numeric: frozenset[str]) -> None:
    """Every ``numeric`` column, by name, holds a number or null."""
    for column in sorted(numeric):
        value = fields.get(column)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"column {column!r} must be a number")


def cast_failure_check(fields: dict[str, Any], checks: tuple[Expr, ...]) -> None:
    """Every expression of ``checks`` evaluates without a failing ``CAST`` (semantics
    §11.13: the record is malformed, with the ``CAST``'s message, rather than the job
    failing as in Stream Analytics)."""
    for expr in checks:
        try:
            lookup = lambda name: value_of(fields.get(name))  # noqa: E731
            evaluate(expr, lookup, strict=True, present=fields.__contains__)
        except ConversionError as exc:
            raise ValueError(str(exc)) from None


def _checked(
    fields: dict[str, Any],
    source: Source,
    default_arrival: int | None,
    numeric: frozenset[str],
    cti: bool,
    checks: tuple[Expr, ...] = (),
) -> dict[str, Any]:
    """The record's attributes from ``fields``, checked in :func:`parse_fields`' order.

    Raises
    ------
    ValueError
        With the first check that fails.
    """
    arrival = _arrival_time(fields, source, default_arrival)
    event_time = (
        _event_time(fields, source) + source.shift  # type: ignore[operator]
        if source.timestamp_by is not None
        else arrival
    )
    processing = (
        _time(fields, source.processing_time, "processing time")
        if source.processing_time is not None
        else arrival
    )
    partition = _partition(fields, source.partition) if source.partition is not None else 0
    key = None if source.over is None else _substream_key(fields, source, cti)
    edge = edge_id = None
    if source.edge is not None and not cti:
        edge, edge_id = _edge(fields, source.edge, source.edge_id)  # type: ignore[arg-type]
    end_time = None if cti else _end_time(fields, source, event_time)
    if not cti:
        _check_numbers(fields, numeric)
        cast_failure_check(fields, checks)
    return {
        "partition": partition,
        "key": key,
        "event_time": event_time,
        "arrival_time": arrival,
        "processing_time": processing,
        "end_time": end_time,
        "edge": edge,
        "edge_id": edge_id,
    }


def parse_fields(
    seq: int,
    fields: dict[str, Any],
    source: Source,
    *,
    default_arrival: int | None = None,
    raw: str | None = None,
    numeric: frozenset[str] = frozenset(),
    punctuation: Punctuation | None = None,
    checks: tuple[Expr, ...] = (),
) -> InputRecord:
    """Turn one row's fields into an :class:`InputRecord` (malformed if anything is wrong).

    Parameters
    ----------
    seq
        The record's input position.
    fields
        Column name → value.
    source
        Says which columns carry time, partition and key.
    default_arrival
        Arrival time when the source has no ``arrival_time`` column (the file's
        modification time).
    raw
        The raw text, kept for dead letters.
    numeric
        Columns that must hold a number or null.
    checks
        Expressions the job evaluates over each record (:func:`sparktide.job.record_casts`):
        a ``CAST`` in them that fails makes the record malformed.
    punctuation
        The job's CTI settings: a row marked as a CTI becomes a CTI record (its key may be
        missing: it then punctuates every substream; no end time or numeric check).

    The checks run in a fixed order (arrival time, timestamp, processing time,
    partition, key, edge kind and id, end time, numeric columns by name); the first
    failure is the error.
    """
    cti = punctuation is not None and punctuation.is_cti(fields)
    try:
        checked = _checked(fields, source, default_arrival, numeric, cti, checks)
    except ValueError as exc:
        return InputRecord(seq, fields, raw=raw, error=str(exc))
    return InputRecord(seq, fields, raw=raw, cti=cti, **checked)
