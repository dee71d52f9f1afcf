"""Joins in Spark SQL: a temporal join of two inputs (semantics §7,
:mod:`sparktide.core.join`), and released events meeting reference data
(:class:`sparktide.core.join.ReferenceJoin`)."""

from __future__ import annotations

import json
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from sparktide.core.instants import POS_INF
from sparktide.core.windows.spec import window_due as reference_window_due
from sparktide.job import input_of
from sparktide.spark.batch import Batch
from sparktide.spark.columns import (
    ADMITTED_KINDS,
    ARRIVAL_TIME,
    FILE,
    LINE,
    PARTITION,
    RAW,
    RECORD,
    RELEASE_ORDER,
    SYSTEM_TIME,
    VERDICT,
)
from sparktide.spark.context import Context
from sparktide.spark.lookup import event_tables_met_rows, reference_table, with_keys
from sparktide.spark.outputs.jointables import ROW_PLACES, tables_met
from sparktide.spark.outputs.matches import Tables, join_condition, join_projection, join_where
from sparktide.spark.outputs.text import ordered, state_schema, write_state, write_text
from sparktide.spark.scopes import release_ready, scope_watermarks, written_from_start
from sparktide.spark.sql import NEG, iso, lit_us, sql_string

__all__ = [
    "MATCHES_SCHEMA",
    "join",
    "join_schema",
    "meet",
    "unmatched_left",
    "window_event_rows",
]

MATCHES_SCHEMA = state_schema(
    f"{SYSTEM_TIME} long, la long, lfile string, lline long, ra long, rfile string, "
    f"rline long, {ROW_PLACES} string, value string"
)


def join_schema(keys: list[str], left: bool = False) -> T.StructType:
    """The events a join keeps (``joined``): side, join values, timestamp, arrival order
    and the record's text; under a left join (``left``) whether a match reached a left
    event."""
    event = state_schema(
        f"{SYSTEM_TIME} long, {ARRIVAL_TIME} long, {FILE} string, {LINE} long, {RAW} string"
    )
    matched = [T.StructField("matched", T.BooleanType())] if left else []
    return T.StructType(
        [
            T.StructField("side", T.StringType()),
            *(T.StructField(k, T.StringType()) for k in keys),
            *event.fields,
            *matched,
        ]
    )


def meet(context: Context, ready: DataFrame) -> DataFrame:
    """Released events (``value``: the record's JSON text) joined with the reference
    data: one record per matching row, in (timestamp, arrival order, the row's place in
    the table) order; under ``type = "left"`` an event without a match once, its right
    side ``null``; only those that meet ``[join] where``. Both sides' keys are the same
    SQL (:func:`sparktide.spark.lookup.join_keys`), so they match as the reference
    engine's :func:`join_key` does."""
    join = context.job.join
    assert join is not None
    keys = [f"j{i}" for i in range(len(join.on))]
    events = with_keys(context.job, ready.selectExpr(*RELEASE_ORDER, "value"), "value", "left")
    events = events.alias("e")  # (e: the events, r: the reference rows)
    table = F.broadcast(reference_table(context)).alias("r")
    condition = " AND ".join(f"e.{k} = r.{k}" for k in keys)
    met = events.join(table, F.expr(condition), "left" if join.type == "left" else "inner")
    met = met.select(
        *ordered(*(f"e.{c}" for c in RELEASE_ORDER), "r.ro"),
        F.col(f"e.{SYSTEM_TIME}").alias(SYSTEM_TIME),
        F.col("e.value").alias("lraw"),
        F.col("r.text").alias("rraw"),
    )
    if join.condition is not None:
        met = _meeting_condition(context, met)
    if context.event_rows:  # (the tables each event meets by its own fields)
        met = met.withColumn(RECORD, F.expr("parse_json(lraw)"))
        met, orders, kept = event_tables_met_rows(context, met, "rraw", "true")
        first = len(RELEASE_ORDER) + 1  # (after the table row's place)
        met = met.filter(kept).drop(RECORD)
        for k, column in enumerate(orders):
            met = met.withColumnRenamed(column, f"_o{first + k}")
    met = join_where(met, context.job, ("lraw", "rraw"), SYSTEM_TIME)
    met, value = _match_record(context, met)
    order = [c for c in met.columns if c.startswith("_o")]
    return met.selectExpr(*order, f"{value} AS value")


#: The sort column of a met row's place in the table (after the release order's).
_ROW = f"_o{len(RELEASE_ORDER)}"


