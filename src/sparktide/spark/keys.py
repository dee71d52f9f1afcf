"""Substream keys' state (semantics §7): each key's newest timestamp, watermark, last
delivery and events, in Spark SQL (the general plan) or Arrow (the one-pass plan)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from sparktide.core.instants import NEG_INF
from sparktide.spark.batch import Batch
from sparktide.spark.clocks import governing_watermark_floor
from sparktide.spark.columns import (
    KEY_EVENTS,
    KEY_LAST,
    KEY_NEWEST,
    KEY_WATERMARK,
    SUBSTREAM_KEY,
)
from sparktide.spark.context import Context
from sparktide.spark.inputs.arrays import filled
from sparktide.spark.outputs.text import write_state
from sparktide.spark.sql import NEG, lit_us

__all__ = [
    "KEYS_ARROW",
    "KEYS_SCHEMA",
    "forced_keys",
    "forced_keys_frame",
    "next_keys",
    "next_keys_table",
    "write_keys",
]

KEYS_SCHEMA = T.StructType(
    [
        T.StructField(SUBSTREAM_KEY, T.StringType()),
        T.StructField(KEY_NEWEST, T.LongType()),
        T.StructField(KEY_WATERMARK, T.LongType()),
        T.StructField(KEY_LAST, T.LongType()),
        T.StructField(KEY_EVENTS, T.LongType()),  # events judged (generated CTIs count them)
    ]
)
#: :data:`KEYS_SCHEMA` in Arrow (the keys' state read and written on the driver).
KEYS_ARROW = to_arrow_schema(KEYS_SCHEMA)


def next_keys(
    context: Context,
    batch_keys: DataFrame,
    previous: int | None,
    arrival_at_end: int,
    now: int,
) -> DataFrame:
    """Substream key state after this batch: newest, watermark, last delivery per key
    (``batch_keys``: each key's ``max_h``, ``n``, ``max_cti``, ``events`` in the batch)."""
    late, out_of_order = context.watermark_late_arrival, context.watermark_out_of_order
    floor = lit_us(arrival_at_end - late) if late is not None else NEG
    old = context.store.load_table(previous, "keys", KEYS_SCHEMA)
    joined = old.join(batch_keys, on=SUBSTREAM_KEY, how="full_outer")
    joined = joined.withColumn(
        KEY_NEWEST, F.expr(f"greatest(coalesce({KEY_NEWEST}, {NEG}), coalesce(max_h, {NEG}))")
    )
    newest = f", {KEY_NEWEST} - {out_of_order}" if out_of_order is not None else ""
    return joined.select(
        SUBSTREAM_KEY,
        KEY_NEWEST,
        F.expr(
            f"greatest(coalesce({KEY_WATERMARK}, {NEG}), {floor}{newest}, coalesce(max_cti, {NEG}))"
        ).alias(KEY_WATERMARK),
        F.expr(f"CASE WHEN n IS NOT NULL THEN {lit_us(now)} ELSE {KEY_LAST} END").alias(KEY_LAST),
        F.expr(f"coalesce({KEY_EVENTS}, 0) + coalesce(events, 0)").alias(KEY_EVENTS),
    )


def next_keys_table(
    context: Context,
    batch_keys: pa.Table,
    previous: int | None,
    arrival_at_end: int,
    now: int,
) -> pa.Table:
    """:func:`next_keys` on the driver, from the one-pass plan's key rows (``scope``
    the key, ``max_h``, ``kn`` its events): the keys' state after this batch."""
    late, out_of_order = context.watermark_late_arrival, context.watermark_out_of_order
    floor = arrival_at_end - late if late is not None else NEG_INF
    old = context.store.load_arrow(previous, "keys", KEYS_ARROW)
    batch_keys = batch_keys.rename_columns([SUBSTREAM_KEY, "max_h", "kn"])
    if old.num_rows:
        joined = old.join(batch_keys, keys=SUBSTREAM_KEY, join_type="full outer")
    else:  # (no key state yet: nothing to join)
        joined = batch_keys
        for field in KEYS_ARROW:
            if field.name != SUBSTREAM_KEY:
                joined = joined.append_column(field, pa.nulls(joined.num_rows, field.type))

    def ints(name: str, default: int) -> np.ndarray:
        return pc.fill_null(joined.column(name), default).to_numpy()

    newest = np.maximum(ints(KEY_NEWEST, NEG_INF), ints("max_h", NEG_INF))
    watermark = np.maximum(ints(KEY_WATERMARK, NEG_INF), floor)
    if out_of_order is not None:
        watermark = np.maximum(watermark, newest - out_of_order)
    in_batch = filled(pc.is_valid(joined.column("kn")))
    last = np.where(in_batch, now, ints(KEY_LAST, NEG_INF))
    events = ints(KEY_EVENTS, 0) + ints("kn", 0)
    values = (newest, watermark, last, events)
    return pa.table(
        [joined.column(SUBSTREAM_KEY), *(pa.array(v, pa.int64()) for v in values)],
        schema=KEYS_ARROW,
    )


def forced_keys(keys: pa.Table, scopes: pa.Array, forced: np.ndarray) -> pa.Table:
    """The keys' state with the watermarks the idle timeout forced (``forced[i]`` for the
    key ``scopes[i]``; minus infinity where none was)."""
    where = pc.index_in(keys.column(SUBSTREAM_KEY), value_set=scopes)
    index = pc.fill_null(where, len(scopes)).to_numpy()
    raised = np.append(forced, NEG_INF)[index]
    watermark = np.maximum(keys.column(KEY_WATERMARK).to_numpy(), raised)
    at = keys.schema.get_field_index(KEY_WATERMARK)
    return keys.set_column(at, KEY_WATERMARK, pa.array(watermark, pa.int64()))


def forced_keys_frame(keys_next: DataFrame, forced: DataFrame) -> DataFrame:
    """:func:`forced_keys` in Spark: the keys' state with the watermarks the idle timeout
    forced (``forced``: ``key``, ``forced_w``)."""
    return keys_next.join(forced, on=SUBSTREAM_KEY, how="left").select(
        SUBSTREAM_KEY,
        KEY_NEWEST,
        F.expr(f"greatest({KEY_WATERMARK}, coalesce(forced_w, {KEY_WATERMARK}))").alias(
            KEY_WATERMARK
        ),
        KEY_LAST,
        KEY_EVENTS,
    )


def write_keys(context: Context, batch: Batch, keys_next: DataFrame | pa.Table) -> None:
    """Write the keys' state after the batch, without the keys that can no longer
    matter: those whose watermark and newest timestamp the floor has passed — unless
    generated CTIs (they count a key's events and read its newest timestamp) or an idle
    timeout (it reads its last delivery) need them kept."""
    late, out_of_order = context.watermark_late_arrival, context.watermark_out_of_order
    floor = governing_watermark_floor(batch.arrival_at_end, batch.clock, late)
    window = context.window
    evicts = (window is None or window.idle_timeout is None) and not context.generated
    if isinstance(keys_next, pa.Table):  # (the one-pass plan's, on the driver)
        kept: Any = pc.scalar(True)
        if evicts:
            kept = pc.field(KEY_WATERMARK) > floor
            if out_of_order is not None:
                kept = kept | (pc.subtract(pc.field(KEY_NEWEST), out_of_order) > floor)
        table = keys_next.filter(kept)
        context.store.write_arrow(table, batch.id, "keys")
        batch.gauges["substream_keys"] = table.num_rows
        return
    keep = "true"
    if evicts:
        newest = "false"
        if out_of_order is not None:
            newest = f"{KEY_NEWEST} - {out_of_order} > {floor}"
        keep = f"({newest} OR {KEY_WATERMARK} > {floor})"
    write_state(context.store, batch, keys_next.filter(keep), "keys", "substream_keys")
