"""Analytic columns (``LAG``, ``LAST``, ``ISFIRST``; semantics §11.11) on Spark: the same
values as :mod:`sparktide.core.analytic`, computed per batch with window functions.

- **At admission** (:func:`admission_columns`, right after parsing) each event's inputs
  are taken out of the record as narrow text columns: per column ``k`` its partition
  key ``ak<k>`` (the partition values' JSON texts, kind by kind, so ``1`` and ``1.0``
  differ as in the reference), whether ``when`` holds (``aw<k>``), the looked-up value
  ``av<k>`` (a field's JSON text as written, else the computed value's) and the default
  ``ad<k>``. Held events carry them with their line (:func:`held_value`).
- **At release** (:func:`analytic_release`) the released events of the batch, with the
  matching events kept in state (table ``analytic``) ahead of them, are ordered per
  ``(scope, key)`` in release order; ``lag(CASE WHEN w THEN (t, v) END, depth) IGNORE
  NULLS`` finds the ``depth``-th latest matching event before each one, and closed-form
  SQL gives the column's value (:func:`analytic_value`). The kept events of each
  partition are its latest ``depth`` matching ones the scope's watermark has not left
  behind (:func:`analytic_expired`). Then ``[filter]`` and ``[select]`` run over the
  record and the columns.

No Python runs per event: one window function per column over the released rows.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.expr import SYSTEM_TIMESTAMP, Ref, references
from sparktide.job import Analytic, Job
from sparktide.spark.aggregates import json_text
from sparktide.spark.batch import Batch
from sparktide.spark.columns import ARRIVAL_TIME, FILE, LINE, RAW, RECORD, SCOPE, SYSTEM_TIME
from sparktide.spark.context import Context
from sparktide.spark.expr import Compiled, Value, json_of, of_kind, variant_leaves
from sparktide.spark.outputs.text import state_schema, write_state
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
    "held_value",
]

#: The kept matching events of every analytic column (``idx``: the column's position).
ANALYTIC_SCHEMA = state_schema(
    f"idx long, {SCOPE} string, key string, {SYSTEM_TIME} long, {ARRIVAL_TIME} long, "
    f"{FILE} string, {LINE} long, v string"
)
_ORDER = (SYSTEM_TIME, ARRIVAL_TIME, FILE, LINE)


def _names(k: int) -> tuple[str, str, str, str]:
    return f"ak{k}", f"aw{k}", f"av{k}", f"ad{k}"


def admission_columns(frame: DataFrame, job: Job) -> DataFrame:
    """The parsed batch with each column's inputs (see the module docstring), read from
    the record ``m`` before it is dropped."""
    exprs = [e for a in job.analytics for e in a.expressions()]
    names = list(dict.fromkeys(n for e in exprs for n in references(e)))
    stages, leaves = variant_leaves("_af", names, variant_field)
    compiled = Compiled("_ae", leaves)
    outputs = []
    for k, analytic in enumerate(job.analytics):
        key, when, value, default = _names(k)
        parts = [json_of(compiled.value(e)) for e in analytic.partition_expressions]
        outputs.append(f"{_concat(parts)} AS {key}")
        condition = analytic.when_expression
        test = (
            "true"
            if condition is None
            else f"coalesce({of_kind(compiled.value(condition), 'b')}, false)"
        )
        outputs.append(f"{test} AS {when}")
        if analytic.value_expression is not None:
            outputs.append(f"{_text(compiled, analytic.value_expression)} AS {value}")
        if analytic.default_expression is not None:
            outputs.append(f"{_text(compiled, analytic.default_expression)} AS {default}")
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    frame = compiled.apply(frame)
    kept = [c for c in frame.columns if not c.startswith(("_af", "_ae"))]
    return frame.selectExpr(*(f"`{c}`" for c in kept), *outputs)


def _concat(parts: list[str]) -> str:
    if not parts:
        return "''"
    return "concat_ws(chr(1), " + ", ".join(parts) + ")"


def _text(compiled: Compiled, expr: Any) -> str:
    """JSON text of a looked-up value: a field as written, else the computed value."""
    if isinstance(expr, Ref):
        return f"coalesce({json_text(variant_field(expr.name))}, 'null')"
    return json_of(compiled.value(expr))


def admission_names(job: Job) -> list[str]:
    """The columns :func:`admission_columns` adds."""
    out = []
    for k, analytic in enumerate(job.analytics):
        key, when, value, default = _names(k)
        out += [key, when]
        out += [value] if analytic.value_expression is not None else []
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


def analytic_expired(analytic: Analytic, t: str, watermark: str) -> str:
    """SQL: whether a kept event at ``t`` can no longer matter once its scope's watermark
    is ``watermark`` (:func:`sparktide.core.analytic.analytic_expired`); never at −∞."""
    if analytic.function == "isfirst":
        floor = f"try_subtract({watermark}, pmod({watermark}, {analytic.period}L))"
    else:
        floor = f"try_subtract({watermark}, {analytic.limit_duration}L)"
    return f"coalesce({t} < {floor}, false)"


def analytic_value(analytic: Analytic, k: int, previous: str) -> str:
    """SQL of column ``k``'s JSON text for a released row, given ``previous``: the
    ``depth``-th latest matching event before it, ``(t, v)`` (the rule of
    :meth:`sparktide.core.analytic.AnalyticColumns.values`)."""
    _, when, value, default = _names(k)
    if analytic.function == "isfirst":
        period = f"{analytic.period}L"
        same = (
            f"{previous}.t - pmod({previous}.t, {period}) = "
            f"{SYSTEM_TIME} - pmod({SYSTEM_TIME}, {period})"
        )
        return f"CASE WHEN {when} AND NOT coalesce({same}, false) THEN '1' ELSE '0' END"
    fallback = default if analytic.default_expression is not None else "'null'"
    found = f"{previous}.t >= {SYSTEM_TIME} - {analytic.limit_duration}L"
    lookup = f"CASE WHEN coalesce({found}, false) THEN {previous}.v ELSE {fallback} END"
    if analytic.function == "last":
        return f"CASE WHEN {when} THEN {value} ELSE {lookup} END"
    return lookup


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
    there is such a table."""
    job = context.job
    frame = _unpacked(job, ready)
    kept_all = context.store.load_table(batch.previous, "analytic", ANALYTIC_SCHEMA)
    if scopes is not None:
        kept_all = kept_all.join(scopes, on=SCOPE, how="left")
    carried = []
    for k, analytic in enumerate(job.analytics):
        kept = kept_all.filter(F.col("idx") == k)
        frame, kept = _one_column(batch, frame, kept, analytic, k, watermark)
        carried.append(kept)
    state = carried[0]
    for more in carried[1:]:
        state = state.unionByName(more)
    write_state(context.store, batch, state, "analytic")
    return _filter_and_select(job, batch, frame)


