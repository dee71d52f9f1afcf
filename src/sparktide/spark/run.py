"""Starting sparktide jobs on Spark: from a job file's source, or from your own stream."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter

from sparktide.errors import ConfigError, RunError
from sparktide.job import Job
from sparktide.spark.engine import SparkEngine
from sparktide.spark.foreach import BatchResults, ForeachBatch
from sparktide.spark.inputs.typedframe import ROW, check_frame, is_typed, typed_lines, wrapped
from sparktide.spark.jvmnames import remember_jvm_names
from sparktide.spark.outputstart import begin_output
from sparktide.spark.publish import publish_metrics
from sparktide.spark.query import BatchGate, SparktideQuery
from sparktide.spark.session import local_session, settings_for
from sparktide.spark.sources import batch_lines, file_lines, spark_stream
from sparktide.spark.ticks import (
    DEFAULT_TRIGGER,
    only_ticks,
    ticks_fit,
    with_ticks,
    without_ticks,
)

__all__ = ["BatchResults", "run_job", "start"]


def start(
    spark: SparkSession,
    job: Job,
    files: DataFrame | None = None,
    *,
    once: bool = False,
    max_files_per_trigger: int | None = None,
    processing_time: str | None = None,
    clock: Callable[[int], int] | None = None,
    on_metrics: Callable[[dict[str, Any]], None] | None = None,
    flush_on_stop: bool | None = None,
    foreach_batch: ForeachBatch | None = None,
    output_start_time: str | int | None = None,
    ui: str | None = None,
) -> SparktideQuery:
    """Start ``job`` on Spark and return its query (a :class:`StreamingQuery`).

    Parameters
    ----------
    spark
        The session.
    job
        The job (its ``[output]`` directories are written).
    files
        A streaming DataFrame of typed columns (a table stream, Kafka after
        ``from_json``, the rate source: the ``[source]`` columns, checked here), of whole
        files (``file``, ``text``, ``mtime``) or of lines (``file``, ``line``, ``raw``,
        ``mtime``: :func:`broker_lines`); by default the job's source directory.
    once
        Process what is there and stop (available-now trigger).
    max_files_per_trigger
        At most this many new files per micro-batch.
    processing_time
        Trigger interval such as ``"10 seconds"`` (when not ``once``; one second by
        default). A batch runs on every trigger, data or not (semantics §2.5).
    clock
        Processing time for each new batch id (tests); the wall clock by default.
    on_metrics
        Called with each micro-batch's metrics record.
    flush_on_stop
        Whether ``query.stop()`` (and the end of a ``once`` run, with
        :func:`run_job`) closes every window and releases every held event; by default
        ``[output] flush_on_stop``. ``query.flush()`` does it at any time.
    foreach_batch
        ``foreach_batch(batch_id, results)`` per micro-batch and flush, its records as
        DataFrames (:class:`BatchResults`), before the batch commits: a crash may hand
        a batch again, so write by ``(batch_id, results.flush)`` (docs/outputs.md).
    output_start_time
        Write results from this time on (semantics §12): an instant (its text or
        microseconds), ``"now"`` (the first batch's processing time) or
        ``"last-stopped"`` (resume the checkpoint's run).
    ui
        ``"[HOST:]PORT"``: serve the live page and ``/metrics`` from the driver while
        the query runs (127.0.0.1 unless a host is given; port 0 picks a free one: the
        page is at ``query.ui.url``). The server stops with the query (docs/metrics.md).

    Raises
    ------
    ConfigError
        ``output.checkpoint`` is in use by another run, or was written by a job with
        another window or input layout; a typed frame lacks a column the job reads;
        ``output_start_time`` contradicts the checkpoint; ``ui`` is not an address
        that can be served on.
    """
    view = _live_view(job, ui, on_metrics)
    settings = (clock, view or on_metrics, foreach_batch, output_start_time)
    options = (once, max_files_per_trigger, processing_time, flush_on_stop)
    try:
        query = _start(spark, job, files, settings, options)
    except BaseException:
        if view is not None:
            view.stop()
        raise
    if view is not None:
        query.ui = view
        view.watch(query)
    return query


def _live_view(
    job: Job, ui: str | None, on_metrics: Callable[[dict[str, Any]], None] | None
) -> Any:
    """The started :class:`~sparktide.ui.LiveView` of ``start(..., ui=)``, fed before
    ``on_metrics``; ``None`` without ``ui``."""
    if ui is None:
        return None
    from sparktide.ui import LiveView

    return LiveView(job, ui, on_metrics).start()


def _start(
    spark: SparkSession,
    job: Job,
    files: DataFrame | None,
    settings: tuple[Any, ...],
    options: tuple[bool, int | None, str | None, bool | None],
) -> SparktideQuery:
    """:func:`start` past its live page (``settings``: the engine's, as
    :func:`_prepared` takes them; ``options``: ``once``, ``max_files_per_trigger``,
    ``processing_time``, ``flush_on_stop``)."""
    once, max_files_per_trigger, processing_time, flush_on_stop = options
    engine, files, ticking = _prepared(spark, job, files, settings, max_files_per_trigger)
    if ticking:
        processing_time = processing_time or DEFAULT_TRIGGER
    started: list[SparktideQuery] = []
    gate = BatchGate()
    batch = _batch_function(engine, gate, ticking=ticking, once=once, started=started)
    writer = _writer(files, batch, job, once=once, processing_time=processing_time)
    try:
        query = SparktideQuery(
            writer.start(),
            engine,
            flush_on_stop=job.output.flush_on_stop if flush_on_stop is None else flush_on_stop,
            gate=gate,
        )
    except BaseException:
        engine.store.unlock()
        raise
    started.append(query)
    _RUNS[engine.store.root] = query
    return query


def _prepared(
    spark: SparkSession,
    job: Job,
    files: DataFrame | None,
    settings: tuple[Any, ...],
    max_files_per_trigger: int | None,
) -> tuple[SparkEngine, DataFrame, bool]:
    """The engine (its checkpoint taken; ``settings``: its clock, metrics and batch
    callbacks and output start time), the query's stream (a typed frame, given or the
    stream Spark reads for a ``rate`` or ``table`` source, checked and wrapped; else the
    job's files; with the ticker when the checkpoint takes it), and whether it ticks."""
    if files is None and job.source.spark_stream:
        files = spark_stream(spark, job.source, max_files_per_trigger=max_files_per_trigger)
    typed = files is not None and is_typed(files)
    if typed:
        check_frame(job, files.schema)  # type: ignore[union-attr]  # (before anything is locked)
        files = wrapped(files)  # type: ignore[arg-type]
    engine = _engine(spark, job, *settings)
    engine.context.typed_input = typed
    if files is None:
        files = file_lines(spark, job, max_files_per_trigger=max_files_per_trigger)
    ticking = ticks_fit(job.output.checkpoint)  # type: ignore[arg-type]
    if ticking:
        files = with_ticks(spark, files)
    return engine, files, ticking


def _engine(
    spark: SparkSession,
    job: Job,
    clock: Callable[[int], int] | None,
    on_metrics: Callable[[dict[str, Any]], None] | None,
    foreach_batch: ForeachBatch | None,
    output_start_time: str | int | None = None,
) -> SparkEngine:
    """The job's engine with its callbacks, its checkpoint taken (locked, checked) and
    its output start time settled (:func:`begin_output`)."""
    settings_for(spark)
    remember_jvm_names()  # (the engine's plans look up thousands of JVM names a batch)
    engine = SparkEngine(spark, job, clock=clock)
    engine.on_metrics = on_metrics
    engine.foreach_batch = foreach_batch
    _take_checkpoint(engine)
    try:
        begin_output(engine, output_start_time)
    except BaseException:
        engine.store.unlock()
        raise
    return engine


def _writer(
    files: DataFrame,
    batch: Callable[[DataFrame, int], None],
    job: Job,
    *,
    once: bool,
    processing_time: str | None,
) -> DataStreamWriter:
    """The query's writer: ``batch`` for each micro-batch, the job's checkpoint, the
    trigger (available-now with ``once``)."""
    writer = (
        files.writeStream.foreachBatch(batch)
        .queryName(f"sparktide:{job.output.checkpoint}")
        .option("checkpointLocation", f"{job.output.checkpoint}/spark")
    )
    if once:
        return writer.trigger(availableNow=True)
    if processing_time is not None:
        return writer.trigger(processingTime=processing_time)
    return writer


class _Stopped(Exception):
    """A batch interrupted by ``query.stop()``; its message is the short form Spark
    recognises as an interruption (a long one overflows the stack of Spark's pattern)."""


def _quiet_stops(record: logging.LogRecord) -> bool:
    """Drop py4j's report of a batch :class:`_Stopped` (it is no failure)."""
    return not (record.exc_info and isinstance(record.exc_info[1], _Stopped))


logging.getLogger("py4j.clientserver").addFilter(_quiet_stops)


def _batch_function(
    engine: SparkEngine,
    gate: BatchGate,
    *,
    ticking: bool,
    once: bool,
    started: list[SparktideQuery],
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function: the ticker's rows dropped, the batch processed
    (``silent`` when it held nothing else: :func:`~sparktide.spark.ticks.only_ticks`).

    A batch that ``query.stop()`` interrupts (``started`` holds the query) ends with
    :class:`_Stopped`; it was not committed, and the next run replays it."""
    job = engine.job
    checkpoint = job.output.checkpoint
    assert checkpoint is not None

    def batch(frame: DataFrame, batch_id: int) -> None:
        silent = False  # (only the ticker's row: the engine reads no input)
        if ticking:
            frame = without_ticks(frame)
            silent = only_ticks(checkpoint, batch_id)
            if once and silent:  # (no time of its own)
                return
        with gate.batch() as may_run:
            if may_run:
                try:
                    engine.process(_lines(engine, frame, batch_id), batch_id, silent=silent)
                    return
                except Exception:
                    if not started or started[0].isActive:
                        raise
            elif started:  # a stop is under way: this batch is the next run's
                started[0].wait_stopped()
        raise _Stopped(
            "py4j.protocol.Py4JJavaError: An error occurred while calling the batch: "
            f"java.lang.InterruptedException (batch {batch_id}, stopped)"
        ) from None

    return batch


def _lines(engine: SparkEngine, frame: DataFrame, batch_id: int) -> DataFrame:
    """A micro-batch as the engine's input: a typed frame's rows (:data:`ROW`), arriving
    at the batch's processing time unless the job names an arrival column, or lines."""
    job = engine.job
    if ROW not in frame.columns:
        return batch_lines(frame, job)
    now = None if job.source.arrival_time is not None else engine.batch_time(batch_id)
    return typed_lines(frame.select(f"{ROW}.*"), job, now)


#: What the errors of file systems that cannot be written say (Python's and Hadoop's).
_WRITE_FAILURES = (
    "permission denied",
    "no space left",
    "not a directory",
    "parentnotdirectoryexception",
    "mkdirs failed",
    "read-only file system",
    "quota exceeded",
    "accesscontrolexception",
    "filealreadyexistsexception",
)


def _run_error(exception: BaseException, job: Job) -> BaseException:
    """A failed query as a :class:`RunError` when it failed writing (an output, the
    metrics or the checkpoint cannot be written), else the query's own exception.

    The batch that failed was not committed, so running again once the cause is fixed
    replays it: nothing is lost or written twice."""
    text = str(exception)
    if not any(marker in text.lower() for marker in _WRITE_FAILURES):
        return exception
    cause = next(
        line.strip().removeprefix(": ")
        for line in text.splitlines()
        if any(m in line.lower() for m in _WRITE_FAILURES)
    )
    places = [p for p in (job.output.path, job.output.dead_letter, job.output.metrics) if p]
    named = next((p for p in places if p.removeprefix("file:") in text), None)
    where = f"writing {named}" if named else "on a file-system fault"
    return RunError(
        f"the run failed {where}: {cause[:300]}. Fix the cause and run again: the job "
        "resumes from its checkpoint, replaying the failed batch (nothing is lost or "
        "written twice)"
    )


#: The query of each checkpoint this process started (to free the ones that stopped).
_RUNS: dict[Path, SparktideQuery] = {}


def _take_checkpoint(engine: SparkEngine) -> None:
    """Lock the engine's checkpoint and check it was written by a compatible job (see
    :meth:`StateStore.lock` and :meth:`StateStore.check_job`). A query this process
    started earlier on the same checkpoint gives it up if it has stopped."""
    earlier = _RUNS.get(engine.store.root)
    if earlier is not None and not earlier.isActive:
        earlier.engine.store.unlock()
        del _RUNS[engine.store.root]
    engine.store.lock()
    try:
        engine.store.check_job(engine.job)
    except BaseException:
        engine.store.unlock()
        raise


@contextmanager
def _interrupts() -> Iterator[Callable[[], bool]]:
    """Within the block, SIGINT (Ctrl-C) and SIGTERM only set a flag, which the yielded
    function reads; outside the main thread (where signals cannot be handled) it stays
    False."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    received: list[int] = []
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = [signal.signal(s, lambda signum, frame: received.append(signum)) for s in signals]
    try:
        yield lambda: bool(received)
    finally:
        for number, handler in zip(signals, previous, strict=True):
            signal.signal(number, handler)


def run_job(
    job: Job,
    *,
    once: bool = False,
    flush: bool = False,
    spark: SparkSession | None = None,
    max_files_per_trigger: int | None = None,
    clock: Callable[[int], int] | None = None,
    trigger: str | None = None,
    publish: bool = True,
    on_metrics: Callable[[dict[str, Any]], None] | None = None,
    foreach_batch: ForeachBatch | None = None,
    output_start_time: str | int | None = None,
    ui: str | None = None,
) -> dict[str, Any] | None:
    """Run ``job`` until it is done (``once``) or stopped (Ctrl-C, SIGTERM); return the
    last metrics record.

    Parameters
    ----------
    job
        The job.
    once
        Process what is there and stop (available-now trigger).
    flush
        At the end of the run (a ``once`` run's end, or a stop), close every open window
        and release every held event; ``[output] flush_on_stop`` says the same.
    spark
        The session; a local one by default.
    max_files_per_trigger
        At most this many new files per micro-batch.
    clock
        Processing time per new batch id (tests); the wall clock by default.
    trigger
        Processing-time trigger interval such as ``"10 seconds"`` (continuous runs).
    publish
        Also publish the metrics as Spark observed metrics (:func:`publish_metrics`).
    on_metrics
        Called with each micro-batch's metrics record (and the flush's).
    foreach_batch
        Called with each micro-batch's id and records (and the flush's), as by :func:`start`.
    output_start_time
        Write results from this time on, as by :func:`start` (semantics §12).
    ui
        Serve the live page and ``/metrics`` on ``"[HOST:]PORT"``, as by :func:`start`.
    """
    _check_runnable(job)
    spark = spark or local_session()
    query = start(
        spark,
        job,
        once=once,
        max_files_per_trigger=max_files_per_trigger,
        clock=clock,
        processing_time=trigger,
        on_metrics=on_metrics,
        flush_on_stop=flush or job.output.flush_on_stop,
        foreach_batch=foreach_batch,
        output_start_time=output_start_time,
        ui=ui,
    )
    publisher = None
    try:
        if publish and not once:
            publisher = publish_metrics(spark, job, trigger=trigger or DEFAULT_TRIGGER)
        _until_done(query, job)
        if query.flush_on_stop:  # (a stop flushed already; the end of a once run not)
            query.flush()
        metrics = query.flushed or query.engine.last_metrics
        if publisher is not None:  # (its last trigger may have come before the last record)
            publisher.stop()
        if publish:  # every record not published yet, the flush's too
            publish_metrics(spark, job, once=True).awaitTermination()
    finally:
        if publisher is not None and publisher.isActive:
            publisher.stop()
        _release(query)
    return metrics


def _check_runnable(job: Job) -> None:
    """Refuse a job without the outputs :func:`run_job` needs."""
    if job.output.checkpoint is None:
        raise ConfigError("output.checkpoint", "is required to run on Spark")
    if job.output.path is None:
        raise ConfigError("output.path", "is required to run on Spark")


def _release(query: SparktideQuery) -> None:
    """The end of :func:`run_job`: the query halted, its live page stopped, its
    checkpoint unlocked."""
    if query.isActive:
        query.halt()
    if query.ui is not None:
        query.ui.stop()
    query.engine.store.unlock()
    _RUNS.pop(query.engine.store.root, None)


def _until_done(query: SparktideQuery, job: Job) -> None:
    """Wait for ``query`` to end, or stop it on Ctrl-C or SIGTERM; a failed query's
    error as :func:`_run_error` words it."""
    try:
        with _interrupts() as interrupted:
            # Short waits, so Ctrl-C lands between py4j calls: PySpark's own SIGINT
            # handler calls into the JVM from inside the blocked call and wedges py4j.
            while not query.awaitTermination(0.5):
                if interrupted():  # stop cleanly; the checkpoint resumes the job
                    query.stop()
                    break
    except StreamingQueryException as exc:  # the query failed
        error = _run_error(exc, job)
        if error is exc:
            raise
        raise error from exc
