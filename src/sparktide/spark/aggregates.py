"""Window aggregates as mergeable partial states in Spark SQL.

Each aggregate of the job becomes partial columns (computed per micro-batch), merge
expressions (combining a batch's partials with the open windows carried in state) and a
final expression giving the value as JSON text, with the reference engine's null rules
(see ``docs/semantics.md``). Values are read from the record ``m`` (a variant object), so
their JSON types survive, into per-row input columns right after parsing.

An aggregate ``over (distinct ...)`` (semantics §13.4) wraps the plan of its function:
per row a struct of the system timestamp, the distinct columns' keys
(:func:`distinct_key`) and the function's own inputs; partials keep the set of those
structs, merged as ``count_distinct``'s are, and the final expression folds the set with
Spark's array functions into the columns the function's own final expression reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparktide.job import Aggregate
from sparktide.job.aggregates import NUMERIC_FUNCTIONS, ORDERED_FUNCTIONS, SPREAD_FUNCTIONS
from sparktide.spark.columns import RELEASE_ORDER, SYSTEM_TIME
from sparktide.spark.expr import scalar_json_of
from sparktide.spark.exprvalues import Value, of_kind
from sparktide.spark.ordered import ordered_plan
from sparktide.spark.sql import field

__all__ = [
    "INTEGRAL_FLOAT",
    "AggregatePlan",
    "derived_column",
    "derived_variant",
    "distinct_combinations_plan",
    "distinct_key",
    "group_inputs",
    "group_key_column",
    "json_text",
    "plan_aggregates",
    "present",
]

_INTS = "('TINYINT', 'SMALLINT', 'INT', 'BIGINT')"
_MAX_DOUBLE = "1.7976931348623157E308D"
ORDER = ", ".join(RELEASE_ORDER)
#: Aggregates planned by :mod:`sparktide.spark.ordered`.
ORDERED = ("collect", *ORDERED_FUNCTIONS, *SPREAD_FUNCTIONS)


@dataclass(frozen=True)
class AggregatePlan:
    """SQL for one aggregate: per-row inputs, partial, merge and final expressions.

    Attributes
    ----------
    inputs
        ``(column, expression over the record m)`` pairs: the typed values the partial
        aggregates read, computed per row as soon as the record is parsed, so that the
        record variant ``m`` (the widest column) never travels through the policy's
        shuffle and sort (``docs/design.md``).
    partial
        ``(column, aggregate expression over rows)`` pairs, reading ``inputs`` (and
        ``s, a, file, line`` for the order-sensitive ones).
    merge
        ``(column, aggregate expression over partial rows)`` pairs, same columns.
    final
        Expression of the value as JSON text over the merged columns.
    """

    inputs: tuple[tuple[str, str], ...]
    partial: tuple[tuple[str, str], ...]
    merge: tuple[tuple[str, str], ...]
    final: str


#: A variant number Spark parsed from a JSON *float* token with an integral value: it keeps
#: ``21.0`` as ``DECIMAL(2,0)`` and writes it back as ``21`` (an integer token ``21`` is a
#: ``BIGINT`` up to 18 digits), where the reference engine reads a float and writes 21.0.
INTEGRAL_FLOAT = "'^DECIMAL[(]([1-9]|1[0-8]),0[)]$'"


def json_text(v: str, *, members: bool = False) -> str:
    """JSON text of the variant ``v`` as the reference engine writes the value: floats
    stay floats (``21.0``, not ``21``; see :data:`INTEGRAL_FLOAT`) at the top level and,
    with ``members`` (an aggregate's value: a match's input record whole, semantics
    §7.11), in an object's or an array's own members."""
    schema = f"schema_of_variant({v})"
    if not members:
        return (
            f"CASE WHEN {schema} RLIKE {INTEGRAL_FLOAT} THEN "
            f"CAST(try_variant_get({v}, '$', 'double') AS STRING) ELSE to_json({v}) END"
        )
    member = (
        f"CASE WHEN schema_of_variant(x) RLIKE {INTEGRAL_FLOAT} THEN "
        "CAST(try_variant_get(x, '$', 'double') AS VARIANT) ELSE x END"
    )
    return (
        f"CASE WHEN {schema} RLIKE {INTEGRAL_FLOAT} THEN "
        f"CAST(try_variant_get({v}, '$', 'double') AS STRING) "
        f"WHEN {schema} LIKE 'OBJECT%' THEN to_json(transform_values("
        f"variant_get({v}, '$', 'map<string,variant>'), (k, x) -> {member})) "
        f"WHEN {schema} LIKE 'ARRAY%' THEN to_json(transform("
        f"variant_get({v}, '$', 'array<variant>'), x -> {member})) "
        f"ELSE to_json({v}) END"
    )


def distinct_key(v: str) -> str:
    """What ``count_distinct`` tells values apart by, as the reference engine's set does:
    equal numbers are one value whatever their JSON form (``3``, ``3.0``, ``3e0``) —
    integers by their exact digits, other numbers by their double (integral ones as the
    integer they equal) — and anything else by its JSON text (``true`` is not ``1``)."""
    schema = f"schema_of_variant({v})"
    double = f"try_variant_get({v}, '$', 'double')"
    return (
        f"CASE WHEN {schema} RLIKE '^(TINYINT|SMALLINT|INT|BIGINT|DECIMAL[(][0-9]+,0[)])$' "
        f"THEN CAST(try_variant_get({v}, '$', 'decimal(38,0)') AS STRING) "
        f"WHEN {schema} RLIKE '^(FLOAT|DOUBLE|DECIMAL.*)$' THEN "
        # doubles of 2^52 and more are all integral; below, compare with the integer part
        f"CASE WHEN abs({double}) >= 4.5e15 THEN coalesce(CAST(try_cast({double} AS "
        f"DECIMAL(38,0)) AS STRING), CAST({double} AS STRING)) "
        f"WHEN {double} = CAST(CAST({double} AS BIGINT) AS DOUBLE) "
        f"THEN CAST(CAST({double} AS BIGINT) AS STRING) "
        f"ELSE CAST({double} AS STRING) END "
        f"ELSE to_json({v}) END"
    )


def present(v: str) -> str:
    """SQL: the variant ``v`` holds a value (not missing, not JSON null)."""
    return f"({v} IS NOT NULL AND schema_of_variant({v}) <> 'VOID')"


def _value(v: str) -> tuple[str, str, str]:
    """The variant an aggregate reads (SQL), whether it holds a value, its JSON text."""
    return v, present(v), json_text(v, members=True)


#: The column of the variant an aggregate of an expression reads: its value, computed
#: right after parsing (:func:`sparktide.spark.projections.add_record_columns`).
DERIVED = "dv"


def derived_column(index: int) -> str:
    """The variant column of the aggregate at ``index`` when it aggregates an expression."""
    return f"{DERIVED}{index}"


def derived_variant(value: Value, function: str) -> str:
    """The variant an aggregate of an expression reads, as the reference's
    :func:`sparktide.core.aggregates.aggregated_value` gives it: the value's JSON
    (an array or object is null), and for ``sum``/``avg`` numbers only."""
    if function == "count_if":  # true where the condition is true, else null
        return f"CASE WHEN coalesce({of_kind(value, 'b')}, false) THEN parse_json('true') END"
    if function in NUMERIC_FUNCTIONS:
        cases = []
        if value.i:
            cases.append(f"WHEN {value.i} IS NOT NULL THEN CAST({value.i} AS STRING)")
        if value.d:
            cases.append(f"WHEN {value.d} IS NOT NULL THEN CAST({value.d} AS STRING)")
        text = f"CASE {' '.join(cases)} END" if cases else "CAST(NULL AS STRING)"
        return f"parse_json({text})"
    return f"parse_json({scalar_json_of(value)})"


#: The column of a computed grouping column's JSON text, computed right after parsing
#: (:func:`sparktide.spark.projections.add_record_columns`).
GROUP_KEY = "gk"


def group_key_column(index: int) -> str:
    """The JSON text column of the grouping column at ``index`` when it is computed."""
    return f"{GROUP_KEY}{index}"


def group_inputs(keys: tuple[tuple[str, Any], ...]) -> list[tuple[str, str]]:
    """``(g<i>, JSON text of grouping column i)`` per row: ``'null'`` when missing
    (``keys``: :attr:`sparktide.job.Window.group_keys`; a computed column's text is
    :func:`group_key_column`'s)."""
    return [
        (f"g{i}", f"coalesce({json_text(field(name))}, 'null')")
        if expression is None
        else (f"g{i}", group_key_column(i))
        for i, (name, expression) in enumerate(keys)
    ]


def plan_aggregates(aggregates: tuple[Aggregate, ...]) -> list[AggregatePlan]:
    """Plans for the job's aggregates, in output order (inputs ``p<i>_in*``, partial
    columns ``p<i>_*``)."""
    plans = []
    for i, aggregate in enumerate(aggregates):
        p = f"p{i}"
        if aggregate.distinct is not None:
            plans.append(distinct_combinations_plan(p, aggregate))
            continue
        if aggregate.counts_rows:  # count(*)
            plans.append(_count_rows(p))
            continue
        if aggregate.function in ORDERED:
            v = None
            if aggregate.expression is not None:
                v = derived_column(i)
            elif aggregate.column is not None:
                v = field(aggregate.column)
            plans.append(AggregatePlan(*ordered_plan(p, aggregate, v)))
            continue
        builder = _BUILDERS.get(aggregate.function)
        if builder is None:  # pragma: no cover - the job grammar allows nothing else
            raise ValueError(f"unknown aggregate {aggregate.function!r}")
        v = derived_column(i) if aggregate.expression is not None else field(aggregate.column)
        plans.append(builder(p, aggregate.function, v))
    return plans


def _count_rows(p: str) -> AggregatePlan:
    """``count(*)``: the rows of the window."""
    return AggregatePlan(
        (),
        ((f"{p}_n", "count(*)"),),
        ((f"{p}_n", f"sum({p}_n)"),),
        f"CAST({p}_n AS STRING)",
    )


def _count(p: str, function: str, column: str) -> AggregatePlan:
    """``count(column)``: the rows where the column holds a value."""
    _, notnull, _ = _value(column)
    return AggregatePlan(
        ((f"{p}_in", notnull),),
        ((f"{p}_n", f"count_if({p}_in)"),),
        ((f"{p}_n", f"sum({p}_n)"),),
        f"CAST({p}_n AS STRING)",
    )


def _sum_or_avg(p: str, function: str, column: str) -> AggregatePlan:
    """``sum`` and ``avg``: integers summed exactly, floats as doubles; the sum is an
    integer while no float was added."""
    v, notnull, _ = _value(column)
    is_int = f"schema_of_variant({v}) IN {_INTS}"
    inputs = (
        (
            f"{p}_ini",
            f"CASE WHEN {notnull} AND {is_int} THEN "
            f"CAST(try_variant_get({v}, '$', 'bigint') AS DECIMAL(38,0)) END",
        ),
        (
            f"{p}_ind",
            f"CASE WHEN {notnull} AND NOT {is_int} THEN try_variant_get({v}, '$', 'double') END",
        ),
        (f"{p}_inn", notnull),
        (f"{p}_inf", f"{notnull} AND NOT {is_int}"),
    )
    partial = (
        (f"{p}_si", f"sum({p}_ini)"),
        (f"{p}_sd", f"sum({p}_ind)"),
        (f"{p}_nn", f"count_if({p}_inn)"),
        (f"{p}_nf", f"count_if({p}_inf)"),
    )
    merge = tuple((name, f"sum({name})") for name, _ in partial)
    total = f"(CAST(coalesce({p}_si, 0) AS DOUBLE) + coalesce({p}_sd, 0D))"
    # a float sum beyond a double's range is null (JSON has no infinity; NaN
    # compares above every number in Spark, so this also catches it)
    overflow = f"NOT ({total} BETWEEN -{_MAX_DOUBLE} AND {_MAX_DOUBLE})"
    if function == "sum":
        final = (
            f"CASE WHEN {p}_nn = 0 THEN 'null' "
            f"WHEN {p}_nf = 0 THEN CAST({p}_si AS STRING) "
            f"WHEN {overflow} THEN 'null' "
            f"ELSE CAST({total} AS STRING) END"
        )
    else:
        final = (
            f"CASE WHEN {p}_nn = 0 OR {overflow} THEN 'null' "
            f"ELSE CAST({total} / {p}_nn AS STRING) END"
        )
    return AggregatePlan(inputs, partial, merge, final)


def _min_or_max(p: str, function: str, column: str) -> AggregatePlan:
    """``min`` and ``max``: numbers (and booleans) before text before anything else."""
    v, notnull, js = _value(column)
    schema = f"schema_of_variant({v})"
    rank = (
        f"CASE WHEN {schema} RLIKE '^(TINYINT|SMALLINT|INT|BIGINT|FLOAT|DOUBLE|DECIMAL.*"
        f"|BOOLEAN)$' THEN 0 WHEN {schema} = 'STRING' THEN 1 ELSE 2 END"
    )
    number = (
        f"CASE WHEN {schema} = 'BOOLEAN' THEN CASE WHEN try_variant_get({v}, '$', "
        f"'boolean') THEN 1D ELSE 0D END ELSE try_variant_get({v}, '$', 'double') END"
    )
    text = f"CASE WHEN {schema} = 'STRING' THEN try_variant_get({v}, '$', 'string') ELSE {js} END"
    item = (
        f"CASE WHEN {notnull} THEN struct({rank} AS r, {number} AS n, {text} AS t, {js} AS j) END"
    )
    return AggregatePlan(
        ((f"{p}_in", item),),
        ((p, f"{function}({p}_in)"),),
        ((p, f"{function}({p})"),),
        f"coalesce({p}.j, 'null')",
    )


def _first_or_last(p: str, function: str, column: str) -> AggregatePlan:
    """``first`` and ``last``: the value of the first (last) row in window order."""
    _, notnull, js = _value(column)
    item = f"struct({ORDER}, {p}_in AS j)"
    op = "min" if function == "first" else "max"
    return AggregatePlan(
        ((f"{p}_in", f"coalesce(CASE WHEN {notnull} THEN {js} END, 'null')"),),
        ((p, f"{op}({item})"),),
        ((p, f"{op}({p})"),),
        f"{p}.j",
    )


def _collect_list(p: str, function: str, column: str) -> AggregatePlan:
    """``collect_list``: the values in window order."""
    _, notnull, js = _value(column)
    item = f"CASE WHEN {p}_in IS NOT NULL THEN struct({ORDER}, {p}_in AS j) END"
    return AggregatePlan(
        ((f"{p}_in", f"CASE WHEN {notnull} THEN {js} END"),),
        ((p, f"collect_list({item})"),),
        ((p, f"flatten(collect_list({p}))"),),
        f"concat('[', array_join(transform(array_sort({p}), x -> x.j), ','), ']')",
    )


def _count_distinct(p: str, function: str, column: str) -> AggregatePlan:
    """``count_distinct``: the distinct values (:func:`distinct_key`)."""
    v, notnull, _ = _value(column)
    return AggregatePlan(
        ((f"{p}_in", f"CASE WHEN {notnull} THEN {distinct_key(v)} END"),),
        ((p, f"collect_set({p}_in)"),),
        ((p, f"array_distinct(flatten(collect_list({p})))"),),
        f"CAST(size({p}) AS STRING)",
    )


#: The plan of each aggregate function over a column.
_BUILDERS: dict[str, Callable[[str, str, str], AggregatePlan]] = {
    "count": _count,
    "count_if": _count,  # (over the derived value: true, or null, projections.py)
    "sum": _sum_or_avg,
    "avg": _sum_or_avg,
    "min": _min_or_max,
    "max": _min_or_max,
    "first": _first_or_last,
    "last": _first_or_last,
    "collect_list": _collect_list,
    "count_distinct": _count_distinct,
}


def distinct_combinations_plan(p: str, aggregate: Aggregate) -> AggregatePlan:
    """An aggregate ``over (distinct ...)``: the set of (system timestamp, distinct keys,
    the function's inputs) structs, and the function's final over the set."""
    assert aggregate.distinct is not None
    keys = tuple(
        (f"{p}_k{j}", f"coalesce({distinct_key(field(column))}, 'null')")
        for j, column in enumerate(aggregate.distinct)
    )
    if aggregate.counts_rows:
        base = AggregatePlan((), (), (), "")
    else:
        base = _BUILDERS[aggregate.function](p, aggregate.function, field(aggregate.column))
    inputs = (*keys, *base.inputs)
    item = f"struct({', '.join([SYSTEM_TIME, *(name for name, _ in inputs)])})"
    elements = f"array_sort({p})"  # (a float sum adds them in one order)
    function = aggregate.function
    if aggregate.counts_rows:
        final = f"CAST(size({p}) AS STRING)"
    elif function == "count":  # (an integer and a float of one number: two, as in sums)
        v = field(aggregate.column)
        is_int = f"schema_of_variant({v}) IN {_INTS}"
        inputs = (*inputs, (f"{p}_inf", f"coalesce({present(v)} AND NOT {is_int}, false)"))
        item = f"struct({', '.join([SYSTEM_TIME, *(name for name, _ in inputs)])})"
        final = f"CAST(size(filter({p}, x -> x.{p}_in)) AS STRING)"
    elif function in ("min", "max"):
        final = f"coalesce(array_{function}(transform({p}, x -> x.{p}_in)).j, 'null')"
    else:  # sum, avg: the partial sums and counts the function's final reads
        folded = {
            f"{p}_si": f"aggregate({elements}, CAST(0 AS DECIMAL(38,0)), (a, x) -> "
            f"CAST(a + coalesce(x.{p}_ini, 0) AS DECIMAL(38,0)))",
            f"{p}_sd": f"aggregate({elements}, 0D, (a, x) -> a + coalesce(x.{p}_ind, 0D))",
            f"{p}_nn": f"size(filter({p}, x -> x.{p}_inn))",
            f"{p}_nf": f"size(filter({p}, x -> x.{p}_inf))",
        }
        pattern = re.compile(r"\b(" + "|".join(folded) + r")\b")
        final = pattern.sub(lambda m: f"({folded[m.group(1)]})", base.final)
    return AggregatePlan(
        inputs,
        ((p, f"collect_set({item})"),),
        ((p, f"array_distinct(flatten(collect_list({p})))"),),
        final,
    )
