"""Writing a chart: PNG, SVG or PDF by matplotlib, or one self-contained HTML page."""

from __future__ import annotations

import html
import importlib.util
import io
from pathlib import Path
from typing import TYPE_CHECKING

from sparktide.core.engine import Result
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.plot.chart import draw_chart
from sparktide.plot.data import VERDICTS, ChartData
from sparktide.plot.texts import policy_text, window_text

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["CHART_SUFFIXES", "check_chart_path", "save_chart"]

#: File types ``--plot`` writes, by suffix.
CHART_SUFFIXES = (".png", ".svg", ".pdf", ".html")


def _html(figure: Figure, data: ChartData, title: str, job: Job) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", dpi=110)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML declaration and doctype
    counts = data.counts()
    rows = "".join(
        f"<tr><td>{name.replace('_', '-')}</td><td>{counts[name]}</td></tr>" for name in VERDICTS
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<title>{html.escape(title)}</title>\n"
        "<style>body{font-family:sans-serif;margin:1.5em}"
        "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left}"
        "svg{max-width:100%;height:auto}</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
        f"<p>{html.escape(policy_text(job))} · {html.escape(window_text(job))}</p>\n"
        f"<figure id='chart' data-points='{data.size}' data-timelines='{data.timeline_count}'>\n"
        f"{svg}\n<figcaption>{data.size} events drawn"
        + (f"; {data.malformed} malformed records not drawn" if data.malformed else "")
        + "</figcaption>\n</figure>\n"
        f"<table><tr><th>verdict</th><th>events</th></tr>{rows}</table>\n"
        "<p>Made by <code>sparktide explain --plot</code>.</p>\n</body>\n</html>\n"
    )


def check_chart_path(path: str | Path) -> Path:
    """Check, before any work, that a chart can be written to ``path``.

    Raises
    ------
    ConfigError
        If the suffix is not one of :data:`CHART_SUFFIXES`, the folder does not exist,
        or matplotlib (the ``plot`` extra) is not installed.
    """
    target = Path(path)
    if target.suffix.lower() not in CHART_SUFFIXES:
        raise ConfigError(
            "--plot",
            f"cannot write {str(target)!r}: use a file name ending in " + ", ".join(CHART_SUFFIXES),
        )
    if not target.parent.resolve().is_dir():
        raise ConfigError("--plot", f"no such directory: {str(target.parent)!r}")
    if importlib.util.find_spec("matplotlib") is None:
        raise ConfigError(
            "--plot", "charts need matplotlib: pip install 'sparktide[plot]' (or matplotlib)"
        )
    return target


def save_chart(
    path: str | Path,
    job: Job,
    data: ChartData,
    result: Result,
    *,
    title: str | None = None,
    x: str = "arrival",
) -> Path:
    """Draw the chart and write it to ``path``; the suffix picks the format.

    ``.png``, ``.svg`` and ``.pdf`` are written by matplotlib; ``.html`` is a
    self-contained page with the chart as an inline SVG (no scripts, no other file).

    Raises
    ------
    ConfigError
        If the suffix is not one of :data:`CHART_SUFFIXES`, or the file cannot be written.
    """
    target = check_chart_path(path)
    suffix = target.suffix.lower()
    figure = draw_chart(job, data, result, title=title, x=x)
    try:
        if suffix == ".html":
            text = _html(figure, data, title or "sparktide explain", job)
            target.write_text(text, encoding="utf-8")
        else:
            figure.savefig(target, format=suffix[1:], dpi=110)
    except OSError as exc:
        raise ConfigError("--plot", f"cannot write {str(target)!r}: {exc.strerror}") from None
    return target
