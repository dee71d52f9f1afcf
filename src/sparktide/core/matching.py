"""``[match]`` in the reference engine (semantics §11.25): released events, partition by
partition, through the pattern; one record per match.

:class:`PatternMatches` keeps, per ``(scope, partition key)``, the released rows from
the earliest start not yet decided, each with its mask (bit ``v``: it meets variable
``v``'s condition), time and fields. A start is decided when
:func:`~sparktide.core.patterns.match_at` no longer needs rows that may still come: at
once when no preferred path reached the last row, else when the scope's watermark passes
its time plus ``limit_duration`` (no later row can join its window) or at the flush.
A decided start that matched writes its record: the measures, and its last row's time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sparktide.core.analytic import analytic_key
from sparktide.core.instants import NEG_INF
from sparktide.core.outputs import project, time_or_none, with_time
from sparktide.core.patterns import MATCHED, PENDING, match_at, window_closed
from sparktide.core.records import value_at
from sparktide.expr import evaluate, value_of
from sparktide.job import Job, Measure

__all__ = ["PatternMatches", "match_record", "measure_value"]


@dataclass
class _Rows:
    """One partition's rows from its earliest undecided start on, and which of them are
    decided starts."""

    times: list[int] = field(default_factory=list)
    masks: list[int] = field(default_factory=list)
    fields: list[dict[str, Any]] = field(default_factory=list)
    decided: list[bool] = field(default_factory=list)


def measure_value(
    measure: Measure, variables: tuple[str, ...], assigned: Any, fields: Any, end: int
) -> Any:
    """The value of ``measure`` over a match of ``end`` rows (``assigned[i]``: row
    ``i``'s variable; ``fields(i)``: its fields)."""
    if measure.variable is None:
        rows = list(range(end))
    else:
        v = variables.index(measure.variable)
        rows = [i for i in range(end) if assigned[i] == v]
    if measure.function == "count":
        return len(rows)
    if not rows:
        return None
    row = rows[0] if measure.function == "first" else rows[-1]
    assert measure.column is not None
    return value_at(fields(row), measure.column)


def match_record(job: Job, values: dict[str, Any], timestamp: int) -> dict[str, Any]:
    """The record of a match: its measures in order (with ``[select]``, its columns,
    computed from the measures and ``System.Timestamp()``, the match's time), then its
    ``timestamp``."""
    out: dict[str, Any] = {"type": "match"}
    if job.select:
        seen = with_time(values, timestamp)
        out.update(project(job, seen.get, seen.__contains__))
    else:
        out.update(values)
    out[job.event_fields["timestamp"]] = time_or_none(timestamp)
    return out


class PatternMatches:
    """The matches of ``job``'s ``[match]``, fed released events in release order;
    ``emit`` receives each match's record."""

    def __init__(self, job: Job, emit: Callable[[dict[str, Any]], None]) -> None:
        assert job.match is not None
        self.job = job
        self.match = job.match
        self.program = job.match.program
        self.conditions = job.match.conditions
        self.partition = job.match.partition_expressions
        self.measures = job.match.measure_list
        self.emit = emit
        self.state: dict[tuple[Any, tuple], _Rows] = {}

    def release(self, scope: Any, timestamp: int, fields: dict[str, Any]) -> None:
        """A released event of ``scope``: a row of its partition, then the starts it
        decides."""
        seen = with_time(fields, timestamp)
        lookup: Callable[[str], Any] = lambda name: value_of(seen.get(name))  # noqa: E731
        present = seen.__contains__
        key = tuple(analytic_key(evaluate(e, lookup, present=present)) for e in self.partition)
        mask = 0
        for v, condition in enumerate(self.conditions):
            if condition is None or evaluate(condition, lookup, present=present) is True:
                mask |= 1 << v
        rows = self.state.setdefault((scope, key), _Rows())
        rows.times.append(timestamp)
        rows.masks.append(mask)
        rows.fields.append(fields)
        rows.decided.append(False)
        self._decide(rows, None)

    def advance(self, scope: Any, watermark: int, every_scope: bool) -> None:
        """``scope``'s watermark (every scope's) reached ``watermark``: the starts whose
        windows it closed are decided."""
        for (own, _), rows in list(self.state.items()):
            if every_scope or own == scope:
                self._decide(rows, watermark)
        self._forget()

    def finish(self) -> None:
        """The flush: every start is decided on the rows there are."""
        for rows in self.state.values():
            self._decide(rows, None, final=True)
        self.state.clear()

    def _decide(self, rows: _Rows, watermark: int | None, *, final: bool = False) -> None:
        """Try every undecided start of ``rows`` (in order), then drop the rows before
        the first one still undecided."""
        program, duration = self.program, self.match.limit_duration
        n = len(rows.times)
        for start in range(n):
            if rows.decided[start]:
                continue
            last = rows.times[start] + duration  # (the window: rows up to this time)
            stop = start
            while stop < n and rows.times[stop] <= last:
                stop += 1
            passed = NEG_INF if watermark is None else watermark
            closed = window_closed(final, stop < n, passed, last)
            assigned = [0] * (stop - start)
            stack = [0] * (2 * (len(program.ops) * (stop - start + 1) + 1))
            visited = [0] * (len(program.ops) * (stop - start + 1))
            outcome, end = match_at(
                program.ops,
                program.first,
                program.second,
                rows.masks,
                start,
                stop,
                closed,
                assigned,
                stack,
                visited,
                1,
            )
            if outcome == PENDING:
                continue
            rows.decided[start] = True
            if outcome == MATCHED:
                self._write(rows, start, end, assigned)
        undecided = next((i for i, d in enumerate(rows.decided) if not d), n)
        if undecided:
            for column in (rows.times, rows.masks, rows.fields, rows.decided):
                del column[:undecided]

    def _write(self, rows: _Rows, start: int, end: int, assigned: list[int]) -> None:
        variables = self.program.variables
        values = {
            m.name: measure_value(
                m, variables, assigned, lambda i: rows.fields[start + i], end - start
            )
            for m in self.measures
        }
        self.emit(match_record(self.job, values, rows.times[end - 1]))

    def _forget(self) -> None:
        for pair in [p for p, rows in self.state.items() if not rows.times]:
            del self.state[pair]

    def size(self) -> int:
        """How many rows the state keeps."""
        return sum(len(rows.times) for rows in self.state.values())
