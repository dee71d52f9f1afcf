"""The command line's parser and entry point: each command's options and its work live
in a module of their own, named after it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TextIO

from sparktide import __version__
from sparktide.cli import advise, demo, explain, run, simulate, translate, ui
from sparktide.errors import RunError, SparktideError

__all__ = ["main"]

#: The commands, in the order ``--help`` lists them: the module that adds its options and
#: runs it, its line in ``sparktide --help`` and its description in ``--help`` of its own.
_COMMANDS: dict[str, tuple[ModuleType, str, str]] = {
    "simulate": (
        simulate,
        "run a job through the reference engine (no Spark)",
        "Run JOB through the pure-Python reference engine and print its records.",
    ),
    "explain": (
        explain,
        "the reference engine's decision on every record, as a table or a chart",
        "Run JOB through the reference engine and show the decision it took on "
        "every input record: a table (or JSON lines), or with --plot a chart of event time "
        "against arrival time with the watermarks, verdicts and windows.",
    ),
    "advise": (
        advise,
        "measure lateness and disorder in the input and suggest an [ordering] policy",
        "Read a sample of JOB's input, report how late and how disordered it is, "
        "what candidate late_arrival / out_of_order settings would cost (events adjusted or "
        "dropped, output delay), and recommend one.",
    ),
    "run": (
        run,
        "run a job on Spark (local Spark unless a session is configured)",
        "Run JOB on Spark Structured Streaming, writing its [output] directories.",
    ),
    "ui": (
        ui,
        "serve the live watermark page and Prometheus /metrics of a job's metrics",
        "Serve the live page (watermarks, partitions, verdicts per batch, diagnostics, "
        "dead letters) and Prometheus /metrics of a job from its metrics directory, "
        "following it as it grows.",
    ),
    "translate": (
        translate,
        "print the job a Stream Analytics query or Atlas pipeline becomes",
        "Translate QUERY (a Stream Analytics query, .asaql, or an Atlas Stream "
        "Processing pipeline, .json/.yaml) into a sparktide job file and print it. Without "
        "--job, each input and output is a folder named like it.",
    ),
    "demo": (
        demo,
        "generate a telemetry stream and run it end to end on local Spark",
        "Generate a disorderly telemetry stream, run it on local Spark, show "
        "the window results, dead letters and metrics.",
    ),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparktide",
        description="Stream Analytics-style event time for Spark Structured Streaming.",
    )
    parser.add_argument("--version", action="version", version=f"sparktide {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, summary, description) in _COMMANDS.items():
        module.add_options(commands.add_parser(name, help=summary, description=description))
    return parser


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None) -> int:
    """Entry point of the ``sparktide`` console script; returns the exit code."""
    out = stdout if stdout is not None else sys.stdout
    args = _parser().parse_args(argv)
    execute: Callable[[argparse.Namespace, TextIO], int] = _COMMANDS[args.command][0].execute
    try:
        return execute(args, out)
    except RunError as exc:
        print(f"sparktide: error: {exc}", file=sys.stderr)
        return 1
    except SparktideError as exc:
        print(f"sparktide: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sparktide: interrupted", file=sys.stderr)
        return 130
