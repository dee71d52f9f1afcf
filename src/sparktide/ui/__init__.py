"""Watching a job: a live watermark page and a Prometheus endpoint (docs/metrics.md, *The
live page and /metrics*).

``sparktide run JOB --ui [HOST:]PORT`` and ``start(..., ui="127.0.0.1:8080")`` serve, from
the driver while the query runs, a page that redraws itself after every micro-batch and
``/metrics`` in Prometheus' text format; ``sparktide ui METRICS_DIR`` serves both for a
job's metrics directory (a stopped job's, or one that grows).

The package: :mod:`~sparktide.ui.state` keeps the metrics records (the one source of
every number shown), :mod:`~sparktide.ui.follow` reads them from a directory,
:mod:`~sparktide.ui.deadletters` the latest dead letters, :mod:`~sparktide.ui.prom` is the
Prometheus collector, :mod:`~sparktide.ui.server` the HTTP server (``page.html`` is the
page), :mod:`~sparktide.ui.live` ties them to a query.
"""

from sparktide.ui.follow import MetricsFollower
from sparktide.ui.live import LiveView, directory_label, job_label, serve_directory
from sparktide.ui.prom import MetricsCollector
from sparktide.ui.server import UiServer, parse_address
from sparktide.ui.state import LiveState

__all__ = [
    "LiveState",
    "LiveView",
    "MetricsCollector",
    "MetricsFollower",
    "UiServer",
    "directory_label",
    "job_label",
    "parse_address",
    "serve_directory",
]
