"""sparktide's own checkpointed state, beside Spark's checkpoint.

Layout under ``<checkpoint>/sparktide/``::

    LOCK                     held (flock) by the run using the checkpoint
    job.json                 what the state means: the job's window and input layout
    journal/<batch>.json     processing time chosen for a micro-batch (written first)
    state/<batch>/clock.json partition clocks, timeline watermarks, cumulative counters
    state/<batch>/<table>/   parquet tables (substream keys, open windows, held events)
    state/<batch>/_COMMITTED written last: the state of <batch> is complete

A micro-batch reads the newest committed state below its own id, so a batch that Spark
replays after a crash starts from the same state and, with its journaled processing
time, decides exactly as it did the first time (semantics §9).
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import socket
import time
import uuid
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.job.perinput import INPUT_ORDERING_KEYS

__all__ = ["StateStore"]

_KEEP = 3
_JOURNAL_KEEP = 100


def _local(path: str) -> Path:
    if path.startswith("file:"):
        path = path[len("file:") :]
    return Path(path)


class StateStore:
    """Journal and per-batch state of one job.

    Parameters
    ----------
    spark
        The session (to read and write parquet tables).
    checkpoint
        The job's checkpoint directory.
    """

    def __init__(self, spark: SparkSession, checkpoint: str) -> None:
        self.spark = spark
        self.root = _local(checkpoint) / "sparktide"
        (self.root / "journal").mkdir(parents=True, exist_ok=True)
        (self.root / "state").mkdir(parents=True, exist_ok=True)
        self._writing: Path | None = None
        self._lock: IO[str] | None = None
        # tables this process wrote with write_arrow: those of the batch being written,
        # and, once committed, by (batch, name) with their file's identity (_kept)
        self._pending: dict[str, pa.Table] = {}
        self._kept: dict[tuple[int, str], tuple[Path, tuple[int, int, int], pa.Table]] = {}

    # ------------------------------------------------------------------ ownership
    def lock(self) -> None:
        """Take the checkpoint for this run, or refuse: two runs writing one checkpoint
        would each replay and overwrite the other's batches.

        An advisory ``flock`` on ``LOCK``: the operating system drops it when the process
        ends, however it ends, so a killed run leaves no stale lock behind. A second run
        in the same process is refused too (each lock is a separate open file)."""
        if self._lock is not None:
            return
        path = self.root / "LOCK"
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another run"
            handle.close()
            raise ConfigError(
                "output.checkpoint",
                f"{self.root.parent} is in use by {holder}: stop that run first, or give "
                "this one its own checkpoint directory",
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        handle.flush()
        self._lock = handle

    def unlock(self) -> None:
        """Give the checkpoint up (the end of a run)."""
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def check_job(self, job: Job) -> None:
        """Refuse a checkpoint written by a job whose state means something else.

        The open windows, held events and per-key clocks in the state are keyed by the
        window's definition and the input's partition and substream columns; read by a
        job with another window or layout they would give wrong results silently. The
        first run records them in ``job.json``; later runs must match. Ordering settings
        may change between runs (they apply from the next batch on)."""
        shape = json.loads(json.dumps(_job_shape(job)))  # (as read back: tuples are lists)
        path = self.root / "job.json"
        if not path.exists():
            _atomic_write(path, json.dumps(shape, indent=1, sort_keys=True))
            return
        before = json.loads(path.read_text())
        # (keys recorded since: a checkpoint written before them records them now)
        later = {k for k in shape if k.startswith(_RECORDED_LATER) and k not in before}
        changed = sorted(
            k for k in (set(before) | set(shape)) - later if before.get(k) != shape.get(k)
        )
        if changed:
            what = ", ".join(
                f"{k} was {json.dumps(before.get(k))}, now {json.dumps(shape.get(k))}"
                for k in changed
            )
            misread = (
                "its open windows and clocks would be misread"
                if any(not k.startswith(_RECORDED_LATER) for k in changed)
                else "the outputs would mix two jobs' records"
            )
            raise ConfigError(
                changed[0],
                f"differs from the job that wrote the checkpoint {self.root.parent} ({what}); "
                f"{misread}. Start from a new output.checkpoint (and new outputs), or "
                f"restore the settings recorded in {path}",
            )
        if later:
            _atomic_write(path, json.dumps({**before, **shape}, indent=1, sort_keys=True))

    def read_note(self, name: str) -> dict[str, Any] | None:
        """A small JSON document the run keeps beside its state (``<name>.json``), if any."""
        path = self.root / f"{name}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def write_note(self, name: str, data: dict[str, Any]) -> None:
        """Keep ``data`` as the document ``<name>.json`` (written whole, atomically)."""
        _atomic_write(self.root / f"{name}.json", json.dumps(data, sort_keys=True))

    # ------------------------------------------------------------------ journal
    def processing_time(self, batch_id: int | str, now: int | None = None) -> int:
        """The processing time of ``batch_id``: journaled, or chosen now and journaled."""
        path = self.root / "journal" / f"{batch_id}.json"
        if path.exists():
            return int(json.loads(path.read_text())["processing_time"])
        chosen = now if now is not None else time.time_ns() // 1000
        _atomic_write(path, json.dumps({"batch": batch_id, "processing_time": chosen}))
        return chosen

    def journal(self) -> dict[int, int]:
        """Every journaled batch id and its processing time."""
        out = {}
        for path in (self.root / "journal").glob("*.json"):
            data = json.loads(path.read_text())
            out[int(data["batch"])] = int(data["processing_time"])
        return dict(sorted(out.items()))

    # ------------------------------------------------------------------ state
    def _committed(self) -> list[int]:
        ids = []
        for path in (self.root / "state").iterdir():
            if path.name.isdigit() and (path / "_COMMITTED").exists():
                ids.append(int(path.name))
        return sorted(ids)

    def latest(self, below: int | None = None) -> int | None:
        """The newest committed batch id (below ``below`` if given)."""
        ids = [i for i in self._committed() if below is None or i < below]
        return ids[-1] if ids else None

    def load_clock(self, batch_id: int | None) -> dict[str, Any] | None:
        """The small JSON state of a committed batch."""
        if batch_id is None:
            return None
        return json.loads((self.root / "state" / str(batch_id) / "clock.json").read_text())

    def load_table(self, batch_id: int | None, name: str, schema: StructType) -> DataFrame:
        """A parquet table of a committed batch (empty with ``schema`` when absent)."""
        if batch_id is not None:
            path = self.root / "state" / str(batch_id) / name
            if path.exists() and any(path.glob("*.parquet")):
                return self.spark.read.schema(schema).parquet(str(path))
        return self.spark.createDataFrame([], schema)

    def table_files(self, batch_id: int | None, name: str) -> list[Path]:
        """The parquet files of a committed batch's table (none when absent)."""
        if batch_id is None:
            return []
        return sorted((self.root / "state" / str(batch_id) / name).glob("*.parquet"))

    def table_rows(self, batch_id: int | None, name: str) -> int:
        """The number of rows of a committed batch's table (from the files' footers)."""
        return sum(
            pq.ParquetFile(path).metadata.num_rows for path in self.table_files(batch_id, name)
        )

    def state_rows(self, batch_id: int | None) -> int:
        """The number of rows of every table of a committed batch (from the footers)."""
        if batch_id is None:
            return 0
        directory = self.root / "state" / str(batch_id)
        return sum(pq.ParquetFile(path).metadata.num_rows for path in directory.glob("*/*.parquet"))

    def load_arrow(self, batch_id: int | None, name: str, schema: pa.Schema) -> pa.Table:
        """A committed batch's table read on the driver, as ``schema`` (empty when absent).

        A table this process wrote with :meth:`write_arrow` and committed is taken from
        memory while its file is the one written (the next batch reads what the last one
        wrote, and need not read it back)."""
        files = self.table_files(batch_id, name)
        if not files:
            return schema.empty_table()
        assert batch_id is not None
        kept = self._kept.get((batch_id, name))
        if kept is not None and files == [kept[0]] and _identity(kept[0]) == kept[1]:
            return kept[2].select(schema.names).cast(schema)
        tables = [pq.read_table(path).select(schema.names).cast(schema) for path in files]
        return pa.concat_tables(tables)

    def write_arrow(self, table: pa.Table, batch_id: int, name: str) -> None:
        """Write a table of the batch being written from the driver (one parquet file,
        readable by :meth:`load_table` and :meth:`load_arrow` like Spark's own)."""
        directory = Path(self.table_path(batch_id, name))
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        # (text keys are mostly distinct and nothing reads the columns' statistics:
        # without dictionaries and statistics, open windows write faster)
        pq.write_table(
            table, directory / "part-00000.parquet", use_dictionary=False, write_statistics=False
        )
        self._pending[name] = table

    def spill_directory(self) -> Path:
        """A fresh directory for the files the one-pass tasks write during the batch
        being processed (``fused_kernel``); :meth:`clear_spill` removes them all."""
        path = self.root / "spill" / uuid.uuid4().hex
        path.mkdir(parents=True)
        return path

    def clear_spill(self) -> None:
        """Remove every directory :meth:`spill_directory` made (a killed run's too)."""
        shutil.rmtree(self.root / "spill", ignore_errors=True)

    def table_path(self, batch_id: int, name: str) -> str:
        """Where the state being written for ``batch_id`` keeps its table ``name``."""
        return (
            str(self._writing / name)
            if self._writing
            else str(self.root / "state" / str(batch_id) / name)
        )

    def begin(self, batch_id: int, *, replace: bool = False) -> None:
        """Start writing the state of ``batch_id`` (clearing a half-written attempt).

        With ``replace``, the committed state of ``batch_id`` stays readable until
        :meth:`commit` swaps the new one in (used by flush).
        """
        path = self.root / "state" / (f"{batch_id}.new" if replace else str(batch_id))
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        self._writing = path
        self._pending = {}

    def commit(self, batch_id: int, clock: dict[str, Any], *, replace: bool = False) -> None:
        """Finish the state of ``batch_id``; older states beyond the last few are removed."""
        path = self._writing or self.root / "state" / str(batch_id)
        _atomic_write(path / "clock.json", json.dumps(clock))
        _atomic_write(path / "_COMMITTED", "")
        if replace:
            final = self.root / "state" / str(batch_id)
            trash = self.root / "state" / f"{batch_id}.old"
            if final.exists():
                os.replace(final, trash)
            os.replace(path, final)
            shutil.rmtree(trash, ignore_errors=True)
        self._writing = None
        self._kept = {}  # (only the newest committed batch's tables: the next one reads them)
        for name, table in self._pending.items():
            file = self.root / "state" / str(batch_id) / name / "part-00000.parquet"
            if file.exists():
                self._kept[(batch_id, name)] = (file, _identity(file), table)
        self._pending = {}
        for old in self._committed()[:-_KEEP]:
            shutil.rmtree(self.root / "state" / str(old), ignore_errors=True)
        self._prune_journal(batch_id)

    def _prune_journal(self, batch_id: int) -> None:
        """Forget the processing times of batches far behind ``batch_id``: Spark replays
        at most the batch after its last commit, and keeps the metadata of the last 100
        batches (``spark.sql.streaming.minBatchesToRetain``); keep as many."""
        for path in (self.root / "journal").glob("*.json"):
            if path.stem.isdigit() and int(path.stem) < batch_id - _JOURNAL_KEEP:
                path.unlink(missing_ok=True)


