"""The query :func:`sparktide.spark.start` returns: Spark's own, with a flush and a stop
that waits for the running micro-batch."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql.streaming import StreamingQuery

from sparktide.spark.engine import SparkEngine

__all__ = ["BatchGate", "SparktideQuery"]


class BatchGate:
    """Between a query's micro-batches and its stop: :meth:`close` waits for the running
    batch to end and keeps any later one from doing work."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.closed = False

    @contextmanager
    def batch(self) -> Iterator[bool]:
        """Hold the gate for one batch; yields whether the batch may run."""
        with self._lock:
            yield not self.closed

    def close(self) -> None:
        """Wait for the running batch (if any), then let no other one run."""
        with self._lock:
            self.closed = True


class SparktideQuery(StreamingQuery):
    """A running sparktide job: a :class:`~pyspark.sql.streaming.StreamingQuery` (every
    method of Spark's works on it) with sparktide's end of run.

    Parameters
    ----------
    query
        The query Spark started.
    engine
        The engine that runs its micro-batches.
    flush_on_stop
        Whether :meth:`stop` ends with :meth:`flush` (``[output] flush_on_stop``, or
        ``start(..., flush_on_stop=True)``): StreamInsight's
        ``advanceToInfinityOnShutdown``. Without it a stopped job keeps its open windows
        and held events in its checkpoint for the next run.

    Attributes
    ----------
    engine
        The :class:`~sparktide.spark.engine.SparkEngine` (its ``last_metrics``).
    flushed
        The flush's metrics record, once :meth:`flush` wrote one.
    ui
        The live page of ``start(..., ui=)`` (its ``url``), or ``None``.
    """

    def __init__(
        self,
        query: StreamingQuery,
        engine: SparkEngine,
        *,
        flush_on_stop: bool,
        gate: BatchGate | None = None,
    ) -> None:
        super().__init__(query._jsq)
        self.gate = gate or BatchGate()
        self.engine = engine
        self.sparktide_engine = engine  # (the name earlier releases documented)
        self.flush_on_stop = flush_on_stop
        self.flushed: dict[str, Any] | None = None
        #: The live page (``start(..., ui=)``): a :class:`sparktide.ui.LiveView`, or None
        self.ui: Any = None

    def stop(self) -> None:
        """Stop the query once its running micro-batch has ended (a later batch does no
        work: the next run replays it), then flush when ``flush_on_stop`` says so —
        unless the query failed."""
        self.halt()
        if self.flush_on_stop and self.exception() is None:
            self.flush()

    def halt(self) -> None:
        """Stop the query between micro-batches, without a flush."""
        self.gate.close()
        super().stop()
        if self.ui is not None:  # (the server stops with the query)
            self.ui.stop()

    def wait_stopped(self, limit: float = 60.0) -> None:
        """Wait (from a batch that the closed gate turned away) until the stop began."""
        deadline = time.monotonic() + limit
        while self.isActive and time.monotonic() < deadline:
            time.sleep(0.05)

    def flush(self) -> dict[str, Any] | None:
        """Close every open window and release every held event (the final CTI at +∞,
        semantics §6.11), stopping the query first if it runs.

        Returns the flush's metrics record; ``None`` when there is nothing to flush (no
        batch committed yet, or flushed already). The flush is committed like a batch:
        flushing twice writes nothing twice.
        """
        if self.isActive:
            self.halt()
        flushed = self.engine.flush()
        if flushed is not None:
            self.flushed = flushed
        return flushed
