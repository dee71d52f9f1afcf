"""Analytic columns (``LAG``, ``LAST``, ``ISFIRST`` and the analytic forms of ``SUM``,
``COUNT``, ``AVG``, ``MIN``, ``MAX``; semantics §11.19) on Spark: the same values as
:mod:`sparktide.core.analytic`, computed per batch with window functions.

- **At admission** (:func:`admission_columns`, right after parsing) each event's inputs
  are taken out of the record as narrow text columns: per column ``k`` its partition
  key ``ak<k>`` (the partition values' JSON texts, kind by kind, so ``1`` and ``1.0``
  differ as in the reference; an array or object is null), whether ``when`` holds
  (``aw<k>``), the looked-up value ``av<k>`` (a field's JSON text as written, else the
  computed value's; for an aggregate what the event adds to it,
  :func:`sparktide.spark.analytic_aggregates.added_value`) and the default ``ad<k>``.
  Held events carry them with their line (:func:`held_value`).
- **At release** (:func:`analytic_release`) each released event of the batch is stacked
  once per column (``idx``), under the matching events kept in state (table
  ``analytic``), and ordered per ``(idx, scope, key)`` in release order: one window
  pass for every column. ``lag(CASE WHEN w THEN (t, v) END, depth) IGNORE NULLS`` finds
  the ``depth``-th latest matching event before each one, and closed-form SQL gives the
  column's value (:func:`analytic_value`); an aggregate's value comes from window
  aggregates over the rows within ``limit_duration``
  (:func:`sparktide.spark.analytic_aggregates.analytic_aggregate_columns`). The kept
  events of each partition are its latest ``depth`` matching ones (every matching one
  for an aggregate) the scope's watermark has not left behind
  (:func:`analytic_expired`). The released events are then put back together, one row
  each with every column, and ``[filter]`` and ``[select]`` run over the record and the
  columns. Columns that are all ``LAG``, ``LAST`` or ``ISFIRST`` over one
  ``PARTITION BY`` need no stacking: they take one window over the rows as they are
  (:mod:`sparktide.spark.analytic_shared`), by the same rules
  (:mod:`sparktide.spark.analytic_rules`).

- **Columns reading columns** (:func:`sparktide.job.analytic_levels`): the columns of
  level 0 are computed as above (their inputs taken at admission). A column that reads
  other columns has inputs known only once they are computed, so the released rows go
  through one window pass per level: level ``n`` takes its columns' inputs from the
  record (parsed again from its line) and the texts ``an<j>`` of the lower levels, and
  stacks the rows under its columns' kept events. Kept events carry their evaluated
  inputs (``key``, and only the events whose ``when`` held), so the state table is the
  same. A job without such columns takes the one pass.

No Python runs per event: one window pass over the released rows per level, whatever
the number of columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.expr import EVENT_INPUT, SYSTEM_TIMESTAMP, Ref
from sparktide.job import Analytic, Job, analytic_levels
from sparktide.spark.aggregates import json_text
from sparktide.spark.analytic_aggregates import added_value, analytic_aggregate_columns
from sparktide.spark.analytic_rules import (
    ANALYTIC_SCHEMA,
    RELEASE_ORDER,
    Columns,
    analytic_expired,
    analytic_value,
    at_or_after,
    input_names,
)
from sparktide.spark.analytic_shared import shared_kept_next, shared_key_pass, shares_key
from sparktide.spark.batch import Batch
from sparktide.spark.columns import RAW, RECORD, SCOPE, SYSTEM_TIME
from sparktide.spark.context import Context
from sparktide.spark.expr import (
    Compiled,
    Value,
    json_of,
    of_kind,
    record_field_names,
    scalar_json_of,
    variant_leaves,
)
from sparktide.spark.outputs.text import write_state
from sparktide.spark.perinput import RELEASED_INPUT, ROW_INPUT, per_input_column_text
from sparktide.spark.sql import field as variant_field
from sparktide.spark.sql import iso

#: The leaf System.Timestamp() reads (semantics §11.17).
TIME_KEY = SYSTEM_TIMESTAMP.key

__all__ = [
    "ANALYTIC_SCHEMA",
    "admission_columns",
    "admission_names",
    "analytic_expired",
    "analytic_release",
    "analytic_value",
    "filter_and_select",
    "held_value",
]


def _first_level(job: Job) -> Columns:
    """The columns computed at admission: those of level 0 (reading no other column)
    that read no ``System.Timestamp()`` (unknown before judging)."""
    return [(k, job.analytics[k]) for k in _levels(job)[0] if not job.analytics[k].reads_time]


def _levels(job: Job) -> tuple[tuple[int, ...], ...]:
    """The levels of :func:`~sparktide.job.analytic_levels`, the columns of level 0 that
    read ``System.Timestamp()`` in a level of their own right after it: their inputs
    are read at release, when the event's system timestamp is known."""
    levels = analytic_levels(job.analytics)
    timed = tuple(k for k in levels[0] if job.analytics[k].reads_time)
    if not timed:
        return levels
    plain = tuple(k for k in levels[0] if k not in timed)
    return (*((plain,) if plain else ()), timed, *levels[1:])


