"""What a batch's input DataFrame holds: lines, whole files' text, or files by name.

The streaming source decides (:mod:`sparktide.spark.run`): raw lines (``file``,
``line``, ``raw``, ``mtime``), whole JSONL files (``file``, ``text``, ``mtime``, maybe
``path``), or the job's JSONL or Parquet files by name (``path``, ``file``, ``mtime``,
``length``: the ``binaryFile`` source), which the one-pass tasks read themselves.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from sparktide.job import Job
from sparktide.spark.onepass import typed_columns

__all__ = ["json_files", "parquet_files", "typed_names", "whole_files"]


def whole_files(job: Job, lines: DataFrame) -> bool:
    """Whether ``lines`` is a batch of the job's whole files (JSONL or Parquet) rather
    than lines or rows."""
    if job.source.format == "jsonl":
        return ("text" in lines.columns and not job.inputs) or json_files(job, lines)
    return parquet_files(job, lines)


def json_files(job: Job, lines: DataFrame) -> bool:
    """Whether ``lines`` is a batch of the job's JSONL files by name (``path``,
    ``file``, ``mtime``, ``length``: the ``binaryFile`` stream) rather than their text."""
    return (
        job.source.format == "jsonl"
        and not job.inputs
        and {"path", "length"} <= set(lines.columns)
        and "text" not in lines.columns
    )


def parquet_files(job: Job, lines: DataFrame) -> bool:
    """Whether ``lines`` is a batch of the job's Parquet files (``path``, ``file``,
    ``mtime``, ``length``) rather than their rows."""
    return (
        job.source.format == "parquet"
        and not job.inputs
        and {"path", "length"} <= set(lines.columns)
        and "raw" not in lines.columns
    )


def typed_names(job: Job) -> list[str]:
    """The columns typed Parquet rows carry for the one-pass kernel alone."""
    return [name for name, _ in typed_columns(job)]
