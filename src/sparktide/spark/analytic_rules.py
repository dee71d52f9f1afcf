"""The rules of the analytic columns on Spark (semantics §11.19) as SQL, shared by the
plans of :mod:`sparktide.spark.analytic` that compute them: the state table's schema,
the release order, each column's input columns, its value given the event it looks back
to (:func:`analytic_value`) and when a kept event stops mattering
(:func:`analytic_expired`)."""

from __future__ import annotations

from sparktide.job import Analytic
from sparktide.spark.columns import ARRIVAL_TIME, FILE, LINE, SCOPE, SYSTEM_TIME
from sparktide.spark.outputs.text import state_schema

__all__ = [
    "ANALYTIC_SCHEMA",
    "RELEASE_ORDER",
    "Columns",
    "analytic_expired",
    "analytic_value",
    "at_or_after",
    "input_names",
]

#: The kept matching events of every analytic column (``idx``: the column's position).
ANALYTIC_SCHEMA = state_schema(
    f"idx long, {SCOPE} string, key string, {SYSTEM_TIME} long, {ARRIVAL_TIME} long, "
    f"{FILE} string, {LINE} long, v string"
)

#: The columns ordering a scope's events as they are released.
RELEASE_ORDER = (SYSTEM_TIME, ARRIVAL_TIME, FILE, LINE)

#: Analytic columns with their positions in the job.
Columns = list[tuple[int, Analytic]]


def input_names(k: int) -> tuple[str, str, str, str]:
    """The columns holding column ``k``'s inputs: its partition key, whether ``when``
    holds, its looked-up value and its default."""
    return f"ak{k}", f"aw{k}", f"av{k}", f"ad{k}"


def analytic_expired(analytic: Analytic, t: str, watermark: str) -> str:
    """SQL: whether a kept event at ``t`` can no longer matter once its scope's watermark
    is ``watermark`` (:func:`sparktide.core.analytic.analytic_expired`); never at −∞."""
    if analytic.function == "isfirst":
        floor = f"try_subtract({watermark}, pmod({watermark}, {analytic.period}L))"
    else:
        floor = f"try_subtract({watermark}, {analytic.limit_duration}L)"
    return f"coalesce({t} < {floor}, false)"


def analytic_value(analytic: Analytic, previous: str, inputs: tuple[str, str, str]) -> str:
    """SQL of the column's JSON text for a released row, given ``previous``: the
    ``depth``-th latest matching event before it, ``(t, v)`` (the rule of
    :meth:`sparktide.core.analytic.AnalyticColumns.values`). ``inputs``: the row's
    columns saying whether ``when`` holds, its looked-up value and its default."""
    when, value, default = inputs
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


def at_or_after(condition: str, window: str) -> str:
    """SQL: how many rows of the row's partition of ``window`` (``PARTITION BY ... ORDER
    BY ...``) meet ``condition`` at or after it — how many matching events a column keeps
    after it. The whole partition's count less the count before the row: two frames
    Spark computes in one pass each, where ``ROWS BETWEEN CURRENT ROW AND UNBOUNDED
    FOLLOWING`` recounts the rest of the partition at every row (quadratic in a
    partition's rows: a column without ``PARTITION BY`` over a busy stream)."""
    rows = f"OVER ({window} ROWS BETWEEN UNBOUNDED PRECEDING AND"
    whole = f"count_if({condition}) {rows} UNBOUNDED FOLLOWING)"
    before = f"count_if({condition}) {rows} 1 PRECEDING)"
    return f"({whole} - coalesce({before}, 0))"
