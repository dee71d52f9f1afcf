"""The compiled loops of :mod:`sparktide.spark.windows.latescan`: session and sliding
groups replayed row by row, as the reference engine's
:class:`~sparktide.core.windows.SessionGroup` and
:class:`~sparktide.core.windows.SlidingGroup` close and insert (semantics §6.9).

Imported only by the Python workers that scan (it imports numba); compiled on first use
and cached on disk (:func:`sparktide.spark.jit.njit`).
"""

from __future__ import annotations

import numpy as np

from sparktide.core.instants import NEG_INF
from sparktide.spark.jit import njit

__all__ = ["session_scan", "sliding_scan"]

#: No value (a mark that is absent).
_NONE = NEG_INF


@njit
def _cut_after(start: int, m: int, offset: int) -> int:
    threshold = start + m
    return threshold - (threshold - offset) % m + m


@njit
def _session_end(start, last, gap, m, offset):
    """A session's end: ``gap`` after its last row, cut at ``max_duration``."""
    end = last + gap
    if m > 0:
        end = min(end, _cut_after(start, m, offset))
    return end


@njit
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


@njit
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


@njit
def _add_point(points, count, p):
    q = count
    while q > 0 and points[q - 1] > p:
        q -= 1
    if q > 0 and points[q - 1] == p:
        return count
    points[q + 1 : count + 1] = points[q:count].copy()
    points[q] = p
    return count + 1


@njit
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
