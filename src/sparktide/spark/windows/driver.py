"""Open windows merged on the driver (the one-pass plan): the batch's partials, folded
per task and written as files, merge with the open windows in Arrow; the open ones go
to state and the closed ones to records, the Spark route's very text
(:mod:`sparktide.spark.outputs.records`). Same answers as :mod:`.fold`, with no
shuffle and no Spark job (``docs/design.md``)."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.core.instants import NEG_INF
from sparktide.core.windows.spec import window_due
from sparktide.spark.batch import Batch
from sparktide.spark.columns import SCOPE
from sparktide.spark.context import Context
from sparktide.spark.keys import forced_keys
from sparktide.spark.onepass import merge_into
from sparktide.spark.outputs.records import spark_doubles, window_lines
from sparktide.spark.outputs.text import write_lines
from sparktide.spark.scopes import force, scope_arrays

__all__ = ["merge_on_driver"]


def merge_on_driver(
    context: Context, batch: Batch, fresh: pa.Table, *, distinct: bool = False
) -> None:
    """Merge the batch's partials ``fresh`` into the open windows on the driver; write
    the open ones (state) and the closed ones (records). With ``distinct``, ``fresh``
    holds one row per window already."""
    w = context.window
    assert w is not None
    groups = context.groups
    keys = [SCOPE, *groups, "start"]
    held = context.store.load_arrow(batch.previous, "windows", fresh.schema)
    if distinct and held.num_rows == 0:  # (nothing to merge)
        merged = fresh.combine_chunks()
    else:  # (held rows probed by start and one text key: the device, as a rule)
        merged = merge_into(fresh, held, keys, ["start", groups[-1] if groups else SCOPE])
    end = merged.column("start").to_numpy() + w.size
    due = end + window_due(0, context.lateness, context.closed_end)
    governing, last = scope_arrays(context, merged.column(SCOPE), batch)
    if w.idle_timeout is not None:
        governing = _idle_forced(context, batch, merged, end, due, governing, last)
    closed = due <= governing
    still_open = merged.filter(pa.array(~closed))
    context.store.write_arrow(still_open, batch.id, "windows")
    batch.gauges["open_windows"] = still_open.num_rows
    path = context.job.output.path
    if path is None and not batch.callback:  # (as write_text)
        return
    ended = merged.filter(pa.array(closed)).append_column("end", pa.array(end[closed], pa.int64()))
    names = [tuple(name for name, _ in plan.partial) for plan in context.aggregates]
    doubles = functools.partial(spark_doubles, context.spark)
    lines = window_lines(ended, w, names, batch.now, doubles)
    if batch.sink is not None:  # (a typed format or a callback)
        batch.sink("results", path, lines, None)
    else:
        write_lines(lines, f"{path}/{batch.label}")
    batch.count("windows_emitted", len(lines))


def _idle_forced(
    context: Context,
    batch: Batch,
    merged: pa.Table,
    end: np.ndarray,
    due: np.ndarray,
    governing: np.ndarray,
    last: np.ndarray,
) -> np.ndarray:
    """As :mod:`.fold`'s: the oldest open window of an idle scope closes, and the
    watermark governing the scope advances to its due time. Returns the governing
    watermarks raised."""
    w = context.window
    assert w is not None
    idle = (due > governing) & (np.maximum(end, last) + w.idle_timeout <= batch.now)
    if not idle.any():
        return governing
    scopes = pc.dictionary_encode(merged.column(SCOPE)).combine_chunks()
    code = scopes.indices.to_numpy()
    forced = np.full(len(scopes.dictionary), NEG_INF, dtype=np.int64)
    np.maximum.at(forced, code[idle], due[idle])
    if isinstance(batch.keys_next, pa.Table):  # substreams: the keys' state
        batch.keys_next = forced_keys(batch.keys_next, scopes.dictionary, forced)
    for i in np.flatnonzero(forced > NEG_INF) if not context.timeline.by_key else []:
        scope = scopes.dictionary[int(i)].as_py()
        force(context, batch, scope, int(forced[i]))
    return np.maximum(governing, forced[code])
