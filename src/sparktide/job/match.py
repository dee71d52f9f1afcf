"""``[match]``: Stream Analytics' ``MATCH_RECOGNIZE`` (semantics §11.25) — a row pattern
over each partition's released events, one record per match::

    [match]
    partition_by = ["tollBoothId"]        # expressions: each partition is matched alone
    limit_duration = "1m"                 # a match's rows lie within this of its first
    pattern = "Toyota+ Ford* Lexus+"      # variables, '.', ( | ), * + ? {n,m}
    define = { Toyota = "make = 'Toyota'", Lexus = "make = 'Lexus'" }
    measures = { first_plate = "first(Toyota.plate)", lexus_plate = "last(Lexus.plate)",
                 cars = "count(*)" }

A variable without a ``define`` condition meets every event. Every event starts an
attempt (Stream Analytics' ``AFTER MATCH SKIP TO NEXT ROW``: matches may overlap), and
each match writes one record: its measures, in order, and its ``timestamp`` (its last
event's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparktide.errors import ConfigError
from sparktide.expr import SYSTEM_TIMESTAMP, Expr, parse_expression
from sparktide.job.expressions import check_references
from sparktide.job.pattern import Program, compile_pattern
from sparktide.job.values import check_column, check_column_path, normalise_duration, set_field

if TYPE_CHECKING:
    from sparktide.job.model import Job

__all__ = ["MEASURE_FUNCTIONS", "Match", "Measure", "check_match"]

#: What a measure may compute over a match's rows (of one variable, or all of them).
MEASURE_FUNCTIONS = ("first", "last", "count")

#: The most pattern variables a pattern may name (each is a bit of a row's mask).
MAX_VARIABLES = 62

_MEASURE = re.compile(
    r"\s*(?P<function>[A-Za-z]+)\s*\(\s*(?:(?P<star>\*)|(?P<path>[A-Za-z_][\w\-]*"
    r"(?:\.[A-Za-z_][\w\-]*)*))\s*\)\s*\Z"
)


@dataclass(frozen=True)
class Measure:
    """One measure: ``function`` over the rows of ``variable`` (``None``: every row of the
    match), reading ``column`` (``None`` for ``count``)."""

    name: str
    function: str
    variable: str | None
    column: str | None


@dataclass(frozen=True)
class Match:
    """``[match]`` (see the module docstring)."""

    pattern: str
    limit_duration: int | str
    measures: dict[str, str]
    define: dict[str, str] | None = None
    partition_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        normalise_duration(self, "limit_duration", "match.limit_duration", positive=True)
        program = compile_pattern(self.pattern, "match.pattern")
        if len(program.variables) > MAX_VARIABLES:
            raise ConfigError("match.pattern", f"names more than {MAX_VARIABLES} variables")
        define = dict(self.define or {})
        for name, condition in define.items():
            key = f"match.define.{name}"
            if name not in program.variables:
                raise ConfigError(key, f"{name} is not a variable of the pattern")
            if not isinstance(condition, str):
                raise ConfigError(key, f"must be a condition, got {condition!r}")
            parse_expression(condition, key)
        set_field(self, "define", define)
        if isinstance(self.partition_by, str) or not isinstance(self.partition_by, list | tuple):
            raise ConfigError(
                "match.partition_by", f"must be a list of expressions, got {self.partition_by!r}"
            )
        set_field(self, "partition_by", tuple(self.partition_by))
        for i, text in enumerate(self.partition_by):
            parse_expression(text, f"match.partition_by[{i}]")
        if not isinstance(self.measures, dict) or not self.measures:
            raise ConfigError("match.measures", 'names at least one measure: name = "last(A.x)"')
        for name, text in self.measures.items():
            _measure(name, text, program.variables)
        set_field(self, "_program", program)

    @property
    def program(self) -> Program:
        """The compiled pattern."""
        return self._program  # type: ignore[attr-defined,no-any-return]

    @property
    def conditions(self) -> tuple[Expr | None, ...]:
        """Each pattern variable's condition (by its position), ``None`` for none."""
        assert self.define is not None
        return tuple(
            None
            if name not in self.define
            else parse_expression(self.define[name], f"match.define.{name}")
            for name in self.program.variables
        )

    @property
    def partition_expressions(self) -> tuple[Expr, ...]:
        """The ``partition_by`` expressions, parsed."""
        return tuple(
            parse_expression(text, f"match.partition_by[{i}]")
            for i, text in enumerate(self.partition_by)
        )

    @property
    def measure_list(self) -> tuple[Measure, ...]:
        """The measures, parsed, in order."""
        variables = self.program.variables
        return tuple(_measure(name, text, variables) for name, text in self.measures.items())

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns (paths) the measures read, in order."""
        return tuple(dict.fromkeys(m.column for m in self.measure_list if m.column is not None))

    def expressions(self) -> list[tuple[str, Expr]]:
        """``(key, expression)`` of the conditions and partition keys."""
        out = [(f"match.partition_by[{i}]", e) for i, e in enumerate(self.partition_expressions)]
        conditions = zip(self.program.variables, self.conditions, strict=True)
        out += [(f"match.define.{v}", c) for v, c in conditions if c is not None]
        return out


def _measure(name: str, text: Any, variables: tuple[str, ...]) -> Measure:
    """A measure's parsed form: ``first(A.x)``, ``last(x)``, ``count(A)``, ``count(*)``."""
    key = f"match.measures.{name}"
    check_column(name, key, optional=False)
    match = _MEASURE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ConfigError(
            key, f"expected first(A.column), last(A.column), count(A) or count(*), got {text!r}"
        )
    function = match.group("function").lower()
    if function not in MEASURE_FUNCTIONS:
        raise ConfigError(key, f"{function}: the measures are {', '.join(MEASURE_FUNCTIONS)}")
    path = match.group("path")
    head, _, rest = (path or "").partition(".")
    variable = head if head in variables else None
    column = rest if variable is not None else path
    if function == "count":
        if column:
            raise ConfigError(key, "count takes a pattern variable or *: count(A), count(*)")
        return Measure(name, function, variable, None)
    if match.group("star") or not column:
        raise ConfigError(
            key, f"{function} takes a column: {function}(A.column) or {function}(column)"
        )
    check_column_path(column, key)
    return Measure(name, function, variable, column)


