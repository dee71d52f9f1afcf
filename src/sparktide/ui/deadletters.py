"""The latest dead letters, for the live page: read from the job's dead-letter output.

A batch's dead letters are in ``<dead_letter>/batch=<id>/flush=<0|1>/`` (docs/outputs.md),
as JSON lines or Parquet, or in a Delta table's ``batch`` and ``flush`` columns. Only
batches whose metrics record counts dead letters (``this_batch.dead_lettered``) are
read, once each, when the page asks; a ``foreach_batch`` callback alone shows none.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from pathlib import Path
from typing import Any

__all__ = ["LATEST", "DeadLetters"]

#: How many dead letters the page shows (the newest).
LATEST = 20
#: The fields of a dead letter the page shows (``record`` as its JSON text).
_FIELDS = ("file", "line", "reason", "error", "window_start", "window_end")


def _rows(directory: Path) -> list[dict[str, Any]]:
    """The dead letters in one batch directory (JSON lines or Parquet files)."""
    rows: list[dict[str, Any]] = []
    for path in sorted(directory.glob("[!._]*")) + sorted(directory.glob("_records*")):
        if path.suffix == ".jsonl":
            lines = path.read_text().splitlines()
            rows.extend(json.loads(line) for line in lines if line.strip())
        elif path.suffix == ".parquet":
            import pyarrow.parquet as pq

            rows.extend(pq.read_table(path).to_pylist())
    return rows


def _delta_rows(root: Path, batch: int, flushed: bool) -> list[dict[str, Any]]:
    """The dead letters of one batch in the Delta table at ``root`` (its newest version)."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    dataset = DeltaTable(str(root)).to_pyarrow_dataset()
    wanted = (ds.field("batch") == batch) & (ds.field("flush") == int(flushed))
    return dataset.to_table(filter=wanted).to_pylist()


def _shown(row: dict[str, Any], batch: int | None) -> dict[str, Any]:
    """A dead letter as the page shows it: its fields as text, the record as JSON."""
    out: dict[str, Any] = {"batch": batch}
    for name in _FIELDS:
        out[name] = row.get(name)
    record = row.get("record")
    out["record"] = record if isinstance(record, str) else json.dumps(record, default=str)
    return out


class DeadLetters:
    """The newest dead letters of a job's dead-letter directory (``None``: none)."""

    def __init__(self, directory: str | None) -> None:
        self._root = None if directory is None else Path(directory.removeprefix("file:"))
        self._latest: deque[dict[str, Any]] = deque(maxlen=LATEST)
        self._read: set[tuple[int, bool]] = set()
        self._lock = threading.Lock()

    def read_batches(self, records: list[dict[str, Any]]) -> None:
        """Read the dead letters of the batches of ``records`` that counted some."""
        if self._root is None:
            return
        for record in records:
            dead = (record.get("this_batch") or {}).get("dead_lettered") or {}
            batch, flushed = record.get("batch"), bool(record.get("flushed"))
            if not sum(dead.values()) or batch is None or (batch, flushed) in self._read:
                continue
            if (self._root / "_delta_log").is_dir():
                rows = _delta_rows(self._root, batch, flushed)
            else:
                where = self._root / f"batch={batch:09d}" / f"flush={int(flushed)}"
                rows = _rows(where) if where.is_dir() else []
            if rows:  # (not written yet when empty: read again next time)
                with self._lock:
                    self._read.add((batch, flushed))
                    self._latest.extend(_shown(r, batch) for r in rows[-LATEST:])

    def latest(self) -> list[dict[str, Any]]:
        """The newest dead letters, oldest first."""
        with self._lock:
            return list(self._latest)
