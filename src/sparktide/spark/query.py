"""The query :func:`sparktide.spark.start` returns: Spark's own, with a flush and a stop
that waits for the running micro-batch."""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql.streaming import StreamingQuery

from sparktide.spark.engine import SparkEngine

__all__ = ["SparktideQuery"]

#: How long :meth:`SparktideQuery.stop` waits for the running micro-batch to end.
STOP_WAIT_SECONDS = 30.0


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
    """

    def __init__(self, query: StreamingQuery, engine: SparkEngine, *, flush_on_stop: bool) -> None:
        super().__init__(query._jsq)
        self.engine = engine
        self.sparktide_engine = engine  # (the name earlier releases documented)
        self.flush_on_stop = flush_on_stop
        self.flushed: dict[str, Any] | None = None

    def stop(self) -> None:
        """Stop the query once its running micro-batch has ended (waiting at most
        ``STOP_WAIT_SECONDS``: a batch cut short is replayed by the next run), then flush
        when ``flush_on_stop`` says so — unless the query failed."""
        self.halt()
        if self.flush_on_stop and self.exception() is None:
            self.flush()

    def halt(self) -> None:
        """Stop the query between micro-batches, without a flush."""
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        while self.isActive and self.status["isTriggerActive"] and time.monotonic() < deadline:
            time.sleep(0.05)
        super().stop()

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
