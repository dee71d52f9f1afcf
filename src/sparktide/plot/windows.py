"""Windows on a chart: light horizontal bands, since windows are intervals of system time.

Tumbling and hopping windows show their grid; session, sliding and snapshot windows
the bounds of the windows the run emitted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sparktide.core.engine import Result
from sparktide.job import Job
from sparktide.plot.data import MISSING, instant
from sparktide.plot.layout import ChartFrame
from sparktide.plot.style import BAND_LIMIT, dates
from sparktide.plot.texts import window_text

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

    from sparktide.job import Window

__all__ = ["BAND_COLOUR", "draw_bands", "window_bands"]

#: The bands' colour.
BAND_COLOUR = "#4a6fa5"


def _grid_bands(window: Window, lo: int, hi: int) -> tuple[list[tuple[int, int]], str]:
    """Tumbling and hopping windows between ``lo`` and ``hi``: bands that do not overlap."""
    period: int = window.period  # type: ignore[assignment]
    size: int = window.size  # type: ignore[assignment]
    offset: int = window.offset  # type: ignore[assignment]
    first = (lo - offset - size) // period + 1
    last = (hi - offset) // period
    count = last - first + 1
    if count > BAND_LIMIT * (2 if window.type == "tumbling" else 1):
        return [], f"window grid too fine to draw ({count} windows)"
    bands = []
    if size == period:  # tumbling: every other window, so neighbours stay apart
        picked = [k for k in range(first, last + 1) if k % 2 == 0]
    elif size < period:  # hopping with gaps: every window
        picked = list(range(first, last + 1))
    else:  # overlapping hops: a subset of windows that do not overlap
        every = -(-size // period)
        picked = [k for k in range(first, last + 1) if k % every == 0]
    for k in picked:
        start = offset + k * period
        bands.append((start, start + size))
    return bands, ""


def _emitted_bands(result: Result, lo: int, hi: int) -> tuple[list[tuple[int, int]], str]:
    """The bounds of the windows the run emitted that reach between ``lo`` and ``hi``."""
    cache: dict[str, int] = {}
    seen: dict[tuple[int, int], None] = {}
    for record in result.windows:
        start = instant(record.get("window_start"), cache)
        end = instant(record.get("window_end"), cache)
        if start != MISSING and end != MISSING and end >= lo and start <= hi:
            seen[(start, end)] = None
    if len(seen) > BAND_LIMIT:
        return [], f"{len(seen)} windows: too many to draw"
    return list(seen), ""


def window_bands(job: Job, result: Result, lo: int, hi: int) -> tuple[list[tuple[int, int]], str]:
    """Bands (start, end) to shade, and a note when there were too many to draw."""
    window = job.window
    if window is None:
        return [], ""
    if window.period is not None:
        return _grid_bands(window, lo, hi)
    return _emitted_bands(result, lo, hi)


def draw_bands(ax: Axes, job: Job, result: Result, frame: ChartFrame) -> tuple[list[Any], str]:
    """Shade the window bands behind everything: the legend entry (if any were drawn),
    and the note when there were too many to draw."""
    from matplotlib.patches import Patch

    bands, note = window_bands(job, result, frame.y_low, frame.y_high)
    if not bands:
        return [], note
    for start, end in bands:
        low, high = dates(np.array([start, end], np.int64))
        if start == end:
            ax.axhline(low, color=BAND_COLOUR, alpha=0.25, lw=0.8, zorder=0)
        else:
            ax.axhspan(low, high, color=BAND_COLOUR, alpha=0.08, lw=0, zorder=0)
    return [Patch(color=BAND_COLOUR, alpha=0.2, label=window_text(job)[8:])], note
