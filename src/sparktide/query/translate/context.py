"""What every part of one statement's translation shares.

A :class:`Context` carries the statement's :class:`~sparktide.query.refusal.Refuse`, the
job file's bindings and the notes for a reader of the job, in the order they are
made. The small helpers here read the syntax tree the same way in every part: which
names a FROM source answers to, whether a call is ``System.Timestamp()``, which calls
are aggregates, and how a construct is described in a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sparktide import expr as E
from sparktide.errors import QueryError
from sparktide.query.ast import Call, Column, Expr, FromSource, Literal, Operation, Pos, Star
from sparktide.query.bind import Bindings
from sparktide.query.refusal import Refuse

__all__ = [
    "AGGREGATES",
    "ORDERED_AGGREGATES",
    "OTHER_AGGREGATES",
    "UNIT_CALLS",
    "Context",
    "describe",
    "duration_micros",
    "inside",
    "is_aggregate",
    "is_scalar",
    "is_timestamp",
    "qualify_over_join",
    "reads_timestamp",
    "source_names",
    "unsupported_call",
]

#: Calls whose first argument is a date part (``DATEDIFF(second, a, b)``), not a column.
UNIT_CALLS = ("datediff", "dateadd", "datepart", "datename", "isfirst")

#: Stream Analytics aggregates and the sparktide functions they become.
AGGREGATES = {
    "count": "count",
    "countif": "count_if",
    "sum": "sum",
    "avg": "avg",
    "min": "min",
    "max": "max",
    "collect": "collect",
    "stdev": "stdev",
    "stdevp": "stdevp",
    "var": "var",
    "varp": "varp",
    "topone": "topone",
    "collecttop": "collecttop",
    "percentile_cont": "percentile_cont",
    "percentile_disc": "percentile_disc",
}
#: Stream Analytics aggregates that take ``OVER (ORDER BY ...)``.
ORDERED_AGGREGATES = ("topone", "collecttop", "percentile_cont", "percentile_disc")
#: Stream Analytics aggregates sparktide cannot compute yet (refused by name).
OTHER_AGGREGATES: tuple[str, ...] = ()


@dataclass
class Context:
    """One statement's translation: where it refuses, what binds it, what it notes.

    Attributes
    ----------
    refuse
        Makes the :class:`~sparktide.errors.QueryError` of a place in the query.
    bindings
        The job file's bindings of input and output names.
    notes
        What a reader of the job should know about the mapping, one sentence each.
    """

    refuse: Refuse
    bindings: Bindings
    notes: list[str] = field(default_factory=list)


def qualify_over_join(refuse: Refuse, node: Column, side: FromSource) -> QueryError:
    """The refusal of the unqualified column ``node`` over a JOIN (``side``: the input
    the message suggests)."""
    return refuse(
        node.pos,
        f"{node.name} over a JOIN: qualify it with its input "
        f"({side.alias or side.name}.{node.name}); sparktide does not know which input's "
        "fields hold it",
    )


def duration_micros(unit: str, length: Any, pos: Pos, refuse: Refuse) -> str:
    """``LIMIT DURATION(unit, length)``'s duration as job-file text (``"90000000us"``);
    refused unless a positive whole number of microseconds of a known unit."""
    found = E.DATEDIFF_UNITS.get(unit.lower())
    if found is None:
        raise refuse(
            pos, f"{unit!r} is not a unit: day, hour, minute, second, millisecond, microsecond"
        )
    micros = Decimal(str(length)) * found[1]
    if micros <= 0 or micros != int(micros):
        raise refuse(pos, f"the duration {length} {unit} is not a positive whole µs")
    return f"{int(micros)}us"


def inside(field: E.Expr, parts: Sequence[str]) -> E.Expr:
    """``field``, or the value inside it at ``parts`` (Stream Analytics' dot notation,
    ``r.a.b``): ``GetRecordPropertyValue(field, 'a.b')``, a part with a dot bracketed
    (semantics §11.14)."""
    if not parts:
        return field
    path = ".".join(
        f"[{p.replace(']', ']]')}]" if "." in p or p.startswith("[") else p for p in parts
    )
    return E.Func("GETRECORDPROPERTYVALUE", (field, E.Lit(path)))


def source_names(source: FromSource) -> set[str]:
    """The case-folded names ``source`` answers to: its input's name and its alias."""
    names = {source.name.casefold()}
    if source.alias is not None:
        names.add(source.alias.casefold())
    return names


def is_timestamp(expr: Expr) -> bool:
    """Whether ``expr`` is ``System.Timestamp()`` (or ``System.Timestamp`` written bare)."""
    if isinstance(expr, Call):
        return expr.function == "system.timestamp" and not expr.args and not expr.star
    return isinstance(expr, Column) and expr.name.casefold() == "system.timestamp"


def reads_timestamp(expr: Expr) -> bool:
    """Whether ``expr`` reads ``System.Timestamp()`` anywhere."""
    if is_timestamp(expr):
        return True
    if isinstance(expr, Call):
        return any(reads_timestamp(a) for a in expr.args)
    if isinstance(expr, Operation):
        return any(reads_timestamp(o) for o in expr.operands)
    return False


def is_scalar(call: Call) -> bool:
    """Whether ``call`` is a scalar function the expression language has (``DATEDIFF``,
    ``UPPER``, ``DATEADD`` ...)."""
    return call.function == "datediff" or call.function.upper() in E.FUNCTIONS


def is_aggregate(call: Call) -> bool:
    """Whether ``call`` is a Stream Analytics aggregate, computed or not."""
    return call.function in AGGREGATES or call.function in OTHER_AGGREGATES


def describe(expr: Expr | Star) -> str:
    """``expr`` as messages name it: ``i.*``, ``TollId``, ``LEN(...)``, ``a constant`` ..."""
    if isinstance(expr, Star):
        return "*" if expr.qualifier is None else f"{expr.qualifier}.*"
    if isinstance(expr, Column):
        return expr.name
    if isinstance(expr, Call):
        return ".".join(expr.name) + "(...)"
    if isinstance(expr, Literal):
        return "a constant"
    if expr.kind in ("comparison", "arithmetic"):
        return f"an expression with {expr.operator!r}"
    return f"an expression with {expr.operator or expr.kind}"


def unsupported_call(call: Call, refuse: Refuse, aggregate_reason: str) -> QueryError:
    """The refusal of a call where only columns are read: an aggregate (``COUNT(...)
    <aggregate_reason>``), or any other function (functions are not translated)."""
    if is_aggregate(call):
        return refuse(call.pos, f"{call.text[:-2].upper()}(...) {aggregate_reason}")
    return refuse(
        call.pos,
        f"{call.text[:-2]}(...) is not supported yet: functions are not translated "
        "(only the scalar functions of docs/semantics.md §11.11, aggregates and "
        "System.Timestamp())",
    )
