"""``$match`` → the job's ``[filter] where``.

Equality, ``$eq $ne $gt $gte $lt $lte $in $nin $exists $regex`` and ``$not`` on fields
(values inside them with dots), ``$and``/``$or``/``$nor`` of such documents; several keys
are joined by AND. Atlas' ``null`` matches a missing field too, and a negation — ``$ne``,
``$nin``, ``$not``, ``$nor`` — also matches a missing field, null, or a value of another
type: whatever its condition is not true for (:func:`_not_true`).
"""

from __future__ import annotations

from sparktide import expr as E
from sparktide.errors import ConfigError
from sparktide.query.ast import Pos
from sparktide.query.atlas.documents import Documents
from sparktide.query.atlas.operators import Operators
from sparktide.query.located import Node
from sparktide.query.refusal import Refuse, check_column

__all__ = ["MatchStage"]


def _not_true(condition: E.Expr) -> E.Expr:
    """Whether ``condition`` is not true: false, or null (Atlas' negations match a
    missing field, null and values of other types)."""
    return E.Binary("OR", E.Unary("NOT", condition), E.IsNull(condition))


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
            if key in ("$and", "$or", "$nor"):
                if not isinstance(value.value, list) or not value.value:
                    raise self.refuse(value.pos, f"{key} takes a non-empty list of documents")
                items = [self.match(item) for item in value.value]
                combined = items[0]
                for item in items[1:]:
                    combined = E.Binary("AND" if key == "$and" else "OR", combined, item)
                parts.append(_not_true(combined) if key == "$nor" else combined)
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
                    parts.append(self.operator(field, op, operand, value.keys[op]))
            else:
                parts.append(self.comparison(field, "$eq", value, pos))
        return E.conjunction(parts)

    def operator(self, field: E.Expr, op: str, operand: Node, pos: Pos) -> E.Expr:
        """``{field: {op: operand}}``: a comparison, or ``$nin``, ``$not``, ``$exists``,
        ``$regex``."""
        if op == "$nin":
            return _not_true(self.comparison(field, "$in", operand, pos))
        if op == "$not":
            inner = operand.value
            if (
                not isinstance(inner, dict)
                or not inner
                or not all(k.startswith("$") for k in inner)
            ):
                raise self.refuse(operand.pos, "$not takes a document of operators: {$gt: 5}")
            conditions = [self.operator(field, k, v, operand.keys[k]) for k, v in inner.items()]
            return _not_true(E.conjunction(conditions))
        if op == "$exists":
            return self.exists(field, operand)
        if op == "$regex":
            return self.regex(field, operand)
        if op == "$options":
            raise self.refuse(pos, "$options: regular expression options are not supported yet")
        return self.comparison(field, op, operand, pos)

    def exists(self, field: E.Expr, operand: Node) -> E.Expr:
        """``$exists``: whether the document has the field (null or not)."""
        if not isinstance(operand.value, bool):
            raise self.refuse(operand.pos, "$exists takes true or false")
        if not isinstance(field, E.Ref):
            raise self.refuse(
                operand.pos,
                "$exists of a value inside a field or of a computed field is not supported yet",
            )
        return E.IsNull(field, negated=operand.value, missing=True)

    def regex(self, field: E.Expr, operand: Node) -> E.Expr:
        """``$regex: "pattern"``: ``REGEXMATCH(field, 'pattern') = 1``, a text matching it
        somewhere (anything else never matches), the pattern checked as the function's."""
        if not isinstance(operand.value, str):
            raise self.refuse(operand.pos, '$regex takes a pattern string: {$regex: "^ab"}')
        condition = E.Binary("=", E.Func("REGEXMATCH", (field, E.Lit(operand.value))), E.Lit(1))
        try:
            E.parse_expression(E.to_text(condition), "$regex")
        except ConfigError as exc:
            raise self.refuse(operand.pos, exc.message) from None
        return condition

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
