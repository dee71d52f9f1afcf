"""The compiled loop of :mod:`sparktide.spark.ctiscan`: one timeline's generated CTIs
and what they let move the newest timestamp, row by row (semantics §7).

Imported only by the Python workers that scan (it imports numba); compiled on first use
and cached on disk (:func:`sparktide.spark.jit.njit`).
"""

from __future__ import annotations

import numpy as np

from sparktide.core.instants import NEG_INF
from sparktide.spark.jit import njit

__all__ = ["scan"]


@njit
def scan(
    h: np.ndarray,
    counted: np.ndarray,
    may_generate: np.ndarray,
    end: np.ndarray,
    newest0: int,
    n0: int,
    adjust: bool,
    delay: int,
    every_events: int,
    every: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One timeline's rows in arrival order through the generated CTIs (the parameters
    and results of :func:`sparktide.spark.ctiscan.scan_table`): per row what it moves
    the newest timestamp by, whether a CTI follows it, and the largest CTI before it."""
    n = h.shape[0]
    moved = np.empty(n, np.int64)
    generated = np.zeros(n, np.bool_)
    ctis = np.empty(n, np.int64)
    newest = newest0
    count = n0
    cti = NEG_INF
    for i in range(n):
        x = h[i]
        if x > NEG_INF:
            if adjust:
                if cti > x:
                    x = cti  # the start moves up to the CTI
                if x >= end[i]:
                    x = NEG_INF  # an interval adjusted to its end is dropped
            elif x < cti:
                x = NEG_INF  # out of order against the generated CTI
        ctis[i] = cti
        moved[i] = x
        after = newest if newest >= x else x
        if counted[i]:
            count += 1
        if may_generate[i] and after > NEG_INF:
            if every_events > 0:
                due = count % every_events == 0
            else:
                due = newest == NEG_INF or after // every > newest // every
            if due:
                generated[i] = True
                if after - delay > cti:
                    cti = after - delay
        newest = after
    return moved, generated, ctis
