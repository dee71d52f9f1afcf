"""Writing a batch's outputs and state tables, counted by the writes themselves."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparktide.spark.batch import Batch
from sparktide.spark.state import StateStore

__all__ = [
    "NO_RECORDS",
    "collect_sorted",
    "empty_directory",
    "hand_lines",
    "newline_ended",
    "ordered",
    "state_schema",
    "write_lines",
    "write_state",
    "write_text",
]

#: The empty file a batch directory with no records holds instead of a data file. Spark
#: reads it (a name starting with ``_`` is skipped unless it holds ``=``), so
#: ``spark.read.json`` of an output in which no batch wrote a record still finds a
#: file; pyarrow skips it (names starting with ``_``), which cannot open an empty JSON
#: file; ``pandas.read_json`` reads it as no rows (docs/outputs.md).
NO_RECORDS = "_records=0.jsonl"

_STATE_TYPES = {"string": T.StringType(), "long": T.LongType()}


def state_schema(columns: str) -> T.StructType:
    """The schema of a state table from its columns, ``"name type, ..."`` (types
    ``string`` and ``long``; every column nullable)."""
    pairs = (column.split() for column in columns.split(","))
    return T.StructType([T.StructField(name, _STATE_TYPES[kind]) for name, kind in pairs])


#: Hadoop's switch for the ``_SUCCESS`` file a Spark write leaves (a write option reaches
#: the write's Hadoop configuration). Off for state tables: one file, and one ``chmod``
#: process of the JVM, less per table (docs/design.md, "Child processes of the JVM").
_SUCCESS_MARKER = "mapreduce.fileoutputcommitter.marksuccessfuljobs"


def ordered(*columns: str) -> list[Column]:
    """``columns`` renamed ``_o0, _o1, ...``: the sort key :func:`write_text` writes in."""
    return [F.col(c).alias(f"_o{i}") for i, c in enumerate(columns)]


def write_text(
    batch: Batch, frame: DataFrame, directory: str | None, counter: str | None = None
) -> None:
    """Write ``frame``'s ``value`` as one text file under ``directory``/the batch's
    label, in the order of its ``_o<i>`` columns (see :func:`ordered`); with
    ``counter``, add the number of records written to that counter of the batch
    (observed by the write itself: no job).

    One partition sorted locally, rather than a global ``orderBy`` then
    ``coalesce(1)``: the same single ordered file without the range-sampling job.

    When the batch collects its records (``batch.sink``: a typed format or a callback),
    they are collected to the driver in that order and handed to the sink instead; when
    it writes from the driver (``batch.writes_on_driver``), they are collected and
    written by :func:`write_lines`: the same file, without a Spark write."""
    if directory is None and not batch.callback:
        return
    order = sorted((c for c in frame.columns if c.startswith("_o")), key=lambda c: int(c[2:]))
    if batch.sink is not None or batch.writes_on_driver:
        lines = collect_sorted(frame, order).column("value").combine_chunks()
        hand_lines(batch, lines, directory, counter)
        return
    assert directory is not None
    observation = Observation() if counter is not None else None
    if observation is not None:
        frame = frame.observe(observation, F.count(F.lit(1)).alias("n"))
    (
        frame.repartition(1)
        .sortWithinPartitions(*order)
        .select("value")
        .write.mode("overwrite")
        .text(f"{directory}/{batch.label}")
    )
    _name_jsonl(frame.sparkSession, f"{directory}/{batch.label}")
    if observation is not None and counter is not None:
        batch.count(counter, _observed_count(observation))


def hand_lines(
    batch: Batch, lines: pa.Array, directory: str | None, counter: str | None = None
) -> None:
    """Write records collected on the driver (``lines``, in order) as :func:`write_text`
    writes them: to the batch's sink when it has one (a typed format, a callback), else
    as the one file of ``directory``/the batch's label; with ``counter``, count them."""
    if directory is None and not batch.callback:
        return
    if batch.sink is not None:
        batch.sink("results", directory, lines, None)
    else:
        assert directory is not None
        write_lines(newline_ended(lines), f"{local_path(directory)}/{batch.label}")
    if counter is not None:
        batch.count(counter, len(lines))


def collect_sorted(frame: DataFrame, order: list[str]) -> pa.Table:
    """``frame`` without its ``order`` columns, collected as Arrow and sorted by them in
    Arrow, in the order :func:`write_text`'s Spark sort gives: ascending, nulls first,
    texts by their UTF-8 bytes (the order columns are integers and texts). Sorting on
    the driver spares the plan a shuffle into one partition: one Spark stage fewer."""
    table = frame.toArrow()
    if table.num_rows > 1:
        table = table.sort_by(**_ascending_nulls_first(order))
    return table.select([c for c in table.column_names if c not in order])


#: Whether pyarrow takes the place of nulls per sort key (25.0 on; before, per sort).
_NULLS_PER_KEY = int(pa.__version__.split(".")[0]) >= 25


def _ascending_nulls_first(order: list[str]) -> dict[str, Any]:
    """``Table.sort_by``'s arguments: ``order`` ascending, nulls first (Spark's ``ASC``)."""
    if _NULLS_PER_KEY:
        return {"sorting": [(c, "ascending", "at_start") for c in order]}
    return {"sorting": [(c, "ascending") for c in order], "null_placement": "at_start"}


