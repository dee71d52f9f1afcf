"""Window assignment and folding in a task: each admitted row into its windows' partials.

Windows are tumbling or hopping (a hop beyond the size leaves gaps); a window whose end
(plus the allowed lateness) the governing watermark passed already is closed. With
windows per timeline (partitioned, substreams) the governing watermark is the row's
timeline's; merged, the engine's own, so no window closes in a task.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from sparktide.core.instants import NEG_INF
from sparktide.core.windows.spec import window_due
from sparktide.spark.inputs.arrays import masked
from sparktide.spark.onepass.collect import TaskRows
from sparktide.spark.onepass.merge import merge_partials
from sparktide.spark.onepass.plan import FusedPlan
from sparktide.spark.onepass.schema import partial_schema
from sparktide.spark.onepass.signals import Abort

__all__ = ["Assignment", "assign_windows", "fold"]


@dataclass(frozen=True)
class Assignment:
    """Rows (by position in judging order) and the starts of the open windows holding
    them: one entry per (row, window); and per row whether any window holds it."""

    member: np.ndarray
    start: np.ndarray
    in_some: np.ndarray


def assign_windows(
    plan: FusedPlan, system_time: np.ndarray, admitted: np.ndarray, watermark: np.ndarray
) -> Assignment:
    """Every start of an open window holding each admitted row's system timestamp
    (``watermark``: each row's timeline watermark); :class:`Abort` when a row is late
    for every window holding it (the general plan dead-letters it)."""
    n = len(system_time)
    x = system_time - 1 if plan.closed_end else system_time  # ((start, end] windows)
    last = x - np.mod(x - plan.offset, plan.period)
    governing = watermark if plan.per_timeline else np.full(n, NEG_INF, dtype=np.int64)
    due = window_due(plan.size, plan.lateness, plan.closed_end)  # (from a window's start)
    members, starts = [], []
    in_some = np.zeros(n, dtype=bool)
    open_some = np.zeros(n, dtype=bool)
    for k in range(-(-plan.size // plan.period)):
        start = last - k * plan.period
        inside = admitted & (start + plan.size > x)
        is_open = inside & (start + due > governing)
        in_some |= inside
        open_some |= is_open
        members.append(np.flatnonzero(is_open))
        starts.append(start[is_open])
    if (in_some & ~open_some).any():
        raise Abort("an event late for every window")
    return Assignment(np.concatenate(members), np.concatenate(starts), in_some)


def fold(
    plan: FusedPlan,
    rows: TaskRows,
    order: np.ndarray,
    timeline: np.ndarray,
    scopes: pa.Array | None,
    assignment: Assignment,
) -> pa.Table:
    """The window partials of the rows assigned (``order``: each judged row's position
    in ``rows``; ``timeline``: its timeline, an index of ``scopes``, the timelines'
    names when windows are per timeline): one row per (scope, group, start)."""
    member = assignment.member
    columns: dict[str, pa.Array] = {
        "scope": scopes.take(timeline[member])
        if scopes is not None
        else pa.repeat(pa.scalar(""), len(member)),
    }
    sources = order[member]
    taken = pa.array(sources)
    for name, group in zip(plan.group_names, rows.groups, strict=True):
        columns[name] = group.take(taken)
    columns["start"] = pa.array(assignment.start, pa.int64())
    for k, (_, _, names) in enumerate(plan.aggregates):
        columns.update(_aggregate_columns(names, rows.inputs[k], sources))
    schema = partial_schema(plan)
    table = pa.table({f.name: columns[f.name].cast(f.type) for f in schema}, schema=schema)
    return merge_partials(table, ["scope", *plan.group_names, "start"])


def _aggregate_columns(
    names: tuple[str, ...], given: dict[str, np.ndarray], sources: np.ndarray
) -> dict[str, pa.Array]:
    """An aggregate's partial columns (``names``) of the rows at ``sources``: a count,
    or an exact integer sum, a float sum and their counts."""
    if len(names) == 1:
        return {names[0]: pa.array(given["count"][sources])}
    integer_sum, double_sum, numbers, doubles = names
    is_integer, is_double = given["is_integer"][sources], given["is_double"][sources]
    return {
        integer_sum: masked(given["integer"][sources], is_integer, pa.int64()).cast(
            pa.decimal128(38, 0)
        ),
        double_sum: masked(given["double"][sources], is_double, pa.float64()),
        numbers: pa.array((given["is_integer"] | given["is_double"])[sources].astype(np.int64)),
        doubles: pa.array(is_double.astype(np.int64)),
    }
