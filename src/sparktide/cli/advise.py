"""``sparktide advise``: measure the input's lateness and disorder and suggest an
``[ordering]`` policy."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from sparktide.cli import options
from sparktide.job import load_job

__all__ = ["add_options", "execute"]


def add_options(command: argparse.ArgumentParser) -> None:
    """Add ``advise``'s arguments and options to its parser."""
    options.job_argument(command)
    for flag, default, metavar, help_text in (
        (
            "--sample",
            "100000",
            "N",
            "use the N earliest records by processing time (default 100000)",
        ),
        (
            "--target-adjusted",
            "0.1%",
            "PERCENT",
            "the largest share of events the policy may adjust or drop (default 0.1%%)",
        ),
        (
            "--top-keys",
            "10",
            "N",
            "with substreams (source.over): show the N busiest keys (default 10)",
        ),
    ):
        options.text_option(command, flag, default, metavar, help_text)
    options.format_option(
        command,
        ("jsonl", "json", "table"),
        "table (default on a terminal), jsonl (default otherwise) or json",
    )


def _show_progress(done: int, total: int) -> None:
    """The candidates priced so far, on one line of a terminal's standard error."""
    end = "\n" if done == total else ""
    print(f"\rsparktide: candidate {done}/{total}", end=end, file=sys.stderr, flush=True)


def execute(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``advise``; returns the exit code."""
    from sparktide.advise import advise, parse_target, sample_records

    sample = options.count_arg(args.sample, "--sample")
    top_keys = options.count_arg(args.top_keys, "--top-keys")
    target = parse_target(args.target_adjusted)
    job = load_job(args.job)
    records, malformed = sample_records(job, sample)
    progress = _show_progress if sys.stderr.isatty() else None
    advice = advise(
        job, records, target=target, top_keys=top_keys, malformed=malformed, progress=progress
    )
    fmt = options.output_format(args.format, out)
    if fmt == "jsonl":
        options.write_jsonl(advice.records(), out)
    elif fmt == "json":
        out.write(json.dumps(advice.as_dict(), ensure_ascii=False, indent=2))
        out.write("\n")
    else:
        from sparktide.report import print_advice

        print_advice(advice, out)
    return 0
