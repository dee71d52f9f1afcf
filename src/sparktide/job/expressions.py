"""Expressions in a job: ``[filter] where``, ``[window] having`` and ``[select]``.

The job checks the names each expression reads (:mod:`sparktide.expr` parses them):
a window's result columns for ``having`` and a windowed ``[select]``, ``<input>.<field>``
of a join's inputs for ``[select]`` over a join, plain fields everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any

from sparktide.errors import ConfigError
from sparktide.expr import (
    EVENT_INPUT,
    SYSTEM_TIMESTAMP,
    Binary,
    Case,
    Expr,
    Lit,
    Ref,
    casts,
    missing_tests,
    parse_expression,
    ref_nodes,
    references,
)
from sparktide.job.values import check_column

if TYPE_CHECKING:
    from sparktide.job.join import Join
    from sparktide.job.model import Job

__all__ = [
    "STAR",
    "Filter",
    "Projection",
    "check_join_references",
    "check_match_references",
    "check_missing_tests",
    "check_references",
    "expression_fields",
    "input_field_refused",
    "no_input_fields",
    "parse_text",
    "record_casts",
    "record_expressions",
]

#: The ``[select]`` key (and value) that stands for the record's fields.
STAR = "*"


def parse_text(text: Any, key: str) -> Expr:
    """The expression ``text`` at ``key`` parsed (a :class:`ConfigError` naming ``key``
    if it is not text or does not parse)."""
    if not isinstance(text, str):
        raise ConfigError(
            key, f'expected an expression as text, such as "speed > 50", got {text!r}'
        )
    return parse_expression(text, key)


#: Where ``System.Input()`` is read (semantics §11.22), for the messages refusing it.
EVENT_INPUT_READ = (
    "System.Input() is the union input an event comes from: it is read in a union's "
    "[filter], analytic columns, window group_by and aggregates, [apply] value, and "
    "[select] without a window"
)


def no_input_fields(
    expr: Expr,
    key: str,
    system_time: bool = False,
    event_input: bool = False,
    input_fields: bool = False,
) -> None:
    """Refuse ``input.field`` names where no join's match is read (unless
    ``input_fields``: a window's, which the job checks, :func:`check_match_references`),
    ``System.Timestamp()`` unless ``system_time`` (where an event's own timestamp is
    read: ``[filter]``, ``[select]`` without a window or a join, semantics §11.17), and
    ``System.Input()`` unless ``event_input`` (a window's grouping columns and
    aggregates, §11.22)."""
    for ref in ref_nodes(expr):
        if ref == EVENT_INPUT:
            if not event_input:
                raise ConfigError(key, EVENT_INPUT_READ)
            continue
        if ref == SYSTEM_TIMESTAMP:
            if not system_time:
                raise ConfigError(
                    key,
                    "System.Timestamp() is an event's timestamp: it is read in [filter] and "
                    "in [select] without a window or a join (a window's end is window_end, "
                    "a match's time timestamp)",
                )
            continue
        if ref.input is not None and not input_fields:
            raise input_field_refused(ref, key)


def input_field_refused(ref: Ref, key: str) -> ConfigError:
    """The error for ``input.field`` (``ref``) at ``key``, where no join's match is read."""
    return ConfigError(
        key,
        f"{ref.key!r} names a field of a join's input: input.field names are read by "
        f"[select] over a [join] and by a [window] over a join of two streams only; here "
        f"write {ref.name!r} (in a window over a join with reference data, a row's field "
        f"is GetRecordPropertyValue({ref.input}, {ref.name!r}))",
    )


def check_match_references(
    expr: Expr, join: Join, key: str, timed: bool = False, tables: tuple[str, ...] = ()
) -> None:
    """A window over a join of two streams reads each match (semantics §7.11):
    ``<input>.<field>`` of either input, or an input's record whole by its name; any
    other unqualified name is refused (no match has it). An aggregate (``timed``) may
    read ``System.Timestamp()``, the match's timestamp (§6.12); ``tables``: those each
    match meets, read as the inputs (§11.26)."""
    inputs = (join.left, join.right, *tables)
    for ref in ref_nodes(expr):
        if ref == EVENT_INPUT:
            continue
        if ref == SYSTEM_TIMESTAMP:
            if timed:  # (an aggregate's: the match's timestamp, §6.12)
                continue
            raise ConfigError(
                key,
                "System.Timestamp() in a grouping column over a join's matches is not "
                "supported: read it in an aggregate (the match's time), or read "
                f"{join.left}.<time field> or {join.right}.<time field>",
            )
        if ref.input is None and ref.name not in inputs:
            raise ConfigError(
                key,
                f"{ref.name!r} over a join: a window reads each match, whose fields are "
                f"{join.left}.<field> and {join.right}.<field> (or {join.left} and "
                f"{join.right}, each record whole): qualify it with its input",
            )
        if ref.input is not None and ref.input not in inputs:
            raise ConfigError(
                key,
                f"{ref.key!r}: {ref.input!r} is not an input of the join ({join.left} or "
                f"{join.right}; names are case-sensitive)",
            )


