"""Walking expression trees: the columns an expression reads, and its desugared form."""

from __future__ import annotations

from sparktide.expr import nodes

__all__ = ["desugar", "ref_nodes", "references"]


def references(expr: nodes.Expr) -> list[str]:
    """The column names ``expr`` reads (:attr:`Ref.key`: ``input.field`` for qualified
    names), in first-use order."""
    return list(dict.fromkeys(ref.key for ref in ref_nodes(expr)))


def ref_nodes(expr: nodes.Expr) -> list[nodes.Ref]:
    """The columns ``expr`` reads, each once, in first-use order."""
    out: dict[nodes.Ref, None] = {}

    def walk(node: nodes.Expr) -> None:
        if isinstance(node, nodes.Ref):
            out.setdefault(node)
        elif isinstance(node, nodes.DateDiff):
            walk(node.start)
            walk(node.end)
        elif isinstance(node, nodes.Unary):
            walk(node.operand)
        elif isinstance(node, nodes.Binary):
            walk(node.left)
            walk(node.right)
        elif isinstance(node, nodes.IsNull | nodes.Like):
            walk(node.operand)
        elif isinstance(node, nodes.In):
            walk(node.operand)
            for item in node.items:
                walk(item)
        elif isinstance(node, nodes.Between):
            walk(node.operand)
            walk(node.low)
            walk(node.high)

    walk(expr)
    return list(out)


def desugar(expr: nodes.Expr) -> nodes.Expr:
    """``expr`` with ``IN`` and ``BETWEEN`` written as comparisons joined by ``OR``/``AND``
    and ``IS NOT NULL``/``NOT LIKE`` as ``NOT``: the forms both engines evaluate."""
    if isinstance(expr, nodes.Unary):
        return nodes.Unary(expr.op, desugar(expr.operand))
    if isinstance(expr, nodes.Binary):
        return nodes.Binary(expr.op, desugar(expr.left), desugar(expr.right))
    if isinstance(expr, nodes.IsNull):
        inner: nodes.Expr = nodes.IsNull(desugar(expr.operand))
        return nodes.Unary("NOT", inner) if expr.negated else inner
    if isinstance(expr, nodes.Like):
        inner = nodes.Like(desugar(expr.operand), expr.pattern)
        return nodes.Unary("NOT", inner) if expr.negated else inner
    if isinstance(expr, nodes.In):
        operand = desugar(expr.operand)
        inner = nodes.Binary("=", operand, desugar(expr.items[0]))
        for item in expr.items[1:]:
            inner = nodes.Binary("OR", inner, nodes.Binary("=", operand, desugar(item)))
        return nodes.Unary("NOT", inner) if expr.negated else inner
    if isinstance(expr, nodes.DateDiff):
        return nodes.DateDiff(expr.unit, desugar(expr.start), desugar(expr.end))
    if isinstance(expr, nodes.Between):
        operand = desugar(expr.operand)
        inner = nodes.Binary(
            "AND",
            nodes.Binary(">=", operand, desugar(expr.low)),
            nodes.Binary("<=", operand, desugar(expr.high)),
        )
        return nodes.Unary("NOT", inner) if expr.negated else inner
    return expr
