"""The task's own files: inputs it reads by their paths, outputs it spills.

A task reads an input file itself only when it is local (a ``file:`` path, as Spark's
own reading of it needs on every node); it writes its bulky rows as parquet files in
``plan.spill``, which the driver reads with pyarrow.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from sparktide.spark.onepass.plan import FusedPlan

__all__ = ["local_path", "spill"]


def local_path(path: str | None) -> str | None:
    """The local file of a ``file:`` path (``None`` for other file systems)."""
    if path is None or not path.startswith("file:"):
        return None
    return path[len("file://") :] if path.startswith("file:///") else path[len("file:") :]


def spill(plan: FusedPlan, name: str, table: pa.Table) -> pa.Array:
    """Write ``table`` as ``<plan.spill>/<name>.parquet``; its path, as the row's value."""
    assert plan.spill is not None
    path = os.path.join(plan.spill, f"{name}.parquet")
    # (read once, soon: neither compressed nor dictionary-encoded, half the cost)
    pq.write_table(table, path, compression="none", use_dictionary=False)
    return pa.array([path])
