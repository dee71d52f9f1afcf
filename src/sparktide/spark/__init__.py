"""The Spark engine: the only package that imports pyspark.

Use :func:`start` to run a job on a streaming DataFrame of files and get a
``StreamingQuery`` back, or :func:`run_job` to run it to completion.
"""

from sparktide.spark.engine import SparkEngine
from sparktide.spark.run import (
    broker_lines,
    file_lines,
    local_session,
    publish_metrics,
    run_job,
    split_lines,
    start,
)

__all__ = [
    "SparkEngine",
    "broker_lines",
    "file_lines",
    "local_session",
    "publish_metrics",
    "run_job",
    "split_lines",
    "start",
]
