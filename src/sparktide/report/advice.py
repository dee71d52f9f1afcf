"""``sparktide advise``'s report for people: the sample, lateness, disorder, the
candidate settings and the recommendation as a TOML snippet."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.table import Table

from sparktide.advise.shares import PERCENTILES, percent_text
from sparktide.report.console import cell, console_for
from sparktide.time import format_duration

if TYPE_CHECKING:  # pragma: no cover
    from sparktide.advise import Advice, Candidate, Distribution

__all__ = ["print_advice"]


def _short_duration(value: int | None) -> str | None:
    """A duration for people: whole milliseconds from a millisecond up (towards zero)."""
    if value is None:
        return None
    if abs(value) >= 1_000:
        value = (abs(value) // 1_000 * 1_000) * (1 if value >= 0 else -1)
    return format_duration(value)


def _fraction(part: int, whole: int) -> Fraction:
    return Fraction(part, whole) if whole else Fraction(0)


def _distribution_table(title: str, rows: list[Distribution], counted: str) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold")
    for name in ("events of", "events", counted):
        table.add_column(name)
    for label, _, _ in PERCENTILES:
        table.add_column(label, justify="right")
    table.add_column("max", justify="right")
    for row in rows:
        share = percent_text(_fraction(row.early, row.events))
        table.add_row(
            row.label,
            str(row.events),
            f"{row.early} ({share})",
            *(_short_duration(row.values[label]) for label, _, _ in PERCENTILES),
            _short_duration(row.values["max"]),
        )
    return table


def _candidate_row(table: Table, candidate: Candidate, recommended: Candidate | None) -> None:
    """One candidate's row: its counts, delays, and whether it is current or recommended."""
    dropped = ", ".join(f"{k}={v}" for k, v in candidate.dropped.items()) or "0"
    marks = []
    if candidate.current:
        marks.append("current")
    if candidate is recommended:
        marks.append("recommended")
    style = "bold green" if candidate is recommended else ("bold" if marks else None)
    share = f"{candidate.affected} ({percent_text(candidate.share)})"
    table.add_row(
        format_duration(candidate.late_arrival),
        format_duration(candidate.out_of_order),
        str(candidate.late),
        str(candidate.out_of_order_events),
        str(candidate.adjusted),
        dropped,
        share,
        cell(_short_duration(candidate.hold.get("p50"))),
        cell(_short_duration(candidate.hold.get("p99"))),
        cell(_short_duration(candidate.hold.get("mean"))),
        str(candidate.held),
        ", ".join(marks),
        style=style,
    )


def _candidates_table(advice: Advice) -> Table:
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
    for candidate in advice.candidates:
        _candidate_row(table, candidate, advice.recommended)
    return table


def _print_measurements(console: Console, advice: Advice) -> None:
    """The sample in one line, then its lateness and disorder tables."""
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


def _print_recommendation(console: Console, advice: Advice) -> None:
    """The recommended ``[ordering]`` table, or the closest candidate when none fits."""
    recommended = advice.recommended
    target = percent_text(advice.target)
    if recommended is None:
        closest = advice.closest
        hint = ""
        if closest is not None:
            hint = (
                f" The smallest share is {percent_text(closest.share)}, with late_arrival = "
                f"{format_duration(closest.late_arrival)} and out_of_order = "
                f"{format_duration(closest.out_of_order)}."
            )
        console.print(f"No candidate adjusts or drops at most {target} of the events.{hint}")
        return
    console.print(
        f"Recommended for at most {target} of events adjusted or dropped "
        f"({percent_text(recommended.share)} here, delay p99 "
        f"{_short_duration(recommended.hold.get('p99'))}):"
    )
    console.print(advice.snippet(), markup=False, highlight=False, end="")


def print_advice(advice: Advice, out: TextIO) -> None:
    """Print ``sparktide advise``'s report: the sample, lateness, disorder, the candidate
    settings and the recommendation as a TOML snippet."""
    console = console_for(out)
    _print_measurements(console, advice)
    console.print(_candidates_table(advice))
    early = advice.candidates[0].early if advice.candidates else 0
    if early:
        console.print(
            f"{early} early events are dropped under every candidate (early_arrival is "
            "not varied) and are not counted as affected."
        )
    _print_recommendation(console, advice)
