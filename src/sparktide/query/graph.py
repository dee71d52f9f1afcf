"""The step graph of a Stream Analytics query (issue 28.4): what each ``WITH`` step and
each statement does, as nodes that feed each other.

A query is a graph, not a chain: a step may feed several steps and several ``SELECT ...
INTO`` statements. :func:`step_graph` builds it from the parsed query, one node per
operation in the order Stream Analytics applies them within a SELECT (``FROM`` and
``JOIN``, ``WHERE``, the window with ``GROUP BY`` and ``HAVING``, the column list) and
one node per ``UNION`` and per output. A step read by several SELECTs is one node that
feeds them all. ``sparktide translate --graph`` prints it (:meth:`StepGraph.text`).

Node kinds: ``input``, ``filter``, ``project``, ``window``, ``union``, ``join`` and
``output``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktide.query.ast import (
    Call,
    Column,
    Expr,
    FromSource,
    Literal,
    Operation,
    Pos,
    Query,
    Select,
    SelectItem,
    Star,
    Union,
    WindowSpec,
)
from sparktide.time import format_duration

__all__ = ["NODE_KINDS", "Node", "StepGraph", "expr_text", "step_graph"]

NODE_KINDS = ("input", "filter", "project", "window", "union", "join", "output")


@dataclass(frozen=True)
class Node:
    """One operation of the query.

    Attributes
    ----------
    id
        ``n1``, ``n2`` ... in the order the nodes are built.
    kind
        One of :data:`NODE_KINDS`.
    label
        What the node does, in the query's words.
    inputs
        The ids of the nodes that feed it, in order.
    step
        The ``WITH`` step it belongs to, or ``None`` (an input, or a statement's own).
    pos
        Where it is in the query text.
    """

    id: str
    kind: str
    label: str
    inputs: tuple[str, ...]
    step: str | None
    pos: Pos


@dataclass
class StepGraph:
    """The nodes of one query, each after the nodes that feed it."""

    nodes: list[Node] = field(default_factory=list)

    def add(
        self, kind: str, label: str, inputs: tuple[str, ...], step: str | None, pos: Pos
    ) -> str:
        """Add a node; returns its id."""
        node = Node(f"n{len(self.nodes) + 1}", kind, label, inputs, step, pos)
        self.nodes.append(node)
        return node.id

    def outputs(self) -> list[Node]:
        """The output nodes, in statement order."""
        return [n for n in self.nodes if n.kind == "output"]

    def text(self) -> str:
        """One line per node: ``n3 filter <- n2  WHERE Toll > 3  [step a, 1:40]``."""
        lines = []
        for node in self.nodes:
            feeds = f" <- {', '.join(node.inputs)}" if node.inputs else ""
            where = f"step {node.step}, " if node.step else ""
            lines.append(f"{node.id} {node.kind}{feeds}  {node.label}  [{where}{node.pos}]")
        return "\n".join(lines) + "\n"


class _Builder:
    """Builds a :class:`StepGraph` from a query."""

    def __init__(self, query: Query) -> None:
        self.query = query
        self.graph = StepGraph()
        self.inputs: dict[str, str] = {}  # case-folded input name -> node id
        self.steps: dict[str, str] = {}  # case-folded step name -> its last node

    def run(self) -> StepGraph:
        for step in self.query.steps:
            self.steps[step.name.casefold()] = self.union(step.body, step.name)
        for statement in self.query.statements:
            last = self.union(statement, None)
            into = statement.selects[0].into
            self.graph.add(
                "output",
                f"INTO {into}" if into is not None else "no INTO",
                (last,),
                None,
                statement.selects[0].into_pos or statement.pos,
            )
        return self.graph

    def union(self, union: Union, step: str | None) -> str:
        branches = tuple(self.select(s, step) for s in union.selects)
        if len(branches) == 1:
            return branches[0]
        pos = union.union_pos[0] if union.union_pos else union.pos
        return self.graph.add("union", "UNION", branches, step, pos)

    def source(self, source: FromSource) -> str:
        found = self.steps.get(source.name.casefold())
        if found is not None:
            return found
        key = source.name.casefold()
        if key not in self.inputs:
            label = source.name
            if source.timestamp_by is not None:
                label += f" TIMESTAMP BY {expr_text(source.timestamp_by)}"
            if source.partition_by is not None:
                label += f" PARTITION BY {source.partition_by.name}"
            self.inputs[key] = self.graph.add("input", label, (), None, source.pos)
        return self.inputs[key]

    def select(self, select: Select, step: str | None) -> str:
        add = self.graph.add
        last = self.source(select.source)
        for join in select.joins:
            right = self.source(join.source)
            label = f"{join.kind.upper()} JOIN ON {expr_text(join.condition)}"
            last = add("join", label, (last, right), step, join.pos)
        if select.where is not None:
            last = add(
                "filter", f"WHERE {expr_text(select.where.expr)}", (last,), step, select.where.pos
            )
        if select.group_by:
            last = add(
                "window", _window_label(select), (last,), step, select.group_pos or select.pos
            )
        elif not (len(select.items) == 1 and isinstance(select.items[0].expr, Star)):
            label = ", ".join(_item_text(i) for i in select.items)
            last = add("project", label, (last,), step, select.pos)
        return last


def _item_text(item: SelectItem) -> str:
    if isinstance(item.expr, Star):
        return "*" if item.expr.qualifier is None else f"{item.expr.qualifier}.*"
    text = expr_text(item.expr)
    return text if item.alias is None else f"{text} AS {item.alias}"


def _window_label(select: Select) -> str:
    keys = []
    for group in select.group_by:
        keys.append(_spec_text(group.window) if group.window is not None else expr_text(group.expr))
    label = "GROUP BY " + ", ".join(keys) + ": " + ", ".join(_item_text(i) for i in select.items)
    if select.having is not None:
        label += f" HAVING {expr_text(select.having.expr)}"
    return label


def _spec_text(spec: WindowSpec) -> str:
    parts = [
        f"{name} {format_duration(value)}"
        for name, value in (
            ("size", spec.size),
            ("hop", spec.hop),
            ("offset", spec.offset),
            ("timeout", spec.timeout),
            ("max", spec.max_duration),
        )
        if value is not None
    ]
    return f"{spec.kind}({', '.join(parts)})"


def expr_text(expr: Expr) -> str:
    """An expression of the syntax tree as query text (parenthesised where nested)."""
    if isinstance(expr, Column):
        return expr.name
    if isinstance(expr, Literal):
        value = expr.value
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        return f"'{value}'" if isinstance(value, str) else str(value)
    if isinstance(expr, Call):
        if expr.star:
            args = "*"
        else:
            args = ("DISTINCT " if expr.distinct else "") + ", ".join(
                expr_text(a) for a in expr.args
            )
        over = " OVER (...)" if expr.over is not None else ""
        return f"{'.'.join(expr.name)}({args}){over}"
    return _operation_text(expr)


def _operation_text(op: Operation) -> str:
    texts = [_nested(o) for o in op.operands]
    if op.kind in ("NOT", "sign"):
        return f"{op.operator} {texts[0]}" if op.kind == "NOT" else f"{op.operator}{texts[0]}"
    if op.kind in ("IS NULL", "IS MISSING"):
        return f"{texts[0]} {op.operator}"
    if op.kind == "BETWEEN":
        return f"{texts[0]} {op.operator} {texts[1]} AND {texts[2]}"
    if op.kind == "IN":
        return f"{texts[0]} {op.operator} ({', '.join(texts[1:])})"
    if op.kind == "CAST":
        keyword, _, type_name = op.operator.partition(" ")
        return f"{keyword}({expr_text(op.operands[0])} AS {type_name})"
    if op.kind == "CASE":
        return "CASE ... END"
    return f" {op.operator} ".join(texts)


def _nested(expr: Expr) -> str:
    text = expr_text(expr)
    return (
        f"({text})" if isinstance(expr, Operation) and expr.kind not in ("CAST", "CASE") else text
    )


def step_graph(query: Query) -> StepGraph:
    """The step graph of ``query`` (see the module's docstring)."""
    return _Builder(query).run()
