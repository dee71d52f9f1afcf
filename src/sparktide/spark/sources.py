"""A job's input as a stream: its source directories' files, a union's inputs, or a
broker's records, shaped as the engine's input lines (:mod:`sparktide.spark.lineshapes`)."""

from __future__ import annotations

import os

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sparktide.errors import ConfigError, InputError
from sparktide.job import Job, Source
from sparktide.spark.inputs.contract import WHITE_SPACE
from sparktide.spark.inputs.csvlines import csv_rows
from sparktide.spark.inputs.parquet import parquet_rows
from sparktide.spark.inputs.textfiles import split_lines, whole_texts

__all__ = [
    "batch_lines",
    "broker_lines",
    "check_watchable",
    "file_lines",
    "spark_stream",
    "union_lines",
]


#: The (fixed) schema of Spark's ``binaryFile`` source, which a stream must be given.
_BINARY_FILE = "path string, modificationTime timestamp, length bigint, content binary"


def file_lines(
    spark: SparkSession, job: Job, *, max_files_per_trigger: int | None = None
) -> DataFrame:
    """The job's source directory as a stream: whole files (``file``, ``text``, ``mtime``)
    for CSV; for JSONL and Parquet the new files' names (``path``, ``file``, ``mtime``,
    ``length``), which the engine's one-pass kernel reads itself, or Spark reads for it
    (:func:`~sparktide.spark.inputs.textfiles.json_texts`: the files' text;
    :func:`~sparktide.spark.inputs.parquet.parquet_rows`: rows, each file with its own schema).

    A union's inputs (``[inputs.<name>]``) are one stream each (each with its own offsets
    in the checkpoint), tagged with ``input`` and put together: ``input``, ``file``,
    ``text``, ``path``, ``mtime`` (:func:`union_lines` turns a batch of it into lines)."""
    if job.inputs:
        frames = []
        for name, source in job.inputs:
            frame = _source_files(spark, source, max_files_per_trigger, f"inputs.{name}.path")
            if source.format != "parquet":
                frame = frame.withColumn("path", F.lit(None).cast("string"))
            else:
                frame = frame.withColumn("text", F.lit(None).cast("string"))
            frames.append(frame.select(F.lit(name).alias("input"), "file", "text", "path", "mtime"))
        out = frames[0]
        for frame in frames[1:]:
            out = out.unionByName(frame)
        return out
    return _source_files(spark, job.source, max_files_per_trigger, "source.path", names=True)


def union_lines(frame: DataFrame, job: Job) -> DataFrame:
    """A micro-batch of a union's stream (:func:`file_lines`) as lines: ``input``,
    ``file`` (``<input>/<name>``), ``line``, ``raw``, ``mtime``, ``pre_error``.

    Every input is split (and, for CSV and Parquet, turned into JSON objects) by its own
    format; JSONL files are split in SQL here (the Arrow kernel reads one input's files)."""
    out = None
    for name, source in job.inputs:
        files = frame.filter(F.col("input") == name)
        if source.format == "csv":
            lines = csv_rows(files)
        elif source.format == "parquet":
            lines = parquet_rows(files)
        else:
            lines = split_lines(files)
        if "pre_error" not in lines.columns:
            lines = lines.withColumn("pre_error", F.lit(None).cast("string"))
        lines = lines.select(
            F.lit(name).alias("input"),
            F.concat(F.lit(f"{name}/"), "file").alias("file"),
            "line",
            "raw",
            "mtime",
            "pre_error",
        )
        out = lines if out is None else out.unionByName(lines)
    assert out is not None
    return out


