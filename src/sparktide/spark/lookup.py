"""Reference data in Spark SQL (semantics §11.8, §11.23): the table broadcast with its
keys, and the rule of :mod:`sparktide.core.lookup` over a judged batch.

Both sides' keys are the same SQL (:func:`join_keys`: :func:`distinct_key` of each
``[join] on`` field of a record variant), so they match as the reference engine's
:func:`~sparktide.core.join.join_key` does. A job that releases its events meets the
table at release (:func:`sparktide.spark.outputs.join.meet`); a windowed job meets it
right after the policy (:func:`rows_met`): each admitted row becomes one row per
table row it meets, the row under the table's name in its record, as ``[apply]``
expands a row (:mod:`sparktide.spark.apply`, whose :data:`~sparktide.spark.apply.PART`,
counting rows and sink order it shares). No Python runs per event: a broadcast join.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.job import Job, TableJoin
from sparktide.spark.aggregates import distinct_key, present
from sparktide.spark.apply import ADMITTED, PART, settled, with_member
from sparktide.spark.columns import ARRIVAL_ORDER_SQL, PARTITION, RECORD, SYSTEM_TIME
from sparktide.spark.context import Context
from sparktide.spark.outputs.matches import join_condition
from sparktide.spark.perinput import ROW_INPUT
from sparktide.spark.sql import field_at, sql_string

__all__ = [
    "event_tables",
    "event_tables_met_rows",
    "join_keys",
    "record_key",
    "reference_table",
    "row_with_member",
    "rows_met",
    "with_keys",
]


def record_key(column: str) -> str:
    """SQL of a record's join key ``column`` (its distinct key; null when missing)."""
    value = field_at(column)
    return f"CASE WHEN {present(value)} THEN {distinct_key(value)} END"


def event_tables(context: Context) -> list[tuple[TableJoin, DataFrame]]:
    """The further tables each event meets by its own fields, each as ``ro``, ``text``
    and the ``j<i>`` keys of its ``on`` columns: read on the driver, once."""
    if context.event_tables is None:
        tables = []
        for step, rows in context.event_rows:
            frame = context.spark.createDataFrame(rows, "ro bigint, text string")
            keyed = frame.withColumn(RECORD, F.expr("parse_json(text)"))
            keys = (f"{record_key(c)} AS j{i}" for i, c in enumerate(step.right_on))
            tables.append((step, keyed.selectExpr("ro", "text", *keys).cache()))
        context.event_tables = tables
    return context.event_tables


def row_with_member(row: str, name: str, member: str) -> str:
    """SQL of the JSON text ``row`` (a table row as the driver wrote it, without a field
    ``name``: :func:`sparktide.core.lookup.reference_rows`) with the member ``name``
    (JSON text ``member``, null: ``null``); an absent row holds only the member, and
    stays absent with an absent member."""
    pair = f"{sql_string(json.dumps(name) + ': ')}, coalesce({member}, 'null')"
    return (
        f"CASE WHEN {row} IS NULL AND {member} IS NULL THEN NULL "
        f"WHEN {row} IS NULL THEN concat('{{', {pair}, '}}') "
        f"ELSE concat(substring({row}, 1, length({row}) - 1), "
        f"CASE WHEN {row} = '{{}}' THEN '' ELSE ', ' END, {pair}, '}}') END"
    )


def event_tables_met_rows(
    context: Context, frame: DataFrame, row: str, admitted: str
) -> tuple[DataFrame, list[str], str]:
    """``frame`` (one row per table row an event met: the event's record variant in
    :data:`RECORD`; ``row``, the row's text column, null where it met none) met with
    the further tables each event meets by its own fields (semantics §11.8, *Further
    tables*): one row per pair, the row met the member of ``row``'s text. Returns the
    frame, its order columns (each table's ``ro``) and SQL of whether the event kept
    its rows (false where an inner table met none of it; ``admitted``: SQL of the rows
    that meet the tables at all)."""
    orders: list[str] = []
    kept = []
    for k, (step, table) in enumerate(event_tables(context)):
        keys = [f"CASE WHEN {admitted} THEN {record_key(c)} END" for c in step.left_on]
        names = [f"_ek{k}_{i}" for i in range(len(keys))]
        frame = frame.selectExpr(
            "*", *(f"{sql} AS {n}" for sql, n in zip(keys, names, strict=True))
        )
        on = " AND ".join(f"e.{n} = t.j{i}" for i, n in enumerate(names)) or "true"
        met = frame.alias("e").join(F.broadcast(table).alias("t"), F.expr(on), "left")
        frame = met.select(
            "e.*", F.col("t.ro").alias(f"_et{k}"), F.col("t.text").alias(f"_ex{k}")
        ).drop(*names)
        frame = frame.withColumn(row, F.expr(row_with_member(row, step.right, f"_ex{k}")))
        frame = frame.drop(f"_ex{k}")
        orders.append(f"_et{k}")
        if step.type != "left":
            kept.append(f"_et{k} IS NOT NULL")
    return frame, orders, " AND ".join(kept) or "true"


