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

import functools
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


@functools.cache
def _jit_cut_after() -> Callable[..., Any]:
    """``_cut_after`` compiled (numba is imported, and the loop compiled, on first use)."""
    import numba  # (slow to import: only the workers that scan pay it)

    @numba.njit(cache=False)
    def _cut_after(start: int, m: int, offset: int) -> int:
        threshold = start + m
        return threshold - (threshold - offset) % m + m

    return _cut_after


@functools.cache
def _jit_sessions() -> Callable[..., Any]:
    """``_sessions`` compiled (numba is imported, and the loop compiled, on first use)."""
    import numba  # (slow to import: only the workers that scan pay it)

    _cut_after = _jit_cut_after()

    @numba.njit(cache=False)
    def _session_end(start, last, gap, m, offset):
        """A session's end: ``gap`` after its last row, cut at ``max_duration``."""
        end = last + gap
        if m > 0:
            end = min(end, _cut_after(start, m, offset))
        return end

    @numba.njit(cache=False)
    def _sessions(ts, count, gap, m, offset, closed, carry_cut, carry_last, out):
        """Split the ``count`` sorted open rows into sessions (as
        :func:`sparktide.core.windows.session.session_windows`): ``out[k] = (start, end,
        first index, last index)``; returns how many."""
        n_out = 0
        start = last = 0
        first = -1
        for i in range(count):
            t = ts[i]
            if first < 0:
                start = t
                if carry_cut != _NONE:
                    joins = t - carry_last <= gap if closed else t - carry_last < gap
                    crosses = t > carry_cut if closed else t >= carry_cut
                    if joins and crosses:
                        start = carry_cut
                        while m > 0:
                            c = _cut_after(start, m, offset)
                            if not (t > c if closed else t >= c):
                                break
                            start = c
                first, last = i, t
                continue
            if (t - last <= gap) if closed else (t - last < gap):
                if m > 0:
                    c = _cut_after(start, m, offset)
                    if t > c if closed else t >= c:
                        out[n_out, 0], out[n_out, 1] = start, c
                        out[n_out, 2], out[n_out, 3] = first, i - 1
                        n_out += 1
                        start = c
                        while True:
                            c2 = _cut_after(start, m, offset)
                            if not (t > c2 if closed else t >= c2):
                                break
                            start = c2
                        first = i
                last = t
            else:
                out[n_out, 0], out[n_out, 1] = start, _session_end(start, last, gap, m, offset)
                out[n_out, 2], out[n_out, 3] = first, i - 1
                n_out += 1
                start, last, first = t, t, i
        if first >= 0:
            out[n_out, 0], out[n_out, 1] = start, _session_end(start, last, gap, m, offset)
            out[n_out, 2], out[n_out, 3] = first, count - 1
            n_out += 1
        return n_out

    return _sessions