def admission_columns(frame: DataFrame, job: Job) -> DataFrame:
    """The parsed batch with the inputs of each column of level 0 (see the module
    docstring), read from the record ``m`` before it is dropped."""
    stages, compiled, outputs = _inputs(_first_level(job), "_a", variant_field, {}, ROW_INPUT)
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    frame = compiled.apply(frame)
    kept = [c for c in frame.columns if not c.startswith(("_af", "_ae"))]
    return frame.selectExpr(*(f"`{c}`" for c in kept), *outputs)


def _inputs(
    columns: Columns,
    prefix: str,
    variant: Callable[[str], str],
    texts: dict[str, str],
    row_input: str,
    time: Value | None = None,
) -> tuple[list[list[str]], Compiled, list[str]]:
    """The projections reading the leaves of ``columns``' expressions (``variant``:
    a name's variant SQL; ``row_input``: SQL of the row's input, ``System.Input()``;
    ``time``: the event's system timestamp, ``System.Timestamp()``, once known), their
    compiled values and the SQL of each column's inputs (``texts``: the JSON text
    column of each earlier analytic column they read)."""
    exprs = [e for _, a in columns for e in a.expressions()]
    stages, leaves = variant_leaves(f"{prefix}f", record_field_names(exprs), variant)
    leaves[EVENT_INPUT.key] = Value(s=row_input)
    if time is not None:
        leaves[TIME_KEY] = time
    compiled = Compiled(f"{prefix}e", leaves)
    outputs = []
    for k, analytic in columns:
        key, when, value, default = input_names(k)
        # (an array or object is null there, as in the reference's analytic_key)
        parts = [scalar_json_of(compiled.value(e)) for e in analytic.partition_expressions]
        outputs.append(f"{_concat(parts)} AS {key}")
        condition = analytic.when_expression
        test = (
            "true"
            if condition is None
            else f"coalesce({of_kind(compiled.value(condition), 'b')}, false)"
        )
        outputs.append(f"{test} AS {when}")
        if analytic.is_aggregate:  # what the event adds to the aggregate
            outputs.append(f"{added_value(compiled, analytic)} AS {value}")
        elif analytic.value_expression is not None:
            outputs.append(f"{_text(compiled, analytic.value_expression, texts)} AS {value}")
        if analytic.default_expression is not None:
            outputs.append(f"{_text(compiled, analytic.default_expression, texts)} AS {default}")
    return stages, compiled, outputs


def _concat(parts: list[str]) -> str:
    if not parts:
        return "''"
    return "concat_ws(chr(1), " + ", ".join(parts) + ")"


def _text(compiled: Compiled, expr: Any, texts: dict[str, str]) -> str:
    """JSON text of a looked-up value: a field as written (an earlier analytic column's
    text, of ``texts``), else the computed value."""
    if isinstance(expr, Ref) and expr.key in texts:
        return texts[expr.key]
    if isinstance(expr, Ref) and expr != SYSTEM_TIMESTAMP:
        return f"coalesce({json_text(variant_field(expr.name))}, 'null')"
    return json_of(compiled.value(expr))


def admission_names(job: Job) -> list[str]:
    """The columns :func:`admission_columns` adds."""
    out = []
    for k, analytic in _first_level(job):
        key, when, value, default = input_names(k)
        out += [key, when]
        out += [value] if analytic.value_expression is not None or analytic.is_aggregate else []
        out += [default] if analytic.default_expression is not None else []
    return out


