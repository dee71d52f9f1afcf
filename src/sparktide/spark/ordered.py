"""The ordered and statistical aggregates in Spark SQL (semantics §6.12): ``collect``,
``topone``, ``collecttop``, ``topn``, ``percentile_cont``, ``percentile_disc``,
``stdev``, ``stdevp``, ``var``, ``varp``, ``bottomone``, ``bottomn``.

Restates :mod:`sparktide.core.ordered` with Spark's aggregate and higher-order
functions (no Python per event): each row's value travels as its JSON text with its
order keys ``(class, number, text)`` and its window order; ``topone``, ``collecttop`` and
``topn`` keep only their first ``n`` rows per partial (sorted by the same comparator at
every merge), the others every value. Sums of doubles are left folds (``aggregate``)
over the values sorted ascending, as the reference engine adds them, so the values are
equal bit for bit.
"""

from __future__ import annotations

from sparktide.job import Aggregate
from sparktide.spark.columns import RECORD, RELEASE_ORDER
from sparktide.spark.sql import field, field_at

__all__ = [
    "order_rank",
    "ordered_plan",
    "percentile_cont_plan",
    "percentile_disc_plan",
    "spread_plan",
]

_NUMBER_TYPES = "'^(TINYINT|SMALLINT|INT|BIGINT|FLOAT|DOUBLE|DECIMAL.*)$'"
_MAX_DOUBLE = "1.7976931348623157E308D"
ORDER = ", ".join(RELEASE_ORDER)


def _present(v: str) -> str:
    return f"({v} IS NOT NULL AND schema_of_variant({v}) <> 'VOID')"


def _is_number(v: str) -> str:
    return f"({_present(v)} AND schema_of_variant({v}) RLIKE {_NUMBER_TYPES})"


def _double(v: str) -> str:
    """The number ``v`` holds as a double, else null."""
    return f"CASE WHEN {_is_number(v)} THEN try_variant_get({v}, '$', 'double') END"


def order_rank(v: str) -> str:
    """SQL of ``order_rank``: the order key ``(c, n, t)`` of the variant ``v``."""
    schema = f"schema_of_variant({v})"
    return (
        f"named_struct('c', CASE WHEN NOT {_present(v)} THEN 0 "
        f"WHEN {schema} RLIKE {_NUMBER_TYPES} THEN 1 WHEN {schema} = 'STRING' THEN 2 "
        f"ELSE 3 END, "
        f"'n', coalesce(CASE WHEN {_is_number(v)} THEN try_variant_get({v}, '$', 'double') "
        f"END, 0D), "
        f"'t', coalesce(CASE WHEN {_present(v)} AND {schema} = 'STRING' THEN "
        f"try_variant_get({v}, '$', 'string') END, ''))"
    )


def _let(name: str, value: str, body: str) -> str:
    """``body`` with ``name`` bound to ``value`` (computed once)."""
    return f"element_at(transform(array({value}), {name} -> {body}), 1)"


def _finite_text(x: str) -> str:
    """JSON text of the double ``x``: null beyond a double's range (JSON has no infinity)."""
    return f"CASE WHEN {x} BETWEEN -{_MAX_DOUBLE} AND {_MAX_DOUBLE} THEN CAST({x} AS STRING) END"


def _before(descending: list[bool], a: str, b: str) -> str:
    """SQL: item ``a`` comes strictly before item ``b`` by the order keys alone."""
    terms = []
    for i in range(len(descending) - 1, -1, -1):
        less = f"{a}.k{i} {'>' if descending[i] else '<'} {b}.k{i}"
        terms = [less] if not terms else [f"({less} OR ({a}.k{i} = {b}.k{i} AND {terms[0]}))"]
    return terms[0]


def _comparator(descending: list[bool], *, reverse: bool = False) -> str:
    """``array_sort``'s comparator: the order keys, then window order ``o`` (all of it
    reversed with ``reverse``)."""
    cases = []
    for i, desc in enumerate(descending):
        first, second = ("-1", "1") if desc == reverse else ("1", "-1")
        cases.append(f"WHEN l.k{i} < r.k{i} THEN {first} WHEN l.k{i} > r.k{i} THEN {second}")
    return (
        f"(l, r) -> CASE {' '.join(cases)} WHEN l.o < r.o THEN {'1' if reverse else '-1'} "
        f"WHEN l.o > r.o THEN {'-1' if reverse else '1'} ELSE 0 END"
    )


