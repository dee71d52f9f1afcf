"""The inputs of a statement: the job file's tables, with what the query says of them.

``FROM input [TIMESTAMP BY column | expression [OVER key]] [PARTITION BY column]``
becomes the input's ``[source]`` table (a union or a join: ``[inputs.<name>]`` per input) with
``timestamp_by``, ``over`` and ``partition`` set, and ``[ordering] partitioned =
true``. A key the job file sets and the query contradicts is a
:class:`~sparktide.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import re
from typing import Any

from sparktide import expr as E
from sparktide.errors import ConfigError
from sparktide.job.tuplekey import tuple_key
from sparktide.query.ast import Call, Column, Expr, FromSource, Literal, Operation
from sparktide.query.exprs import convert
from sparktide.query.refusal import is_column_name
from sparktide.query.translate.context import Context, describe
from sparktide.query.translate.fields import Fields
from sparktide.query.translate.plans import Plan

__all__ = ["Inputs"]


class Inputs:
    """Binds a statement's inputs to the job file's tables."""

    def __init__(self, context: Context, fields: Fields) -> None:
        self.refuse = context.refuse
        self.bindings = context.bindings
        self.fields = fields

    def inputs(self, plan: Plan) -> dict[str, Any]:
        """``{"source": table}``, or for a union or a join ``{"inputs": {name: table}}``."""
        if len(plan.sources) == 1:
            table = self.input_table(plan.sources[0], plan.partition)
            for _, condition in plan.input_wheres:  # (before the analytic columns, §11.20)
                table["where"] = condition
            return {"source": table}
        bound = {s.input_name.casefold() for s in plan.sources}  # (a self-join: one)
        if self.bindings.source is not None and len(bound) > 1:
            names = " and ".join(s.name for s in plan.sources)
            raise ConfigError(
                "source",
                f"binds one input, but the query reads {names}: bind each with an "
                "[inputs.<name>] table",
            )
        tables = self.named_tables(plan)
        if not plan.lookup:  # (a lookup reads one stream: nothing to agree with)
            self.check_agreement(plan, tables)
        return {"inputs": tables}

    def named_tables(self, plan: Plan) -> dict[str, dict[str, Any]]:
        """The table of each input of a union or a join, by the input's name."""
        tables: dict[str, dict[str, Any]] = {}
        lookup = plan.lookup
        for source in plan.sources:
            if not is_column_name(source.name):
                raise self.refuse(
                    source.pos,
                    f"the input {source.name!r} cannot name an input of a job's "
                    f"{'join' if plan.join else 'union'} (letters, digits, '_' and '-', not "
                    "starting with a digit)",
                )
            if lookup and plan.join is not None and source is plan.join.right:
                tables[source.name] = self.reference_table(source)
            else:
                tables[source.name] = self.input_table(source, plan.partition if lookup else None)
        for table, _ in plan.join.then if plan.join is not None else ():  # (§11.8)
            tables[table.name] = self.reference_table(table)
        for name, condition in plan.input_wheres:  # (a UNION's branches' own WHERE)
            tables[name]["where"] = condition
        return tables

    def check_agreement(self, plan: Plan, tables: dict[str, dict[str, Any]]) -> None:
        """Refuse the inputs of a union or a stream join that disagree on TIMESTAMP BY (all
        or none) or OVER (the same key)."""
        tables = {s.name: tables[s.name] for s in plan.sources}  # (streams, not tables)
        stamped = [t.get("timestamp_by") is not None for t in tables.values()]
        if any(stamped) and not all(stamped):
            missing = plan.sources[stamped.index(False)]
            given = plan.sources[stamped.index(True)]
            raise self.refuse(
                missing.pos,
                f"{missing.name} has no TIMESTAMP BY but {given.name} has: every input of a "
                f"{'JOIN' if plan.join else 'UNION'} has TIMESTAMP BY, or none has (arrival "
                "time)",
            )
        overs = [t.get("over") for t in tables.values()]
        for source, over in zip(plan.sources, overs, strict=True):
            if over != overs[0]:
                at = source.over[0].pos if source.over else source.pos
                raise self.refuse(
                    at,
                    f"OVER {over or '(none)'} differs from OVER {overs[0] or '(none)'} of "
                    f"{plan.sources[0].name}: the inputs of a UNION share their substream key",
                )

    def input_table(self, source: FromSource, partition: Column | None) -> dict[str, Any]:
        """The job-file table of the input ``source``, with what the query says of it."""
        if self.bindings.is_reference(source.name):
            raise self.refuse(
                source.pos,
                f"{source.name} is reference data (reference = true in the job file): it is "
                "read only through a JOIN with a stream (FROM stream JOIN "
                f"{source.name} ON ...), as in Stream Analytics",
            )
        try:
            prefix, table = self.bindings.require_input(source.input_name)
        except LookupError as exc:
            raise self.refuse(source.pos, str(exc)) from None
        if source.timestamp_by is not None:
            stamp, unit = self.time_column(source.timestamp_by)
            text = self.computed_text(stamp, source, "TIMESTAMP BY", "the time")
            self.bind(table, prefix, "timestamp_by", text, "TIMESTAMP BY")
            if unit is not None:  # (epoch numbers in files: semantics §1.4)
                self.bind(table, prefix, "time_unit", unit, "TIMESTAMP BY DATEADD")
        if source.over:
            what = "the substream key"
            parts = [self.computed_text(k, source, "OVER", what) for k in source.over]
            self.bind(table, prefix, "over", tuple_key(parts), "OVER")
        if partition is not None:
            column = self.fields.column(partition, source, "partition column")
            self.bind(table, prefix, "partition", column, "PARTITION BY")
        return table

    def computed_text(self, expr: Expr, source: FromSource, clause: str, what: str) -> str:
        """``source.timestamp_by`` or ``source.over``: the column ``clause`` names, else
        the expression that computes ``what`` from each event's fields (``r.a`` reads
        into ``r``: semantics §1.4)."""
        if self.fields.plain(expr, source):
            return self.fields.column(expr, source)  # type: ignore[arg-type]

        def leaf(node: Column | Call) -> E.Expr:
            if isinstance(node, Column):
                return self.fields.nested(node, source)
            raise self.refuse(
                node.pos,
                f"{clause} {describe(node)} is not supported: {what} is computed from the "
                "event's own fields with scalar functions",
            )

        return E.to_text(convert(expr, leaf, self.refuse, clause))

    def time_column(self, stamp: Expr) -> tuple[Expr, str | None]:
        """What ``TIMESTAMP BY`` reads: a column of times, ``CAST(column AS datetime)``
        (the same column: sparktide reads a time's text), or ``DATEADD(unit, column,
        '1970-01-01T00:00:00Z')``, a column of epoch numbers in ``unit`` (its
        ``source.time_unit``); anything else as it is (an expression,
        :meth:`computed_text`)."""
        if isinstance(stamp, Operation) and stamp.kind == "CAST":
            if stamp.operator.split(" ", 1)[1] == "datetime" and isinstance(
                stamp.operands[0], Column
            ):
                return stamp.operands[0], None
        if not (isinstance(stamp, Call) and stamp.function == "dateadd" and len(stamp.args) == 3):
            return stamp, None
        part, column, origin = stamp.args
        unit = None
        if isinstance(part, Column) and len(part.parts) == 1:
            unit = _EPOCH_UNITS.get(E.DATE_PARTS.get(part.parts[0].lower(), ""))
        if unit is None or not _epoch_origin(origin) or not isinstance(column, Column):
            return stamp, None  # (computed: semantics §1.4)
        return column, unit

    def reference_table(self, source: FromSource) -> dict[str, Any]:
        """The job-file table of the reference input ``source`` (``reference = true``,
        ``path``, ``format``: the query says nothing of it)."""
        found = self.bindings.input_table(source.name)
        assert found is not None  # (bound: is_reference found it)
        return found[1]

    def bind(self, table: dict[str, Any], prefix: str, key: str, value: str, clause: str) -> None:
        """Set ``table[key]`` to what the query's ``clause`` says, unless the job file's
        table says otherwise."""
        given = table.get(key)
        if given is not None and given != value:
            raise ConfigError(
                f"{prefix}.{key}",
                f"is {given!r} but the query's {clause} says {value!r}; remove the key",
            )
        table[key] = value

    def ordering(self, plan: Plan) -> dict[str, Any]:
        """The job file's ``[ordering]``, ``partitioned = true`` under PARTITION BY."""
        ordering = dict(self.bindings.ordering)
        if plan.partition is not None:
            if ordering.get("partitioned") is False:
                raise ConfigError(
                    "ordering.partitioned",
                    "is false but the query says PARTITION BY; remove the key",
                )
            ordering["partitioned"] = True
        return ordering


#: DATEADD's units of epoch numbers → ``source.time_unit``.
_EPOCH_UNITS = {"second": "s", "millisecond": "ms", "microsecond": "us"}


def _epoch_origin(node: Expr) -> bool:
    """Whether ``node`` is a text literal of the epoch: ``1970-01-01``, with a time of
    midnight (``T00:00:00``, any zero fraction) in UTC (``Z`` or ``+00:00``) or none."""
    if not (isinstance(node, Literal) and isinstance(node.value, str)):
        return False
    return _EPOCH_TEXT.fullmatch(node.value.strip()) is not None


_EPOCH_TEXT = re.compile(r"1970-01-01([T ]00:00:00(\.0+)?(Z|[+-]00:?00)?)?", re.IGNORECASE)
