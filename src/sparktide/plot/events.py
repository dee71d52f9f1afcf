"""Events on a chart: a point per event coloured by its verdict, an arrow from an
adjusted event's time up to its system timestamp, seq labels when there are few, and
the far outliers pinned to the edge (▲ above, ▼ below)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sparktide.plot.data import VERDICT_CODE, VERDICTS, ChartData
from sparktide.plot.layout import ChartFrame
from sparktide.plot.style import ARROW_LIMIT, CLIP_MIN_COUNT, COLOUR, LABEL_LIMIT, MARKER, dates
from sparktide.time import format_instant

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = [
    "PlacedEvents",
    "draw_events",
    "label_seqs",
    "mark_off_chart",
    "place_events",
    "verdict_handles",
]


@dataclass(frozen=True)
class PlacedEvents:
    """Where a panel draws the events, in its coordinates.

    Attributes
    ----------
    across
        The time across of each event.
    up
        Its height: event time (pinned inside the edge when off the chart).
    stamp
        Where an adjusted event's arrow ends: its system timestamp.
    below, above
        The events off the chart, pinned to its lower or upper edge.
    """

    across: np.ndarray
    up: np.ndarray
    stamp: np.ndarray
    below: np.ndarray
    above: np.ndarray


def place_events(data: ChartData, frame: ChartFrame) -> PlacedEvents:
    """The events in the main panel: far outliers (typically early events) are clipped
    to the chart's edge."""
    count = data.size
    across = dates(data.x) if count else np.empty(0)
    below = data.event_time < frame.y_low
    above = data.event_time > frame.y_high
    inset = (frame.y_high - frame.y_low) // 60  # pinned markers sit just inside the edge
    low, high = frame.y_low + inset, frame.y_high - inset
    up = dates(np.clip(data.event_time, low, high)) if count else np.empty(0)
    stamp = dates(np.clip(data.timestamp, low, high)) if count else np.empty(0)
    return PlacedEvents(across, up, stamp, below, above)


def _draw_arrows(ax: Axes, placed: PlacedEvents, adjusted: np.ndarray, count: int) -> None:
    """An arrow per adjusted event, or plain segments when there are many."""
    from matplotlib.collections import LineCollection

    across, up, stamp = placed.across, placed.up, placed.stamp
    if adjusted.size <= ARROW_LIMIT:
        for i in adjusted:
            ax.annotate(
                "",
                xy=(across[i], stamp[i]),
                xytext=(across[i], up[i]),
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": COLOUR["adjusted"],
                    "lw": 1.0 if count <= 200 else 0.6,
                    "alpha": 0.9,
                    "shrinkA": 3,
                    "shrinkB": 2,
                    "mutation_scale": 10 if count <= 200 else 6,
                },
                zorder=4,
            )
        return
    starts = np.stack([across[adjusted], up[adjusted]], 1)
    ends = np.stack([across[adjusted], stamp[adjusted]], 1)
    ax.add_collection(
        LineCollection(
            np.stack([starts, ends], 1),
            colors=COLOUR["adjusted"],
            linewidths=0.4,
            alpha=0.35,
            zorder=4,
            rasterized=True,
        )
    )


def _draw_adjustments(
    ax: Axes, data: ChartData, placed: PlacedEvents, style: dict[str, Any]
) -> None:
    """Adjusted events: the arrows, and a dot at each system timestamp."""
    adjusted = np.flatnonzero(data.verdict == VERDICT_CODE["adjusted"])
    if not adjusted.size:
        return
    _draw_arrows(ax, placed, adjusted, data.size)
    ax.scatter(
        placed.across[adjusted],
        placed.stamp[adjusted],
        s=style["s"] * 0.6,
        marker="o",
        color=COLOUR["adjusted"],
        linewidths=0,
        alpha=style["alpha"],
        zorder=5,
        rasterized=style["rasterized"],
    )


