"""``sparktide run``: run a job (or a query's jobs) on Spark Structured Streaming.

Everything is checked before a Spark session starts: the options, the jobs, and that
their inputs can be watched.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, TextIO

from sparktide.cli.options import (
    OUTPUT_START,
    job_argument,
    load_jobs,
    output_start,
    output_start_option,
    query_option,
    write_jsonl,
)
from sparktide.cli.ui import ui_option
from sparktide.errors import ConfigError, InputError, SparktideError
from sparktide.job import Job
from sparktide.time import parse_duration

__all__ = ["add_options", "execute", "spark_trigger"]

_SPARK_INTERVAL = re.compile(
    r"\s*([0-9]+\s*(microseconds?|milliseconds?|seconds?|minutes?|hours?|days?)\s*)+\Z",
    re.IGNORECASE,
)


def add_options(command: argparse.ArgumentParser) -> None:
    """Add ``run``'s arguments and options to its parser."""
    job_argument(command)
    query_option(command)
    command.add_argument(
        "--once", action="store_true", help="process what is there and stop (available-now)"
    )
    command.add_argument(
        "--flush",
        action="store_true",
        help="when the run ends (--once) or stops (Ctrl-C, SIGTERM): close every window",
    )
    command.add_argument(
        "--max-files-per-trigger", type=int, metavar="N", help="at most N new files per batch"
    )
    command.add_argument(
        "--trigger", metavar="INTERVAL", help="processing-time trigger, e.g. '10 seconds'"
    )
    output_start_option(command)
    ui_option(command)


def spark_trigger(text: str) -> str:
    """A ``--trigger`` interval as Spark reads it: Spark's own form (``10 seconds``) is
    kept, a sparktide duration (``10s``, ``1m30s``) becomes milliseconds.

    Raises
    ------
    ConfigError
        If the text is neither, or not whole milliseconds greater than zero.
    """
    if _SPARK_INTERVAL.match(text):
        return text.strip()
    try:
        value = parse_duration(text)
    except SparktideError:
        value = None
    if not value or value % 1000:
        raise ConfigError(
            "--trigger",
            f"expected an interval such as '10 seconds' or '10s' (whole milliseconds, "
            f"more than zero), got {text!r}",
        )
    return f"{value // 1000} milliseconds"


def _check_options(args: argparse.Namespace, job_count: int) -> str | None:
    """Check the options against each other; returns the trigger as Spark reads it."""
    if job_count > 1 and not args.once:
        raise ConfigError(
            "--query",
            f"the query has {job_count} statements, one job each: run them with --once (one "
            "after the other), or run each statement's job on its own (sparktide translate "
            "prints them)",
        )
    if args.ui is not None:
        from sparktide.ui.server import parse_address

        parse_address(args.ui, "--ui")
    if args.max_files_per_trigger is not None and args.max_files_per_trigger < 1:
        raise ConfigError(
            "--max-files-per-trigger", f"must be at least 1, got {args.max_files_per_trigger}"
        )
    return spark_trigger(args.trigger) if args.trigger is not None else None


def _check_jobs(jobs: list[tuple[dict[str, Any] | None, Job]], start: str | int | None) -> None:
    """Check every job, its inputs and the output start time against its checkpoint,
    before a Spark session starts."""
    from sparktide.spark.engine import check_job
    from sparktide.spark.outputstart import check_output_start
    from sparktide.spark.sources import check_watchable

    for _, job in jobs:
        check_job(job)
        check_output_start(job, start, OUTPUT_START)
        for name, source in job.input_sources:
            if source.spark_stream:  # (Spark checks its own source when the run starts)
                continue
            check_watchable(source.path, f"inputs.{name}.path" if name else "source.path")
        for name, reference in job.references:  # (read whole once Spark has started)
            if not Path(reference.path).exists():
                raise InputError(
                    f"inputs.{name}.path: no such file or directory: {reference.path!r}"
                )


#: The API's parameter names in errors, as the command line names them.
_OPTION_KEYS = {"output_start_time": OUTPUT_START, "ui": "--ui"}


def execute(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``run``; returns the exit code."""
    jobs = load_jobs(args)
    trigger = _check_options(args, len(jobs))
    start = output_start(args)
    _check_jobs(jobs, start)
    from sparktide.progress import RunProgress
    from sparktide.spark.run import run_job

    for label, job in jobs:
        with RunProgress() as progress:
            try:
                metrics = run_job(
                    job,
                    once=args.once,
                    flush=args.flush,
                    max_files_per_trigger=args.max_files_per_trigger,
                    trigger=trigger,
                    on_metrics=progress,
                    output_start_time=start,
                    ui=args.ui,
                )
            except ConfigError as exc:  # (named as the command line names it)
                if exc.key not in _OPTION_KEYS:
                    raise
                raise ConfigError(_OPTION_KEYS[exc.key], exc.message) from None
        if label is not None:
            write_jsonl([label], out)
        if metrics is not None:
            write_jsonl([metrics], out)
    return 0
