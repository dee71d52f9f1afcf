"""The record and array functions (``GetRecordPropertyValue``, ``GetArrayElement``,
``GetArrayLength``) in Spark SQL: the rules of :mod:`sparktide.expr.records` over the
variant a value carries (:attr:`Value.v`), with ``try_variant_get`` casts to
``map<string,variant>`` and ``array<variant>`` and ``try_element_at`` (no Python per
row, nothing that raises under ANSI mode)."""

from __future__ import annotations

from sparktide.expr import nodes
from sparktide.expr.records import property_path
from sparktide.spark.exprvalues import Value
from sparktide.spark.sql import sql_string

__all__ = ["record_access_length", "record_access_variant", "variant_kinds"]

_INT_MAX = "2147483646"  # the largest index try_element_at takes (1-based, INT)


def _array(v: str) -> str:
    return f"try_variant_get({v}, '$', 'array<variant>')"


def _property(v: str, key: str) -> str:
    return f"try_element_at(try_variant_get({v}, '$', 'map<string,variant>'), {key})"


def record_access_length(array: Value) -> Value:
    """``GetArrayLength``: an integer, null unless the value is an array."""
    if not array.v:
        return Value()
    return Value(i=f"CAST(array_size({_array(array.v)}) AS BIGINT)")


def record_access_variant(func: nodes.Func, args: list[Value]) -> str | None:
    """SQL of the variant ``GetRecordPropertyValue`` or ``GetArrayElement`` finds
    (SQL ``NULL`` when nothing), ``None`` when it is always null."""
    v = args[0].v
    if not v:
        return None
    if func.name == "GETARRAYELEMENT":
        index = args[1].i
        if not index:
            return None
        return (
            f"CASE WHEN {index} BETWEEN 0 AND {_INT_MAX} THEN "
            f"try_element_at({_array(v)}, CAST({index} AS INT) + 1) END"
        )
    assert func.name == "GETRECORDPROPERTYVALUE"
    key_node = func.args[1]
    if isinstance(key_node, nodes.Lit) and isinstance(key_node.value, str):
        found = v
        for key in property_path(key_node.value):
            found = _property(found, sql_string(key))
        return found
    if not args[1].s:
        return None
    return _property(v, args[1].s)


def variant_kinds(v: str, k: str) -> dict[str, str]:
    """SQL of each kind of the value of the variant ``v`` whose
    ``schema_of_variant`` is ``k`` (``n``: it is null), as the reference reads a JSON
    value (:func:`sparktide.expr.value_of`): a ``DECIMAL`` is a float."""
    return {
        "i": f"CASE WHEN {k} IN ('TINYINT', 'SMALLINT', 'INT', 'BIGINT') THEN "
        f"try_variant_get({v}, '$', 'bigint') END",
        "d": f"CASE WHEN {k} IN ('FLOAT', 'DOUBLE') OR {k} LIKE 'DECIMAL%' THEN "
        f"try_variant_get({v}, '$', 'double') END",
        "s": f"CASE WHEN {k} = 'STRING' THEN try_variant_get({v}, '$', 'string') END",
        "b": f"CASE WHEN {k} = 'BOOLEAN' THEN try_variant_get({v}, '$', 'boolean') END",
        "n": f"({v} IS NULL OR {k} = 'VOID')",
    }
