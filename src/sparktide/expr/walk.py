"""Walking expression trees: the columns an expression reads, and its desugared form."""

from __future__ import annotations

from sparktide.expr.nodes import (
    Between,
    Binary,
    DateDiff,
    Expr,
    In,
    IsNull,
    Like,
    Ref,
    Unary,
)

__all__ = ["desugar", "ref_nodes", "references"]


def references(expr: Expr) -> list[str]:
    """The column names ``expr`` reads (:attr:`Ref.key`: ``input.field`` for qualified
    names), in first-use order."""
    return list(dict.fromkeys(ref.key for ref in ref_nodes(expr)))


def ref_nodes(expr: Expr) -> list[Ref]:
    """The columns ``expr`` reads, each once, in first-use order."""
    out: dict[Ref, None] = {}

    def walk(node: Expr) -> None:
        if isinstance(node, Ref):
            out.setdefault(node)
        elif isinstance(node, DateDiff):
            walk(node.start)
            walk(node.end)
        elif isinstance(node, Unary):
            walk(node.operand)
        elif isinstance(node, Binary):
            walk(node.left)
            walk(node.right)
        elif isinstance(node, IsNull | Like):
            walk(node.operand)
        elif isinstance(node, In):
            walk(node.operand)
            for item in node.items:
                walk(item)
        elif isinstance(node, Between):
            walk(node.operand)
            walk(node.low)
            walk(node.high)

    walk(expr)
    return list(out)


def desugar(expr: Expr) -> Expr:
    """``expr`` with ``IN`` and ``BETWEEN`` written as comparisons joined by ``OR``/``AND``
    and ``IS NOT NULL``/``NOT LIKE`` as ``NOT``: the forms both engines evaluate."""
    if isinstance(expr, Unary):
        return Unary(expr.op, desugar(expr.operand))
    if isinstance(expr, Binary):
        return Binary(expr.op, desugar(expr.left), desugar(expr.right))
    if isinstance(expr, IsNull):
        inner: Expr = IsNull(desugar(expr.operand))
        return Unary("NOT", inner) if expr.negated else inner
    if isinstance(expr, Like):
        inner = Like(desugar(expr.operand), expr.pattern)
        return Unary("NOT", inner) if expr.negated else inner
    if isinstance(expr, In):
        operand = desugar(expr.operand)
        inner = Binary("=", operand, desugar(expr.items[0]))
        for item in expr.items[1:]:
            inner = Binary("OR", inner, Binary("=", operand, desugar(item)))
        return Unary("NOT", inner) if expr.negated else inner
    if isinstance(expr, DateDiff):
        return DateDiff(expr.unit, desugar(expr.start), desugar(expr.end))
    if isinstance(expr, Between):
        operand = desugar(expr.operand)
        inner = Binary(
            "AND",
            Binary(">=", operand, desugar(expr.low)),
            Binary("<=", operand, desugar(expr.high)),
        )
        return Unary("NOT", inner) if expr.negated else inner
    return expr
