"""Window assignment in Spark SQL (semantics §6): the windows each admitted row belongs to
(``starts``), those still open for it (``open_starts``), and the events that come too
late for every one of their windows (``window_closed``); edge events' windows."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.core.windows import spec as reference
from sparktide.spark.context import Context
from sparktide.spark.edges import edge_starts, edges_schema, pair_edges

__all__ = [
    "assign_windows",
    "edge_payload",
    "edge_windows",
    "edges_columns",
    "paired_edges",
    "window_due",
]

#: A row that joins windows now (edges join windows as they close).
_ADMITTED = "s IS NOT NULL AND edge IS NULL"


def window_due(context: Context, end: str) -> str:
    """SQL: the watermark at which a window ending at ``end`` closes (semantics §6.7): its
    end, plus the allowed lateness, plus one when the window includes its end
    (:func:`sparktide.core.windows.spec.window_due` gives the offset)."""
    return f"({end} + {reference.window_due(0, context.lateness, context.closed_end)})"


def assign_windows(context: Context, rows: DataFrame) -> DataFrame:
    """``rows`` with their windows: ``starts`` (every window of an admitted row),
    ``open_starts`` (those the governing watermark ``G`` has not closed) and
    ``closed_start`` (the last window of a row none is open for: then it is dropped
    or dead-lettered for ``window_closed``). Session and sliding windows are formed
    later, from the rows (:mod:`sparktide.spark.windows.rows`)."""
    w = context.window
    if w is None or w.type in ("session", "sliding"):
        rows = rows.withColumn("starts", F.expr("CAST(NULL AS ARRAY<BIGINT>)"))
        rows = rows.withColumn("open_starts", F.col("starts"))
        return rows.withColumn("closed_start", F.lit(None).cast("bigint"))
    candidates, end, one = _candidates(context)
    rows = rows.withColumn("starts", F.expr(f"CASE WHEN {_ADMITTED} THEN {candidates} END"))
    if one:
        first_end = "starts[0]" if w.type == "snapshot" else f"(starts[0] + {w.size})"
        open_starts = (
            f"CASE WHEN starts IS NULL THEN NULL WHEN {window_due(context, first_end)} > G THEN "
            "starts ELSE CAST(array() AS ARRAY<BIGINT>) END"
        )
    else:
        open_starts = f"filter(starts, x -> {window_due(context, end)} > G)"
    rows = rows.withColumn("open_starts", F.expr(open_starts))
    closed = "(size(starts) > 0 AND size(open_starts) = 0)"
    late = "'dead_lettered'" if w.late == "dead_letter" else "'dropped'"
    rows = rows.withColumn(
        "reason",
        F.expr(f"CASE WHEN {_ADMITTED} AND {closed} THEN 'window_closed' ELSE reason END"),
    )
    rows = rows.withColumn(
        "verdict",
        F.expr(f"CASE WHEN reason = 'window_closed' THEN {late} ELSE verdict END"),
    )
    return rows.withColumn(
        "closed_start",
        F.expr("CASE WHEN reason = 'window_closed' THEN element_at(starts, -1) END"),
    )


def _candidates(context: Context) -> tuple[str, str, bool]:
    """SQL of a row's window starts (``s`` its timestamp, ``e`` an interval's end), of
    a window's end from its start ``x``, and whether each row is in one window only."""
    w = context.window
    assert w is not None
    if w.type == "snapshot":
        return "array(s)", "x", True
    size, period, offset = w.size, w.period, w.offset
    x = "(s - 1)" if context.closed_end else "s"
    last = f"({x} - pmod({x} - {offset}, {period}))"
    count = -(-size // period)  # ceil
    end = f"(x + {size})"
    if context.intervals:
        # an interval [s, e) is in every window sharing an instant with it
        shift = 1 if context.closed_end else 0
        low, high = f"(s - {shift})", f"(e - 1 - {shift})"
        first = f"({low} - pmod({low} - {offset}, {period}) - {count - 1} * {period})"
        final = f"({high} - pmod({high} - {offset}, {period}))"
        return (
            f"filter(sequence({first}, {final}, {period}), st -> st + {size} > {low})",
            end,
            False,
        )
    if size == period:  # one window per event; no lambda: those are interpreted, not compiled
        return f"array({last})", end, True
    candidates = (
        f"filter(transform(sequence({count - 1}, 0, -1), k -> {last} - k * {period}), "
        f"st -> st + {size} > {x})"
    )
    return candidates, end, False


def edge_payload(context: Context) -> list[str]:
    """What an open edge event keeps: its scope, group values and aggregate inputs."""
    return ["scope", *context.groups, *context.aggregate_inputs]


def edges_columns(context: Context) -> list[str]:
    """The columns of the ``edges`` state table, in order."""
    return ["tl", "eid", "cov", "s", "a", "file", "line", *edge_payload(context)]


def paired_edges(context: Context, decided: DataFrame, previous: int | None) -> DataFrame:
    """Edge events: the batch's edges paired with each other and with the open ones
    in state (:func:`sparktide.spark.edges.pair_edges`)."""
    payload = edge_payload(context)
    schema = edges_schema(decided, payload)
    state = context.store.load_table(previous, "edges", schema)
    return pair_edges(decided, state, context.timeline.column, payload)


def edge_windows(context: Context, edges: DataFrame, until: str | None) -> DataFrame:
    """``edges`` exploded into the windows they join now (``start``)."""
    w = context.window
    assert w is not None
    starts = edge_starts(
        size=w.size,  # type: ignore[arg-type]
        period=w.period,
        offset=w.offset,  # type: ignore[arg-type]
        lateness=context.lateness,
        closed_end=context.closed_end,
        until=until,
    )
    return edges.select("*", F.explode(F.expr(starts)).alias("start"))
