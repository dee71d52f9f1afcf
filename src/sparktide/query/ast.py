"""The syntax tree of a Stream Analytics query (the subset in docs/query.md).

Every node carries its :class:`Pos` (1-based line and column in the query text), so the
translator can name the place of anything it refuses. Expressions are kept generic
(:class:`Column`, :class:`Literal`, :class:`Call`, :class:`Operation`): the translator
only runs columns, aggregates and ``System.Timestamp()``, and refuses the rest by name.
Windows in ``GROUP BY`` are recognised and checked while parsing (:class:`WindowSpec`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "Call",
    "Clause",
    "Column",
    "CrossApply",
    "Expr",
    "FromSource",
    "GroupItem",
    "Join",
    "Literal",
    "Operation",
    "Over",
    "Pos",
    "Query",
    "Recognize",
    "Select",
    "SelectItem",
    "Star",
    "Step",
    "Union",
    "WindowSpec",
]


@dataclass(frozen=True)
class Pos:
    """A place in the text: 1-based ``line`` and ``column``."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


@dataclass(frozen=True)
class Column:
    """A column reference such as ``TollId``, ``[Toll Id]`` or ``i.TollId``.

    Attributes
    ----------
    parts
        The dot-separated names, brackets removed.
    """

    parts: tuple[str, ...]
    pos: Pos

    @property
    def name(self) -> str:
        """The reference as written, parts joined by dots."""
        return ".".join(self.parts)


@dataclass(frozen=True)
class Literal:
    """A number, a ``'string'``, ``NULL``, ``TRUE`` or ``FALSE``."""

    value: Any
    pos: Pos


@dataclass(frozen=True)
class Over:
    """The ``OVER (...)`` of an analytic function (or of ``SessionWindow``, or of an
    ordered aggregate): ``PARTITION BY`` expressions, ``LIMIT DURATION(unit, length)`` as
    ``(unit, length, position)``, ``WHEN`` condition, ``ORDER BY`` as ``(expression,
    descending)`` pairs."""

    partition_by: tuple[Any, ...]
    limit: tuple[str, Any, Pos] | None
    when: Any | None
    pos: Pos
    order_by: tuple[tuple[Any, bool], ...] = ()


@dataclass(frozen=True)
class Call:
    """A function call: ``COUNT(*)``, ``COUNT(DISTINCT x)``, ``System.Timestamp()``,
    ``DATEDIFF(minute, a, b)`` ...

    Attributes
    ----------
    name
        The dot-separated function name as written (``("System", "Timestamp")``).
    args
        The arguments (empty for ``f()`` and ``f(*)``).
    star
        ``f(*)``.
    distinct
        ``f(DISTINCT x)``.
    over
        The ``OVER (...)`` of an analytic function.
    each
        Set by the translator only (a window over a snapshot step, semantics §13.4): the
        aggregate counts each distinct combination of these columns and the event
        timestamp once (``over (distinct ...)`` in the job); ``None``: every event.
    """

    name: tuple[str, ...]
    args: tuple[Expr, ...]
    pos: Pos
    star: bool = False
    distinct: bool = False
    over: Over | None = None
    each: tuple[Column, ...] | None = None

    @property
    def function(self) -> str:
        """The function name in lower case, parts joined by dots (``system.timestamp``)."""
        return ".".join(self.name).lower()

    @property
    def text(self) -> str:
        """The function name as written, with ``()``."""
        return ".".join(self.name) + "()"


@dataclass(frozen=True)
class Operation:
    """Any other expression: ``a > 1``, ``a AND b``, ``x BETWEEN 1 AND 2``, ``a + b``,
    ``CAST(x AS float)``, ``CASE ... END`` ...

    Attributes
    ----------
    kind
        What it is, in words (``"comparison"``, ``"AND"``, ``"BETWEEN"``, ``"arithmetic"``,
        ``"CAST"``, ``"CASE"``, ``"LIKE"``, ``"IN"``, ``"IS NULL"``, ``"NOT"``, ``"OR"``,
        ``"sign"``).
    operands
        The sub-expressions.
    operator
        The operator text where there is one (``">"``, ``"+"``), else ``""``.
    """

    kind: str
    operands: tuple[Expr, ...]
    pos: Pos
    operator: str = ""


Expr = Column | Literal | Call | Operation


@dataclass(frozen=True)
class Star:
    """``*`` or ``alias.*`` in a SELECT list."""

    qualifier: str | None
    pos: Pos


@dataclass(frozen=True)
class SelectItem:
    """One item of a SELECT list: an expression (or star) and its ``AS`` name."""

    expr: Expr | Star
    alias: str | None
    pos: Pos