def held_value(job: Job) -> str:
    """SQL of a held event's ``value``: its line and its columns' inputs, as JSON."""
    members = [f"'r', {RAW}"] + [f"'{n}', {n}" for n in admission_names(job)]
    return f"to_json(named_struct({', '.join(members)}))"


def _unpacked(job: Job, frame: DataFrame) -> DataFrame:
    """Held (and admitted) rows with their ``value`` unpacked (:func:`held_value`)."""
    names = admission_names(job)
    types = ", ".join(f"{n} {'boolean' if n.startswith('aw') else 'string'}" for n in names)
    schema = f"r string, {types}"
    unpacked = frame.withColumn("_u", F.from_json("value", schema))
    return unpacked.select(
        "*", F.col("_u.r").alias(RAW), *(F.col(f"_u.{n}").alias(n) for n in names)
    ).drop("_u", "value")


def analytic_release(
    context: Context,
    batch: Batch,
    ready: DataFrame,
    watermark: str,
    scopes: DataFrame | None,
) -> DataFrame:
    """The released rows ``ready``, each with its columns' JSON text ``an<k>``, after
    ``[filter]`` (counted ``events_filtered``) and with ``[select]``'s columns ``e<i>``;
    writes the kept events of every column (table ``analytic``). ``watermark``: SQL of a
    row's scope watermark, reading the columns of ``scopes`` (joined on ``scope``) when
    there is such a table.

    Every column is computed in one pass: each released row is stacked once per column
    (``idx``: the column's position) under the kept events of that column, and one
    window partitioned by ``(idx, scope, key)`` looks back for all of them."""
    job = context.job
    kept = context.store.load_table(batch.previous, "analytic", ANALYTIC_SCHEMA)
    if scopes is not None:
        kept = kept.join(scopes, on=SCOPE, how="left")
    levels = _levels(job)
    if len(levels) > 1 or any(a.reads_time for a in job.analytics):
        # (columns reading columns, or System.Timestamp(): a pass per level)
        released = _by_levels(context, batch, _unpacked(job, ready), kept, watermark, levels)
        return filter_and_select(job, batch, released)
    columns = list(enumerate(job.analytics))
    if shares_key(columns):  # (one window pass over the rows as they are)
        looked = batch.keep(shared_key_pass(columns, _unpacked(job, ready), kept))
        write_state(context.store, batch, shared_kept_next(columns, looked, watermark), "analytic")
        texts = [f"an{k}" for k, _ in columns]
        released = looked.filter("_src = 1").select(SCOPE, *RELEASE_ORDER, RAW, *texts)
        return filter_and_select(job, batch, released)
    stacked = _stacked(columns, _unpacked(job, ready), kept)
    looked = batch.keep(_looked_back(columns, stacked))
    write_state(context.store, batch, _kept_next(columns, looked, watermark), "analytic")
    return filter_and_select(job, batch, _side_by_side(columns, looked.filter("_src = 1")))


def _by_levels(
    context: Context,
    batch: Batch,
    frame: DataFrame,
    kept: DataFrame,
    watermark: str,
    levels: tuple[tuple[int, ...], ...],
) -> DataFrame:
    """The released rows ``frame`` with every column's text ``an<k>``, computed level by
    level: a level's inputs are read from the record and the lower levels' texts
    (level 0's at admission), then one window pass over the level's columns. Writes
    the kept events of every column."""
    job = context.job
    scope_columns = [c for c in kept.columns if c.startswith("scope_")]
    carry = [SCOPE, *RELEASE_ORDER, RAW, *scope_columns]
    frame = frame.withColumn("_rid", F.monotonically_increasing_id())
    done: Columns = []
    nexts = []
    admitted = {k for k, _ in _first_level(job)}
    for level in levels:
        columns = [(k, job.analytics[k]) for k in level]
        if not admitted.issuperset(level):  # (inputs read now: at release)
            frame = _level_inputs(frame, columns, done)
        earlier = [f"an{k}" for k, _ in done]
        mine = kept.filter(F.col("idx").isin(*level))
        looked = batch.keep(_looked_back(columns, _stacked(columns, frame, mine, earlier)))
        nexts.append(_kept_next(columns, looked, watermark))
        frame = _side_by_side(columns, looked.filter("_src = 1"), [*carry, *earlier])
        done += columns
    write_state(context.store, batch, reduce(DataFrame.unionByName, nexts), "analytic")
    texts = [f"an{k}" for k in range(len(job.analytics))]
    return frame.select(SCOPE, *RELEASE_ORDER, RAW, *texts)


