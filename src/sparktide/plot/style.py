"""How a chart looks: colours, markers, sizes, the limits past which it draws less, and
the one conversion of integer microseconds to matplotlib dates.

matplotlib is imported lazily, in the functions that need it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "ARROW_LIMIT",
    "BAND_LIMIT",
    "CLIP_MAX_SHARE",
    "CLIP_MIN_COUNT",
    "COLOUR",
    "GUIDE_COLOUR",
    "LABEL_LIMIT",
    "LAG_PANEL_MIN",
    "LINE_COLOURS",
    "MARKER",
    "date_formatter",
    "dates",
    "line_colour",
    "marker_style",
]

#: Verdict colours.
COLOUR = {
    "accepted": "#2ca02c",
    "adjusted": "#ff7f0e",
    "dropped": "#d62728",
    "dead_lettered": "#9467bd",
}
#: Verdict markers.
MARKER = {"accepted": "o", "adjusted": "o", "dropped": "X", "dead_lettered": "D"}
#: Watermark line colours: none of them is a verdict colour.
LINE_COLOURS = (
    "#1f3a93",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#000000",
    "#6b8e23",
)
#: The guides' colour (event time = arrival time, and the policy's limits).
GUIDE_COLOUR = "#999999"
#: Above this many adjusted events, arrows become a collection of plain segments.
ARROW_LIMIT = 500
#: Above this many events a second panel shows event time − arrival time (symlog).
LAG_PANEL_MIN = 200
#: Up to this many events, each point is labelled with its ``seq``.
LABEL_LIMIT = 40
#: At most this many window bands are drawn (a finer grid is left out and said so).
BAND_LIMIT = 300
#: Points beyond the chart's natural range are pinned to its edge when they are few:
#: at most this share of the events, or :data:`CLIP_MIN_COUNT`.
CLIP_MAX_SHARE = 0.01
CLIP_MIN_COUNT = 5


def line_colour(number: int, single: bool) -> str:
    """The colour of watermark line ``number``: black when it is the only one."""
    return "#000000" if single else LINE_COLOURS[number % len(LINE_COLOURS)]


def marker_style(count: int) -> dict[str, Any]:
    """Marker size and transparency that keep 20 and 20,000 points readable."""
    if count <= 200:
        return {"s": 46.0, "alpha": 0.95, "lw": 1.2, "rasterized": False}
    if count <= 2_000:
        return {"s": 16.0, "alpha": 0.75, "lw": 0.8, "rasterized": False}
    return {"s": 5.0, "alpha": 0.45, "lw": 0.5, "rasterized": True}


def dates(values: np.ndarray) -> np.ndarray:
    """Integer microseconds → matplotlib date numbers (the one float conversion, at the edge)."""
    from matplotlib import dates as mdates

    return mdates.date2num(values.astype("datetime64[us]"))


def date_formatter(locator: Any, show_offset: bool) -> Any:
    """Concise dates, but seconds as ``hh:mm:ss`` rather than a bare ``50``."""
    from matplotlib import dates as mdates

    formats = ["%Y", "%b", "%d", "%H:%M", "%H:%M", "%H:%M:%S.%f"]  # zeros are trimmed
    zero_formats = ["", "%Y", "%b", "%b-%d", "%H:%M", "%H:%M:%S.%f"]
    offset_formats = ["", "%Y", "%Y-%m", "%Y-%m-%d", "%Y-%m-%d", "%Y-%m-%d"]
    return mdates.ConciseDateFormatter(
        locator,
        formats=formats,
        zero_formats=zero_formats,
        offset_formats=offset_formats,
        show_offset=show_offset,
    )
