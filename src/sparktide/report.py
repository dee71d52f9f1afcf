"""Tables for people: ``simulate --format table``."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from sparktide.core.engine import Result

__all__ = ["print_tables"]

_VERDICT_STYLE = {
    "accepted": "green",
    "adjusted": "yellow",
    "dropped": "red",
    "dead_lettered": "magenta",
}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def _table(title: str, rows: list[dict[str, Any]], columns: list[str] | None = None) -> Table:
    if columns is None:
        columns = []
        for row in rows:
            for name in row:
                if name != "type" and name not in columns:
                    columns.append(name)
    table = Table(title=title, title_justify="left", header_style="bold")
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        style = _VERDICT_STYLE.get(row.get("verdict", ""), None)
        table.add_row(*(_cell(row.get(name)) for name in columns), style=style)
    return table


def print_tables(result: Result, out: TextIO, *, explain: bool = False) -> None:
    """Print a run's records as aligned tables, verdicts coloured on a terminal."""
    probe = Console(file=out)
    console = Console(file=out, width=probe.width if probe.is_terminal else 160)
    if explain:
        columns = [
            "seq",
            "partition",
            "key",
            "event_time",
            "arrival_time",
            "watermark",
            "timestamp",
            "verdict",
            "reasons",
        ]
        if any("windows" in d for d in result.decisions):
            columns.append("windows")
        console.print(_table("Decisions", result.decisions, columns))
    if result.events:
        console.print(_table(f"Released events ({len(result.events)})", result.events))
    if result.windows:
        console.print(_table(f"Windows ({len(result.windows)})", result.windows))
    if result.dead_letters:
        rows = [dict(d, record=_short(d.get("record"))) for d in result.dead_letters]
        console.print(_table(f"Dead letters ({len(rows)})", rows))
    console.print(_metrics_table(result.metrics))


def _short(value: Any, limit: int = 80) -> str:
    text = _cell(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _metrics_table(metrics: dict[str, Any]) -> Table:
    table = Table(title="Metrics", title_justify="left", header_style="bold")
    names = [
        "input",
        "admitted",
        "early",
        "late",
        "out_of_order",
        "adjusted",
        "dropped",
        "dead_lettered",
        "in_no_window",
        "windows_emitted",
        "watermark",
    ]
    table.add_column("partition")
    for name in names:
        table.add_column(name, overflow="fold")

    def row(label: str, data: dict[str, Any]) -> None:
        cells = []
        for name in names:
            value = data.get(name)
            if isinstance(value, dict):
                value = ", ".join(f"{k}={v}" for k, v in value.items()) or "0"
            cells.append(_cell(value))
        table.add_row(label, *cells)

    row("job", metrics)
    for entry in metrics.get("partitions", []):
        row(str(entry["partition"]), entry)
    return table
