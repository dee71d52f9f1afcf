"""Atlas aggregation expressions → the job's expression language (docs/query.md).

``"$field"`` (resolved through the document's :class:`~sparktide.query.atlas.shape.Shape`:
a field an earlier ``$addFields`` computed is its expression), literals and
``{$literal: v}``, and the operators whose Stream Analytics-style equivalent exists:
``$add $subtract $multiply $divide $mod``, ``$abs $ceil $floor $sqrt $exp $pow``,
``$concat $toUpper $toLower``, ``$cond $ifNull``, ``$eq $ne $gt $gte $lt $lte``,
``$and $or $not``. Every other operator is refused with its place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktide import expr as E
from sparktide.query.atlas.documents import Documents
from sparktide.query.located import Node
from sparktide.query.refusal import Refuse

if TYPE_CHECKING:
    from sparktide.query.atlas.shape import Shape

__all__ = ["Operators"]

_ARITHMETIC = {"$add": "+", "$subtract": "-", "$multiply": "*", "$divide": "/", "$mod": "%"}
#: Operators of exactly two operands (the others of this table take two or more).
_TWO = ("$subtract", "$divide", "$mod")
_COMPARISONS = {"$eq": "=", "$ne": "<>", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_MATH = {"$abs": "ABS", "$ceil": "CEILING", "$floor": "FLOOR", "$sqrt": "SQRT", "$exp": "EXP"}
_CASE = {"$toUpper": "UPPER", "$toLower": "LOWER"}
_WHY_REFUSED = {
    "$round": "Atlas rounds half to even, Stream Analytics' ROUND half away from zero",
    "$trunc": "Stream Analytics has no TRUNC",
}


class Operators(Documents):
    """Reads aggregation expressions over the document ``shape`` (set by the pipeline
    before each stage)."""

    def __init__(self, refuse: Refuse, shape: Shape) -> None:
        super().__init__(refuse)
        self.shape = shape

    def expression(self, node: Node) -> E.Expr:
        """The expression ``node`` (a field path, a literal or ``{$op: args}``)."""
        value = node.value
        if isinstance(value, str) and value.startswith("$"):
            if value.startswith("$$"):
                raise self.refuse(node.pos, f"{value}: variables are not supported yet")
            return self.shape.resolve(value[1:], node.pos, self.refuse)
        if isinstance(value, list):
            raise self.refuse(node.pos, "arrays in expressions are not supported yet")
        if not isinstance(value, dict):
            if isinstance(value, float) and value in (float("inf"), float("-inf")):
                raise self.refuse(node.pos, "the number is beyond the range of a double")
            return E.Lit(value)
        if len(value) != 1 or not next(iter(value)).startswith("$"):
            raise self.refuse(
                node.pos, "an expression is one {$operator: arguments} (documents are not values)"
            )
        ((op, arg),) = value.items()
        return self.operator(op, arg, node)

    def condition(self, node: Node) -> E.Expr:
        """An expression that must be a boolean (``$cond``'s ``if``, ``$and``, ...)."""
        value = node.value
        if isinstance(value, bool):
            return E.Lit(value)
        op = next(iter(value)) if isinstance(value, dict) and len(value) == 1 else None
        if op not in (*_COMPARISONS, "$and", "$or", "$not"):
            raise self.refuse(
                node.pos,
                "a condition must be a comparison or $and/$or/$not (Atlas' truthiness of "
                'other values is not supported yet: write {$eq: ["$f", true]})',
            )
        return self.expression(node)

    def operator(self, op: str, arg: Node, node: Node) -> E.Expr:
        """``{op: arg}`` as an expression."""
        pos = node.keys[op]
        if op == "$literal":
            if isinstance(arg.value, (dict, list)):
                raise self.refuse(arg.pos, "$literal of a document or array is not supported yet")
            return E.Lit(arg.value)
        if op in _ARITHMETIC:
            args = self.operands(op, arg, 2, 2 if op in _TWO else -1)
            result = args[0]
            for more in args[1:]:
                result = E.Binary(_ARITHMETIC[op], result, more)
            return result
        if op in _COMPARISONS:
            left, right = self.operands(op, arg, 2, 2)
            for side in (left, right):
                if isinstance(side, E.Lit) and side.value is None:
                    raise self.refuse(arg.pos, f"{op} with null is not supported yet: use $ifNull")
            return E.Binary(_COMPARISONS[op], left, right)
        if op in ("$and", "$or"):
            items = self.items(op, arg, 1, -1)
            result = self.condition(items[0])
            for more in items[1:]:
                result = E.Binary(op[1:].upper(), result, self.condition(more))
            return result
        if op == "$not":
            (item,) = self.items(op, arg, 1, 1)
            return E.Unary("NOT", self.condition(item))
        if op in _MATH:
            return E.Func(_MATH[op], tuple(self.operands(op, arg, 1, 1)))
        if op == "$pow":
            return E.Func("POWER", tuple(self.operands(op, arg, 2, 2)))
        if op in _CASE:  # Atlas: null or missing → ""
            (text,) = self.operands(op, arg, 1, 1)
            return E.Case(((E.IsNull(text), E.Lit("")),), E.Func(_CASE[op], (text,)))
        if op == "$concat":
            return self.concat(self.operands(op, arg, 1, -1))
        if op == "$cond":
            return self.cond(arg)
        if op == "$ifNull":
            *values, last = self.operands(op, arg, 2, -1)
            whens = tuple((E.IsNull(v, negated=True), v) for v in values)
            return E.Case(whens, last)
        why = _WHY_REFUSED.get(op, "not in the expression language")
        raise self.refuse(pos, f"the operator {op} is not supported yet: {why}")

    def items(self, op: str, arg: Node, fewest: int, most: int) -> list[Node]:
        """The argument nodes of ``op`` (a list, or one value for one argument)."""
        items = arg.value if isinstance(arg.value, list) else [arg]
        if len(items) < fewest or (most >= 0 and len(items) > most):
            count = str(fewest) if fewest == most else f"at least {fewest}"
            raise self.refuse(arg.pos, f"{op} takes {count} argument(s), got {len(items)}")
        return items

    def operands(self, op: str, arg: Node, fewest: int, most: int) -> list[E.Expr]:
        """The arguments of ``op`` as expressions."""
        return [self.expression(item) for item in self.items(op, arg, fewest, most)]

    def concat(self, args: list[E.Expr]) -> E.Expr:
        """``$concat``: null when any argument is null or missing (Stream Analytics'
        ``CONCAT`` reads null as ``''``)."""
        joined = E.Func("CONCAT", tuple(args) if len(args) > 1 else (args[0], E.Lit("")))
        tests = [E.IsNull(a) for a in args if not (isinstance(a, E.Lit) and a.value is not None)]
        if not tests:
            return joined
        missing: E.Expr = tests[0]
        for more in tests[1:]:
            missing = E.Binary("OR", missing, more)
        return E.Case(((missing, E.Lit(None)),), joined)

    def cond(self, arg: Node) -> E.Expr:
        """``$cond: {if, then, else}`` or ``[if, then, else]`` → ``CASE WHEN``."""
        if isinstance(arg.value, list):
            parts = self.items("$cond", arg, 3, 3)
        else:
            doc = self.mapping(arg, "$cond")
            self.keys(arg, ("if", "then", "else"), "$cond")
            for key in ("if", "then", "else"):
                if key not in doc:
                    raise self.refuse(arg.pos, f"$cond needs {key}")
            parts = [doc["if"], doc["then"], doc["else"]]
        test = self.condition(parts[0])
        return E.Case(((test, self.expression(parts[1])),), self.expression(parts[2]))