def _meeting_condition(context: Context, met: DataFrame) -> DataFrame:
    """The events' pairs with the table's rows that meet ``[join] condition`` (semantics
    §11.8); under ``type = "left"`` an event none of whose rows meets it once, its right
    side null (``rraw`` and ``ro`` null)."""
    join = context.job.join
    assert join is not None
    met = join_condition(met, context.job, ("lraw", "rraw"), SYSTEM_TIME)
    if join.type != "left":
        return met.filter("_jc AND rraw IS NOT NULL").drop("_jc")
    event = Window.partitionBy(*(c for c in met.columns if c.startswith("_o") and c != _ROW))
    met = met.withColumn("_jm", F.max(F.expr("_jc AND rraw IS NOT NULL")).over(event))
    met = met.withColumn("_jn", F.row_number().over(event.orderBy(_ROW)))
    kept = met.filter("(_jc AND rraw IS NOT NULL) OR (NOT _jm AND _jn = 1)")
    columns = [c for c in met.columns if c not in ("_jc", "_jm", "_jn")]
    return kept.selectExpr(  # (an event no row met: its right side null)
        *(f"CASE WHEN NOT _jm THEN NULL ELSE `{c}` END AS `{c}`" for c in (_ROW, "rraw")),
        *(f"`{c}`" for c in columns if c not in (_ROW, "rraw")),
    )


def _match_record(
    context: Context, matches: DataFrame, tables: Tables = ()
) -> tuple[DataFrame, str]:
    """SQL of the event record a join writes for each match (columns ``lraw`` and
    ``rraw``, both records' JSON text, the right one null when a left join met no
    row; ``s``, the match's timestamp; ``tables``, the rows a join of two streams met,
    semantics §11.26): ``[select]``'s columns then ``timestamp``
    (:func:`join_projection`), else ``{left: ..., right: ..., <table>: ...,
    "timestamp": ...}``. Returns the frame (with what the projection needs) and the SQL."""
    job = context.job
    join = job.join
    assert join is not None
    if job.select or job.select_star is not None:
        return join_projection(matches, job, ("lraw", "rraw"), SYSTEM_TIME, tables)
    tabled = [  # (the rows a join of two streams met, semantics §11.26)
        member
        for name, column in tables
        for member in (sql_string("," + json.dumps(name) + ":"), f"coalesce({column}, 'null')")
    ]
    if context.matches is not None:  # (the window's event: both records, §7.11)
        members = [
            sql_string("{" + json.dumps(join.left) + ":"),
            "lraw",
            sql_string("," + json.dumps(join.right) + ":"),
            "coalesce(rraw, 'null')",
            *tabled,
            "'}'",
        ]
        return matches, f"concat({', '.join(members)})"
    members = [
        sql_string(json.dumps(join.left) + ":"),
        "lraw",
        sql_string("," + json.dumps(join.right) + ":"),
        "coalesce(rraw, 'null')",
        *tabled,
        sql_string(',"timestamp":"'),
        iso(SYSTEM_TIME),
        "'\"'",
    ]
    return matches, f"concat('{{', {', '.join(members)}, '}}')"


