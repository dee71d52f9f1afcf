"""Stream Analytics queries → sparktide jobs (:class:`~sparktide.job.Job`; docs/query.md).

The job model reads one input, or the union of several (``[inputs.<name>]``), or joins
two (``[join]``), or joins one with reference data; it has an optional filter, an optional
window with grouping columns, named aggregates and a ``having`` condition, and optional
output columns (``[select]``).
Everything that model expresses exactly is translated; every other construct is
refused with a :class:`~sparktide.errors.QueryError` that names it and its line and
column. Nothing is translated approximately.

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
  that does the work;
- ``UNION`` (= ``UNION ALL``: Stream Analytics keeps duplicates) of SELECTs that each
  read another input → a union, ``[inputs.<name>]`` per branch with its ``TIMESTAMP
  BY``; a ``WHERE`` or a column list only when every branch has the same one (the job
  has one ``[filter]`` and one ``[select]``); a window over the union in a later step;
- ``FROM a ... JOIN b ... ON a.k = b.k AND DATEDIFF(unit, a, b) BETWEEN x AND y`` →
  ``[join]`` (``on`` the equal columns, ``between`` the bounds of ``b − a`` turned into
  ``right − left``); with ``SELECT *`` matches written whole, with ``SELECT a.k, b.t AS
  t, DATEDIFF(minute, a.t, b.t) AS d`` a ``[select]`` over the matches
  (``a.k`` → ``input.field``);
- ``FROM stream ... [LEFT OUTER] JOIN ref ON s.k = r.k`` where the job file says ``ref``
  is reference data (``[inputs.ref] reference = true``, as a Stream Analytics job's
  configuration says it) → ``[join]`` without ``between`` (``type = "left"`` for ``LEFT
  OUTER JOIN``); ``FROM ref JOIN stream`` (inner) is the same join, sides swapped; a
  ``WHERE`` on the stream's fields → ``[filter]`` (it stops events before they meet the
  table); columns → ``[select]`` as over any join;
- ``DATEDIFF(unit, start, end)`` outside ``ON`` (columns, ``System.Timestamp()``,
  ISO-8601 text) → the expression language's ``DATEDIFF``;
- several ``SELECT ... INTO`` statements → one job per statement (:class:`Translation`),
  each bound to its output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from sparktide import expr as E
from sparktide.errors import ConfigError, QueryError
from sparktide.job import RESERVED_EVENT_COLUMNS, RESERVED_WINDOW_COLUMNS, Job
from sparktide.query.asaql import TIME_UNITS
from sparktide.query.ast import (
    Call,
    Column,
    Expr,
    FromSource,
    Join,
    Literal,
    Operation,
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

__all__ = [
    "AGGREGATES",
    "MAX_JOIN_BOUND",
    "StatementJob",
    "Translation",
    "build_job",
    "check_column",
    "translate_query",
]

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
#: Stream Analytics' largest time bound of a JOIN (``DATEDIFF`` up to seven days).
MAX_JOIN_BOUND = 7 * DAY
_COLUMN_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True)
class StatementJob:
    """The job one statement of a query (or a whole pipeline) becomes.

    Attributes
    ----------
    job
        The job.
    notes
        What a reader of the job should know about the mapping (``System.Timestamp() AS
        WindowEnd`` is the window records' ``window_end`` ...), one sentence each.
    output
        The output the statement writes to, as the query names it (``INTO TollCounts``; a
        pipeline's sink), or ``None`` when it names none.
    line, column
        Where the statement starts in the text (1-based).
    """

    job: Job
    notes: tuple[str, ...] = ()
    output: str | None = None
    line: int = 1
    column: int = 1


@dataclass(frozen=True)
class Translation:
    """A translated query or pipeline: one job per statement.

    Stream Analytics runs every ``SELECT ... INTO`` statement of a query, each writing to
    its own output; the translation has one job per statement, in text order (a
    pipeline has one). ``sparktide translate`` prints them all, ``simulate --query`` and
    ``run --query --once`` run them one after the other.

    Attributes
    ----------
    statements
        The statements' jobs, in text order (at least one).
    source
        The name of the query or pipeline text.
    """

    statements: tuple[StatementJob, ...]
    source: str

    @property
    def jobs(self) -> tuple[Job, ...]:
        """Every statement's job, in text order."""
        return tuple(s.job for s in self.statements)

    @property
    def job(self) -> Job:
        """The job of a query with one statement.

        Raises
        ------
        QueryError
            At the second statement, when there are several: read :attr:`statements`.
        """
        return self._single().job

    @property
    def notes(self) -> tuple[str, ...]:
        """The notes of a query with one statement (see :attr:`job`)."""
        return self._single().notes

    def _single(self) -> StatementJob:
        if len(self.statements) != 1:
            second = self.statements[1]
            raise QueryError(
                self.source,
                second.line,
                second.column,
                f"the query has {len(self.statements)} statements, each a job of its own: "
                "take them from Translation.statements",
            )
        return self.statements[0]


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


@dataclass(frozen=True)
class _JoinPlan:
    """A JOIN of two inputs: ``left`` is the FROM input, ``right`` the JOIN input; with
    reference data, ``left`` is the stream and ``right`` the reference input (the job's
    ``[join]`` sides, whichever side of the query's JOIN the reference input is on)."""

    left: FromSource
    right: FromSource
    on: tuple[str, ...]
    between: tuple[int, int] | None  # bounds of right.timestamp - left.timestamp
    pos: Pos
    type: str = "inner"  # inner, or left: LEFT OUTER JOIN (reference data only)
    reference: bool = False  # right is reference data: no time bound
    swapped: bool = False  # the query's JOIN has the reference input on its left


@dataclass(frozen=True)
class _Plan:
    """What one statement reads and computes once its WITH steps are followed."""

    sources: tuple[FromSource, ...]  # the inputs read (a union: several), with TIMESTAMP BY
    window: Select | None = None
    partition: Column | None = None
    wheres: tuple[E.Expr, ...] = ()  # WHERE conditions on the way, outermost last
    projection: Select | None = None  # SELECT a, b, expr AS c without GROUP BY
    join: _JoinPlan | None = None
    union: Pos | None = None  # the first UNION keyword of a union

    @property
    def combined(self) -> str | None:
        """The WHERE conditions joined by ``AND``, as text (``None``: no condition)."""
        if not self.wheres:
            return None
        condition = self.wheres[0]
        for more in self.wheres[1:]:
            condition = E.Binary("AND", condition, more)
        return E.to_text(condition)


class _Translator:
    """Translates statement number ``index`` of ``query``."""

    def __init__(self, query: Query, bindings: Bindings, index: int = 0) -> None:
        self.query = query
        self.bindings = bindings
        self.index = index
        self.refuse = _Refuse(query.source)
        self.notes: list[str] = []
        self.steps = {step.name.casefold(): (i, step) for i, step in enumerate(query.steps)}
        self.select_table: dict[str, str] | None = None  # [select] of a windowed statement
        self.having: str | None = None
        self.output_key = ""  # the job-file table the statement's output comes from

    # ---------------------------------------------------------------- chains
    def plan(self, union: Union, visible: int, where: str) -> _Plan:
        """Follow ``union`` through the WITH steps defined before index ``visible``."""
        if len(union.selects) > 1:
            return self.union_plan(union, visible, where)
        return self.select_plan(union.selects[0], visible, where)

    def union_plan(self, union: Union, visible: int, where: str) -> _Plan:
        """``SELECT ... UNION SELECT ...``: the union of the branches' inputs."""
        for select in union.selects[1:]:
            if select.into is not None:
                assert select.into_pos is not None
                raise self.refuse(
                    select.into_pos,
                    f"INTO in a later branch of UNION: write INTO {select.into} in the first "
                    "SELECT (it names the output of the whole UNION)",
                )
        branches = [self.select_plan(s, visible, where) for s in union.selects]
        sources: list[FromSource] = []
        seen: dict[str, FromSource] = {}
        for select, branch in zip(union.selects, branches, strict=True):
            if branch.window is not None:
                raise self.refuse(
                    select.group_pos or select.pos,
                    "a window in a branch of UNION is not supported yet: a job has one window "
                    "over all its inputs; UNION the events in a WITH step and GROUP BY over it",
                )
            if branch.join is not None:
                raise self.refuse(
                    branch.join.pos,
                    "a JOIN in a branch of UNION is not supported yet: a job either joins two "
                    "inputs or reads the union of several",
                )
            if branch.partition is not None:
                raise self.refuse(
                    branch.partition.pos,
                    "PARTITION BY in a UNION is not supported yet: sparktide keeps each input's "
                    "partitions apart (<input>/<id>), Stream Analytics unions partition i of "
                    "every input",
                )
            for source in branch.sources:
                known = seen.get(source.name.casefold())
                if known is not None:
                    raise self.refuse(
                        source.pos,
                        f"UNION reads the input {source.name} twice (also at {known.pos}): "
                        "each branch must read another input",
                    )
                seen[source.name.casefold()] = source
                sources.append(source)
        conditions = [b.combined for b in branches]
        for i, condition in enumerate(conditions[1:], start=1):
            if condition != conditions[0]:
                culprit = i if union.selects[i].where is not None else 0
                select = union.selects[culprit]
                at = select.where.pos if select.where is not None else select.pos
                raise self.refuse(
                    at,
                    "the branches of UNION filter differently ("
                    + "; ".join(c or "no WHERE" for c in (conditions[0], condition))
                    + "): a job has one [filter] for all its inputs; give every branch the "
                    "same WHERE, or UNION in a WITH step and filter over it",
                )
        projection = self.union_projection(union, branches)
        return _Plan(
            tuple(sources),
            wheres=branches[0].wheres,
            projection=projection,
            union=union.union_pos[0] if union.union_pos else union.pos,
        )

    def union_projection(self, union: Union, branches: list[_Plan]) -> Select | None:
        """The column list of the statement's UNION: the same in every branch, or none."""
        tables: list[list[tuple[str, str]] | None] = []
        for branch in branches:
            if branch.projection is None:
                tables.append(None)
            else:
                selected = self.projection(branch.projection, branch.projection.source)
                tables.append(list(selected.items()))
        for i, table in enumerate(tables[1:], start=1):
            if table != tables[0]:
                shown = [
                    "*" if t is None else ", ".join(e if e == n else f"{e} AS {n}" for n, e in t)
                    for t in (tables[0], table)
                ]
                raise self.refuse(
                    union.selects[i].pos,
                    f"the branches of UNION select different columns ({shown[0]}; {shown[1]}): "
                    "a job has one [select] for all its inputs; select the same columns in "
                    "every branch",
                )
        return branches[0].projection

    def select_plan(self, select: Select, visible: int, where: str) -> _Plan:
        """One SELECT: its FROM (an input, a step or a JOIN), WHERE, window or columns."""
        if select.into is not None and where != "statement":
            assert select.into_pos is not None
            raise self.refuse(select.into_pos, f"INTO inside the WITH step {where}")
        if select.having is not None and not select.group_by:
            raise self.refuse(
                select.having.pos, "HAVING without GROUP BY: HAVING filters a window's results"
            )
        source = select.source
        from_step = None
        if select.joins:
            inner = self.join_plan(select, visible)
        else:
            found = self.steps.get(source.name.casefold())
            if found is not None and found[0] < visible:
                index, step = found
                if source.timestamp_by is not None:
                    assert source.timestamp_pos is not None
                    raise self.refuse(
                        source.timestamp_pos,
                        f"TIMESTAMP BY on the step {step.name}: Stream Analytics takes TIMESTAMP "
                        "BY on inputs only; move it to the step that reads the input",
                    )
                inner = self.plan(step.body, index, step.name)
                from_step = step.name
            else:
                inner = _Plan((source,))
        if (
            source.partition_by is not None
            and not select.joins  # (a JOIN's own sides: join_plan, lookup_plan)
            and (len(inner.sources) > 1 or inner.join)
        ):
            what = "a JOIN" if inner.join else "a UNION"
            raise self.refuse(
                source.partition_by.pos,
                f"PARTITION BY over {what} is not supported yet: "
                + (
                    "a join follows the merged watermark of both inputs"
                    if inner.join
                    else "sparktide keeps each input's partitions apart (<input>/<id>)"
                ),
            )
        partition = self.partition(inner.partition, source)
        wheres = inner.wheres
        if select.where is not None:
            if inner.window is not None:
                raise self.refuse(
                    select.where.pos,
                    f"WHERE over the results of the windowed step {from_step} is not supported "
                    "yet: a job filters events before its window (use HAVING in that step)",
                )
            if inner.join is not None and inner.join.reference and select.joins:
                condition = self.stream_condition(select.where.expr, inner.join)
            elif inner.join is not None:
                raise self.refuse(
                    select.where.pos,
                    "WHERE over a JOIN is not supported yet: the job's [filter] applies to each "
                    "input's events, not to the matches",
                )
            else:
                condition = self.condition(select.where.expr, source)
            wheres = (*wheres, condition)
        if select.joins and any(
            isinstance(i.expr, Star) and i.expr.qualifier is not None for i in select.items
        ):
            assert inner.join is not None
            self.refuse_over_join(select, inner.join, where)
        if self.passes_through(select):
            return replace(inner, partition=partition, wheres=wheres)
        if inner.join is not None:
            if select.group_by or not select.joins or where != "statement":
                self.refuse_over_join(select, inner.join, where)
            return replace(inner, partition=partition, wheres=wheres, projection=select)
        if not select.group_by and where == "statement" and inner.window is None:
            return replace(inner, partition=partition, wheres=wheres, projection=select)
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
        return replace(inner, window=select, partition=partition, wheres=wheres)

    def lookup_join(self, plan: _Plan, data: dict[str, Any]) -> None:
        """Set ``data["join"]`` for a JOIN with reference data (no ``between``; ``type =
        "left"`` for LEFT OUTER JOIN) and note what a reader of the job should know."""
        join = plan.join
        assert join is not None
        stream, table = join.left.name, join.right.name
        data["join"] = {"left": stream, "right": table, "on": list(join.on)}
        if join.type == "left":
            data["join"]["type"] = "left"
        self.notes.append(
            f"JOIN is [join] with reference data: {table} (reference = true in the job file) "
            f"is a table read whole when the run starts; each event of {stream}, released in "
            f"timestamp order, meets its rows with equal {', '.join(join.on)} and is written "
            "once per such row, in the table's order, at the event's timestamp"
            + (
                f'; LEFT OUTER JOIN (type = "left"): an event that meets no row is written '
                f"once, with {table} null"
                if join.type == "left"
                else "; an event that meets no row is not written"
            )
        )
        if join.swapped:
            self.notes.append(
                f"{table} JOIN {stream}: the job joins the stream {stream} (left) with the "
                f"reference data {table} (right); an inner join is the same either way round "
                "(Stream Analytics' documentation puts reference data on the right)"
            )
        if plan.projection is None:
            self.notes.append(
                f"SELECT * over a JOIN: each match is an event record {{{stream}: {{...}}, "
                f"{table}: {{...}}, timestamp}} at the event's timestamp (Stream Analytics "
                "itself refuses SELECT * in a JOIN)"
            )

    def refuse_over_join(self, select: Select, join: _JoinPlan, where: str) -> None:
        """What a job cannot compute over a JOIN: a window, ``SELECT a.*``, columns in a
        ``WITH`` step or over a JOIN step (only the JOIN's own SELECT projects)."""
        if select.group_by:
            raise self.refuse(
                select.group_pos or select.pos,
                "a window over a JOIN is not supported yet: the job releases each match as an "
                "event; aggregate the matches in a job of their own",
            )
        star = next(
            (i for i in select.items if isinstance(i.expr, Star) and i.expr.qualifier), None
        )
        if star is not None:
            raise self.refuse(
                star.pos,
                f"SELECT {_describe(star.expr)} over a JOIN is not supported yet: name the "
                f"columns ({join.left.alias or join.left.name}.k, ...), or SELECT * for "
                f"each match whole ({{{join.left.name}: {{...}}, {join.right.name}: {{...}}, "
                "timestamp})",
            )
        item = next((i for i in select.items if not isinstance(i.expr, Star)), select.items[0])
        if not select.joins:
            raise self.refuse(
                item.pos,
                f"SELECT {_describe(item.expr)} over the JOIN of the step {select.source.name} "
                "is not supported yet: select the columns in the JOIN's own SELECT",
            )
        raise self.refuse(
            item.pos,
            f"SELECT {_describe(item.expr)} over a JOIN in the WITH step {where} is not "
            "supported yet: only the last statement may project or compute columns",
        )

    def join_projection(self, select: Select, join: _JoinPlan) -> dict[str, str]:
        """``[select]`` of ``SELECT a.k, b.t AS t, DATEDIFF(minute, a.t, b.t) AS d`` over a
        JOIN's matches: ``a.k`` is ``<input>.k`` (the input's name, not its alias),
        ``System.Timestamp()`` the match's ``timestamp``."""
        out: dict[str, str] = {}
        taken: dict[str, Pos] = {}
        for item in select.items:
            if isinstance(item.expr, Star):
                raise self.refuse(
                    item.pos, "SELECT * with other columns is not supported yet: name them"
                )
            name = self.output_name(item, taken, RESERVED_EVENT_COLUMNS)
            converted = convert(
                item.expr, lambda n: self.match_leaf(n, join), self.refuse, "SELECT"
            )
            out[name] = E.to_text(converted)
        return out

    def match_leaf(self, node: Column | Call, join: _JoinPlan) -> E.Expr:
        """A column of a JOIN's match: ``a.k`` (either input, by name or alias), or
        ``System.Timestamp()`` (the match's timestamp)."""
        if _is_timestamp(node):
            return E.Ref("timestamp")
        if isinstance(node, Call):
            if node.function in AGGREGATES or node.function in _OTHER_AGGREGATES:
                raise self.refuse(
                    node.pos,
                    f"{node.text[:-2].upper()}(...) over a JOIN is not supported yet: "
                    "aggregate the matches in a job of their own",
                )
            raise self.refuse(
                node.pos,
                f"{node.text[:-2]}(...) is not supported yet: functions are not translated "
                "(only DATEDIFF, aggregates and System.Timestamp())",
            )
        left, right = join.left, join.right
        parts = node.parts
        if len(parts) == 1:
            if parts[0].casefold() in self.names(left) | self.names(right):
                raise self.refuse(
                    node.pos,
                    f"{node.name} names an input of the JOIN: outside ON a column is "
                    f"input.field ({node.name}.Time), the match's time System.Timestamp()",
                )
            raise self.refuse(
                node.pos,
                f"{node.name} over a JOIN: qualify it with its input "
                f"({left.alias or left.name}.{node.name} or "
                f"{right.alias or right.name}.{node.name}); sparktide does not know which "
                "input's events hold it",
            )
        if len(parts) > 2:
            raise self.refuse(
                node.pos,
                f"{node.name}: nested fields (record.field) are not supported yet; flatten "
                "the input",
            )
        qualifier = parts[0].casefold()
        side = (
            left
            if qualifier in self.names(left)
            else right
            if qualifier in self.names(right)
            else None
        )
        if side is None:
            raise self.refuse(node.pos, f"{parts[0]} names neither input of the JOIN")
        return E.Ref(check_column(parts[1], node.pos, self.refuse), side.name)

    # ------------------------------------------------------------------- join
    def join_plan(self, select: Select, visible: int) -> _Plan:
        """``FROM a ... JOIN b ... ON a.k = b.k AND DATEDIFF(unit, a, b) BETWEEN x AND y``."""
        if len(select.joins) > 1:
            raise self.refuse(
                select.joins[1].pos, "a second JOIN is not supported yet: a job joins two inputs"
            )
        join = select.joins[0]
        left, right = select.source, join.source
        for side in (left, right):
            found = self.steps.get(side.name.casefold())
            if found is not None and found[0] < visible:
                raise self.refuse(
                    side.pos,
                    f"a JOIN of the step {side.name} is not supported yet: join the inputs "
                    "themselves (FROM input TIMESTAMP BY ... JOIN input TIMESTAMP BY ...)",
                )
        if self.bindings.is_reference(left.name) or self.bindings.is_reference(right.name):
            return self.lookup_plan(join, left, right)
        if join.kind != "INNER":
            why = (
                "a join of two streams is an inner join (a match needs events on both "
                f"sides); LEFT OUTER JOIN takes reference data on its right ([inputs."
                f"{right.name}] reference = true in the job file)"
                if join.kind.startswith("LEFT")
                else "Stream Analytics joins need a time bound (DATEDIFF)"
            )
            raise self.refuse(join.pos, f"{join.kind} JOIN is not supported yet: {why}")
        for side in (left, right):
            if side.partition_by is not None:
                raise self.refuse(
                    side.partition_by.pos,
                    "PARTITION BY in a JOIN is not supported yet: a join follows the merged "
                    "watermark of both inputs",
                )
            if side.over:
                raise self.refuse(
                    side.over[0].pos,
                    "TIMESTAMP BY ... OVER in a JOIN is not supported yet: a join follows the "
                    "merged watermark of both inputs",
                )
        if left.name.casefold() == right.name.casefold():
            raise self.refuse(
                right.pos,
                f"a self-join ({left.name} JOIN {right.name}) is not supported yet: the job "
                "joins two inputs",
            )
        self.distinct_names(left, right)
        on, between = self.join_condition(join, left, right)
        assert between is not None
        plan = _JoinPlan(left, right, on, between, join.pos)
        return _Plan((left, right), join=plan)

    def lookup_plan(self, join: Join, left: FromSource, right: FromSource) -> _Plan:
        """A JOIN with reference data (Stream Analytics' reference-data JOIN; the job file
        says which input is reference data): ``[join]`` of the stream (``left``) and the
        table (``right``) on equal columns, without a time bound; ``LEFT OUTER JOIN`` is
        ``type = "left"``. ``FROM table JOIN stream`` (an inner join) is the same join
        with the sides swapped; every other shape is refused."""
        if self.bindings.is_reference(left.name) and self.bindings.is_reference(right.name):
            raise self.refuse(
                join.pos,
                f"a JOIN of two reference inputs ({left.name} and {right.name}) is not "
                "supported: reference data is joined to a stream (FROM stream JOIN "
                "reference ON ...)",
            )
        if join.kind not in ("INNER", "LEFT", "LEFT OUTER"):
            raise self.refuse(
                join.pos,
                f"{join.kind} JOIN with reference data is not supported: Stream Analytics "
                "joins reference data by JOIN (inner) or LEFT OUTER JOIN",
            )
        swapped = self.bindings.is_reference(left.name)
        stream, table = (right, left) if swapped else (left, right)
        if swapped and join.kind != "INNER":
            raise self.refuse(
                join.pos,
                f"{join.kind} JOIN with the reference data {table.name} on its left is not "
                "supported: it would keep the table's rows that meet no event; Stream "
                f"Analytics puts reference data on the right (FROM {stream.name} "
                f"{join.kind} JOIN {table.name})",
            )
        if table.timestamp_by is not None:
            assert table.timestamp_pos is not None
            raise self.refuse(
                table.timestamp_pos,
                f"TIMESTAMP BY on the reference data {table.name}: reference data has no "
                "time (Stream Analytics refuses it too); the stream's events carry the "
                "time of each match",
            )
        if table.partition_by is not None:
            raise self.refuse(
                table.partition_by.pos,
                f"PARTITION BY on the reference data {table.name}: reference data has no "
                "partitions; partition the stream",
            )
        self.distinct_names(left, right)
        on, between = self.join_condition(join, stream, table, reference=True)
        assert between is None
        kind = "inner" if join.kind == "INNER" else "left"
        plan = _JoinPlan(stream, table, on, None, join.pos, kind, reference=True, swapped=swapped)
        return _Plan((stream, table), join=plan, partition=stream.partition_by)

    def join_condition(
        self, join: Join, left: FromSource, right: FromSource, *, reference: bool = False
    ) -> tuple[tuple[str, ...], tuple[int, int] | None]:
        """The join columns and the time bound of ``ON``. With ``reference`` (``right`` is
        reference data) ``ON`` must not bound time, and the bound is ``None``."""
        terms: list[Expr] = []

        def flatten(node: Expr) -> None:
            if isinstance(node, Operation) and node.kind == "AND":
                for operand in node.operands:
                    flatten(operand)
            else:
                terms.append(node)

        flatten(join.condition)
        on: list[str] = []
        between: tuple[int, int] | None = None
        for term in terms:
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
            if isinstance(term, Operation) and term.kind == "comparison" and term.operator == "=":
                column = self.join_key(term, left, right)
                if column not in on:
                    on.append(column)
                continue
            raise self.refuse(
                _expr_pos(term),
                f"{_describe(term)} in the ON of a JOIN is not supported yet: ON holds "
                "equalities of same-named columns (a.k = b.k) AND one DATEDIFF(unit, a, b) "
                "BETWEEN low AND high",
            )
        if between is None and not reference:
            raise self.refuse(
                join.pos,
                "JOIN without DATEDIFF(unit, a, b) BETWEEN low AND high in ON: Stream Analytics "
                "joins of two streams need a time bound (a JOIN with reference data has none: "
                f"say so in the job file, [inputs.{right.name}] reference = true)",
            )
        if not on:
            raise self.refuse(
                join.pos,
                "JOIN without an equality of columns (a.k = b.k) in ON is not supported yet: "
                "the job joins on columns",
            )
        return tuple(on), between

    def join_key(self, term: Operation, left: FromSource, right: FromSource) -> str:
        """The column of ``a.k = b.k`` (one side each, the same name)."""
        sides: dict[str, str] = {}
        written = " = ".join(_describe(o) for o in term.operands)
        for operand in term.operands:
            if not isinstance(operand, Column) or len(operand.parts) != 2:
                if isinstance(operand, Column) and len(operand.parts) > 2:
                    raise self.refuse(
                        operand.pos,
                        f"{operand.name}: nested fields (record.field) are not supported yet; "
                        "flatten the input",
                    )
                if isinstance(operand, Column) and len(operand.parts) == 1:
                    raise self.refuse(
                        operand.pos,
                        f"{operand.name} in the ON of a JOIN: qualify it with its input "
                        f"({left.alias or left.name}.{operand.name} = "
                        f"{right.alias or right.name}.{operand.name})",
                    )
                raise self.refuse(
                    _expr_pos(operand),
                    f"{_describe(operand)} in an equality of ON is not supported yet: the job "
                    "joins on columns (a.k = b.k)",
                )
            qualifier = operand.parts[0].casefold()
            side = (
                "left"
                if qualifier in self.names(left)
                else "right"
                if qualifier in self.names(right)
                else None
            )
            if side is None:
                raise self.refuse(
                    operand.pos, f"{operand.parts[0]} names neither input of the JOIN"
                )
            if side in sides:
                raise self.refuse(
                    term.pos,
                    f"{written} compares two columns of one input: ON equalities compare a "
                    "column of each input (a.k = b.k)",
                )
            sides[side] = check_column(operand.parts[1], operand.pos, self.refuse)
        if sides["left"] != sides["right"]:
            raise self.refuse(
                term.pos,
                f"JOIN ON {written}: the job joins on columns of the same name on both sides "
                "(names are case-sensitive)",
            )
        return sides["left"]

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
        unit = (
            TIME_UNITS.get(unit_arg.parts[0].lower())
            if isinstance(unit_arg, Column) and len(unit_arg.parts) == 1
            else None
        )
        if unit is None:
            raise self.refuse(
                _expr_pos(unit_arg),
                f"DATEDIFF({_describe(unit_arg)}, ...) in a JOIN: use day, hour, minute, "
                "second, millisecond or microsecond",
            )
        sides = []
        for arg in (first, second):
            name = arg.parts[0].casefold() if isinstance(arg, Column) else None
            if not isinstance(arg, Column) or len(arg.parts) != 1:
                raise self.refuse(
                    _expr_pos(arg),
                    f"DATEDIFF(unit, {_describe(arg)}, ...) in the ON of a JOIN is not supported "
                    "yet: name the two inputs (DATEDIFF(minute, a, b)), whose timestamps it "
                    "bounds",
                )
            if name in self.names(left):
                sides.append("left")
            elif name in self.names(right):
                sides.append("right")
            else:
                raise self.refuse(arg.pos, f"{arg.name} names neither input of the JOIN")
        if sides[0] == sides[1]:
            raise self.refuse(call.pos, "DATEDIFF(unit, a, b) in a JOIN names both inputs")
        low = self.amount(term.operands[1], unit)
        high = self.amount(term.operands[2], unit)
        if low > high:
            raise self.refuse(
                _expr_pos(term.operands[1]),
                "BETWEEN low AND high with low above high matches nothing",
            )
        if max(abs(low), abs(high)) > MAX_JOIN_BOUND:
            raise self.refuse(
                _expr_pos(term.operands[1]),
                "Stream Analytics bounds a JOIN's DATEDIFF to 7 days",
            )
        return (low, high) if sides[0] == "left" else (-high, -low)

    def amount(self, expr: Expr, unit: int) -> int:
        """A signed number of ``unit`` s, in microseconds."""
        node, negative = expr, False
        if isinstance(node, Operation) and node.kind == "sign":
            negative, node = node.operator == "-", node.operands[0]
        value = node.value if isinstance(node, Literal) else None
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise self.refuse(
                _expr_pos(expr),
                f"{_describe(expr)} as a bound of DATEDIFF: use a number of the unit",
            )
        micros = Decimal(node.value) * unit
        if micros != micros.to_integral_value():
            raise self.refuse(node.pos, f"{node.value} is not a whole number of microseconds")
        return -int(micros) if negative else int(micros)

    def condition(self, expr: Expr, source: FromSource) -> E.Expr:
        """A WHERE condition over the fields of ``source``."""
        return convert(expr, lambda n: self.field_leaf(n, source, "WHERE"), self.refuse, "WHERE")

    def stream_condition(self, expr: Expr, join: _JoinPlan) -> E.Expr:
        """The WHERE of a JOIN with reference data, when it reads the stream's fields only
        (``s.Temperature > 20``): the job's ``[filter]``, which stops the stream's events
        before they meet the table. As every match of an event carries the event's own
        fields, it keeps exactly the matches (and, under LEFT OUTER JOIN, the unmatched
        events) that the WHERE over the JOIN keeps."""
        stream, table = join.left, join.right

        def leaf(node: Column | Call) -> E.Expr:
            if isinstance(node, Call) or len(node.parts) > 2:
                return self.field_leaf(node, stream, "WHERE")  # (refuses it)
            if len(node.parts) == 1:
                raise self.refuse(
                    node.pos,
                    f"{node.name} over a JOIN: qualify it with its input "
                    f"({stream.alias or stream.name}.{node.name}); sparktide does not know "
                    "which input's fields hold it",
                )
            qualifier = node.parts[0].casefold()
            if qualifier in self.names(table):
                raise self.refuse(
                    node.pos,
                    f"WHERE on {node.name}, a field of the reference data {table.name}, is not "
                    f"supported yet: the job's [filter] reads the events of {stream.name} "
                    "before they meet the table (a condition on the stream's fields is "
                    "translated)",
                )
            if qualifier not in self.names(stream):
                raise self.refuse(node.pos, f"{node.parts[0]} names neither input of the JOIN")
            return E.Ref(self.column(node, stream))

        return convert(expr, leaf, self.refuse, "WHERE")

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
            "(only DATEDIFF, aggregates and System.Timestamp())",
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
            if isinstance(item.expr, Call) and item.expr.function != "datediff":
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

    def distinct_names(self, left: FromSource, right: FromSource) -> None:
        """Refuse a JOIN whose two sides share a name or an alias."""
        if self.names(left) & self.names(right):
            raise self.refuse(
                right.pos,
                f"{right.alias or right.name} names both inputs of the JOIN; give them "
                "different aliases",
            )

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
    def inputs(self, plan: _Plan) -> dict[str, Any]:
        """``{"source": table}``, or for a union or a join ``{"inputs": {name: table}}``."""
        if len(plan.sources) == 1:
            return {"source": self.input_table(plan.sources[0], plan.partition)}
        if self.bindings.source is not None:
            names = " and ".join(s.name for s in plan.sources)
            raise ConfigError(
                "source",
                f"binds one input, but the query reads {names}: bind each with an "
                "[inputs.<name>] table",
            )
        tables: dict[str, dict[str, Any]] = {}
        lookup = plan.join is not None and plan.join.reference
        for source in plan.sources:
            if not (source.name[0].isalpha() or source.name[0] == "_") or not (
                set(source.name) <= _COLUMN_CHARS
            ):
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
        if lookup:  # (one stream: nothing to agree with)
            return {"inputs": tables}
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
        return {"inputs": tables}

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
        if partition is not None:
            column = self.column(partition, source, "partition column")
            self.bind(table, prefix, "partition", column, "PARTITION BY")
        return table

    def reference_table(self, source: FromSource) -> dict[str, Any]:
        """The job-file table of the reference input ``source`` (``reference = true``,
        ``path``, ``format``: the query says nothing of it)."""
        found = self.bindings.input_table(source.name)
        assert found is not None  # (bound: is_reference found it)
        return found[1]

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
            if isinstance(expr, Call) and expr.function != "datediff":
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
                "(only DATEDIFF, aggregates of columns and System.Timestamp())",
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
        self.output_key = found[0]
        if not self.bindings.has_job_file:  # (each name its placeholder folder)
            self.output_key = f"output.{(select.into or '').casefold()}"
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

    def run(self) -> StatementJob:
        union = self.query.statements[self.index]
        select = union.selects[0]
        plan = self.plan(union, len(self.query.steps), "statement")
        data: dict[str, Any] = {
            **self.inputs(plan),
            "ordering": self.ordering(plan),
            "output": self.output(select),
        }
        names = [s.name for s in plan.sources]
        if plan.join is not None and plan.join.reference:
            self.lookup_join(plan, data)
        elif plan.join is not None:
            join = plan.join
            assert join.between is not None
            data["join"] = {
                "left": join.left.name,
                "right": join.right.name,
                "on": list(join.on),
                "between": [format_duration(b) for b in join.between],
            }
            self.notes.append(
                f"JOIN is [join]: an inner join of {join.left.name} and {join.right.name} on "
                f"{', '.join(join.on)}, {join.right.name}'s timestamp minus {join.left.name}'s "
                f"within [{', '.join(format_duration(b) for b in join.between)}]"
            )
            if plan.projection is None:
                self.notes.append(
                    f"SELECT * over a JOIN: each match is an event record {{{join.left.name}: "
                    f"{{...}}, {join.right.name}: {{...}}, timestamp}} at the later of the two "
                    "timestamps, released in timestamp order (Stream Analytics itself refuses "
                    "SELECT * in a JOIN)"
                )
        elif len(names) > 1:
            self.notes.append(
                f"UNION is a union of the inputs {', '.join(names)} (Stream Analytics' UNION "
                "keeps duplicates, as UNION ALL): their partitions are named <input>/<id> and "
                "the job watermark is the minimum over all of them"
            )
        if plan.wheres:
            data["filter"] = {"where": plan.combined}
            self.notes.append(
                "WHERE is [filter] where: it applies after the ordering policy; an event that "
                "fails it is counted as dropped (filtered)"
                + (
                    f" (over the JOIN it reads {plan.join.left.name}'s fields only: it stops "
                    "events before they meet the table, which keeps the same matches)"
                    if plan.join is not None and plan.join.reference
                    else ""
                )
            )
        if plan.window is not None:
            data["window"] = self.window(plan.window, plan.window.source)
            if self.having is not None:
                data["window"]["having"] = self.having
            if self.select_table is not None:
                data["select"] = self.select_table
        elif plan.join is not None and plan.projection is not None:
            data["select"] = self.join_projection(plan.projection, plan.join)
            self.notes.append(
                "[select] reads each match: input.field is that input's field (by the "
                "input's name, not its alias), timestamp the match's time (System.Timestamp(), "
                + (
                    f"the time of {plan.join.left.name}'s event"
                    if plan.join.reference
                    else "the later of the two"
                )
                + "); the job releases each match as an event with the SELECT's columns and "
                "timestamp, in timestamp order"
            )
        elif plan.projection is not None:
            data["select"] = self.projection(plan.projection, plan.projection.source)
            self.notes.append(
                "the job releases every admitted event that passes, in timestamp order, with "
                "the SELECT's columns and its system timestamp as the field timestamp"
            )
        elif plan.join is None:
            self.notes.append(
                "SELECT *: the job releases every admitted event, in timestamp order, "
                "with its system timestamp as the field timestamp"
            )
        at = select.pos
        if plan.window is not None:
            at = plan.window.group_pos or plan.window.pos
        elif plan.join is not None:
            at = plan.join.pos
        elif plan.union is not None:
            at = plan.union
        job = build_job(data, self.bindings.base_dir, self.refuse, at)
        return StatementJob(job, tuple(self.notes), select.into, select.pos.line, select.pos.column)


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
    """Translate a parsed Stream Analytics query into jobs, one per statement.

    Several statements (``SELECT ... INTO a ...; SELECT ... INTO b ...``) must write to
    different outputs, and their outputs must not share a folder (each job has its own
    output, dead letters, metrics and checkpoint).

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
        When the job file contradicts the query (naming the key), or two statements'
        outputs share a folder.
    """
    statements: list[StatementJob] = []
    keys: dict[str, int] = {}
    folders: dict[str, tuple[int, str]] = {}
    refuse = _Refuse(query.source)
    for index, union in enumerate(query.statements):
        translator = _Translator(query, bindings, index)
        statement = translator.run()
        select = union.selects[0]
        earlier = keys.get(translator.output_key)
        if earlier is not None:
            first = query.statements[earlier].selects[0].pos
            target = f"INTO {select.into}" if select.into else "this SELECT (no INTO)"
            raise refuse(
                select.into_pos or select.pos,
                f"{target} writes to the output of the statement at {first}: each statement "
                "is a job with an output of its own; bind another output, or UNION the two "
                "SELECTs",
            )
        keys[translator.output_key] = index
        for key in ("path", "dead_letter", "metrics", "checkpoint"):
            folder = getattr(statement.job.output, key)
            if folder is None:
                continue
            where = f"{translator.output_key}.{key}"
            if folder in folders and folders[folder][0] != index:
                raise ConfigError(
                    where,
                    f"is also {folders[folder][1]}: each statement's job needs folders of its "
                    "own (outputs, dead letters, metrics, checkpoint)",
                )
            folders.setdefault(folder, (index, where))
        statements.append(statement)
    return Translation(tuple(statements), query.source)
