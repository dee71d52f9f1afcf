"""``[apply]`` in Spark SQL (semantics §11.18): the rule of :mod:`sparktide.core.apply`
over a judged batch, vectorised (``posexplode_outer`` of the array or of the record's
properties the value's variant holds; no Python per row).

The general plan judges each input event once; :func:`expanded_rows` then turns each
admitted row into one row per element or property, whose record variant
:data:`~sparktide.spark.columns.RECORD` holds the element under ``apply.name``, and only
then computes ``[filter]``, ``[select]`` and the windows' inputs over it
(:func:`~sparktide.spark.projections.add_record_columns`, :func:`row_inputs`).
With ``apply.outer`` (``OUTER APPLY``) an admitted row with nothing to expand stays one
row (:data:`PART` 0, flagged :data:`_EMPTY`) whose record holds null under ``apply.name``.
Every input event keeps one *counting* row (:data:`COUNTS`): its first element the
filter passes, else its first row; the counters, the keys and the dead letters read
those (:func:`counting_rows`), the windows and the release every row
(:func:`sink_rows`, whose line number places an event's elements in their order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.expr import EVENT_INPUT, ref_nodes
from sparktide.spark.columns import (
    ADMITTED_KINDS,
    ARRIVAL_ORDER_SQL,
    ERROR,
    LINE,
    PARTITION,
    REASON,
    RECORD,
    SYSTEM_TIME,
    VERDICT,
)
from sparktide.spark.expr import Compiled, record_field_names, variant_leaves
from sparktide.spark.projections import event_input_value
from sparktide.spark.sql import field, sql_string

if TYPE_CHECKING:
    from sparktide.spark.context import Context

__all__ = [
    "ADMITTED",
    "COUNTS",
    "PART",
    "counted",
    "counting_rows",
    "expanded_rows",
    "settled",
    "sink_rows",
    "with_member",
]

#: The element's or property's place in its event (``NULL`` for a row not expanded).
PART = "_part"
#: True on the one row of each input event the counters read.
COUNTS = "_counts"
_ELEMENT = "_elem"
#: True on the one row of an admitted event that ``OUTER APPLY`` found nothing to expand in.
_EMPTY = "_empty"
#: Places per input line for its elements in the sinks' order (:func:`sink_rows`).
_PLACES = 1 << 20
#: SQL: the row is an admitted event.
ADMITTED = f"{VERDICT} IN ({', '.join(sql_string(k) for k in ADMITTED_KINDS)})"


def _found(context: Context, frame: DataFrame) -> tuple[DataFrame, str]:
    """``frame`` with the columns computing ``apply.value``; SQL of its variant (a SQL
    ``NULL`` of type ``VARIANT`` when the value can only be a scalar)."""
    apply = context.job.apply
    assert apply is not None
    expr = apply.expression
    stages, leaves = variant_leaves("_yf", record_field_names([expr]), field)
    if EVENT_INPUT in ref_nodes(expr):  # (System.Input(), semantics §11.22)
        leaves[EVENT_INPUT.key] = event_input_value()
    compiled = Compiled("_ye", leaves)
    value = compiled.value(expr)
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    return compiled.apply(frame), value.v or "CAST(NULL AS VARIANT)"


def _pairs(function: str, v: str) -> str:
    """SQL of the array of what ``v`` expands into: its elements, or its properties as
    ``(key, value)`` structs in the order of their names (as the reference sorts them)."""
    if function == "elements":
        return f"try_variant_get({v}, '$', 'array<variant>')"
    entries = f"map_entries(try_variant_get({v}, '$', 'map<string,variant>'))"
    order = "(l, r) -> CASE WHEN l.key < r.key THEN -1 WHEN l.key > r.key THEN 1 ELSE 0 END"
    return f"array_sort({entries}, {order})"


def _nothing(function: str) -> str:
    """SQL of the one-element array an ``OUTER APPLY`` row explodes into (:func:`_pairs`'
    type, its element null)."""
    if function == "elements":
        return "array(CAST(NULL AS VARIANT))"
    return "array(CAST(NULL AS STRUCT<key: STRING, value: VARIANT>))"


def _record(context: Context) -> str:
    """SQL of an expanded row's record: its own fields with ``apply.name`` holding the
    element (``{ArrayIndex, ArrayValue}``) or the property (``{PropertyName,
    PropertyValue}``)."""
    apply = context.job.apply
    assert apply is not None
    index, value = apply.members
    if apply.function == "elements":
        made = f"named_struct('{index}', CAST({PART} AS BIGINT), '{value}', {_ELEMENT})"
    else:
        made = f"named_struct('{index}', {_ELEMENT}.key, '{value}', {_ELEMENT}.value)"
    held = f"CASE WHEN {_EMPTY} THEN parse_json('null') ELSE to_variant_object({made}) END"
    return with_member(apply.name, held)


def with_member(name: str, value: str) -> str:
    """SQL of a row's record with the variant ``value`` under ``name`` (replacing a field
    of that name)."""
    fields = f"try_variant_get({RECORD}, '$', 'map<string,variant>')"
    own = f"map_filter({fields}, (k, v) -> k <> {sql_string(name)})"
    return f"to_variant_object(map_concat({own}, map({sql_string(name)}, {value})))"


def settled(
    frame: DataFrame,
    record: str,
    none: str,
    columns: Callable[[DataFrame], DataFrame],
    scratch: tuple[str, ...],
) -> DataFrame:
    """Expanded rows (:data:`PART` null on a row not expanded) with their record
    (``record``: SQL of an expanded row's), an admitted row that became none dropped
    with reason ``none``, the ``scratch`` columns dropped; then ``columns`` over each
    row's record, and the record dropped but for malformed rows."""
    dropped = f"({ADMITTED} AND {PART} IS NULL)"
    frame = (
        frame.withColumn(
            RECORD, F.expr(f"CASE WHEN {PART} IS NULL THEN {RECORD} ELSE {record} END")
        )
        .withColumn(REASON, F.expr(f"CASE WHEN {dropped} THEN '{none}' ELSE {REASON} END"))
        .withColumn(SYSTEM_TIME, F.expr(f"CASE WHEN {dropped} THEN NULL ELSE {SYSTEM_TIME} END"))
        .withColumn(VERDICT, F.expr(f"CASE WHEN {dropped} THEN 'dropped' ELSE {VERDICT} END"))
        .drop(*scratch)
    )
    frame = columns(frame)
    return frame.withColumn(RECORD, F.expr(f"CASE WHEN {ERROR} IS NOT NULL THEN {RECORD} END"))


def expanded_rows(
    context: Context, judged: DataFrame, columns: Callable[[DataFrame], DataFrame]
) -> DataFrame:
    """The judged rows (their record variant kept) with each admitted row expanded: one
    row per element or property (:data:`PART` from 0), an admitted row that expands into
    none dropped with reason ``no_elements`` (kept as one row, with ``apply.outer``);
    then ``columns`` (the filter's verdict,
    ``[select]``, the windows' inputs) computed over each row's record, and the record
    dropped but for malformed rows."""
    apply = context.job.apply
    assert apply is not None
    frame, v = _found(context, judged)
    pairs = f"CASE WHEN {ADMITTED} THEN {_pairs(apply.function, v)} END"
    frame = frame.selectExpr(*(f"`{c}`" for c in judged.columns), f"{pairs} AS _pairs")
    if apply.outer:  # (one row, its element null, OUTER APPLY)
        empty = f"({ADMITTED} AND coalesce(size(_pairs), 0) < 1)"
        pairs = f"CASE WHEN {_EMPTY} THEN {_nothing(apply.function)} ELSE _pairs END"
        frame = frame.selectExpr("*", f"{empty} AS {_EMPTY}").withColumn("_pairs", F.expr(pairs))
    else:
        frame = frame.withColumn(_EMPTY, F.lit(False))
    frame = frame.select("*", F.posexplode_outer("_pairs").alias(PART, _ELEMENT))
    return settled(frame, _record(context), "no_elements", columns, ("_pairs", _ELEMENT, _EMPTY))


def counted(filtered: DataFrame) -> DataFrame:
    """Expanded rows after ``[filter]`` with :data:`COUNTS`: an input event counts once,
    on its first element the filter passes (it is admitted), else on its first row (it
    was dropped: ``filtered``, ``no_elements``, or by the policy)."""
    event = f"PARTITION BY {PARTITION}, {ARRIVAL_ORDER_SQL}"
    first = f"min(CASE WHEN {ADMITTED} THEN {PART} END) OVER ({event})"
    counts = f"coalesce({PART} = _first, _first IS NULL AND coalesce({PART}, 0) = 0)"
    return (
        filtered.withColumn("_first", F.expr(first))
        .withColumn(COUNTS, F.expr(counts))
        .drop("_first")
    )


def counting_rows(decided: DataFrame) -> DataFrame:
    """One row per input record: what the counters, the keys and the dead letters read."""
    return decided.filter(COUNTS)


def sink_rows(decided: DataFrame) -> DataFrame:
    """Every row, for the windows and the release: the line number scaled so that the
    elements of an event keep their order after it in the arrival order (ties in the
    release order and in the ordered aggregates), as the reference orders them."""
    return decided.withColumn(LINE, F.expr(f"{LINE} * {_PLACES} + coalesce({PART}, 0)"))
