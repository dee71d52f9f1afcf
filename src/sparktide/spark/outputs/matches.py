"""A join's matches in Spark SQL: ``[select]`` over them (:func:`join_projection`:
``<input>.<field>`` of either record, the match's ``timestamp``) and the rest of the
``ON`` (:func:`join_condition`, semantics §11.8), compiled by :mod:`sparktide.spark.expr`
over the variants of both records' fields."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from sparktide.expr import Ref, references
from sparktide.job import Job
from sparktide.spark.aggregates import json_text
from sparktide.spark.expr import Compiled, Value, json_of, of_kind, variant_leaves
from sparktide.spark.projections import projected_event, record_fields
from sparktide.spark.sql import field as variant_field
from sparktide.spark.sql import iso

__all__ = ["Tables", "join_condition", "join_projection", "join_where"]

#: The tables a join of two streams met (semantics §11.26): each table's name and the
#: column holding the JSON text of the row met.
Tables = tuple[tuple[str, str], ...]


def join_projection(
    matches: DataFrame, job: Job, records: tuple[str, str], timestamp: str, tables: Tables = ()
) -> tuple[DataFrame, str]:
    """``[select]`` over a join's matches.

    Parameters
    ----------
    matches
        The matches, one row each.
    job
        The job (its ``[join]`` and ``[select]``).
    records
        The columns holding the left and the right record's JSON text.
    timestamp
        The column holding the match's timestamp (microseconds).
    tables
        Of a join of two streams that meets reference data (semantics §11.26): each
        table's name and the column holding the JSON text of the row met (null: none).

    Returns
    -------
    The frame with the selected columns' JSON text (``e<i>``), and SQL of each released
    event's text: the selected columns, then ``timestamp``.
    """
    exprs = [p.parsed for p in job.select]
    when = iso(timestamp)
    frame, compiled, variant = _match_values(
        matches, job, records, exprs, {"timestamp": Value(s=when)}, tables
    )
    outputs = []
    for i, projection in enumerate(job.select):
        expr = projection.parsed
        if isinstance(expr, Ref) and expr.key == "timestamp":
            text = f"concat('\"', {when}, '\"')"
        elif isinstance(expr, Ref):
            text = f"coalesce({json_text(variant(expr.key))}, 'null')"
        else:
            text = json_of(compiled.value(expr))
        outputs.append(f"{text} AS e{i}")
    frame = compiled.apply(frame).selectExpr("*", *outputs)
    return frame, projected_event(job, when, _star_fields(job, records))


def _star_fields(job: Job, records: tuple[str, str]) -> str | None:
    """SQL of the fields of the input ``"*"`` names in ``[select]`` (``SELECT s.*``:
    ``job.select_star_input``) as a map, as an event record writes them; an empty map
    where a left join met nothing of it; ``None`` without ``"*"``."""
    if job.select_star is None:
        return None
    assert job.join is not None
    column = records[0] if job.select_star_input == job.join.left else records[1]
    fields = record_fields(column)
    return f"coalesce({fields}, CAST(map() AS MAP<STRING, VARIANT>))"


def join_condition(
    matches: DataFrame, job: Job, records: tuple[str, str], timestamp: str
) -> DataFrame:
    """``matches`` with ``_jc``: whether each pair meets ``[join] condition`` (semantics
    §11.8; true when there is none, and for a pair without a right record); a condition
    that is false or null (a failed ``CAST`` in it is null) is no match.

    Parameters
    ----------
    matches
        The pairs, one row each.
    job
        The job (its ``[join]``).
    records
        The columns holding the left and the right record's JSON text.
    timestamp
        The column holding the match's timestamp (microseconds): the condition's
        ``timestamp``.
    """
    join = job.join
    assert join is not None
    met = _pair_meets(matches, job, join.condition_expression, records, timestamp)
    met = met.selectExpr("*", f"CASE WHEN {records[1]} IS NULL THEN true ELSE _jm END AS _jc")
    return met.drop("_jm")


def join_where(
    matches: DataFrame, job: Job, records: tuple[str, str], timestamp: str, tables: Tables = ()
) -> DataFrame:
    """The released records of a join with reference data (one row each, the right
    record null when the event met no row) that meet ``[join] where`` (semantics §11.8):
    all of them when there is none; false or null is not written. The parameters are
    :func:`join_condition`'s, and ``tables`` :func:`join_projection`'s."""
    join = job.join
    assert join is not None
    if join.where is None:
        return matches
    met = _pair_meets(matches, job, join.where_expression, records, timestamp, tables)
    return met.filter("_jm").drop("_jm")


def _pair_meets(
    matches: DataFrame,
    job: Job,
    condition: Any,
    records: tuple[str, str],
    timestamp: str,
    tables: Tables = (),
) -> DataFrame:
    """``matches`` with ``_jm``: whether ``condition`` over both records (the rows met,
    ``tables``, and the match's ``timestamp``) is true (true when it is ``None``)."""
    if condition is None:
        return matches.selectExpr("*", "true AS _jm")
    leaves = {"timestamp": Value(s=iso(timestamp))}
    frame, compiled, _ = _match_values(matches, job, records, [condition], leaves, tables)
    meets = f"coalesce({of_kind(compiled.value(condition), 'b')}, false) AS _jm"
    frame = compiled.apply(frame).selectExpr("*", meets)
    return frame.drop(*(c for c in frame.columns if c.startswith("_j") and c != "_jm"))


def _match_values(
    matches: DataFrame,
    job: Job,
    records: tuple[str, str],
    exprs: list[Any],
    extra: dict[str, Value] | None = None,
    tables: Tables = (),
) -> tuple[DataFrame, Compiled, Any]:
    """``matches`` with the variants of both records' fields ``exprs`` read (``input.field``
    names; and of the rows met, ``tables``), the compiler of expressions over them (and
    the ``extra`` leaves), and the variant of a name."""
    join = job.join
    assert join is not None
    variants = {join.left: "_jl", join.right: "_jr"}
    variants.update({name: f"_jt{k}" for k, (name, _) in enumerate(tables)})
    frame = matches.selectExpr(
        "*",
        f"try_parse_json({records[0]}) AS _jl",
        f"try_parse_json({records[1]}) AS _jr",
        *(f"try_parse_json({column}) AS _jt{k}" for k, (_, column) in enumerate(tables)),
    )

    def variant(key: str) -> str:
        side, name = key.split(".", 1)
        return variant_field(name, variants[side])

    names = [n for n in dict.fromkeys(k for e in exprs for k in references(e)) if "." in n]
    stages, leaves = variant_leaves("_jf", names, variant)
    leaves.update(extra or {})
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    return frame, Compiled("_je", leaves), variant


# ---------------------------------------------------------------------- windows
