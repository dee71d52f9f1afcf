"""The Spark engine: semantics §2–6 per micro-batch, vectorised in Spark SQL.

Each micro-batch (``foreachBatch``) runs these stages; ``docs/design.md`` says why.

1. **Clock** (:mod:`.clocks`). The batch's processing time comes from the journal (or
   is chosen and journaled); the clock state of the last committed batch is loaded.
2. **Plan** (:mod:`.plans`). Which route judges the batch, and why.
3. **Judge** (:mod:`.routes`). One pass per task (:mod:`.taskpass`: parse, judge and
   fold into window partials, or release a windowless job's events), or the general
   plan (:mod:`.judging`: parse, the policy of :mod:`.policy` with the CTIs of
   :mod:`.punctuation`, windows assigned).
   Partitions that delivered nothing get their idle estimate.
4. **Outputs** (:mod:`.outputs`, :mod:`.windows`). Dead letters; admitted rows folded
   into the open windows and the closed ones written, or events released (or joined).
5. **State** (:mod:`.state`). Clocks go to a JSON file, open windows / held events /
   substream keys to parquet, all under a directory named by the batch id, committed
   last. Outputs are written to directories named by the batch id (overwritten on
   replay): exactly once. Then the metrics record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.job.rules import check_event_input
from sparktide.spark import clocks, plans
from sparktide.spark.batch import Batch
from sparktide.spark.context import Context
from sparktide.spark.foreach import ForeachBatch, batch_results
from sparktide.spark.keys import forced_keys_frame, write_keys
from sparktide.spark.onepass import counter_column
from sparktide.spark.outputs.deadletters import write_dead_letters
from sparktide.spark.outputs.join import join
from sparktide.spark.outputs.metrics import (
    batch_counts,
    diagnostics,
    metrics_directory_of,
    metrics_record,
    write_metrics,
)
from sparktide.spark.outputs.release import release
from sparktide.spark.outputs.released import write_released
from sparktide.spark.outputs.sinks import hand_over
from sparktide.spark.routes import Judgement, judge_batch
from sparktide.spark.taskpass import TaskMemory
from sparktide.spark.windows.fold import fold_windows
from sparktide.spark.windows.matches import match_rows

__all__ = ["SparkEngine", "check_job"]

_log = logging.getLogger("sparktide")
_LETTERED = ("out_of_order", "window_closed", "unmatched_edge", "duplicate_edge")


def check_job(job: Job) -> None:
    """Check, before any Spark session starts, that the Spark engine can run ``job``.

    Raises
    ------
    ConfigError
        Naming the key: ``output.path`` or ``output.checkpoint`` missing, ``delta``
        output without the deltalake package, or a window option the Spark engine does
        not support yet.
    """
    if job.output.path is None:
        raise ConfigError("output.path", "is required to run on Spark")
    check_event_input(job)
    _check_supported(job)


def _check_supported(job: Job) -> None:
    output = job.output
    if output.checkpoint is None:
        raise ConfigError("output.checkpoint", "is required to run on Spark")
    if output.format == "delta":
        try:
            import deltalake  # noqa: F401
        except ImportError:
            raise ConfigError(
                "output.format",
                '"delta" needs the deltalake package: pip install "sparktide[delta]"',
            ) from None


class SparkEngine:
    """Runs one job's micro-batches.

    Parameters
    ----------
    spark
        The session.
    job
        The job; ``job.output`` names the output, dead-letter, metrics and checkpoint
        directories.
    clock
        Processing time (microseconds) for a new batch id; the wall clock by default.
        Tests pass a fixed schedule so the reference engine can be given the same times.
    """

    metrics_directory_of = staticmethod(metrics_directory_of)

    def __init__(
        self, spark: SparkSession, job: Job, *, clock: Callable[[int], int] | None = None
    ) -> None:
        _check_supported(job)
        self.spark = spark
        self.job = job
        self.context = Context.of(spark, job)
        self.store = self.context.store
        #: From the start when the input is one partition (any split would cut it)
        self.memory = TaskMemory(one_task=job.source.partition is None)
        self._clock = clock
        self.last_metrics: dict[str, Any] | None = None
        #: Called with each micro-batch's metrics record (``sparktide run``'s status line).
        self.on_metrics: Callable[[dict[str, Any]], None] | None = None
        #: The partitions the last batch reported silent (logged when they fell silent).
        self._silent: set[Any] = set()
        #: Called with each batch's id and records (``start(..., foreach_batch=)``).
        self.foreach_batch: ForeachBatch | None = None

    def process(
        self,
        lines: DataFrame,
        batch_id: int,
        now: int | None = None,
        *,
        flush: bool = False,
        silent: bool = False,
    ) -> dict[str, Any]:
        """Process one micro-batch of raw lines (``file``, ``line``, ``raw``, ``mtime``), of
        whole JSONL files (``file``, ``text``, ``mtime``, maybe ``path``), or of the job's
        JSONL or Parquet files by name (``path``, ``file``, ``mtime``, ``length``: from the
        ``binaryFile`` source): the tasks read local files themselves.

        With ``flush``, ``batch_id`` is the last committed batch, ``lines`` is empty, and
        every governing watermark is taken as +infinity. With ``silent``, the caller
        knows the batch brings no input (a run's micro-batch holding only the ticker's
        row): ``lines`` must be empty, and its rows are not read; time advances as in
        any batch. Returns the metrics record.
        """
        batch = Batch(batch_id, flush, silent=silent)
        self._collecting(batch)
        try:
            self._start(batch, now)
            judgement = judge_batch(self.context, self.memory, batch, lines)
            self._close_clocks(batch, judgement)
            self._write_outputs(batch, judgement)
            return self._commit(batch, judgement)
        finally:
            batch.release_kept()
            self.store.clear_spill()

    def batch_time(self, batch_id: int) -> int:
        """The processing time of batch ``batch_id``: journaled, or chosen and journaled
        now (the same :meth:`process` then reads)."""
        return self.store.processing_time(
            batch_id, None if self._clock is None else self._clock(batch_id)
        )

    def _collecting(self, batch: Batch) -> None:
        """Whether ``batch`` collects its records to the driver (a typed format, or a
        callback to hand them to) and where it hands them (:func:`hand_over`)."""
        batch.callback = self.foreach_batch is not None
        batch.collect = batch.callback or self.job.output.format != "jsonl"
        if batch.collect:
            context = self.context

            def sink(kind: str, directory: str | None, lines: Any, typed: Any) -> None:
                hand_over(context, batch, kind, directory, lines=lines, typed=typed)

            batch.sink = sink

    def _start(self, batch: Batch, now: int | None) -> None:
        """The batch's previous state, clock state and processing time (journaled)."""
        store, batch_id = self.store, batch.id
        batch.previous = batch_id if batch.flushing else store.latest(below=batch_id)
        batch.clock = clocks.load_clock(store.load_clock(batch.previous), self.job)
        if now is None and self._clock is not None and not batch.flushing:
            now = self._clock(batch_id)
        if batch.flushing:
            now = max(now or 0, batch.clock["processing_time"])
        batch.now = store.processing_time(f"flush-{batch_id}" if batch.flushing else batch_id, now)
        batch.label = f"batch={batch_id:09d}/flush={int(batch.flushing)}"

    def _close_clocks(self, batch: Batch, judgement: Judgement) -> None:
        """The clocks at the end of the batch, and the job watermark (merged)."""
        batch.arrival_at_end = clocks.close_batch(
            batch.clock,
            judgement.delivering,
            judgement.summary,
            arrival_at_start=judgement.arrival_at_start,
            now=batch.now,
            terms=self.context.watermark_terms,
            malformed=judgement.malformed,
        )
        if self.context.timeline.job_watermark:
            clocks.raise_job_watermark(batch.clock)
        batch.keys_next = judgement.keys_next

    def _write_outputs(self, batch: Batch, judgement: Judgement) -> None:
        """Dead letters, then windows, joined or released events, then substream keys."""
        context, job = self.context, self.job
        self.store.begin(batch.id, replace=batch.flushing)
        input_rows = judgement.malformed + sum(
            row[counter_column("input")] or 0 for row in judgement.summary
        )
        where, why = plans.writes_on(
            job, input_rows=input_rows, state_rows=self.store.state_rows(batch.previous)
        )
        batch.writes_on_driver = where == "driver"
        _log.debug("batch %s: %s", batch.id, why)
        lettered = sum(
            row[counter_column(f"dead_lettered.{reason}")] or 0
            for row in judgement.summary
            for reason in _LETTERED
        )
        write_dead_letters(
            context,
            batch,
            judgement.malformed_from,  # type: ignore[arg-type]
            judgement.decided if judgement.counted is None else judgement.counted,
            judgement.lines if lettered else None,
            judgement.malformed,
        )
        decided = judgement.decided
        if context.window is not None:
            forced = fold_windows(
                context, batch, decided, judgement.partial, judgement.partial_rows
            )
            if forced is not None and isinstance(batch.keys_next, DataFrame):
                batch.keys_next = forced_keys_frame(batch.keys_next, forced)
            if job.joins_windows:  # (the window's records join the left input, §7.12)
                join(context, batch, decided)  # type: ignore[arg-type]
        elif context.matches is not None:  # (a window over the join's matches, §7.11)
            windowed = context.matches

            def into_windows(ready: DataFrame) -> None:
                fold_windows(windowed, batch, match_rows(windowed, ready))

            join(context, batch, decided, into_windows)  # type: ignore[arg-type]
        elif job.join is not None and not job.references_joined:
            join(context, batch, decided)  # type: ignore[arg-type]
        elif judgement.kept is not None:  # (released by the tasks: onepass.release)
            assert judgement.partial is not None
            write_released(context, batch, judgement.partial, judgement.kept, judgement.summary)
        else:  # (a join with reference data is a release that meets the table)
            release(context, batch, decided)  # type: ignore[arg-type]
        if batch.keys_next is not None:
            write_keys(context, batch, batch.keys_next)

    def _commit(self, batch: Batch, judgement: Judgement) -> dict[str, Any]:
        """Commit the batch's state, then write (and return) its metrics record."""
        clock, flush = batch.clock, batch.flushing
        written = clock.setdefault("written", {})
        for name, value in batch.written.items():
            written[name] = written.get(name, 0) + value
        clock["flushed"] = flush
        metrics = metrics_record(self.context, clock, batch.now, batch.id)
        metrics["flushed"] = flush
        metrics.update(batch.gauges)  # state sizes: open windows, held events, keys
        summary = judgement.summary
        metrics["this_batch"] = batch_counts(self.context, batch, summary, judgement.malformed)
        # which plan judged the batch (docs/design.md): one pass per task, or the general
        metrics["plan"] = judgement.plan.route
        metrics["windows_merged_on"] = batch.merged_on
        metrics["files_read_by"] = judgement.read_by
        metrics["diagnostics"] = diagnostics(
            self.context, clock, summary, batch.now, metrics["this_batch"], judgement.present
        )
        if self.foreach_batch is not None:  # (before the commit: see docs/outputs.md)
            self.foreach_batch(batch.id, batch_results(self.spark, batch.outputs, metrics, flush))
        self.store.commit(batch.id, clocks.clock_json(clock), replace=flush)
        write_metrics(self.job, metrics, batch.metrics_name)
        if not flush:  # (a flush repeats the last batch's)
            self._warn(batch.id, metrics["diagnostics"])
        self.last_metrics = metrics
        if self.on_metrics is not None:
            self.on_metrics(metrics)
        return metrics

    def _warn(self, batch_id: int, diagnostics: list[dict[str, Any]]) -> None:
        """Log the batch's diagnostics; a lasting condition (a partition that stays
        silent, batch after batch while the input is quiet) only when it starts."""
        lasting = set()
        for diagnostic in diagnostics:
            if diagnostic["kind"] == "partition_not_progressing":
                lasting.add(diagnostic["partition"])
                if diagnostic["partition"] in self._silent:
                    continue
            _log.warning("batch %s: %s", batch_id, diagnostic["message"])
        self._silent = lasting

    def flush(self) -> dict[str, Any] | None:
        """Close every open window and release every held event (end of a finite input).

        The outputs go to directories named ``flush=<last batch>``; the last batch's state
        is then replaced by a flushed one, so flushing twice writes nothing twice.
        """
        previous = self.store.latest()
        if previous is None:
            return None
        clock = self.store.load_clock(previous)
        assert clock is not None
        if clock.get("flushed"):
            return None
        empty = self.spark.createDataFrame([], "file string, line bigint, raw string, mtime bigint")
        return self.process(empty, previous, flush=True)
