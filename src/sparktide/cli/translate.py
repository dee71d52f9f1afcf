"""``sparktide translate``: print the job file a Stream Analytics query or an Atlas
pipeline becomes (one per statement)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

__all__ = ["add_options", "execute"]


def add_options(command: argparse.ArgumentParser) -> None:
    """Add ``translate``'s arguments and options to its parser."""
    command.add_argument("query", metavar="QUERY_FILE", help="the query or pipeline")
    command.add_argument(
        "--job", metavar="JOB.toml", help="the job file that binds its inputs and outputs"
    )
    command.add_argument(
        "--graph",
        action="store_true",
        help="print the query's step graph (inputs, steps, outputs) before its jobs",
    )


def execute(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``translate``; returns the exit code."""
    from sparktide.query import job_to_toml, query_graph_text, translate_file

    translation = translate_file(args.query, args.job)
    graph = query_graph_text(args.query) if args.graph else ""
    if graph:  # (a pipeline is a chain of stages: no graph is drawn)
        out.write(graph + "\n")
    origin = f"translated from {Path(args.query).name} by sparktide translate"
    statements = translation.statements
    for number, statement in enumerate(statements, start=1):
        comments = [origin, *statement.notes]
        if len(statements) > 1:
            into = f"INTO {statement.output}" if statement.output is not None else "no INTO"
            head = f"=== statement {number} of {len(statements)} (line {statement.line}): {into}"
            comments = [head + " ===", *comments]
            if number > 1:
                out.write("\n")
        out.write(job_to_toml(statement.job, comments))
    return 0