def _level_inputs(frame: DataFrame, columns: Columns, done: Columns) -> DataFrame:
    """The released rows with the inputs of ``columns`` (a level above 0), read from the
    record (parsed again from its line) and the texts of the columns ``done``."""
    texts = {a.name: f"an{k}" for k, a in done}

    def variant(name: str) -> str:
        return f"try_parse_json({texts[name]})" if name in texts else variant_field(name)

    time = Value(s=iso(SYSTEM_TIME))  # (System.Timestamp(), known at release)
    stages, compiled, outputs = _inputs(columns, "_l", variant, texts, RELEASED_INPUT, time)
    read = frame.withColumn(RECORD, F.expr(f"try_parse_json({RAW})"))
    for stage in stages:
        read = read.selectExpr("*", *stage)
    read = compiled.apply(read)
    return read.selectExpr(*(f"`{c}`" for c in frame.columns), *outputs)


def _stacked(
    columns: Columns, frame: DataFrame, kept: DataFrame, carry: Sequence[str] = ()
) -> DataFrame:
    """The released rows ``frame`` once per column of ``columns`` (``_src`` 1, numbered
    ``_rid``) with each column's inputs as ``key``, ``_w``, ``_v`` and ``_d``, under the
    kept events (``_src`` 0) of those columns; the released rows keep the columns
    ``carry`` (null on the kept rows)."""
    parts = []
    for k, analytic in columns:
        key, when, value, default = input_names(k)
        has_value = analytic.value_expression is not None or analytic.is_aggregate
        v = value if has_value else "CAST(NULL AS STRING)"
        d = default if analytic.default_expression is not None else "CAST(NULL AS STRING)"
        parts.append(f"named_struct('idx', {k}L, 'key', {key}, '_w', {when}, '_v', {v}, '_d', {d})")
    scope_columns = [c for c in kept.columns if c.startswith("scope_")]
    numbered = frame
    if "_rid" not in frame.columns:
        numbered = frame.withColumn("_rid", F.monotonically_increasing_id())  # (before explode)
    released = (
        numbered.select(
            SCOPE,
            *RELEASE_ORDER,
            RAW,
            *scope_columns,
            *carry,
            "_rid",
            F.lit(1).alias("_src"),
            F.explode(F.expr(f"array({', '.join(parts)})")).alias("_c"),
        )
        .select("*", "_c.*")
        .drop("_c")
    )
    before = kept.select(
        "idx",
        SCOPE,
        "key",
        *RELEASE_ORDER,
        F.lit(None).cast("string").alias(RAW),
        *scope_columns,
        *(F.lit(None).cast("string").alias(c) for c in carry),
        F.lit(None).cast("long").alias("_rid"),
        F.lit(0).alias("_src"),
        F.lit(True).alias("_w"),
        F.col("v").alias("_v"),
        F.lit(None).cast("string").alias("_d"),
    )
    return released.unionByName(before)


def _by_column(columns: Columns, sql: Callable[[int, Analytic], str]) -> str:
    """SQL choosing, by the row's ``idx``, column ``k``'s ``sql(k, analytic)``."""
    cases = " ".join(f"WHEN {k} THEN {sql(k, a)}" for k, a in columns)
    return f"CASE idx {cases} END"


def _looked_back(columns: Columns, stacked: DataFrame) -> DataFrame:
    """The stacked rows with ``_an``, their column's JSON text (released rows), and
    ``_rank``, how many matching rows of their partition are at or after them (when a
    column keeps a number of them)."""
    order = ", ".join(["_src", *RELEASE_ORDER])
    window = f"PARTITION BY idx, {SCOPE}, key ORDER BY {order}"
    lags = {}
    depths = {a.depth for _, a in columns if a.depth is not None}
    for depth in sorted(depths):
        lags[f"_p{depth}"] = (
            f"lag(CASE WHEN _w THEN named_struct('t', {SYSTEM_TIME}, 'v', _v) END, {depth}) "
            f"IGNORE NULLS OVER ({window})"
        )
    if depths:
        lags["_rank"] = at_or_after("_w", window)
    looked = stacked.withColumns({name: F.expr(sql) for name, sql in lags.items()})
    merged, aggregates = analytic_aggregate_columns(columns, looked)
    inputs = ("_w", "_v", "_d")

    def value(k: int, analytic: Analytic) -> str:
        if analytic.is_aggregate:
            return aggregates[k]
        return analytic_value(analytic, f"_p{analytic.depth}", inputs)

    texts = merged.withColumn("_an", F.expr(f"coalesce({_by_column(columns, value)}, 'null')"))
    # (the aggregates' inputs and partial columns are not kept with the batch)
    return texts.drop(*(c for c in merged.columns if c not in looked.columns))