def _identity(path: Path) -> tuple[int, int, int]:
    """A file's inode, size and modification time (ns): a file written in its place
    differs in one of them."""
    stat = path.stat()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


#: Window settings that only decide when windows close: they may change between runs.
_TUNABLE = ("allowed_lateness", "idle_timeout", "late")


#: Prefixes of the keys :func:`_paths_and_ordering` records (not in older job.json files).
_RECORDED_LATER = ("input.", "output.", "ordering.")


def _paths_and_ordering(job: Job) -> dict[str, Any]:
    """Where the job reads and writes, and its ordering policy, by job-file key.

    Spark's offset log belongs to the sources it was written for, and the outputs to the
    batch ids of this checkpoint: another path would mix two streams or two jobs'
    records. Records released under one ordering policy and then another equal what
    no job file gives (``simulate`` included): a changed policy starts a new checkpoint
    (docs/design.md, *Running safely*)."""
    out: dict[str, Any] = {}
    for name, source in job.input_sources:
        key = f"input.{name}" if name else "input"
        out[f"{key}.path"] = None if source.path is None else str(source.path)
        out[f"{key}.format"] = source.format
        if source.table is not None:  # (a table's stream: its offsets are the table's)
            out[f"{key}.table"] = source.table
    output = job.output
    for name in ("path", "dead_letter"):
        value = getattr(output, name)
        out[f"output.{name}"] = None if value is None else str(value)
    out["output.format"] = output.format  # (the outputs' batches are of one format)
    # (the default metrics directory, as sparktide.spark.outputs.metrics places it)
    default = f"{output.checkpoint}/sparktide/metrics"
    out["output.metrics"] = str(output.metrics) if output.metrics is not None else default
    for item in dataclasses.fields(job.ordering):
        out[f"ordering.{item.name}"] = getattr(job.ordering, item.name)
    for name, _ in job.inputs:  # each input's own policy (semantics §7.8)
        ordering = job.policy_of(name).ordering
        for key in INPUT_ORDERING_KEYS:
            out[f"input.{name}.ordering.{key}"] = getattr(ordering, key)
    return out


#: The layout of the state tables (recorded in ``job.json``; see :func:`_job_shape`).
STATE_FORMAT = 2


def _job_shape(job: Job) -> dict[str, Any]:
    """The settings that give the checkpointed state its meaning, by job-file key."""
    source = job.source
    shape: dict[str, Any] = {
        f"source.{name}": getattr(source, name)
        for name in ("timestamp_by", "partition", "over", "edge", "edge_id")
        if name not in ("edge", "edge_id") or source.edge is not None  # (older job.json)
    }
    # The layout of the state tables themselves: a checkpoint of another layout is refused
    # (2: session/sliding rows carry the aggregates' typed inputs, not the record).
    shape["state_format"] = STATE_FORMAT
    shape.update(_paths_and_ordering(job))
    window = job.window
    if window is None:
        shape["window"] = None
    else:
        for item in dataclasses.fields(window):
            if item.name in _TUNABLE:
                continue
            value = getattr(window, item.name)
            if item.name == "aggregates":
                value = {a.name: str(a) for a in value}
            elif isinstance(value, tuple):
                value = list(value)
            shape[f"window.{item.name}"] = value
    return shape