def ordered_plan(p: str, aggregate: Aggregate, v: str | None) -> tuple[tuple, tuple, tuple, str]:
    """``(inputs, partial, merge, final)`` of an ordered or statistical aggregate ``p``
    reading the variant ``v`` (``None``: the whole record)."""
    function = aggregate.function
    if function in ("stdev", "stdevp", "var", "varp"):
        assert v is not None
        return spread_plan(p, function, v)
    if function == "percentile_cont":
        return percentile_cont_plan(p, aggregate)
    if function == "percentile_disc":
        return percentile_disc_plan(p, aggregate)
    text = _record_text() if v is None else _json_text(v)
    if function == "collect":
        item = f"struct(struct({ORDER}) AS o, {p}_in AS j)"
        return (
            ((f"{p}_in", f"coalesce({text}, 'null')"),),
            ((p, f"collect_list({item})"),),
            ((p, f"flatten(collect_list({p}))"),),
            f"concat('[', array_join(transform(array_sort({p}), x -> x.j), ','), ']')",
        )
    return _top(p, aggregate, text)


def _record_text() -> str:
    """JSON text of the whole record ``m``, its top-level floats kept floats (as a
    released event's, :mod:`sparktide.spark.outputs.release`)."""
    from sparktide.spark.aggregates import INTEGRAL_FLOAT  # (no import cycle at load)

    return (
        f"to_json(transform_values(variant_get({RECORD}, '$', 'map<string,variant>'), "
        f"(k, v) -> CASE WHEN schema_of_variant(v) RLIKE {INTEGRAL_FLOAT} THEN "
        "CAST(try_variant_get(v, '$', 'double') AS VARIANT) ELSE v END))"
    )


def _json_text(v: str) -> str:
    from sparktide.spark.aggregates import json_text  # (no import cycle at load)

    return f"CASE WHEN {_present(v)} THEN {json_text(v, members=True)} END"


def _top(p: str, aggregate: Aggregate, text: str) -> tuple[tuple, tuple, tuple, str]:
    """``topone``, ``collecttop`` and ``topn``: the first ``n`` rows in the aggregate's
    order, kept sorted and cut at every partial and merge."""
    descending = [d for _, d in aggregate.order_by]
    function = aggregate.function
    one = function in ("topone", "bottomone")
    n = 1 if one else int(aggregate.argument)  # type: ignore[arg-type]
    inputs = [(f"{p}_in", f"coalesce({text}, 'null')")]
    keys = []
    for i, (column, _) in enumerate(aggregate.order_by):  # (with dots: inside records)
        inputs.append((f"{p}_k{i}", order_rank(field_at(column))))
        keys.append(f"{p}_k{i} AS k{i}")
    item = f"struct({', '.join(keys)}, struct({ORDER}) AS o, {p}_in AS j)"
    # (bottomone and bottomn keep the last n rows: the first n in the reverse order)
    cmp = _comparator(descending, reverse=function.startswith("bottom"))
    partial = f"slice(array_sort(collect_list({item}), {cmp}), 1, {n})"
    merge = f"slice(array_sort(flatten(collect_list({p})), {cmp}), 1, {n})"
    if one:
        final = f"CASE WHEN size({p}) = 0 THEN 'null' ELSE element_at({p}, 1).j END"
    elif function == "topn":
        final = f"concat('[', array_join(transform({p}, x -> x.j), ','), ']')"
    elif function == "bottomn":
        final = f"concat('[', array_join(transform(reverse({p}), x -> x.j), ','), ']')"
    else:
        rank = f"1 + size(filter({p}, y -> {_before(descending, 'y', 'x')}))"
        final = (
            f"concat('[', array_join(transform({p}, x -> concat('{{\"rank\":', "
            f"CAST({rank} AS STRING), ',\"value\":', x.j, '}}')), ','), ']')"
        )
    return tuple(inputs), ((p, partial),), ((p, merge),), final


