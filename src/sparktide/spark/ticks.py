"""Batches while the input is silent: a ticker stream unioned into the job's input.

Spark runs a ``foreachBatch`` micro-batch only when a source has new data, so a job
whose partitions all fall silent would never observe time again: no idle estimate
(semantics §4.3), no idle timeout (§6.10), and the last windows would stay open. Stream
Analytics keeps estimating while nothing arrives; so does sparktide: its input is
unioned with Spark's ``rate-micro-batch`` source, which has one new row for every
micro-batch, so a batch runs on every trigger. The ticker's rows carry no file name and
are dropped before the engine sees the batch (:func:`without_ticks`); the batch itself
is an observation instant like any other, with its processing time journaled
(exactly-once on restart).

The ticker is part of the query from the first run on, also under ``--once``: Spark's
checkpoint fixes the number of sources. It honours the available-now trigger (it adds no
batch of its own to one), and a ``--once`` run skips batches that hold only its rows; a
continuous run tells the engine such a batch brings no input (:func:`only_ticks`), so it
judges none and only advances time over the state. A
checkpoint written before the ticker existed keeps running without it
(:func:`ticks_fit`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = ["DEFAULT_TRIGGER", "only_ticks", "ticks_fit", "with_ticks", "without_ticks"]

_log = logging.getLogger("sparktide")

#: A continuous run's trigger when none is given: the ticker always has a new row, so
#: Spark's own default (the next batch as soon as the last ends) would never rest.
DEFAULT_TRIGGER = "1 second"


def with_ticks(spark: SparkSession, files: DataFrame) -> DataFrame:
    """``files`` unioned with a ticker that has one new row for every micro-batch.

    The ticker's rows have every column of ``files`` NULL (``file`` among them).
    """
    ticks = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", "1")
        .option("numPartitions", "1")
        .load()
    )
    nulls = [F.lit(None).cast(field.dataType).alias(field.name) for field in files.schema]
    return files.unionByName(ticks.select(*nulls))


def without_ticks(frame: DataFrame) -> DataFrame:
    """A micro-batch of :func:`with_ticks`'s stream without the ticker's rows."""
    return frame.filter(F.col("file").isNotNull())


def ticks_fit(checkpoint: str) -> bool:
    """Whether a query started on ``checkpoint`` may carry the ticker.

    True for a new checkpoint and for one whose Spark offsets end with the ticker's;
    False for one written before the ticker existed, which Spark would refuse to resume
    with one source more (the run then warns that a silent input will not advance its
    clocks)."""
    offsets = Path(checkpoint.removeprefix("file:")) / "spark" / "offsets"
    logs = [p for p in offsets.glob("*") if p.name.isdigit()] if offsets.is_dir() else []
    if not logs or _is_tick(max(logs, key=lambda p: int(p.name)).read_text()):
        return True
    _log.warning(
        "the checkpoint %s was written without the ticker: this run advances its clocks "
        "only when new input arrives (a new checkpoint lifts this)",
        checkpoint,
    )
    return False


def _is_tick(offsets: str) -> bool:
    """Whether the last source of an offsets log entry is the ticker (its offset is a
    row count and a timestamp; ``-``: no offset yet)."""
    last = offsets.strip().splitlines()[-1].strip()
    if last == "-":
        return True
    try:
        offset = json.loads(last)
    except ValueError:
        return False
    return isinstance(offset, dict) and set(offset) == {"offset", "timestamp"}


def only_ticks(checkpoint: str, batch_id: int) -> bool:
    """Whether micro-batch ``batch_id`` brings nothing but the ticker's row: no source
    before the ticker moved its offset since the batch before (read from Spark's
    offsets log, which holds a batch's offsets before it runs; no Spark job)."""
    offsets = Path(checkpoint.removeprefix("file:")) / "spark" / "offsets"
    current = _source_offsets(offsets / str(batch_id))
    if current is None:
        return False
    previous = _source_offsets(offsets / str(batch_id - 1)) or ["-"] * len(current)
    return current[:-1] == previous[:-1]


def _source_offsets(path: Path) -> list[str] | None:
    """The offsets of an offsets-log entry, one per source (None: no such entry)."""
    try:
        lines = path.read_text().strip().splitlines()
    except FileNotFoundError:
        return None
    return [line.strip() for line in lines[2:]]  # (after the version and the metadata)
