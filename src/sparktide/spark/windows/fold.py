"""Tumbling, hopping and snapshot windows folded in Spark (semantics §6): the batch's
partial aggregates merged with the open windows in state, the closed ones written.

A one-pass batch's partials (already folded per task) merge on the driver when few
enough (:mod:`.driver`); :func:`fold_windows` decides with :func:`.plans.windows_on`.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparktide.spark import plans
from sparktide.spark.batch import Batch
from sparktide.spark.columns import (
    ADMITTED_KINDS,
    EDGE_COVERED,
    EDGE_GOVERNING_AT_END,
    END_TIME,
    OPEN_WINDOW_STARTS,
    RELEASE_ORDER,
    SCOPE,
    SCOPE_WATERMARK_END,
    SUBSTREAM_KEY,
    VERDICT,
)
from sparktide.spark.context import Context
from sparktide.spark.edges import ended_edges, open_edges
from sparktide.spark.keys import KEYS_SCHEMA
from sparktide.spark.outputs.records import write_windows
from sparktide.spark.outputs.text import write_state
from sparktide.spark.scopes import force, scope_watermarks
from sparktide.spark.sql import NEG
from sparktide.spark.taskpass import Spilled
from sparktide.spark.windows.assign import edge_payload, edge_windows, edges_columns, window_due
from sparktide.spark.windows.driver import merge_on_driver
from sparktide.spark.windows.rows import row_windows

__all__ = ["fold_windows"]


def fold_windows(
    context: Context,
    batch: Batch,
    decided: DataFrame | None,
    spilled: Spilled | None = None,
    partial_rows: int = 0,
) -> DataFrame | None:
    """Fold the batch's admitted rows (``decided``), or its partials already folded
    per task (``spilled``, the one-pass plan, ``partial_rows`` of them), into the open
    windows; write the windows that close. Returns, for substreams in Spark, the keys'
    watermarks the idle timeout forced (``key``, ``forced_w``)."""
    w = context.window
    assert w is not None
    if w.type in ("session", "sliding"):
        assert decided is not None
        if isinstance(batch.keys_next, pa.Table):  # (substreams' keys, read in Spark)
            batch.keys_next = context.spark.createDataFrame(batch.keys_next, KEYS_SCHEMA)
        return row_windows(context, batch, decided)
    if spilled is not None:
        held = context.store.table_rows(batch.previous, "windows")
        keys_on_driver = not context.timeline.by_key or isinstance(batch.keys_next, pa.Table)
        on, _ = plans.windows_on(
            context.job,
            flushing=batch.flushing,
            keys_on_driver=keys_on_driver,
            rows=partial_rows + held,
        )
        if on == "driver":
            batch.merged_on = "driver"
            # (one task's partials are distinct by window already; so are several tasks'
            # when windows are per timeline: the one-pass plan gives a timeline, partition
            # or key, to one task only, or falls back to one task for the batch)
            distinct = len(spilled.files) == 1 or context.timeline.windows_per_timeline
            merge_on_driver(context, batch, spilled.arrow(), distinct=distinct)
            return None
    batch.merged_on = "spark"
    return _fold_in_spark(context, batch, decided, spilled)


def _fold_in_spark(
    context: Context, batch: Batch, decided: DataFrame | None, spilled: Spilled | None
) -> DataFrame | None:
    """:func:`fold_windows` in Spark, with a shuffle."""
    w = context.window
    assert w is not None
    partial = None if spilled is None else spilled.frame(context.spark)
    if isinstance(batch.keys_next, pa.Table):  # (one-pass substreams, too many rows)
        batch.keys_next = context.spark.createDataFrame(batch.keys_next, KEYS_SCHEMA)
    keys = [SCOPE, *context.groups, "start"]
    scopes = scope_watermarks(context, batch)  # (before the idle timeout forces any)
    partial_aggregates = _aggregates(context, "partial")
    opened: DataFrame | None = None
    reading: list[str] = []
    if partial is None:
        assert decided is not None
        partial, opened, reading = _partials(context, batch, decided, keys, partial_aggregates)
    merge_aggregates = _aggregates(context, "merge")
    state = context.store.load_table(batch.previous, "windows", partial.schema)
    merged = partial.unionByName(state).groupBy(*keys).agg(*merge_aggregates)
    end = "start" if w.type == "snapshot" else f"(start + {w.size})"
    forced = None
    if w.idle_timeout is not None and not batch.flushing:
        forced = _idle_forced(context, batch, scopes, merged.withColumn("end", F.expr(end)))
    if opened is not None:
        # events still open join the windows closing now, and are kept
        opened = _govern(scopes, opened, forced)
        closing = edge_windows(context, opened, SCOPE_WATERMARK_END).select(*reading)
        closing = closing.groupBy(*keys).agg(*partial_aggregates)
        merged = merged.unionByName(closing).groupBy(*keys).agg(*merge_aggregates)
        covered = f"greatest({EDGE_COVERED}, {SCOPE_WATERMARK_END})"
        kept = opened.withColumn(EDGE_COVERED, F.expr(covered))
        write_state(
            context.store, batch, kept.select(*edges_columns(context)), "edges", "open_edges"
        )
    elif context.edges:  # the flush ended every open event
        assert batch.paired is not None
        none = batch.paired.filter("false").select(*edges_columns(context))
        write_state(context.store, batch, none, "edges", "open_edges")
    merged = _govern(scopes, merged.withColumn("end", F.expr(end)), forced)
    merged = merged.withColumn(
        "closed", F.expr(f"{window_due(context, 'end')} <= {SCOPE_WATERMARK_END}")
    )
    merged = merged.cache()
    try:
        write_windows(context, batch, merged.filter("closed"), context.groups)
        still_open = merged.filter("NOT closed").select(*partial.columns)
        write_state(context.store, batch, still_open, "windows", "open_windows")
    finally:
        merged.unpersist()
    if forced is not None and context.timeline.by_key:
        return forced.withColumnRenamed(SCOPE, SUBSTREAM_KEY)
    if forced is not None:
        forced.unpersist()
    return None


def _aggregates(context: Context, step: str) -> list[Column]:
    """The aggregates' ``partial`` or ``merge`` expressions."""
    return [
        F.expr(expr).alias(name)
        for plan in context.aggregates
        for name, expr in getattr(plan, step)
    ]


