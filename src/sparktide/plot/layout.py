"""A chart's figure and frame: one panel or two, the time ranges drawn, the date axes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sparktide.plot.data import MISSING, ChartData
from sparktide.plot.style import (
    CLIP_MAX_SHARE,
    CLIP_MIN_COUNT,
    LAG_PANEL_MIN,
    date_formatter,
    dates,
)
from sparktide.time import SECOND

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ChartFrame", "chart_frame", "finish_axes", "new_figure"]


@dataclass(frozen=True)
class ChartFrame:
    """The ranges a chart shows, integer microseconds, padded.

    Attributes
    ----------
    x_low, x_high
        The time across (arrival or processing time).
    y_low, y_high
        Event time and system timestamps, up.
    """

    x_low: int
    x_high: int
    y_low: int
    y_high: int


def new_figure(count: int) -> tuple[Figure, Axes, Axes | None]:
    """The figure for ``count`` events, its main panel, and the lag panel under it when
    there are more than :data:`~sparktide.plot.style.LAG_PANEL_MIN` events."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(13, 7.2), dpi=110, layout="constrained")
    lag: Axes | None = None
    if count > LAG_PANEL_MIN:
        figure.set_size_inches(13, 10)
        ax, lag = figure.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    else:
        ax = figure.add_subplot()
    return figure, ax, lag


def _y_range(data: ChartData, x_lo: int, x_hi: int) -> tuple[int, int]:
    """The natural event-time range: the x range, the system timestamps and watermarks."""
    parts = [np.array([x_lo, x_hi], np.int64)]
    for values in (data.timestamp, data.watermark):
        found = values[values != MISSING]
        if found.size:
            parts.append(np.array([found.min(), found.max()], np.int64))
    lo = min(int(p.min()) for p in parts)
    hi = max(int(p.max()) for p in parts)
    if data.size:
        inside = (data.event_time >= lo) & (data.event_time <= hi)
        outside = data.size - int(inside.sum())
        if outside > max(CLIP_MIN_COUNT, int(data.size * CLIP_MAX_SHARE)):
            lo = min(lo, int(data.event_time.min()))
            hi = max(hi, int(data.event_time.max()))
    return lo, hi


def _pad(lo: int, hi: int) -> tuple[int, int]:
    span = hi - lo
    pad = max(span // 20, SECOND)
    return lo - pad, hi + pad


def chart_frame(data: ChartData) -> ChartFrame:
    """The ranges to show: the events and watermark lines across; up, the natural range
    (far outliers left out when they are few: they are pinned to the edge)."""
    across = [data.x] + [xs for _, xs, _ in data.series if xs.size]
    if data.size:
        x_lo, x_hi = int(data.x.min()), max(int(a.max()) for a in across)
    else:
        x_lo = x_hi = 0
    x_lo, x_hi = _pad(x_lo, x_hi)
    y_lo, y_hi = _pad(*_y_range(data, x_lo, x_hi))
    return ChartFrame(x_lo, x_hi, y_lo, y_hi)


def finish_axes(ax: Axes, lag: Axes | None, frame: ChartFrame, time_across: str) -> None:
    """Limits, date ticks, labels and grid of the main panel (the time across,
    ``arrival`` or ``processing``, is named under the lowest panel)."""
    from matplotlib import dates as mdates

    ax.set_xlim(*dates(np.array([frame.x_low, frame.x_high], np.int64)))
    ax.set_ylim(*dates(np.array([frame.y_low, frame.y_high], np.int64)))
    for axis, offset in ((ax.xaxis, True), (ax.yaxis, False)):
        locator = mdates.AutoDateLocator(minticks=4, maxticks=10)
        axis.set_major_locator(locator)
        axis.set_major_formatter(date_formatter(locator, offset))
    (lag or ax).set_xlabel(f"{time_across} time (UTC)")
    if lag is not None:
        ax.tick_params(labelbottom=True)
    ax.set_ylabel("event time / system timestamp (UTC)")
    ax.grid(True, color="#dddddd", lw=0.6, zorder=0)
