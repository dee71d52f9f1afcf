"""Window records: written by Spark SQL (:func:`write_windows`), or from the driver as
the Spark route writes them (:func:`window_lines`).

When the one-pass plan merges a batch's partials with the open windows on the driver
(:mod:`sparktide.spark.windows.driver`), the windows that close are few enough to be
written from here: shipping them back into Spark only to format and write them costs a
Spark job and a conversion that cost more than the whole merge (``docs/design.md``). The
records must be the very text the Spark route writes (:func:`write_windows`), so:

* counts and integer sums are integers' decimal text;
* a double is ``CAST(d AS STRING)`` in Spark, which is Java's ``Double.toString``: plain
  decimal digits for 10⁻³ ≤ |d| < 10⁷ (``21.0``, ``0.125``), scientific notation
  elsewhere (``1.0E-5``). In the plain range Java and Arrow agree on the digits (the
  shortest that read back as the same double), so
  Arrow's text with ``.0`` added where it has no point is Spark's. Outside it, Java 17's
  digits are not always the shortest (``1.0E23`` is ``9.999999999999999E22``): those
  values are formatted by Spark itself (:func:`spark_doubles`: one small Spark job in a
  batch that has any, Arrow both ways).
* instants are :func:`sparktide.time.format_instant`, which Spark's ``iso`` mirrors.

Only the aggregates the one-pass plan folds (``count``, ``sum``, ``avg``) are written
here; their null rules are those of :mod:`sparktide.spark.aggregates`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from sparktide.job import Window
from sparktide.spark.batch import Batch
from sparktide.spark.context import Context
from sparktide.spark.onepass import telling_keys
from sparktide.spark.outputs.text import ordered, write_text
from sparktide.spark.outputs.windowtable import ROW_PLACE, record_text, windows_met
from sparktide.spark.projections import window_projection
from sparktide.spark.scopes import written_from_start
from sparktide.spark.sql import iso, lit_us
from sparktide.time import format_instant

__all__ = [
    "double_text",
    "spark_doubles",
    "window_lines",
    "write_windows",
]

_MAX_DOUBLE = 1.7976931348623157e308
#: |d| in [LOW, HIGH): Java writes plain decimals, with Arrow's (shortest) digits.
_LOW, _HIGH = 1e-3, 1e7


def double_text(values: np.ndarray, spark_doubles: Callable[[np.ndarray], pa.Array]) -> pa.Array:
    """Spark's ``CAST(d AS STRING)`` of each double of ``values``.

    ``spark_doubles`` formats, in Spark, the (distinct, sorted) values outside the range
    where Arrow's text is Spark's (called only when there are some)."""
    values = np.asarray(values, dtype=np.float64)
    size = np.abs(values)
    plain = ((size >= _LOW) & (size < _HIGH)) | (values == 0)
    text = pc.cast(pa.array(values), pa.string())
    # Arrow writes 21.0 as "21" and 0.0 as "0" (-0.0 as "-0"): Java adds ".0"
    text = pc.if_else(
        pc.match_substring(text, "."), text, pc.binary_join_element_wise(text, ".0", "")
    )
    if plain.all():
        return text
    others = values[~plain]
    distinct = np.unique(others)
    spark_text = spark_doubles(distinct)
    replacement = spark_text.take(pa.array(np.searchsorted(distinct, others)))
    return pc.replace_with_mask(text, pa.array(~plain), replacement)


def spark_doubles(spark: SparkSession, values: np.ndarray) -> pa.Array:
    """Spark's text of each double of ``values`` (``CAST(d AS STRING)``), in order:
    Arrow both ways, one small Spark job."""
    table = pa.table({"i": np.arange(len(values), dtype=np.int64), "v": values})
    out = spark.createDataFrame(table).selectExpr("i", "CAST(v AS STRING) AS text").toArrow()
    order = np.argsort(out.column("i").to_numpy())
    return out.column("text").combine_chunks().take(pa.array(order))


def _aggregate_text(
    function: str,
    names: tuple[str, ...],
    table: pa.Table,
    spark_doubles: Callable[[np.ndarray], pa.Array],
) -> pa.Array:
    """The JSON text of one aggregate's value per closed window (its merged partials)."""
    if function == "count":
        return pc.cast(table.column(names[0]).combine_chunks(), pa.string())
    si, sd, nn, nf = (table.column(name).combine_chunks() for name in names)
    count = pc.fill_null(nn, 0).to_numpy()
    floats = pc.fill_null(nf, 0).to_numpy()
    try:
        integers = pc.fill_null(pc.cast(si, pa.int64()), 0).to_numpy()
        exact = integers.astype(np.float64)  # (correctly rounded, as Spark's cast)
    except pa.ArrowInvalid:  # a sum beyond 64 bits: Python's exact integers
        exact = np.array([float(v or 0) for v in si.to_pylist()], dtype=np.float64)
    total = exact + pc.fill_null(sd, 0.0).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        value = total if function == "sum" else total / np.where(count == 0, 1, count)
        overflow = ~((total >= -_MAX_DOUBLE) & (total <= _MAX_DOUBLE))
    nulls = (count == 0) | overflow
    shown = np.where(nulls, 1.0, value)  # (a placeholder where the value is null)
    text = double_text(shown, spark_doubles)
    if function == "sum":
        whole = (count > 0) & (floats == 0)
        text = pc.if_else(pa.array(whole), pc.cast(si, pa.string()), text)
        nulls &= ~whole
    return pc.if_else(pa.array(nulls), pa.scalar("null"), text)


