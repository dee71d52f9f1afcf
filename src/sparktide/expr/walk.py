"""Walking expression trees: the columns an expression reads, and its desugared form."""

from __future__ import annotations

from sparktide.expr import nodes

__all__ = ["casts", "coalesced", "desugar", "missing_tests", "ref_nodes", "references"]


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
        elif isinstance(node, nodes.Func):
            for arg in node.args:
                walk(arg)
        elif isinstance(node, nodes.Cast):
            walk(node.operand)
        elif isinstance(node, nodes.Case):
            for condition, result in node.whens:
                walk(condition)
                walk(result)
            if node.default is not None:
                walk(node.default)

    walk(expr)
    return list(out)


def missing_tests(expr: nodes.Expr) -> list[str]:
    """The fields ``expr`` tests with ``IS [NOT] MISSING``, in first-use order."""
    out: dict[str, None] = {}

    def walk(node: nodes.Expr) -> None:
        if isinstance(node, nodes.IsNull) and node.missing:
            assert isinstance(node.operand, nodes.Ref)
            out.setdefault(node.operand.key)
        for child in _children(node):
            walk(child)

    walk(expr)
    return list(out)


def casts(expr: nodes.Expr) -> bool:
    """Whether ``expr`` holds a ``CAST`` that can fail (not ``TRY_CAST``)."""
    found = False

    def walk(node: nodes.Expr) -> None:
        nonlocal found
        if isinstance(node, nodes.Cast) and not node.safe:
            found = True
        for child in _children(node):
            walk(child)

    walk(expr)
    return found


def _children(node: nodes.Expr) -> list[nodes.Expr]:
    if isinstance(node, nodes.DateDiff):
        return [node.start, node.end]
    if isinstance(node, (nodes.Unary, nodes.IsNull, nodes.Like, nodes.Cast)):
        return [node.operand]
    if isinstance(node, nodes.Binary):
        return [node.left, node.right]
    if isinstance(node, nodes.In):
        return [node.operand, *node.items]
    if isinstance(node, nodes.Between):
        return [node.operand, node.low, node.high]
    if isinstance(node, nodes.Func):
        return list(node.args)
    if isinstance(node, nodes.Case):
        out = [x for pair in node.whens for x in pair]
        return out + ([node.default] if node.default is not None else [])
    return []


def desugar(expr: nodes.Expr) -> nodes.Expr:
    """``expr`` with ``IN`` and ``BETWEEN`` written as comparisons joined by ``OR``/``AND``,
    ``IS NOT NULL``/``NOT LIKE`` as ``NOT`` and ``COALESCE`` as ``CASE``
    (:func:`coalesced`): the forms both engines evaluate."""
    if isinstance(expr, nodes.Unary):
        return nodes.Unary(expr.op, desugar(expr.operand))
    if isinstance(expr, nodes.Binary):
        return nodes.Binary(expr.op, desugar(expr.left), desugar(expr.right))
    if isinstance(expr, nodes.IsNull):
        inner: nodes.Expr = nodes.IsNull(desugar(expr.operand), missing=expr.missing)
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
    if isinstance(expr, nodes.Func) and expr.name == "COALESCE":
        return coalesced(tuple(desugar(a) for a in expr.args))
    if isinstance(expr, nodes.Func):
        return nodes.Func(expr.name, tuple(desugar(a) for a in expr.args), expr.unit)
    if isinstance(expr, nodes.Cast):
        return nodes.Cast(desugar(expr.operand), expr.type, expr.safe)
    if isinstance(expr, nodes.Case):
        whens = tuple((desugar(c), desugar(r)) for c, r in expr.whens)
        return nodes.Case(whens, None if expr.default is None else desugar(expr.default))
    if isinstance(expr, nodes.Between):
        operand = desugar(expr.operand)
        inner = nodes.Binary(
            "AND",
            nodes.Binary(">=", operand, desugar(expr.low)),
            nodes.Binary("<=", operand, desugar(expr.high)),
        )
        return nodes.Unary("NOT", inner) if expr.negated else inner
    return expr


def coalesced(args: tuple[nodes.Expr, ...]) -> nodes.Case:
    """``COALESCE(a, b, ..., z)`` as ``CASE WHEN NOT a IS NULL THEN a WHEN NOT b IS NULL
    THEN b ... ELSE z END``: the first argument that is not null, read in order and no
    further (a ``CAST`` that would fail in a later argument is not evaluated), of its own
    kind (semantics §11.11)."""
    whens = tuple((nodes.Unary("NOT", nodes.IsNull(a)), a) for a in args[:-1])
    return nodes.Case(whens, args[-1])