def draw_events(ax: Axes, data: ChartData, placed: PlacedEvents, style: dict[str, Any]) -> None:
    """The events as points by verdict, adjusted ones with an arrow (or a plain segment
    when there are many) from their event time to their system timestamp. Points
    pinned ``below`` / ``above`` are drawn as ▼ / ▲."""
    _draw_adjustments(ax, data, placed, style)
    for name in VERDICTS:
        picked = data.verdict == VERDICT_CODE[name]
        for mask, marker in (
            (picked & ~placed.below & ~placed.above, MARKER[name]),
            (picked & placed.above, "^"),
            (picked & placed.below, "v"),
        ):
            if not mask.any():
                continue
            hollow = name == "adjusted"
            rare = name in ("dropped", "dead_lettered")  # few and important: never tiny
            ax.scatter(
                placed.across[mask],
                placed.up[mask],
                s=max(style["s"], 18.0) if rare else style["s"],
                marker=marker,
                facecolors="none" if hollow else COLOUR[name],
                edgecolors=COLOUR[name],
                linewidths=style["lw"] if hollow or marker != "o" else 0,
                alpha=max(style["alpha"], 0.8) if rare else style["alpha"],
                zorder=7 if rare else 6,
                rasterized=style["rasterized"],
            )


def verdict_handles(data: ChartData) -> list[Any]:
    """A legend entry per verdict that occurs, with its count."""
    from matplotlib.lines import Line2D

    counts = data.counts()
    handles = []
    for name in VERDICTS:
        if not counts[name]:
            continue
        label = f"{name.replace('_', '-')} ({counts[name]})"
        if name == "adjusted":
            label += ": ○ event time → ● system timestamp"
        handles.append(
            Line2D(
                [],
                [],
                ls="none",
                marker=MARKER[name],
                markersize=7,
                markerfacecolor="none" if name == "adjusted" else COLOUR[name],
                markeredgecolor=COLOUR[name],
                label=label,
            )
        )
    return handles


def label_seqs(ax: Axes, data: ChartData, placed: PlacedEvents) -> None:
    """Few events: name each one on the chart by its seq, as the decisions do."""
    if not 0 < data.size <= LABEL_LIMIT:
        return
    for i in np.flatnonzero(~placed.below & ~placed.above):
        ax.annotate(
            str(int(data.seq[i])),
            xy=(placed.across[i], placed.up[i]),
            xytext=(-7, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=8,
            color="#444444",
        )


def mark_off_chart(ax: Axes, data: ChartData, placed: PlacedEvents) -> list[Any]:
    """The legend entry for events pinned to the edge (none if there are none); when
    they are few, each is labelled with its event time."""
    from matplotlib.lines import Line2D

    off_chart = int(placed.below.sum() + placed.above.sum())
    if not off_chart:
        return []
    handle = Line2D(
        [],
        [],
        ls="none",
        marker="^",
        markersize=7,
        color="#555555",
        label=f"{off_chart} off the chart, pinned to its edge (▲ above, ▼ below)",
    )
    if off_chart <= CLIP_MIN_COUNT:
        _label_off_chart(ax, data, placed)
    return [handle]


def _label_off_chart(ax: Axes, data: ChartData, placed: PlacedEvents) -> None:
    stacked = {True: 0, False: 0}  # one line of text under (over) the previous one
    for i in np.flatnonzero(placed.below | placed.above):
        high = bool(placed.above[i])
        shift = 11 * stacked[high] * (-1 if high else 1)
        stacked[high] += 1
        named = f"{int(data.seq[i])}: " if data.size <= LABEL_LIMIT else ""
        ax.annotate(
            f"{named}event time {format_instant(int(data.event_time[i]))}",
            xy=(placed.across[i], placed.up[i]),
            xytext=(-8, shift - 3 if high else shift + 3),
            textcoords="offset points",
            ha="right",
            va="top" if placed.above[i] else "bottom",
            fontsize=8,
            color=COLOUR[VERDICTS[data.verdict[i]]],
        )