def join_keys(job: Job, side: str | None = None) -> list[tuple[str, str]]:
    """``(j<i>, SQL over the record variant m)``: the values a record joins on, each as
    its distinct key (null when the field is missing or null: no match). ``side``
    (``"left"`` or ``"right"``) says whose columns the records hold (``[join] on`` may
    pair differently named ones); ``None``: each row's own, by its input."""
    join = job.join
    assert join is not None

    keys = []
    for i, (left, right) in enumerate(zip(join.left_on, join.right_on, strict=True)):
        if side == "left" or left == right:
            sql = record_key(left)
        elif side == "right":
            sql = record_key(right)
        else:
            own = f"{ROW_INPUT} = {sql_string(join.left)}"
            sql = f"CASE WHEN {own} THEN {record_key(left)} ELSE {record_key(right)} END"
        keys.append((f"j{i}", sql))
    return keys


def with_keys(job: Job, frame: DataFrame, text: str, side: str) -> DataFrame:
    """``frame`` with the ``j<i>`` keys (:func:`join_keys`, ``side``'s columns) of the
    JSON record in column ``text``."""
    keyed = frame.withColumn(RECORD, F.expr(f"parse_json({text})"))
    keys = join_keys(job, side)
    return keyed.selectExpr(*frame.columns, *(f"{expr} AS {name}" for name, expr in keys))


def reference_table(context: Context) -> DataFrame:
    """The reference data as ``ro`` (its place), ``text`` (the row's JSON) and the
    ``j<i>`` keys: read on the driver by the reference engine's reader, once."""
    if context.reference is None:
        frame = context.spark.createDataFrame(context.reference_rows, "ro bigint, text string")
        context.reference = with_keys(context.job, frame, "text", "right").cache()
    return context.reference


def rows_met(
    context: Context, judged: DataFrame, columns: Callable[[DataFrame], DataFrame]
) -> DataFrame:
    """The judged rows (their record variant kept) with each admitted row met with the
    table: one row per table row it meets (equal keys and ``[join] condition``, in the
    table's order: :data:`PART` from 0), its record holding the row under the table's
    name; an admitted row that meets none dropped with reason ``no_match`` (kept as one
    row, the table's name null, under ``type = "left"``); then ``columns`` (the filter's
    verdict, the windows' inputs) over each row's record, and the record dropped but
    for malformed rows."""
    job = context.job
    join = job.join
    assert join is not None
    keys = join_keys(job, "left")
    names = [name for name, _ in keys]
    # (the event's record as text only where [join] condition reads the pair)
    ltext = f"CASE WHEN {ADMITTED} THEN to_json({RECORD}) END"
    events = judged.selectExpr(
        "*",
        f"{ltext if join.condition is not None else 'CAST(NULL AS STRING)'} AS _ltext",
        *(f"CASE WHEN {ADMITTED} THEN {expr} END AS {name}" for name, expr in keys),
    ).alias("e")
    table = F.broadcast(reference_table(context)).alias("r")
    condition = " AND ".join(f"e.{k} = r.{k}" for k in names)
    met = events.join(table, F.expr(condition), "left").select(
        *(F.col(f"e.`{c}`") for c in judged.columns),
        F.col("e._ltext").alias("_ltext"),
        F.col("r.ro").alias("_ro"),
        F.col("r.text").alias("_rtext"),
    )
    event = f"PARTITION BY {PARTITION}, {ARRIVAL_ORDER_SQL}"
    if join.condition is not None:  # (a pair that fails it is no match, semantics §11.8)
        met = join_condition(met, job, ("_ltext", "_rtext"), SYSTEM_TIME)
        met = met.withColumn("_jc", F.expr("_jc AND _rtext IS NOT NULL"))
        met = met.withColumn("_any", F.expr(f"max(_jc) OVER ({event})"))
        met = met.withColumn("_n", F.expr(f"row_number() OVER ({event} ORDER BY _ro)"))
        met = met.filter("_jc OR (NOT _any AND _n = 1)").selectExpr(
            *(f"`{c}`" for c in judged.columns),
            "CASE WHEN _jc THEN _ro END AS _ro",
            "CASE WHEN _jc THEN _rtext END AS _rtext",
        )
    orders: list[str] = []
    kept = "true"
    if context.event_rows:  # (the tables each event meets by its own fields)
        met, orders, kept = event_tables_met_rows(context, met, "_rtext", ADMITTED)
    place = f"row_number() OVER ({event} ORDER BY {', '.join(['_ro', *orders])}) - 1"
    if join.type == "left":  # (an admitted row that met none: one row, its right null;
        # a row of such a row's members: numbered)
        part = (
            f"CASE WHEN NOT ({kept}) THEN NULL WHEN _ro IS NOT NULL OR _rtext IS NOT NULL "
            f"THEN {place} WHEN {ADMITTED} THEN 0 END"
        )
    else:
        part = f"CASE WHEN _ro IS NOT NULL AND ({kept}) THEN {place} END"
    met = met.withColumn(PART, F.expr(part))
    row = "CASE WHEN _rtext IS NULL THEN parse_json('null') ELSE parse_json(_rtext) END"
    scratch = ("_ltext", "_ro", "_rtext", *orders)
    return settled(met, with_member(join.right, row), "no_match", columns, scratch)
