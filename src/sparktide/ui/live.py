"""A running query's live page: the state fed by the engine's ``on_metrics``, the server,
and their end with the query."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from sparktide.job import Job
from sparktide.ui.follow import MetricsFollower
from sparktide.ui.server import UiServer
from sparktide.ui.state import LiveState

__all__ = ["LiveView", "directory_label", "job_label", "serve_directory"]


def directory_label(directory: str) -> str:
    """The ``job`` label of a metrics directory (``/metrics``, the page's title): the
    checkpoint of ``<checkpoint>/sparktide/metrics`` (as Spark names the job's query,
    ``sparktide:<checkpoint>``), else the directory itself; a local path made absolute,
    so that ``run --ui`` and ``sparktide ui`` label a job alike."""
    path = directory.removeprefix("file:")
    if "://" not in path:
        path = os.path.abspath(path)
    head, _, tail = path.rstrip("/").rpartition("/sparktide/")
    return head if tail == "metrics" and head else path


def job_label(job: Job) -> str:
    """The ``job`` label of a job: its metrics directory's (:func:`directory_label`)."""
    from sparktide.spark.outputs.metrics import metrics_directory_of

    return directory_label(metrics_directory_of(job))


class LiveView:
    """The live page and ``/metrics`` of one job, served while it runs.

    Parameters
    ----------
    job
        The job (its label, its dead-letter directory).
    address
        ``[HOST:]PORT`` to serve on (127.0.0.1 when no host is given; port 0: a free one).
    forward
        The caller's own ``on_metrics``, called after the state is fed.
    option
        What gave the address, named in errors (``--ui`` on the command line).

    Raises
    ------
    ConfigError
        The address is not ``[HOST:]PORT`` or cannot be bound.

    Attributes
    ----------
    state, server
        The :class:`LiveState` and :class:`UiServer`; ``server.url`` is the page.
    """

    def __init__(
        self,
        job: Job,
        address: str,
        forward: Callable[[dict[str, Any]], None] | None = None,
        *,
        option: str = "ui",
    ) -> None:
        self.state = LiveState(job_label(job), dead_letter=job.output.dead_letter)
        self.server = UiServer(self.state, address, option=option)
        self._forward = forward
        self._lock = threading.Lock()
        self._stopped = False

    def __call__(self, record: dict[str, Any]) -> None:
        """The engine's ``on_metrics``: feed the state, then the caller's callback."""
        self.state(record)
        if self._forward is not None:
            self._forward(record)

    @property
    def url(self) -> str:
        """The page's address."""
        return self.server.url

    def start(self) -> LiveView:
        """Start serving (logged, with the address, to the logger ``sparktide``); returns
        itself."""
        self.server.start()
        logging.getLogger("sparktide").info(
            "live page at %s, Prometheus metrics at %smetrics", self.url, self.url
        )
        return self

    def watch(self, query: Any) -> None:
        """Stop serving when ``query`` ends (stopped, failed or done), from a daemon thread
        waiting on it; :meth:`stop` (called by the query's ``stop``) ends it sooner."""

        def wait() -> None:
            with contextlib.suppress(Exception):  # (a failed query: its owner reports it)
                query.awaitTermination()
            self.stop()

        threading.Thread(target=wait, name="sparktide-ui-watch", daemon=True).start()

    def stop(self) -> None:
        """Stop serving (once; later calls do nothing)."""
        with self._lock:  # (a second caller returns once the server is stopped)
            if not self._stopped:
                self._stopped = True
                self.server.stop()


def serve_directory(
    directory: str, address: str, *, job: str, dead_letter: str | None = None
) -> tuple[UiServer, MetricsFollower]:
    """Serve the page and ``/metrics`` of a metrics directory, following it as it grows
    (``sparktide ui``); returns the started server and follower (stop both).

    Raises
    ------
    InputError
        If the directory does not exist.
    """
    state = LiveState(job, dead_letter=dead_letter)
    follower = MetricsFollower(directory, state)
    server = UiServer(state, address)
    follower.start()
    return server.start(), follower