def window_lines(
    closed: pa.Table,
    window: Window,
    partials: list[tuple[str, ...]],
    now: int,
    spark_doubles: Callable[[np.ndarray], pa.Array],
) -> pa.Array:
    """The window records of the ``closed`` windows (``scope``, ``g<i>``, ``start``,
    ``end``, merged partial columns), as JSON lines each ending in a newline, in the Spark
    route's order: by end, start, scope, then the groups. ``partials`` are each
    aggregate's partial columns."""
    groups = [f"g{i}" for i in range(len(window.group_by))]
    closed = closed.take(pa.array(_record_order(closed, ["end", "start", "scope", *groups])))
    parts: list[pa.Array | str] = []
    for name, column in zip(window.group_by, groups, strict=True):
        parts += [json.dumps(name) + ":", closed.column(column).combine_chunks()]
    own = window.own_fields  # (a user's column keeps its name, semantics §10.3)
    for key, column in ((own["window_start"], "start"), (own["window_end"], "end")):
        instants = closed.column(column).combine_chunks()
        unique = pc.unique(instants)  # (few: the batch's window bounds)
        texts = [f'"{format_instant(v)}"' for v in unique.to_pylist()]
        if len(texts) == 1:
            parts += [json.dumps(key) + ":", texts[0]]
        else:
            at = pc.index_in(instants, unique)
            parts += [json.dumps(key) + ":", pa.array(texts, pa.string()).take(at)]
    for aggregate, names in zip(window.aggregates, partials, strict=True):
        text = _aggregate_text(aggregate.function, names, closed, spark_doubles)
        parts += [json.dumps(aggregate.name) + ":", text]
    parts += [json.dumps(own["emitted_at"]) + ":", f'"{format_instant(now)}"']
    pieces: list[pa.Array | str] = ["{"]
    for i in range(0, len(parts), 2):
        pieces += ["," if i else "", parts[i], parts[i + 1]]
    pieces.append("}\n")
    # (adjacent texts joined first: each piece of the element-wise join costs a pass)
    merged: list[pa.Array | str] = []
    for piece in pieces:
        if isinstance(piece, str) and merged and isinstance(merged[-1], str):
            merged[-1] += piece
        else:
            merged.append(piece)
    if not any(isinstance(piece, pa.Array) for piece in merged):  # (every line the same)
        return pa.repeat(pa.scalar("".join(map(str, merged))), closed.num_rows)
    # (a text is joined as a scalar, to every line: no array of copies made for it)
    return pc.binary_join_element_wise(
        *(piece if isinstance(piece, pa.Array) else pa.scalar(piece) for piece in merged), ""
    )


def _record_order(closed: pa.Table, keys: list[str]) -> np.ndarray:
    """The indices that sort ``closed`` (rows distinct by ``keys``) by ``keys``.

    Keys that cannot change the order are left out: one of a single value, equal row for
    row to an earlier key (a group-by column that is the substream key), or ``end`` where
    every window has the same length (``start`` orders as it does). When what is left
    is integers then one text, the text is sorted first, its rows split at sampled pivots
    among threads (Arrow's sort releases the GIL), then the integers, stably, from the
    last."""
    columns = {name: closed.column(name).combine_chunks() for name in keys}
    if "end" in columns and "start" in columns and len(closed):
        length = pc.subtract(columns["end"], columns["start"])
        if pc.all(pc.equal(length, length[0])).as_py():
            keys = [name for name in keys if name != "end"]
    kept = telling_keys(closed, keys)[0]  # (at least one: all constant is one row)
    *first, last = (columns[name] for name in kept)
    if (
        not pa.types.is_string(last.type)
        or last.null_count
        or not all(pa.types.is_integer(c.type) and not c.null_count for c in first)
    ):
        return pc.sort_indices(closed, sort_keys=[(name, "ascending") for name in kept]).to_numpy()
    order = _text_order(last)
    for column in reversed(first):
        order = order[np.argsort(column.to_numpy()[order], kind="stable")]
    return order