def check_join_references(expr: Expr, join: Join, key: str, tables: tuple[str, ...] = ()) -> None:
    """``[select]`` over a join reads ``<input>.<field>`` of either input (and of the
    ``tables`` a join of two streams meets, semantics §11.26) and the match's
    ``timestamp``; an unqualified field is refused (the inputs' fields are not known before
    the data, so no name is unambiguous)."""
    inputs = (join.left, join.right, *tables)
    for ref in ref_nodes(expr):
        if ref == SYSTEM_TIMESTAMP:
            raise ConfigError(key, "System.Timestamp() over a join: the match's time is timestamp")
        if ref.input is None and ref.name != "timestamp":
            raise ConfigError(
                key,
                f"{ref.name!r} over a join: qualify it with its input ({join.left}.{ref.name} "
                f"or {join.right}.{ref.name}); the match's own time is timestamp",
            )
        if ref.input is not None and ref.input not in inputs:
            raise ConfigError(
                key,
                f"{ref.key!r}: {ref.input!r} is not an input of the join ("
                + ", ".join(inputs[:-1])
                + f" or {inputs[-1]}; names are case-sensitive)",
            )


def check_references(
    expr: Expr, allowed: tuple[str, ...], key: str, what: str = "the window's result"
) -> None:
    """Refuse a name ``expr`` reads that is not one of the ``allowed`` columns (of the
    window's result, or ``what`` else)."""
    for name in references(expr):
        if name not in allowed:
            raise ConfigError(
                key, f"{name!r} is not a column of {what}; use one of {', '.join(allowed)}"
            )


@dataclass(frozen=True)
class Filter:
    """Which admitted events go on to the windows or the output (``[filter]``).

    The filter applies after the ordering policy: an event that fails it has already
    moved its timeline's watermark, and is counted as dropped with reason ``filtered``
    (``docs/semantics.md``).

    Parameters
    ----------
    where
        A condition over the record's top-level fields, such as
        ``"speed > 50 AND lane = 'A'"`` (:mod:`sparktide.expr`); an event passes when it
        is true (not false, not null).
    """

    where: str

    def __post_init__(self) -> None:
        where = parse_text(self.where, "filter.where")
        for ref in ref_nodes(where):
            if ref.input is not None and ref not in (SYSTEM_TIMESTAMP, EVENT_INPUT):
                raise ConfigError(
                    "filter.where",
                    f"{ref.key!r}: the filter reads each input's own events, before any join "
                    f"(and a union's inputs share it): write {ref.name!r}",
                )

    @property
    def expression(self) -> Expr:
        """The parsed condition."""
        return parse_expression(self.where, "filter.where")


@dataclass(frozen=True)
class Projection:
    """One output column of ``[select]``: ``name = "expression"``.

    Parameters
    ----------
    name
        The output column.
    expression
        Its value: over the window's result (group-by columns, aggregate names,
        ``window_start``, ``window_end``) in a windowed job, over a join's match
        (``<input>.<field>`` of either input, and ``timestamp``) in a job with
        ``[join]``, over the record's fields in a job without either. A bare column
        passes its value through unchanged.
    by_input
        Instead of ``expression``, one per input of a union that releases its events
        (``{north = "speed", south = "velocity"}``, semantics §11.21): each event's
        column is its own input's expression.
    """

    name: str
    expression: str = ""
    by_input: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        key = f"select.{self.name}"
        check_column(self.name, "select", optional=False)
        if isinstance(self.by_input, dict):
            object.__setattr__(self, "by_input", tuple(self.by_input.items()))
        if not self.by_input:
            parse_text(self.expression, key)
            return
        if self.expression:
            raise ConfigError(key, "give one expression, or a table of one per input: not both")
        for input_name, text in self.by_input:
            parse_text(text, f"{key}.{input_name}")

    @property
    def parsed(self) -> Expr:
        """The parsed expression; with one per input, the ``CASE`` over the event's
        input (:data:`sparktide.expr.EVENT_INPUT`) that chooses it."""
        if not self.by_input:
            return parse_expression(self.expression, f"select.{self.name}")
        chosen = [(Binary("=", EVENT_INPUT, Lit(n)), self.parsed_for(n)) for n, _ in self.by_input]
        return Case(tuple(chosen))

    def expressions(self) -> list[tuple[str | None, Expr]]:
        """``(input, expression)`` of each input's expression, or ``[(None, the
        column's one)]`` for a column with one expression."""
        if not self.by_input:
            return [(None, self.parsed)]
        return [(name, self.parsed_for(name)) for name, _ in self.by_input]

    def parsed_for(self, input_name: str | None) -> Expr:
        """The parsed expression of the events of input ``input_name``."""
        for name, text in self.by_input:
            if name == input_name:
                return parse_expression(text, f"select.{self.name}.{name}")
        if self.by_input:
            raise ValueError(f"select.{self.name} has no expression for input {input_name!r}")
        return self.parsed


