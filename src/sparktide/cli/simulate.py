"""``sparktide simulate``: run a job through the reference engine and print its records."""

from __future__ import annotations

import argparse
from typing import TextIO

from sparktide.cli import options
from sparktide.errors import ConfigError

__all__ = ["add_options", "execute"]


def add_options(command: argparse.ArgumentParser) -> None:
    """Add ``simulate``'s arguments and options to its parser."""
    options.job_argument(command)
    options.query_option(command)
    options.format_option(
        command,
        ("jsonl", "table"),
        "jsonl: one JSON object per line; table: for people (default on a terminal)",
    )
    command.add_argument(
        "--explain", action="store_true", help="add one decision record per input record"
    )
    options.time_options(
        command, no_flush_help="leave open windows open and held events held at the end"
    )
    options.output_start_option(command)


def execute(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``simulate``; returns the exit code."""
    from sparktide.core.engine import simulate
    from sparktide.reader import job_records

    fmt = options.output_format(args.format, out)
    start = options.output_start(args)
    if start == "last-stopped":
        raise ConfigError(
            options.OUTPUT_START,
            "'last-stopped' resumes a run's checkpoint, and simulate keeps none: give a time",
        )
    for label, job in options.load_jobs(args):
        records = job_records(job)
        result = simulate(
            job,
            records,
            until=args.until,
            tick=args.tick,
            flush=args.flush,
            explain=args.explain,
            output_start=start,
        )
        if fmt == "jsonl":
            options.write_jsonl([label] if label is not None else [], out)
            options.write_jsonl(result.records(explain=args.explain), out)
        else:
            from sparktide.report import print_tables

            if label is not None:
                out.write(options.statement_label(label) + "\n")
            print_tables(result, out, explain=args.explain)
    return 0
