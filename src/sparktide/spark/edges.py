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
  due above ``cov`` (the watermark up to which it was added to closing windows) that
  share an instant with ``[start, end)`` — or that were due at or below the watermark
  governing its scope when the end edge came (``X``: only under ``accept`` can an end
  lie below it). An event still open at the end of the batch joins the windows due in
  ``(cov, governing]``, the ones closing now, and its ``cov`` moves up to ``governing``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

__all__ = ["edge_starts", "edges_schema", "ended_edges", "open_edges", "pair_edges"]

#: Columns of an open event besides its payload (scope, group values, aggregate inputs).
_ORDER = ("s", "a", "file", "line")


def edges_schema(decided: DataFrame, payload: list[str]) -> T.StructType:
    """The ``edges`` state table: timeline, id, ``cov``, the start's order columns and
    its payload, typed as in the judged batch."""
    types = {f.name: f for f in decided.schema.fields}
    fields = [
        T.StructField("tl", T.StringType()),
        T.StructField("eid", T.StringType()),
        T.StructField("cov", T.LongType()),
    ]
    fields += [T.StructField(name, types[name].dataType) for name in (*_ORDER, *payload)]
    return T.StructType(fields)


def pair_edges(
    decided: DataFrame, state: DataFrame, timeline: str, payload: list[str]
) -> DataFrame:
    """The judged batch with its edges paired, plus the open edges of ``state``.

    Rows from state have ``from_state`` set (they are not part of the batch: filter them
    out for everything but the windows). Adds ``k_eff`` (the kind of an edge that takes
    part: admitted by the policy, or open in state), ``opening``, ``ended`` (an end edge
    of the id follows) and ``o`` (for an end edge: the open event it ends), and turns
    duplicate, unmatched and empty edges into dead letters or drops."""
    batch = decided.withColumn("tl", F.col(timeline)).withColumn("from_state", F.lit(False))
    batch = batch.withColumn("cov", F.col("G"))  # windows due at or below it are closed
    kept = state.select(
        "*",
        F.lit("start").alias("edge"),
        F.lit(True).alias("from_state"),
    )
    rows = batch.unionByName(kept, allowMissingColumns=True)
    order = "PARTITION BY tl, eid ORDER BY from_state DESC, a, file, line"
    before = f"OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    after = f"OVER ({order} ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)"
    taking = "edge IS NOT NULL AND (from_state OR verdict IN ('accepted', 'adjusted'))"
    rows = rows.withColumn("k_eff", F.expr(f"CASE WHEN {taking} THEN edge END"))
    rows = rows.withColumn(
        "prev_open", F.expr(f"coalesce(last_value(k_eff, true) {before} = 'start', false)")
    )
    rows = rows.withColumn("opening", F.expr("coalesce(k_eff = 'start' AND NOT prev_open, false)"))
    event = ", ".join(f"{c} AS {c}" for c in ("cov", *_ORDER, *payload))
    rows = rows.withColumn(
        "o", F.expr(f"last_value(CASE WHEN opening THEN struct({event}) END, true) {before}")
    )
    rows = rows.withColumn(
        "ended",
        F.expr(f"coalesce(max(CASE WHEN k_eff = 'end' THEN true END) {after}, false)"),
    )
    duplicate = "(k_eff = 'start' AND prev_open)"
    unmatched = "(k_eff = 'end' AND NOT prev_open)"
    empty = "(k_eff = 'end' AND prev_open AND s <= o.s)"
    rows = rows.withColumn(
        "reason",
        F.expr(
            f"CASE WHEN {duplicate} THEN 'duplicate_edge' WHEN {unmatched} THEN "
            f"'unmatched_edge' WHEN {empty} THEN 'empty_edge' ELSE reason END"
        ),
    )
    return rows.withColumn(
        "verdict",
        F.expr(
            f"CASE WHEN {duplicate} OR {unmatched} THEN 'dead_lettered' WHEN {empty} THEN "
            "'dropped' ELSE verdict END"
        ),
    )


def ended_edges(paired: DataFrame, payload: list[str]) -> DataFrame:
    """Events an end edge of the batch ended: the open event's columns, ``e`` (the end)
    and ``X`` (the governing watermark when the end edge came). An empty one (``e`` at or
    before its start) is among them: under ``accept`` windows may have closed while it
    was open, and they count it."""
    ends = paired.filter("k_eff = 'end' AND prev_open")
    return ends.select(
        *(F.col(f"o.{c}").alias(c) for c in ("cov", *_ORDER, *payload)),
        F.col("s").alias("e"),
        F.col("G").alias("X"),
    )


def open_edges(paired: DataFrame, payload: list[str]) -> DataFrame:
    """Events still open at the end of the batch (from state or started in it)."""
    return paired.filter("opening AND NOT ended").select("tl", "eid", "cov", *_ORDER, *payload)


def edge_starts(
    *, size: int, period: int, offset: int, lateness: int, closed_end: bool, until: str | None
) -> str:
    """SQL: the starts of the grid windows an event from ``s`` joins now — due above
    ``cov``, sharing an instant with ``[s, +inf)``, and due at most ``until`` (an open
    event: the windows closing now) or, without ``until``, sharing an instant with
    ``[s, e)`` or due at most ``X`` (an ended event). The reference engine's
    :meth:`sparktide.core.windows.WindowOperator.edge_starts`, in SQL."""
    shift = 1 if closed_end else 0
    low = f"(greatest(s, cov - {lateness}) - {shift} - {size} + 1)"
    first = f"({low} + pmod({offset} - {low}, {period}))"
    if until is not None:
        high = f"({until} - {lateness + shift + size})"
    else:
        # (greatest skips nulls: an empty [s, e) shares no instant with any window)
        high = f"greatest(CASE WHEN e > s THEN e - 1 - {shift} END, X - {lateness + shift + size})"
    last = f"({high} - pmod({high} - {offset}, {period}))"
    return (
        f"CASE WHEN {first} <= {last} THEN sequence({first}, {last}, CAST({period} AS BIGINT)) "
        f"ELSE CAST(array() AS ARRAY<BIGINT>) END"
    )
