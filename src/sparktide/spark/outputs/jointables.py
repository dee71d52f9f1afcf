"""Reference data met by a join of two streams, in Spark SQL (semantics §11.26;
:mod:`sparktide.core.jointables`).

Each new pair (and a left join's lone left event) meets the tables of ``[[join.then]]``
as it is made, before ``[join] where`` and the projection: the tables are broadcast with
their keys (:func:`sparktide.spark.lookup.event_tables`, the same SQL as the events'
keys), one join per table by the fields of the pair's event ``left`` names, or of the
row of the earlier table it names. The rows met go into the match's record, so a match
held for later batches needs no table; their places in the tables order a pair's
records (``ro``). No Python runs per event.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.spark.columns import RECORD
from sparktide.spark.context import Context
from sparktide.spark.lookup import event_tables, record_key
from sparktide.spark.outputs.matches import Tables

__all__ = ["ROW_PLACES", "tables_met"]

#: The column ordering the records of one pair: its rows' places in the tables.
ROW_PLACES = "ro"


def tables_met(context: Context, pairs: DataFrame) -> tuple[DataFrame, Tables]:
    """``pairs`` (``lraw``, ``rraw``: both events' JSON text, ``rraw`` null for a lone
    left event) met with the tables: one row per combination of the rows met, each row's
    text in a column of its own (null: a ``type = "left"`` table that met none), and
    :data:`ROW_PLACES`; an ``inner`` table that meets none drops the pair. Returns the
    frame and each table's name with its column."""
    join = context.job.join
    assert join is not None
    tables: list[tuple[str, str]] = []
    places = []
    frame = pairs
    texts = {join.left: "lraw", join.right: "rraw"}  # (then each table met: its row)
    for k, (step, table) in enumerate(event_tables(context)):
        side = texts[step.left]
        names = [f"_tk{k}_{i}" for i in range(len(step.left_on))]
        keyed = frame.withColumn(RECORD, F.expr(f"try_parse_json({side})"))
        keyed = keyed.selectExpr(
            *(f"`{c}`" for c in frame.columns),
            *(f"{record_key(c)} AS {n}" for c, n in zip(step.left_on, names, strict=True)),
        )
        on = " AND ".join(f"e.{n} = t.j{i}" for i, n in enumerate(names))
        how = "left" if step.type == "left" else "inner"
        met = keyed.alias("e").join(F.broadcast(table).alias("t"), F.expr(on), how)
        frame = met.select(
            *(F.col(f"e.`{c}`") for c in frame.columns),
            F.col("t.ro").alias(f"_to{k}"),
            F.col("t.text").alias(f"_tx{k}"),
        )
        tables.append((step.right, f"_tx{k}"))
        texts[step.right] = f"_tx{k}"
        places.append(f"coalesce(lpad(CAST(_to{k} AS STRING), 19, '0'), '')")
    frame = frame.withColumn(ROW_PLACES, F.expr(f"concat_ws(',', {', '.join(places)})"))
    return frame.drop(*(f"_to{k}" for k in range(len(tables)))), tuple(tables)
