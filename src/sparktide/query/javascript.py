"""Stream Analytics' JavaScript user-defined functions, read as expressions (semantics
§11.24).

A Stream Analytics job may call ``udf.<name>(...)``, a JavaScript function of the job
(``function main(hexValue) { return parseInt(hexValue, 16); }``). sparktide runs no
JavaScript: it reads a small part of the language — a function whose body declares
constants and returns one expression, with ``if (...) return ...;`` before it — and
turns it into an expression of the query (:func:`compile_function`), which each call
site then holds with its arguments in place of the parameters (:func:`expand`). The
engines compute it as any other expression: on Spark, in Spark SQL.

Only what means the same in JavaScript and in sparktide's expressions is read:
arithmetic on numbers, comparisons, ``&&``, ``||``, ``!`` and ``?:`` over conditions,
``parseInt(text, radix)`` (:func:`sparktide.expr.functions.parseint`), ``Math.abs``,
``floor``, ``ceil``, ``round``, ``sqrt``, ``exp``, ``pow``, ``min`` and ``max``, and
``toUpperCase()`` / ``toLowerCase()``. Anything else is refused with its place in the
file: a ``+`` whose operands may be text, ``==`` (which converts types), truthiness of a
value that is no condition, other calls, loops, assignments.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sparktide.errors import QueryError
from sparktide.query.ast import Call, Column, Expr, Literal, Operation, Pos

__all__ = ["JsFunction", "compile_function", "expand", "expand_calls"]

_TOKEN = re.compile(
    r"""(?P<space>\s+|//[^\n]*|/\*.*?\*/)
    |(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
    |(?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
    |(?P<op>===|!==|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:(){},;.=])""",
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
_MATH = {"abs": "ABS", "floor": "FLOOR", "ceil": "CEILING", "sqrt": "SQRT", "exp": "EXP"}
#: Static kinds of a value: a number (an integer one), a text, a condition, or not known.
NUM, INT, TEXT, BOOL, ANY = "number", "integer", "text", "condition", "any"


@dataclass(frozen=True)
class JsFunction:
    """A JavaScript function read as an expression: its parameters (the expression reads
    them as the columns ``$0``, ``$1`` ...) and its result, which :func:`expand` fills."""

    name: str
    params: tuple[str, ...]
    body: Expr
    kind: str = "any"  # (NUM, INT, TEXT, BOOL or ANY: what the result is known to be)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    pos: Pos


def _tokens(text: str, source: str) -> list[_Token]:
    out: list[_Token] = []
    at = 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        line = text.count("\n", 0, at) + 1
        pos = Pos(line, at - (text.rfind("\n", 0, at) + 1) + 1)
        if match is None:
            raise QueryError(source, pos.line, pos.column, f"unexpected {text[at]!r}")
        kind = match.lastgroup or ""
        if kind != "space":
            out.append(_Token(kind, match.group(), pos))
        at = match.end()
    end = Pos(text.count("\n") + 1, len(text) - (text.rfind("\n") + 1) + 1)
    return [*out, _Token("end", "", end)]


class _Reader:
    """A recursive-descent reader of the function (see the module)."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.tokens = _tokens(text, source)
        self.at = 0
        self.scope: dict[str, tuple[Expr, str]] = {}

    # ------------------------------------------------------------------ tokens
    def peek(self, text: str | None = None, kind: str | None = None) -> bool:
        token = self.tokens[self.at]
        return (text is None or token.text == text) and (kind is None or token.kind == kind)

    def take(self, text: str | None = None, kind: str | None = None) -> _Token:
        token = self.tokens[self.at]
        if not self.peek(text, kind):
            wanted = repr(text) if text is not None else f"a {kind}"
            raise self.refuse(token.pos, f"expected {wanted}, got {token.text or 'the end'!r}")
        self.at += 1
        return token

    def refuse(self, pos: Pos, message: str) -> QueryError:
        return QueryError(self.source, pos.line, pos.column, message)

    # ------------------------------------------------------------------ statements
    def function(self) -> JsFunction:
        self.take("function")
        name = self.take(kind="name").text
        self.take("(")
        params: list[str] = []
        while not self.peek(")"):
            param = self.take(kind="name")
            params.append(param.text)
            self.scope[param.text] = (Column((f"${len(params) - 1}",), param.pos), ANY)
            if not self.peek(")"):
                self.take(",")
        self.take(")")
        self.take("{")
        body, kind = self.statements()
        self.take("}")
        self.take(kind="end")
        return JsFunction(name, tuple(params), body, kind)

    def statements(self) -> tuple[Expr, str]:
        """Declarations, then ``if (c) return x;`` and a final ``return``: a CASE."""
        guards: list[tuple[Expr, str, Expr]] = []
        while True:
            token = self.tokens[self.at]
            if token.text in ("var", "let", "const"):
                self.declaration()
            elif token.text == "if":
                guards.append(self.guard())
            elif token.text == "return":
                self.take("return")
                result, kind = self.expression()
                self.semicolon()
                if not self.peek("}"):
                    raise self.refuse(self.tokens[self.at].pos, "code after return")
                break
            else:
                raise self.refuse(
                    token.pos,
                    f"{token.text or 'the end'!r}: a function here declares constants (var, "
                    "let, const), returns early with if (...) return ...; and ends with return",
                )
        for condition, value_kind, value in reversed(guards):
            kind = kind if kind == value_kind else ANY
            result = Operation("CASE", (condition, value, result), condition.pos, "CASE ELSE")
        return result, kind

    def semicolon(self) -> None:
        if self.peek(";"):
            self.take(";")

    def declaration(self) -> None:
        self.at += 1
        name = self.take(kind="name")
        if name.text in self.scope:
            raise self.refuse(name.pos, f"{name.text} is declared twice: assign a name once")
        self.take("=")
        self.scope[name.text] = self.expression()
        self.take(";")

    def guard(self) -> tuple[Expr, str, Expr]:
        self.take("if")
        self.take("(")
        condition = self.condition(*self.expression(), "if")
        self.take(")")
        braced = self.peek("{")
        if braced:
            self.take("{")
        self.take("return")
        value, kind = self.expression()
        self.semicolon()
        if braced:
            self.take("}")
        if self.peek("else"):
            raise self.refuse(self.tokens[self.at].pos, "else: write the rest after the if")
        return condition, kind, value

    # ------------------------------------------------------------------ expressions
    def expression(self) -> tuple[Expr, str]:
        first = self.binary(0)
        if not self.peek("?"):
            return first
        pos = self.take("?").pos
        yes, yes_kind = self.expression()
        self.take(":")
        no, no_kind = self.expression()
        condition = self.condition(*first, "?:")
        kind = yes_kind if yes_kind == no_kind else ANY
        return Operation("CASE", (condition, yes, no), pos, "CASE ELSE"), kind

    _LEVELS = (("||",), ("&&",), ("===", "!==", "==", "!="), ("<", "<=", ">", ">="))
    _LEVELS += (("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> tuple[Expr, str]:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.tokens[self.at].text in self._LEVELS[level]:
            token = self.tokens[self.at]
            self.at += 1
            left = self.combine(token, left, self.binary(level + 1))
        return left

    def combine(
        self, token: _Token, left: tuple[Expr, str], right: tuple[Expr, str]
    ) -> tuple[Expr, str]:
        op, pos = token.text, token.pos
        (a, ka), (b, kb) = left, right
        if op in ("&&", "||"):
            a, b = self.condition(a, ka, op), self.condition(b, kb, op)
            return Operation("AND" if op == "&&" else "OR", (a, b), pos, ""), BOOL
        if op in ("==", "!="):
            raise self.refuse(pos, f"{op} converts types in JavaScript: write {op}= ")
        if op in ("===", "!=="):
            return Operation("comparison", (a, b), pos, "=" if op == "===" else "<>"), BOOL
        if op in ("<", "<=", ">", ">="):
            return Operation("comparison", (a, b), pos, op), BOOL
        if op == "+" and (ka not in (NUM, INT) or kb not in (NUM, INT)):
            raise self.refuse(
                pos,
                "+ of values that may be text: JavaScript joins text and adds numbers; "
                "write the numbers' arithmetic, or join text in the query with CONCAT",
            )
        for kind in (ka, kb):
            if kind in (TEXT, BOOL):
                raise self.refuse(pos, f"{op} of a {kind}: JavaScript would convert it")
        return Operation("arithmetic", (a, b), pos, op), NUM

    def unary(self) -> tuple[Expr, str]:
        token = self.tokens[self.at]
        if token.text in ("-", "!", "+"):
            self.at += 1
            operand, kind = self.unary()
            if token.text == "!":
                negated = self.condition(operand, kind, "!")
                return Operation("NOT", (negated,), token.pos, ""), BOOL
            if token.text == "+" or kind in (TEXT, BOOL):
                raise self.refuse(token.pos, f"{token.text} of a {kind}: JavaScript converts it")
            return Operation("sign", (operand,), token.pos, "-"), NUM
        return self.postfix()

    def postfix(self) -> tuple[Expr, str]:
        token = self.tokens[self.at]
        if token.text == "Math" and self.tokens[self.at + 1].text == ".":
            self.at += 2
            return self.math(self.take(kind="name"))
        if token.text == "parseInt":
            self.at += 1
            return self.parse_int(token)
        value = self.primary()
        while self.peek("."):
            self.take(".")
            method = self.take(kind="name")
            self.take("(")
            self.take(")")
            if method.text not in ("toUpperCase", "toLowerCase"):
                raise self.refuse(
                    method.pos,
                    f".{method.text}() is not read: sparktide reads toUpperCase() and "
                    "toLowerCase()",
                )
            name = "UPPER" if method.text == "toUpperCase" else "LOWER"
            value = (Call((name,), (value[0],), method.pos), TEXT)
        return value

    def arguments(self) -> list[tuple[Expr, str]]:
        self.take("(")
        args = []
        while not self.peek(")"):
            args.append(self.expression())
            if not self.peek(")"):
                self.take(",")
        self.take(")")
        return args

    def parse_int(self, token: _Token) -> tuple[Expr, str]:
        args = self.arguments()
        radix = args[1][0] if len(args) == 2 else None
        if not (isinstance(radix, Literal) and type(radix.value) is int and 2 <= radix.value <= 36):
            raise self.refuse(
                token.pos, "parseInt(text, radix): pass the radix, an integer from 2 to 36"
            )
        return Call(("PARSEINT",), (args[0][0], radix), token.pos), INT

    def math(self, name: _Token) -> tuple[Expr, str]:
        args = self.arguments()
        wanted = 2 if name.text in ("pow", "min", "max") else 1
        if name.text not in (*_MATH, "round", "pow", "min", "max") or len(args) != wanted:
            raise self.refuse(name.pos, f"Math.{name.text} with {len(args)} arguments is not read")
        for _, kind in args:
            if kind in (TEXT, BOOL):
                raise self.refuse(name.pos, f"Math.{name.text} of a {kind}: JavaScript converts it")
        pos = name.pos
        values = [a for a, _ in args]
        if name.text in _MATH:
            return Call((_MATH[name.text],), (values[0],), pos), NUM
        if name.text == "pow":
            return Call(("POWER",), tuple(values), pos), NUM
        if name.text == "round":  # (half up, as JavaScript rounds: -2.5 is -2)
            half = Operation("arithmetic", (values[0], Literal(Decimal("0.5"), pos)), pos, "+")
            return Call(("FLOOR",), (half,), pos), NUM
        a, b = values
        missing = tuple(Operation("IS NULL", (v,), pos, "IS NULL") for v in values)
        nulls = Operation("OR", missing, pos, "")
        first = Operation("comparison", (a, b), pos, "<=" if name.text == "min" else ">=")
        return Operation("CASE", (nulls, Literal(None, pos), first, a, b), pos, "CASE ELSE"), NUM

    def primary(self) -> tuple[Expr, str]:
        token = self.tokens[self.at]
        self.at += 1
        if token.kind == "number":
            text = token.text
            value: Any = int(text) if text.isdigit() else Decimal(text)
            return Literal(value, token.pos), NUM
        if token.kind == "string":
            return Literal(self.text(token), token.pos), TEXT
        if token.text in ("true", "false"):
            return Literal(token.text == "true", token.pos), BOOL
        if token.text == "null":
            return Literal(None, token.pos), ANY
        if token.kind == "name" and token.text in self.scope:
            value, kind = self.scope[token.text]
            if isinstance(value, Column):  # (a parameter: placed where it is read)
                value = Column(value.parts, token.pos)
            return value, kind
        if token.text == "(":
            inner = self.expression()
            self.take(")")
            return inner
        raise self.refuse(token.pos, f"{token.text or 'the end'!r} is not read here")

    def text(self, token: _Token) -> str:
        """A string literal's text: ``\\n``, ``\\t``, ``\\r``, ``\\0``, quotes, the
        backslash, ``\\xHH`` and ``\\uHHHH``; any other escape is refused."""

        def escape(match: re.Match[str]) -> str:
            code = match.group(1)
            if code[0] in "xu" and len(code) > 1:
                return chr(int(code[1:], 16))
            if code in _ESCAPES:
                return _ESCAPES[code]
            raise self.refuse(token.pos, f"the escape \\{code} is not read in a text")

        return re.sub(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", escape, token.text[1:-1])

    def condition(self, expr: Expr, kind: str, where: str) -> Expr:
        if kind != BOOL:
            raise self.refuse(
                expr.pos,
                f"{where} of a value that is no condition: JavaScript's truthiness (0, '', "
                "null are false) is not read; compare it (x !== null, x > 0)",
            )
        return expr


def compile_function(text: str, source: str) -> JsFunction:
    """The JavaScript function of ``text`` (the file ``source``) as an expression.

    Raises
    ------
    QueryError
        Naming the place in the file of what is not read (see the module).
    """
    return _Reader(text, source).function()


def expand(function: JsFunction, call: Call, refuse: Any) -> Expr:
    """The call ``udf.<name>(args)`` as the function's expression over its arguments,
    its result converted as Stream Analytics converts a JavaScript number (an integral
    one within 64 bits is a bigint)."""
    if len(call.args) != len(function.params) or call.star or call.over is not None:
        raise refuse(
            call.pos,
            f"{call.text[:-2]}(...) takes {len(function.params)} argument"
            f"{'' if len(function.params) == 1 else 's'} ({', '.join(function.params)})",
        )
    from sparktide.query.translate.inline import map_columns  # (no import cycle at load)

    def argument(column: Column) -> Expr:  # (a parameter, $<i>: the call's argument)
        name = column.parts[0]
        return call.args[int(name[1:])] if name.startswith("$") else column

    body = map_columns(function.body, argument)
    if function.kind in (INT, TEXT, BOOL):
        return body
    pos = call.pos
    whole = Operation("comparison", (body, Call(("FLOOR",), (body,), pos)), pos, "=")
    small = Operation(
        "comparison", (Call(("ABS",), (body,), pos), Literal(Decimal("9.2e18"), pos)), pos, "<"
    )
    integral = Operation("AND", (whole, small), pos, "")
    bigint = Operation("CAST", (body,), pos, "TRY_CAST bigint")
    return Operation("CASE", (integral, bigint, body), pos, "CASE ELSE")


def expand_calls(node: Any, functions: dict[str, JsFunction], refuse: Any) -> Any:
    """``node`` (a query, or any part of one) with every ``udf.<name>(...)`` call the
    function's expression over its arguments (:func:`expand`); a call of a function the
    job file does not bind is refused, saying how to bind it."""
    if isinstance(node, Call) and len(node.name) == 2 and node.name[0].casefold() == "udf":
        function = functions.get(node.name[1].casefold())
        if function is None:
            raise refuse(
                node.pos,
                f"{node.text[:-2]}(...): bind the function in the job file, "
                f'[functions.{node.name[1]}] javascript = "{node.name[1]}.js" (sparktide reads '
                "a JavaScript function as an expression; C# functions are not read)",
            )
        args = tuple(expand_calls(a, functions, refuse) for a in node.args)
        return expand(function, dataclasses.replace(node, args=args), refuse)
    if isinstance(node, tuple):
        changed = tuple(expand_calls(item, functions, refuse) for item in node)
        return changed if any(a is not b for a, b in zip(changed, node, strict=True)) else node
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {}
        for item in dataclasses.fields(node):
            value = getattr(node, item.name)
            new = expand_calls(value, functions, refuse)
            if new is not value:
                changes[item.name] = new
        return dataclasses.replace(node, **changes) if changes else node
    return node
