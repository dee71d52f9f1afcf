"""The command line's parser and entry point: each command's options and its work live
in a module of their own, named after it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from sparktide.cli import advise, demo, explain, run, simulate, translate
from sparktide.errors import RunError, SparktideError

__all__ = ["main"]

#: The commands, in the order ``--help`` lists them.
_COMMANDS = {
    "simulate": simulate,
    "explain": explain,
    "advise": advise,
    "run": run,
    "translate": translate,
    "demo": demo,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparktide",
        description="Stream Analytics-style event time for Spark Structured Streaming.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS.values():
        command.add_command(commands)
    return parser


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None) -> int:
    """Entry point of the ``sparktide`` console script; returns the exit code."""
    out = stdout if stdout is not None else sys.stdout
    args = _parser().parse_args(argv)
    execute: Callable[[argparse.Namespace, TextIO], int] = _COMMANDS[args.command].execute
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