def spark_stream(
    spark: SparkSession, source: Source, *, max_files_per_trigger: int | None = None
) -> DataFrame:
    """The typed stream Spark reads for a ``rate``, ``rate-micro-batch`` or ``table``
    source, with its reader options (``[source.options]``); ``max_files_per_trigger``
    (``run --max-files-per-trigger``) becomes Spark's ``maxFilesPerTrigger`` unless the
    options set it (a file table's stream reads it; the rate sources ignore it).

    Raises
    ------
    ConfigError
        Spark refuses the options or cannot stream the table (``source.options``,
        ``source.table``), with Spark's own reason.
    """
    options = dict(source.options)
    if max_files_per_trigger is not None:
        options.setdefault("maxFilesPerTrigger", str(max_files_per_trigger))
    reader = spark.readStream.options(**options)
    try:
        if source.format == "table":
            return reader.table(source.table)
        return reader.format(source.format).load()
    except Exception as exc:  # (Spark's analysis errors: an unknown table, a bad option)
        key = "source.table" if source.format == "table" else "source.options"
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(key, f"Spark cannot stream this source: {reason}") from None


def check_watchable(path: str | None, key: str) -> None:
    """Check that ``run`` can watch ``path`` (the input named ``key``) for new files.

    Raises
    ------
    ConfigError
        If there is no path (a job given a streaming DataFrame by ``start`` needs none).
    InputError
        If the path is missing, or is a file: a streaming run watches a directory (semantics
        §10), and Spark's file source would otherwise fail inside the query with a long
        trace (``simulate`` reads a single file; ``run`` needs its directory).
    """
    if path is None:
        raise ConfigError(
            key, "is required: run watches it for new files (start() given a DataFrame reads none)"
        )
    if not os.path.exists(path):
        raise InputError(f"{key}: no such file or directory: {path!r}")
    if not os.path.isdir(path):
        raise InputError(
            f"{key}: {path!r} is a file, and run watches a directory for new files: move the "
            "file into a directory and name the directory"
        )


def _source_files(
    spark: SparkSession,
    source: Source,
    max_files_per_trigger: int | None,
    key: str,
    *,
    names: bool = False,
) -> DataFrame:
    """One source directory as a stream (see :func:`file_lines`); ``key`` names its path
    in errors; with ``names``, JSONL files by name only (as Parquet files always are)."""
    check_watchable(source.path, key)
    path = source.path
    if source.format == "parquet" or (source.format == "jsonl" and names):
        reader = spark.readStream.format("binaryFile").schema(_BINARY_FILE)
        if max_files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
        frame = reader.load(path)
        return frame.select(  # names only: the content is not read
            "path",
            F.regexp_extract("path", r"[^/]*$", 0).alias("file"),
            F.expr("unix_micros(modificationTime)").alias("mtime"),
            "length",
        )
    reader = spark.readStream.format("text").option("wholetext", "true")
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
    return whole_texts(reader.load(path))


def broker_lines(
    frame: DataFrame,
    *,
    value: str = "value",
    arrival: str = "timestamp",
    partition: str = "partition",
    position: str = "offset",
) -> DataFrame:
    """Shape a broker stream (Kafka's ``value``, ``timestamp``, ``partition``, ``offset``)
    as sparktide's input lines.

    Arrival order is (arrival time, partition, offset); the arrival time is the broker's
    timestamp (use ``LogAppendTime`` topics) unless the job names an ``arrival_time``
    field; the partition column is kept under its own name, so a job whose
    ``source.partition`` is ``"partition"`` takes the broker partition.
    """
    cast = f"CAST(`{partition}` AS BIGINT)"
    return frame.select(
        F.expr(f"lpad(CAST({cast} AS STRING), 10, '0')").alias("file"),
        F.col(position).cast("bigint").alias("line"),
        F.btrim(F.col(value).cast("string"), F.lit(WHITE_SPACE)).alias("raw"),
        F.expr(f"unix_micros(`{arrival}`)").alias("mtime"),
        F.expr(cast).alias(partition),
    ).filter("raw <> ''")


def batch_lines(frame: DataFrame, job: Job) -> DataFrame:
    """A micro-batch of the stream as the engine's input: a union's lines, lines as they
    are, CSV files' rows, or whole JSONL files and Parquet files (the engine reads them
    with Arrow)."""
    if "input" in frame.columns:  # a union of inputs
        return union_lines(frame, job)
    if "raw" in frame.columns or job.source.format != "csv":
        return frame
    return csv_rows(frame)
