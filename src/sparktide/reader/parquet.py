"""Parquet files: each row read with the file's own schema.

Non-finite floats become the text ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON has
no such numbers; the Spark engine reads them so). pyarrow is imported lazily.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sparktide.reader.contract import UNREADABLE_PARQUET, Row

__all__ = ["parquet_rows"]


def parquet_rows(file: Path) -> Iterator[Row]:
    """Rows of a Parquet file, numbered from 1; one error row if it cannot be read."""
    import pyarrow.parquet as pq

    if file.stat().st_size == 0:  # an empty file holds no rows (Spark does not list it)
        return
    try:
        table = pq.read_table(file)
    except Exception:  # pyarrow raises several kinds for a bad file
        yield 1, {}, None, UNREADABLE_PARQUET
        return
    floats = _has_floats(table.schema.types)
    for number, row in enumerate(table.to_pylist(), start=1):
        yield number, (_finite(row) if floats else row), None, None


def _has_floats(types: Any) -> bool:
    import pyarrow as pa

    for kind in types:
        if pa.types.is_floating(kind):
            return True
        if pa.types.is_struct(kind) and _has_floats([f.type for f in kind]):
            return True
        if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _has_floats(
            [kind.value_type]
        ):
            return True
        if pa.types.is_map(kind) and _has_floats([kind.key_type, kind.item_type]):
            return True
    return False


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
