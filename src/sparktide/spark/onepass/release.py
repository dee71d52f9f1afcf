"""Releasing a task's events and computing their analytic columns (numpy and Arrow).

The one-pass plan's counterpart of :func:`sparktide.spark.outputs.release.release` with
:func:`sparktide.spark.analytic.analytic_release`, for the jobs of
:mod:`~sparktide.spark.onepass.releaseplan`: the task's admitted events, judged per
timeline, are released in ``(system timestamp, arrival time, file, line)`` order
(semantics §5) — all of them, or the batch is left to the general plan
(:func:`released_rows`: an event would be held); each analytic column then looks back
per ``(scope, key)`` over the kept events of the state (table ``analytic``) and the
released ones before it, by the rules of :mod:`sparktide.spark.analytic_rules`
(:func:`analytic_texts`), and the records are written as the general plan writes them
(:func:`record_lines`). The task answers with the records and, per ``(column, scope,
key)``, its latest ``depth`` events (:func:`kept_events`); the driver drops those the
scope's watermark left behind (:func:`sparktide.spark.outputs.released.kept_next`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparktide.job import Analytic
from sparktide.spark.onepass.collect import TaskRows
from sparktide.spark.onepass.plan import FusedPlan
from sparktide.spark.onepass.policy import Verdicts, newest_timestamp
from sparktide.spark.onepass.releaseplan import ColumnPlan, ReleasePlan
from sparktide.spark.onepass.schema import KEPT_SCHEMA
from sparktide.spark.onepass.signals import Abort

__all__ = [
    "Released",
    "analytic_expired",
    "analytic_texts",
    "analytic_value",
    "instant_texts",
    "kept_events",
    "known_kept",
    "record_lines",
    "release_ready",
    "released_rows",
    "timeline_watermark_after",
]

#: Years 1 to 9999 in microseconds: the instants ``format_instant`` writes.
_FIRST, _LAST = -62_135_596_800_000_000, 253_402_300_799_999_999


@dataclass
class Released:
    """A task's released events in release order: their system timestamp, arrival
    time, file name, line, scope and field texts (``ReleasePlan.fields``)."""

    s: np.ndarray
    a: np.ndarray
    file: pa.Array
    line: np.ndarray
    scope: pa.Array
    texts: list[pa.Array]


def released_rows(
    plan: FusedPlan,
    rows: TaskRows,
    order: np.ndarray,
    timeline: np.ndarray,
    verdicts: Verdicts,
    scopes: list[str],
    newest_at_start: np.ndarray,
) -> Released:
    """The admitted rows (``order``: the rows sorted by ``timeline``, then arrival
    order, as ``verdicts`` judged them) in release order; :class:`Abort` when one would
    be held: its timestamp above its timeline's watermark after the batch
    (``newest_at_start``: each row's timeline's newest timestamp at the start).
    ``scopes``: each timeline's output scope."""
    watermark = timeline_watermark_after(plan, timeline, verdicts, newest_at_start)
    admitted = np.flatnonzero(verdicts.admitted)
    s = verdicts.system_time[admitted]
    if not release_ready(s, watermark[admitted]).all():
        raise Abort("an admitted event would be held")
    taken = order[admitted]
    file, line, a = rows.file[taken], rows.line[taken], rows.arrival[taken]
    release = np.lexsort((line, file, a, s))  # (file ranks: the names' order)
    at = pa.array(taken[release])
    return Released(
        s=s[release],
        a=a[release],
        file=pa.array(rows.files, pa.string()).take(pa.array(file[release])),
        line=line[release],
        scope=pa.array(scopes, pa.string()).take(pa.array(timeline[admitted][release])),
        texts=[text.take(at) for text in rows.texts],
    )


def release_ready(timestamp: np.ndarray, watermark: np.ndarray) -> np.ndarray:
    """Whether admitted events at ``timestamp`` are released by their scope's
    ``watermark``: reached (``t ≤ W``; the jobs of the one-pass release have no CTIs)."""
    return timestamp <= watermark