@dataclass(frozen=True)
class FromSource:
    """``name [AS alias] [TIMESTAMP BY expr [OVER key, ...]] [PARTITION BY column]``.

    ``where`` is never parsed: it is the ``WHERE`` of a step that filters the input
    before the analytic functions of the SELECT that reads the step (the translation
    composes the two, semantics §11.20). ``bound`` is never parsed either: a side of a
    self-join (``FROM i a JOIN i b``) is renamed by its alias, and ``bound`` keeps the
    name of the input whose job-file table it reads (``docs/query.md``, *Self-joins*)."""

    name: str
    alias: str | None
    timestamp_by: Expr | None
    over: tuple[Column, ...]
    partition_by: Column | None
    pos: Pos
    timestamp_pos: Pos | None = None
    partition_pos: Pos | None = None
    where: Expr | None = None
    bound: str | None = None

    @property
    def input_name(self) -> str:
        """The name of the input whose job-file table this source reads."""
        return self.bound or self.name


@dataclass(frozen=True)
class CrossApply:
    """``CROSS APPLY GetArrayElements(value) AS alias`` (``function = "elements"``) or
    ``CROSS APPLY GetRecordProperties(value) AS alias`` (``"properties"``); ``OUTER
    APPLY`` (``outer``) keeps an event with nothing to expand."""

    function: str
    value: Expr
    alias: str
    pos: Pos
    outer: bool = False

    @property
    def keyword(self) -> str:
        """``CROSS APPLY`` or ``OUTER APPLY``, as messages name it."""
        return "OUTER APPLY" if self.outer else "CROSS APPLY"


@dataclass(frozen=True)
class Join:
    """``[INNER | LEFT [OUTER] | CROSS] JOIN source ON condition``."""

    kind: str
    source: FromSource
    condition: Expr
    pos: Pos


@dataclass(frozen=True)
class WindowSpec:
    """A window function of ``GROUP BY``, its durations in microseconds.

    Attributes
    ----------
    kind
        ``tumbling``, ``hopping``, ``sliding``, ``session`` or ``snapshot``.
    size
        Window length (tumbling, hopping, sliding).
    hop
        Hop (hopping).
    offset
        Offset as written (may be negative), or ``None``.
    timeout
        Session timeout (session).
    max_duration
        Session maximum duration (session).
    partition_by
        Columns of ``SessionWindow(...) OVER (PARTITION BY ...)``.
    """

    kind: str
    pos: Pos
    size: int | None = None
    hop: int | None = None
    offset: int | None = None
    timeout: int | None = None
    max_duration: int | None = None
    partition_by: tuple[Column, ...] = ()


@dataclass(frozen=True)
class GroupItem:
    """One item of ``GROUP BY``: a window (``window`` set) or an expression
    (``alias``: the name of a step's column the expression came from)."""

    expr: Expr
    pos: Pos
    window: WindowSpec | None = None
    over: tuple[Column, ...] = ()
    alias: str | None = None


@dataclass(frozen=True)
class Clause:
    """A ``WHERE``/``HAVING`` clause: its condition and the keyword's position."""

    expr: Expr
    pos: Pos


@dataclass(frozen=True)
class Select:
    """``SELECT items [INTO output] FROM source [CROSS APPLY ...] [JOIN ...] [WHERE]
    [GROUP BY] [HAVING]``."""

    items: tuple[SelectItem, ...]
    into: str | None
    source: FromSource
    pos: Pos
    into_pos: Pos | None = None
    joins: tuple[Join, ...] = ()
    where: Clause | None = None
    group_by: tuple[GroupItem, ...] = ()
    group_pos: Pos | None = None
    having: Clause | None = None
    applies: tuple[CrossApply, ...] = ()
    recognize: Recognize | None = None


@dataclass(frozen=True)
class Recognize:
    """``MATCH_RECOGNIZE (...) [AS alias]`` (semantics §11.25): its clauses as written
    (each ``None`` or empty when absent), with their places."""

    pos: Pos
    limit: tuple[str, Any, Pos] | None = None
    partition_by: tuple[Expr, ...] = ()
    measures: tuple[tuple[Expr, str, Pos], ...] = ()
    after: tuple[str, Pos] | None = None
    pattern: tuple[str, Pos] | None = None
    define: tuple[tuple[str, Expr, Pos], ...] = ()
    alias: str | None = None


@dataclass(frozen=True)
class Union:
    """One or more SELECTs combined by ``UNION`` (``union_pos``: each keyword's place)."""

    selects: tuple[Select, ...]
    pos: Pos
    union_pos: tuple[Pos, ...] = ()


@dataclass(frozen=True)
class Step:
    """A ``WITH name AS (...)`` step."""

    name: str
    body: Union
    pos: Pos


@dataclass(frozen=True)
class Query:
    """A whole query: its ``WITH`` steps and its statements, in text order."""

    steps: tuple[Step, ...]
    statements: tuple[Union, ...]
    source: str
