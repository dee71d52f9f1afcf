"""Arrow arrays as numpy, without copies: the small helpers every Arrow parser uses."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["all_true", "filled", "masked", "string_bytes"]


def string_bytes(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A (non-empty) string array's value offsets, from 0, and the bytes of its values,
    without a copy."""
    n = len(column)
    offsets = np.frombuffer(column.buffers()[1], np.int32, n + 1, column.offset * 4)
    low, high = int(offsets[0]), int(offsets[-1])
    if high == low:
        return offsets - low, np.zeros(0, dtype=np.uint8)
    return offsets - low, np.frombuffer(column.buffers()[2], np.uint8, high - low, low)


def all_true(mask: pa.Array) -> bool:
    """Whether a boolean Arrow array holds only true values (no null)."""
    return mask.null_count == 0 and bool(pc.all(mask).as_py())


def masked(values: np.ndarray, valid: np.ndarray, kind: pa.DataType) -> pa.Array:
    """``values`` (fixed-width numbers) as an Arrow array, null where ``valid`` is
    False: built from the buffers (``pa.array(..., mask=...)`` is far slower)."""
    values = np.ascontiguousarray(values, dtype=kind.to_pandas_dtype())
    if valid.all():
        return pa.array(values, kind)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(kind, len(values), [bitmap, pa.py_buffer(values)])


def filled(mask: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls as False."""
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)