def expression_fields(job: Job) -> list[str]:
    """The record fields the job's expressions read: ``[filter] where`` and, in a job
    without a window or a join, ``[select]`` (over a join it reads the matches), and the
    analytic columns' expressions (whose names are not fields), and the window's
    computed grouping columns and aggregates of expressions, and the inputs' ``where``,
    and ``[match]``'s keys, conditions and measures."""
    exprs = [*job.input_conditions.values()]
    if job.match is not None:
        exprs += [e for _, e in job.match.expressions()]
    exprs += [job.filter.expression] if job.filter is not None else []
    if job.window is None and job.join is None and job.match is None:
        exprs += [p.parsed for p in job.select]  # (over [match]: its measures)
    if job.window is not None:
        exprs += [e for _, e in job.window.group_keys if e is not None]
        exprs += [a.parsed for a in job.window.aggregates if a.parsed is not None]
    from sparktide.job.analytic import analytic_fields  # (it imports this module)

    analytic_names = {analytic.name for analytic in job.analytics}
    analytic_names.add(SYSTEM_TIMESTAMP.key)  # (the event's timestamp, no field)
    analytic_names.add(EVENT_INPUT.key)  # (the event's input, no field)
    names = [n for e in exprs for n in references(e) if n not in analytic_names]
    names += [n for a in job.analytics for n in analytic_fields(a, analytic_names)]
    if job.match is not None:  # (a measure's field: its record's, for a value inside)
        names += [m.column.split(".", 1)[0] for m in job.match.measure_list if m.column]
    return list(dict.fromkeys(names))


def read_as_input(expr: Any, input_name: str) -> Any:
    """``expr`` with ``System.Input()`` read as ``input_name`` (semantics §11.22): the
    expression the events of that input evaluate."""
    if expr == EVENT_INPUT:
        return Lit(input_name)
    if isinstance(expr, tuple):
        return tuple(read_as_input(item, input_name) for item in expr)
    if not is_dataclass(expr) or isinstance(expr, type):
        return expr
    changed = {f.name: read_as_input(getattr(expr, f.name), input_name) for f in fields(expr)}
    return replace(expr, **changed)


def record_casts(job: Job, input_name: str | None = None) -> tuple[Expr, ...]:
    """The expressions the job evaluates over each input record that hold a ``CAST``
    that can fail: ``[filter] where``, then ``[select]`` in a job without a window or a
    join, or the window's computed grouping columns and aggregates of expressions, in
    that order. A record on which
    one fails is malformed (semantics §11.13); elsewhere (``having``, a window's or a
    join's ``[select]``) a failed ``CAST`` is null. The inputs' ``where`` come first:
    every input's, or only ``input_name``'s when it is given (a record of one input)."""
    conditions = job.input_conditions
    if input_name is None:
        exprs = [*conditions.values()]
    else:
        exprs = [conditions[input_name]] if input_name in conditions else []
    exprs += [job.filter.expression] if job.filter is not None else []
    if job.window is None and job.join is None:  # (an input's own, §11.21)
        exprs += [p.parsed if input_name is None else p.parsed_for(input_name) for p in job.select]
    if job.window is not None:
        exprs += [e for _, e in job.window.keyed_expressions()]
    if input_name is not None:
        exprs = [read_as_input(e, input_name) for e in exprs]
    return tuple(e for e in exprs if casts(e))


def record_expressions(job: Job) -> list[tuple[str, Expr]]:
    """``(key, expression)`` of every expression the job evaluates over an input record:
    ``[filter] where``, ``[select]`` in a job without a window or a join, the window's
    computed grouping columns and aggregates of expressions, the analytic columns'
    expressions and ``[apply] value``; first the inputs' ``where``."""
    out = [(job.where_key(n), e) for n, e in job.input_conditions.items()]
    out += [("filter.where", job.filter.expression)] if job.filter is not None else []
    if job.window is None and job.join is None:
        out += [(f"select.{p.name}", p.parsed) for p in job.select]
    if job.window is not None:
        out += job.window.keyed_expressions()
    out += [item for a in job.analytics for item in a.keyed_expressions()]
    if job.apply is not None:
        out.append(("apply.value", job.apply.expression))
    return out


def check_missing_tests(job: Job) -> None:
    """``x IS [NOT] MISSING`` tests a field of the input record (semantics §11.16), in
    the :func:`record_expressions` only; ``x`` is no analytic column (but in a column's
    own expressions its name, which they read as the field).

    Raises
    ------
    ConfigError
        Naming the key whose expression tests what is no field of the record.
    """
    analytic = {a.name for a in job.analytics}
    elsewhere = [] if job.window is None and job.join is None else list(job.select)
    outside = [(f"select.{p.name}", p.parsed) for p in elsewhere]
    if job.window is not None and job.window.having is not None:
        outside.append(("window.having", parse_text(job.window.having, "window.having")))
    for key, expr in outside:
        for name in missing_tests(expr):
            raise ConfigError(key, f"{name} IS MISSING tests a field of the input record: not here")
    for key, expr in record_expressions(job):
        own = key.split(".")[1] if key.startswith("analytic.") else None
        for name in missing_tests(expr):
            if name in analytic and name != own:
                raise ConfigError(
                    key, f"{name} IS MISSING: {name} is an analytic column, not a field"
                )
