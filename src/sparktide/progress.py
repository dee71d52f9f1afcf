"""``sparktide run``'s progress: a live status line on a terminal, log lines elsewhere.

The Spark engine calls a :class:`RunProgress` with each micro-batch's metrics record;
diagnostics the engine logs (logger ``sparktide``) appear above the status line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

from rich.console import Console
from rich.logging import RichHandler

from sparktide.time import round_duration

__all__ = ["RunProgress", "status_text"]


#: Without a terminal, a line per batch that changed these totals ...
_PROGRESS_TOTALS = ("input", "windows_emitted", "released", "dead_lettered", "dropped")
#: ... and one every this many seconds otherwise.
QUIET_LINE_EVERY = 60.0


def status_text(metrics: dict[str, Any], rate: float | None) -> str:
    """One line on a run so far: batches, events/s, job watermark, watermark delay,
    windows emitted and dead letters, from a metrics record."""
    dead = sum(metrics.get("dead_lettered", {}).values())
    delay = metrics.get("watermark_delay_us")
    parts = [
        f"batch {metrics.get('batch', '-')}" + (" (flush)" if metrics.get("flushed") else ""),
        f"{metrics.get('input', 0):,} events",
    ]
    if rate is not None:
        parts.append(f"{rate:,.0f} events/s")
    parts += [
        f"watermark {metrics.get('watermark') or '-'}",
        f"delay {round_duration(delay) if delay is not None else '-'}",
        f"{metrics.get('windows_emitted', 0):,} windows",
        f"{dead:,} dead letters",
    ]
    return " · ".join(parts)


class RunProgress:
    """Shows a running job's progress; use as a context manager and pass the instance as
    ``on_metrics`` to :func:`sparktide.spark.run_job`.

    Parameters
    ----------
    stream
        Where to write (standard error by default). On a terminal the status is one line
        redrawn after every micro-batch; otherwise one plain log line per micro-batch.
    clock
        Monotonic seconds (tests pass their own).
    """

    def __init__(
        self, stream: TextIO | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.console = Console(file=stream, stderr=stream is None)
        self.live = self.console.is_terminal
        self._clock = clock
        self._previous: tuple[float, int] | None = None
        #: The totals at the last log line, and when it was written.
        self._logged: tuple[tuple[Any, ...], float] = ((), float("-inf"))
        self._status: Any = None
        self._handler: logging.Handler | None = None

    def __enter__(self) -> RunProgress:
        logger = logging.getLogger("sparktide")
        if self.live:
            self._handler = RichHandler(console=self.console, show_path=False)
            self._status = self.console.status("sparktide: starting Spark")
            self._status.start()
        else:
            self._handler = logging.StreamHandler(self.console.file)
            self._handler.setFormatter(logging.Formatter("sparktide: %(message)s"))
        logger.addHandler(self._handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._status is not None:
            self._status.stop()
        logger = logging.getLogger("sparktide")
        if self._handler is not None:
            logger.removeHandler(self._handler)
        logger.propagate = True

    def __call__(self, metrics: dict[str, Any]) -> None:
        """Show one micro-batch's metrics record."""
        now = self._clock()
        total = int(metrics.get("input", 0))
        rate = None  # over the last micro-batch: the first one's time includes start-up
        if self._previous is not None and now > self._previous[0] and not metrics.get("flushed"):
            rate = (total - self._previous[1]) / (now - self._previous[0])
        self._previous = (now, total)
        text = status_text(metrics, rate)
        if self._status is not None:
            self._status.update(f"sparktide: {text}")
        elif self._worth_a_line(metrics, now):
            logging.getLogger("sparktide").info(text)

    def _worth_a_line(self, metrics: dict[str, Any], now: float) -> bool:
        """Whether a log line is due: the batch read, emitted or released something, is
        the flush, or a minute passed since the last line (a quiet run has a batch on
        every trigger)."""
        totals = tuple(metrics.get(name, 0) for name in _PROGRESS_TOTALS)
        quiet = totals == self._logged[0] and now - self._logged[1] < QUIET_LINE_EVERY
        if quiet and not metrics.get("flushed"):
            return False
        self._logged = (totals, now)
        return True
