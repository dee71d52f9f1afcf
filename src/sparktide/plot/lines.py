"""The main panel's lines: the policy's guides, and each timeline's watermark as a step
line (the busiest timelines', and the job's for a merged job with several partitions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sparktide.job import Job
from sparktide.plot.data import ChartData
from sparktide.plot.layout import ChartFrame
from sparktide.plot.style import GUIDE_COLOUR, dates, line_colour
from sparktide.plot.texts import timeline_word

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["draw_guides", "draw_watermarks", "step_line"]


def draw_guides(ax: Axes, job: Job, frame: ChartFrame) -> list[Any]:
    """Event time = arrival time, and the late and early limits of the policy (in event
    time mode); their legend entries."""
    guide_x = dates(np.array([frame.x_low, frame.x_high], np.int64))
    ordering = job.ordering
    guides = [(0, "event time = arrival time", "-")]
    if ordering.late_arrival is not None and job.event_time_mode:
        guides.append((-ordering.late_arrival, "arrival − L: below is late", "--"))  # type: ignore[operator]
    if ordering.early_arrival is not None and job.event_time_mode:
        guides.append((ordering.early_arrival, "arrival + E: above is early", ":"))  # type: ignore[arg-type]
    handles = []
    for shift, label, dash in guides:
        ys = dates(np.array([frame.x_low + shift, frame.x_high + shift], np.int64))
        (line,) = ax.plot(guide_x, ys, color=GUIDE_COLOUR, lw=0.9, ls=dash, zorder=1, label=label)
        handles.append(line)
    return handles


def step_line(
    ax: Axes,
    xs: np.ndarray,
    ys: np.ndarray,
    x_end: int,
    *,
    colour: str,
    lw: float,
    label: str,
    alpha: float = 1.0,
) -> Any:
    """A watermark as a step function: each value holds until the next x, the last one
    until ``x_end``."""
    if x_end > xs[-1]:
        xs = np.append(xs, x_end)
        ys = np.append(ys, ys[-1])
    (line,) = ax.plot(
        dates(xs),
        dates(ys),
        drawstyle="steps-post",
        color=colour,
        lw=lw,
        alpha=alpha,
        zorder=3,
        label=label,
        rasterized=xs.size > 2_000,
    )
    return line


def draw_watermarks(ax: Axes, data: ChartData, frame: ChartFrame) -> tuple[list[Any], str]:
    """The watermark step lines, then the job's; their legend entries, and a note when
    only the busiest timelines are drawn."""
    what = timeline_word(data)
    width = 1.6 if data.size <= 2_000 else 1.1
    handles = []
    for number, (key, xs, ys) in enumerate(data.series):
        if xs.size == 0:
            continue
        colour = line_colour(number, len(data.series) == 1)
        label = "watermark" if data.timeline_count == 1 else f"watermark, {what} {key}"
        handles.append(step_line(ax, xs, ys, frame.x_high, colour=colour, lw=width, label=label))
    if data.job_series is not None and data.job_series[0].size:
        handles.append(
            step_line(
                ax,
                *data.job_series,
                frame.x_high,
                colour="#000000",
                lw=width + 2.5,
                alpha=0.25,
                label="job watermark (minimum over partitions)",
            )
        )
    note = ""
    if len(data.series) < data.timeline_count:
        note = (
            f"watermarks of the {len(data.series)} busiest of {data.timeline_count} {what}s drawn"
        )
    return handles, note
