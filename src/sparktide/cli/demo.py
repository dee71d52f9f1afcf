"""``sparktide demo``: generate a telemetry stream and run it end to end on local Spark
(:mod:`sparktide.demo`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from sparktide.cli.options import add_command_parser, text_option

__all__ = ["add_command", "execute"]


def add_command(commands: Any) -> None:
    """Add ``demo`` and its options to the command parsers."""
    demo = add_command_parser(
        commands,
        "demo",
        "generate a telemetry stream and run it end to end on local Spark",
        "Generate a disorderly telemetry stream, run it on local Spark, show "
        "the window results, dead letters and metrics.",
        job=False,
    )
    text_option(
        demo,
        "--dir",
        "sparktide-demo",
        "DIR",
        "working directory for the data and outputs (replaced)",
    )


def execute(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``demo``; returns the exit code."""
    from sparktide.demo import main as demo_main

    return demo_main(Path(args.dir).resolve(), out)
