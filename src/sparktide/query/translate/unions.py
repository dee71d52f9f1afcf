"""``SELECT ... UNION SELECT ...``: the union of the branches' inputs.

Stream Analytics' ``UNION`` keeps duplicates (``UNION ALL``). Each branch reads an input
with its own ``TIMESTAMP BY`` (an input an earlier branch reads again is a second reading
of it, an input of its own: :meth:`Unions.read_again`). Branches name the same columns
in the same order (Stream Analytics matches them so); a column every branch computes
alike is one ``[select]`` expression, one they compute differently an expression per
input (semantics §11.21). A ``WHERE`` that every branch has alike is ``[filter]``, else each
branch's is its input's ``where`` (semantics §11.20). A window, a JOIN or ``PARTITION
BY`` in a branch is refused (a window over the union goes in a later step).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

from sparktide.query.ast import Call, FromSource, Query, Select, Union
from sparktide.query.refusal import Refuse
from sparktide.query.translate.fields import Fields
from sparktide.query.translate.plans import Plan
from sparktide.query.translate.unionwindows import INPUT_CALL

__all__ = ["Unions", "reads_system_input"]

#: A union's columns (:attr:`Plan.union_columns`).
Columns = tuple[tuple[str, str | tuple[tuple[str, str], ...]], ...]


def reads_system_input(node: Any) -> bool:
    """Whether ``node`` (a query, a statement, any part of one) calls ``System.Input()``."""
    if isinstance(node, Call) and node.function == INPUT_CALL:
        return True
    if isinstance(node, (tuple, list)):
        return any(reads_system_input(item) for item in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return any(reads_system_input(getattr(node, f.name)) for f in dataclasses.fields(node))
    return False


class Unions:
    """Combines the plans of a UNION's branches into one plan.

    Parameters
    ----------
    refuse
        Makes the refusal of a place in the query.
    fields
        Reads the inputs' fields (and knows the job file's inputs).
    query
        The whole query: whether it reads ``System.Input()`` decides whether a UNION
        may read one input in two branches.
    """

    def __init__(self, refuse: Refuse, fields: Fields, query: Query | None = None) -> None:
        self.refuse = refuse
        self.fields = fields
        self.reads_input = query is not None and reads_system_input(query)

    def check_into(self, union: Union) -> None:
        """Refuse INTO in a branch other than the first (it names the whole UNION's output)."""
        for select in union.selects[1:]:
            if select.into is not None:
                assert select.into_pos is not None
                raise self.refuse(
                    select.into_pos,
                    f"INTO in a later branch of UNION: write INTO {select.into} in the first "
                    "SELECT (it names the output of the whole UNION)",
                )

    def combine(self, union: Union, branches: list[Plan]) -> Plan:
        """The plan of the union of ``branches`` (one per SELECT of ``union``)."""
        branches = self.read_again(branches)
        sources = self.sources(union, branches)
        projection, columns = self.projection(union, branches)
        conditions = [b.combined for b in branches]
        same = all(c == conditions[0] for c in conditions)
        return Plan(
            sources,
            wheres=branches[0].wheres if same else (),
            projection=projection,
            union=union.union_pos[0] if union.union_pos else union.pos,
            input_wheres=() if same else self.input_wheres(branches),
            union_columns=columns,
        )

    def input_wheres(self, branches: list[Plan]) -> tuple[tuple[str, str], ...]:
        """Each branch's WHERE as its input's own ``where`` (semantics §11.20), when the
        branches filter differently: a branch reads one input (a JOIN is refused)."""
        out = []
        for branch in branches:
            condition = branch.combined
            if condition is not None:
                out += [(source.name, condition) for source in branch.sources]
        return tuple(out)

    def read_again(self, branches: list[Plan]) -> list[Plan]:
        """``branches`` with each input a branch reads again after an earlier one renamed:
        by the branch's alias, else ``<input>_2``, ``<input>_3`` ... (the first name the
        job file and the other branches leave free), bound to the input's table. The job
        then reads the input once per branch, as two inputs, as a self-join does
        (semantics §7.10). Refused when the query reads ``System.Input()``, which would
        name the input twice."""
        taken = {name.casefold() for name in self.fields.bindings.inputs}
        taken |= {s.name.casefold() for branch in branches for s in branch.sources}
        seen: dict[str, FromSource] = {}
        out = []
        for branch in branches:
            renamed = []
            for source in branch.sources:
                known = seen.get(source.input_name.casefold())
                if known is None:
                    seen[source.input_name.casefold()] = source
                    renamed.append(source)
                    continue
                if self.reads_input:
                    raise self.refuse(
                        source.pos,
                        f"UNION reads the input {source.name} twice (also at {known.pos}) in "
                        "a query that reads System.Input(): it would name one input twice "
                        "(a window or an analytic function over a UNION step whose branches "
                        "compute a column differently reads it too); union other inputs, or "
                        "filter one with OR",
                    )
                name = self.free_name(source, taken)
                taken.add(name.casefold())
                renamed.append(replace(source, name=name, alias=None, bound=source.input_name))
            out.append(replace(branch, sources=tuple(renamed)))
        return out

    @staticmethod
    def free_name(source: FromSource, taken: set[str]) -> str:
        """The name of a second reading of ``source``'s input: its alias when free, else
        ``<input>_<n>`` from 2 on."""
        if source.alias is not None and source.alias.casefold() not in taken:
            return source.alias
        n = 2
        while f"{source.input_name}_{n}".casefold() in taken:
            n += 1
        return f"{source.input_name}_{n}"

    def sources(self, union: Union, branches: list[Plan]) -> tuple[FromSource, ...]:
        """The inputs of every branch (distinct names: :meth:`read_again`); branches that
        window, join or partition are refused."""
        for select, branch in zip(union.selects, branches, strict=True):
            self.check_branch(select, branch)
        return tuple(source for branch in branches for source in branch.sources)

    def check_branch(self, select: Select, branch: Plan) -> None:
        """Refuse a window, a JOIN or PARTITION BY in a branch."""
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

    def projection(self, union: Union, branches: list[Plan]) -> tuple[Select | None, Columns]:
        """The column list of the statement's UNION: the same in every branch, or none;
        and, when the branches compute the same columns differently, each column's
        expression or its expression per input (semantics §11.21)."""
        tables: list[list[tuple[str, str]] | None] = []
        for branch in branches:
            if branch.projection is None:
                tables.append(None)
            else:
                selected = self.fields.projection(branch.projection, branch.projection.source)
                tables.append(list(selected.items()))
        if all(table == tables[0] for table in tables[1:]):
            return branches[0].projection, ()
        for i, table in enumerate(tables[1:], start=1):
            first = tables[0]
            if table is None or first is None or [n for n, _ in table] != [n for n, _ in first]:
                shown = [
                    "*" if t is None else ", ".join(e if e == n else f"{e} AS {n}" for n, e in t)
                    for t in (first, table)
                ]
                raise self.refuse(
                    union.selects[i].pos,
                    f"the branches of UNION select different columns ({shown[0]}; {shown[1]}): "
                    "Stream Analytics matches them by name and order; name the same columns "
                    "in the same order in every branch",
                )
        return branches[0].projection, self.columns(branches, tables)  # type: ignore[arg-type]

    def columns(self, branches: list[Plan], tables: list[list[tuple[str, str]]]) -> Columns:
        """Each column's expression when every branch computes it alike, else the
        expression of each input (a branch's, for each input it reads)."""
        out: list[tuple[str, str | tuple[tuple[str, str], ...]]] = []
        for i, (name, first) in enumerate(tables[0]):
            texts = [table[i][1] for table in tables]
            if all(text == first for text in texts):
                out.append((name, first))
                continue
            own = tuple(
                (source.name, text)
                for branch, text in zip(branches, texts, strict=True)
                for source in branch.sources
            )
            out.append((name, own))
        return tuple(out)