def join(
    context: Context,
    batch: Batch,
    decided: DataFrame,
    into: Callable[[DataFrame], None] | None = None,
) -> None:
    """A temporal join: the batch's admitted events of each side meet the other
    side's — this batch's and those kept from earlier ones — on equal ``j<i>`` values
    and ``low ≤ right.s − left.s ≤ high``; a pair of two kept events was matched before,
    so at least one is new. Matches (at the later timestamp) wait in state until the
    job watermark reaches them, and are written in (timestamp, left's arrival order,
    right's) order. A kept event is forgotten once no future event of the other side
    can match it: every later one starts at or above that side's watermark (the minimum
    over its partitions, when they are all declared; else events are kept). Under
    ``type = "left"`` a left event carries whether a match reached it, and one that
    none reached is kept until it is written, once the job watermark passes its latest
    match time (:func:`unmatched_left`). With ``into``, the matches released are handed
    to it (``MATCHES_SCHEMA`` rows: a window over them, semantics §7.11), not written."""
    spec = context.job.join
    assert spec is not None and spec.between is not None
    low, high = spec.between
    keys = [f"j{i}" for i in range(len(spec.on))]
    left_join = spec.type == "left"
    columns = ["side", *keys, *RELEASE_ORDER, RAW]
    admitted = (
        decided.filter(F.col(VERDICT).isin(*ADMITTED_KINDS))
        .withColumn("side", F.expr(f"split({PARTITION}, '/')[0]"))
        .select(*columns)
    )
    if context.job.joins_windows:  # (the right side: the window's records, §7.12)
        admitted = admitted.filter(F.col("side") == spec.left)
        records = batch.window_records
        if records is not None:
            admitted = admitted.unionByName(window_event_rows(context, records).select(*columns))
    if left_join:  # (whether a match reached a left event: semantics §7.9)
        admitted = admitted.withColumn("matched", F.lit(False))
        columns.append("matched")
    kept = context.store.load_table(batch.previous, "joined", join_schema(keys, left_join))
    every = admitted.withColumn("new", F.lit(True)).unionByName(
        kept.withColumn("new", F.lit(False))
    )
    pairs = _pairs(context, every, keys)
    matches = _records(context, pairs)
    written = "false"
    if left_join:
        every, written = _marked(context, batch, every, pairs)
        matches = matches.unionByName(unmatched_left(context, every, written))
    _write_matches(context, batch, matches, into)
    s = SYSTEM_TIME
    keep = {spec.left: f"{s} + {high} >= {_side_floor(context, batch, spec.right)}"}
    if left_join:  # (a left event no match reached waits to be written alone: §7.9)
        keep[spec.left] = f"({keep[spec.left]} OR NOT matched)"
    keep[spec.right] = f"{s} - {low} >= {_side_floor(context, batch, spec.left)}"
    still = every.filter(
        f"NOT ({written}) AND ("
        + " OR ".join(f"(side = {sql_string(side)} AND {c})" for side, c in keep.items())
        + ")"
    )
    write_state(context.store, batch, still.select(*columns), "joined", "join_events")


def _pairs(context: Context, every: DataFrame, keys: list[str]) -> DataFrame:
    """The new pairs of a left and a right event that match (the rest of the ``ON``
    too): their timestamp (the later one's), both arrival orders and both records."""
    spec = context.job.join
    assert spec is not None and spec.between is not None
    low, high = spec.between
    left = every.filter(F.col("side") == spec.left).alias("l")
    right = every.filter(F.col("side") == spec.right).alias("r")
    s, a = SYSTEM_TIME, ARRIVAL_TIME
    condition = " AND ".join(
        [*(f"l.{k} = r.{k}" for k in keys), f"r.{s} - l.{s} BETWEEN {low} AND {high}"]
    )
    condition += " AND (l.new OR r.new)"
    pairs = left.join(right, F.expr(condition))
    matches = pairs.selectExpr(
        f"greatest(l.{s}, r.{s}) AS {s}",
        f"l.{a} AS la",
        f"l.{FILE} AS lfile",
        f"l.{LINE} AS lline",
        f"r.{a} AS ra",
        f"r.{FILE} AS rfile",
        f"r.{LINE} AS rline",
        f"l.{RAW} AS lraw",
        f"r.{RAW} AS rraw",
    )
    if spec.condition is not None:  # (the rest of the ON: semantics §11.8)
        matches = join_condition(matches, context.job, ("lraw", "rraw"), SYSTEM_TIME)
        matches = matches.filter("_jc").drop("_jc")
    return matches


def _records(context: Context, pairs: DataFrame) -> DataFrame:
    """The records of ``pairs`` (a left join's unmatched events: the right side null)
    that ``[join] where`` keeps, as ``MATCHES_SCHEMA`` rows; of a join of two streams
    that meets reference data, one per combination of the rows it meets (semantics
    §11.26)."""
    join = context.job.join
    tables: Tables = ()
    if join is not None and join.then:
        pairs, tables = tables_met(context, pairs)
    else:
        pairs = pairs.withColumn(ROW_PLACES, F.lit(None).cast("string"))
    if join is not None and join.where is not None:
        pairs = join_where(pairs, context.job, ("lraw", "rraw"), SYSTEM_TIME, tables)
    matches, value = _match_record(context, pairs, tables)
    return matches.selectExpr(*(f.name for f in MATCHES_SCHEMA.fields[:-1]), f"{value} AS value")


