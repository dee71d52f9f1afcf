"""The ``foreach_batch`` callback of :func:`sparktide.spark.start`: each micro-batch's
records handed to the user's code as Spark DataFrames (docs/outputs.md, *Your own sink*).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparktide.spark.outputs.typed import DEAD_LETTERS, RESULTS

__all__ = ["BatchResults", "ForeachBatch", "batch_results"]


@dataclass(frozen=True)
class BatchResults:
    """One micro-batch's records (or a flush's), as Spark DataFrames.

    Attributes
    ----------
    results
        The windows it closed (jobs with ``[window]``) or the events it released, typed
        as the ``parquet`` output writes them (docs/outputs.md): times as
        ``TimestampType``, each column with the type it was first written with.
    dead_letters
        Its dead letters: ``file``, ``line``, ``reason``, ``record`` (the input record's
        JSON text), ``error`` and, with a window, ``window_start`` / ``window_end``.
    metrics
        Its metrics record, one row (docs/metrics.md).
    flush
        Whether this is the flush that followed micro-batch ``batch_id`` (``query.flush()``,
        ``flush_on_stop``) rather than the micro-batch itself.
    """

    results: DataFrame
    dead_letters: DataFrame
    metrics: DataFrame
    flush: bool = False


#: The callback's type: ``callback(batch_id, results)``.
ForeachBatch = Callable[[int, BatchResults], None]


def batch_results(
    spark: SparkSession, outputs: dict[str, pa.Table], metrics: dict[str, Any], flush: bool
) -> BatchResults:
    """The :class:`BatchResults` of a batch from its collected records and its metrics
    record (DataFrames over driver data: nothing runs until the callback uses them)."""
    return BatchResults(
        results=_frame(spark, outputs.get(RESULTS)),
        dead_letters=_frame(spark, outputs.get(DEAD_LETTERS)),
        metrics=_metrics_frame(spark, metrics),
        flush=flush,
    )


def _frame(spark: SparkSession, table: pa.Table | None) -> DataFrame:
    if table is None or not len(table.schema):
        return spark.createDataFrame([], T.StructType([]))
    return spark.createDataFrame(table)


def _metrics_frame(spark: SparkSession, metrics: dict[str, Any]) -> DataFrame:
    """The metrics record as a one-row frame, its schema inferred by Spark from the
    record itself."""
    text = json.dumps(metrics)
    row = spark.createDataFrame([(text,)], "value string")
    return row.select(F.from_json("value", F.schema_of_json(F.lit(text))).alias("m")).select("m.*")
