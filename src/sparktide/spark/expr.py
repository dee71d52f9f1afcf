"""Job-file expressions (:mod:`sparktide.expr`) compiled to Spark SQL.

A value of an expression is dynamically typed (integer, float, string, boolean, null
or *other*), a Spark column statically. So each value is compiled to up to four SQL
expressions, one per kind, each non-null exactly when the value is of that kind: ``i``
(``BIGINT``), ``d`` (``DOUBLE``), ``s`` (``STRING``), ``b`` (``BOOLEAN``), plus
``null``, true when the value is null. A value that can never be of a kind has no
expression for it, so ``speed > 50`` compiles to comparisons of the integer and the
float reading of ``speed`` only. Every operator then follows the reference evaluator's
rules (:func:`sparktide.expr.evaluate`) kind by kind: ``try_add``/``try_subtract``/
``try_multiply`` (null when an integer result leaves 64 bits), ``try_divide``,
``try_mod`` (the remainder with the dividend's sign, as the reference computes it),
a float result beyond a double's range is null.

Every compound value is computed into columns of its own, one projection per depth
(:class:`Compiled`), so a child used several times by its parent is computed once and
the SQL text grows linearly with the expression.

Leaves:

- record fields (the filter, a projection without a window) are read from the record
  variant ``m`` right after parsing
  (:func:`sparktide.spark.projections.add_record_columns`), before ``m`` is dropped:
  the variant's own type says the kind (a ``DECIMAL`` is a float: Spark keeps ``21.0``
  as ``DECIMAL(2,0)``, and an integer beyond 64 bits as ``DECIMAL(p,0)``, which the
  reference reads as a float too);
- a window's columns come from the JSON text the window record is made of (the group
  values ``g<i>``, each aggregate's final text), read back with ``try_parse_json``; the
  bounds are their ISO text;
- a join's match (:func:`sparktide.spark.outputs.matches.join_projection`) reads
  ``<input>.<field>`` from each side's record text, parsed back with
  ``try_parse_json``, and ``timestamp`` as its ISO text.

``DATEDIFF(unit, start, end)`` reads the text kind of its arguments as instants
(:func:`sparktide.spark.inputs.sqlvalues.instant_of`, the reference reader's verdicts) and counts
unit boundaries with integer floor division (``x - pmod(x, unit)) div unit``): no
floating point touches a duration.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import DataFrame

from sparktide.expr import desugar, nodes, references
from sparktide.spark.exprfunctions import (
    MAKE_TIMES,
    TIME_ARGUMENT,
    cast_value,
    composite_failure,
    datediff_calendar,
    floor_div,
    scalar,
)
from sparktide.spark.exprrecords import record_access_length, record_access_variant, variant_kinds
from sparktide.spark.exprvalues import (
    Value,
    both,
    finite,
    first_error,
    number,
    of_kind,
)
from sparktide.spark.inputs.sqlvalues import instant_of
from sparktide.spark.sql import iso, sql_string

__all__ = [
    "Compiled",
    "Value",
    "json_of",
    "of_kind",
    "record_field_names",
    "scalar_json_of",
    "variant_leaves",
]

#: The leaves of a row rather than of its record: ``System.Timestamp()``, ``System.Input()``.
_ROW_LEAVES = (nodes.SYSTEM_TIMESTAMP.key, nodes.EVENT_INPUT.key)

_SQL_OP = {"=": "=", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_number = number
_finite = finite
_both = both


def record_field_names(exprs: list[Any]) -> list[str]:
    """The record's fields ``exprs`` read, once each in order: not ``System.Timestamp()``
    or ``System.Input()``, which are the row's, not the record's."""
    names = (n for e in exprs for n in references(e) if n not in _ROW_LEAVES)
    return list(dict.fromkeys(names))


def json_of(value: Value) -> str:
    """JSON text of a computed value (``'null'`` for null)."""
    cases = []
    if value.i:
        cases.append(f"WHEN {value.i} IS NOT NULL THEN CAST({value.i} AS STRING)")
    if value.d:
        cases.append(f"WHEN {value.d} IS NOT NULL THEN CAST({value.d} AS STRING)")
    if value.s:
        text = f"to_json(array({value.s}))"
        cases.append(f"WHEN {value.s} IS NOT NULL THEN substr({text}, 2, length({text}) - 2)")
    if value.b:
        cases.append(
            f"WHEN {value.b} IS NOT NULL THEN CASE WHEN {value.b} THEN 'true' ELSE 'false' END"
        )
    if value.v:  # an array or object a function found (scalars are the kinds above)
        composite = f"schema_of_variant({value.v}) RLIKE '^(OBJECT|ARRAY)'"
        cases.append(f"WHEN {composite} THEN to_json({value.v})")
    if not cases:
        return "'null'"
    return f"CASE {' '.join(cases)} ELSE 'null' END"


def scalar_json_of(value: Value) -> str:
    """JSON text of a computed value with an array or object as ``'null'``: what an
    aggregate of an expression reads and what a partition key is made of (the
    reference's ``is_other`` values are null there)."""
    return json_of(replace(value, v=None))


@dataclass
class Compiled:
    """Projections that add the columns of compiled expressions to a frame.

    Parameters
    ----------
    prefix
        Prefix of the columns made (unique per use).
    leaves
        The value of each column name an expression may read.
    """

    prefix: str
    leaves: dict[str, Value]
    stages: list[list[str]] = field(default_factory=list)
    _ids: Any = field(default_factory=itertools.count)

    def _keep(self, value: Value, level: int) -> Value:
        """Compute ``value`` into columns at projection ``level``; return their names."""
        while len(self.stages) < level:
            self.stages.append([])
        n = next(self._ids)
        names: dict[str, str | None] = {}
        for kind, sql in value.parts().items():
            name = f"{self.prefix}{n}_{kind}"
            self.stages[level - 1].append(f"{sql} AS {name}")
            names[kind] = name
        null = _null_of(names)
        if value.explicit_null:
            null = f"{self.prefix}{n}_n"
            self.stages[level - 1].append(f"({value.null}) AS {null}")
        err = None
        if value.err:
            err = f"{self.prefix}{n}_e"
            self.stages[level - 1].append(f"{value.err} AS {err}")
        v = None
        if value.v:
            v = f"{self.prefix}{n}_v"
            self.stages[level - 1].append(f"{value.v} AS {v}")
        return Value(level=level, null=null, err=err, v=v, **names)

    def value(self, expr: nodes.Expr) -> Value:
        """The value of ``expr`` (its parts may name columns of :attr:`stages`)."""
        return self._value(desugar(expr))

    def _value(self, expr: nodes.Expr) -> Value:
        if isinstance(expr, nodes.Ref):
            return self.leaves[expr.key]
        if isinstance(expr, nodes.Lit):
            return _literal(expr.value)
        if isinstance(expr, nodes.DateDiff):
            return self._datediff(expr)
        if isinstance(expr, nodes.Func):
            return self._func(expr)
        if isinstance(expr, nodes.Cast) and expr.type in nodes.COMPOSITE_TYPES:
            return self._composite_cast(expr)
        if isinstance(expr, nodes.Cast):
            operand = self._value(expr.operand)
            made, failure = cast_value(operand, expr.type)
            err = None if expr.safe else failure
            made = Value(**made.parts(), err=first_error(operand, Value(err=err)))
            if expr.type == "datetime":
                return self._as_text(self._made(made, operand.level))
            return self._made(made, operand.level)
        if isinstance(expr, nodes.Case):
            return self._case(expr)
        if isinstance(expr, nodes.Unary):
            operand = self._value(expr.operand)
            if expr.op == "NOT":
                made = Value(b=f"(NOT {operand.b})" if operand.b else None)
            else:
                made = Value(
                    i=f"try_subtract(CAST(0 AS BIGINT), {operand.i})" if operand.i else None,
                    d=f"(- {operand.d})" if operand.d else None,
                )
            return self._made(made, operand.level, operand)
        if isinstance(expr, nodes.IsNull) and expr.missing:  # (a field: its variant leaf)
            operand = self._value(expr.operand)
            assert operand.v is not None, "IS MISSING reads a record field's variant"
            made = Value(b=f"({operand.v} IS {'NOT ' if expr.negated else ''}NULL)")
            return self._made(made, operand.level, operand)
        if isinstance(expr, nodes.IsNull):
            operand = self._value(expr.operand)
            return self._made(Value(b=operand.null), operand.level, operand)
        if isinstance(expr, nodes.Like):
            operand = self._value(expr.operand)
            pattern = sql_string(expr.pattern.replace("\\", "\\\\"))
            made = Value(b=f"({operand.s} LIKE {pattern})" if operand.s else None)
            return self._made(made, operand.level, operand)
        assert isinstance(expr, nodes.Binary)
        a, b = self._value(expr.left), self._value(expr.right)
        level = max(a.level, b.level)
        if expr.op in ("AND", "OR"):
            made = Value(b=f"({of_kind(a, 'b')} {expr.op} {of_kind(b, 'b')})")
        elif expr.op in nodes.COMPARISONS:
            made = _compare(expr.op, a, b)
        else:
            assert expr.op in nodes.ARITHMETIC
            made = _arith(expr.op, a, b)
        return self._made(made, level, a, b)

    def _datediff(self, expr: nodes.DateDiff) -> Value:
        """``DATEDIFF``: the instants of both texts (each computed once, into a column of
        its own), then the difference of their floor divisions by the unit."""
        start, end = self._value(expr.start), self._value(expr.end)
        err = first_error(start, end)
        if not (start.s and end.s):  # never a text: always null
            return self._made(Value(err=err), max(start.level, end.level))
        a = self._made(Value(i=instant_of(start.s)), start.level)
        b = self._made(Value(i=instant_of(end.s)), end.level)
        assert a.i and b.i
        if expr.unit in nodes.CALENDAR_UNITS:
            made = Value(i=datediff_calendar(expr.unit, a.i, b.i), err=err)
        else:
            unit = expr.micros
            made = Value(i=f"({floor_div(b.i, unit)} - {floor_div(a.i, unit)})", err=err)
        return self._made(made, max(a.level, b.level))

    def _func(self, expr: nodes.Func) -> Value:
        """A scalar function: its arguments, the instant of its time argument (computed
        into a column of its own), then :func:`~sparktide.spark.exprfunctions.scalar`."""
        args = [self._value(a) for a in expr.args]
        level = max((a.level for a in args), default=0)
        if expr.name in nodes.ACCESS_FUNCTIONS:
            return self._access(expr, args, level)
        instant = None
        at = TIME_ARGUMENT.get(expr.name)
        if at is not None and args[at].s:
            kept = self._made(Value(i=instant_of(args[at].s)), args[at].level)
            instant, level = kept.i, max(level, kept.level)
        made = scalar(expr, args, instant)
        made = Value(**made.parts(), err=first_error(*args))
        if expr.name in MAKE_TIMES:
            return self._as_text(self._made(made, level))
        return self._made(made, level)

    def _access(self, expr: nodes.Func, args: list[Value], level: int) -> Value:
        """A record or array function (:mod:`sparktide.spark.exprrecords`): the variant
        it finds in a column, its ``schema_of_variant`` in the next, then its kinds."""
        err = first_error(*args)
        if expr.name == "GETARRAYLENGTH":
            return self._made(Value(**record_access_length(args[0]).parts(), err=err), level)
        found = record_access_variant(expr, args)
        if found is None:
            return self._made(Value(err=err), level)
        n = next(self._ids)
        v, k = f"{self.prefix}{n}_fv", f"{self.prefix}{n}_fk"
        while len(self.stages) < level + 3:
            self.stages.append([])
        self.stages[level].append(f"{found} AS {v}")
        self.stages[level + 1].append(f"schema_of_variant({v}) AS {k}")
        kinds = variant_kinds(v, k)
        null = kinds.pop("n")
        return self._keep(Value(**kinds, null=null, err=err, explicit_null=True, v=v), level + 3)

    def _as_text(self, instant: Value) -> Value:
        """An instant (in a column) as ISO text."""
        if not instant.i:
            return instant
        return self._made(Value(s=iso(instant.i), err=instant.err), instant.level)

    def _case(self, expr: nodes.Case) -> Value:
        """``CASE``: each kind's value from the first true condition's result; its
        nullness kept apart (a result may be an array or object); a failed ``CAST``
        counts in the conditions evaluated and the branch taken only."""
        conditions = [self._value(c) for c, _ in expr.whens]
        results = [self._value(r) for _, r in expr.whens]
        default = self._value(expr.default) if expr.default is not None else Value(null="true")
        every = [*conditions, *results, default]
        level = max(v.level for v in every)
        truths = [f"coalesce({of_kind(c, 'b')}, false)" if c.b else "false" for c in conditions]
        parts = {}
        for kind in ("i", "d", "s", "b"):
            if any(getattr(v, kind) for v in [*results, default]):
                whens = " ".join(
                    f"WHEN {t} THEN {of_kind(r, kind)}"
                    for t, r in zip(truths, results, strict=True)
                )
                parts[kind] = f"CASE {whens} ELSE {of_kind(default, kind)} END"
        null_whens = " ".join(
            f"WHEN {t} THEN {r.null}" for t, r in zip(truths, results, strict=True)
        )
        null = f"CASE {null_whens} ELSE {default.null} END"
        err = default.err or "CAST(NULL AS STRING)"
        if any(v.err for v in every):
            for c, t, r in reversed(list(zip(conditions, truths, results, strict=True))):
                taken = f"CASE WHEN {t} THEN {r.err or 'CAST(NULL AS STRING)'} ELSE {err} END"
                err = f"coalesce({c.err}, {taken})" if c.err else taken
        else:
            err = None
        v = None
        if any(r.v for r in [*results, default]):
            none = "CAST(NULL AS VARIANT)"
            v_whens = " ".join(
                f"WHEN {t} THEN {r.v or none}" for t, r in zip(truths, results, strict=True)
            )
            v = f"CASE {v_whens} ELSE {default.v or none} END"
        made = Value(**parts, null=null, err=err, explicit_null=True, v=v)
        return self._keep(made, level + 1)

    def _composite_cast(self, expr: nodes.Cast) -> Value:
        """``CAST(x AS record)`` / ``AS array``: the variant when it is an object (an
        array), as :func:`sparktide.expr.casts.cast` (semantics §11.12)."""
        operand = self._value(expr.operand)
        shape = "OBJECT" if expr.type == "record" else "ARRAY"
        v = None
        if operand.v:
            v = f"CASE WHEN schema_of_variant({operand.v}) LIKE '{shape}%' THEN {operand.v} END"
        failure = None
        if not expr.safe:
            failure = composite_failure(operand, v, expr.type)
        err = first_error(operand, Value(err=failure))
        made = Value(null=f"({v} IS NULL)" if v else "true", explicit_null=True, v=v, err=err)
        return self._keep(made, operand.level + 1)

    def _made(self, value: Value, child_level: int, *children: Value) -> Value:
        err = value.err or first_error(*children)
        if not value.parts():
            if err:  # null, but the CAST that failed on the way still counts
                return self._keep(Value(b="CAST(NULL AS BOOLEAN)", err=err), child_level + 1)
            return Value(null="true")
        return self._keep(Value(**value.parts(), err=err), child_level + 1)

    def apply(self, frame: DataFrame) -> DataFrame:
        """``frame`` with every column of :attr:`stages` added."""
        for stage in self.stages:
            if stage:
                frame = frame.selectExpr("*", *stage)
        return frame


def _null_of(names: dict[str, str | None]) -> str:
    parts = [f"{name} IS NULL" for name in names.values() if name]
    return "(" + " AND ".join(parts) + ")" if parts else "true"


def _literal(value: Any) -> Value:
    if value is None:
        return Value(null="true")
    if isinstance(value, bool):
        return Value(b="true" if value else "false")
    if isinstance(value, int):
        if nodes.INT64[0] <= value <= nodes.INT64[1]:
            return Value(i=f"CAST({value} AS BIGINT)")
        return Value(d=f"CAST('{float(value)!r}' AS DOUBLE)")
    if isinstance(value, float):
        return Value(d=f"CAST('{value!r}' AS DOUBLE)")
    return Value(s=sql_string(value))


def _compare(op: str, a: Value, b: Value) -> Value:
    sql_op = _SQL_OP[op]
    cases = []
    if a.i and b.i:
        cases.append(f"WHEN {_both(a.i, b.i)} THEN {a.i} {sql_op} {b.i}")
    na, nb = _number(a), _number(b)
    if na and nb and (a.d or b.d):
        cases.append(f"WHEN {_both(na, nb)} THEN {na} {sql_op} {nb}")
    for kind in ("s", "b"):
        x, y = getattr(a, kind), getattr(b, kind)
        if x and y:
            cases.append(f"WHEN {_both(x, y)} THEN {x} {sql_op} {y}")
    return Value(b=f"CASE {' '.join(cases)} END" if cases else None)


def _arith(op: str, a: Value, b: Value) -> Value:
    na, nb = _number(a), _number(b)
    if not (na and nb):
        return Value()
    ints = bool(a.i and b.i)
    both_int = _both(a.i, b.i) if ints else "false"  # type: ignore[arg-type]
    if op == "/":
        return Value(d=_finite(f"try_divide({na}, {nb})"))
    if op == "%":
        i = f"try_mod({a.i}, {b.i})" if ints else None
        d = _finite(f"try_mod({na}, {nb})")
    else:
        function = {"+": "try_add", "-": "try_subtract", "*": "try_multiply"}[op]
        i = f"{function}({a.i}, {b.i})" if ints else None
        d = _finite(f"({na} {op} {nb})")
    if not (a.d or b.d):
        return Value(i=i)
    if ints:
        d = f"CASE WHEN {both_int} THEN NULL ELSE {d} END"
    return Value(i=i, d=d)


# ---------------------------------------------------------------------- record fields
def variant_leaves(
    prefix: str, names: list[str], variant: Any
) -> tuple[list[list[str]], dict[str, Value]]:
    """Two projections reading each name's value (``variant(name)``: its variant SQL)
    into per-kind columns, and the leaves naming them."""
    first, second = [], []
    leaves = {}
    for j, name in enumerate(names):
        v, k = f"{prefix}{j}_v", f"{prefix}{j}_k"
        first.append(f"{variant(name)} AS {v}")
        first.append(f"schema_of_variant({variant(name)}) AS {k}")
        parts = variant_kinds(v, k)
        for kind, sql in parts.items():
            second.append(f"{sql} AS {prefix}{j}_{kind}")
        leaves[name] = Value(
            i=f"{prefix}{j}_i",
            d=f"{prefix}{j}_d",
            s=f"{prefix}{j}_s",
            b=f"{prefix}{j}_b",
            null=f"{prefix}{j}_n",
            v=v,
        )
    return [first, second], leaves
