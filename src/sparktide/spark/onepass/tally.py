"""What a task tells the driver of its timelines: per partition and per key.

Per partition (:data:`~sparktide.spark.onepass.schema.SUMMARY` rows): its counters, its
largest offered timestamp and arrival, and its first late event in arrival order; per
substream key (:data:`~sparktide.spark.onepass.schema.KEY` rows): its largest offered
timestamp and its events, for the key's next state.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.core.instants import NEG_INF
from sparktide.spark.columns import (
    PARTITION,
)
from sparktide.spark.inputs.arrays import masked
from sparktide.spark.onepass.collect import TaskRows
from sparktide.spark.onepass.plan import FusedPlan
from sparktide.spark.onepass.policy import Verdicts
from sparktide.spark.onepass.schema import KEY_SCHEMA, SUMMARY, counter_column, record_batch

__all__ = ["column_present_counts", "key_rows", "summary", "tally"]

#: A piece's tally of its partitions (:func:`tally`).
Tally = dict[str, Any]
_LATE = ("late_a", "late_file", "late_line", "late_t")


def key_rows(timeline: np.ndarray, offered: np.ndarray, keys: pa.Array) -> pa.Table:
    """Each key's (``keys``, by ``timeline``: each judged row's key) largest offered
    timestamp and events."""
    firsts = np.concatenate([[0], np.flatnonzero(np.diff(timeline)) + 1])
    newest = np.full(len(keys), NEG_INF, dtype=np.int64)
    newest[timeline[firsts]] = np.maximum.reduceat(offered, firsts)
    return pa.table(
        {
            "scope": keys,
            "max_h": pa.array(newest, pa.int64()),
            "kn": pa.array(np.bincount(timeline, minlength=len(keys)).astype(np.int64)),
        },
        schema=KEY_SCHEMA,
    )


def column_present_counts(plan: FusedPlan, rows: TaskRows | None) -> list[int]:
    """Per named column (:attr:`FusedPlan.present`), the task's vouched rows holding a
    value in it; the Arrow copy of ``column_present`` (``sparktide.rules``). A vouched
    row holds its time, partition and key columns; a group-by value's text (or a
    released event's field's) is ``null`` where it holds none; an aggregate's input is
    counted or flagged where it holds one (a malformed line is the SQL route's)."""
    if rows is None:
        return [0] * len(plan.present)
    out = []
    for where, i in plan.present:
        if where == "all":
            out.append(len(rows.event_time))
        elif where in ("g", "f"):
            texts = rows.groups[i] if where == "g" else rows.texts[i]
            out.append(len(texts) - (pc.sum(pc.equal(texts, "null")).as_py() or 0))
        else:
            given = rows.inputs[i]
            held = given["count"] if "count" in given else given["is_integer"] | given["is_double"]
            out.append(int(np.count_nonzero(held)))
    return out


def _counts(verdicts: Verdicts, in_some: np.ndarray) -> dict[str, np.ndarray]:
    """Each counter's rows (:data:`~sparktide.spark.onepass.schema.COUNTED`)."""
    return {
        "input": np.ones(len(verdicts.admitted), dtype=bool),
        "admitted": verdicts.admitted,
        "early": verdicts.early,
        "late": verdicts.late,
        "out_of_order": verdicts.out_of_order,
        "adjusted": verdicts.adjusted,
        "in_no_window": verdicts.admitted & ~in_some,
        "dropped.early": verdicts.early,
        "dropped.late": verdicts.dropped_late,
        "dropped.out_of_order": verdicts.dropped_out_of_order,
    }


def tally(
    count: int,
    partition: np.ndarray,
    rows: TaskRows,
    order: np.ndarray,
    verdicts: Verdicts,
    in_some: np.ndarray,
) -> Tally:
    """Per partition (``partition``: each judged row's partition, of ``count``, in
    judging order; ``order``: its position in ``rows``): its counters, largest offered
    timestamp and arrival, and its first late event in arrival order (``late_a``,
    ``late_file`` (the file's rank, -1 for none), ``late_line``, ``late_t``)."""
    out: Tally = {}
    for name, values in (("max_h", verdicts.offered), ("max_a", rows.arrival[order])):
        best = np.full(count, NEG_INF, dtype=np.int64)
        np.maximum.at(best, partition, values)
        out[name] = best
    out["counts"] = {
        name: np.bincount(partition[mask], minlength=count).astype(np.int64)
        for name, mask in _counts(verdicts, in_some).items()
    }
    late = order[verdicts.late]  # (rows of the task, by their position in it)
    first_late = np.full(count, -1, dtype=np.int64)
    if late.size:
        code = partition[verdicts.late]
        by_arrival = np.lexsort((rows.line[late], rows.file[late], rows.arrival[late], code))
        seen, where = np.unique(code[by_arrival], return_index=True)
        first_late[seen] = late[by_arrival[where]]
    has = first_late >= 0
    chosen = np.where(has, first_late, 0)
    out["late_a"], out["late_t"] = rows.arrival[chosen], rows.event_time[chosen]
    out["late_line"] = rows.line[chosen]
    out["late_file"] = np.where(has, rows.file[chosen], -1)
    return out


def _first_late(tallies: list[Tally]) -> dict[str, np.ndarray]:
    """Per partition, the earliest late event of the pieces' by (arrival, file, line)."""
    first, *others = tallies
    late = {name: first[name].copy() for name in _LATE}
    for other in others:
        a, f, line = other["late_a"], other["late_file"], other["late_line"]
        earlier = (a < late["late_a"]) | (
            (a == late["late_a"])
            & ((f < late["late_file"]) | ((f == late["late_file"]) & (line < late["late_line"])))
        )
        better = (f >= 0) & ((late["late_file"] < 0) | earlier)
        for name in late:
            late[name] = np.where(better, other[name], late[name])
    return late


def summary(
    schema: pa.Schema, task: int, pids: list[str], files: list[str], tallies: list[Tally]
) -> pa.RecordBatch:
    """One row per partition from the tallies of the task's pieces (:func:`tally`):
    counters summed, the largest offered timestamp and arrival, the earliest late event
    by (arrival, file, line)."""
    count = len(pids)
    out: dict[str, pa.Array] = {
        "kind": pa.repeat(pa.scalar(SUMMARY), count),
        "task": pa.repeat(pa.scalar(task, pa.int64()), count),
        PARTITION: pa.array(pids, pa.string()),
    }
    for name in ("max_h", "max_a"):
        out[name] = pa.array(np.maximum.reduce([t[name] for t in tallies]), pa.int64())
    for name in tallies[0]["counts"]:
        total = np.sum([t["counts"][name] for t in tallies], axis=0)
        out[counter_column(name)] = pa.array(total.astype(np.int64))
    late = _first_late(tallies)
    has = late["late_file"] >= 0
    for name in ("late_a", "late_t", "late_line"):
        out[name] = masked(late[name], has, pa.int64())
    names = np.array(files, dtype=object)[np.where(has, late["late_file"], 0)]
    out["late_file"] = pa.array(names.tolist(), pa.string(), mask=~has)
    return record_batch(schema, out)