def check_match(job: Job) -> None:
    """``[match]`` reads released events in timestamp order and writes its matches (with
    ``[select]``, columns computed from their measures): no window, join, reference
    data, analytic columns, ``[apply]``, ``[filter]`` or ``*`` in ``[select]``, and
    out-of-order events not accepted behind the watermark."""
    match = job.match
    if match is None:
        return
    if not isinstance(match, Match):
        raise ConfigError("match", f"expected a Match, got {match!r}")
    others = {
        "[window]": job.window is not None,
        "[join]": job.join is not None or bool(job.references),
        "[analytic]": bool(job.analytics),
        "[apply]": job.apply is not None,
        "[filter]": job.filter is not None,
        '[select] with "*"': job.select_star is not None,
        "edge or interval events": job.edges or job.source.intervals,
    }
    for table, present in others.items():
        if present:
            raise ConfigError(
                "match",
                f"a job with [match] writes its matches' measures: {table} is not supported "
                "with it (put a filter in the input's where; [select] may compute columns "
                "from the measures)",
            )
    allowed = (*match.measures, SYSTEM_TIMESTAMP.key)  # ([select]: the match's time too)
    for projection in job.select:
        check_references(
            projection.parsed, allowed, f"select.{projection.name}", "the match's measures"
        )
    if job.ordering.out_of_order_action == "accept":
        raise ConfigError(
            "match",
            "[match] reads events in timestamp order, which ordering.on_out_of_order = "
            "'accept' does not keep",
        )
