"""``$match`` → the job's ``[filter] where``.

Equality, ``$eq $ne $gt $gte $lt $lte $in`` on top-level fields, ``$and``/``$or`` of
such documents; several keys are joined by AND. Atlas' ``null`` matches a missing field
too, and ``$ne`` also matches a missing field, null, or a value of another type.
"""

from __future__ import annotations

from sparktide import expr as E
from sparktide.query.ast import Pos
from sparktide.query.atlas.documents import Documents
from sparktide.query.atlas.operators import Operators
from sparktide.query.located import Node
from sparktide.query.refusal import Refuse, check_column

__all__ = ["MatchStage"]

#: ``$match`` comparison operators and the expression language's.
_COMPARISONS = {
    "$eq": "=",
    "$ne": "<>",
    "$gt": ">",
    "$gte": ">=",
    "$lt": "<",
    "$lte": "<=",
}


class MatchStage(Documents):
    """Reads ``$match`` stages (``operators`` resolves fields through the pipeline's
    document shape and reads ``$expr``)."""

    def __init__(self, refuse: Refuse, operators: Operators) -> None:
        super().__init__(refuse)
        self.operators = operators

    def match(self, node: Node) -> E.Expr:
        """A ``$match`` query document → a filter condition: equality, ``$eq $ne $gt $gte
        $lt $lte $in`` on top-level fields, ``$and``/``$or`` of such documents; several
        keys are joined by AND."""
        doc = self.mapping(node, "$match")
        if not doc:
            raise self.refuse(node.pos, "$match needs a condition")
        parts = []
        for key, value in doc.items():
            pos = node.keys[key]
            if key in ("$and", "$or"):
                if not isinstance(value.value, list) or not value.value:
                    raise self.refuse(value.pos, f"{key} takes a non-empty list of documents")
                items = [self.match(item) for item in value.value]
                combined = items[0]
                for item in items[1:]:
                    combined = E.Binary(key[1:].upper(), combined, item)
                parts.append(combined)
                continue
            if key == "$expr":
                parts.append(self.operators.condition(value))
                continue
            if key.startswith("$"):
                raise self.refuse(pos, f"{key} in $match is not supported yet")
            # ("as.f" after $lookup: the row's; "a.b": the value b inside the field a)
            table = self.operators.shape.table
            if table is None or not key.startswith(f"{table}."):
                for part in key.split("."):
                    check_column(part, pos, self.refuse, "field")
            field = self.operators.shape.resolve(key, pos, self.refuse)
            if isinstance(value.value, dict):
                operators = value.value
                if not operators or not all(k.startswith("$") for k in operators):
                    raise self.refuse(
                        value.pos, f"{key}: a document value is not supported yet (use $eq ...)"
                    )
                for op, operand in operators.items():
                    parts.append(self.comparison(field, op, operand, value.keys[op]))
            else:
                parts.append(self.comparison(field, "$eq", value, pos))
        return E.conjunction(parts)

    def comparison(self, field: E.Expr, op: str, operand: Node, pos: Pos) -> E.Expr:
        """``{field: {op: operand}}`` as a condition (``$in``, ``$eq`` ... ``$lte``; Atlas'
        null and ``$ne`` semantics)."""
        if op == "$in":
            if not isinstance(operand.value, list) or not operand.value:
                raise self.refuse(operand.pos, "$in takes a non-empty list of values")
            values = [self.literal(v) for v in operand.value]
            present = [v for v in values if v.value is not None]
            condition: E.Expr | None = E.In(field, tuple(present)) if present else None
            if len(present) < len(values):  # null in the list matches missing and null
                condition = (
                    E.IsNull(field)
                    if condition is None
                    else E.Binary("OR", condition, E.IsNull(field))
                )
            assert condition is not None
            return condition
        sql = _COMPARISONS.get(op)
        if sql is None:
            raise self.refuse(pos, f"{op} in $match is not supported yet")
        value = self.literal(operand)
        if value.value is None:
            if op not in ("$eq", "$ne"):
                raise self.refuse(operand.pos, f"{op}: null is not supported yet")
            return E.IsNull(field, negated=op == "$ne")
        if op == "$ne":  # Atlas: also a missing field, null, or a value of another type
            return E.Binary(
                "OR", E.Binary("<>", field, value), E.IsNull(E.Binary("=", field, value))
            )
        return E.Binary(sql, field, value)

    def literal(self, node: Node) -> E.Lit:
        """A scalar of ``$match`` (documents, arrays, field paths and infinities refused)."""
        value = node.value
        if isinstance(value, (dict, list)):
            raise self.refuse(node.pos, "documents and arrays in $match are not supported yet")
        if isinstance(value, str) and value.startswith("$"):
            raise self.refuse(node.pos, f"{value}: comparing two fields is not supported yet")
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            raise self.refuse(node.pos, "the number is beyond the range of a double")
        return E.Lit(value)
