"""One micro-batch being processed: its identity, clocks and what it has written.

The engine lives for a job; a :class:`Batch` for one call of
:meth:`SparkEngine.process`. Every stage reads the batch's facts from it and adds what
it wrote (records by counter, state table sizes) to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import DataFrame

from sparktide.spark.clocks import ClockState, PartitionClock

__all__ = ["Batch"]


@dataclass
class Batch:
    """A micro-batch (or a flush) being processed.

    ``previous``, ``now``, ``label`` and ``clock`` are known once its processing time
    is; ``keys_next`` and ``arrival_at_end`` once it is judged.
    """

    id: int
    flushing: bool  # a flush: every governing watermark is +infinity
    #: A micro-batch known to bring no input (a run's batch holding only the ticker's
    #: row: :func:`sparktide.spark.ticks.only_ticks`); time still advances in it
    silent: bool = False
    previous: int | None = None  # the committed batch whose state this one starts from
    now: int = 0  # processing time
    #: output directory under each output path: batch=<id>/flush=<0|1> (docs/outputs.md)
    label: str = ""
    clock: ClockState = field(default_factory=dict)  # the clock state being built
    #: Substream key state after this batch (a table when the one-pass plan judged the
    #: batch: it is merged on the driver)
    keys_next: DataFrame | pa.Table | None = None
    arrival_at_end: int = 0  # the input's arrival clock at the end of the batch
    written: dict[str, int] = field(default_factory=dict)  # records written, by counter
    gauges: dict[str, int] = field(default_factory=dict)  # state table sizes after it
    paired: DataFrame | None = None  # the batch with its edges paired
    #: the window records a [join] reads (semantics §7.12): end, start, groups, value
    window_records: DataFrame | None = None
    merged_on: str | None = None  # where open windows merged (metrics)
    kept: list[DataFrame] = field(default_factory=list)  # frames computed once (keep)
    #: Records are collected to the driver and written from there (a typed format or a
    #: callback: :mod:`sparktide.spark.outputs.sinks`), rather than written by Spark
    collect: bool = False
    callback: bool = False  # a ``foreach_batch`` callback takes the batch's records
    #: Its records and state tables are few enough to be collected and written from the
    #: driver (:func:`sparktide.spark.plans.writes_on`), rather than by Spark's writer
    writes_on_driver: bool = False
    #: The batch's records by kind (``results``, ``dead_letters``), typed, when collected
    outputs: dict[str, pa.Table] = field(default_factory=dict)
    #: Where collected records go: ``sink(kind, directory, lines, typed)``
    #: (:func:`sparktide.spark.outputs.sinks.hand_over` bound to the batch)
    sink: Callable[[str, str | None, pa.Array, pa.Table | None], None] | None = None

    @property
    def metrics_name(self) -> str:
        """The name of its metrics file (without ``.jsonl``): ``batch=<id>``, or
        ``flush=<id>`` for a flush after batch ``<id>``."""
        return f"{'flush' if self.flushing else 'batch'}={self.id:09d}"

    @property
    def no_input(self) -> bool:
        """Whether the batch is known to bring no input record (a flush, or silent):
        then nothing delivers, and its judgement is known without reading its lines."""
        return self.flushing or self.silent

    @property
    def parts(self) -> dict[str, PartitionClock]:
        """The partitions' clocks (at the end of the batch, once judged)."""
        return self.clock["partitions"]

    def count(self, counter: str, n: int) -> None:
        """Add ``n`` records written to ``counter``."""
        self.written[counter] = self.written.get(counter, 0) + n

    def keep(self, frame: DataFrame) -> DataFrame:
        """``frame``, computed once for the rest of the batch (released when it ends).

        The batch is parsed and judged once, and every later step (counters, dead
        letters, windows, state) reads the result. A lazy local checkpoint stores it as
        Spark's binary rows when the first step computes it; ``persist`` would encode it
        into compressed columns instead, slower for these rows (arrays and variants;
        ``docs/design.md``). If an executor holding the blocks is lost the batch fails
        and is replayed from the checkpoint, with the same results."""
        frame = frame.localCheckpoint(eager=False)
        self.kept.append(frame)
        return frame

    def release_kept(self) -> None:
        """Free the blocks of the frames :meth:`keep` returned (rather than waiting for
        the JVM's garbage collector to let Spark's cleaner find them)."""
        while self.kept:
            frame = self.kept.pop()
            try:
                frame._jdf.queryExecution().analyzed().rdd().unpersist(False)
            except Exception:  # freeing early is an optimisation only
                pass
