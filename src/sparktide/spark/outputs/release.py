"""Ordered release (semantics §5): admitted events wait in state until the watermark
governing their scope reaches their system timestamp, then are written in
(timestamp, arrival order) order."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.spark.analytic import analytic_release, held_value
from sparktide.spark.batch import Batch
from sparktide.spark.columns import (
    ADMITTED_KINDS,
    ARRIVAL_TIME,
    END_TIME,
    FILE,
    LINE,
    RAW,
    RELEASE_ORDER,
    SCOPE,
    SYSTEM_TIME,
    VERDICT,
)
from sparktide.spark.context import Context
from sparktide.spark.matching import match_release
from sparktide.spark.outputs.join import meet
from sparktide.spark.outputs.text import ordered, state_schema, write_state, write_text
from sparktide.spark.projections import (
    RESERVED_FIELDS,
    projected_event,
    record_fields,
    system_time_reads,
    with_system_time,
)
from sparktide.spark.scopes import release_ready, scope_watermarks, written_from_start
from sparktide.spark.sql import iso

__all__ = ["HELD_SCHEMA", "release"]

HELD_SCHEMA = state_schema(
    f"{SCOPE} string, {SYSTEM_TIME} long, {ARRIVAL_TIME} long, {FILE} string, {LINE} long, "
    "value string"
)


def release(context: Context, batch: Batch, decided: DataFrame) -> None:
    """Write the events the governing watermark reached (this batch's admitted ones
    and those held from earlier), hold the others; with reference data, each released
    event meets the table (:func:`sparktide.spark.outputs.join.meet`)."""
    job = context.job
    timed = system_time_reads(job)[1]
    if timed:  # [select] columns that read System.Timestamp() (semantics §11.17)
        decided = with_system_time(decided, job, False, timed)
    value = held_value(job) if job.analytics else _event_record(context)
    admitted = decided.filter(F.col(VERDICT).isin(*ADMITTED_KINDS)).select(
        SCOPE, *RELEASE_ORDER, F.expr(value).alias("value")
    )
    held = context.store.load_table(batch.previous, "held", HELD_SCHEMA)
    rows = admitted.unionByName(held)
    scope_w, _, table = scope_watermarks(context, batch)
    if table is not None:
        rows = rows.join(table, on=SCOPE, how="left")
    rows = rows.withColumn("ready", F.expr(release_ready(context, scope_w))).cache()
    try:
        ready = rows.filter("ready")
        written = written_from_start(context)  # (no result before the output start, §12)
        if job.references_joined:
            out = meet(context, ready.filter(written))
        elif job.match is not None:  # the matches decided now (semantics §11.25)
            found = match_release(context, batch, ready, scope_w, table)
            out = found.filter(written).drop(SYSTEM_TIME)
        elif job.analytics:  # the columns, then [filter] and [select] (semantics §11.19)
            ready = analytic_release(context, batch, ready, scope_w, table).filter(written)
            value = F.expr(_event_record(context)).alias("value")
            out = ready.select(*ordered(*RELEASE_ORDER), value)
        else:
            out = ready.filter(written).select(*ordered(*RELEASE_ORDER), "value")
        write_text(batch, out, job.output.path, "released")
        held = rows.filter("NOT ready").select(*HELD_SCHEMA.names)
        write_state(context.store, batch, held, "held", "held")
    finally:
        rows.unpersist()


def _event_record(context: Context) -> str:
    """SQL of a released event's JSON record: the input record's fields (from the line,
    not the variant :data:`~.RECORD`, to keep their order), reserved names prefixed ``input_``,
    with its system ``timestamp`` (and an interval's ``end_timestamp``, semantics §7);
    ``[select]``'s columns; or, for a join with reference data, the record as it came."""
    job = context.job
    if job.references_joined or job.match:  # the record, met on release or matched
        return RAW
    reserved = RESERVED_FIELDS
    end = ""
    if context.intervals:  # interval events carry their end (semantics §7)
        reserved += ", 'end_timestamp'"
        end = f", 'end_timestamp', parse_json(concat('\"', {iso(END_TIME)}, '\"'))"
    if job.select:  # [select]: the projected columns (computed after parsing)
        star = record_fields(RAW, reserved) if job.select_star is not None else None
        return projected_event(job, iso(SYSTEM_TIME), star)
    return (
        f"to_json(map_concat({record_fields(RAW, reserved)}, "
        f"map('timestamp', parse_json(concat('\"', {iso(SYSTEM_TIME)}, '\"')){end})))"
    )
