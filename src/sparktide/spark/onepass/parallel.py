"""A task's threads: work items at once, and the task's rows in pieces of timelines.

A task holding a whole batch (``plan.threads``) uses the batch's cores: Arrow's compute
and readers, and numpy, release the GIL, so the threads of one Python worker run at
once; a task sharing the batch with others runs one item at a time. Timelines are
judged apart from each other, so such a task splits its rows by timeline — by a hash of
the key's bytes for substreams, by partition otherwise — and judges the pieces at once;
each piece carries the state of its own keys.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.spark.inputs.arrays import filled, string_bytes
from sparktide.spark.onepass.collect import TaskRows
from sparktide.spark.onepass.plan import FusedPlan

__all__ = ["SHARD_ROWS", "Piece", "in_threads", "key_shards", "timeline_pieces"]


def in_threads(plan: FusedPlan, function: Callable[[Any], Any], work: list) -> Iterator[Any]:
    """``function`` of each item of ``work``, in order; several at once in a task holding
    a whole batch (``plan.threads``, at most the machine's cores)."""
    threads = min(plan.threads, os.cpu_count() or 1, len(work))
    if threads <= 1:
        yield from (function(item) for item in work)
        return
    with ThreadPoolExecutor(threads) as pool:
        yield from pool.map(function, work)


#: a task judging in threads splits its rows by timeline into pieces of at least this many
SHARD_ROWS = 50_000

#: Whole timelines of the task: the keys' state (substreams), the rows, each row's
#: partition (an index of the task's partition ids).
Piece = tuple[pa.Table | None, TaskRows, np.ndarray]


def key_shards(keys: pa.Array, pieces: int) -> np.ndarray:
    """A piece in ``range(pieces)`` for each of ``keys`` (text), from its length and last
    four bytes: equal keys, equal pieces."""
    if not pa.types.is_string(keys.type) or len(keys) == 0:
        return np.zeros(len(keys), dtype=np.int64)
    offsets, octets = string_bytes(keys)
    ends = offsets[1:].astype(np.int64)
    lengths = ends - offsets[:-1]
    if keys.null_count:  # (a null's bytes are not its value)
        lengths = np.where(filled(pc.is_valid(keys)), lengths, 0)
    h = lengths.astype(np.uint64)
    for back in range(1, 5):
        has = lengths >= back
        byte = octets[np.where(has, ends - back, 0)] if len(octets) else np.zeros(len(h), np.uint8)
        h = h * np.uint64(31) + np.where(has, byte, 0).astype(np.uint64)
    return (h % np.uint64(pieces)).astype(np.int64)


def timeline_pieces(
    plan: FusedPlan, known: pa.Table | None, rows: TaskRows, code: np.ndarray, partitions: int
) -> list[Piece]:
    """The task's rows in pieces of whole timelines (one piece without threads, or with
    few rows); ``code``: each row's partition, of ``partitions``."""
    pieces = min(2 * plan.threads, len(code) // SHARD_ROWS)
    shard = None
    if pieces > 1 and plan.substreams:
        shard = key_shards(rows.key, pieces)
    elif pieces > 1 and partitions > 1:
        shard = code % pieces
    if shard is None:
        return [(known, rows, code)]
    known_shard = None if known is None else key_shards(known["key"].combine_chunks(), pieces)
    parts = []
    for k in range(pieces):
        where = np.flatnonzero(shard == k)
        if len(where):
            state = known.filter(pa.array(known_shard == k)) if known is not None else None
            parts.append((state, rows.take(where), code[where]))
    return parts