def _govern(
    scopes: tuple[str, str, DataFrame | None], frame: DataFrame, forced: DataFrame | None
) -> DataFrame:
    """``frame`` with the watermark governing its ``scope`` now (``governing``, from
    :func:`scope_watermarks`' ``scopes``), raised where the idle timeout ``forced`` it."""
    scope_w, _, table = scopes
    governing = SCOPE_WATERMARK_END
    if table is not None:
        frame = frame.join(table, on=SCOPE, how="left")
    frame = frame.withColumn(governing, F.expr(scope_w))
    if forced is not None:
        raised = f"greatest({governing}, coalesce(forced_w, {governing}))"
        frame = frame.join(F.broadcast(forced), on=SCOPE, how="left")
        frame = frame.withColumn(governing, F.expr(raised))
    return frame


def _idle_forced(
    context: Context, batch: Batch, scopes: tuple[str, str, DataFrame | None], merged: DataFrame
) -> DataFrame:
    """Idle timeout (semantics §6): while the oldest open window of a scope has ended and
    its source delivered nothing for idle_timeout since max(end, last delivery), it
    closes and the watermark advances to its end (plus allowed lateness). Returns the
    forced watermark per scope (cached), already applied to partitions' clocks."""
    w = context.window
    assert w is not None
    scope_last = scopes[1]
    closes = window_due(context, "end")
    forced = (
        _govern(scopes, merged, None)
        .filter(
            f"{closes} > {SCOPE_WATERMARK_END} AND "
            f"greatest(end, {scope_last}) + {w.idle_timeout} <= {batch.now}"
        )
        .groupBy(SCOPE)
        .agg(F.expr(f"max({closes})").alias("forced_w"))
        .cache()
    )
    if not context.timeline.by_key:
        for row in forced.collect():
            force(context, batch, row[SCOPE], row["forced_w"])
    return forced


def _partials(
    context: Context,
    batch: Batch,
    decided: DataFrame,
    keys: list[str],
    partial_aggregates: list[Column],
) -> tuple[DataFrame, DataFrame | None, list[str]]:
    """The batch's partial aggregates per window from its admitted rows; with edges,
    also the events still open and the columns their windows read."""
    groups = keys[1:-1]
    rows = decided.filter(F.col(VERDICT).isin(*ADMITTED_KINDS)).select(
        "*", F.explode(OPEN_WINDOW_STARTS).alias("start")
    )
    reading: list[str] = []
    opened = None
    if context.edges:
        # edge events: those ended in the batch join their windows not closed yet
        # (and, at the flush, the open ones end at their scope's last watermark)
        assert batch.paired is not None
        payload = edge_payload(context)
        reading = [*keys, *RELEASE_ORDER, *payload[len(groups) + 1 :]]
        ended = ended_edges(batch.paired, payload)
        opened = open_edges(batch.paired, payload)
        if batch.flushing:
            last, _, last_table = scope_watermarks(context, batch, last=True)
            if last_table is not None:
                opened = opened.join(last_table, on=SCOPE, how="left")
            ended = ended.unionByName(
                opened.select(
                    *ended.columns[:-2],
                    F.expr(last).alias(END_TIME),
                    F.expr(NEG).alias(EDGE_GOVERNING_AT_END),
                )
            )
            opened = None
        rows = rows.select(*reading).unionByName(
            edge_windows(context, ended, None).select(*reading)
        )
    return rows.groupBy(*keys).agg(*partial_aggregates), opened, reading
