"""``sparktide demo``: generate a telemetry stream and run it end to end on local Spark
(:mod:`sparktide.demo`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from sparktide.cli.options import text_option

__all__ = ["add_options", "execute"]


def add_options(command: argparse.ArgumentParser) -> None:
    """Add ``demo``'s arguments and options to its parser."""
    text_option(
        command,
        "--dir",
        "sparktide-demo",
        "DIR",
        "working directory for the data and outputs (replaced)",
    )


def execute(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``demo``; returns the exit code."""
    from sparktide.demo import main as demo_main

    return demo_main(Path(args.dir).resolve(), out)
