"""The lag panel, under the main one above :data:`~sparktide.plot.style.LAG_PANEL_MIN`
events: the same points and lines as their distance from the time across (event time −
arrival time, symmetric-log seconds). At 20,000 events the main panel is a diagonal;
this one shows the jitter, the late backlogs and each watermark's lag."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sparktide.job import Job
from sparktide.plot.data import MISSING, ChartData
from sparktide.plot.events import PlacedEvents, draw_events
from sparktide.plot.style import GUIDE_COLOUR, dates, line_colour
from sparktide.time import SECOND, format_duration

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["draw_lag_panel"]

#: Ticks of the lag panel, in seconds: 1 s, 10 s, 1 min, 10 min, 1 h, 1 d either side.
_LAG_TICKS = [sign * value for value in (86_400, 3_600, 600, 60, 10, 1) for sign in (-1, 1)] + [0]


def _seconds(values: np.ndarray) -> np.ndarray:
    return values / SECOND  # durations become floats only here, to be drawn


def _sawtooth(xs: np.ndarray, ys: np.ndarray, x_end: int) -> tuple[np.ndarray, np.ndarray]:
    """A step function ``ys`` (each value holding until the next x) minus x itself, as
    line vertices: it falls at slope −1 between steps."""
    nxt = np.append(xs[1:], max(int(xs[-1]), x_end))
    return np.stack([xs, nxt], 1).ravel(), np.stack([ys - xs, ys - nxt], 1).ravel()


def _draw_guides(ax: Axes, job: Job) -> None:
    """Zero lag, and the late and early limits of the policy (in event time mode)."""
    ordering = job.ordering
    ax.axhline(0, color=GUIDE_COLOUR, lw=0.9, zorder=1)
    if job.event_time_mode and ordering.late_arrival is not None:
        ax.axhline(-_seconds(ordering.late_arrival), color=GUIDE_COLOUR, lw=0.9, ls="--", zorder=1)  # type: ignore[arg-type]
    if job.event_time_mode and ordering.early_arrival is not None:
        ax.axhline(_seconds(ordering.early_arrival), color=GUIDE_COLOUR, lw=0.9, ls=":", zorder=1)  # type: ignore[arg-type]


def _draw_watermarks(ax: Axes, data: ChartData, rasterized: bool) -> None:
    """The watermark lines as lags; they stop at their last observation instant."""
    width = 1.1
    for number, (_, xs, ys) in enumerate(data.series):
        if xs.size:
            colour = line_colour(number, len(data.series) == 1)
            lx, ly = _sawtooth(xs, ys, int(xs[-1]))
            ax.plot(
                dates(lx), _seconds(ly), color=colour, lw=width, zorder=3, rasterized=rasterized
            )
    if data.job_series is not None and data.job_series[0].size:
        lx, ly = _sawtooth(*data.job_series, int(data.job_series[0][-1]))
        ax.plot(
            dates(lx),
            _seconds(ly),
            color="#000000",
            lw=width + 2.5,
            alpha=0.25,
            zorder=3,
            rasterized=rasterized,
        )


def draw_lag_panel(
    ax: Axes, job: Job, data: ChartData, style: dict[str, Any], time_across: str
) -> None:
    """The same events and watermarks, as their distance from the time across (seconds,
    symmetric-log): what a 20,000-event chart squeezes into one diagonal. The watermark
    lines stop at their last observation instant."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    stamp = np.where(data.timestamp != MISSING, data.timestamp, data.event_time)
    none = np.zeros(data.size, dtype=bool)
    placed = PlacedEvents(
        dates(data.x),
        _seconds(data.event_time - data.x),
        _seconds(stamp - data.x),
        none,
        none,
    )
    draw_events(ax, data, placed, style)
    _draw_guides(ax, job)
    _draw_watermarks(ax, data, style["rasterized"])
    ax.set_yscale("symlog", linthresh=1.0)
    ax.yaxis.set_major_locator(FixedLocator(_LAG_TICKS))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(
        FuncFormatter(lambda value, _: format_duration(round(value * SECOND)))
    )
    ax.set_ylabel(f"event time − {time_across} time\n(symlog; below 0: behind)")
    ax.grid(True, color="#dddddd", lw=0.6, zorder=0)
