"""A chart's words: the policy and the window in one line each, the title, the legend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparktide.job import Job
from sparktide.plot.data import ChartData
from sparktide.plot.style import LABEL_LIMIT
from sparktide.time import format_duration

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["add_legend", "policy_text", "timeline_word", "title_text", "window_text"]


def window_text(job: Job) -> str:
    """The window in one line: ``window: tumbling 1m [start, end)``."""
    window = job.window
    if window is None:
        return "no window: ordered release"
    bounds = "[start, end)" if window.boundary == "start" else "(start, end]"
    if window.type == "tumbling":
        text = f"tumbling {format_duration(window.size)}"  # type: ignore[arg-type]
    elif window.type == "hopping":
        text = f"hopping {format_duration(window.size)} every {format_duration(window.hop)}"  # type: ignore[arg-type]
    elif window.type == "sliding":
        text = f"sliding {format_duration(window.size)}"  # type: ignore[arg-type]
    elif window.type == "session":
        text = f"session gap {format_duration(window.gap)}"  # type: ignore[arg-type]
        if window.max_duration is not None:
            text += f" max {format_duration(window.max_duration)}"  # type: ignore[arg-type]
    else:
        text = "snapshot"
    if window.offset:
        text += f" offset {format_duration(window.offset)}"  # type: ignore[arg-type]
    if window.allowed_lateness:
        text += f", allowed lateness {format_duration(window.allowed_lateness)}"  # type: ignore[arg-type]
    return f"window: {text} {bounds}"


def policy_text(job: Job) -> str:
    """The ordering policy in one line: ``L=20s O=10s E=1m action=adjust``."""
    ordering = job.ordering
    text = (
        f"L={format_duration(ordering.late_arrival)} "  # type: ignore[arg-type]
        f"O={format_duration(ordering.out_of_order)} "  # type: ignore[arg-type]
        f"E={format_duration(ordering.early_arrival)} "  # type: ignore[arg-type]
        f"action={ordering.action}"
    )
    if ordering.on_out_of_order is not None and ordering.on_out_of_order != ordering.action:
        text += f" on_out_of_order={ordering.on_out_of_order}"
    if ordering.partitioned:
        text += " partitioned"
    if not job.event_time_mode:
        text += " (arrival-time mode)"
    return text


def timeline_word(data: ChartData) -> str:
    """What the chart's timelines are: ``substream`` or ``partition``."""
    return "substream" if data.substreams else "partition"


def title_text(job: Job, data: ChartData, title: str | None, notes: list[str]) -> str:
    """The title: what is drawn, the policy and window, and the notes that are not empty
    (what was left out)."""
    count = data.size
    head = title or "sparktide explain"
    what = timeline_word(data)
    parts = [f"{count} event{'s' if count != 1 else ''}"]
    timelines = data.timeline_count
    parts.append(f"{timelines} {what}{'s' if timelines != 1 else ''}")
    if data.malformed:
        parts.append(f"{data.malformed} malformed not drawn")
    lines = [
        f"{head}: {', '.join(parts)}" + (" (labels: seq)" if 0 < count <= LABEL_LIMIT else ""),
        f"{policy_text(job)} · {window_text(job)}",
    ]
    notes = [note for note in notes if note]
    if notes:
        lines.append("; ".join(notes))
    return "\n".join(lines)


def add_legend(ax: Axes, handles: list[Any]) -> None:
    """The legend, outside the main panel on its right."""
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8.5,
        frameon=False,
        alignment="left",
    )
