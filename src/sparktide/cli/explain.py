"""``sparktide explain``: the reference engine's decision on every record, as a table,
JSON lines, or a chart (``--plot``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from sparktide.cli import options
from sparktide.errors import ConfigError
from sparktide.job import Job, load_job

__all__ = ["add_options", "execute"]


def add_options(command: argparse.ArgumentParser) -> None:
    """Add ``explain``'s arguments and options to its parser."""
    options.job_argument(command)
    command.add_argument(
        "--plot",
        metavar="FILE",
        help="draw a chart into FILE (.png, .svg, .pdf, or .html: one self-contained page)",
    )
    options.text_option(
        command, "--x", "arrival", "AXIS", "time across the chart: arrival (default) or processing"
    )
    options.text_option(
        command,
        "--max-timelines",
        "8",
        "N",
        "draw the watermarks of at most N timelines, the busiest (default 8)",
    )
    options.format_option(
        command,
        ("jsonl", "table"),
        "print the decisions as jsonl or a table (default: table on a terminal; "
        "with --plot nothing is printed unless --format is given)",
    )
    options.time_options(
        command,
        no_flush_help="leave open windows open at the end (the chart then shows fewer windows)",
    )


def _chart(
    args: argparse.Namespace, job: Job, records: list[Any], plot: Path, max_timelines: int
) -> tuple[Any, str]:
    """Run the job for a chart and write it to ``plot``; returns the run's result and the
    line that says what was written."""
    from sparktide.plot import explain_run, save_chart

    result, data = explain_run(
        job,
        records,
        x=args.x,
        until=args.until,
        tick=args.tick,
        flush=args.flush,
        max_timelines=max_timelines,
    )
    job_path = Path(args.job)
    title = f"{job_path.parent.name}/{job_path.name}" if job_path.parent.name else job_path.name
    save_chart(plot, job, data, result, title=title, x=args.x)
    counts = data.counts()
    summary = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    return result, f"sparktide: wrote {plot}: {data.size} events ({summary or 'none'})"


def execute(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``explain``; returns the exit code."""
    from sparktide.core.engine import simulate
    from sparktide.plot import X_AXES, check_chart_path
    from sparktide.reader import job_records

    if args.x not in X_AXES:
        raise ConfigError("--x", f"must be one of {', '.join(X_AXES)}; got {args.x!r}")
    max_timelines = options.count_arg(args.max_timelines, "--max-timelines")
    plot = check_chart_path(args.plot) if args.plot is not None else None
    job = load_job(args.job)
    records = job_records(job)
    if plot is None:
        result = simulate(job, records, until=args.until, tick=args.tick, flush=args.flush)
    else:
        result, note = _chart(args, job, records, plot, max_timelines)
        if args.format is None:
            out.write(note + "\n")
            return 0
        print(note, file=sys.stderr)  # stdout carries the decisions
    if options.output_format(args.format, out) == "jsonl":
        options.write_jsonl(result.decisions, out)
    else:
        from sparktide.report import print_decisions

        print_decisions(result.decisions, out)
    return 0