def write_state(
    store: StateStore, batch: Batch, frame: DataFrame, table: str, gauge: str | None = None
) -> None:
    """Write a state table of the batch; with ``gauge``, its row count becomes that
    state gauge of the metrics record (observed by the write: no extra job).

    When the batch writes from the driver (``batch.writes_on_driver``) and every column
    has an Arrow type Spark reads back as it wrote it, the table is collected as Arrow
    and written by :meth:`StateStore.write_arrow` (one Parquet file, as Spark's writer
    would leave for so few rows)."""
    if batch.writes_on_driver and _arrow_writable(frame.schema):
        rows = frame.toArrow()
        store.write_arrow(rows, batch.id, table)
        if gauge is not None:
            batch.gauges[gauge] = rows.num_rows
        return
    observation = Observation() if gauge is not None else None
    if observation is not None:
        frame = frame.observe(observation, F.count(F.lit(1)).alias("n"))
    # (no ``_SUCCESS`` marker: the batch's clock file, written last, commits its state)
    writer = frame.write.mode("overwrite").option(_SUCCESS_MARKER, "false")
    writer.parquet(store.table_path(batch.id, table))
    if observation is not None and gauge is not None:
        batch.gauges[gauge] = _observed_count(observation)


#: The column types a state table written from the driver may have: Spark's Parquet
#: reader gives back exactly what ``toArrow`` collected (others take Spark's writer).
_ARROW_ATOMIC = (
    T.StringType,
    T.LongType,
    T.IntegerType,
    T.ShortType,
    T.ByteType,
    T.DoubleType,
    T.FloatType,
    T.BooleanType,
    T.TimestampType,
    T.DateType,
    T.DecimalType,
)


def _arrow_writable(schema: T.StructType) -> bool:
    """Whether every column of ``schema`` goes through Arrow and Parquet to Spark
    unchanged (:data:`_ARROW_ATOMIC`, and structs, arrays and maps of them)."""
    return all(_arrow_type(f.dataType) for f in schema.fields)


def _arrow_type(kind: T.DataType) -> bool:
    """:func:`_arrow_writable` for one column's type. A nested field that may not be
    null is refused: in a struct that is null, PySpark's ``toArrow`` cannot convert it."""
    if isinstance(kind, T.StructType):
        return all(f.nullable and _arrow_type(f.dataType) for f in kind.fields)
    if isinstance(kind, T.ArrayType):
        return _arrow_type(kind.elementType)
    if isinstance(kind, T.MapType):
        return _arrow_type(kind.keyType) and _arrow_type(kind.valueType)
    return isinstance(kind, _ARROW_ATOMIC)


def newline_ended(lines: pa.Array) -> pa.Array:
    """``lines`` each ending in a newline (as :func:`write_lines` writes them)."""
    if len(lines) == 0 or pc.all(pc.ends_with(lines, "\n")).as_py():
        return lines
    return pc.binary_join_element_wise(lines, "\n", "")


def local_path(directory: str) -> str:
    """``directory`` as a local path (without Spark's ``file:`` scheme)."""
    return directory.removeprefix("file:")


def write_lines(lines: pa.Array, directory: str) -> None:
    """Write ``lines`` (each ending in a newline: :func:`newline_ended`) as
    ``directory``'s one JSON-lines file (:data:`NO_RECORDS` when there are none),
    replacing the directory (as a Spark write in ``overwrite`` mode does), with Spark's
    ``_SUCCESS`` marker; readers never see a half-written directory (it is renamed into
    place)."""
    final = Path(directory)
    tmp = final.with_name(f".{final.name}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    if len(lines):  # (the array's character data is the file)
        width = np.int64 if pa.types.is_large_string(lines.type) else np.int32
        offsets = np.frombuffer(lines.buffers()[1], dtype=width)
        first, last = offsets[lines.offset], offsets[lines.offset + len(lines)]
        with open(tmp / "part-00000.jsonl", "wb") as handle:
            handle.write(memoryview(lines.buffers()[2])[first:last])
    else:
        (tmp / NO_RECORDS).touch()
    (tmp / "_SUCCESS").touch()
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)


def empty_directory(directory: str) -> None:
    """Replace ``directory`` by a batch directory with no records (``_SUCCESS`` and
    :data:`NO_RECORDS`), from the driver as :func:`write_lines` writes (a job's paths
    are local: they cannot hold a scheme's ``:``)."""
    write_lines(pa.array([], pa.string()), local_path(directory))


def _file_system(spark: SparkSession, directory: str) -> tuple[Any, Any, Any]:
    """The JVM, the Hadoop file system of ``directory`` and its Hadoop path."""
    jvm: Any = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(directory)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())  # type: ignore[union-attr]
    return jvm, fs, path


def _name_jsonl(spark: SparkSession, directory: str) -> None:
    """Name the text files Spark wrote to ``directory`` ``*.jsonl`` (its text writer
    names them ``*.txt``) and drop empty ones; a directory left with no data file gets
    :data:`NO_RECORDS`. (A crash in between leaves the batch uncommitted: its replay
    overwrites the directory.)"""
    jvm, fs, path = _file_system(spark, directory)
    data = 0
    for status in fs.listStatus(path):
        file = status.getPath()
        name = file.getName()
        if name.startswith(("_", ".")) or not name.endswith(".txt"):
            continue
        if status.getLen() == 0:
            fs.delete(file, False)
            continue
        fs.rename(file, jvm.org.apache.hadoop.fs.Path(path, name[: -len(".txt")] + ".jsonl"))
        data += 1
    if not data:
        fs.create(jvm.org.apache.hadoop.fs.Path(path, NO_RECORDS), True).close()


def _observed_count(observation: Observation) -> int:
    """The count an :class:`Observation` of ``count(1) AS n`` saw.

    When Spark proves the observed rows empty at run time (adaptive execution over a
    cached frame), it drops the observing node and the observation completes with an
    empty row, which ``Observation.get`` cannot convert: that row means nothing was
    written."""
    row = observation._jo.getRow()  # type: ignore[union-attr]
    return 0 if row.size() == 0 else int(row.getLong(0))
