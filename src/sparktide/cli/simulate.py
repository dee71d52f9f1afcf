"""``sparktide simulate``: run a job through the reference engine and print its records."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from sparktide.cli.options import (
    add_command_parser,
    format_option,
    load_jobs,
    output_format,
    query_option,
    statement_label,
    time_options,
    write_jsonl,
)

__all__ = ["add_command", "execute"]


def add_command(commands: Any) -> None:
    """Add ``simulate`` and its options to the command parsers."""
    sim = add_command_parser(
        commands,
        "simulate",
        "run a job through the reference engine (no Spark)",
        "Run JOB through the pure-Python reference engine and print its records.",
    )
    query_option(sim)
    format_option(
        sim,
        ("jsonl", "table"),
        "jsonl: one JSON object per line; table: for people (default on a terminal)",
    )
    sim.add_argument(
        "--explain", action="store_true", help="add one decision record per input record"
    )
    time_options(sim, no_flush_help="leave open windows open and held events held at the end")


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
