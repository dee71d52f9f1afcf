"""``LAG``, ``LAST``, ``ISFIRST`` and the analytic forms of ``SUM``, ``COUNT``, ``AVG``,
``MIN``, ``MAX`` (``SUM(x) OVER ([PARTITION BY ...] LIMIT DURATION(unit, n) [WHEN
cond])``) of a query → ``[analytic.<name>]`` tables (semantics §11.19): each call becomes
a named column that ``[filter]`` and ``[select]`` read (``_lag1``, ``_last2``,
``_isfirst3``, ``_sum4``: the names of a query's analytic columns). A call inside
another's argument, ``PARTITION BY`` or ``WHEN`` (written there, or through a step's
column that is one) is a column of its own, made first; the outer column's expression
names it, and reads its value of each event (semantics §11.19, columns reading
columns)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparktide import expr as E
from sparktide.job import ANALYTIC_AGGREGATES
from sparktide.query.ast import Call, Literal
from sparktide.query.exprs import convert
from sparktide.query.refusal import Refuse
from sparktide.query.translate.context import duration_micros

__all__ = ["ANALYTIC_AGGREGATE_CALLS", "ANALYTIC_CALLS", "AnalyticColumns", "is_analytic"]

#: The analytic functions, as a query names them (any case).
ANALYTIC_CALLS = ("lag", "last", "isfirst")
#: The aggregates that have an analytic form (the call with ``OVER (... LIMIT DURATION
#: ...)``), named as the job file names them.
ANALYTIC_AGGREGATE_CALLS = ANALYTIC_AGGREGATES


def is_analytic(call: Call) -> bool:
    """Whether ``call`` is an analytic function: ``LAG``, ``LAST``, ``ISFIRST``, or an
    aggregate of :data:`ANALYTIC_AGGREGATE_CALLS` with ``OVER (...)``."""
    if call.function in ANALYTIC_CALLS:
        return True
    return call.function in ANALYTIC_AGGREGATE_CALLS and call.over is not None


class AnalyticColumns:
    """The analytic columns a statement's expressions call, in order of use."""

    def __init__(self, refuse: Refuse) -> None:
        self.refuse = refuse
        self.tables: dict[str, dict[str, Any]] = {}

    def column(self, call: Call, field: Callable[[Any], E.Expr], clause: str) -> E.Expr:
        """The column of the analytic ``call`` (``field``: reads the input's fields)."""
        function = call.function
        if call.distinct:
            raise self.refuse(
                call.pos, f"{function.upper()}(DISTINCT ...) OVER (...) is not supported"
            )
        if call.star and function != "count":
            raise self.refuse(call.pos, f"{call.text[:-2]}(*) is not supported yet")

        def text(node: Any) -> str:
            # (an analytic call inside, also through a step's column that is one, is its
            # own column, declared first: this one reads its value for the same event)
            return E.to_text(convert(node, field, self.refuse, clause))

        over = call.over
        if over is not None and over.order_by:
            raise self.refuse(over.pos, f"{function.upper()} takes no ORDER BY in OVER")
        table: dict[str, Any] = {"function": function}
        args = list(call.args)
        if function == "isfirst":
            table["period"] = self._duration(args, call, "ISFIRST(unit, length)")
        elif function in ANALYTIC_AGGREGATE_CALLS:
            if len(args) != (0 if call.star else 1):
                raise self.refuse(call.pos, f"{function.upper()}(...) OVER (...) takes one value")
            if args:
                table["value"] = text(args[0])
            if over is None or over.limit is None:
                raise self.refuse(
                    call.pos, f"{function.upper()}(...) OVER needs LIMIT DURATION(unit, length)"
                )
        else:
            if not 1 <= len(args) <= (3 if function == "lag" else 2):
                raise self.refuse(call.pos, f"{function.upper()}: wrong number of arguments")
            table["value"] = text(args[0])
            if function == "lag" and len(args) > 1:
                offset = args[1]
                if not (isinstance(offset, Literal) and isinstance(offset.value, int)):
                    raise self.refuse(offset.pos, "LAG's offset is an integer of 1 or more")
                table["offset"] = offset.value
            if len(args) > (2 if function == "lag" else 1):
                table["default"] = text(args[-1])
            if over is None or over.limit is None:
                raise self.refuse(
                    call.pos, f"{function.upper()} needs OVER (LIMIT DURATION(unit, length))"
                )
        if over is not None:
            if over.partition_by:
                table["partition_by"] = [text(e) for e in over.partition_by]
            if over.limit is not None:
                if function == "isfirst":
                    raise self.refuse(over.limit[2], "ISFIRST takes no LIMIT DURATION")
                unit, length, pos = over.limit
                table["limit_duration"] = self._micros(unit, length, pos)
            if over.when is not None:
                table["when"] = text(over.when)
        for name, known in self.tables.items():  # the same call twice is one column
            if known == table:
                return E.Ref(name)
        name = f"_{function}{len(self.tables) + 1}"
        self.tables[name] = table
        return E.Ref(name)

    def _duration(self, args: list[Any], call: Call, shape: str) -> str:
        if len(args) != 2 or not isinstance(args[1], Literal):
            raise self.refuse(call.pos, f"{shape} takes a unit and a length")
        unit = args[0]
        name = unit.parts[0] if hasattr(unit, "parts") and len(unit.parts) == 1 else ""
        return self._micros(name, args[1].value, call.pos)

    def _micros(self, unit: str, length: Any, pos: Any) -> str:
        return duration_micros(unit, length, pos, self.refuse)
