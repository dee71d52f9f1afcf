"""Edge events on Spark (semantics §7, ``docs/punctuation.md``, ``docs/design.md``).

A start edge opens an event whose end is not known yet; the end edge with the same id
(on the same timeline) ends it. The reference engine adds an open event to every window
that closes while it is open (those windows share an instant with ``[start, +inf)``),
and an end edge adds it to the windows still open that share an instant with
``[start, end)``. Here the same happens per micro-batch, in SQL:

* **Pairing** (:func:`pair_edges`): the batch's admitted edges and the open edges kept
  in state (``edges``, one row per open event) are ordered per ``(timeline, id)`` in
  arrival order. After a start edge the id is open, after an end edge it is not — so
  whether an id is open before a row is just "the previous edge of that id was a start"
  (one window function), and the event an end edge ends is the last *opening* start
  before it (a start whose id was not open). A start whose id is open is
  ``duplicate_edge``, an end whose id is not open ``unmatched_edge`` (both
  dead-lettered), an end at or before its start ``empty_edge`` (dropped).
* **Windows** (:func:`edge_starts`): an event ended in the batch joins the grid windows
  due above ``cov`` (:data:`~.EDGE_COVERED`, the watermark up to which it was added to
  closing windows) that share an instant with ``[start, end)`` — or that were due at or
  below the watermark governing its scope when the end edge came
  (:data:`~.EDGE_GOVERNING_AT_END`: only under ``accept`` can an end lie below it). An
  event still open at the end of the batch joins the windows due in
  ``(cov, governing]``, the ones closing now, and its ``cov`` moves up to ``governing``.

The column names are :mod:`sparktide.spark.columns`' (``EDGE_*``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparktide.spark.columns import (
    ADMITTED_KINDS,
    ARRIVAL_ORDER,
    ARRIVAL_ORDER_SQL,
    EDGE,
    EDGE_COVERED,
    EDGE_ENDED,
    EDGE_FROM_STATE,
    EDGE_GOVERNING_AT_END,
    EDGE_ID,
    EDGE_OPEN_BEFORE,
    EDGE_OPENED_BY,
    EDGE_OPENING,
    EDGE_TAKING_PART,
    EDGE_TIMELINE,
    END_TIME,
    GOVERNING_WATERMARK,
    REASON,
    SYSTEM_TIME,
    VERDICT,
)

__all__ = ["edge_starts", "edges_schema", "ended_edges", "open_edges", "pair_edges"]

#: Columns of an open event besides its payload (scope, group values, aggregate inputs).
_ORDER = (SYSTEM_TIME, *ARRIVAL_ORDER)


def edges_schema(decided: DataFrame, payload: list[str]) -> T.StructType:
    """The ``edges`` state table: timeline, id, ``cov``, the start's order columns and
    its payload, typed as in the judged batch."""
    types = {f.name: f for f in decided.schema.fields}
    fields = [
        T.StructField(EDGE_TIMELINE, T.StringType()),
        T.StructField(EDGE_ID, T.StringType()),
        T.StructField(EDGE_COVERED, T.LongType()),
    ]
    fields += [T.StructField(name, types[name].dataType) for name in (*_ORDER, *payload)]
    return T.StructType(fields)


def pair_edges(
    decided: DataFrame, state: DataFrame, timeline: str, payload: list[str]
) -> DataFrame:
    """The judged batch with its edges paired, plus the open edges of ``state``.

    Rows from state have :data:`~.EDGE_FROM_STATE` set (they are not part of the batch:
    filter them out for everything but the windows). Adds :data:`~.EDGE_TAKING_PART`
    (the kind of an edge that takes part: admitted by the policy, or open in state),
    :data:`~.EDGE_OPENING`, :data:`~.EDGE_ENDED` (an end edge of the id follows) and
    :data:`~.EDGE_OPENED_BY` (for an end edge: the open event it ends), and turns
    duplicate, unmatched and empty edges into dead letters or drops."""
    kind, was_open, opener = EDGE_TAKING_PART, EDGE_OPEN_BEFORE, EDGE_OPENED_BY
    batch = decided.withColumn(EDGE_TIMELINE, F.col(timeline))
    batch = batch.withColumn(EDGE_FROM_STATE, F.lit(False))
    # windows due at or below the governing watermark are closed
    batch = batch.withColumn(EDGE_COVERED, F.col(GOVERNING_WATERMARK))
    kept = state.select(
        "*",
        F.lit("start").alias(EDGE),
        F.lit(True).alias(EDGE_FROM_STATE),
    )
    rows = batch.unionByName(kept, allowMissingColumns=True)
    order = (
        f"PARTITION BY {EDGE_TIMELINE}, {EDGE_ID} "
        f"ORDER BY {EDGE_FROM_STATE} DESC, {ARRIVAL_ORDER_SQL}"
    )
    before = f"OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    after = f"OVER ({order} ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)"
    admitted = ", ".join(f"'{verdict}'" for verdict in ADMITTED_KINDS)
    taking = f"{EDGE} IS NOT NULL AND ({EDGE_FROM_STATE} OR {VERDICT} IN ({admitted}))"
    rows = rows.withColumn(kind, F.expr(f"CASE WHEN {taking} THEN {EDGE} END"))
    rows = rows.withColumn(
        was_open, F.expr(f"coalesce(last_value({kind}, true) {before} = 'start', false)")
    )
    opening = f"coalesce({kind} = 'start' AND NOT {was_open}, false)"
    rows = rows.withColumn(EDGE_OPENING, F.expr(opening))
    event = ", ".join(f"{c} AS {c}" for c in (EDGE_COVERED, *_ORDER, *payload))
    opened = f"CASE WHEN {EDGE_OPENING} THEN struct({event}) END"
    rows = rows.withColumn(opener, F.expr(f"last_value({opened}, true) {before}"))
    rows = rows.withColumn(
        EDGE_ENDED,
        F.expr(f"coalesce(max(CASE WHEN {kind} = 'end' THEN true END) {after}, false)"),
    )
    duplicate = f"({kind} = 'start' AND {was_open})"
    unmatched = f"({kind} = 'end' AND NOT {was_open})"
    empty = f"({kind} = 'end' AND {was_open} AND {SYSTEM_TIME} <= {opener}.{SYSTEM_TIME})"
    rows = rows.withColumn(
        REASON,
        F.expr(
            f"CASE WHEN {duplicate} THEN 'duplicate_edge' WHEN {unmatched} THEN "
            f"'unmatched_edge' WHEN {empty} THEN 'empty_edge' ELSE {REASON} END"
        ),
    )
    return rows.withColumn(
        VERDICT,
        F.expr(
            f"CASE WHEN {duplicate} OR {unmatched} THEN 'dead_lettered' WHEN {empty} THEN "
            f"'dropped' ELSE {VERDICT} END"
        ),
    )


def ended_edges(paired: DataFrame, payload: list[str]) -> DataFrame:
    """Events an end edge of the batch ended: the open event's columns, its end
    (:data:`~.END_TIME`) and the governing watermark when the end edge came
    (:data:`~.EDGE_GOVERNING_AT_END`). An empty one (ending at or before its start) is
    among them: under ``accept`` windows may have closed while it was open, and they
    count it."""
    ends = paired.filter(f"{EDGE_TAKING_PART} = 'end' AND {EDGE_OPEN_BEFORE}")
    return ends.select(
        *(F.col(f"{EDGE_OPENED_BY}.{c}").alias(c) for c in (EDGE_COVERED, *_ORDER, *payload)),
        F.col(SYSTEM_TIME).alias(END_TIME),
        F.col(GOVERNING_WATERMARK).alias(EDGE_GOVERNING_AT_END),
    )


def open_edges(paired: DataFrame, payload: list[str]) -> DataFrame:
    """Events still open at the end of the batch (from state or started in it)."""
    still_open = paired.filter(f"{EDGE_OPENING} AND NOT {EDGE_ENDED}")
    return still_open.select(EDGE_TIMELINE, EDGE_ID, EDGE_COVERED, *_ORDER, *payload)


def edge_starts(
    *, size: int, period: int, offset: int, lateness: int, closed_end: bool, until: str | None
) -> str:
    """SQL: the starts of the grid windows an event from its start ``s`` joins now
    (semantics §7.6) — due above ``cov``, sharing an instant with ``[s, +inf)``, and due
    at most ``until`` (an open event: the windows closing now) or, without ``until``,
    sharing an instant with ``[s, e)`` or due at most ``X`` (an ended event). The
    reference engine's :func:`sparktide.core.windows.spec.edge_starts`, in SQL."""
    s, e, covered = SYSTEM_TIME, END_TIME, EDGE_COVERED
    shift = 1 if closed_end else 0
    low = f"(greatest({s}, {covered} - {lateness}) - {shift} - {size} + 1)"
    first = f"({low} + pmod({offset} - {low}, {period}))"
    if until is not None:
        high = f"({until} - {lateness + shift + size})"
    else:
        # (greatest skips nulls: an empty [s, e) shares no instant with any window)
        ended = f"CASE WHEN {e} > {s} THEN {e} - 1 - {shift} END"
        high = f"greatest({ended}, {EDGE_GOVERNING_AT_END} - {lateness + shift + size})"
    last = f"({high} - pmod({high} - {offset}, {period}))"
    return (
        f"CASE WHEN {first} <= {last} THEN sequence({first}, {last}, CAST({period} AS BIGINT)) "
        f"ELSE CAST(array() AS ARRAY<BIGINT>) END"
    )
