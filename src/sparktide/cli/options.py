"""What the commands share: option types, the ``--query`` option and the jobs it makes,
and JSON lines out."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from sparktide.errors import ConfigError, SparktideError
from sparktide.job import Job, load_job
from sparktide.time import parse_duration, parse_instant

__all__ = [
    "count_arg",
    "duration_arg",
    "format_option",
    "instant_arg",
    "job_argument",
    "load_jobs",
    "output_format",
    "output_start",
    "output_start_option",
    "query_option",
    "statement_label",
    "text_option",
    "time_options",
    "write_jsonl",
]


def instant_arg(text: str) -> int:
    """An instant option (``--until``), for argparse."""
    try:
        return parse_instant(text)
    except SparktideError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def duration_arg(text: str) -> int:
    """A duration option greater than zero (``--tick``), for argparse."""
    try:
        value = parse_duration(text)
    except SparktideError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not value:
        raise argparse.ArgumentTypeError("must be greater than zero")
    return value


def count_arg(text: str, option: str, *, minimum: int = 1) -> int:
    """A whole-number option of at least ``minimum`` (``_`` separators allowed).

    Raises
    ------
    ConfigError
        Naming ``option``, if the text is not such a number.
    """
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise ConfigError(option, f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise ConfigError(option, f"must be at least {minimum}, got {text!r}")
    return value


def job_argument(command: argparse.ArgumentParser) -> None:
    """Add the ``JOB.toml`` argument to a command that reads a job file."""
    command.add_argument("job", metavar="JOB.toml", help="the job file")


def text_option(
    command: argparse.ArgumentParser, flag: str, default: str, metavar: str, help_text: str
) -> None:
    """Add an option read as text (checked when the command runs)."""
    command.add_argument(flag, default=default, metavar=metavar, help=help_text)


def format_option(
    command: argparse.ArgumentParser, choices: tuple[str, ...], help_text: str
) -> None:
    """Add ``--format`` (no default: :func:`output_format` chooses)."""
    command.add_argument("--format", choices=choices, default=None, help=help_text)


def query_option(command: argparse.ArgumentParser) -> None:
    """Add ``--query FILE`` to a command that runs jobs."""
    command.add_argument(
        "--query",
        metavar="FILE",
        help="run a Stream Analytics query (.asaql) or an Atlas pipeline (.json, .yaml); "
        "JOB.toml binds its input and output names (docs/query.md)",
    )


def time_options(command: argparse.ArgumentParser, *, no_flush_help: str) -> None:
    """Add ``--until``, ``--tick`` and ``--no-flush`` to a command that runs the
    reference engine."""
    command.add_argument(
        "--until",
        type=instant_arg,
        metavar="TIME",
        help="advance processing time to TIME after the last record, firing timers",
    )
    command.add_argument(
        "--tick",
        type=duration_arg,
        metavar="DURATION",
        help="also observe time at every multiple of DURATION (idle estimates, timers)",
    )
    command.add_argument("--no-flush", dest="flush", action="store_false", help=no_flush_help)


def output_start_option(command: argparse.ArgumentParser) -> None:
    """Add ``--output-start-time TIME|now|last-stopped`` (checked when the command runs)."""
    command.add_argument(
        "--output-start-time",
        metavar="TIME|now|last-stopped",
        help="write results from TIME on, exactly as a run from the beginning would "
        "(events arriving before the derived read point are skipped; docs/semantics.md §12)",
    )


#: The option's name in errors.
OUTPUT_START = "--output-start-time"


def output_start(args: argparse.Namespace) -> str | int | None:
    """The ``--output-start-time`` value: ``now``, ``last-stopped`` or microseconds.

    Raises
    ------
    ConfigError
        Naming ``--output-start-time``, when it is none of these.
    """
    from sparktide.job.start import output_start_option as check

    return check(args.output_start_time, OUTPUT_START)


def load_jobs(args: argparse.Namespace) -> list[tuple[dict[str, Any] | None, Job]]:
    """The jobs to run: ``JOB.toml``'s, or one per statement of ``--query FILE`` (with
    ``JOB.toml`` binding its names). When a query has several statements, each job comes
    with its ``statement`` record (which statement, its line, its output); else ``None``."""
    if getattr(args, "query", None) is None:
        return [(None, load_job(args.job))]
    from sparktide.query import translate_file

    statements = translate_file(args.query, args.job).statements
    if len(statements) == 1:
        return [(None, statements[0].job)]
    return [
        (
            {
                "type": "statement",
                "statement": number,
                "statements": len(statements),
                "line": statement.line,
                "output": statement.output,
            },
            statement.job,
        )
        for number, statement in enumerate(statements, start=1)
    ]


def statement_label(record: dict[str, Any]) -> str:
    """A statement record as a line for people."""
    into = f"INTO {record['output']}" if record["output"] is not None else "no INTO"
    return (
        f"statement {record['statement']} of {record['statements']} (line {record['line']}): {into}"
    )


def output_format(chosen: str | None, out: TextIO) -> str:
    """The ``--format`` given, else ``table`` on a terminal and ``jsonl`` elsewhere."""
    return chosen or ("table" if out.isatty() else "jsonl")


def write_jsonl(records: list[dict[str, Any]], out: TextIO) -> None:
    """Write records as JSON lines."""
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False, default=str))
        out.write("\n")
