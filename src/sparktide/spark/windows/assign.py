"""Window assignment in Spark SQL (semantics §6): the windows each admitted row belongs to
(:data:`~.WINDOW_STARTS`), those still open for it (:data:`~.OPEN_WINDOW_STARTS`), and
the events that come too late for every one of their windows (``window_closed``); edge
events' windows."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.core.windows import spec as reference
from sparktide.spark.columns import (
    ARRIVAL_ORDER,
    CLOSED_WINDOW_END,
    CLOSED_WINDOW_START,
    EDGE,
    EDGE_COVERED,
    EDGE_ID,
    EDGE_TIMELINE,
    END_TIME,
    GOVERNING_WATERMARK,
    OPEN_WINDOW_STARTS,
    PARTITION,
    REASON,
    SCOPE,
    SYSTEM_TIME,
    VERDICT,
    WINDOW_STARTS,
)
from sparktide.spark.context import Context
from sparktide.spark.edges import edge_starts, edges_schema, pair_edges
from sparktide.spark.sql import sql_string, with_columns

__all__ = [
    "assign_windows",
    "edge_payload",
    "edge_windows",
    "edges_columns",
    "paired_edges",
    "window_due",
    "windowed_rows",
]

#: A row that joins windows now (edges join windows as they close).
_ADMITTED = f"{SYSTEM_TIME} IS NOT NULL AND {EDGE} IS NULL"


def windowed_rows(context: Context) -> str:
    """SQL: whether a row is of an input the window reads: every one, but with a
    ``[join]`` of the window's records the join's ``left`` (semantics §7.12)."""
    job = context.job
    if not job.joins_windows:
        return "true"
    assert job.join is not None
    return f"(split({PARTITION}, '/')[0] <> {sql_string(job.join.left)})"


def window_due(context: Context, end: str) -> str:
    """SQL: the watermark at which a window ending at ``end`` closes (semantics §6.7): its
    end, plus the allowed lateness, plus one when the window includes its end
    (:func:`sparktide.core.windows.spec.window_due` gives the offset)."""
    return f"({end} + {reference.window_due(0, context.lateness, context.closed_end)})"


def assign_windows(context: Context, rows: DataFrame) -> DataFrame:
    """``rows`` with their windows (semantics §6.1, §6.4): :data:`~.WINDOW_STARTS`
    (every window of an admitted row), :data:`~.OPEN_WINDOW_STARTS` (those the governing
    watermark has not closed) and :data:`~.CLOSED_WINDOW_START` (the last window of a
    row none is open for: then it is dropped or dead-lettered for ``window_closed``; its
    end in :data:`~.CLOSED_WINDOW_END`).
    Session and sliding windows are formed later, from the rows
    (:mod:`sparktide.spark.windows.rows`)."""
    w = context.window
    starts, open_starts, governing = WINDOW_STARTS, OPEN_WINDOW_STARTS, GOVERNING_WATERMARK
    if w is None or w.type in ("session", "sliding"):
        no_starts, no_start = "CAST(NULL AS ARRAY<BIGINT>)", "CAST(NULL AS BIGINT)"
        return with_columns(
            rows,
            {
                starts: no_starts,
                open_starts: no_starts,
                CLOSED_WINDOW_START: no_start,
                CLOSED_WINDOW_END: no_start,
            },
        )
    candidates, end, one = _candidates(context)
    admitted = f"({_ADMITTED} AND {windowed_rows(context)})"
    rows = rows.withColumn(starts, F.expr(f"CASE WHEN {admitted} THEN {candidates} END"))
    if one:
        first_end = f"{starts}[0]" if w.type == "snapshot" else f"({starts}[0] + {w.size})"
        still_open = (
            f"CASE WHEN {starts} IS NULL THEN NULL "
            f"WHEN {window_due(context, first_end)} > {governing} THEN {starts} "
            "ELSE CAST(array() AS ARRAY<BIGINT>) END"
        )
    else:
        still_open = f"filter({starts}, x -> {window_due(context, end)} > {governing})"
    rows = rows.withColumn(open_starts, F.expr(still_open))
    closed = f"(size({starts}) > 0 AND size({open_starts}) = 0)"
    late = "'dead_lettered'" if w.late == "dead_letter" else "'dropped'"
    rows = rows.withColumn(
        REASON,
        F.expr(f"CASE WHEN {admitted} AND {closed} THEN 'window_closed' ELSE {REASON} END"),
    )
    rows = rows.withColumn(
        VERDICT,
        F.expr(f"CASE WHEN {REASON} = 'window_closed' THEN {late} ELSE {VERDICT} END"),
    )
    last = f"CASE WHEN {REASON} = 'window_closed' THEN element_at({starts}, -1) END"
    rows = rows.withColumn(CLOSED_WINDOW_START, F.expr(last))
    size = 0 if w.type == "snapshot" else w.size
    return rows.withColumn(CLOSED_WINDOW_END, F.expr(f"{CLOSED_WINDOW_START} + {size}"))


def _candidates(context: Context) -> tuple[str, str, bool]:
    """SQL of a row's window starts (from its system timestamp, and an interval's end),
    of a window's end from its start ``x``, and whether each row is in one window only."""
    w = context.window
    assert w is not None
    s, e = SYSTEM_TIME, END_TIME
    if w.type == "snapshot":
        return f"array({s})", "x", True
    size, period, offset = w.size, w.period, w.offset
    x = f"({s} - 1)" if context.closed_end else s
    last = f"({x} - pmod({x} - {offset}, {period}))"
    count = -(-size // period)  # ceil
    end = f"(x + {size})"
    if context.intervals:
        # an interval [s, e) is in every window sharing an instant with it
        shift = 1 if context.closed_end else 0
        low, high = f"({s} - {shift})", f"({e} - 1 - {shift})"
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
    return [SCOPE, *context.groups, *context.aggregate_inputs]


def edges_columns(context: Context) -> list[str]:
    """The columns of the ``edges`` state table, in order."""
    edge = [EDGE_TIMELINE, EDGE_ID, EDGE_COVERED]
    return [*edge, SYSTEM_TIME, *ARRIVAL_ORDER, *edge_payload(context)]


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
