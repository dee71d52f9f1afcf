"""Starting sparktide jobs on Spark: from a job file's source, or from your own stream."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from sparktide.errors import ConfigError, InputError, RunError
from sparktide.job import Job, Source
from sparktide.reader import (
    CSV_FIELD,
    CSV_QUOTED,
    MAX_INTEGER_DIGITS,
    MAX_LINE_CHARS,
)
from sparktide.spark.engine import SparkEngine
from sparktide.spark.inputs.contract import WHITE_SPACE
from sparktide.spark.inputs.parquet import parquet_rows
from sparktide.spark.inputs.sqlvalues import shown_text
from sparktide.spark.inputs.textfiles import lines_of, split_lines, whole_texts
from sparktide.spark.sql import sql_string

__all__ = [
    "broker_lines",
    "check_watchable",
    "csv_rows",
    "file_lines",
    "local_session",
    "parquet_rows",
    "publish_metrics",
    "run_job",
    "split_lines",
    "start",
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
        # Spark keeps the last 1000 jobs, stages and SQL executions for its UI: about
        # 0.5 MB of heap per micro-batch until those limits (bench/soak.py); a few suffice
        .config("spark.ui.retainedJobs", "50")
        .config("spark.ui.retainedStages", "50")
        .config("spark.sql.ui.retainedExecutions", "20")
        .config(HUGE_METHOD_LIMIT, HUGE_METHOD_BYTES)
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
#: JIT's, Spark splits them, and a million-event batch took 15.6 s instead of 19.7 s
#: (docs/design.md). ``start`` applies it to a caller's session unless set there.
HUGE_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit"
HUGE_METHOD_BYTES = "8000"
_SPARK_HUGE_METHOD_DEFAULT = "65535"


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
    import sys

    return sys.executable


#: The (fixed) schema of Spark's ``binaryFile`` source, which a stream must be given.
_BINARY_FILE = "path string, modificationTime timestamp, length bigint, content binary"


def file_lines(
    spark: SparkSession, job: Job, *, max_files_per_trigger: int | None = None
) -> DataFrame:
    """The job's source directory as a stream: whole files (``file``, ``text``, ``mtime``)
    for CSV; for JSONL and Parquet the new files' names (``path``, ``file``, ``mtime``,
    ``length``), which the engine's one-pass kernel reads itself, or Spark reads for it
    (:func:`~sparktide.spark.parse.json_texts`: the files' text;
    :func:`~sparktide.spark.parquet.parquet_rows`: rows, each file with its own schema).

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


def check_watchable(path: str, key: str) -> None:
    """Check that ``run`` can watch ``path`` (the input named ``key``) for new files.

    Raises
    ------
    InputError
        If the path is missing, or is a file: a streaming run watches a directory (SPEC
        §10), and Spark's file source would otherwise fail inside the query with a long
        trace (``simulate`` reads a single file; ``run`` needs its directory).
    """
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


_INT = rf"^-?[0-9]{{1,{MAX_INTEGER_DIGITS}}}\z"
_FLOAT = r"^-?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?\z"


def _json_string(expr: str) -> str:
    """SQL for the JSON string literal of a text expression."""
    return f"substr(to_json(array({expr})), 2, length(to_json(array({expr}))) - 2)"


def _csv_value(cell: str) -> str:
    """SQL for the JSON value of a CSV cell, typed as ``sparktide.reader`` types it: empty
    is null, then an integer of at most 38 digits, then a finite float, else text."""
    return (
        f"CASE WHEN {cell} = '' THEN 'null' "
        f"WHEN {cell} RLIKE {sql_string(_INT)} THEN CAST(CAST({cell} AS DECIMAL(38,0)) AS STRING) "
        f"WHEN {cell} RLIKE {sql_string(_FLOAT)} AND abs(CAST({cell} AS DOUBLE)) "
        "<> CAST('Infinity' AS DOUBLE) "
        f"THEN CAST(CAST({cell} AS DOUBLE) AS STRING) "
        f"ELSE {_json_string(cell)} END"
    )


