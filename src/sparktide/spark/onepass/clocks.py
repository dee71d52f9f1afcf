"""Each timeline's clocks at the start of the batch: where judging a task's rows begins.

A partition timeline starts from its clocks in ``plan.clocks``; a substream key from
the keys' state after the previous batch, and the input's arrival clock
(:func:`input_clock`), which the partitions that deliver nothing move by their idle
estimates. A timeline new here starts at minus infinity.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparktide.core.instants import NEG_INF
from sparktide.spark.columns import (
    KEY_NEWEST,
    KEY_WATERMARK,
    SUBSTREAM_KEY,
)
from sparktide.spark.inputs.arrays import filled
from sparktide.spark.onepass.plan import FusedPlan

__all__ = ["ARRIVAL", "NEWEST", "WATERMARK", "Timelines", "input_clock", "known_keys", "timelines"]

#: The columns of a timeline's start (:func:`timelines`).
ARRIVAL, WATERMARK, NEWEST = 0, 1, 2

#: Each row's timeline (an index), the substream keys by index (empty for partitions),
#: and each timeline's ``(arrival clock, watermark, newest timestamp)`` at the start.
Timelines = tuple[np.ndarray, pa.Array, np.ndarray]


def input_clock(plan: FusedPlan, delivering: list[str]) -> int:
    """The input's arrival clock at the start of a substreams batch whose delivering
    partitions are ``delivering`` (as ``SparkEngine._estimate`` finds it): the others
    take their idle estimates; a partition new here starts at minus infinity."""
    seen = set(delivering)
    clocks = [busy if pid in seen else idle for pid, busy, idle in plan.idle]
    return max([plan.arrival_clock, *clocks])


def known_keys(plan: FusedPlan) -> pa.Table | None:
    """The keys' state after the previous batch (``key``, ``k_newest``, ``k_watermark``),
    or ``None`` when there is none."""
    tables = [
        pq.read_table(path, columns=[SUBSTREAM_KEY, KEY_NEWEST, KEY_WATERMARK])
        for path in plan.keys
    ]
    return pa.concat_tables(tables) if tables else None


def _key_state(known: pa.Table | None, keys: pa.Array) -> np.ndarray:
    """The start of each key of ``keys`` (its arrival clock left to the caller): the
    keys' state after the previous batch (``known``), minus infinity for a key new here."""
    start = np.full((len(keys), 3), NEG_INF, dtype=np.int64)
    if known is None:
        return start
    where = pc.index_in(known.column(SUBSTREAM_KEY), value_set=keys)
    found = filled(pc.is_valid(where))
    if found.any():
        at = pc.filter(where, pa.array(found)).to_numpy().astype(np.int64)
        start[at, WATERMARK] = pc.filter(known.column(KEY_WATERMARK), pa.array(found)).to_numpy()
        start[at, NEWEST] = pc.filter(known.column(KEY_NEWEST), pa.array(found)).to_numpy()
    return start


def timelines(
    plan: FusedPlan, pids: list[str], known: pa.Table | None, keys: pa.Array, code: np.ndarray
) -> Timelines:
    """The timelines of a task's rows (``keys``: each row's substream key; ``code``: its
    partition, an index of ``pids``) and their starts: a timeline per key, judged
    against the input's arrival clock, or per partition."""
    if plan.substreams:
        by_key = keys.dictionary_encode()
        timeline = by_key.indices.to_numpy().astype(np.int64)
        start = _key_state(known, by_key.dictionary)
        start[:, ARRIVAL] = input_clock(plan, pids if plan.assumed is None else plan.assumed)
        return timeline, by_key.dictionary, start
    clocks = {pid: (arrival, watermark, newest) for pid, arrival, watermark, newest in plan.clocks}
    start = np.array([clocks.get(pid, (NEG_INF,) * 3) for pid in pids], dtype=np.int64)
    return code, pa.array([], pa.string()), start
