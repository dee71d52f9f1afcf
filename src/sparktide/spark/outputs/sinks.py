"""A batch's records handed to its outputs in the job's ``[output] format``, and kept for
the ``foreach_batch`` callback (docs/outputs.md).

With ``format = "jsonl"`` and no callback the engine writes its JSON lines from Spark
(:func:`sparktide.spark.outputs.text.write_text`) and nothing here runs. Otherwise the
batch's records are collected to the driver as Arrow (they are the batch's closed
windows, released events and dead letters: what the engine writes, not what it reads)
and written from there:

* ``jsonl``: the same text, one file per batch directory (:func:`.write_lines`);
* ``parquet``: one Parquet file per batch directory, the same ``batch=/flush=`` layout,
  replaced whole on replay; the schema of every column so far in ``_common_metadata``;
* ``delta``: one Delta table per output (delta-rs), a commit per batch carrying the
  application transaction ``(sparktide, 2 * batch + flush)``; a replayed batch whose
  transaction the table already holds is not written again.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sparktide.errors import ConfigError, RunError
from sparktide.spark.batch import Batch
from sparktide.spark.context import Context
from sparktide.spark.outputs.text import local_path, newline_ended, write_lines
from sparktide.spark.outputs.typed import (
    RESULTS,
    TIME_TYPE,
    load_pinned,
    pin,
    records_table,
    save_pinned,
)

__all__ = ["DELTA_APP_ID", "delta_version", "hand_over"]

#: The application id of sparktide's commits to a Delta table (``txn.appId``).
DELTA_APP_ID = "sparktide"
_PARTITIONS = pa.schema([("batch", pa.int32()), ("flush", pa.int32())])


def delta_version(batch_id: int, flush: bool) -> int:
    """The Delta transaction version of a micro-batch (``2 * id``) or of the flush that
    followed it (``2 * id + 1``): increasing, never reused."""
    return 2 * batch_id + int(flush)


def hand_over(
    context: Context,
    batch: Batch,
    kind: str,
    directory: str | None,
    *,
    lines: pa.Array,
    typed: pa.Table | None = None,
) -> None:
    """Write a batch's records of ``kind`` (``results`` or ``dead_letters``) to
    ``directory`` in the job's format and keep them, typed, for the callback.

    ``lines`` are the records' JSON text; ``typed``, their table when the caller has it
    (dead letters: a fixed schema), else it is parsed from ``lines``."""
    fmt = context.job.output.format
    if fmt == "jsonl" and directory is not None:
        write_lines(newline_ended(lines), f"{local_path(directory)}/{batch.label}")
    if fmt == "jsonl" and not batch.callback:
        return
    if typed is None:
        where = f"output.{'path' if kind == RESULTS else 'dead_letter'}"
        root = context.store.root
        pinned = load_pinned(root, kind)
        typed, schema = pin(records_table(lines, where), pinned, where)
        if schema != pinned and len(schema):
            save_pinned(root, kind, schema)
    if not len(typed.schema) and kind == RESULTS:  # (no record yet: the times)
        typed = _no_records(context)
    batch.outputs[kind] = typed
    if directory is None or fmt == "jsonl":
        return
    if fmt == "parquet":
        _write_parquet(typed, directory, batch.label)
    elif fmt == "delta":
        _write_delta(typed, directory, batch)
    else:  # (the job model allows no other)
        raise ConfigError("output.format", f"unknown format {fmt!r}")


def _no_records(context: Context) -> pa.Table:
    """The results of a batch without records before any batch had some: no rows, the
    columns every record will have (the window bounds and ``emitted_at``, or the
    ``timestamp``), so that a reader of an output still without records finds a schema.
    (Not pinned: with ``[select]`` the records may have other names.)"""
    names = (
        ("window_start", "window_end", "emitted_at")
        if context.written_window and not context.job.joins_windows
        else ("timestamp",)
    )
    return pa.schema([(name, TIME_TYPE) for name in names]).empty_table()


def _write_parquet(table: pa.Table, directory: str, label: str) -> None:
    """``table`` as the one Parquet file of ``directory``/``label`` (replaced whole,
    renamed into place with Spark's ``_SUCCESS``); first, every column so far in
    ``directory``/``_common_metadata``, where Spark takes a dataset's schema from."""
    root = Path(local_path(directory))
    root.mkdir(parents=True, exist_ok=True)
    if len(table.schema) and (table.num_rows or not (root / "_common_metadata").exists()):
        tmp = root / "._common_metadata.tmp"
        pq.write_metadata(table.schema, tmp)
        os.replace(tmp, root / "_common_metadata")
    final = root / label
    staged = final.with_name(f".{final.name}.tmp")
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    pq.write_table(table, staged / "part-00000.parquet")
    (staged / "_SUCCESS").touch()
    if final.exists():
        shutil.rmtree(final)
    os.replace(staged, final)


def _write_delta(table: pa.Table, directory: str, batch: Batch) -> None:
    """Append ``table`` (with ``batch`` and ``flush`` columns) to the Delta table at
    ``directory`` in one commit carrying the batch's application transaction, unless
    the table holds that transaction already (the batch was written before a crash).
    A batch without records commits nothing, except the first, which creates the table
    (so that it can be read)."""
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
    from deltalake.exceptions import TableNotFoundError

    version = delta_version(batch.id, batch.flushing)
    location = local_path(directory)
    try:
        done = DeltaTable(location).transaction_version(DELTA_APP_ID)
        exists = True
    except TableNotFoundError:
        done, exists = None, False
    if done is not None and done >= version:
        return
    if exists and table.num_rows == 0:
        return
    n = table.num_rows
    columns = [
        pa.array([batch.id] * n, pa.int32()),
        pa.array([int(batch.flushing)] * n, pa.int32()),
    ]
    for name, column in zip(_PARTITIONS.names, columns, strict=True):
        if name in table.column_names:
            raise RunError(
                f"output {directory}: the records have a field {name!r}, which a Delta "
                "output adds itself (the micro-batch id and flush); rename it with [select]"
            )
        table = table.append_column(_PARTITIONS.field(name), column)
    write_deltalake(
        location,
        table,
        mode="append",
        schema_mode="merge",
        commit_properties=CommitProperties(app_transactions=[Transaction(DELTA_APP_ID, version)]),
    )
