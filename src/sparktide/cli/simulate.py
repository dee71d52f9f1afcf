"""``sparktide simulate``: run a job through the reference engine and print its records."""

from __future__ import annotations

import argparse
from typing import TextIO

from sparktide.cli.options import (
    format_option,
    job_argument,
    load_jobs,
    output_format,
    query_option,
    statement_label,
    time_options,
    write_jsonl,
)

__all__ = ["add_options", "execute"]


def add_options(command: argparse.ArgumentParser) -> None:
    """Add ``simulate``'s arguments and options to its parser."""
    job_argument(command)
    query_option(command)
    format_option(
        command,
        ("jsonl", "table"),
        "jsonl: one JSON object per line; table: for people (default on a terminal)",
    )
    command.add_argument(
        "--explain", action="store_true", help="add one decision record per input record"
    )
    time_options(command, no_flush_help="leave open windows open and held events held at the end")


def execute(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``simulate``; returns the exit code."""
    from sparktide.core.engine import simulate
    from sparktide.reader import job_records

    fmt = output_format(args.format, out)
    for label, job in load_jobs(args):
        records = job_records(job)
        result = simulate(
            job, records, until=args.until, tick=args.tick, flush=args.flush, explain=args.explain
        )
        if fmt == "jsonl":
            write_jsonl([label] if label is not None else [], out)
            write_jsonl(result.records(explain=args.explain), out)
        else:
            from sparktide.report import print_tables

            if label is not None:
                out.write(statement_label(label) + "\n")
            print_tables(result, out, explain=args.explain)
    return 0