def _values(p: str, v: str) -> tuple[tuple, tuple, tuple]:
    """Every number's double, kept: inputs, partial and merge."""
    return (
        ((f"{p}_in", _double(v)),),
        ((p, f"collect_list({p}_in)"),),
        ((p, f"flatten(collect_list({p}))"),),
    )


def spread_plan(p: str, function: str, v: str) -> tuple[tuple, tuple, tuple, str]:
    """``stdev``, ``stdevp``, ``var``, ``varp``: the two-pass formula over the values
    sorted ascending (``sparktide.core.ordered.spread``)."""
    sample = function in ("stdev", "var")
    total = "aggregate(vs, 0D, (a, x) -> a + x)"
    squares = "aggregate(vs, 0D, (a, x) -> a + (x - mu) * (x - mu))"
    divisor = "CAST(size(vs) - 1 AS DOUBLE)" if sample else "CAST(size(vs) AS DOUBLE)"
    variance = f"{squares} / {divisor}"
    value = f"sqrt({variance})" if function in ("stdev", "stdevp") else variance
    body = _let("mu", f"{total} / CAST(size(vs) AS DOUBLE)", _finite_text(value))
    least = 2 if sample else 1
    final = (
        f"CASE WHEN size({p}) < {least} THEN 'null' ELSE {_let('vs', f'array_sort({p})', body)} END"
    )
    return (*_values(p, v), f"coalesce({final}, 'null')")


def _fraction(aggregate: Aggregate) -> str:
    return f"{float(aggregate.argument)!r}D"  # type: ignore[arg-type]


def percentile_cont_plan(p: str, aggregate: Aggregate) -> tuple[tuple, tuple, tuple, str]:
    """``percentile_cont``: ``(c − rn)·v[f] + (rn − f)·v[c]`` at ``rn = p·(n−1)``."""
    column, descending = aggregate.order_by[0]
    sort = f"array_sort({p})" if not descending else f"reverse(array_sort({p}))"
    rn = f"{_fraction(aggregate)} * CAST(size(vs) - 1 AS DOUBLE)"
    at = "element_at(vs, CAST({} AS INT) + 1)"
    between = (
        f"(CAST(ceil(rn) AS DOUBLE) - rn) * {at.format('floor(rn)')} + "
        f"(rn - CAST(floor(rn) AS DOUBLE)) * {at.format('ceil(rn)')}"
    )
    body = _let(
        "rn",
        rn,
        f"CASE WHEN floor(rn) = ceil(rn) THEN CAST({at.format('floor(rn)')} AS STRING) "
        f"ELSE {_finite_text(between)} END",
    )
    final = f"CASE WHEN size({p}) = 0 THEN 'null' ELSE {_let('vs', sort, body)} END"
    return (*_values(p, field(column)), f"coalesce({final}, 'null')")


def percentile_disc_plan(p: str, aggregate: Aggregate) -> tuple[tuple, tuple, tuple, str]:
    """``percentile_disc``: the ``max(ceil(p·n), 1)``-th number in order, as written."""
    column, descending = aggregate.order_by[0]
    v = field(column)
    item = (
        f"CASE WHEN {p}_in IS NOT NULL THEN "
        f"struct({p}_n AS k0, struct({ORDER}) AS o, {p}_in AS j) END"
    )
    inputs = (
        (f"{p}_in", f"CASE WHEN {_is_number(v)} THEN {_json_text(v)} END"),
        (f"{p}_n", f"coalesce({_double(v)}, 0D)"),
    )
    index = f"greatest(CAST(ceil({_fraction(aggregate)} * CAST(size(vs) AS DOUBLE)) AS INT), 1)"
    body = f"element_at(vs, {index}).j"
    sort = f"array_sort({p}, {_comparator([descending])})"
    final = f"CASE WHEN size({p}) = 0 THEN 'null' ELSE {_let('vs', sort, body)} END"
    return (
        inputs,
        ((p, f"collect_list({item})"),),
        ((p, f"flatten(collect_list({p}))"),),
        final,
    )
