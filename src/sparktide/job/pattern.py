"""The row pattern of ``[match]`` (Stream Analytics' ``MATCH_RECOGNIZE ... PATTERN``,
semantics §11.25): its grammar, and the program a backtracking matcher runs.

The grammar is Stream Analytics' with the bounded quantifiers of SQL's row patterns::

    pattern     := alternative ('|' alternative)*
    alternative := item item*
    item        := atom quantifier?
    atom        := name | '.' | '(' pattern ')'
    quantifier  := '*' | '+' | '?' | '{' n '}' | '{' n ',' '}' | '{' n ',' m '}' | '{' ',' m '}'

A name is a pattern variable (its ``define`` condition, or any event when it has none);
``.`` is any event. Quantifiers are greedy and alternatives are tried left to right: the
match is the first success of that order (:func:`sparktide.core.patterns.match_at`).

:func:`compile_pattern` turns the text into a :class:`Program`: three parallel tuples of
integers (operation, first operand, second operand), which the matcher reads as numpy
arrays in the Spark engine and as tuples in the reference engine.

- ``ROW v``: the next row, which must meet variable ``v``'s condition (``v = -1``: any
  row); the matcher moves one row on.
- ``SPLIT a b``: go on at ``a``; on failure, at ``b``.
- ``JUMP a``: go on at ``a``.
- ``MATCH``: the pattern is complete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sparktide.errors import ConfigError

__all__ = ["JUMP", "MATCH", "ROW", "SPLIT", "Program", "compile_pattern"]

ROW, SPLIT, JUMP, MATCH = 0, 1, 2, 3

#: The largest count a bounded quantifier may give (each repeat is written out).
MAX_REPEAT = 100

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<count>\{[^}]*\})|(?P<op>.))")
_COUNT = re.compile(r"\{\s*(\d*)\s*(,?)\s*(\d*)\s*\}\Z")


@dataclass(frozen=True)
class Program:
    """A compiled pattern: instruction ``i`` is ``(ops[i], first[i], second[i])``;
    ``variables`` are the names ``ROW`` operands index."""

    ops: tuple[int, ...]
    first: tuple[int, ...]
    second: tuple[int, ...]
    variables: tuple[str, ...]


# a parsed pattern: ("row", name | None), ("seq", items), ("alt", options),
# ("repeat", node, low, high | None)
Node = tuple


class _Parser:
    """Reads the pattern text into nested tuples, refusing with ``key``."""

    def __init__(self, text: str, key: str) -> None:
        self.key = key
        self.tokens: list[tuple[str, str, int]] = []
        for token in _TOKEN.finditer(text):
            kind = token.lastgroup or "op"
            value = token.group(kind)
            if kind == "op" and value.isspace():
                continue
            self.tokens.append((kind, value, token.start(kind)))
        self.i = 0

    def fail(self, message: str) -> ConfigError:
        return ConfigError(self.key, message)

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def parse(self) -> Node:
        if not self.tokens:
            raise self.fail("is empty")
        node = self.alternation()
        extra = self.peek()
        if extra is not None:
            raise self.fail(f"unexpected {extra[1]!r} at character {extra[2] + 1}")
        return node

    def alternation(self) -> Node:
        options = [self.sequence()]
        while (token := self.peek()) is not None and token[1] == "|":
            self.i += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else ("alt", tuple(options))

    def sequence(self) -> Node:
        items = []
        while (token := self.peek()) is not None and token[1] not in ("|", ")"):
            items.append(self.item())
        if not items:
            where = f"at character {token[2] + 1}" if token is not None else "at the end"
            raise self.fail(f"expects a pattern variable, '.' or '(' {where}")
        return items[0] if len(items) == 1 else ("seq", tuple(items))

    def item(self) -> Node:
        atom = self.atom()
        token = self.peek()
        if token is None:
            return atom
        kind, value, at = token
        bounds: tuple[int, int | None] | None = None
        if value in ("*", "+", "?"):
            bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}[value]
        elif kind == "count":
            bounds = self.count(value, at)
        if bounds is None:
            return atom
        self.i += 1
        after = self.peek()
        if (after is not None and after[1] in ("?", "*", "+")) or (after and after[0] == "count"):
            raise self.fail(
                f"{value}{after[1]} at character {at + 1}: reluctant or repeated quantifiers "
                "are not supported (quantifiers are greedy)"
            )
        return ("repeat", atom, *bounds)

    def count(self, text: str, at: int) -> tuple[int, int | None]:
        match = _COUNT.match(text)
        if match is None or not (match.group(1) or match.group(3)):
            raise self.fail(
                f"{text} at character {at + 1}: expected {{n}}, {{n,}}, {{n,m}} or {{,m}}"
            )
        low = int(match.group(1) or 0)
        high: int | None = int(match.group(3)) if match.group(3) else None
        if not match.group(2):
            high = low
        if (high is not None and (high < low or high == 0)) or max(low, high or 0) > MAX_REPEAT:
            raise self.fail(
                f"{text} at character {at + 1}: counts from 0 to {MAX_REPEAT}, "
                "low <= high, high > 0"
            )
        return low, high

    def atom(self) -> Node:
        token = self.peek()
        assert token is not None
        kind, value, at = token
        self.i += 1
        if kind == "name":
            return ("row", value)
        if value == ".":
            return ("row", None)
        if value == "(":
            inner = self.alternation()
            close = self.peek()
            if close is None or close[1] != ")":
                raise self.fail(f"the '(' at character {at + 1} is not closed")
            self.i += 1
            return inner
        raise self.fail(f"unexpected {value!r} at character {at + 1}")


def _nullable(node: Node) -> bool:
    """Whether ``node`` can match no row."""
    kind = node[0]
    if kind == "row":
        return False
    if kind == "seq":
        return all(_nullable(n) for n in node[1])
    if kind == "alt":
        return any(_nullable(n) for n in node[1])
    return node[2] == 0 or _nullable(node[1])


class _Emitter:
    """Writes the instructions of a parsed pattern."""

    def __init__(self, variables: dict[str, int], key: str) -> None:
        self.code: list[list[int]] = []
        self.variables = variables
        self.key = key

    def add(self, op: int, first: int = 0, second: int = 0) -> int:
        self.code.append([op, first, second])
        return len(self.code) - 1

    def emit(self, node: Node) -> None:
        kind = node[0]
        if kind == "row":
            self.add(ROW, -1 if node[1] is None else self.variables[node[1]])
        elif kind == "seq":
            for item in node[1]:
                self.emit(item)
        elif kind == "alt":
            self.alternatives(node[1])
        else:
            self.repeat(node[1], node[2], node[3])

    def alternatives(self, options: tuple[Node, ...]) -> None:
        jumps = []
        for option in options[:-1]:
            split = self.add(SPLIT)
            self.code[split][1] = len(self.code)
            self.emit(option)
            jumps.append(self.add(JUMP))
            self.code[split][2] = len(self.code)
        self.emit(options[-1])
        for jump in jumps:
            self.code[jump][1] = len(self.code)

    def repeat(self, node: Node, low: int, high: int | None) -> None:
        if high is None and _nullable(node):
            raise ConfigError(self.key, "repeats without bound a part that can match no event")
        for _ in range(low):
            self.emit(node)
        if high is None:  # greedy star: SPLIT body, out; body; JUMP back
            split = self.add(SPLIT, len(self.code) + 1)
            self.emit(node)
            self.add(JUMP, split)
            self.code[split][2] = len(self.code)
            return
        splits = []
        for _ in range(high - low):  # greedy optional copies, each leaving to the end
            splits.append(self.add(SPLIT, len(self.code) + 1))
            self.emit(node)
        for split in splits:
            self.code[split][2] = len(self.code)


def _names(node: Node) -> list[str]:
    kind = node[0]
    if kind == "row":
        return [] if node[1] is None else [node[1]]
    if kind in ("seq", "alt"):
        return [name for n in node[1] for name in _names(n)]
    return _names(node[1])


def compile_pattern(text: str, key: str = "match.pattern") -> Program:
    """The :class:`Program` of the pattern ``text`` (``key``: the job-file key that
    errors name).

    Examples
    --------
    >>> p = compile_pattern("A B+")
    >>> p.variables, list(zip(p.ops, p.first, p.second))
    (('A', 'B'), [(0, 0, 0), (0, 1, 0), (1, 3, 5), (0, 1, 0), (2, 2, 0), (3, 0, 0)])
    """
    if not isinstance(text, str):
        raise ConfigError(key, f"must be a pattern such as 'A+ B', got {text!r}")
    tree = _Parser(text, key).parse()
    variables = tuple(dict.fromkeys(_names(tree)))
    emitter = _Emitter({name: i for i, name in enumerate(variables)}, key)
    emitter.emit(tree)
    emitter.add(MATCH)
    ops, first, second = zip(*emitter.code, strict=True)
    return Program(tuple(ops), tuple(first), tuple(second), variables)
