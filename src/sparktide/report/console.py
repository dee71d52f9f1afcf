"""What every table for people shares: the console, cells, and verdict colours."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

__all__ = ["VERDICT_STYLE", "cell", "console_for", "records_table", "short"]

#: The colour of each verdict's rows (and the order verdicts are counted in).
VERDICT_STYLE = {
    "accepted": "green",
    "adjusted": "yellow",
    "dropped": "red",
    "dead_lettered": "magenta",
    "punctuation": "cyan",  # a CTI row (semantics §7): not an event
    "skipped": "dim",  # before an output start's read point (semantics §12): not read
}


def cell(value: Any) -> str:
    """A value as a table cell: ``-`` for none, lists joined by commas."""
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(cell(v) for v in value)
    return str(value)


def short(value: Any, limit: int = 80) -> str:
    """A cell of at most ``limit`` characters (cut with an ellipsis)."""
    text = cell(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def records_table(
    title: str, rows: list[dict[str, Any]], columns: list[str] | None = None
) -> Table:
    """Records as a table, rows coloured by verdict; by default every field but ``type``,
    in the order first seen."""
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
        style = VERDICT_STYLE.get(row.get("verdict", ""), None)
        table.add_row(*(cell(row.get(name)) for name in columns), style=style)
    return table


def console_for(out: TextIO) -> Console:
    """A console writing to ``out``: the terminal's width, else 160 columns."""
    probe = Console(file=out)
    return Console(file=out, width=probe.width if probe.is_terminal else 160)