def _csv_cells(line: str) -> str:
    """SQL for the unquoted cells of a CSV line (:data:`sparktide.reader.CSV_FIELD`)."""
    quoted = "(?s)^" + CSV_QUOTED + r"\z"
    pattern = sql_string(quoted)
    unquote = (
        f"CASE WHEN left(c, 1) = '\"' THEN concat(replace(regexp_extract(c, {pattern}, 1), "
        f"'\"\"', '\"'), regexp_extract(c, {pattern}, 2)) ELSE c END"
    )
    fields = f"regexp_extract_all(concat(',', {line}), {sql_string(CSV_FIELD)}, 1)"
    return f"transform({fields}, c -> {unquote})"


def csv_rows(files: DataFrame) -> DataFrame:
    r"""CSV files → one JSON-object line per data row, as the reference reader reads them:
    lines end at ``\n`` (a trailing ``\r`` is dropped), cells are split and typed alike
    (empty → null, integer, float, else text), and a row that is not UTF-8, too long,
    under a header that is not UTF-8 or names a column twice, or with the wrong number of
    cells keeps its text and gets the reference reader's error in ``pre_error``."""
    pieces = files.select("file", "mtime", F.posexplode(F.expr(lines_of("text"))).alias("pos", "t"))
    # the trailing \r goes by bytes: the line may not be UTF-8 (a regex would decode it)
    lines = pieces.selectExpr(
        "file",
        "mtime",
        "pos",
        "CASE WHEN endswith(t, '\\r') THEN "
        "CAST(substring(CAST(t AS BINARY), 1, octet_length(t) - 1) AS STRING) ELSE t END AS text",
    ).withColumn("utf8", F.expr("is_valid_utf8(text)"))
    headers = lines.filter("pos = 0").selectExpr(
        "file",
        "utf8 AS header_utf8",
        f"CASE WHEN utf8 THEN {_csv_cells('text')} ELSE array() END AS names",
    )
    rows = lines.filter(f"pos > 0 AND btrim(text, {sql_string(WHITE_SPACE)}) <> ''").join(
        headers, on="file"
    )
    rows = rows.withColumn(
        "cells",
        F.expr(
            f"CASE WHEN utf8 AND length(text) <= {MAX_LINE_CHARS} THEN {_csv_cells('text')} "
            "ELSE array() END"
        ),
    ).withColumn(
        "twice",
        F.expr("try_element_at(filter(names, (x, i) -> array_position(names, x) <> i + 1), 1)"),
    )
    pairs = (
        "transform(arrays_zip(names, cells), x -> concat("
        f"{_json_string('x.names')}, ':', {_csv_value('x.cells')}))"
    )
    number = "concat('line ', pos + 1, ': '"
    checks = [
        ("NOT utf8", f"{number}, 'invalid UTF-8')"),
        (
            f"length(text) > {MAX_LINE_CHARS}",
            f"{number}, 'too long (', length(text), ' characters, the limit is {MAX_LINE_CHARS})')",
        ),
        ("NOT header_utf8", f"{number}, 'the header (line 1) is not valid UTF-8')"),
        (
            "twice IS NOT NULL",
            f"{number}, 'the header names column \\'', {shown_text('twice')}, '\\' twice')",
        ),
        (
            "size(cells) <> size(names)",
            f"{number}, 'expected ', size(names), ' columns, got ', size(cells))",
        ),
    ]
    error = "CASE " + " ".join(f"WHEN {c} THEN {e}" for c, e in checks) + " END"
    rows = rows.withColumn("pre_error", F.expr(error))
    return rows.select(
        "file",
        (F.col("pos") + 1).cast("bigint").alias("line"),
        F.expr(
            "CASE WHEN NOT utf8 THEN make_valid_utf8(text) WHEN pre_error IS NOT NULL THEN text "
            f"ELSE concat('{{', array_join({pairs}, ','), '}}') END"
        ).alias("raw"),
        "mtime",
        "pre_error",
    )


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


