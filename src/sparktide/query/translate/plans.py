"""What a statement reads and computes once its ``WITH`` steps are followed.

The planner (:mod:`sparktide.query.translate.planner`) follows a statement through its
steps into a :class:`Plan`: the inputs it reads, the ``WHERE`` conditions on the way,
its one window or its column list, and its JOIN (:class:`JoinPlan`) or UNION. The rest
of the translation reads the plan, not the syntax tree's chain of steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparktide import expr as E
from sparktide.query.ast import Column, CrossApply, Expr, FromSource, Pos, Select

__all__ = ["JoinPlan", "Plan", "with_where"]


@dataclass(frozen=True)
class JoinPlan:
    """A JOIN of two inputs: ``left`` is the FROM input, ``right`` the JOIN input; with
    reference data, ``left`` is the stream and ``right`` the reference input (the job's
    ``[join]`` sides, whichever side of the query's JOIN the reference input is on)."""

    left: FromSource
    right: FromSource
    on: tuple[str | tuple[str, str], ...]  # (a pair: differently named columns)
    between: tuple[int, int] | None  # bounds of right.timestamp - left.timestamp
    pos: Pos
    type: str = "inner"  # inner, or left: LEFT OUTER JOIN (semantics §7.9, §11.8)
    reference: bool = False  # right is reference data: no time bound
    swapped: bool = False  # the query's JOIN has the reference input on its left
    condition: tuple[Expr, ...] = ()  # the rest of ON (semantics §11.8), the query's terms
    #: the WHERE's terms over the pair: both inputs' fields or the match's time (§11.8)
    where_pairs: tuple[Expr, ...] = ()
    #: under LEFT OUTER JOIN with reference data, the WHERE's terms over the table's
    #: fields: the [join] where over what the join writes (§11.8)
    where_after: tuple[Expr, ...] = ()
    #: ``right`` is a windowed step's records (§7.12): the step's SELECT, over the input
    #: reading its window reads
    window: Select | None = None
    #: with reference data, the later JOINs: each table and its ``[[join.then]]`` entry
    then: tuple[tuple[FromSource, dict[str, Any]], ...] = ()
    #: ``left`` is a windowed step's records that meet the reference data ``right``
    #: (semantics §13.5): the step's SELECT, over the input its window reads
    table_window: Select | None = None


@dataclass(frozen=True)
class Plan:
    """What one statement reads and computes once its WITH steps are followed."""

    sources: tuple[FromSource, ...]  # the inputs read (a union: several), with TIMESTAMP BY
    window: Select | None = None
    partition: Column | None = None
    wheres: tuple[E.Expr, ...] = ()  # WHERE conditions on the way, outermost last
    projection: Select | None = None  # SELECT a, b, expr AS c without GROUP BY
    join: JoinPlan | None = None
    union: Pos | None = None  # the first UNION keyword of a union
    apply: CrossApply | None = None  # CROSS APPLY of the statement's own input
    #: each input's own WHERE (input name, condition as text): a UNION's branches that
    #: filter differently ([inputs.<name>] where, semantics §11.20)
    input_wheres: tuple[tuple[str, str], ...] = ()
    #: a UNION's ``[select]`` when its branches compute their columns differently: each
    #: column's expression, or its expression per input (semantics §11.21)
    union_columns: tuple[tuple[str, str | tuple[tuple[str, str], ...]], ...] = ()

    @property
    def combined(self) -> str | None:
        """The WHERE conditions joined by ``AND``, as text (``None``: no condition)."""
        if not self.wheres:
            return None
        return E.to_text(E.conjunction(self.wheres))

    @property
    def lookup(self) -> bool:
        """Whether the plan joins a stream with reference data."""
        return self.join is not None and self.join.reference


def with_where(
    wheres: tuple[tuple[str, str], ...], name: str, condition: str
) -> tuple[tuple[str, str], ...]:
    """The inputs' own conditions (:attr:`Plan.input_wheres`) with ``condition`` added
    to input ``name``'s, after any it has (joined by ``AND``)."""
    own = dict(wheres)
    own[name] = condition if name not in own else f"({own[name]}) AND ({condition})"
    return tuple(own.items())
