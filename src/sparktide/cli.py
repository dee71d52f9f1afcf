"""The ``sparktide`` command line: ``simulate``, ``explain`` and ``advise`` (reference
engine), ``run`` (Spark), ``translate`` (queries and pipelines as job files) and ``demo``.

Exit codes: 0 success, 1 a run stopped on a fault outside sparktide (an output or the
checkpoint cannot be written), 2 bad configuration or unreadable input (one line on
stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from sparktide.errors import ConfigError, InputError, RunError, SparktideError
from sparktide.job import Job, load_job
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
    _query_option(sim)
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
    _explain_parser(commands)
    _advise_parser(commands)
    run = commands.add_parser(
        "run",
        help="run a job on Spark (local Spark unless a session is configured)",
        description="Run JOB on Spark Structured Streaming, writing its [output] directories.",
    )
    run.add_argument("job", metavar="JOB.toml", help="the job file")
    _query_option(run)
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
    _translate_parser(commands)
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


def _query_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--query",
        metavar="FILE",
        help="run a Stream Analytics query (.asaql) or an Atlas pipeline (.json, .yaml); "
        "JOB.toml binds its input and output names (docs/query.md)",
    )


def _translate_parser(commands: Any) -> None:
    translate = commands.add_parser(
        "translate",
        help="print the job a Stream Analytics query or Atlas pipeline becomes",
        description="Translate QUERY (a Stream Analytics query, .asaql, or an Atlas Stream "
        "Processing pipeline, .json/.yaml) into a sparktide job file and print it. Without "
        "--job, each input and output is a folder named like it.",
    )
    translate.add_argument("query", metavar="QUERY_FILE", help="the query or pipeline")
    translate.add_argument(
        "--job", metavar="JOB.toml", help="the job file that binds its inputs and outputs"
    )


def _explain_parser(commands: Any) -> None:
    explain = commands.add_parser(
        "explain",
        help="the reference engine's decision on every record, as a table or a chart",
        description="Run JOB through the reference engine and show the decision it took on "
        "every input record: a table (or JSON lines), or with --plot a chart of event time "
        "against arrival time with the watermarks, verdicts and windows.",
    )
    explain.add_argument("job", metavar="JOB.toml", help="the job file")
    explain.add_argument(
        "--plot",
        metavar="FILE",
        help="draw a chart into FILE (.png, .svg, .pdf, or .html: one self-contained page)",
    )
    explain.add_argument(
        "--x",
        default="arrival",
        metavar="AXIS",
        help="time across the chart: arrival (default) or processing",
    )
    explain.add_argument(
        "--max-timelines",
        default="8",
        metavar="N",
        help="draw the watermarks of at most N timelines, the busiest (default 8)",
    )
    explain.add_argument(
        "--format",
        choices=("jsonl", "table"),
        default=None,
        help="print the decisions as jsonl or a table (default: table on a terminal; "
        "with --plot nothing is printed unless --format is given)",
    )
    explain.add_argument(
        "--until",
        type=_instant_arg,
        metavar="TIME",
        help="advance processing time to TIME after the last record, firing timers",
    )
    explain.add_argument(
        "--tick",
        type=_duration_arg,
        metavar="DURATION",
        help="also observe time at every multiple of DURATION (idle estimates, timers)",
    )
    explain.add_argument(
        "--no-flush",
        dest="flush",
        action="store_false",
        help="leave open windows open at the end (the chart then shows fewer windows)",
    )


def _advise_parser(commands: Any) -> None:
    advise = commands.add_parser(
        "advise",
        help="measure lateness and disorder in the input and suggest an [ordering] policy",
        description="Read a sample of JOB's input, report how late and how disordered it is, "
        "what candidate late_arrival / out_of_order settings would cost (events adjusted or "
        "dropped, output delay), and recommend one.",
    )
    advise.add_argument("job", metavar="JOB.toml", help="the job file")
    advise.add_argument(
        "--sample",
        default="100000",
        metavar="N",
        help="use the N earliest records by processing time (default 100000)",
    )
    advise.add_argument(
        "--target-adjusted",
        default="0.1%",
        metavar="PERCENT",
        help="the largest share of events the policy may adjust or drop (default 0.1%%)",
    )
    advise.add_argument(
        "--top-keys",
        default="10",
        metavar="N",
        help="with substreams (source.over): show the N busiest keys (default 10)",
    )
    advise.add_argument(
        "--format",
        choices=("jsonl", "json", "table"),
        default=None,
        help="table (default on a terminal), jsonl (default otherwise) or json",
    )


def _count_arg(text: str, option: str, *, minimum: int = 1) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise ConfigError(option, f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise ConfigError(option, f"must be at least {minimum}, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None) -> int:
    """Entry point of the ``sparktide`` console script; returns the exit code."""
    out = stdout if stdout is not None else sys.stdout
    args = _parser().parse_args(argv)
    try:
        if args.command == "simulate":
            return _simulate(args, out)
        if args.command == "explain":
            return _explain(args, out)
        if args.command == "advise":
            return _advise(args, out)
        if args.command == "run":
            return _run(args, out)
        if args.command == "translate":
            return _translate(args, out)
        if args.command == "demo":
            from pathlib import Path

            from sparktide.demo import main as demo_main

            return demo_main(Path(args.dir).resolve(), out)
    except RunError as exc:
        print(f"sparktide: error: {exc}", file=sys.stderr)
        return 1
    except SparktideError as exc:
        print(f"sparktide: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sparktide: interrupted", file=sys.stderr)
        return 130
    return 2  # pragma: no cover - argparse rejects unknown commands


def _load(args: argparse.Namespace) -> list[tuple[dict[str, Any] | None, Job]]:
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


def _label(record: dict[str, Any]) -> str:
    """A statement record as a line for people."""
    into = f"INTO {record['output']}" if record["output"] is not None else "no INTO"
    return (
        f"statement {record['statement']} of {record['statements']} (line {record['line']}): {into}"
    )


def _translate(args: argparse.Namespace, out: TextIO) -> int:
    from pathlib import Path

    from sparktide.query import job_to_toml, translate_file

    translation = translate_file(args.query, args.job)
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


def _simulate(args: argparse.Namespace, out: TextIO) -> int:
    from sparktide.core.engine import simulate
    from sparktide.reader import job_records

    fmt = args.format or ("table" if out.isatty() else "jsonl")
    for label, job in _load(args):
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
                out.write(_label(label) + "\n")
            print_tables(result, out, explain=args.explain)
    return 0


def _explain(args: argparse.Namespace, out: TextIO) -> int:
    from pathlib import Path

    from sparktide.core.engine import simulate
    from sparktide.plot import X_AXES, check_chart_path
    from sparktide.reader import job_records

    if args.x not in X_AXES:
        raise ConfigError("--x", f"must be one of {', '.join(X_AXES)}; got {args.x!r}")
    max_timelines = _count_arg(args.max_timelines, "--max-timelines")
    plot = check_chart_path(args.plot) if args.plot is not None else None
    job = load_job(args.job)
    records = job_records(job)
    if plot is None:
        result = simulate(job, records, until=args.until, tick=args.tick, flush=args.flush)
    else:
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
        note = f"sparktide: wrote {plot}: {data.size} events ({summary or 'none'})"
        if args.format is None:
            out.write(note + "\n")
            return 0
        print(note, file=sys.stderr)  # stdout carries the decisions
    fmt = args.format or ("table" if out.isatty() else "jsonl")
    if fmt == "jsonl":
        write_jsonl(result.decisions, out)
    else:
        from sparktide.report import print_decisions

        print_decisions(result.decisions, out)
    return 0


def _advise(args: argparse.Namespace, out: TextIO) -> int:
    from sparktide.advise import advise, parse_target, sample_records

    sample = _count_arg(args.sample, "--sample")
    top_keys = _count_arg(args.top_keys, "--top-keys")
    target = parse_target(args.target_adjusted)
    job = load_job(args.job)
    records, malformed = sample_records(job, sample)
    progress = None
    if sys.stderr.isatty():

        def progress(done: int, total: int) -> None:
            end = "\n" if done == total else ""
            print(f"\rsparktide: candidate {done}/{total}", end=end, file=sys.stderr, flush=True)

    advice = advise(
        job, records, target=target, top_keys=top_keys, malformed=malformed, progress=progress
    )
    fmt = args.format or ("table" if out.isatty() else "jsonl")
    if fmt == "jsonl":
        write_jsonl(advice.records(), out)
    elif fmt == "json":
        out.write(json.dumps(advice.as_dict(), ensure_ascii=False, indent=2))
        out.write("\n")
    else:
        from sparktide.report import print_advice

        print_advice(advice, out)
    return 0


def _run(args: argparse.Namespace, out: TextIO) -> int:
    from pathlib import Path

    jobs = _load(args)
    if args.flush and not args.once:
        raise ConfigError("--flush", "only applies to a --once run")
    if len(jobs) > 1 and not args.once:
        raise ConfigError(
            "--query",
            f"the query has {len(jobs)} statements, one job each: run them with --once (one "
            "after the other), or run each statement's job on its own (sparktide translate "
            "prints them)",
        )
    if args.max_files_per_trigger is not None and args.max_files_per_trigger < 1:
        raise ConfigError(
            "--max-files-per-trigger", f"must be at least 1, got {args.max_files_per_trigger}"
        )
    trigger = _trigger(args.trigger) if args.trigger is not None else None
    from sparktide.spark.engine import check_job
    from sparktide.spark.sources import check_watchable

    for _, job in jobs:  # everything is checked before a Spark session starts
        check_job(job)
        for name, source in job.input_sources:
            check_watchable(source.path, f"inputs.{name}.path" if name else "source.path")
        for name, reference in job.references:  # (read whole once Spark has started)
            if not Path(reference.path).exists():
                raise InputError(
                    f"inputs.{name}.path: no such file or directory: {reference.path!r}"
                )
    from sparktide.progress import RunProgress
    from sparktide.spark.run import run_job

    for label, job in jobs:
        with RunProgress() as progress:
            metrics = run_job(
                job,
                once=args.once,
                flush=args.flush,
                max_files_per_trigger=args.max_files_per_trigger,
                trigger=trigger,
                on_metrics=progress,
            )
        if label is not None:
            write_jsonl([label], out)
        if metrics is not None:
            write_jsonl([metrics], out)
    return 0


_SPARK_INTERVAL = re.compile(
    r"\s*([0-9]+\s*(microseconds?|milliseconds?|seconds?|minutes?|hours?|days?)\s*)+\Z",
    re.IGNORECASE,
)


def _trigger(text: str) -> str:
    """A ``--trigger`` interval as Spark reads it: Spark's own form (``10 seconds``) is
    kept, a sparktide duration (``10s``, ``1m30s``) becomes milliseconds."""
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


def write_jsonl(records: list[dict[str, Any]], out: TextIO) -> None:
    """Write records as JSON lines."""
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False, default=str))
        out.write("\n")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
