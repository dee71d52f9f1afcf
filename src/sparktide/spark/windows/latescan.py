"""Session and sliding windows under ``on_out_of_order = "accept"``: which admitted rows
find every one of their windows closed (semantics §6.9), one compiled pass per scope.

Under ``accept`` an event may come below its scope's watermark. A grid window either
contains it or not, so :mod:`.assign` decides ``window_closed`` in closed form. A
session or sliding window depends on the rows that came before: whether an event still
finds an open session, or an open sliding point within ``size`` after it, depends on the
sessions and points as they stood when it arrived, and those depend on which earlier
events were themselves refused. So for these two kinds the engine replays the reference
engine's window group (:class:`sparktide.core.windows.SessionGroup`,
:class:`~sparktide.core.windows.SlidingGroup`) per ``(scope, group)``: before each of
the batch's admitted rows, in arrival order, the group closes what the row's governing
watermark allows; then the row joins its windows or is refused with the bounds the
reference reports. The loop is compiled by numba (no Python call per event) and runs
inside ``groupBy(scope).applyInArrow``, every group of the scope one segment of the
sorted arrays.

What the batch starts from comes from state: the open rows (sessions), or the open
sliding points (each kept row's ``t`` and ``t + size`` that the watermark at its
admission left open, :data:`ADMIT_WATERMARK`, above the group's ``emitted_until``),
and the marks' carry and last closed session. The windows themselves are still
computed at the end of the batch by :mod:`.rows` over the rows that were not refused:
a session or sliding point the reference closed within the batch holds exactly those
rows there too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparktide.core.instants import NEG_INF
from sparktide.core.windows.spec import window_due
from sparktide.spark.columns import (
    ADMITTED_KINDS,
    ARRIVAL_ORDER_SQL,
    CLOSED_WINDOW_END,
    CLOSED_WINDOW_START,
    FILE,
    GOVERNING_WATERMARK,
    LINE,
    REASON,
    SCOPE,
    SYSTEM_TIME,
    VERDICT,
)
from sparktide.spark.context import Context

__all__ = [
    "ADMIT_WATERMARK",
    "session_windows_scan",
    "sliding_windows_scan",
    "window_closed_rows",
]

#: A sliding window row's governing watermark when it was admitted: the points it
#: made and the results it counts in are those with a due above it.
ADMIT_WATERMARK = "admit_w"

#: The marks the passes read (:func:`sparktide.spark.windows.rows.marks_schema`).
_MARKS = ("carry_cut", "carry_last", "closed_start", "closed_until", "emitted_until")

#: No value (a mark that is absent).
_NONE = NEG_INF


def _jit_session_scan() -> Callable[..., Any]:
    """``session_scan``, compiled on first use (:mod:`.scanloops`)."""
    from sparktide.spark.windows.scanloops import session_scan  # (imports numba)

    return session_scan


def _jit_sliding_scan() -> Callable[..., Any]:
    """``sliding_scan``, compiled on first use (:mod:`.scanloops`)."""
    from sparktide.spark.windows.scanloops import sliding_scan  # (imports numba)

    return sliding_scan


def _ints(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name).cast(pa.int64())
    return column.fill_null(_NONE).to_numpy(zero_copy_only=False).astype(np.int64)


def session_windows_scan(
    table: pa.Table, *, gap: int, m: int, offset: int, closed: bool, due_offset: int
) -> np.ndarray:
    """The refused rows of one scope's session groups (``session_scan``): ``table``
    sorted by group, kind and order."""
    scan = _jit_session_scan()
    marks = np.stack(
        [_ints(table, c) for c in ("carry_cut", "carry_last", "closed_start", "closed_until")],
        axis=1,
    )
    return scan(
        _ints(table, "_gid"), _ints(table, "_kind"), _ints(table, SYSTEM_TIME),
        _ints(table, "_w"), marks, gap, m, offset, closed, due_offset,
    )  # fmt: skip


def sliding_windows_scan(table: pa.Table, *, size: int, due_offset: int) -> np.ndarray:
    """The refused rows of one scope's sliding groups (``sliding_scan``): ``table``
    sorted by group, kind and order."""
    scan = _jit_sliding_scan()
    return scan(
        _ints(table, "_gid"), _ints(table, "_kind"), _ints(table, SYSTEM_TIME),
        _ints(table, "_w"), _ints(table, "emitted_until"), size, due_offset,
    )  # fmt: skip


def _kernel(context: Context) -> Callable[[pa.Table], pa.Table]:
    """The per-scope function ``applyInArrow`` runs: the job's parameters bound."""
    w = context.window
    assert w is not None
    due_offset = window_due(0, context.lateness, context.closed_end)
    session = w.type == "session"
    gap, m, offset, size = w.gap or 0, w.max_duration or 0, w.offset, w.size or 0
    closed = context.closed_end

    def kernel(table: pa.Table) -> pa.Table:
        table = table.sort_by([("_gid", "ascending"), ("_kind", "ascending"), ("_rk", "ascending")])
        if table.num_rows == 0:
            bounds = np.empty((0, 2), np.int64)
        elif session:
            bounds = session_windows_scan(
                table, gap=gap, m=m, offset=offset, closed=closed, due_offset=due_offset
            )
        else:
            bounds = sliding_windows_scan(table, size=size, due_offset=due_offset)
        refused = bounds[:, 1] != _NONE
        return pa.table(
            {
                FILE: table.column(FILE).filter(pa.array(refused)),
                LINE: table.column(LINE).filter(pa.array(refused)),
                "_start": pa.array(bounds[refused, 0], pa.int64()),
                "_end": pa.array(bounds[refused, 1], pa.int64()),
            }
        )

    return kernel


