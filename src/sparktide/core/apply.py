"""``[apply]`` in the reference engine (semantics §11.18): what one admitted event
becomes, one event per element of an array or per property of a record."""

from __future__ import annotations

from typing import Any

from sparktide.expr import Composite, evaluate, value_of
from sparktide.job import Apply

__all__ = ["expand"]


def expand(
    apply: Apply, fields: dict[str, Any], seen: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The fields of each event a record with ``fields`` becomes (``seen``: what
    ``apply.value`` reads, when more than them: ``System.Input()``): its own fields and,
    under ``apply.name``, ``{"ArrayIndex": i, "ArrayValue": v}`` per element (``i`` from 0)
    or ``{"PropertyName": k, "PropertyValue": v}`` per property, in the array's order or
    the order of the property names (a record's properties have none of their own).
    None when the value is not an array (``elements``) or a record (``properties``), is
    null, or is empty; then, with ``apply.outer``, the record itself with null under
    ``apply.name`` (``OUTER APPLY``)."""
    read = fields if seen is None else seen
    lookup = lambda name: value_of(read.get(name))  # noqa: E731
    found = evaluate(apply.expression, lookup, present=read.__contains__)
    raw = found.raw if isinstance(found, Composite) else None
    index, value = apply.members
    if apply.function == "elements":
        pairs = list(enumerate(raw)) if isinstance(raw, list) else []
    else:
        pairs = sorted(raw.items(), key=lambda item: item[0]) if isinstance(raw, dict) else []
    if not pairs and apply.outer:
        return [{**fields, apply.name: None}]
    return [{**fields, apply.name: {index: k, value: v}} for k, v in pairs]
