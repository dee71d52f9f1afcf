"""The Spark engine: the only package that imports pyspark.

Use :func:`start` to run a job on a streaming DataFrame of files and get a
``StreamingQuery`` back, or :func:`run_job` to run it to completion.
"""

from sparktide.spark.engine import SparkEngine
from sparktide.spark.foreach import BatchResults
from sparktide.spark.inputs.textfiles import split_lines
from sparktide.spark.publish import publish_metrics
from sparktide.spark.query import SparktideQuery
from sparktide.spark.run import run_job, start
from sparktide.spark.session import local_session
from sparktide.spark.sources import broker_lines, file_lines

__all__ = [
    "BatchResults",
    "SparkEngine",
    "SparktideQuery",
    "broker_lines",
    "file_lines",
    "local_session",
    "publish_metrics",
    "run_job",
    "split_lines",
    "start",
]