@functools.cache
def _jit_session_scan() -> Callable[..., Any]:
    """``session_scan`` compiled (numba is imported, and the loop compiled, on first use)."""
    import numba  # (slow to import: only the workers that scan pay it)

    _sessions = _jit_sessions()

    @numba.njit(cache=False)
    def session_scan(seg, kind, s, w, marks, gap, m, offset, closed, due_offset):
        """Each segment (a group: its state rows, kind 0, then the batch's rows in
        arrival order, kind 1) through :class:`SessionGroup`'s ``close`` and
        ``insert``; ``marks[i]`` = (carry cut, carry last, last closed start, its end)
        of row i's group. Returns per row (refused start, refused end), ``_NONE`` for a
        row that joined a session."""
        n = s.shape[0]
        bounds = np.full((n, 2), _NONE, np.int64)
        ts = np.empty(n, np.int64)
        out = np.empty((n + 1, 4), np.int64)
        i = 0
        while i < n:
            j = i
            while j < n and seg[j] == seg[i]:
                j += 1
            carry_cut, carry_last = marks[i, 0], marks[i, 1]
            last_start, last_end = marks[i, 2], marks[i, 3]
            count = 0
            for r in range(i, j):
                t = s[r]
                if kind[r] == 0:  # an open row from state (the state rows come sorted)
                    ts[count] = t
                    count += 1
                    continue
                watermark = w[r]
                # close what the watermark allows (SessionGroup.close)
                k = _sessions(ts, count, gap, m, offset, closed, carry_cut, carry_last, out)
                consumed = 0
                for q in range(k):
                    if out[q, 1] + due_offset > watermark:
                        break
                    consumed = out[q, 3] + 1
                    before = ts[out[q, 3]]
                    if out[q, 1] < before + gap:
                        carry_cut, carry_last = out[q, 1], before
                    else:
                        carry_cut, carry_last = _NONE, _NONE
                    last_start, last_end = out[q, 0], out[q, 1]
                if consumed:
                    ts[: count - consumed] = ts[consumed:count].copy()
                    count -= consumed
                # insert (SessionGroup.insert)
                if last_end != _NONE and not (t > last_end if closed else t >= last_end):
                    bounds[r, 0], bounds[r, 1] = last_start, last_end
                    continue
                p = count
                while p > 0 and ts[p - 1] > t:
                    p -= 1
                ts[p + 1 : count + 1] = ts[p:count].copy()
                ts[p] = t
                count += 1
                k = _sessions(ts, count, gap, m, offset, closed, carry_cut, carry_last, out)
                for q in range(k):
                    if out[q, 2] <= p <= out[q, 3]:
                        if out[q, 1] + due_offset <= watermark:
                            bounds[r, 0], bounds[r, 1] = out[q, 0], out[q, 1]
                            ts[p : count - 1] = ts[p + 1 : count].copy()
                            count -= 1
                        break
            i = j
        return bounds

    return session_scan


@functools.cache
def _jit_add_point() -> Callable[..., Any]:
    """``_add_point`` compiled (numba is imported, and the loop compiled, on first use)."""
    import numba  # (slow to import: only the workers that scan pay it)

    @numba.njit(cache=False)
    def _add_point(points, count, p):
        q = count
        while q > 0 and points[q - 1] > p:
            q -= 1
        if q > 0 and points[q - 1] == p:
            return count
        points[q + 1 : count + 1] = points[q:count].copy()
        points[q] = p
        return count + 1

    return _add_point


@functools.cache
def _jit_sliding_scan() -> Callable[..., Any]:
    """``sliding_scan`` compiled (numba is imported, and the loop compiled, on first use)."""
    import numba  # (slow to import: only the workers that scan pay it)

    _add_point = _jit_add_point()

    @numba.njit(cache=False)
    def sliding_scan(seg, kind, s, w, emitted, size, due_offset):
        """Each segment (a group: its state rows, kind 0, then the batch's rows in
        arrival order, kind 1) through :class:`SlidingGroup`'s ``close`` and
        ``insert``; a state row brings the points its admission watermark ``w`` left
        open above the group's ``emitted`` point. Returns per row (refused start,
        refused end), ``_NONE`` for a row that joined a window."""
        n = s.shape[0]
        bounds = np.full((n, 2), _NONE, np.int64)
        points = np.empty(2 * n + 2, np.int64)
        i = 0
        while i < n:
            j = i
            while j < n and seg[j] == seg[i]:
                j += 1
            count = 0
            for r in range(i, j):
                t, watermark = s[r], w[r]
                if kind[r] == 0:
                    for p in (t, t + size):
                        if p + due_offset > watermark and p > emitted[r]:
                            count = _add_point(points, count, p)
                    continue
                drop = 0  # close what the watermark allows (SlidingGroup.close)
                while drop < count and points[drop] + due_offset <= watermark:
                    drop += 1
                if drop:
                    points[: count - drop] = points[drop:count].copy()
                    count -= drop
                enters = t + due_offset > watermark
                joins = enters
                for q in range(count):  # (every point left is open)
                    if t <= points[q] < t + size:
                        joins = True
                        break
                if not joins:
                    bounds[r, 0], bounds[r, 1] = t - size, t
                    continue
                if enters:
                    count = _add_point(points, count, t)
                if t + size + due_offset > watermark:
                    count = _add_point(points, count, t + size)
            i = j
        return bounds

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
