"""Stream Analytics query → sparktide :class:`~sparktide.job.Job` (docs/query.md).

The job model has one source, an optional filter, an optional window with grouping
columns, named aggregates and a ``having`` condition, optional output columns
(``[select]``), and no joins. Everything that model expresses exactly is translated;
every other construct is refused with a
:class:`~sparktide.errors.QueryError` that names it and its line and column. Nothing is
translated approximately.

What is translated:

- ``FROM input [TIMESTAMP BY column [OVER key]] [PARTITION BY column]`` → ``[source]``
  (``timestamp_by``, ``over``, ``partition``) and ``ordering.partitioned = true``;
- ``GROUP BY`` one window and plain columns → ``[window]`` with ``boundary = "end"``
  (Stream Analytics' ``(start, end]``) and ``group_by``;
- ``SELECT`` grouped columns, ``COUNT(*)``, ``COUNT(x)``, ``COUNT(DISTINCT x)``,
  ``SUM``, ``AVG``, ``MIN``, ``MAX`` of a column ``AS name``, and ``System.Timestamp()``
  (the window records' ``window_end``) → ``window.aggregates``;
- ``WHERE`` → ``[filter] where`` (conditions of pass-through steps are joined by
  ``AND``); ``HAVING`` → ``[window] having``;
- computed ``SELECT`` columns (and renamed grouped columns) → ``[select]``, with the
  aggregates they use (``SUM(Toll) / COUNT(*)``) as aggregates of their own;
- ``SELECT *`` without ``GROUP BY`` → a job without a window (ordered events);
  ``SELECT a, b, expr AS c`` without ``GROUP BY`` → the same with ``[select]``;
- ``WITH`` steps that pass events through (``SELECT * FROM ...``) around the one step
  that does the work.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparktide import expr as E
from sparktide.errors import ConfigError, QueryError
from sparktide.job import RESERVED_EVENT_COLUMNS, RESERVED_WINDOW_COLUMNS, Job
from sparktide.query.ast import (
    Call,
    Column,
    Expr,
    FromSource,
    Literal,
    Pos,
    Query,
    Select,
    SelectItem,
    Star,
    Union,
    WindowSpec,
)
from sparktide.query.bind import Bindings
from sparktide.query.exprs import convert
from sparktide.time import DAY, format_duration

__all__ = ["AGGREGATES", "Translation", "build_job", "check_column", "translate_query"]

#: Stream Analytics aggregates and the sparktide functions they become.
AGGREGATES = {"count": "count", "sum": "sum", "avg": "avg", "min": "min", "max": "max"}
#: Stream Analytics aggregates sparktide cannot compute yet (refused by name).
_OTHER_AGGREGATES = (
    "collect",
    "collecttop",
    "topone",
    "percentile_cont",
    "percentile_disc",
    "stdev",
    "stdevp",
    "var",
    "varp",
    "countif",
)
_COLUMN_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True)
class Translation:
    """A translated query or pipeline.

    Attributes
    ----------
    job
        The job.
    notes
        What a reader of the job should know about the mapping (``System.Timestamp() AS
        WindowEnd`` is the window records' ``window_end`` ...), one sentence each.
    source
        The name of the query or pipeline text.
    """

    job: Job
    notes: tuple[str, ...]
    source: str


class _Refuse:
    """Raises :class:`QueryError` at a position of one query text."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __call__(self, pos: Pos, message: str) -> QueryError:
        return QueryError(self.source, pos.line, pos.column, message)


def check_column(name: str, pos: Pos, refuse: Any, what: str = "column") -> str:
    """Return ``name`` if it is a sparktide column name, else refuse it at ``pos``."""
    if name and (name[0].isalpha() or name[0] == "_") and set(name) <= _COLUMN_CHARS:
        return name
    raise refuse(
        pos,
        f"{what} {name!r} cannot be a sparktide column name (letters, digits, '_' and '-', "
        "not starting with a digit)",
    )


def _describe(expr: Expr | Star) -> str:
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


@dataclass
class _Plan:
    """What one statement reads and computes once its WITH steps are followed."""

    source: FromSource  # the input read, with its TIMESTAMP BY
    window: Select | None = None
    partition: Column | None = None
    wheres: tuple[E.Expr, ...] = ()  # WHERE conditions on the way, outermost last
    projection: Select | None = None  # SELECT a, b, expr AS c without GROUP BY


class _Translator:
    def __init__(self, query: Query, bindings: Bindings) -> None:
        self.query = query
        self.bindings = bindings
        self.refuse = _Refuse(query.source)
        self.notes: list[str] = []
        self.steps = {step.name.casefold(): (i, step) for i, step in enumerate(query.steps)}
        self.select_table: dict[str, str] | None = None  # [select] of a windowed statement
        self.having: str | None = None

    # ---------------------------------------------------------------- chains
    def statement(self) -> tuple[Union, Select]:
        statements = self.query.statements
        if len(statements) > 1:
            second = statements[1].selects[0]
            into = f" (INTO {second.into})" if second.into else ""
            raise self.refuse(
                second.pos,
                f"a second SELECT statement{into} is not supported yet: each statement needs "
                "a job of its own; put each statement in a query file of its own",
            )
        union = statements[0]
        return union, union.selects[0]

    def plan(self, union: Union, visible: int, where: str) -> _Plan:
        """Follow ``union`` through the WITH steps defined before index ``visible``."""
        if len(union.selects) > 1:
            raise self.refuse(
                union.union_pos[0],
                "UNION is not supported yet: a job reads one input",
            )
        select = union.selects[0]
        if select.into is not None and where != "statement":
            assert select.into_pos is not None
            raise self.refuse(select.into_pos, f"INTO inside the WITH step {where}")
        if select.joins:
            join = select.joins[0]
            raise self.refuse(
                join.pos,
                f"JOIN is not supported yet: {join.kind} JOIN {join.source.name} needs a "
                "job that reads two inputs",
            )
        if select.having is not None and not select.group_by:
            raise self.refuse(
                select.having.pos, "HAVING without GROUP BY: HAVING filters a window's results"
            )
        source = select.source
        found = self.steps.get(source.name.casefold())
        if found is not None and found[0] < visible:
            index, step = found
            if source.timestamp_by is not None:
                assert source.timestamp_pos is not None
                raise self.refuse(
                    source.timestamp_pos,
                    f"TIMESTAMP BY on the step {step.name}: Stream Analytics takes TIMESTAMP BY "
                    "on inputs only; move it to the step that reads the input",
                )
            inner = self.plan(step.body, index, step.name)
            from_step = step.name
        else:
            inner = _Plan(source)
            from_step = None
        partition = self.partition(inner.partition, source)
        wheres = inner.wheres
        if select.where is not None:
            if inner.window is not None:
                raise self.refuse(
                    select.where.pos,
                    f"WHERE over the results of the windowed step {from_step} is not supported "
                    "yet: a job filters events before its window (use HAVING in that step)",
                )
            wheres = (*wheres, self.condition(select.where.expr, source))
        if self.passes_through(select):
            return _Plan(inner.source, inner.window, partition, wheres)
        if not select.group_by and where == "statement" and inner.window is None:
            return _Plan(inner.source, None, partition, wheres, projection=select)
        if not select.group_by:
            item = (
                next(i for i in select.items if not isinstance(i.expr, Star))
                if any(not isinstance(i.expr, Star) for i in select.items)
                else select.items[0]
            )
            raise self.refuse(
                item.pos,
                f"SELECT {_describe(item.expr)} without GROUP BY is not supported yet "
                f"{'in a WITH step' if inner.window is None else 'over a windowed step'}: "
                "only the last statement may project or compute columns",
            )
        if inner.window is not None:
            raise self.refuse(
                select.group_pos or select.pos,
                f"a window over the results of the windowed step {from_step} is not "
                "supported yet: a job has one window",
            )
        return _Plan(inner.source, select, partition, wheres)

    def condition(self, expr: Expr, source: FromSource) -> E.Expr:
        """A WHERE condition over the fields of ``source``."""
        return convert(expr, lambda n: self.field_leaf(n, source, "WHERE"), self.refuse, "WHERE")

    def field_leaf(self, node: Column | Call, source: FromSource, clause: str) -> E.Expr:
        """An input field in a WHERE condition or a SELECT without GROUP BY."""
        if _is_timestamp(node):
            raise self.refuse(
                node.pos,
                f"System.Timestamp() in {clause} without a window is not supported yet "
                "(event records carry it as timestamp)",
            )
        if isinstance(node, Column):
            return E.Ref(self.column(node, source))
        if node.function in AGGREGATES or node.function in _OTHER_AGGREGATES:
            raise self.refuse(
                node.pos,
                f"{node.text[:-2].upper()}(...) without GROUP BY: aggregates need a window "
                "(GROUP BY TumblingWindow(...) ...); conditions on them go in HAVING",
            )
        raise self.refuse(
            node.pos,
            f"{node.text[:-2]}(...) is not supported yet: functions are not translated "
            "(only aggregates and System.Timestamp())",
        )

    def projection(self, select: Select, source: FromSource) -> dict[str, str]:
        """``[select]`` of ``SELECT a, b, expr AS c`` without GROUP BY."""
        out: dict[str, str] = {}
        taken: dict[str, Pos] = {}
        for item in select.items:
            if isinstance(item.expr, Star):
                raise self.refuse(
                    item.pos, "SELECT * with other columns is not supported yet: name them"
                )
            if isinstance(item.expr, Call):
                self.field_leaf(item.expr, source, "SELECT")  # refuses it
            name = self.output_name(item, taken, RESERVED_EVENT_COLUMNS)
            converted = convert(
                item.expr, lambda n: self.field_leaf(n, source, "SELECT"), self.refuse, "SELECT"
            )
            out[name] = E.to_text(converted)
        return out

    def passes_through(self, select: Select) -> bool:
        if select.group_by or len(select.items) != 1:
            return False
        star = select.items[0].expr
        if not isinstance(star, Star):
            return False
        if star.qualifier is not None and star.qualifier.casefold() not in self.names(
            select.source
        ):
            raise self.refuse(star.pos, f"{star.qualifier}.* names no input of this SELECT")
        return True

    def partition(self, inner: Column | None, source: FromSource) -> Column | None:
        mine = source.partition_by
        if mine is None:
            return inner
        if inner is not None and inner.name.casefold() != mine.name.casefold():
            raise self.refuse(
                mine.pos, f"PARTITION BY {mine.name} differs from PARTITION BY {inner.name}"
            )
        return mine

    @staticmethod
    def names(source: FromSource) -> set[str]:
        names = {source.name.casefold()}
        if source.alias is not None:
            names.add(source.alias.casefold())
        return names

    def column(self, expr: Column, source: FromSource, what: str = "column") -> str:
        """A plain column of ``source``: ``x``, or ``alias.x`` / ``input.x``."""
        parts = expr.parts
        if len(parts) == 2 and parts[0].casefold() in self.names(source):
            parts = parts[1:]
        if len(parts) != 1:
            raise self.refuse(
                expr.pos,
                f"{expr.name}: nested fields (record.field) are not supported yet; "
                "flatten the input",
            )
        return check_column(parts[0], expr.pos, self.refuse, what)

    # ----------------------------------------------------------------- source
    def source(self, plan: _Plan) -> dict[str, Any]:
        source = plan.source
        try:
            prefix, table = self.bindings.require_input(source.name)
        except LookupError as exc:
            raise self.refuse(source.pos, str(exc)) from None
        if source.timestamp_by is not None:
            stamp = source.timestamp_by
            if not isinstance(stamp, Column):
                raise self.refuse(
                    _expr_pos(stamp),
                    f"TIMESTAMP BY {_describe(stamp)} is not supported yet: name a column "
                    "that holds ISO-8601 times",
                )
            self.bind(table, prefix, "timestamp_by", self.column(stamp, source), "TIMESTAMP BY")
        if source.over:
            if len(source.over) > 1:
                raise self.refuse(
                    source.over[1].pos, "TIMESTAMP BY ... OVER several columns is not supported yet"
                )
            self.bind(table, prefix, "over", self.column(source.over[0], source), "OVER")
        if plan.partition is not None:
            column = self.column(plan.partition, source, "partition column")
            self.bind(table, prefix, "partition", column, "PARTITION BY")
        return table

    def bind(self, table: dict[str, Any], prefix: str, key: str, value: str, clause: str) -> None:
        given = table.get(key)
        if given is not None and given != value:
            raise ConfigError(
                f"{prefix}.{key}",
                f"is {given!r} but the query's {clause} says {value!r}; remove the key",
            )
        table[key] = value

    # ----------------------------------------------------------------- window
    def window(self, select: Select, source: FromSource) -> dict[str, Any]:
        windows = [g for g in select.group_by if g.window is not None]
        if not windows:
            raise self.refuse(
                select.group_pos or select.pos,
                "GROUP BY without a window: Stream Analytics groups streams by a window "
                "(TumblingWindow, HoppingWindow, SlidingWindow, SessionWindow, SnapshotWindow)",
            )
        if len(windows) > 1:
            raise self.refuse(windows[1].pos, "GROUP BY has a second window: a job has one")
        spec = windows[0].window
        assert spec is not None
        group_by: list[str] = []
        for item in select.group_by:
            if item.window is not None:
                continue
            if isinstance(item.expr, Call) and item.expr.function == "windows":
                raise self.refuse(item.pos, "Windows(...) (several windows) is not supported yet")
            if not isinstance(item.expr, Column):
                raise self.refuse(
                    item.pos,
                    f"GROUP BY {_describe(item.expr)} is not supported yet: group by columns",
                )
            name = self.column(item.expr, source)
            if name.casefold() in (g.casefold() for g in group_by):
                raise self.refuse(item.pos, f"GROUP BY names {name} twice")
            group_by.append(name)
        window = self.window_shape(spec, group_by, source)
        window["group_by"] = group_by
        window["aggregates"] = self.aggregates(select, group_by, source)
        for key, value in self.bindings.window.items():
            window.setdefault(key, value)
        return window

    def window_shape(
        self, spec: WindowSpec, group_by: list[str], source: FromSource
    ) -> dict[str, Any]:
        window: dict[str, Any] = {"type": spec.kind, "boundary": "end"}
        if spec.kind in ("tumbling", "hopping"):
            assert spec.size is not None
            period = spec.hop if spec.kind == "hopping" else spec.size
            assert period is not None
            if DAY % period:
                raise self.refuse(
                    spec.pos,
                    f"a window period of {format_duration(period)} does not divide a day: "
                    "Stream Analytics aligns windows to midnight and sparktide to the Unix "
                    "epoch, which agree only for periods that divide 24 hours",
                )
            if spec.size % period:
                raise self.refuse(
                    spec.pos,
                    f"a hopping window of {format_duration(spec.size)} is not a whole number "
                    f"of hops of {format_duration(period)}: where Stream Analytics puts its "
                    "ends is not documented for that case",
                )
            window["size"] = format_duration(spec.size)
            if spec.kind == "hopping":
                window["hop"] = format_duration(period)
            if spec.offset:
                offset = spec.offset % period
                window["offset"] = format_duration(offset)
                if offset != spec.offset:
                    self.notes.append(
                        f"Offset {format_duration(abs(spec.offset))}"
                        f"{' before' if spec.offset < 0 else ''} the grid is the same grid as "
                        f"offset = {format_duration(offset)}"
                    )
        elif spec.kind == "sliding":
            assert spec.size is not None
            window["size"] = format_duration(spec.size)
        elif spec.kind == "session":
            assert spec.timeout is not None and spec.max_duration is not None
            if DAY % spec.max_duration:
                raise self.refuse(
                    spec.pos,
                    f"a session maximum duration of {format_duration(spec.max_duration)} does "
                    "not divide a day: Stream Analytics aligns its cuts to midnight and "
                    "sparktide to the Unix epoch, which agree only for durations that divide "
                    "24 hours",
                )
            window["gap"] = format_duration(spec.timeout)
            window["max_duration"] = format_duration(spec.max_duration)
            keys = [self.column(c, source) for c in spec.partition_by]
            if {k.casefold() for k in keys} != {g.casefold() for g in group_by}:
                if not keys:
                    raise self.refuse(
                        spec.pos,
                        "SessionWindow without OVER (PARTITION BY ...) and GROUP BY "
                        f"{', '.join(group_by)}: Stream Analytics' sessions then span all "
                        "groups, sparktide's are per group; add OVER (PARTITION BY "
                        f"{', '.join(group_by)})",
                    )
                raise self.refuse(
                    spec.partition_by[0].pos,
                    "SessionWindow OVER (PARTITION BY ...) must name exactly the GROUP BY "
                    "columns: sparktide's sessions are per group",
                )
        return window

    def aggregates(self, select: Select, group_by: list[str], source: FromSource) -> dict[str, str]:
        """The window's aggregates; computed columns and renamed grouped columns set
        :attr:`select_table`, ``HAVING`` sets :attr:`having`."""
        aggregates: dict[str, str] = {}
        selected: set[str] = set()
        taken: dict[str, Pos] = {}
        grouped = {g.casefold(): g for g in group_by}
        entries: list[tuple[str, E.Expr | SelectItem]] = []
        project = False
        for item in select.items:
            expr = item.expr
            if isinstance(expr, Star):
                raise self.refuse(
                    item.pos, "SELECT * with GROUP BY: name the grouped columns and aggregates"
                )
            if _is_timestamp(expr):
                self.notes.append(
                    f"System.Timestamp(){f' AS {item.alias}' if item.alias else ''} is the "
                    "window end: the window records carry it as window_end"
                )
                if item.alias is not None:
                    entries.append((self.output_name(item, taken), E.Ref("window_end")))
                continue
            name = self.output_name(item, taken)
            if isinstance(expr, Column):
                column = self.column(expr, source)
                if column.casefold() not in grouped:
                    raise self.refuse(
                        expr.pos,
                        f"column {expr.name} is neither in GROUP BY nor in an aggregate",
                    )
                if item.alias is not None and item.alias != grouped[column.casefold()]:
                    project = True  # a renamed grouped column: [select] names it
                selected.add(column.casefold())
                entries.append((name, E.Ref(grouped[column.casefold()])))
                continue
            if isinstance(expr, Call):
                aggregates[name] = self.aggregate(expr, item, source)
                entries.append((name, E.Ref(name)))
                continue
            entries.append((name, item))
            project = True
        invented: list[str] = []

        def leaf(node: Column | Call) -> E.Expr:
            if _is_timestamp(node):
                return E.Ref("window_end")
            if isinstance(node, Column):
                column = self.column(node, source)
                if column.casefold() not in grouped:
                    raise self.refuse(
                        node.pos,
                        f"column {node.name} is neither in GROUP BY nor in an aggregate",
                    )
                return E.Ref(grouped[column.casefold()])
            spec = self.aggregate(node, None, source)
            for existing, text in aggregates.items():
                if text == spec:
                    return E.Ref(existing)
            base = "_" + spec.replace("(*)", "").replace("(", "_").replace(")", "")
            name, n = base, 1
            used = {k.casefold() for k in (*aggregates, *group_by, *taken)}
            while name.casefold() in used:
                n += 1
                name = f"{base}_{n}"
            aggregates[name] = spec
            invented.append(name)
            return E.Ref(name)

        table: dict[str, str] = {}
        for name, entry in entries:
            if isinstance(entry, SelectItem):
                entry = convert(entry.expr, leaf, self.refuse, "SELECT")
            table[name] = E.to_text(entry)
        if select.having is not None:
            self.having = E.to_text(convert(select.having.expr, leaf, self.refuse, "HAVING"))
        if invented:
            project = True
            self.notes.append(
                f"aggregate{'s' if len(invented) > 1 else ''} {', '.join(invented)} "
                f"{'are' if len(invented) > 1 else 'is'} computed for the expressions that use "
                f"{'them' if len(invented) > 1 else 'it'}"
            )
        if project:
            self.select_table = table
            self.notes.append(
                "[select] lists the SELECT's columns: the window records carry window_start, "
                "window_end and them"
            )
            return aggregates
        missing = [g for g in group_by if g.casefold() not in selected]
        if missing:
            self.notes.append(
                "the window records also carry the grouping column"
                f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} (not in SELECT)"
            )
        return aggregates

    def output_name(
        self,
        item: SelectItem,
        taken: dict[str, Pos],
        reserved: tuple[str, ...] = RESERVED_WINDOW_COLUMNS,
    ) -> str:
        expr = item.expr
        if item.alias is not None:
            name = check_column(item.alias, item.pos, self.refuse, "output name")
        elif isinstance(expr, Column):
            name = expr.parts[-1]
        else:
            raise self.refuse(
                item.pos,
                f"{_describe(expr)} needs a name: add AS name (sparktide does not invent "
                "output column names)",
            )
        if name in reserved:
            raise self.refuse(item.pos, f"{name!r} is a name sparktide writes itself; use another")
        if name.casefold() in taken:
            raise self.refuse(item.pos, f"the output column {name} is named twice")
        taken[name.casefold()] = item.pos
        return name

    def aggregate(self, call: Call, item: SelectItem | None, source: FromSource) -> str:
        function = call.function
        if function not in AGGREGATES:
            if function in _OTHER_AGGREGATES:
                raise self.refuse(
                    call.pos,
                    f"the aggregate {call.text[:-2].upper()} is not supported yet; use COUNT, "
                    "SUM, AVG, MIN or MAX",
                )
            raise self.refuse(
                call.pos,
                f"{call.text[:-2]}(...) is not supported yet: functions are not translated "
                "(only aggregates of columns and System.Timestamp())",
            )
        name = AGGREGATES[function]
        if call.star:
            if name != "count":
                raise self.refuse(call.pos, f"{call.text[:-2]}(*): only COUNT takes *")
            return "count(*)"
        if len(call.args) != 1:
            raise self.refuse(call.pos, f"{call.text[:-2]}(...) takes one column")
        arg = call.args[0]
        if not isinstance(arg, Column):
            raise self.refuse(
                _expr_pos(arg),
                f"an aggregate of {_describe(arg)} is not supported yet: aggregate a column",
            )
        column = self.column(arg, source)
        if call.distinct:
            if name != "count":
                raise self.refuse(
                    call.pos, f"{call.text[:-2].upper()}(DISTINCT ...) is not supported yet"
                )
            return f"count_distinct({column})"
        return f"{name}({column})"

    # ------------------------------------------------------------------ output
    def output(self, select: Select) -> dict[str, Any]:
        found = self.bindings.output_table(select.into)
        if found is None:
            names = ", ".join(self.bindings.output_names())
            if select.into is None:
                raise self.refuse(
                    select.pos,
                    f"this SELECT has no INTO and the job file binds several outputs ({names})",
                )
            assert select.into_pos is not None
            raise self.refuse(
                select.into_pos,
                f"no output named {select.into!r} in the job file (outputs bound: {names}); "
                f"add an [outputs.{select.into}] table",
            )
        return found[1]

    def ordering(self, plan: _Plan) -> dict[str, Any]:
        ordering = dict(self.bindings.ordering)
        if plan.partition is not None:
            if ordering.get("partitioned") is False:
                raise ConfigError(
                    "ordering.partitioned",
                    "is false but the query says PARTITION BY; remove the key",
                )
            ordering["partitioned"] = True
        return ordering

    def run(self) -> Translation:
        union, select = self.statement()
        plan = self.plan(union, len(self.query.steps), "statement")
        data: dict[str, Any] = {
            "source": self.source(plan),
            "ordering": self.ordering(plan),
            "output": self.output(select),
        }
        if plan.wheres:
            condition = plan.wheres[0]
            for more in plan.wheres[1:]:
                condition = E.Binary("AND", condition, more)
            data["filter"] = {"where": E.to_text(condition)}
            self.notes.append(
                "WHERE is [filter] where: it applies after the ordering policy; an event that "
                "fails it is counted as dropped (filtered)"
            )
        if plan.window is not None:
            data["window"] = self.window(plan.window, plan.source)
            if self.having is not None:
                data["window"]["having"] = self.having
            if self.select_table is not None:
                data["select"] = self.select_table
        elif plan.projection is not None:
            data["select"] = self.projection(plan.projection, plan.source)
            self.notes.append(
                "the job releases every admitted event that passes, in timestamp order, with "
                "the SELECT's columns and its system timestamp as the field timestamp"
            )
        else:
            self.notes.append(
                "SELECT *: the job releases every admitted event, in timestamp order, "
                "with its system timestamp as the field timestamp"
            )
        at = select.pos
        if plan.window is not None:
            at = plan.window.group_pos or plan.window.pos
        job = build_job(data, self.bindings.base_dir, self.refuse, at)
        return Translation(job, tuple(self.notes), self.query.source)


def _is_timestamp(expr: Expr) -> bool:
    if isinstance(expr, Call):
        return expr.function == "system.timestamp" and not expr.args and not expr.star
    return isinstance(expr, Column) and expr.name.casefold() == "system.timestamp"


def _expr_pos(expr: Expr) -> Pos:
    return expr.pos


def build_job(data: dict[str, Any], base_dir: Path | None, refuse: Any, at: Pos) -> Job:
    """The job of the tables ``data``; a rule of the job model broken by what the query
    says is refused at ``at`` (the job file's own mistakes are found earlier)."""
    try:
        return Job.from_dict(data, base_dir=base_dir)
    except ConfigError as exc:
        raise refuse(at, f"the job this becomes is not valid: {exc}") from None


def translate_query(query: Query, bindings: Bindings) -> Translation:
    """Translate a parsed Stream Analytics query into a job.

    Parameters
    ----------
    query
        The query (:func:`sparktide.query.asaql.parse_query`).
    bindings
        The job file's bindings of input and output names
        (:func:`sparktide.query.bind.load_bindings`).

    Raises
    ------
    QueryError
        For a construct the engines cannot run yet, naming it and its place.
    ConfigError
        When the job file contradicts the query (naming the key).
    """
    return _Translator(query, bindings).run()