#: below this many rows a text column sorts in one piece
_SPLIT_SORT_ROWS = 100_000


def _text_order(text: pa.Array) -> np.ndarray:
    """``pc.sort_indices(text)`` (no nulls), the rows split among the machine's cores at
    pivots sampled from ``text``: the pieces sort at once and follow each other."""
    pieces = min(os.cpu_count() or 1, 4, len(text) // _SPLIT_SORT_ROWS)
    if pieces <= 1:
        return pc.sort_indices(text).to_numpy()
    step = max(1, len(text) // 1000)
    sample = pc.unique(text[::step]).sort()
    pivots = [sample[len(sample) * k // pieces] for k in range(1, pieces)]
    piece = np.zeros(len(text), dtype=np.int8)
    for pivot in pivots:  # (a text equal to a pivot goes above it, with its equals)
        piece += pc.greater_equal(text, pivot).to_numpy(zero_copy_only=False)
    rows = [np.flatnonzero(piece == k) for k in range(pieces)]

    def sort(where: np.ndarray) -> np.ndarray:
        return where[pc.sort_indices(text.take(pa.array(where))).to_numpy()]

    with ThreadPoolExecutor(pieces) as pool:
        return np.concatenate(list(pool.map(sort, rows)))


def write_windows(context: Context, batch: Batch, closed: DataFrame, groups: list[str]) -> None:
    """Write closed windows (``scope``, groups, ``start``, ``end``, merged partials)."""
    w = context.window
    assert w is not None
    if not context.job.joins_windows:  # (joined records: their matches are cut, §12)
        closed = closed.filter(written_from_start(context, "end"))  # (semantics §12)
    # The record is put together from the values' JSON text: through a variant
    # (parse_json) a float such as 21.0 would be written as 21.
    fields = [(column, name) for name, column in zip(groups, w.group_by, strict=True)]
    own = w.own_fields  # (a user's column keeps its name, semantics §10.3)
    fields.append((own["window_start"], f"concat('\"', {iso('start')}, '\"')"))
    fields.append((own["window_end"], f"concat('\"', {iso('end')}, '\"')"))
    for aggregate, plan in zip(w.aggregates, context.aggregates, strict=True):
        fields.append((aggregate.name, f"coalesce({plan.final}, 'null')"))
    kept = None
    job = context.job
    if job.joins_windows or job.window_meets_table:  # ([select] reads the join: §7.12, §13.5)
        job = dataclasses.replace(job, select=(), select_star=None)
    if w.having is not None or job.select:  # see sparktide.spark.projections
        closed, having, selected = window_projection(closed, job, dict(fields), ("start", "end"))
        fields = selected or fields
        if having is not None:
            # Windows that fail it are counted by a query of their own: an observation
            # is lost when every closed window fails (Spark then prunes the write).
            kept = closed = closed.cache()
            failed = closed.agg(F.count_if(~F.col(having)).alias("n")).collect()[0]["n"]
            batch.count("windows_filtered", failed)
            closed = closed.filter(having)
    if job.joins_windows:  # (the join reads them as events: semantics §7.12)
        records = closed.select("end", "start", *groups, _record(fields))
        batch.window_records = batch.keep(records)
        if kept is not None:  # (read by the join later in the batch; freed with it)
            batch.kept.append(kept)
        return
    emitted_at = context.job.window_fields["emitted_at"]
    fields.append((emitted_at, f"concat('\"', {iso(lit_us(batch.now))}, '\"')"))
    places = []
    if job.window_meets_table:  # (each record meets reference data, semantics §13.5)
        closed = closed.withColumn("_wrec", F.expr(record_text(fields[:-1])))
        closed, fields = windows_met(context, closed, fields, "_wrec")
        places.append(ROW_PLACE)
    out = closed.select(*ordered("end", "start", "scope", *groups, *places), _record(fields))
    write_text(batch, out, context.job.output.path, "windows_emitted")
    if kept is not None:
        kept.unpersist()


def _record(fields: list[tuple[str, Any]]) -> Column:
    """A window's JSON record from its fields' JSON text."""
    return F.expr(record_text(fields)).alias("value")