def _marked(
    context: Context, batch: Batch, every: DataFrame, pairs: DataFrame
) -> tuple[DataFrame, str]:
    """Under a left join: ``every`` with ``matched`` set on the left events a pair of
    this batch reached, and SQL of whether a left event is written without a match now
    (none reached it and the job watermark is past its latest match time)."""
    spec = context.job.join
    assert spec is not None and spec.between is not None
    left = sql_string(spec.left)
    hits = pairs.selectExpr("la AS _la", "lfile AS _lf", "lline AS _ll").distinct().alias("h")
    on = (
        f"e.side = {left} AND e.{ARRIVAL_TIME} <=> h._la AND e.{FILE} <=> h._lf "
        f"AND e.{LINE} <=> h._ll"
    )
    marked = every.alias("e").join(hits, F.expr(on), "left")
    matched = f"CASE WHEN side = {left} THEN coalesce(matched, false) OR _hit END"
    every = (
        marked.select("e.*", F.expr("h._la IS NOT NULL").alias("_hit"))
        .withColumn("matched", F.expr(matched))
        .drop("_hit")
    )
    scope_w, _, _ = scope_watermarks(context, batch)
    latest = f"{SYSTEM_TIME} + {spec.between[1]}"
    return every, f"(side = {left} AND NOT matched AND {latest} < {scope_w})"


def unmatched_left(context: Context, every: DataFrame, written: str) -> DataFrame:
    """The records of the left events written without a match now (SQL ``written``), at
    their latest match time, their right side null."""
    spec = context.job.join
    assert spec is not None and spec.between is not None
    rows = every.filter(written).selectExpr(
        f"{SYSTEM_TIME} + {spec.between[1]} AS {SYSTEM_TIME}",
        f"{ARRIVAL_TIME} AS la",
        f"{FILE} AS lfile",
        f"{LINE} AS lline",
        "CAST(NULL AS BIGINT) AS ra",
        "CAST(NULL AS STRING) AS rfile",
        "CAST(NULL AS BIGINT) AS rline",
        f"{RAW} AS lraw",
        "CAST(NULL AS STRING) AS rraw",
    )
    return _records(context, rows)


def _write_matches(
    context: Context,
    batch: Batch,
    matches: DataFrame,
    into: Callable[[DataFrame], None] | None,
) -> None:
    """Write the matches the job watermark reached (new and held; under a left join,
    passed), or hand them ``into`` a window; hold the others."""
    held = context.store.load_table(batch.previous, "matches", MATCHES_SCHEMA)
    scope_w, _, _ = scope_watermarks(context, batch)
    left_join = context.job.join is not None and context.job.join.type == "left"
    ready = F.expr(release_ready(context, scope_w, strict=left_join))  # (§7.9)
    rows = matches.unionByName(held).withColumn("ready", ready).cache()
    try:
        if into is not None:  # (each match an event of a window, §7.11)
            into(rows.filter("ready"))
        else:
            out = rows.filter(f"ready AND {written_from_start(context)}").select(
                *ordered(SYSTEM_TIME, "la", "lfile", "lline", "ra", "rfile", "rline", ROW_PLACES),
                "value",
            )
            write_text(batch, out, context.job.output.path, "released")
        waiting = rows.filter("NOT ready").select(*MATCHES_SCHEMA.names)
        write_state(context.store, batch, waiting, "matches", "held")
    finally:
        rows.unpersist()


def window_event_rows(context: Context, records: DataFrame) -> DataFrame:
    """The window's records (``end``, ``start``, ``g<i>``, ``value``) as the join's
    right events (semantics §7.12): at the window's end, placed by its start and its
    grouping values' JSON text (:func:`sparktide.core.windowjoin.window_event`)."""
    join = context.job.join
    assert join is not None
    groups = [c for c in records.columns if c not in ("end", "start", "value")]
    place = f"concat('[', concat_ws(',', {', '.join(groups)}), ']')" if groups else "'[]'"
    frame = records.selectExpr(
        f"{sql_string(join.right)} AS side",
        f"end AS {SYSTEM_TIME}",
        f"start AS {ARRIVAL_TIME}",
        f"{place} AS {FILE}",
        f"CAST(0 AS BIGINT) AS {LINE}",
        f"value AS {RAW}",
    )
    return with_keys(context.job, frame, RAW, "right")


def _side_floor(context: Context, batch: Batch, name: str) -> str:
    """SQL for the lowest timestamp a future event of input ``name`` can have: the
    minimum watermark over its partitions when they are all declared, else −∞; of the
    window's records (semantics §7.12), the end of a window still open: above the job
    watermark less the windows' allowed lateness (and the instant a window includes)."""
    if batch.flushing:
        return lit_us(POS_INF)
    if context.job.joins_windows and name == context.job.join.right:  # type: ignore[union-attr]
        offset = reference_window_due(0, context.lateness, context.closed_end)
        return lit_us(batch.clock["job_watermark"] - offset)
    source = dict(context.job.inputs)[name]
    if source.partitions is None:
        return NEG
    marks = [p.watermark for pid, p in batch.parts.items() if input_of(pid) == name]
    return lit_us(min(marks)) if marks else NEG
