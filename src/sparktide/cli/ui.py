"""``sparktide ui``: the live page and ``/metrics`` of a job's metrics directory."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import TextIO

from sparktide.ui.server import parse_address

__all__ = ["DEFAULT_ADDRESS", "add_options", "execute", "ui_option"]

#: Where ``sparktide ui`` serves when ``--address`` is not given.
DEFAULT_ADDRESS = "127.0.0.1:8765"


def ui_option(command: argparse.ArgumentParser) -> None:
    """Add ``--ui [HOST:]PORT`` to ``run``."""
    command.add_argument(
        "--ui",
        metavar="[HOST:]PORT",
        help="serve a live watermark page and Prometheus /metrics on PORT while the job "
        "runs (127.0.0.1 unless HOST is given; docs/metrics.md)",
    )


def add_options(command: argparse.ArgumentParser) -> None:
    """Add ``ui``'s arguments and options to its parser."""
    command.add_argument(
        "metrics", metavar="METRICS_DIR", help="the job's metrics directory ([output] metrics)"
    )
    command.add_argument(
        "--address",
        default=DEFAULT_ADDRESS,
        metavar="[HOST:]PORT",
        help=f"where to serve (default {DEFAULT_ADDRESS}; 127.0.0.1 unless HOST is given)",
    )
    command.add_argument(
        "--dead-letter", metavar="DIR", help="the job's dead-letter directory: show the latest"
    )
    command.add_argument(
        "--job",
        metavar="NAME",
        help="the job label (default: as run --ui labels it: the checkpoint of "
        "CHECKPOINT/sparktide/metrics, else METRICS_DIR)",
    )


def execute(args: argparse.Namespace, out: TextIO, *, until: threading.Event | None = None) -> int:
    """Serve until Ctrl-C (or ``until`` is set); returns the exit code."""
    from sparktide.ui.live import directory_label, serve_directory

    parse_address(args.address, "--address")
    server, follower = serve_directory(
        args.metrics,
        args.address,
        job=args.job or directory_label(args.metrics),
        dead_letter=args.dead_letter,
    )
    print(
        f"sparktide: serving {server.url} (and {server.url}metrics); Ctrl-C stops", file=sys.stderr
    )
    until = until or threading.Event()
    try:
        while not until.wait(0.5):  # (short waits: Ctrl-C lands between them)
            pass
    except KeyboardInterrupt:  # (Ctrl-C is how it ends)
        pass
    finally:
        follower.stop()
        server.stop()
    return 0
