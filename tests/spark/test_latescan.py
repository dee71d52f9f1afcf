"""The compiled passes of session and sliding windows under ``accept``
(sparktide.spark.windows.latescan) against the reference engine's window groups.

No Spark session: a pass is a function of one scope's Arrow table. Each example is a
group's rows in arrival order with the governing watermark at each (never decreasing),
split at a random point into "state" (rows a previous batch kept open) and "batch"; the
pass must refuse exactly the rows the reference group refuses, with the same bounds.
The Spark differential cases (``*-accept-session*``, ``*-accept-sliding*``) check the
whole engine."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.core.instants import NEG_INF
from sparktide.core.windows.session import SessionGroup
from sparktide.core.windows.sliding import SlidingGroup
from sparktide.core.windows.spec import WindowSpec
from sparktide.job import Window
from sparktide.job.window import Aggregate
from sparktide.spark.windows.latescan import session_windows_scan, sliding_windows_scan

S = 1_000_000
COUNT = (Aggregate("n", "count"),)


@st.composite
def _arrivals(draw):
    """Rows (ts, watermark) in arrival order: times on a coarse grid (ties and exact
    boundaries), watermarks that never decrease and often pass the rows."""
    n = draw(st.integers(1, 14))
    rows, w = [], -10 * S
    for _ in range(n):
        w += draw(st.sampled_from([0, 0, 1, S, 2 * S, 5 * S]))
        ts = draw(st.integers(-8, 30)) * S + draw(st.sampled_from([0, 0, 1, -1]))
        rows.append((ts, w))
    return rows


def _reference(group, rows, split):
    """The reference group: rows before ``split`` inserted (the state), then the batch's
    rows closed and inserted one by one. Returns (bounds of each batch row, the group's
    open state at the split)."""
    refused = []
    for i, (ts, w) in enumerate(rows):
        group.close(w)
        outcome = group.insert(ts, (ts, i, i), {}, w, None)
        if i >= split:
            refused.append(outcome[1:] if isinstance(outcome, tuple) else None)
    return refused


def _session_table(spec, rows, split):
    """The pass's input: the reference's open rows and marks at ``split`` as state, then
    the batch's rows."""
    group = SessionGroup(spec)
    for i, (ts, w) in enumerate(rows[:split]):
        group.close(w)
        group.insert(ts, (ts, i, i), {}, w, None)
    if split:
        group.close(rows[split - 1][1])  # (the previous batch ended at its watermark)
    state = sorted(r[0] for r in group._rows)
    carry = group._carry or (None, None)
    last = group._last_closed or (None, None)
    batch = rows[split:]
    n = len(state) + len(batch)
    return group, pa.table(
        {
            "_gid": [0] * n,
            "_kind": [0] * len(state) + [1] * len(batch),
            "_rk": list(range(n)),
            "s": pa.array(state + [ts for ts, _ in batch], pa.int64()),
            "_w": pa.array([NEG_INF] * len(state) + [w for _, w in batch], pa.int64()),
            "carry_cut": pa.array([carry[0]] * n, pa.int64()),
            "carry_last": pa.array([carry[1]] * n, pa.int64()),
            "closed_start": pa.array([last[0]] * n, pa.int64()),
            "closed_until": pa.array([last[1]] * n, pa.int64()),
        }
    )


def _refused(bounds, offset):
    return [None if b[1] == NEG_INF else (int(b[0]), int(b[1])) for b in bounds[offset:]]


@settings(max_examples=150, deadline=None)
@given(
    _arrivals(),
    st.data(),
    st.sampled_from(["start", "end"]),
    st.sampled_from([None, 4 * S, 7 * S]),
    st.sampled_from([0, 2 * S]),
)
def test_session_pass_refuses_what_the_reference_refuses(rows, data, boundary, cap, lateness):
    window = Window(
        type="session",
        gap=3 * S,
        max_duration=cap,
        boundary=boundary,
        allowed_lateness=lateness,
        aggregates=COUNT,
    )
    spec = WindowSpec(window)
    split = data.draw(st.integers(0, len(rows)))
    _, table = _session_table(spec, rows, split)
    want = _reference(SessionGroup(spec), rows, split)
    bounds = session_windows_scan(
        table,
        gap=spec.gap,
        m=spec.max_duration,
        offset=spec.offset,
        closed=spec.closed_end,
        due_offset=spec.due(0),
    )
    state = table.num_rows - (len(rows) - split)
    assert _refused(bounds, state) == want


@settings(max_examples=150, deadline=None)
@given(_arrivals(), st.data(), st.sampled_from([0, 2 * S]))
def test_sliding_pass_refuses_what_the_reference_refuses(rows, data, lateness):
    window = Window(type="sliding", size=5 * S, allowed_lateness=lateness, aggregates=COUNT)
    spec = WindowSpec(window)
    split = data.draw(st.integers(0, len(rows)))
    want = _reference(SlidingGroup(spec), rows, split)
    # the state as the Spark engine keeps it: every admitted row with its admission
    # watermark, and the last point emitted at the end of the previous batch
    group, kept, emitted = SlidingGroup(spec), [], NEG_INF
    for i, (ts, w) in enumerate(rows[:split]):
        group.close(w)
        if not isinstance(group.insert(ts, (ts, i, i), {}, w, None), tuple):
            kept.append((ts, w))
    if split:
        end = rows[split - 1][1]
        points = sorted({p for ts, w in kept for p in (ts, ts + spec.size) if spec.due(p) > w})
        emitted = max([p for p in points if spec.due(p) <= end], default=NEG_INF)
    batch = rows[split:]
    n = len(kept) + len(batch)
    table = pa.table(
        {
            "_gid": [0] * n,
            "_kind": [0] * len(kept) + [1] * len(batch),
            "_rk": list(range(n)),
            "s": pa.array([ts for ts, _ in kept] + [ts for ts, _ in batch], pa.int64()),
            "_w": pa.array([w for _, w in kept] + [w for _, w in batch], pa.int64()),
            "emitted_until": pa.array([emitted] * n, pa.int64()),
        }
    )
    bounds = sliding_windows_scan(table, size=spec.size, due_offset=spec.due(0))
    assert _refused(bounds, len(kept)) == want
