"""A local Spark session configured for sparktide."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

__all__ = [
    "DYNAMIC_PRUNING",
    "HUGE_METHOD_BYTES",
    "HUGE_METHOD_LIMIT",
    "local_session",
    "settings_for",
]


def local_session(
    cores: int = 2, memory: str | None = None, conf: dict[str, str] | None = None
) -> SparkSession:
    """A local SparkSession configured for sparktide (UTC, shuffle partitions = cores).

    ``conf`` adds or overrides Spark settings (e.g. the UI retention limits, which are
    low here so a long run's heap stays flat).

    ``memory`` is the JVM heap (``spark.driver.memory``; in local mode the driver also
    runs the tasks): ``$SPARKTIDE_MEMORY``, else 3g. Spark's own default of 1g is too
    small for micro-batches of a million events, which each batch holds parsed in memory
    (spilling to disk beyond it). It applies only when this call starts the JVM.
    """
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    memory = memory or os.environ.get("SPARKTIDE_MEMORY", "3g")
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("sparktide")
        .config("spark.driver.memory", memory)
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
        # Spark keeps the last 1000 jobs, stages and SQL executions for its UI: the heap
        # grows with every micro-batch until those limits (bench/soak.py); a few suffice
        .config("spark.ui.retainedJobs", "50")
        .config("spark.ui.retainedStages", "50")
        .config("spark.sql.ui.retainedExecutions", "20")
        .config(HUGE_METHOD_LIMIT, HUGE_METHOD_BYTES)
        .config(DYNAMIC_PRUNING, "false")
        .config(CHECKPOINT_FILE_MANAGER, FILE_SYSTEM_CHECKPOINTS)
        .config(DATAFRAME_DEBUGGING, "false")
        .config(PYTHON_DAEMON_MODULE, SPARKTIDE_DAEMON)
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _quiet_query_failures(spark)
    return spark


#: Spark compiles each stage into Java methods and keeps one even when it is larger than
#: the 8,000 bytes of bytecode the JVM's JIT compiles; such a method then runs
#: interpreted. The parse and policy projections are that large: with the limit at the
#: JIT's, Spark splits them, and large batches run faster (docs/design.md).
#: ``start`` applies it to a caller's session unless set there.
HUGE_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit"
HUGE_METHOD_BYTES = "8000"
_SPARK_HUGE_METHOD_DEFAULT = "65535"

#: Spark writes its streaming checkpoint's files through Hadoop's ``FileContext`` by
#: default, whose rename, on a local disk without Hadoop's native library (as pip's
#: pyspark ships), starts a ``readlink`` child process of the JVM several times per file:
#: a third of the processes a micro-batch started. The ``FileSystem`` manager renames
#: in the JVM (each file still written to a temporary name first, then renamed).
CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"

#: Dynamic partition pruning looks, in every plan the optimiser sees, for a join whose
#: one side could prune the other's partitioned table scan. sparktide's plans join no
#: partitioned tables, but its judged batches hold many joins and large expressions, and
#: the rule's search took most of their optimisation: 0.65 s of 1 s for a typed batch,
#: 19 s of 19.3 s when a computed time's expression runs through it (semantics §1.4).
#: Off, it changes no plan that matters here. ``start`` applies it to a caller's session
#: unless set there (it prunes nothing in plans without partitioned tables).
DYNAMIC_PRUNING = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
FILE_SYSTEM_CHECKPOINTS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)


#: PySpark records, for every ``DataFrame`` and column function called, the Python
#: line that called it, so that an error can name it: a few py4j round trips and a walk
#: of the Python stack per call. A micro-batch's plans take thousands of such calls,
#: all made by sparktide's own code, whose lines would mean nothing to a user reading
#: the error. Off, a small batch's driver does markedly less (docs/design.md, "Spark
#: settings", has the figures). Read once per Python process, from the session active at
#: the first call.
DATAFRAME_DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"

#: The module Spark starts its Python workers' daemon with: pyspark's own, run after
#: taking pyspark's zip archives off the path (:mod:`sparktide.pyspark_daemon`).
PYTHON_DAEMON_MODULE = "spark.python.daemon.module"
SPARKTIDE_DAEMON = "sparktide.pyspark_daemon"


def _quiet_query_failures(spark: SparkSession) -> None:
    """Silence Spark's own log of a failed streaming query: :func:`run_job` reports the
    failure itself (one line for a file-system fault, else the query's exception with
    its whole trace), so the log would only print the same trace twice."""
    try:
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        level = jvm.org.apache.logging.log4j.Level.OFF
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        configurator.setLevel("org.apache.spark.sql.execution.streaming", level)
    except Exception:  # logging is cosmetic: never fail a run over it
        pass


def _python() -> str:
    return sys.executable


def settings_for(spark: SparkSession) -> None:
    """Apply :data:`HUGE_METHOD_LIMIT` and :data:`DYNAMIC_PRUNING` to a caller's session
    unless set there (each to other than Spark's default)."""
    if spark.conf.get(HUGE_METHOD_LIMIT, _SPARK_HUGE_METHOD_DEFAULT) == _SPARK_HUGE_METHOD_DEFAULT:
        spark.conf.set(HUGE_METHOD_LIMIT, HUGE_METHOD_BYTES)
    if spark.conf.get(DYNAMIC_PRUNING, "true") == "true":
        spark.conf.set(DYNAMIC_PRUNING, "false")
