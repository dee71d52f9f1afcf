"""JSON and YAML documents whose every value knows its line and column.

Atlas Stream Processing pipelines are JSON (or YAML) lists of stages; to name the place of
a refused stage or key, the reader keeps positions: JSON is parsed by a small LALR
grammar (lark), YAML by PyYAML's composer (its nodes carry marks). Duplicate keys are
refused in both (a later key would silently win otherwise).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

import yaml
from lark import Lark, Token, Transformer, Tree
from lark.exceptions import UnexpectedInput, VisitError

from sparktide.errors import QueryError
from sparktide.query.ast import Pos

__all__ = ["Node", "parse_json", "parse_yaml"]

_JSON_GRAMMAR = r"""
?start: value
?value: object
      | array
      | STRING         -> string
      | NUMBER         -> number
      | TRUE           -> true
      | FALSE          -> false
      | NULL           -> null
array: "[" [value ("," value)*] "]"
object: "{" [pair ("," pair)*] "}"
pair: STRING ":" value
STRING: /"(\\(["\\\/bfnrt]|u[0-9a-fA-F]{4})|[^"\\\x00-\x1f])*"/
TRUE: "true"
FALSE: "false"
NULL: "null"
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
%import common.WS
%ignore WS
"""


@dataclass
class Node:
    """A value with its position.

    Attributes
    ----------
    value
        ``dict[str, Node]``, ``list[Node]``, or a scalar (str, int, float, bool, None).
    pos
        Where the value starts.
    keys
        For a mapping: where each key starts.
    """

    value: Any
    pos: Pos
    keys: dict[str, Pos] = field(default_factory=dict)

    def plain(self) -> Any:
        """The value without positions (plain dicts, lists and scalars)."""
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


@functools.cache
def _json_parser() -> Lark:
    return Lark(_JSON_GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=False)


def _tok_pos(token: Token) -> Pos:
    return Pos(token.line or 1, token.column or 1)


class _JsonBuild(Transformer):  # type: ignore[type-arg]
    def __init__(self, source: str) -> None:
        super().__init__(visit_tokens=False)
        self.source = source

    def string(self, children: list[Token]) -> Node:
        return Node(json.loads(str(children[0])), _tok_pos(children[0]))

    def number(self, children: list[Token]) -> Node:
        return Node(json.loads(str(children[0])), _tok_pos(children[0]))

    def true(self, children: list[Token]) -> Node:
        return Node(True, _tok_pos(children[0]))

    def false(self, children: list[Token]) -> Node:
        return Node(False, _tok_pos(children[0]))

    def null(self, children: list[Token]) -> Node:
        return Node(None, _tok_pos(children[0]))

    def pair(self, children: list[Any]) -> tuple[str, Pos, Any]:
        key, value = children
        return (json.loads(str(key)), _tok_pos(key), value)


def _json_node(tree: Any, source: str) -> Node:
    """Lark tree → Node."""
    builder = _JsonBuild(source)
    return _convert(builder.transform(tree), source, None)


def _check_new_key(values: dict[str, Node], key: str, key_pos: Pos, source: str) -> None:
    """Refuse a key an object already has."""
    if key in values:
        raise QueryError(source, key_pos.line, key_pos.column, f"the key {key!r} appears twice")


def _convert(item: Any, source: str, pos: Pos | None) -> Node:
    if isinstance(item, Node):
        return item
    if isinstance(item, Tree):
        here = Pos(item.meta.line, item.meta.column) if not item.meta.empty else pos or Pos(1, 1)
        if item.data == "array":
            return Node([_convert(c, source, here) for c in item.children], here)
        if item.data == "object":
            values: dict[str, Node] = {}
            keys: dict[str, Pos] = {}
            for key, key_pos, value in item.children:
                _check_new_key(values, key, key_pos, source)
                values[key] = _convert(value, source, key_pos)
                keys[key] = key_pos
            return Node(values, here, keys)
    return Node(item, pos or Pos(1, 1))


def parse_json(text: str, source: str) -> Node:
    """Parse strict JSON into a :class:`Node` tree.

    Raises
    ------
    QueryError
        If the text is not JSON or repeats a key, naming the line and column.
    """
    try:
        tree = _json_parser().parse(text)
    except UnexpectedInput as exc:
        raise QueryError(
            source, max(exc.line, 1), max(exc.column, 1), "not valid JSON here"
        ) from None
    try:
        return _json_node(tree, source)
    except VisitError as exc:  # pragma: no cover - the builder raises QueryError only
        raise exc.orig_exc from None


def parse_yaml(text: str, source: str) -> Node:
    """Parse YAML (a superset of JSON) into a :class:`Node` tree.

    Raises
    ------
    QueryError
        If the text is not YAML, holds several documents, or repeats a key.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise QueryError(source, line, column, f"not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise QueryError(source, 1, 1, f"not valid YAML: {exc}") from None
    if root is None:
        raise QueryError(source, 1, 1, "the pipeline is empty")
    constructor = yaml.SafeLoader("")
    return _yaml_node(root, source, constructor)


def _yaml_node(node: yaml.Node, source: str, constructor: yaml.SafeLoader) -> Node:
    pos = Pos(node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        values: dict[str, Node] = {}
        keys: dict[str, Pos] = {}
        for key_node, value_node in node.value:
            key = constructor.construct_object(key_node, deep=True)
            key_pos = Pos(key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if not isinstance(key, str):
                raise QueryError(source, key_pos.line, key_pos.column, "keys must be strings")
            _check_new_key(values, key, key_pos, source)
            values[key] = _yaml_node(value_node, source, constructor)
            keys[key] = key_pos
        return Node(values, pos, keys)
    if isinstance(node, yaml.SequenceNode):
        return Node([_yaml_node(v, source, constructor) for v in node.value], pos)
    value = constructor.construct_object(node, deep=True)
    if not isinstance(value, (str, int, float, bool, type(None))):
        raise QueryError(
            source, pos.line, pos.column, f"{type(value).__name__} values are not supported"
        )
    return Node(value, pos)
