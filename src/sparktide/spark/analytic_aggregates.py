"""The analytic forms of ``SUM``, ``COUNT``, ``AVG``, ``MIN`` and ``MAX`` on Spark
(semantics §11.19): the values of :func:`sparktide.core.analytic.analytic_aggregate`,
computed with window functions over the stacked rows of
:func:`sparktide.spark.analytic.analytic_release`.

- **At admission** (:func:`added_value`) what an event adds is its aggregate's derived
  value (:func:`~sparktide.spark.aggregates.derived_variant`, the window aggregates' rule:
  an array or object is null, and for ``sum``/``avg`` anything but a number), as JSON
  text (:func:`~sparktide.spark.aggregates.json_text`, so ``21.0`` stays a float);
  ``COUNT(*)`` adds ``1``.
- **At release** each aggregate column gets the window aggregates' plan
  (:func:`~sparktide.spark.aggregates.plan_aggregates`: per-row inputs, partial, merge
  and final SQL). Its partial aggregates run over two frames of the rows of the column's
  ``(scope, key)`` and are merged: the rows at least ``limit_duration`` and at most 1 µs
  before the row (``RANGE`` over the system timestamp: every such row was released
  before it, as release is in timestamp order), and the rows at the row's own timestamp
  released up to it (the kept ones, then the batch's in release order). A row that does
  not match ``when`` adds nothing (its value is null). The plan's final expression then
  gives the column's JSON text.

No Python runs per event: window functions only, one sort shared by both frames.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.expr import Expr
from sparktide.job import Aggregate, Analytic
from sparktide.spark.aggregates import derived_variant, json_text, plan_aggregates
from sparktide.spark.columns import ARRIVAL_TIME, FILE, LINE, SCOPE, SYSTEM_TIME
from sparktide.spark.expr import Compiled

__all__ = ["added_value", "analytic_aggregate_columns"]

_MERGE = re.compile(r"^(sum|min|max)\((\w+)\)$")


def added_value(compiled: Compiled, analytic: Analytic) -> str:
    """SQL (at admission) of the JSON text of what an event adds to the aggregate column
    ``analytic``: :func:`sparktide.core.analytic.added_value`'s value."""
    expr: Expr | None = analytic.value_expression
    if expr is None:  # COUNT(*): every matching event counts
        return "'1'"
    variant = derived_variant(compiled.value(expr), analytic.function)
    return f"coalesce({json_text(variant)}, 'null')"


def _planned(analytic: Analytic) -> Aggregate:
    """The window aggregate planned for the column: its own, but ``COUNT(*)`` as the
    count of the ``1`` each matching event adds (a row that does not match adds null)."""
    aggregate = analytic.aggregate
    if aggregate.counts_rows:
        return Aggregate(analytic.name, "count", expression="1")
    return aggregate


def _combined(merge: str, a: str, b: str) -> str:
    """SQL merging two partial values ``a`` and ``b`` as the plan's ``merge`` aggregate
    (``sum(x)``, ``min(x)``, ``max(x)``) merges partial rows."""
    found = _MERGE.match(merge)
    if found is None:  # pragma: no cover - the plans of sum, count, avg, min, max
        raise ValueError(f"no merge of two values for {merge!r}")
    op = found.group(1)
    if op == "sum":  # (a sum over no row is null)
        return f"CASE WHEN {a} IS NULL THEN {b} WHEN {b} IS NULL THEN {a} ELSE {a} + {b} END"
    return f"{'least' if op == 'min' else 'greatest'}({a}, {b})"


def analytic_aggregate_columns(
    analytics: list[tuple[int, Analytic]], stacked: DataFrame
) -> tuple[DataFrame, dict[int, str]]:
    """The stacked rows of ``analytics`` (columns with their positions; the rows have
    ``idx``, ``scope``, ``key``, the release order, ``_src``, ``_w`` and ``_v``: what each
    row adds) with each aggregate column's merged partial columns, and, by column
    position, the SQL of its JSON text over them (the rule of
    :func:`sparktide.core.analytic.analytic_aggregate`)."""
    columns = [(k, a) for k, a in analytics if a.is_aggregate]
    if not columns:
        return stacked, {}
    plans = plan_aggregates(tuple(_planned(a) for _, a in columns))
    frame = stacked.withColumns(
        {
            f"dv{i}": F.expr(f"CASE WHEN idx = {k} AND _w THEN parse_json(_v) END")
            for i, (k, _) in enumerate(columns)
        }
    )
    frame = frame.withColumns({name: F.expr(sql) for plan in plans for name, sql in plan.inputs})
    partition = f"PARTITION BY idx, {SCOPE}, key"
    earlier = f"{partition} ORDER BY {SYSTEM_TIME} RANGE BETWEEN {{d}}L PRECEDING AND 1L PRECEDING"
    ties = (
        f"{partition}, {SYSTEM_TIME} ORDER BY _src, {ARRIVAL_TIME}, {FILE}, {LINE} "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    )
    windows = {}
    for (_, analytic), plan in zip(columns, plans, strict=True):
        spec = earlier.format(d=analytic.limit_duration)
        for name, sql in plan.partial:
            windows[f"{name}_a"] = f"{sql} OVER ({spec})"
            windows[f"{name}_b"] = f"{sql} OVER ({ties})"
    frame = frame.withColumns({name: F.expr(sql) for name, sql in windows.items()})
    merged = {
        name: _combined(sql, f"{name}_a", f"{name}_b") for plan in plans for name, sql in plan.merge
    }
    frame = frame.withColumns({name: F.expr(sql) for name, sql in merged.items()})
    return frame, {k: plan.final for (k, _), plan in zip(columns, plans, strict=True)}
