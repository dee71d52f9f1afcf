"""The compiled loop of ``[match]`` on Spark (semantics §11.25): every undecided start of
a task's partitions through :func:`sparktide.core.patterns.match_at`, the reference
engine's matcher compiled by numba, in one call per task.

:func:`match_partitions` is the ``mapInArrow`` body. Its rows come grouped by ``(scope,
key)`` and in release order within each group (the kept rows of earlier batches, then
the batch's); per row its time, its mask, whether its start is decided, its scope's
watermark and the JSON text of each column the measures read. It answers with the rows
to keep (``kind`` 0: each group's rows from its first undecided start on, with their
starts' verdicts) and one row per match decided now (``kind`` 1: its last row's time,
its first row's release order, the measures' JSON texts).

This module imports numba: only Spark's Python workers import it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.core.patterns import MATCHED, PENDING, match_at, window_closed
from sparktide.spark.columns import SCOPE, SYSTEM_TIME
from sparktide.spark.jit import njit

__all__ = ["COUNT", "FIRST", "LAST", "match_partitions", "scan_starts"]

#: The measure functions, as the loop numbers them.
FIRST, LAST, COUNT = 0, 1, 2

#: The reference engine's rules, compiled (the same source: one home per rule).
match_at_compiled = njit(match_at)
window_closed_compiled = njit(window_closed)


def _scan(
    bounds: np.ndarray,
    times: np.ndarray,
    masks: np.ndarray,
    decided: np.ndarray,
    watermarks: np.ndarray,
    final: bool,
    duration: int,
    ops: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    functions: np.ndarray,
    variables: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each group ``bounds[g]`` to ``bounds[g + 1] - 1``: its undecided starts tried in
    order. Returns the decided flags after, which rows to keep, and per match decided
    now its first and last row and its measures (a row index for ``FIRST``/``LAST``,
    ``-1`` when the variable has no row; the count for ``COUNT``)."""
    n = len(times)
    after = decided.copy()
    keep = np.zeros(n, np.bool_)
    starts = np.empty(n, np.int64)
    ends = np.empty(n, np.int64)
    values = np.empty((n, len(functions)), np.int64)
    assigned = np.empty(n + 1, np.int64)
    stack = np.empty(2 * (len(ops) * (n + 1) + 1), np.int64)
    visited = np.zeros(len(ops) * (n + 1), np.int64)  # (each search's own stamp)
    stamp = 0
    found = 0
    for g in range(len(bounds) - 1):
        lo, hi = bounds[g], bounds[g + 1]
        stop = lo
        first_open = hi
        for start in range(lo, hi):
            last_time = times[start] + duration
            if stop < start:
                stop = start
            while stop < hi and times[stop] <= last_time:
                stop += 1
            if after[start] == 1:
                continue
            closed = window_closed_compiled(final, stop < hi, watermarks[start], last_time)
            stamp += 1
            outcome, end = match_at_compiled(
                ops, first, second, masks, start, stop, closed, assigned, stack, visited, stamp
            )
            if outcome == PENDING:
                if first_open == hi:
                    first_open = start
                continue
            after[start] = 1
            if outcome == MATCHED:
                starts[found], ends[found] = start, end
                measure_values(assigned, end - start, start, functions, variables, values[found])
                found += 1
        for row in range(first_open, hi):
            keep[row] = True
    return after, keep, starts[:found], ends[:found], values[:found]


def measure_values(
    assigned: np.ndarray,
    length: int,
    start: int,
    functions: np.ndarray,
    variables: np.ndarray,
    out: np.ndarray,
) -> None:
    """The measures of a match of ``length`` rows from row ``start`` (the rule of
    :func:`sparktide.core.matching.measure_value`: a row index or a count)."""
    for j in range(len(functions)):
        chosen, count = -1, 0
        for i in range(length):
            if variables[j] >= 0 and assigned[i] != variables[j]:
                continue
            count += 1
            if functions[j] == LAST or chosen < 0:
                chosen = start + i
        out[j] = count if functions[j] == COUNT else chosen


scan_starts = njit(_scan)
measure_values = njit(measure_values)


def match_partitions(
    batches: Iterator[pa.RecordBatch],
    *,
    final: bool,
    duration: int,
    program: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
    measures: tuple[tuple[int, int, int], ...],
    schema: pa.Schema,
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body (see the module docstring). ``measures``: per measure its
    function, its variable (``-1``: every row) and the column ``c<i>`` it reads (``-1``:
    none); ``schema``: the answer's."""
    parts = list(batches)
    if not parts:
        return
    table = pa.Table.from_batches(parts).combine_chunks()
    if table.num_rows == 0:
        return
    group = pc.binary_join_element_wise(table[SCOPE], table["key"], "\x00")
    n = table.num_rows
    differs = pc.not_equal(group.slice(1), group.slice(0, n - 1))
    changes = np.flatnonzero(differs.to_numpy(zero_copy_only=False)) + 1
    bounds = np.concatenate(([0], changes, [table.num_rows])).astype(np.int64)
    ops, first, second = (np.asarray(p, np.int64) for p in program)
    functions = np.asarray([m[0] for m in measures], np.int64)
    variables = np.asarray([m[1] for m in measures], np.int64)
    after, keep, starts, ends, values = scan_starts(
        bounds,
        _longs(table, SYSTEM_TIME),
        _longs(table, "mask"),
        _longs(table, "decided"),
        _longs(table, "watermark"),
        final,
        duration,
        ops,
        first,
        second,
        functions,
        variables,
    )
    kept = table.filter(pa.array(keep)).set_column(
        table.schema.get_field_index("decided"), "decided", pa.array(after[keep], pa.int64())
    )
    yield _answer(schema, kept, 0, {})
    if len(starts):
        yield _answer(schema, *_matches(table, starts, ends, values, measures))


def _longs(table: pa.Table, name: str) -> np.ndarray:
    return table[name].to_numpy(zero_copy_only=False).astype(np.int64)


def _matches(
    table: pa.Table,
    starts: np.ndarray,
    ends: np.ndarray,
    values: np.ndarray,
    measures: tuple[tuple[int, int, int], ...],
) -> tuple[pa.Table, int, dict[str, pa.Array]]:
    """The match rows: the first row's columns (its scope, key and release order), the
    last row's time as ``match_time`` and each measure's JSON text ``v<j>``."""
    rows = table.take(pa.array(starts))
    extra = {"match_time": table[SYSTEM_TIME].take(pa.array(ends - 1))}
    for j, (function, _, column) in enumerate(measures):
        if function == COUNT:
            extra[f"v{j}"] = pa.array(values[:, j]).cast(pa.string())
            continue
        chosen = values[:, j]
        texts = table[f"c{column}"].take(pa.array(np.where(chosen < 0, 0, chosen)))
        extra[f"v{j}"] = pc.if_else(pa.array(chosen < 0), "null", texts)
    return rows, 1, extra


def _answer(
    schema: pa.Schema, rows: pa.Table, kind: int, extra: dict[str, pa.Array]
) -> pa.RecordBatch:
    """``rows`` in the answer's ``schema``: ``kind``, the ``extra`` columns, nulls for
    the others."""
    arrays = []
    for field in schema:
        if field.name == "kind":
            arrays.append(pa.array(np.full(rows.num_rows, kind, np.int64)))
        elif field.name in extra:
            arrays.append(extra[field.name].cast(field.type))
        elif field.name in rows.column_names:
            arrays.append(rows[field.name].cast(field.type))
        else:
            arrays.append(pa.nulls(rows.num_rows, field.type))
    return pa.RecordBatch.from_arrays(
        [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays],
        schema=schema,
    )
