"""A job's metrics records published as Spark observed metrics (``docs/metrics.md``)."""

from __future__ import annotations

import os

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from sparktide.job import Job
from sparktide.spark.outputs.metrics import metrics_directory_of

__all__ = ["BATCH_FIELDS", "METRICS_SCHEMA", "publish_metrics"]

_COUNTS = "map<string,bigint>"
_TALLY = (
    f"input bigint, admitted bigint, early bigint, late bigint, out_of_order bigint, "
    f"adjusted bigint, dropped {_COUNTS}, dead_lettered {_COUNTS}"
)
#: The fields of a metrics record that are published as observed metrics (docs/metrics.md).
METRICS_SCHEMA = (
    f"batch bigint, flushed boolean, {_TALLY}, in_no_window bigint, windows_emitted bigint, "
    "released bigint, processing_time string, watermark string, watermark_delay_us bigint, "
    "output_watermark string, "
    f"this_batch struct<{_TALLY}, in_no_window bigint, windows_emitted bigint, "
    "released bigint>, "
    f"partitions array<struct<partition string, {_TALLY}, arrival_clock string, "
    "watermark string>>, "
    "diagnostics array<struct<kind string, partition string, count bigint, message string>>"
)

#: The fields of each record in the observed ``batches`` list (docs/metrics.md): every
#: metrics record the progress covers, so a listener sees each micro-batch exactly once.
BATCH_FIELDS = (
    "batch",
    "flushed",
    "this_batch",
    "processing_time",
    "watermark",
    "watermark_delay_us",
    "output_watermark",
    "diagnostics",
)


def publish_metrics(
    spark: SparkSession,
    job: Job,
    *,
    once: bool = False,
    trigger: str = "1 second",
) -> StreamingQuery:
    """Publish a job's metrics records through Spark's own monitoring: a small streaming
    query named ``sparktide-metrics:<checkpoint>`` reads the records the job's micro-batches
    write and reports them as the observed metrics ``sparktide`` of its progress, which
    every :class:`~pyspark.sql.streaming.StreamingQueryListener` and
    ``StreamingQuery.lastProgress`` sees: the newest record's fields, ``records`` (how
    many records the progress covers) and ``batches``, each of those records'
    :data:`BATCH_FIELDS` in batch order. Each record is in exactly one progress's
    ``batches``, across restarts too (the publisher's file source keeps its own
    checkpoint, ``<checkpoint>/spark-metrics``, and a batch's record has one file name).

    Spark offers a ``foreachBatch`` sink (where the engine runs) no public way to add
    observed metrics to its own query's progress (metrics observed inside the batch
    function are not reported), hence the second query; ``docs/metrics.md`` says more.

    Parameters
    ----------
    spark
        The session.
    job
        The job (its metrics directory: ``[output] metrics``, else beside its state).
    once
        Publish what is there and stop (run it after the job's own ``--once`` run).
    trigger
        How often a continuous publisher looks for new records.
    """
    engine_dir = metrics_directory_of(job)
    os.makedirs(engine_dir.removeprefix("file:"), exist_ok=True)
    records = spark.readStream.schema(METRICS_SCHEMA).json(engine_dir)
    newest = F.struct("batch", "flushed")
    fields = [name.split(" ", 1)[0] for name in _top_level(METRICS_SCHEMA)]
    # every record the progress covers, in batch order (one progress may cover several
    # micro-batches' records: the newest alone would skip the others)
    every = F.collect_list(F.struct(*(F.col(name) for name in BATCH_FIELDS)))
    observed = records.observe(
        "sparktide",
        *(F.max_by(name, newest).alias(name) for name in fields),
        F.count(F.lit(1)).alias("records"),
        F.array_sort(every, _by_batch).alias("batches"),
    )
    writer = (
        observed.writeStream.format("noop")
        .queryName(f"sparktide-metrics:{job.output.checkpoint}")
        .option("checkpointLocation", f"{job.output.checkpoint}/spark-metrics")
    )
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime=trigger)
    return writer.start()


def _by_batch(left: Column, right: Column) -> Column:
    """Orders two records by batch, a batch's flush after it (maps cannot be sorted)."""

    def key(record: Column) -> Column:
        return record["batch"] * 2 + record["flushed"].cast("bigint")

    return F.when(key(left) < key(right), -1).when(key(left) > key(right), 1).otherwise(0)


def _top_level(ddl: str) -> list[str]:
    """The top-level ``name type`` items of a DDL schema string."""
    items, depth, current = [], 0, ""
    for char in ddl:
        depth += char == "<"
        depth -= char == ">"
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    items.append(current.strip())
    return items
