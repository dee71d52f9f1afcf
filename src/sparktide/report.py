"""Tables for people: ``simulate --format table``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.table import Table

from sparktide.core.engine import Result
from sparktide.time import format_duration

if TYPE_CHECKING:  # pragma: no cover
    from sparktide.advise import Advice, Distribution

__all__ = ["print_advice", "print_decisions", "print_tables"]

_VERDICT_STYLE = {
    "accepted": "green",
    "adjusted": "yellow",
    "dropped": "red",
    "dead_lettered": "magenta",
    "punctuation": "cyan",  # a CTI row (SPEC §7): not an event
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


def _console(out: TextIO) -> Console:
    probe = Console(file=out)
    return Console(file=out, width=probe.width if probe.is_terminal else 160)


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
    if any("cti" in d for d in decisions):  # jobs with punctuation (SPEC §7)
        columns.insert(columns.index("watermark") + 1, "cti")
    if any("end_time" in d for d in decisions):  # interval events
        columns.insert(columns.index("event_time") + 1, "end_time")
    if any("edge" in d for d in decisions):  # edge events
        columns[columns.index("event_time") : columns.index("event_time")] = ["edge", "edge_id"]
    if any("windows" in d for d in decisions):
        columns.append("windows")
    return _table("Decisions", decisions, columns)


def print_decisions(decisions: list[dict[str, Any]], out: TextIO) -> None:
    """Print ``decision`` records as one table (``sparktide explain``), then a count per
    verdict."""
    console = _console(out)
    console.print(_decisions_table(decisions))
    counts: dict[str, int] = {}
    for decision in decisions:
        counts[decision["verdict"]] = counts.get(decision["verdict"], 0) + 1
    summary = ", ".join(f"{counts[v]} {v}" for v in _VERDICT_STYLE if v in counts)
    console.print(f"{len(decisions)} records: {summary or 'none'}")


def print_tables(result: Result, out: TextIO, *, explain: bool = False) -> None:
    """Print a run's records as aligned tables, verdicts coloured on a terminal."""
    console = _console(out)
    if explain:
        console.print(_decisions_table(result.decisions))
    if result.events:
        console.print(_table(f"Released events ({len(result.events)})", result.events))
    if result.windows:
        console.print(_table(f"Windows ({len(result.windows)})", result.windows))
    if result.dead_letters:
        rows = [dict(d, record=_short(d.get("record"))) for d in result.dead_letters]
        console.print(_table(f"Dead letters ({len(rows)})", rows))
    console.print(_metrics_table(result.metrics))
    for diagnostic in result.metrics.get("diagnostics", []):
        console.print(f"[yellow]diagnostic[/yellow] {diagnostic['message']}", highlight=False)


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
    for name in ("punctuations", "ctis_generated"):  # jobs with CTIs (SPEC §7)
        if metrics.get(name):
            names.insert(names.index("in_no_window"), name)
    if "open_edges" in metrics:  # edge events still open (SPEC §7)
        names.insert(names.index("windows_emitted") + 1, "open_edges")
    if "output_watermark" in metrics:  # windowed jobs: the hold (SPEC §7)
        names.append("output_watermark")
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


def _distribution_table(title: str, rows: list[Distribution], counted: str) -> Table:
    from sparktide.advise import PERCENTILES, _percent

    table = Table(title=title, title_justify="left", header_style="bold")
    for name in ("events of", "events", counted):
        table.add_column(name)
    for label, _, _ in PERCENTILES:
        table.add_column(label, justify="right")
    table.add_column("max", justify="right")
    for row in rows:
        share = _percent(_fraction(row.early, row.events))
        table.add_row(
            row.label,
            str(row.events),
            f"{row.early} ({share})",
            *(_short_duration(row.values[label]) for label, _, _ in PERCENTILES),
            _short_duration(row.values["max"]),
        )
    return table


def _fraction(part: int, whole: int) -> Any:
    from fractions import Fraction

    return Fraction(part, whole) if whole else Fraction(0)


def print_advice(advice: Advice, out: TextIO) -> None:
    """Print ``sparktide advise``'s report: the sample, lateness, disorder, the candidate
    settings and the recommendation as a TOML snippet."""
    from sparktide.advise import _percent

    console = _console(out)
    sample = advice.sample
    keys = f", {sample['keys']} keys" if sample.get("keys") is not None else ""
    console.print(
        f"Sample: {sample['records']} records from {sample['first_arrival']} to "
        f"{sample['last_arrival']} (arrival), {sample['partitions']} partitions{keys}; "
        f"{sample['malformed_in_input']} malformed records in the input."
    )
    console.print(
        _distribution_table(
            "Lateness: arrival time − event time (negative: early)", advice.lateness, "early"
        )
    )
    console.print(
        _distribution_table(
            "Disorder: how far behind the newest event time before it on its timeline",
            advice.disorder,
            "behind",
        )
    )
    table = Table(
        title="Candidates (the job without its window, over the sample; delay = hold time "
        "from being seen to being released)",
        title_justify="left",
        header_style="bold",
    )
    for name in ("late_arrival", "out_of_order", "late", "out of order", "adjusted"):
        table.add_column(name, justify="right")
    for name in ("dropped", "affected", "delay p50", "delay p99", "delay mean", "held"):
        table.add_column(name, justify="right")
    table.add_column("")
    recommended = advice.recommended
    for candidate in advice.candidates:
        dropped = ", ".join(f"{k}={v}" for k, v in candidate.dropped.items()) or "0"
        marks = []
        if candidate.current:
            marks.append("current")
        if candidate is recommended:
            marks.append("recommended")
        style = "bold green" if candidate is recommended else ("bold" if marks else None)
        share = f"{candidate.affected} ({_percent(candidate.share)})"
        table.add_row(
            format_duration(candidate.late_arrival),
            format_duration(candidate.out_of_order),
            str(candidate.late),
            str(candidate.out_of_order_events),
            str(candidate.adjusted),
            dropped,
            share,
            _cell(_short_duration(candidate.hold.get("p50"))),
            _cell(_short_duration(candidate.hold.get("p99"))),
            _cell(_short_duration(candidate.hold.get("mean"))),
            str(candidate.held),
            ", ".join(marks),
            style=style,
        )
    console.print(table)
    early = advice.candidates[0].early if advice.candidates else 0
    if early:
        console.print(
            f"{early} early events are dropped under every candidate (early_arrival is "
            "not varied) and are not counted as affected."
        )
    target = _percent(advice.target)
    if recommended is None:
        closest = advice.closest
        hint = ""
        if closest is not None:
            hint = (
                f" The smallest share is {_percent(closest.share)}, with late_arrival = "
                f"{format_duration(closest.late_arrival)} and out_of_order = "
                f"{format_duration(closest.out_of_order)}."
            )
        console.print(f"No candidate adjusts or drops at most {target} of the events.{hint}")
        return
    console.print(
        f"Recommended for at most {target} of events adjusted or dropped "
        f"({_percent(recommended.share)} here, delay p99 "
        f"{_short_duration(recommended.hold.get('p99'))}):"
    )
    console.print(advice.snippet(), markup=False, highlight=False, end="")


def _short_duration(value: int | None) -> str | None:
    """A duration for people: whole milliseconds from a millisecond up (towards zero)."""
    if value is None:
        return None
    if abs(value) >= 1_000:
        value = (abs(value) // 1_000 * 1_000) * (1 if value >= 0 else -1)
    return format_duration(value)
