"""The record and array functions of Stream Analytics (``GetRecordPropertyValue``,
``GetArrayElement``, ``GetArrayLength``) in the reference engine
(``docs/semantics.md`` §11.14); ``sparktide.spark.exprrecords`` compiles the same rules
to Spark SQL.
"""

from __future__ import annotations

from typing import Any

from sparktide.expr import nodes

__all__ = ["property_path", "record_access"]


def property_path(text: str) -> tuple[str, ...]:
    """The property names of a ``GetRecordPropertyValue`` path written as a literal:
    ``'a.b'`` is ``b`` inside ``a``; a ``[bracketed]`` part is one name, dots included
    (``]]`` is a ``]``): ``'[a.b].c'`` is ``c`` inside ``a.b``. Text that does not read
    so (an unclosed bracket) is one name."""
    names: list[str] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == "[":
            j, name = i + 1, []
            while j < n:
                if text[j] == "]":
                    if j + 1 < n and text[j + 1] == "]":
                        name.append("]")
                        j += 2
                        continue
                    break
                name.append(text[j])
                j += 1
            if j >= n or (j + 1 < n and text[j + 1] != "."):
                return (text,)
            names.append("".join(name))
            i = j + 1
        else:
            j = text.find(".", i)
            j = n if j < 0 else j
            names.append(text[i:j])
            i = j
        if i >= n:
            return tuple(names)
        i += 1  # the dot


def _raw(value: Any) -> Any:
    return value.raw if isinstance(value, nodes.Composite) else None


def _seen(value: Any) -> Any:
    """A JSON value found inside a record as expressions see it."""
    from sparktide.expr.evaluation import value_of

    return value_of(value)


def record_access(func: nodes.Func, args: list[Any]) -> Any:
    """The value of a record or array function (:data:`nodes.ACCESS_FUNCTIONS`).

    ``GetRecordPropertyValue(r, name)``: the property of the object ``r`` (a literal
    name is a path, :func:`property_path`; a computed one a single name), null when
    ``r`` is not an object, the name not text, or the property missing.
    ``GetArrayElement(a, i)``: the element at the 0-based integer ``i``, null when ``a``
    is not an array, ``i`` not an integer or out of range (negative too).
    ``GetArrayLength(a)``: the number of elements (an integer), null when not an array.
    """
    name = func.name
    if name == "GETARRAYLENGTH":
        raw = _raw(args[0])
        return len(raw) if isinstance(raw, list) else None
    if name == "GETARRAYELEMENT":
        raw, index = _raw(args[0]), args[1]
        if not isinstance(raw, list) or not isinstance(index, int) or isinstance(index, bool):
            return None
        return _seen(raw[index]) if 0 <= index < len(raw) else None
    assert name == "GETRECORDPROPERTYVALUE"
    key_node = func.args[1]
    if isinstance(key_node, nodes.Lit) and isinstance(key_node.value, str):
        path = property_path(key_node.value)
    elif isinstance(args[1], str):
        path = (args[1],)
    else:
        return None
    value: Any = _raw(args[0])
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return _seen(value)
