"""Generated CTIs that decide what moves the newest timestamp: one compiled pass per timeline.

A generated CTI sits at the newest timestamp minus ``delay`` (semantics §7). When it can be
above the newest timestamp (a negative delay), it changes which events move the newest
timestamp, and so the CTIs after it. The engine keeps the cases with a closed form in
Spark SQL (``docs/design.md``, *CTIs and interval events*); the others are sequential
recurrences:

* out-of-order events dropped or dead-lettered with a delay below ``-1us``: an event
  is admitted only at or above the CTI the last admitted events made;
* ``adjust`` with CTIs every period of application time: which events carry a CTI
  depends on where the adjusted events moved the newest timestamp;
* ``adjust`` with interval events: an interval is dropped when the CTI of its own
  segment reaches its end, and then moves nothing.

For these the engine groups the batch's rows by timeline and runs :func:`scan_table` on
each group inside ``applyInArrow``: a loop compiled by numba — the reference engine's
recurrence, a few nanoseconds per event, with no Python call per event. It gives each
row the value it moves the newest timestamp by (``h``), whether a CTI is generated after
it (``gen``) and the largest generated CTI before it (``C``); the SQL around it reads
those as it reads the closed forms' columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from sparktide.core.instants import NEG_INF
from sparktide.job import input_of
from sparktide.spark.columns import (
    END_TIME,
    EVENTS_AT_START,
    GENERATED_CTIS_BEFORE,
    GENERATES_CTI,
    NEWEST_AT_START,
    NEWEST_VALUE,
)

__all__ = ["SCAN_OUTPUT", "scan_kernel", "scan_table"]

#: What :func:`scan_table` returns for each row, besides the columns identifying it.
SCAN_OUTPUT = (
    (NEWEST_VALUE, pa.int64()),
    (GENERATES_CTI, pa.bool_()),
    (GENERATED_CTIS_BEFORE, pa.int64()),
)


def _compiled() -> Callable[..., Any]:
    """The compiled recurrence (:mod:`.ctiloop`, compiled on first use)."""
    from sparktide.spark.ctiloop import scan  # (imports numba)

    return scan


def scan_table(
    table: pa.Table,
    *,
    keys: tuple[str, ...],
    adjust: bool,
    delay: int,
    every_events: int | None,
    every: int | None,
) -> pa.Table:
    """One timeline's rows, in any order, with ``h``, ``gen`` and ``C`` (:data:`SCAN_OUTPUT`).

    Parameters
    ----------
    table
        The columns ``keys`` (which identify a row), ``_rk`` (its place in the
        timeline's arrival order), ``h`` (what it moves the newest timestamp by when no
        generated CTI stops it: ``NEG_INF`` for a row that moves nothing), ``_counted``
        (an event the CTIs every N events count), ``_may`` (an event a CTI may follow),
        ``e`` (an interval's end, or null), and ``newest0`` and ``n0`` (the timeline's
        newest timestamp and event count before the batch; the same on every row).
    keys
        The columns returned with the results.
    adjust
        Out-of-order events are adjusted (else dropped or dead-lettered).
    delay
        The generated CTIs' delay, microseconds (negative here).
    every_events, every
        One of them: CTIs every N events, or every period of application time.
    """
    if table.num_rows == 0:
        return pa.table(
            {**{k: table.column(k) for k in keys}, **{n: pa.array([], t) for n, t in SCAN_OUTPUT}}
        )
    table = table.sort_by("_rk")
    never = np.iinfo(np.int64).max  # (a point event has no end)
    end = table.column(END_TIME).fill_null(never).to_numpy(zero_copy_only=False).astype(np.int64)
    newest0 = table.column(NEWEST_AT_START)[0].as_py()  # (null: a partition new in this batch)
    moved, generated, ctis = _compiled()(
        table.column(NEWEST_VALUE).to_numpy(zero_copy_only=False).astype(np.int64),
        table.column("_counted").to_numpy(zero_copy_only=False).astype(np.bool_),
        table.column("_may").to_numpy(zero_copy_only=False).astype(np.bool_),
        end,
        NEG_INF if newest0 is None else int(newest0),
        int(table.column(EVENTS_AT_START)[0].as_py()),
        adjust,
        delay,
        every_events or 0,
        every or 0,
    )
    results = (moved, generated, ctis)
    return pa.table(
        {
            **{k: table.column(k) for k in keys},
            **{n: pa.array(v, t) for (n, t), v in zip(SCAN_OUTPUT, results, strict=True)},
        }
    )


def scan_kernel(
    *,
    keys: tuple[str, ...],
    adjust: bool,
    delay: int,
    every_events: int | None,
    every: int | None,
    by_input: dict[str, dict[str, Any]] | None = None,
) -> Callable[[pa.Table], pa.Table]:
    """:func:`scan_table` with the job's parameters bound, for ``applyInArrow`` (which
    reads its type hints to choose the whole-group form). ``by_input``: the parameters
    of each input with its own settings (semantics §7.8), chosen once per timeline by
    the input its id (``keys[0]``, ``<input>/<partition>``) names."""
    default = {"adjust": adjust, "delay": delay, "every_events": every_events, "every": every}
    inputs = by_input or {}

    def kernel(table: pa.Table) -> pa.Table:
        parameters = default
        if inputs and table.num_rows:
            timeline = table.column(keys[0])[0].as_py()
            parameters = inputs.get(input_of(timeline), default)
        return scan_table(table, keys=keys, **parameters)

    return kernel