def timeline_watermark_after(
    plan: FusedPlan, timeline: np.ndarray, verdicts: Verdicts, newest_at_start: np.ndarray
) -> np.ndarray:
    """Each row's timeline watermark after the task's last row of it (rows sorted by
    timeline): the watermark before that row, raised by what it offered
    (:func:`~sparktide.spark.onepass.policy.timeline_watermark`'s rule one row on)."""
    if len(timeline) == 0:
        return verdicts.watermark
    last = np.append(np.flatnonzero(np.diff(timeline)), len(timeline) - 1)
    segment = np.concatenate([[0], np.cumsum(np.diff(timeline) != 0)])
    after = verdicts.watermark[last]
    if plan.out_of_order is not None:
        newest = newest_timestamp(newest_at_start, verdicts.offered, timeline)
        newest_after = np.maximum(newest[last], verdicts.offered[last])
        after = np.maximum(after, newest_after - plan.out_of_order)
    return after[segment]


def known_kept(release: ReleasePlan) -> pa.Table:
    """The kept events before the batch (``release.state``), read once per task."""
    tables = [pq.read_table(path).select(KEPT_SCHEMA.names) for path in release.state]
    if not tables:
        return KEPT_SCHEMA.empty_table()
    return pa.concat_tables(tables).cast(KEPT_SCHEMA)


def _keys(column: ColumnPlan, rows: Released) -> pa.Array:
    """Each released row's partition key for ``column``: its fields' texts joined by
    ``chr(1)`` (the general plan's ``ak<k>``), empty without ``PARTITION BY``."""
    if not column.keys:
        return pa.repeat(pa.scalar(""), len(rows.s))
    texts = [rows.texts[i] for i in column.keys]
    return texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, "\x01")


def _looked_back(k: int, column: ColumnPlan, rows: Released, kept: pa.Table) -> dict:
    """Column ``k``'s kept events, then the released rows (``table``, of
    :data:`KEPT_SCHEMA`), and their order by ``(scope, key)`` then release order
    (``sort``), with ``group``, ``s`` and ``v`` in that order, and each released row's
    place in it (``places``)."""
    mine = kept.filter(pc.equal(kept.column("idx"), k))
    mine = mine.sort_by([(c, "ascending") for c in ("scope", "key", "s", "a", "file", "line")])
    n = len(rows.s)
    value = rows.texts[column.value] if column.value >= 0 else pa.nulls(n, pa.string())
    fresh = pa.table(
        [
            pa.array(np.full(n, k, np.int64)),
            rows.scope,
            _keys(column, rows),
            pa.array(rows.s),
            pa.array(rows.a),
            rows.file,
            pa.array(rows.line),
            value,
        ],
        schema=KEPT_SCHEMA,
    )
    table = pa.concat_tables([mine, fresh]).combine_chunks()
    joined = pc.binary_join_element_wise(table.column("scope"), table.column("key"), "\x00")
    group = joined.combine_chunks().dictionary_encode().indices.to_numpy(zero_copy_only=False)
    src = np.r_[np.zeros(mine.num_rows, np.int64), np.ones(n, np.int64)]
    position = np.r_[np.arange(mine.num_rows), np.arange(n)]
    sort = np.lexsort((position, src, group))
    places = np.empty(len(sort), np.int64)
    places[sort] = np.arange(len(sort))
    return {
        "table": table,
        "sort": sort,
        "group": group.astype(np.int64)[sort],
        "s": table.column("s").to_numpy()[sort],
        "v": table.column("v").combine_chunks().take(pa.array(sort)),
        "places": places[mine.num_rows :],
    }


def analytic_texts(
    release: ReleasePlan, rows: Released, kept: pa.Table
) -> tuple[list[pa.Array], pa.Table]:
    """Each column's JSON text per released row (the general plan's ``an<k>``), and the
    kept events after them (:func:`kept_events`)."""
    texts, nexts = [], []
    for k, column in enumerate(release.columns):
        looked = _looked_back(k, column, rows, kept)
        texts.append(analytic_value(column, rows.s, looked))
        nexts.append(kept_events(column, looked))
    return texts, pa.concat_tables(nexts) if nexts else KEPT_SCHEMA.empty_table()


