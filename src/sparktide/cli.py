"""The ``sparktide`` command line: ``simulate`` (reference engine) and friends.

Exit codes: 0 success, 2 bad configuration or unreadable input (one line on stderr,
no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from sparktide.errors import ConfigError, SparktideError
from sparktide.job import load_job
from sparktide.time import parse_duration, parse_instant

__all__ = ["main"]


def _instant_arg(text: str) -> int:
    try:
        return parse_instant(text)
    except SparktideError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _duration_arg(text: str) -> int:
    try:
        value = parse_duration(text)
    except SparktideError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not value:
        raise argparse.ArgumentTypeError("must be greater than zero")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparktide",
        description="Stream Analytics-style event time for Spark Structured Streaming.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sim = commands.add_parser(
        "simulate",
        help="run a job through the reference engine (no Spark)",
        description="Run JOB through the pure-Python reference engine and print its records.",
    )
    sim.add_argument("job", metavar="JOB.toml", help="the job file")
    sim.add_argument(
        "--format",
        choices=("jsonl", "table"),
        default=None,
        help="jsonl: one JSON object per line; table: for people (default on a terminal)",
    )
    sim.add_argument(
        "--explain", action="store_true", help="add one decision record per input record"
    )
    sim.add_argument(
        "--until",
        type=_instant_arg,
        metavar="TIME",
        help="advance processing time to TIME after the last record, firing timers",
    )
    sim.add_argument(
        "--tick",
        type=_duration_arg,
        metavar="DURATION",
        help="also observe time at every multiple of DURATION (idle estimates, timers)",
    )
    sim.add_argument(
        "--no-flush",
        dest="flush",
        action="store_false",
        help="leave open windows open and held events held at the end",
    )
    run = commands.add_parser(
        "run",
        help="run a job on Spark (local Spark unless a session is configured)",
        description="Run JOB on Spark Structured Streaming, writing its [output] directories.",
    )
    run.add_argument("job", metavar="JOB.toml", help="the job file")
    run.add_argument(
        "--once", action="store_true", help="process what is there and stop (available-now)"
    )
    run.add_argument(
        "--flush", action="store_true", help="with --once: close every window at the end"
    )
    run.add_argument(
        "--max-files-per-trigger", type=int, metavar="N", help="at most N new files per batch"
    )
    run.add_argument(
        "--trigger", metavar="INTERVAL", help="processing-time trigger, e.g. '10 seconds'"
    )
    demo = commands.add_parser(
        "demo",
        help="generate a telemetry stream and run it end to end on local Spark",
        description="Generate a disorderly telemetry stream, run it on local Spark, show "
        "the window results, dead letters and metrics.",
    )
    demo.add_argument(
        "--dir",
        default="sparktide-demo",
        metavar="DIR",
        help="working directory for the data and outputs (replaced)",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None) -> int:
    """Entry point of the ``sparktide`` console script; returns the exit code."""
    out = stdout if stdout is not None else sys.stdout
    args = _parser().parse_args(argv)
    try:
        if args.command == "simulate":
            return _simulate(args, out)
        if args.command == "run":
            return _run(args, out)
        if args.command == "demo":
            from pathlib import Path

            from sparktide.demo import main as demo_main

            return demo_main(Path(args.dir).resolve(), out)
    except SparktideError as exc:
        print(f"sparktide: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sparktide: interrupted", file=sys.stderr)
        return 130
    return 2  # pragma: no cover - argparse rejects unknown commands


def _simulate(args: argparse.Namespace, out: TextIO) -> int:
    from sparktide.core.engine import simulate
    from sparktide.reader import read_records

    job = load_job(args.job)
    records = read_records(job.source, numeric=job.numeric_columns)
    result = simulate(
        job, records, until=args.until, tick=args.tick, flush=args.flush, explain=args.explain
    )
    fmt = args.format or ("table" if out.isatty() else "jsonl")
    if fmt == "jsonl":
        write_jsonl(result.records(explain=args.explain), out)
    else:
        from sparktide.report import print_tables

        print_tables(result, out, explain=args.explain)
    return 0


def _run(args: argparse.Namespace, out: TextIO) -> int:
    job = load_job(args.job)
    if args.flush and not args.once:
        raise ConfigError("--flush", "only applies to a --once run")
    from sparktide.spark.run import run_job

    metrics = run_job(
        job,
        once=args.once,
        flush=args.flush,
        max_files_per_trigger=args.max_files_per_trigger,
        trigger=args.trigger,
    )
    if metrics is not None:
        write_jsonl([metrics], out)
    return 0


def write_jsonl(records: list[dict[str, Any]], out: TextIO) -> None:
    """Write records as JSON lines."""
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False, default=str))
        out.write("\n")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
