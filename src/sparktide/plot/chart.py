"""Drawing a chart: the named steps, in the order their layers are laid down."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparktide.core.engine import Result
from sparktide.job import Job
from sparktide.plot.data import ChartData
from sparktide.plot.events import (
    draw_events,
    label_seqs,
    mark_off_chart,
    place_events,
    verdict_handles,
)
from sparktide.plot.lag import draw_lag_panel
from sparktide.plot.layout import chart_frame, finish_axes, new_figure
from sparktide.plot.lines import draw_guides, draw_watermarks
from sparktide.plot.style import marker_style
from sparktide.plot.texts import add_legend, title_text
from sparktide.plot.windows import draw_bands

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_chart"]


def _say_empty(ax: Axes) -> None:
    ax.text(
        0.5,
        0.5,
        "no well-formed events to draw",
        transform=ax.transAxes,
        ha="center",
        va="center",
        color="#555555",
    )


def draw_chart(
    job: Job,
    data: ChartData,
    result: Result,
    *,
    title: str | None = None,
    x: str = "arrival",
) -> Figure:
    """Draw the chart of a run and return the matplotlib figure (not shown, not saved).

    Parameters
    ----------
    job
        The job that was run (its policy and window go into the title and the bands).
    data
        From :func:`~sparktide.plot.explain_run`.
    result
        The run's result (emitted windows, for session, sliding and snapshot bands).
    title
        First line of the title (e.g. the job file's name).
    x
        ``arrival`` or ``processing``: the time across (as given to
        :func:`~sparktide.plot.explain_run`).
    """
    count = data.size
    figure, ax, lag = new_figure(count)
    frame = chart_frame(data)
    style = marker_style(count)
    handles: list[Any] = []
    bands, band_note = draw_bands(ax, job, result, frame)  # behind everything
    handles += bands
    if count and (x == "arrival" or job.source.processing_time is None):
        handles += draw_guides(ax, job, frame)
    lines, timeline_note = draw_watermarks(ax, data, frame)
    handles += lines
    placed = place_events(data, frame)
    draw_events(ax, data, placed, style)
    handles += verdict_handles(data)
    label_seqs(ax, data, placed)
    handles += mark_off_chart(ax, data, placed)
    if lag is not None:
        draw_lag_panel(lag, job, data, style, x)
    if not count:
        _say_empty(ax)
    finish_axes(ax, lag, frame, x)
    ax.set_title(title_text(job, data, title, [timeline_note, band_note]), loc="left", fontsize=11)
    add_legend(ax, handles)
    return figure
