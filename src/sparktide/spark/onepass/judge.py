"""Judging a task's rows: timelines, the policy's verdicts, windows, partials, tallies.

Each piece of whole timelines (:func:`~sparktide.spark.onepass.parallel.timeline_pieces`)
is judged on its own, in threads when the task holds the whole batch: its rows sorted
by timeline, then arrival order (arrival time, file, line), judged
(:func:`~sparktide.spark.onepass.policy.judge_rows`) and folded into window partials
(:mod:`~sparktide.spark.onepass.windows`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.spark.onepass.clocks import ARRIVAL, NEWEST, WATERMARK, known_keys, timelines
from sparktide.spark.onepass.collect import TaskRows
from sparktide.spark.onepass.merge import merge_partials
from sparktide.spark.onepass.parallel import in_threads, timeline_pieces
from sparktide.spark.onepass.plan import FusedPlan
from sparktide.spark.onepass.policy import Verdicts, judge_rows
from sparktide.spark.onepass.release import (
    analytic_texts,
    known_kept,
    record_lines,
    released_rows,
)
from sparktide.spark.onepass.schema import RELEASED_SCHEMA
from sparktide.spark.onepass.tally import Tally, key_rows, summary, tally
from sparktide.spark.onepass.windows import assign_windows, fold

__all__ = ["judge"]


def judge(
    plan: FusedPlan, schema: pa.Schema, task: int, rows: TaskRows
) -> tuple[pa.Table, pa.Table | None, pa.RecordBatch]:
    """The task's window partials, its keys' rows (substreams) and its partitions'
    summary rows (of ``schema``); for a windowless job (``plan.release``) its released
    records and the analytic columns' kept events instead of partials and keys."""
    encoded = rows.pid.dictionary_encode()
    pids = encoded.dictionary.to_pylist()
    code = encoded.indices.to_numpy().astype(np.int64)
    known = known_keys(plan) if plan.substreams else None
    parts = timeline_pieces(plan, known, rows, code, len(pids))
    if plan.release is not None:
        before = known_kept(plan.release)  # (once: each piece takes its scopes' rows)
        judged = list(
            in_threads(plan, lambda part: _release_piece(plan, pids, before, *part), parts)
        )
        records = pa.concat_tables([records for records, _, _ in judged])
        kept = pa.concat_tables([kept for _, kept, _ in judged])
        tallies = [piece_tally for _, _, piece_tally in judged]
        return records, kept, summary(schema, task, pids, rows.files, tallies)
    judged = list(in_threads(plan, lambda part: _judge_piece(plan, pids, *part), parts))
    partials = pa.concat_tables([partial for partial, _, _ in judged])
    if len(judged) > 1 and not plan.per_timeline:
        # (pieces of partitions share the merged job's windows: one row per window)
        partials = merge_partials(partials, ["scope", *plan.group_names, "start"])
    keys = None
    if plan.substreams:  # (a key is in one piece: the pieces' keys are distinct)
        keys = pa.concat_tables([piece_keys for _, piece_keys, _ in judged])
    tallies = [piece_tally for _, _, piece_tally in judged]
    return partials, keys, summary(schema, task, pids, rows.files, tallies)


def _judged(
    plan: FusedPlan, pids: list[str], known: pa.Table | None, rows: TaskRows, code: np.ndarray
) -> tuple[np.ndarray, pa.Array, np.ndarray, np.ndarray, np.ndarray, Verdicts]:
    """The rows' timelines (and substream keys), their starts, the judging order (by
    timeline, then arrival order), each row's timeline in that order, and the verdicts."""
    row_timeline, keys, start = timelines(plan, pids, known, rows.key, code)
    order = np.lexsort((rows.line, rows.file, rows.arrival, row_timeline))
    timeline = row_timeline[order]
    verdicts = judge_rows(
        plan,
        timeline,
        rows.event_time[order],
        rows.arrival[order],
        (start[timeline, ARRIVAL], start[timeline, WATERMARK], start[timeline, NEWEST]),
    )
    return row_timeline, keys, start, order, timeline, verdicts


def _judge_piece(
    plan: FusedPlan, pids: list[str], known: pa.Table | None, rows: TaskRows, code: np.ndarray
) -> tuple[pa.Table, pa.Table | None, Tally]:
    """:func:`judge` of whole timelines of the task (``code``: each row's partition, an
    index of ``pids``): their window partials, keys' rows and partitions' tally."""
    _, keys, _, order, timeline, verdicts = _judged(plan, pids, known, rows, code)
    assignment = assign_windows(plan, verdicts.system_time, verdicts.admitted, verdicts.watermark)
    scopes = None
    if plan.per_timeline:  # (windows close on their own)
        scopes = keys if plan.substreams else pa.array(pids, pa.string())
    partials = fold(plan, rows, order, timeline, scopes, assignment)
    piece_keys = key_rows(timeline, verdicts.offered, keys) if plan.substreams else None
    piece_tally = tally(len(pids), code[order], rows, order, verdicts, assignment.in_some)
    return partials, piece_keys, piece_tally


def _release_piece(
    plan: FusedPlan,
    pids: list[str],
    before: pa.Table,
    known: pa.Table | None,
    rows: TaskRows,
    code: np.ndarray,
) -> tuple[pa.Table, pa.Table, Tally]:
    """:func:`judge` of whole timelines of a windowless job's task: their released
    records, the analytic columns' kept events of their scopes (``before``: the task's
    kept events before the batch, every scope), and the tally."""
    release = plan.release
    assert release is not None
    _, _, start, order, timeline, verdicts = _judged(plan, pids, known, rows, code)
    scopes = [""] * len(pids) if release.merged else pids
    newest = start[timeline, NEWEST]
    released = released_rows(plan, rows, order, timeline, verdicts, scopes, newest)
    mine = pa.array(sorted({scopes[i] for i in np.unique(code)}), pa.string())
    ours = before.filter(pc.is_in(before.column("scope"), mine))
    columns, kept = analytic_texts(release, released, ours)
    records = pa.table(
        [
            released.s,
            released.a,
            released.file,
            released.line,
            record_lines(release, released, columns),
        ],
        schema=RELEASED_SCHEMA,
    )
    piece_tally = tally(len(pids), code[order], rows, order, verdicts, verdicts.admitted)
    return records, kept, piece_tally
