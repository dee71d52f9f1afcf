"""The driver's side of a windowless batch its tasks released themselves
(:mod:`sparktide.spark.onepass.release`): the records written in release order, and the
analytic columns' kept events carried to the next batch.

The tasks answer with their released records and, per ``(column, scope, key)`` of their
scopes, the latest ``depth`` events; here the records of every task are put in one
release order (``(system timestamp, arrival time, file, line)``, as
:func:`sparktide.spark.outputs.release.release` writes them) and the kept events of
scopes no task judged are carried over; then every kept event the scope's watermark
left behind is dropped (:func:`~sparktide.spark.onepass.release.analytic_expired`, the
rule :func:`sparktide.spark.analytic_rules.analytic_expired` writes in SQL), as the
general plan does at the end of each batch. Nothing is held: a batch that would hold an
event is left to the general plan by its tasks.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.core.instants import POS_INF
from sparktide.spark.batch import Batch
from sparktide.spark.columns import PARTITION
from sparktide.spark.context import Context
from sparktide.spark.onepass import KEPT_SCHEMA
from sparktide.spark.onepass.release import analytic_expired
from sparktide.spark.outputs.text import hand_lines
from sparktide.spark.scopes import scope_arrays
from sparktide.spark.taskpass import Spilled

__all__ = ["kept_next", "write_released"]

#: The release order (:data:`sparktide.spark.analytic_rules.RELEASE_ORDER`'s columns).
_ORDER = [(name, "ascending") for name in ("s", "a", "file", "line")]


def write_released(
    context: Context, batch: Batch, records: Spilled, kept: Spilled, summary: list
) -> None:
    """Write the tasks' released ``records`` in release order (counted ``released``) and
    the analytic columns' kept events after the batch (table ``analytic``); nothing is
    held (gauge ``held``). ``summary``: the batch's partitions (their scopes' kept
    events are the tasks')."""
    table = records.arrow()
    if table.num_rows > 1:
        table = table.sort_by(_ORDER)
    hand_lines(batch, table.column("value").combine_chunks(), context.job.output.path, "released")
    judged = {"" if not context.job.ordering.partitioned else row[PARTITION] for row in summary}
    state = kept_next(context, batch, kept.arrow(), judged)
    context.store.write_arrow(state, batch.id, "analytic")
    batch.gauges["held"] = 0


def kept_next(context: Context, batch: Batch, fresh: pa.Table, judged: set[str]) -> pa.Table:
    """The kept events after the batch: the tasks' (``fresh``, of the ``judged`` scopes)
    and the earlier ones of the other scopes, less those their scope's watermark after
    the batch left behind (+∞ at a flush)."""
    before = context.store.load_arrow(batch.previous, "analytic", KEPT_SCHEMA)
    if judged and before.num_rows:
        others = pc.invert(pc.is_in(before.column("scope"), pa.array(sorted(judged))))
        before = before.filter(others)
    rows = pa.concat_tables([before, fresh.cast(KEPT_SCHEMA)]).combine_chunks()
    if batch.flushing:
        watermark = np.full(rows.num_rows, POS_INF, dtype=np.int64)
    else:
        watermark, _ = scope_arrays(context, rows.column("scope"), batch)
    column = rows.column("idx").to_numpy()
    t = rows.column("s").to_numpy()
    expired = np.zeros(rows.num_rows, dtype=bool)
    for k, analytic in enumerate(context.job.analytics):
        mine = column == k
        expired[mine] = analytic_expired(analytic, t[mine], watermark[mine])
    return rows.filter(pa.array(~expired))
