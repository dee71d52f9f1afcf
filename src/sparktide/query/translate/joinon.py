"""The ``ON`` of a JOIN of two inputs: equal columns and one time bound.

``ON a.k = b.k AND DATEDIFF(unit, a, b) BETWEEN low AND high`` becomes the job's
``[join] on`` (the equal columns, the same name on both sides) and ``between`` (the
bounds of ``right − left``, in microseconds). A JOIN with reference data has equal
columns only: its table has no time.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from sparktide.query.asaql.windows import TIME_UNITS
from sparktide.query.ast import Call, Column, Expr, FromSource, Join, Literal, Operation
from sparktide.query.refusal import Refuse, check_column
from sparktide.query.translate.context import describe, source_names
from sparktide.time import DAY

__all__ = ["MAX_JOIN_BOUND", "JoinCondition", "conjuncts"]

#: Stream Analytics' largest time bound of a JOIN (``DATEDIFF`` up to seven days).
MAX_JOIN_BOUND = 7 * DAY


class JoinCondition:
    """Reads the ``ON`` of a JOIN, refusing with ``refuse``."""

    def __init__(self, refuse: Refuse) -> None:
        self.refuse = refuse

    def join_condition(
        self,
        join: Join,
        left: FromSource,
        right: FromSource,
        *,
        reference: bool = False,
        window: bool = False,
    ) -> tuple[tuple[str | tuple[str, str], ...], tuple[int, int] | None, tuple[Expr, ...]]:
        """The join columns, the time bound and the other terms of ``ON`` (a condition a
        pair must also meet, semantics §11.8). With ``reference`` (``right`` is reference
        data) ``ON`` must not bound time, and the bound is ``None``. With ``window``
        (``right`` is a window's records, §7.12) ``ON`` needs no join column: an
        equality of differently named columns (``Input.Time = Last.LastTime``) is part
        of the condition; elsewhere it is a join column pair (``[left, right]``)."""
        on: list[str | tuple[str, str]] = []
        between: tuple[int, int] | None = None
        others: list[Expr] = []
        for term in conjuncts(join.condition):
            if isinstance(term, Operation) and term.kind == "BETWEEN":
                call = term.operands[0]
                if isinstance(call, Call) and call.function == "datediff" and reference:
                    raise self.refuse(
                        call.pos,
                        f"DATEDIFF in the ON of a JOIN with reference data: {right.name} is "
                        "reference data, which has no time (Stream Analytics refuses DATEDIFF "
                        "there too); ON holds equalities of columns (a.k = b.k)",
                    )
                if isinstance(call, Call) and call.function == "datediff":
                    if between is not None:
                        raise self.refuse(
                            call.pos, "a second DATEDIFF in ON: a JOIN has one time bound"
                        )
                    between = self.time_bound(term, call, left, right)
                    continue
            if self.is_key(term, left, right, named_alike=window):
                column = self.join_key(term, left, right)  # type: ignore[arg-type]
                if column not in on:
                    on.append(column)
                continue
            if _datediffs(term):
                raise self.refuse(
                    term.pos,
                    f"{describe(term)} in the ON of a JOIN is not supported yet: ON holds one "
                    "DATEDIFF(unit, a, b) BETWEEN low AND high, equalities of columns (a.k = "
                    "b.k) and conditions over both inputs' fields",
                )
            others.append(term)
        if between is None and not reference:
            raise self.refuse(
                join.pos,
                "JOIN without DATEDIFF(unit, a, b) BETWEEN low AND high in ON: Stream Analytics "
                "joins of two streams need a time bound (a JOIN with reference data has none: "
                f"say so in the job file, [inputs.{right.name}] reference = true)",
            )
        if not on and not window:  # (an equality that is no join column says why)
            for term in others:
                if isinstance(term, Operation) and term.kind == "comparison":
                    if term.operator == "=":
                        self.join_key(term, left, right)
            raise self.refuse(
                join.pos,
                "JOIN without an equality of columns (a.k = b.k) in ON is not supported yet: "
                "the job joins on columns",
            )
        return tuple(on), between, tuple(others)

    def is_key(
        self, term: Expr, left: FromSource, right: FromSource, *, named_alike: bool = False
    ) -> bool:
        """Whether ``term`` is an equality of a column of each input (``a.k = b.j``; with
        ``named_alike``, of the same name only): a join column; other equalities are
        conditions."""
        if not (isinstance(term, Operation) and term.kind == "comparison"):
            return False
        if term.operator != "=" or not all(
            isinstance(o, Column) and len(o.parts) >= 2 for o in term.operands
        ):
            return False
        first, second = term.operands
        assert isinstance(first, Column) and isinstance(second, Column)
        names = {source_names(left).__contains__(c.parts[0].casefold()) for c in (first, second)}
        return names == {True, False} and (first.parts[1:] == second.parts[1:] or not named_alike)

    def join_key(
        self, term: Operation, left: FromSource, right: FromSource
    ) -> str | tuple[str, str]:
        """The column of ``a.k = b.k`` (one side each), or the pair ``(k, j)`` of
        ``a.k = b.j``."""
        sides: dict[str, str] = {}
        written = " = ".join(describe(o) for o in term.operands)
        for operand in term.operands:
            side = self.key_side(operand, left, right)
            assert isinstance(operand, Column)
            if side in sides:
                raise self.refuse(
                    term.pos,
                    f"{written} compares two columns of one input: ON equalities compare a "
                    "column of each input (a.k = b.k)",
                )
            sides[side] = ".".join(  # (with dots: a value inside a record, IoTHub.DeviceId)
                check_column(part, operand.pos, self.refuse) for part in operand.parts[1:]
            )
        if sides["left"] != sides["right"]:
            return sides["left"], sides["right"]
        return sides["left"]

    def key_side(self, operand: Expr, left: FromSource, right: FromSource) -> str:
        """``left`` or ``right``: the input whose column ``input.k`` (an operand of an ON
        equality) is."""
        if not isinstance(operand, Column) or len(operand.parts) < 2:
            if isinstance(operand, Column) and len(operand.parts) == 1:
                raise self.refuse(
                    operand.pos,
                    f"{operand.name} in the ON of a JOIN: qualify it with its input "
                    f"({left.alias or left.name}.{operand.name} = "
                    f"{right.alias or right.name}.{operand.name})",
                )
            raise self.refuse(
                operand.pos,
                f"{describe(operand)} in an equality of ON is not supported yet: the job "
                "joins on columns (a.k = b.k)",
            )
        qualifier = operand.parts[0].casefold()
        if qualifier in source_names(left):
            return "left"
        if qualifier in source_names(right):
            return "right"
        raise self.refuse(operand.pos, f"{operand.parts[0]} names neither input of the JOIN")

    def time_bound(
        self, term: Operation, call: Call, left: FromSource, right: FromSource
    ) -> tuple[int, int]:
        """``DATEDIFF(unit, a, b) BETWEEN low AND high`` as bounds of ``right − left``.

        Stream Analytics' DATEDIFF(unit, a, b) is ``b − a``: with ``a`` the FROM input
        (left) it bounds ``right − left`` directly, the other way round its negation.
        """
        if term.operator != "BETWEEN":
            raise self.refuse(
                call.pos, f"DATEDIFF(...) {term.operator} in ON: the time bound is BETWEEN"
            )
        if call.star or call.distinct or len(call.args) != 3:
            raise self.refuse(call.pos, "DATEDIFF(unit, a, b) takes a unit and the two inputs")
        unit_arg, first, second = call.args
        unit = self.unit(unit_arg)
        sides = [self.side(arg, left, right) for arg in (first, second)]
        if sides[0] == sides[1]:
            raise self.refuse(call.pos, "DATEDIFF(unit, a, b) in a JOIN names both inputs")
        low = self.amount(term.operands[1], unit)
        high = self.amount(term.operands[2], unit)
        if low > high:
            raise self.refuse(
                term.operands[1].pos,
                "BETWEEN low AND high with low above high matches nothing",
            )
        if max(abs(low), abs(high)) > MAX_JOIN_BOUND:
            raise self.refuse(
                term.operands[1].pos,
                "Stream Analytics bounds a JOIN's DATEDIFF to 7 days",
            )
        return (low, high) if sides[0] == "left" else (-high, -low)

    def unit(self, unit_arg: Expr) -> int:
        """The unit of a JOIN's ``DATEDIFF``, in microseconds."""
        unit = (
            TIME_UNITS.get(unit_arg.parts[0].lower())
            if isinstance(unit_arg, Column) and len(unit_arg.parts) == 1
            else None
        )
        if unit is None:
            raise self.refuse(
                unit_arg.pos,
                f"DATEDIFF({describe(unit_arg)}, ...) in a JOIN: use day, hour, minute, "
                "second, millisecond or microsecond",
            )
        return unit

    def side(self, arg: Expr, left: FromSource, right: FromSource) -> str:
        """``left`` or ``right``: the input a time of a JOIN's ``DATEDIFF`` names."""
        name = arg.parts[0].casefold() if isinstance(arg, Column) else None
        if not isinstance(arg, Column) or len(arg.parts) != 1:
            raise self.refuse(
                arg.pos,
                f"DATEDIFF(unit, {describe(arg)}, ...) in the ON of a JOIN is not supported "
                "yet: name the two inputs (DATEDIFF(minute, a, b)), whose timestamps it "
                "bounds",
            )
        if name in source_names(left):
            return "left"
        if name in source_names(right):
            return "right"
        raise self.refuse(arg.pos, f"{arg.name} names neither input of the JOIN")

    def amount(self, expr: Expr, unit: int) -> int:
        """A signed number of ``unit`` s, in microseconds."""
        node, negative = expr, False
        if isinstance(node, Operation) and node.kind == "sign":
            negative, node = node.operator == "-", node.operands[0]
        value = node.value if isinstance(node, Literal) else None
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise self.refuse(
                expr.pos,
                f"{describe(expr)} as a bound of DATEDIFF: use a number of the unit",
            )
        micros = Decimal(node.value) * unit
        if micros != micros.to_integral_value():
            raise self.refuse(node.pos, f"{node.value} is not a whole number of microseconds")
        return -int(micros) if negative else int(micros)


def _datediffs(expr: Expr) -> bool:
    """Whether ``expr`` holds a ``DATEDIFF`` of two inputs (the time bound's function)."""
    if isinstance(expr, Call):
        if expr.function == "datediff":
            return True
        return any(_datediffs(a) for a in expr.args)
    if isinstance(expr, Operation):
        return any(_datediffs(o) for o in expr.operands)
    return False


def conjuncts(condition: Expr) -> list[Expr]:
    """The terms of ``a AND b AND ...``, in text order."""
    if isinstance(condition, Operation) and condition.kind == "AND":
        return [term for operand in condition.operands for term in conjuncts(operand)]
    return [condition]


def all_of(terms: Sequence[Expr]) -> Expr:
    """``terms[0] AND terms[1] AND ...`` (one or more terms), as the parser writes it."""
    condition = terms[0]
    for term in terms[1:]:
        condition = Operation("AND", (condition, term), condition.pos, "AND")
    return condition