def _one_column(
    batch: Batch, frame: DataFrame, kept: DataFrame, analytic: Analytic, k: int, watermark: str
) -> tuple[DataFrame, DataFrame]:
    """Column ``k`` over the released rows ``frame`` (kept events ahead of them), and
    the events column ``k`` keeps after the batch."""
    key, when, value, _ = _names(k)
    has_value = analytic.value_expression is not None
    extra = [F.col("v").alias(value)] if has_value else []
    scope_columns = [c for c in kept.columns if c.startswith("scope_")]
    before = kept.select(
        SCOPE,
        F.col("key").alias(key),
        *_ORDER,
        *extra,
        F.lit(True).alias(when),
        F.lit(0).alias("_src"),
        *scope_columns,
    )
    both = frame.withColumn("_src", F.lit(1)).unionByName(before, allowMissingColumns=True)
    order = ", ".join(["_src", *_ORDER])
    window = f"PARTITION BY {SCOPE}, {key} ORDER BY {order}"
    v = value if has_value else "CAST(NULL AS STRING)"
    previous = (
        f"lag(CASE WHEN {when} THEN named_struct('t', {SYSTEM_TIME}, 'v', {v}) END, "
        f"{analytic.depth}) IGNORE NULLS OVER ({window})"
    )
    latest = ", ".join(f"{c} DESC" for c in ("_src", *_ORDER))
    rank = f"row_number() OVER (PARTITION BY {SCOPE}, {key}, {when} ORDER BY {latest})"
    both = batch.keep(both.withColumn("_prev", F.expr(previous)).withColumn("_rank", F.expr(rank)))
    column = f"coalesce({analytic_value(analytic, k, '_prev')}, 'null')"
    out = both.filter("_src = 1").withColumn(f"an{k}", F.expr(column))
    out = out.drop("_src", "_prev", "_rank")
    expired = analytic_expired(analytic, SYSTEM_TIME, watermark)
    kept_next = both.filter(f"{when} AND _rank <= {analytic.depth} AND NOT {expired}").select(
        F.lit(k).cast("long").alias("idx"),
        SCOPE,
        F.col(key).alias("key"),
        *_ORDER,
        (F.col(value) if has_value else F.lit(None).cast("string")).alias("v"),
    )
    return out, kept_next


def _filter_and_select(job: Job, batch: Batch, frame: DataFrame) -> DataFrame:
    """``[filter]`` and ``[select]`` over the record (parsed again from its line) and the
    analytic columns, which hide fields of the same name."""
    columns = {a.name: f"an{k}" for k, a in enumerate(job.analytics)}
    exprs = [job.filter.expression] if job.filter is not None else []
    exprs += [p.parsed for p in job.select]
    names = list(dict.fromkeys(n for e in exprs for n in references(e) if n != TIME_KEY))

    def variant(name: str) -> str:
        if name in columns:
            return f"try_parse_json({columns[name]})"
        return variant_field(name)

    stages, leaves = variant_leaves("_rf", names, variant)
    leaves[TIME_KEY] = Value(s=iso(SYSTEM_TIME))  # System.Timestamp() (semantics §11.17)
    compiled = Compiled("_re", leaves)
    outputs = []
    if job.filter is not None:
        passed = of_kind(compiled.value(job.filter.expression), "b")
        outputs.append(f"coalesce({passed}, false) AS _pass")
    for i, projection in enumerate(job.select):
        expr = projection.parsed
        if isinstance(expr, Ref) and expr.key in columns:
            text = columns[expr.key]
        elif isinstance(expr, Ref) and expr != SYSTEM_TIMESTAMP:
            text = f"coalesce({json_text(variant_field(expr.name))}, 'null')"
        else:
            text = json_of(compiled.value(expr))
        outputs.append(f"{text} AS e{i}")
    frame = frame.withColumn(RECORD, F.expr(f"try_parse_json({RAW})"))
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    frame = compiled.apply(frame)
    frame = frame.selectExpr(SCOPE, *_ORDER, RAW, *outputs)
    if job.filter is None:
        return frame
    frame = batch.keep(frame)
    failed = frame.agg(F.count_if(~F.col("_pass")).alias("n")).collect()[0]["n"]
    batch.count("events_filtered", failed)
    return frame.filter("_pass").drop("_pass")
