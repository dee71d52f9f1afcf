"""A run's records as tables: ``simulate --format table`` and ``explain --format table``."""

from __future__ import annotations

from typing import Any, TextIO

from rich.table import Table

from sparktide.core.counts import VERDICT_COUNTERS
from sparktide.core.engine import Result
from sparktide.report.console import VERDICT_STYLE, cell, console_for, records_table, short

__all__ = ["print_decisions", "print_tables"]


def _decisions_table(decisions: list[dict[str, Any]]) -> Table:
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
    if any("cti" in d for d in decisions):  # jobs with punctuation (semantics §7)
        columns.insert(columns.index("watermark") + 1, "cti")
    if any("end_time" in d for d in decisions):  # interval events
        columns.insert(columns.index("event_time") + 1, "end_time")
    if any("edge" in d for d in decisions):  # edge events
        columns[columns.index("event_time") : columns.index("event_time")] = ["edge", "edge_id"]
    if any("windows" in d for d in decisions):
        columns.append("windows")
    return records_table("Decisions", decisions, columns)


def print_decisions(decisions: list[dict[str, Any]], out: TextIO) -> None:
    """Print ``decision`` records as one table (``sparktide explain``), then a count per
    verdict."""
    console = console_for(out)
    console.print(_decisions_table(decisions))
    counts: dict[str, int] = {}
    for decision in decisions:
        counts[decision["verdict"]] = counts.get(decision["verdict"], 0) + 1
    summary = ", ".join(f"{counts[v]} {v}" for v in VERDICT_STYLE if v in counts)
    console.print(f"{len(decisions)} records: {summary or 'none'}")


def print_tables(result: Result, out: TextIO, *, explain: bool = False) -> None:
    """Print a run's records as aligned tables, verdicts coloured on a terminal."""
    console = console_for(out)
    if explain:
        console.print(_decisions_table(result.decisions))
    if result.events:
        console.print(records_table(f"Released events ({len(result.events)})", result.events))
    if result.windows:
        console.print(records_table(f"Windows ({len(result.windows)})", result.windows))
    if result.dead_letters:
        rows = [dict(d, record=short(d.get("record"))) for d in result.dead_letters]
        console.print(records_table(f"Dead letters ({len(rows)})", rows))
    console.print(_metrics_table(result.metrics))
    for diagnostic in result.metrics.get("diagnostics", []):
        console.print(f"[yellow]diagnostic[/yellow] {diagnostic['message']}", highlight=False)


def _metric_names(metrics: dict[str, Any]) -> list[str]:
    """The metrics table's columns: the usual counters, and those this job has."""
    names = [
        *VERDICT_COUNTERS,
        "dropped",
        "dead_lettered",
        "in_no_window",
        "windows_emitted",
        "watermark",
    ]
    for name in ("punctuations", "ctis_generated"):  # jobs with CTIs (semantics §7)
        if metrics.get(name):
            names.insert(names.index("in_no_window"), name)
    if "skipped_before_start" in metrics:  # runs with an output start time (semantics §12)
        names.insert(names.index("in_no_window"), "skipped_before_start")
    if "open_edges" in metrics:  # edge events still open (semantics §7)
        names.insert(names.index("windows_emitted") + 1, "open_edges")
    if "output_watermark" in metrics:  # windowed jobs: the hold (semantics §7)
        names.append("output_watermark")
    return names


def _metrics_table(metrics: dict[str, Any]) -> Table:
    table = Table(title="Metrics", title_justify="left", header_style="bold")
    names = _metric_names(metrics)
    table.add_column("partition")
    for name in names:
        table.add_column(name, overflow="fold")

    def row(label: str, data: dict[str, Any]) -> None:
        cells = []
        for name in names:
            value = data.get(name)
            if isinstance(value, dict):
                value = ", ".join(f"{k}={v}" for k, v in value.items()) or "0"
            cells.append(cell(value))
        table.add_row(label, *cells)

    row("job", metrics)
    for entry in metrics.get("partitions", []):
        row(str(entry["partition"]), entry)
    return table