def _kept_next(columns: Columns, looked: DataFrame, watermark: str) -> DataFrame:
    """The events each column keeps after the batch: per partition its latest ``depth``
    matching ones (every one for an aggregate) the scope's watermark has not left
    behind."""
    kept = _by_column(columns, lambda _, a: "true" if a.depth is None else f"_rank <= {a.depth}")
    expired = _by_column(columns, lambda _, a: analytic_expired(a, SYSTEM_TIME, watermark))
    return looked.filter(f"_w AND {kept} AND NOT {expired}").select(
        F.col("idx").cast("long"), SCOPE, "key", *RELEASE_ORDER, F.col("_v").alias("v")
    )


def _side_by_side(
    columns: Columns, released: DataFrame, carry: Sequence[str] | None = None
) -> DataFrame:
    """The released rows once each again, with column ``k``'s text as ``an<k>``; with
    ``carry``, those columns and ``_rid`` (else the release order and the line)."""
    kept = (SCOPE, *RELEASE_ORDER, RAW) if carry is None else ("_rid", *carry)
    if len(columns) == 1:
        return released.select(*kept, F.col("_an").alias(f"an{columns[0][0]}"))
    texts = [F.max(F.when(F.col("idx") == k, F.col("_an"))).alias(f"an{k}") for k, _ in columns]
    first = [F.first(c).alias(c) for c in kept if c != "_rid"]
    grouped = released.groupBy("_rid").agg(*first, *texts)
    return grouped.drop("_rid") if carry is None else grouped


def filter_and_select(job: Job, batch: Batch, frame: DataFrame) -> DataFrame:
    """``[filter]`` and ``[select]`` over the record (parsed again from its line) and the
    analytic columns, which hide fields of the same name: ``frame`` with the ``e<i>`` of
    :func:`~sparktide.spark.projections.projected_event` (also over a match's measures,
    :mod:`sparktide.spark.matching`)."""
    columns = {a.name: f"an{k}" for k, a in enumerate(job.analytics)}
    exprs = [job.filter.expression] if job.filter is not None else []
    exprs += [e for p in job.select for _, e in p.expressions()]

    def variant(name: str) -> str:
        if name in columns:
            return f"try_parse_json({columns[name]})"
        return variant_field(name)

    stages, leaves = variant_leaves("_rf", record_field_names(exprs), variant)
    leaves[TIME_KEY] = Value(s=iso(SYSTEM_TIME))  # System.Timestamp() (semantics §11.17)
    leaves[EVENT_INPUT.key] = Value(s=RELEASED_INPUT)  # System.Input() (§11.22)
    compiled = Compiled("_re", leaves)
    outputs = []
    if job.filter is not None:
        passed = of_kind(compiled.value(job.filter.expression), "b")
        outputs.append(f"coalesce({passed}, false) AS _pass")

    def column_text(expr: Any) -> str | None:  # (an analytic column's own text)
        return columns[expr.key] if isinstance(expr, Ref) and expr.key in columns else None

    for i, projection in enumerate(job.select):
        text, _ = per_input_column_text(
            compiled, projection, variant_field, RELEASED_INPUT, column_text
        )
        outputs.append(f"{text} AS e{i}")
    frame = frame.withColumn(RECORD, F.expr(f"try_parse_json({RAW})"))
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    frame = compiled.apply(frame)
    frame = frame.selectExpr(SCOPE, *RELEASE_ORDER, RAW, *outputs)
    if job.filter is None:
        return frame
    frame = batch.keep(frame)
    failed = frame.agg(F.count_if(~F.col("_pass")).alias("n")).collect()[0]["n"]
    batch.count("events_filtered", failed)
    return frame.filter("_pass").drop("_pass")