def start(
    spark: SparkSession,
    job: Job,
    files: DataFrame | None = None,
    *,
    once: bool = False,
    max_files_per_trigger: int | None = None,
    processing_time: str | None = None,
    clock: Callable[[int], int] | None = None,
    on_metrics: Callable[[dict[str, Any]], None] | None = None,
) -> StreamingQuery:
    """Start ``job`` on Spark and return its :class:`StreamingQuery`.

    Parameters
    ----------
    spark
        The session.
    job
        The job (its ``[output]`` directories are written).
    files
        A streaming DataFrame of whole files (``file``, ``text``, ``mtime``), or of
        lines (``file``, ``line``, ``raw``, ``mtime``, e.g. from :func:`broker_lines`);
        by default the job's own source directory.
    once
        Process what is there and stop (available-now trigger).
    max_files_per_trigger
        At most this many new files per micro-batch.
    processing_time
        Trigger interval such as ``"10 seconds"`` (when not ``once``).
    clock
        Processing time for each new batch id (tests); the wall clock by default.
    on_metrics
        Called with each micro-batch's metrics record.

    Raises
    ------
    ConfigError
        ``output.checkpoint`` is in use by another run, or was written by a job with
        another window or input layout.
    """
    if spark.conf.get(HUGE_METHOD_LIMIT, _SPARK_HUGE_METHOD_DEFAULT) == _SPARK_HUGE_METHOD_DEFAULT:
        spark.conf.set(HUGE_METHOD_LIMIT, HUGE_METHOD_BYTES)
    engine = SparkEngine(spark, job, clock=clock)
    engine.on_metrics = on_metrics
    _take_checkpoint(engine)
    if files is None:
        files = file_lines(spark, job, max_files_per_trigger=max_files_per_trigger)

    def batch(frame: DataFrame, batch_id: int) -> None:
        if "input" in frame.columns:  # a union of inputs
            lines = union_lines(frame, job)
        elif "raw" in frame.columns:
            lines = frame
        elif job.source.format == "csv":
            lines = csv_rows(frame)
        else:  # whole JSONL files, or Parquet files: the engine reads them with Arrow
            lines = frame
        engine.process(lines, batch_id)

    writer = (
        files.writeStream.foreachBatch(batch)
        .queryName(f"sparktide:{job.output.checkpoint}")
        .option("checkpointLocation", f"{job.output.checkpoint}/spark")
    )
    if once:
        writer = writer.trigger(availableNow=True)
    elif processing_time is not None:
        writer = writer.trigger(processingTime=processing_time)
    try:
        query = writer.start()
    except BaseException:
        engine.store.unlock()
        raise
    query.sparktide_engine = engine  # type: ignore[attr-defined]
    _RUNS[engine.store.root] = query
    return query


#: What the errors of file systems that cannot be written say (Python's and Hadoop's).
_WRITE_FAILURES = (
    "permission denied",
    "no space left",
    "not a directory",
    "parentnotdirectoryexception",
    "mkdirs failed",
    "read-only file system",
    "quota exceeded",
    "accesscontrolexception",
    "filealreadyexistsexception",
)


def _run_error(exception: BaseException, job: Job) -> BaseException:
    """A failed query as a :class:`RunError` when it failed writing (an output, the
    metrics or the checkpoint cannot be written), else the query's own exception.

    The batch that failed was not committed, so running again once the cause is fixed
    replays it: nothing is lost or written twice."""
    text = str(exception)
    if not any(marker in text.lower() for marker in _WRITE_FAILURES):
        return exception
    cause = next(
        line.strip().removeprefix(": ")
        for line in text.splitlines()
        if any(m in line.lower() for m in _WRITE_FAILURES)
    )
    places = [p for p in (job.output.path, job.output.dead_letter, job.output.metrics) if p]
    named = next((p for p in places if p.removeprefix("file:") in text), None)
    where = f"writing {named}" if named else "on a file-system fault"
    return RunError(
        f"the run failed {where}: {cause[:300]}. Fix the cause and run again: the job "
        "resumes from its checkpoint, replaying the failed batch (nothing is lost or "
        "written twice)"
    )


#: The query of each checkpoint this process started (to free the ones that stopped).
_RUNS: dict[Path, StreamingQuery] = {}


def _take_checkpoint(engine: SparkEngine) -> None:
    """Lock the engine's checkpoint and check it was written by a compatible job (see
    :meth:`StateStore.lock` and :meth:`StateStore.check_job`). A query this process
    started earlier on the same checkpoint gives it up if it has stopped."""
    earlier = _RUNS.get(engine.store.root)
    if earlier is not None and not earlier.isActive:
        earlier.sparktide_engine.store.unlock()  # type: ignore[attr-defined]
        del _RUNS[engine.store.root]
    engine.store.lock()
    try:
        engine.store.check_job(engine.job)
    except BaseException:
        engine.store.unlock()
        raise


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


