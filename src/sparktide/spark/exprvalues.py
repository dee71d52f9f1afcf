"""The SQL of one expression value, by kind (:class:`Value`), and helpers over it.

Split out of :mod:`sparktide.spark.expr` so that the functions
(:mod:`sparktide.spark.exprfunctions`) and the compiler share it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MAX_DOUBLE",
    "NULL_SQL",
    "Value",
    "both",
    "finite",
    "first_error",
    "is_other",
    "number",
    "of_kind",
    "text_of",
]

MAX_DOUBLE = "1.7976931348623157E308D"
NULL_SQL = {
    "i": "CAST(NULL AS BIGINT)",
    "d": "CAST(NULL AS DOUBLE)",
    "s": "CAST(NULL AS STRING)",
    "b": "CAST(NULL AS BOOLEAN)",
}


@dataclass(frozen=True)
class Value:
    """SQL of one expression value, by kind (``None``: never of that kind).

    ``null`` is true when the value is null (an *other* value, an array or object, is
    neither null nor of a kind); ``err``, when not ``None``, is SQL of the message of a
    ``CAST`` that failed on the way (``NULL`` when none did); ``explicit_null``: ``null``
    is not just "no kind holds a value" (a ``CASE`` may give an *other* value), so it is
    kept in a column of its own; ``v``: SQL of the value as a variant, for a value that
    may be an array or object (a field, what a record or array function finds, a
    ``CASE`` choosing one), ``None`` for the others.
    """

    i: str | None = None
    d: str | None = None
    s: str | None = None
    b: str | None = None
    null: str = "false"
    level: int = 0  # the projection that computes it (0: leaves)
    err: str | None = None
    explicit_null: bool = False
    v: str | None = None  # its variant, when it may be an array or object a function reads

    def parts(self) -> dict[str, str]:
        """The kinds it can have, with their SQL."""
        return {k: v for k, v in (("i", self.i), ("d", self.d), ("s", self.s), ("b", self.b)) if v}


def of_kind(value: Value, kind: str) -> str:
    """SQL of the value's ``kind`` part (a typed ``NULL`` if it never is of that kind)."""
    return getattr(value, kind) or NULL_SQL[kind]


def number(value: Value) -> str | None:
    """The value as a double when it is a number (``None`` if it never is)."""
    if value.i and value.d:
        return f"coalesce(CAST({value.i} AS DOUBLE), {value.d})"
    if value.i:
        return f"CAST({value.i} AS DOUBLE)"
    return value.d


def finite(sql: str) -> str:
    """``sql`` (a double) when finite, else ``NULL`` (NaN is beyond every bound)."""
    return f"CASE WHEN ({sql}) BETWEEN -{MAX_DOUBLE} AND {MAX_DOUBLE} THEN ({sql}) END"


def both(a: str, b: str) -> str:
    """SQL: both are not null."""
    return f"({a} IS NOT NULL AND {b} IS NOT NULL)"


def is_other(value: Value) -> str:
    """SQL: the value is an array or object (not null, of no kind)."""
    kinds = [f"{sql} IS NULL" for sql in value.parts().values()]
    return "(" + " AND ".join([f"NOT ({value.null})", *kinds]) + ")"


def text_of(value: Value) -> str:
    """SQL of the value as text, as ``CAST(... AS nvarchar(max))`` writes it
    (:func:`sparktide.expr.casts.as_text`): ``NULL`` for null and *other*."""
    cases = []
    if value.s:
        cases.append(f"WHEN {value.s} IS NOT NULL THEN {value.s}")
    if value.i:
        cases.append(f"WHEN {value.i} IS NOT NULL THEN CAST({value.i} AS STRING)")
    if value.d:
        cases.append(f"WHEN {value.d} IS NOT NULL THEN CAST({value.d} AS STRING)")
    if value.b:
        cases.append(
            f"WHEN {value.b} IS NOT NULL THEN CASE WHEN {value.b} THEN 'true' ELSE 'false' END"
        )
    return f"CASE {' '.join(cases)} END" if cases else NULL_SQL["s"]


def first_error(*values: Value) -> str | None:
    """SQL of the first failed ``CAST``'s message among ``values``, in order."""
    errors = [v.err for v in values if v.err]
    if not errors:
        return None
    return errors[0] if len(errors) == 1 else f"coalesce({', '.join(errors)})"
