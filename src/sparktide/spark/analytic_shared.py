"""Analytic columns that share their partition key, on Spark: one window pass over the
released rows as they are, with no row per column (semantics §11.19).

:func:`sparktide.spark.analytic.analytic_release` stacks each released row once per
column, so that one window partitioned by ``(column, scope, key)`` serves columns of
different keys, then puts each row back together with a grouping. When every column is
``LAG``, ``LAST`` or ``ISFIRST`` over the same ``PARTITION BY`` (the common case:
``ISFIRST(...) OVER (PARTITION BY d)`` beside ``LAG(v) OVER (PARTITION BY d ...)``),
their partitions are the same rows, so :func:`shared_key_pass` orders each
``(scope, key)`` once and looks back for every column in it: column ``k`` sees the rows
its ``when`` holds for (the kept events of column ``k``, then the batch's released rows
with ``aw<k>``). The values are those of the stacked pass, by the same rules
(:mod:`sparktide.spark.analytic_rules`); only the plan differs: no row per column, and
no grouping afterwards.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.spark.analytic_rules import (
    RELEASE_ORDER,
    Columns,
    analytic_expired,
    analytic_value,
    at_or_after,
    input_names,
)
from sparktide.spark.columns import RAW, SCOPE, SYSTEM_TIME

__all__ = ["shared_kept_next", "shared_key_pass", "shares_key"]


def shares_key(columns: Columns) -> bool:
    """Whether ``columns`` may take :func:`shared_key_pass`: no aggregate, and one
    ``PARTITION BY`` for all."""
    return not any(a.is_aggregate for _, a in columns) and (
        len({a.partition_expressions for _, a in columns}) == 1
    )


def _has_value(k: int, columns: Columns) -> bool:
    return dict(columns)[k].value_expression is not None


def _matches(k: int) -> str:
    """SQL: whether a row counts for column ``k``: a kept event of ``k``, or a released
    row whose ``when`` holds for ``k``."""
    return f"CASE WHEN _src = 0 THEN idx = {k} ELSE aw{k} END"


def _value(k: int, columns: Columns) -> str:
    """SQL: the value a row holds for column ``k`` (the kept one, or the released row's)."""
    mine = input_names(k)[2] if _has_value(k, columns) else "CAST(NULL AS STRING)"
    return f"CASE WHEN _src = 0 THEN v ELSE {mine} END"


def _rows(columns: Columns, released: DataFrame, kept: DataFrame) -> DataFrame:
    """The released rows (``_src`` 1, keyed by the shared key ``ak<k>``) under the kept
    events (``_src`` 0) of every column."""
    scope_columns = [c for c in kept.columns if c.startswith("scope_")]
    inputs = []
    for k, analytic in columns:
        _, when, value, default = input_names(k)
        inputs.append(when)
        inputs += [value] if analytic.value_expression is not None else []
        inputs += [default] if analytic.default_expression is not None else []
    first = input_names(columns[0][0])[0]
    rows = released.select(
        SCOPE,
        F.col(first).alias("key"),
        *RELEASE_ORDER,
        RAW,
        *scope_columns,
        *inputs,
        F.lit(1).alias("_src"),
        F.lit(None).cast("long").alias("idx"),
        F.lit(None).cast("string").alias("v"),
    )
    before = kept.select(
        SCOPE, "key", *RELEASE_ORDER, *scope_columns, "idx", "v", F.lit(0).alias("_src")
    )
    return rows.unionByName(before, allowMissingColumns=True)


def shared_key_pass(columns: Columns, released: DataFrame, kept: DataFrame) -> DataFrame:
    """The released rows and the kept events of ``columns`` in one window pass: every
    row with ``an<k>`` (its column ``k``'s JSON text, on released rows) and ``_r<k>``
    (how many rows counting for ``k`` are at or after it in its partition)."""
    order = ", ".join(["_src", *RELEASE_ORDER])
    window = f"PARTITION BY {SCOPE}, key ORDER BY {order}"
    looks = {}
    texts = {}
    for k, analytic in columns:
        _, when, value, default = input_names(k)
        found = f"named_struct('t', {SYSTEM_TIME}, 'v', {_value(k, columns)})"
        looks[f"_p{k}"] = (
            f"lag(CASE WHEN {_matches(k)} THEN {found} END, {analytic.depth}) "
            f"IGNORE NULLS OVER ({window})"
        )
        looks[f"_r{k}"] = at_or_after(_matches(k), window)
        text = analytic_value(analytic, f"_p{k}", (when, value, default))
        texts[f"an{k}"] = f"coalesce({text}, 'null')"
    rows = _rows(columns, released, kept)
    looked = rows.withColumns({n: F.expr(sql) for n, sql in looks.items()})
    looked = looked.withColumns(
        {n: F.when(F.col("_src") == 1, F.expr(sql)) for n, sql in texts.items()}
    )
    return looked.drop(*(n for n in looks if n.startswith("_p")))


def shared_kept_next(columns: Columns, looked: DataFrame, watermark: str) -> DataFrame:
    """The events each column keeps after the batch (the stacked pass's rule): per
    partition its latest ``depth`` rows counting for it that the scope's watermark has
    not left behind, one state row per column."""
    parts = []
    for k, analytic in columns:
        expired = analytic_expired(analytic, SYSTEM_TIME, watermark)
        counted = f"{_matches(k)} AND _r{k} <= {analytic.depth} AND NOT {expired}"
        parts.append(
            looked.filter(counted).select(
                F.lit(k).cast("long").alias("idx"),
                SCOPE,
                "key",
                *RELEASE_ORDER,
                F.expr(_value(k, columns)).alias("v"),
            )
        )
    return reduce(DataFrame.unionByName, parts)
