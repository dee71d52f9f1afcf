"""A window's records meeting reference data, in Spark SQL (semantics §13.5;
:class:`sparktide.core.windowtable.WindowTable`).

The closed windows that pass ``having`` meet the broadcast table by their ``on``
columns, read from each window's JSON record with the same key SQL as the table's
(:func:`sparktide.spark.lookup.record_key`), and the pairs ``[join] condition``;
``[join] where`` and ``[select]`` then read
``<window>.<column>`` from that record and ``<table>.<field>`` from the row met, as over
a join's matches (:mod:`sparktide.spark.outputs.matches`). No Python runs per window.
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from sparktide.spark.columns import RECORD
from sparktide.spark.context import Context
from sparktide.spark.lookup import record_key, reference_table
from sparktide.spark.outputs.matches import join_condition, join_projection, join_where
from sparktide.spark.sql import iso, sql_string

__all__ = ["ROW_PLACE", "windows_met"]

#: The column ordering the records of one window: its row's place in the table.
ROW_PLACE = "_wro"


def windows_met(
    context: Context, closed: DataFrame, fields: list[tuple[str, str]], record: str
) -> tuple[DataFrame, list[tuple[str, str]]]:
    """``closed`` (each window's JSON record in the column ``record``, its fields'
    JSON text ``fields``) met with the table: one row per table row each window meets,
    :data:`ROW_PLACE` its place (``type = "left"``: a window that meets none once, the
    row null), those ``[join] where`` keeps. Returns the frame and the fields of the
    record each is written as: ``[select]``'s columns between the window's bounds, or
    the window's fields and the row under the table's name."""
    job = context.job
    join = job.join
    assert join is not None
    names = [f"_wk{i}" for i in range(len(join.left_on))]
    keyed = closed.withColumn(RECORD, F.expr(f"parse_json({record})"))
    keyed = keyed.selectExpr(
        *(f"`{c}`" for c in closed.columns),
        *(f"{record_key(c)} AS {n}" for c, n in zip(join.left_on, names, strict=True)),
    )
    on = " AND ".join(f"w.{n} = t.j{i}" for i, n in enumerate(names))
    how = "left" if join.type == "left" else "inner"
    met = keyed.alias("w").join(F.broadcast(reference_table(context)).alias("t"), F.expr(on), how)
    frame = met.select(
        *(F.col(f"w.`{c}`") for c in closed.columns),
        F.col("t.ro").alias(ROW_PLACE),
        F.col("t.text").alias("_wrow"),
    )
    records = (record, "_wrow")
    if join.condition is not None:  # (a pair that fails it is no match, semantics §13.5)
        window = [c for c in ("scope", "start", "end", record) if c in closed.columns]
        frame = _meeting_condition(frame, context, window, records)
    if join.where is not None:
        frame = join_where(frame, job, records, "end")
    if not job.select:
        emitted = fields[-1:]  # (the window's emitted_at comes last)
        row = [(join.right, "coalesce(_wrow, 'null')")]
        return frame, fields[:-1] + row + emitted
    frame, _ = join_projection(frame, job, records, "end")
    written = job.window_fields
    selected = [
        (written["window_start"], f"concat('\"', {iso('start')}, '\"')"),
        (written["window_end"], f"concat('\"', {iso('end')}, '\"')"),
    ]
    selected += [(p.name, f"e{i}") for i, p in enumerate(job.select)]
    return frame, selected + fields[-1:]


def _meeting_condition(
    frame: DataFrame, context: Context, window: list[str], records: tuple[str, str]
) -> DataFrame:
    """The windows' pairs with the table's rows that meet ``[join] condition`` (over
    ``<window>.<column>`` and ``<table>.<field>``); under ``type = "left"`` a window none
    of whose rows meets it once, its row null. ``window``: the columns that tell the
    windows apart (the scope, the bounds and the record, which holds the groups)."""
    met = join_condition(frame, context.job, records, "end")
    paired = "_jc AND _wrow IS NOT NULL"
    if context.job.join.type != "left":  # type: ignore[union-attr]
        return met.filter(paired).drop("_jc")
    each = Window.partitionBy(*(F.col(f"`{c}`") for c in window))
    met = met.withColumn("_jm", F.max(F.expr(paired)).over(each))
    met = met.withColumn("_jn", F.row_number().over(each.orderBy(ROW_PLACE)))
    kept = met.filter(f"({paired}) OR (NOT _jm AND _jn = 1)")
    return kept.selectExpr(  # (a window no row met: its row null)
        *(f"`{c}`" for c in frame.columns if c not in (ROW_PLACE, "_wrow")),
        f"CASE WHEN _jm THEN {ROW_PLACE} END AS {ROW_PLACE}",
        "CASE WHEN _jm THEN _wrow END AS _wrow",
    )


def record_text(fields: list[tuple[str, str]]) -> str:
    """SQL of a window's JSON record from its fields' JSON text."""
    members = ", ',', ".join(
        f"{sql_string(json.dumps(name) + ':')}, {text}" for name, text in fields
    )
    return f"concat('{{', {members}, '}}')"