def analytic_value(column: ColumnPlan, t: np.ndarray, looked: dict) -> pa.Array:
    """Each released row's JSON text of ``column`` (the released rows at ``t``, placed in
    ``looked``: :func:`_looked_back`), from the ``depth``-th event before it in its group,
    if any (the rule of :func:`sparktide.spark.analytic_rules.analytic_value`)."""
    group, s, places = looked["group"], looked["s"], looked["places"]
    back = places - column.depth
    found = back >= 0
    back = np.where(found, back, 0)
    found &= group[back] == group[places]
    if column.function == "isfirst":
        period = column.horizon
        same = found & (s[back] - s[back] % period == t - t % period)
        return pc.if_else(pa.array(same), pa.scalar("0"), pa.scalar("1"))
    if column.function == "last":  # (no ``when``: the event's own value)
        return pc.fill_null(looked["v"].take(pa.array(places)), "null")
    within = pa.array(found & (s[back] >= t - column.horizon))
    previous = looked["v"].take(pa.array(back))
    return pc.fill_null(pc.if_else(within, previous, pa.scalar(None, pa.string())), "null")


def analytic_expired(analytic: Analytic, t: np.ndarray, watermark: np.ndarray) -> np.ndarray:
    """Whether kept events at ``t`` can no longer matter once their scope's watermark is
    ``watermark`` (the rule of :func:`sparktide.spark.analytic_rules.analytic_expired`;
    never at −∞, whose floor lies below every instant)."""
    if analytic.function == "isfirst":
        floor = watermark - watermark % int(analytic.period)  # type: ignore[arg-type]
    else:
        floor = watermark - int(analytic.limit_duration)  # type: ignore[arg-type]
    return t < floor


def kept_events(column: ColumnPlan, looked: dict) -> pa.Table:
    """The column's latest ``depth`` events per ``(scope, key)`` of the task, kept or
    released (whether the watermark left them behind, the driver decides)."""
    group = looked["group"]
    if not len(group):
        return KEPT_SCHEMA.empty_table()
    ends = np.append(np.flatnonzero(np.diff(group)), len(group) - 1)
    sizes = np.diff(np.concatenate([[-1], ends]))
    from_end = np.repeat(ends, sizes) - np.arange(len(group))
    return looked["table"].take(pa.array(looked["sort"][from_end < column.depth]))


def instant_texts(micros: np.ndarray) -> pa.Array:
    """ISO-8601 UTC texts of instants as ``format_instant`` writes them (the fraction's
    trailing zeros trimmed); :class:`Abort` outside years 1 to 9999."""
    if len(micros) and (micros.min() < _FIRST or micros.max() > _LAST):
        raise Abort("an instant outside years 1 to 9999")
    seconds = np.floor_divide(micros, 1_000_000)
    fraction = micros - seconds * 1_000_000
    base = pc.strftime(pa.array(seconds, pa.timestamp("s")), format="%Y-%m-%dT%H:%M:%S")
    digits = pc.utf8_rtrim(pc.utf8_lpad(pc.cast(pa.array(fraction), pa.string()), 6, "0"), "0")
    point = pc.if_else(pc.equal(digits, ""), pa.scalar(""), pa.scalar("."))
    return pc.binary_join_element_wise(base, point, digits, "Z", "")


def record_lines(release: ReleasePlan, rows: Released, columns: list[pa.Array]) -> pa.Array:
    """The released events' records as the general plan writes them under ``[select]``
    (:func:`sparktide.spark.projections.projected_event`): each column's JSON text in
    ``[select]``'s order, then the system timestamp."""
    pieces: list[pa.Array | str] = []
    for i, (name, kind, at) in enumerate(release.select):
        pieces += [("{" if i == 0 else ",") + json.dumps(name) + ":"]
        pieces += [rows.texts[at] if kind == "f" else columns[at]]
    pieces += [("," if pieces else "{") + json.dumps(release.timestamp) + ':"']
    pieces += [instant_texts(rows.s), '"}']
    return pc.binary_join_element_wise(
        *(pa.scalar(p) if isinstance(p, str) else p for p in pieces), ""
    )