def publish_metrics(
    spark: SparkSession,
    job: Job,
    *,
    once: bool = False,
    trigger: str = "1 second",
) -> StreamingQuery:
    """Publish a job's metrics records through Spark's own monitoring: a small streaming
    query named ``sparktide-metrics:<checkpoint>`` reads the records the job's micro-batches
    write and reports the newest one as the observed metrics ``sparktide`` of its
    progress, which every :class:`~pyspark.sql.streaming.StreamingQueryListener` and
    ``StreamingQuery.lastProgress`` sees.

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
    engine_dir = SparkEngine.metrics_directory_of(job)
    os.makedirs(engine_dir.removeprefix("file:"), exist_ok=True)
    records = spark.readStream.schema(METRICS_SCHEMA).json(engine_dir)
    newest = F.struct("batch", "flushed")
    fields = [name.split(" ", 1)[0] for name in _top_level(METRICS_SCHEMA)]
    observed = records.observe(
        "sparktide",
        *(F.max_by(name, newest).alias(name) for name in fields),
        F.count(F.lit(1)).alias("records"),
    )
    writer = (
        observed.writeStream.format("noop")
        .queryName(f"sparktide-metrics:{job.output.checkpoint}")
        .option("checkpointLocation", f"{job.output.checkpoint}/spark-metrics")
    )
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime=trigger)
    return writer.start()


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


@contextmanager
def _interrupts() -> Iterator[Callable[[], bool]]:
    """Within the block, SIGINT (Ctrl-C) only sets a flag, which the yielded function
    reads; outside the main thread (where signals cannot be handled) it stays False."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield lambda: bool(received)
    finally:
        signal.signal(signal.SIGINT, previous)


def run_job(
    job: Job,
    *,
    once: bool = False,
    flush: bool = False,
    spark: SparkSession | None = None,
    max_files_per_trigger: int | None = None,
    clock: Callable[[int], int] | None = None,
    trigger: str | None = None,
    publish: bool = True,
    on_metrics: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any] | None:
    """Run ``job`` until it is done (``once``) or interrupted; return the last metrics.

    Parameters
    ----------
    job
        The job.
    once
        Process what is there and stop (available-now trigger).
    flush
        After a ``once`` run, close every open window and release every held event.
    spark
        The session; a local one by default.
    max_files_per_trigger
        At most this many new files per micro-batch.
    clock
        Processing time per new batch id (tests); the wall clock by default.
    trigger
        Processing-time trigger interval such as ``"10 seconds"`` (continuous runs).
    publish
        Also publish the metrics as Spark observed metrics (:func:`publish_metrics`).
    on_metrics
        Called with each micro-batch's metrics record (and the flush's).
    """
    if job.output.checkpoint is None:
        raise ConfigError("output.checkpoint", "is required to run on Spark")
    if job.output.path is None:
        raise ConfigError("output.path", "is required to run on Spark")
    spark = spark or local_session()
    query = start(
        spark,
        job,
        once=once,
        max_files_per_trigger=max_files_per_trigger,
        clock=clock,
        processing_time=trigger,
        on_metrics=on_metrics,
    )
    engine: SparkEngine = query.sparktide_engine  # type: ignore[attr-defined]
    publisher = None
    try:
        if publish and not once:
            publisher = publish_metrics(spark, job, trigger=trigger or "1 second")
        try:
            with _interrupts() as interrupted:
                # Short waits, so Ctrl-C lands between py4j calls: PySpark's own SIGINT
                # handler calls into the JVM from inside the blocked call and wedges py4j.
                while not query.awaitTermination(0.5):
                    if interrupted():  # stop cleanly; the checkpoint resumes the job
                        query.stop()
                        break
        except StreamingQueryException as exc:  # the query failed
            error = _run_error(exc, job)
            if error is exc:
                raise
            raise error from exc
        metrics = engine.flush() if flush else engine.last_metrics
        if publish and once:
            publish_metrics(spark, job, once=True).awaitTermination()
    finally:
        if publisher is not None and publisher.isActive:
            publisher.stop()
        if query.isActive:
            query.stop()
        engine.store.unlock()
        _RUNS.pop(engine.store.root, None)
    return metrics
