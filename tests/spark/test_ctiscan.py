"""The compiled pass for generated CTIs (sparktide.spark.ctiscan), on hand-worked rows.

No Spark session: the kernel is a function of one timeline's Arrow table. The Spark
differential cases (``cti-generated-ahead-*``) check it against the reference engine."""

from __future__ import annotations

import pyarrow as pa

from sparktide.core.instants import NEG_INF
from sparktide.spark.ctiscan import scan_kernel

S = 1_000_000  # one second, microseconds


def _table(h, *, e=None, newest0=NEG_INF, n0=0, counted=None, rank=None):
    n = len(h)
    return pa.table(
        {
            "_tl": pa.array(["p"] * n),
            "_rk": pa.array(rank or list(range(1, n + 1)), pa.int32()),
            "h": pa.array(h, pa.int64()),
            "_counted": pa.array(counted or [True] * n),
            "_may": pa.array(counted or [True] * n),
            "e": pa.array(e or [None] * n, pa.int64()),
            "newest0": pa.array([newest0] * n, pa.int64()),
            "n0": pa.array([n0] * n, pa.int64()),
        }
    )


def _run(table, **params):
    kernel = scan_kernel(keys=("_tl", "_rk"), **params)
    return kernel(table).to_pydict()


def test_drop_three_seconds_ahead_after_every_event():
    """Each admitted event's CTI is 3 s above it: the next event must reach it."""
    out = _run(
        _table([0, 1 * S, 4 * S, 5 * S, 8 * S, 7 * S]),
        adjust=False,
        delay=-3 * S,
        every_events=1,
        every=None,
    )
    assert out["h"] == [0, NEG_INF, 4 * S, NEG_INF, 8 * S, NEG_INF]
    assert out["C"] == [NEG_INF, 3 * S, 3 * S, 7 * S, 7 * S, 11 * S]
    # every event is counted, but a CTI follows only where the newest timestamp exists
    assert out["gen"] == [True] * 6


def test_rows_come_back_in_arrival_order_whatever_order_they_arrive_in():
    table = _table([8 * S, 0, 4 * S], rank=[3, 1, 2])
    out = _run(table, adjust=False, delay=-5 * S, every_events=1, every=None)
    assert out["_rk"] == [1, 2, 3]
    assert out["h"] == [0, NEG_INF, 8 * S]  # 4 s is below the CTI at 5 s; 8 s is not


def test_adjust_with_period_ctis_carries_the_newest_timestamp_forward():
    """CTIs every 10 s, 4 s ahead: an adjusted event lands on the CTI and moves the newest
    timestamp with it; a CTI follows only an event that enters a later period."""
    out = _run(
        _table([1 * S, 2 * S, 12 * S, 3 * S, 15 * S], newest0=NEG_INF),
        adjust=True,
        delay=-4 * S,
        every_events=None,
        every=10 * S,
    )
    # 1 s: first event, CTI at 5 s; 2 s -> 5 s (same period, no CTI); 12 s: period 1,
    # CTI at 16 s; 3 s -> 16 s (period 1 still); 15 s -> 16 s
    assert out["h"] == [1 * S, 5 * S, 12 * S, 16 * S, 16 * S]
    assert out["gen"] == [True, False, True, False, False]
    assert out["C"] == [NEG_INF, 5 * S, 5 * S, 16 * S, 16 * S]


def test_adjust_drops_an_interval_its_segment_cti_reaches():
    """An interval whose start is adjusted up to its end or beyond moves nothing."""
    out = _run(
        _table([10 * S, 11 * S, 12 * S], e=[20 * S, 13 * S, 30 * S], newest0=5 * S, n0=1),
        adjust=True,
        delay=-3 * S,
        every_events=2,
        every=None,
    )
    # count 2 after the first row: CTI at 13 s; [11 s, 13 s) adjusted to 13 s: dropped;
    # 12 s -> 13 s (count 4: CTI at 16 s after it)
    assert out["h"] == [10 * S, NEG_INF, 13 * S]
    assert out["gen"] == [True, False, True]
    assert out["C"] == [NEG_INF, 13 * S, 13 * S]


def test_uncounted_rows_and_an_empty_group():
    """Explicit CTI rows are not counted and never carry a generated CTI."""
    out = _run(
        _table([NEG_INF, 1 * S, 2 * S], counted=[False, True, True]),
        adjust=False,
        delay=-2 * S,
        every_events=2,
        every=None,
    )
    assert out["gen"] == [False, False, True]
    empty = _run(_table([]), adjust=False, delay=-2 * S, every_events=1, every=None)
    assert empty == {"_tl": [], "_rk": [], "h": [], "gen": [], "C": []}