def window_closed_rows(
    context: Context, rows: DataFrame, state: DataFrame, marks: DataFrame
) -> DataFrame:
    """``rows`` (the judged batch, with :data:`~.GOVERNING_WATERMARK`) with the admitted
    rows that find every session or sliding window of theirs closed dropped or
    dead-lettered for ``window_closed`` (semantics §6.9), their bounds in
    :data:`~.CLOSED_WINDOW_START` and :data:`~.CLOSED_WINDOW_END`. ``state`` holds
    the open rows of earlier batches, ``marks`` the groups' marks."""
    groups = context.groups
    keys = [SCOPE, *groups]
    admitted = f"{VERDICT} IN {tuple(ADMITTED_KINDS)} AND {SYSTEM_TIME} IS NOT NULL"
    fresh = rows.filter(admitted).select(
        *keys,
        FILE,
        LINE,
        SYSTEM_TIME,
        F.col(GOVERNING_WATERMARK).alias("_w"),
        F.lit(1).alias("_kind"),
        F.expr(f"row_number() OVER (PARTITION BY {', '.join(keys)} ORDER BY {ARRIVAL_ORDER_SQL})")
        .cast("long")
        .alias("_rk"),
    )
    kept_w = ADMIT_WATERMARK if ADMIT_WATERMARK in state.columns else None
    kept = state.select(
        *keys,
        FILE,
        LINE,
        SYSTEM_TIME,
        (F.col(kept_w) if kept_w else F.lit(NEG_INF).cast("long")).alias("_w"),
        F.lit(0).alias("_kind"),
        F.col(SYSTEM_TIME).alias("_rk"),
    )
    every = fresh.unionByName(kept)
    marked = marks.select(*(F.col(k).alias(f"_k{i}") for i, k in enumerate(keys)), *_MARKS)
    on = [F.col(k).eqNullSafe(F.col(f"_k{i}")) for i, k in enumerate(keys)]
    every = every.join(marked, on=on, how="left").drop(*(f"_k{i}" for i in range(len(keys))))
    order = ", ".join(f"{g} ASC NULLS FIRST" for g in groups)
    gid = f"dense_rank() OVER (PARTITION BY {SCOPE} ORDER BY {order})" if groups else "0"
    every = every.withColumn("_gid", F.expr(gid).cast("long"))
    schema = T.StructType(
        [
            T.StructField(FILE, rows.schema[FILE].dataType),
            T.StructField(LINE, rows.schema[LINE].dataType),
            T.StructField("_start", T.LongType()),
            T.StructField("_end", T.LongType()),
        ]
    )
    refused = every.groupBy(SCOPE).applyInArrow(_kernel(context), schema)
    w = context.window
    assert w is not None
    late = "'dead_lettered'" if w.late == "dead_letter" else "'dropped'"
    out = rows.join(refused, on=[FILE, LINE], how="left")
    hit = "_end IS NOT NULL"
    return (
        out.withColumn(REASON, F.expr(f"CASE WHEN {hit} THEN 'window_closed' ELSE {REASON} END"))
        .withColumn(VERDICT, F.expr(f"CASE WHEN {hit} THEN {late} ELSE {VERDICT} END"))
        .withColumn(CLOSED_WINDOW_START, F.expr(f"CASE WHEN {hit} THEN _start END"))
        .withColumn(CLOSED_WINDOW_END, F.expr(f"CASE WHEN {hit} THEN _end END"))
        .drop("_start", "_end")
    )
