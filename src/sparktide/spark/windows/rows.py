"""Session and sliding windows on Spark: windows computed from the rows they hold.

Grid windows (tumbling, hopping, snapshot) fold rows into mergeable partial aggregates.
Session and sliding windows cannot: a session's bounds depend on every row in it, and a
sliding result exists at every instant a row enters or leaves. So the admitted rows of
open windows stay in state, and each micro-batch recomputes, with window functions over
``(scope, group)`` in timestamp order, the sessions (or sliding change points) that the
governing watermark has closed. Per group a small *marks* row carries what the dropped
rows would otherwise be needed for: a session cut at a ``max_duration`` boundary
(``carry_cut``, ``carry_last``) and the last sliding point emitted (``emitted_until``).
The arithmetic is the reference engine's (``sparktide.core.windows``), in closed form.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparktide.core.windows.spec import window_due
from sparktide.job import Window
from sparktide.spark.batch import Batch
from sparktide.spark.columns import (
    ADMITTED_KINDS,
    GOVERNING_WATERMARK,
    RELEASE_ORDER,
    SCOPE,
    SCOPE_WATERMARK_END,
    SUBSTREAM_KEY,
    SYSTEM_TIME,
    VERDICT,
)
from sparktide.spark.context import Context
from sparktide.spark.outputs.records import write_windows
from sparktide.spark.outputs.text import write_state
from sparktide.spark.scopes import force, scope_watermarks
from sparktide.spark.sql import NEG
from sparktide.spark.windows.assign import windowed_rows
from sparktide.spark.windows.latescan import ADMIT_WATERMARK

__all__ = [
    "marks_schema",
    "open_rows",
    "row_windows",
    "session_windows",
    "sliding_windows",
    "window_rows",
]

ORDER = RELEASE_ORDER
#: The processing time of a row's scope's last delivery (idle timeout).
LAST_DELIVERY = "last_delivery"
#: Raises the governing watermark of a frame given its window-end column (idle timeout).
Govern = Callable[[DataFrame, str], DataFrame]
#: Computes a frame once for the rest of the batch (``Batch.keep``), or leaves it as it is.
Keep = Callable[[DataFrame], DataFrame]


def _as_is(frame: DataFrame) -> DataFrame:
    return frame


def marks_schema(groups: list[str]) -> T.StructType:
    """Schema of the per-group marks table."""
    return T.StructType(
        [T.StructField(SCOPE, T.StringType())]
        + [T.StructField(g, T.StringType()) for g in groups]
        + [
            T.StructField("carry_cut", T.LongType()),
            T.StructField("carry_last", T.LongType()),
            T.StructField("emitted_until", T.LongType()),
            T.StructField("closed_start", T.LongType()),
            T.StructField("closed_until", T.LongType()),
        ]
    )


def window_rows(context: Context, decided: DataFrame) -> DataFrame:
    """The admitted rows of a judged batch as session and sliding windows keep them:
    scope, group values, release order, aggregate inputs; under ``accept``, a sliding
    row's governing watermark at its admission (:data:`~.ADMIT_WATERMARK`)."""
    w = context.window
    assert w is not None
    admit = []
    if context.accepts_below_rows and w.type == "sliding":
        admit = [F.col(GOVERNING_WATERMARK).alias(ADMIT_WATERMARK)]
    admitted = decided.filter(F.col(VERDICT).isin(*ADMITTED_KINDS))
    if context.job.joins_windows:  # (the join's left input's rows are not windowed)
        admitted = admitted.filter(windowed_rows(context))
    return admitted.select(
        SCOPE, *context.groups, *RELEASE_ORDER, *context.aggregate_inputs, *admit
    )


def open_rows(context: Context, batch: Batch, decided: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The open rows and the marks the previous batch left (``decided``: the judged
    batch, for the rows' schema)."""
    store = context.store
    schema = window_rows(context, decided).schema
    state = store.load_table(batch.previous, "rows", schema)
    return state, store.load_table(batch.previous, "marks", marks_schema(context.groups))


def _spec(groups: list[str]) -> str:
    keys = ", ".join([SCOPE, *groups])
    return f"PARTITION BY {keys} ORDER BY {', '.join(ORDER)}"


def session_windows(
    rows: DataFrame,
    marks: DataFrame,
    window: Window,
    groups: list[str],
    due_offset: int,
    closed_end: bool,
    govern: Govern | None = None,
    *,
    accept: bool = False,
    keep: Keep = _as_is,
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Sessions of ``rows`` (state and new rows, with a ``governing`` watermark column).

    ``govern`` (the idle timeout) raises the governing watermark of a frame of rows
    given the column of their window's end. With ``accept`` the marks keep each group's
    last closed session (:mod:`.latescan` refuses a row at or before it). ``keep``
    computes the sessions once for the three frames returned (``Batch.keep``). Returns
    ``(closed rows with window_start/window_end, open rows, new marks)``.
    """
    gap = window.gap
    keys, s = [SCOPE, *groups], SYSTEM_TIME
    rows = rows.join(marks.select(*keys, "carry_cut", "carry_last"), on=keys, how="left")
    spec = _spec(groups)
    joins = (
        (lambda prev: f"({s} - {prev} <= {gap})")
        if closed_end
        else (lambda prev: f"({s} - {prev} < {gap})")
    )
    rows = rows.withColumn("prev", F.expr(f"lag({s}) OVER ({spec})"))
    rows = rows.withColumn(
        "prev_eff", F.expr("CASE WHEN prev IS NULL THEN carry_last ELSE prev END")
    )
    rows = rows.withColumn(
        "new_gs", F.expr(f"CASE WHEN prev_eff IS NULL OR NOT {joins('prev_eff')} THEN 1 ELSE 0 END")
    )
    rows = rows.withColumn(
        "gs", F.expr(f"sum(new_gs) OVER ({spec} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)")
    )
    part = f"PARTITION BY {', '.join([*keys, 'gs'])}"
    rows = rows.withColumn("st0", F.expr(f"min({s}) OVER ({part})"))
    rows = rows.withColumn("gs_last", F.expr(f"max({s}) OVER ({part})"))
    if window.max_duration:
        rows = _cut_at_max_duration(rows, window, part, keys, closed_end)
    else:
        rows = rows.withColumn("window_start", F.col("st0"))
        rows = rows.withColumn("window_end", F.expr(f"gs_last + {gap}"))
        rows = rows.withColumn("piece_last", F.col("gs_last"))
        rows = rows.withColumn("cut", F.lit(False))
    if govern is not None:  # (the idle timeout raises the governing watermark)
        rows = govern(rows, "window_end")
    rows = rows.withColumn("closed", F.expr(f"window_end + {due_offset} <= {SCOPE_WATERMARK_END}"))
    rows = keep(rows)
    closed = rows.filter("closed")
    still_open = rows.filter("NOT closed")
    new_marks = _session_marks(closed, marks, keys, keep_closed=accept)
    return closed, still_open, new_marks


def _cut_at_max_duration(
    rows: DataFrame, window: Window, part: str, keys: list[str], closed_end: bool
) -> DataFrame:
    """Sessions cut into pieces at the ``max_duration`` boundaries they cross: each
    row's piece (``window_start``, ``window_end``), whether the piece ends at a cut
    (``cut``) and its last timestamp (``piece_last``)."""
    gap, m, offset = window.gap, window.max_duration, window.offset
    s = SYSTEM_TIME
    start0 = "CASE WHEN gs = 0 THEN carry_cut ELSE st0 END"
    rows = rows.withColumn("start0", F.expr(start0))
    # first max_duration boundary strictly after start0 + m
    threshold = f"(start0 + {m})"
    rows = rows.withColumn("c1", F.expr(f"{threshold} - pmod({threshold} - {offset}, {m}) + {m}"))
    crosses = f"{s} > c1" if closed_end else f"{s} >= c1"
    step = 2 * m
    k = (
        f"CASE WHEN NOT ({crosses}) THEN 0 ELSE "
        f"1 + floor(({s} - c1 - {1 if closed_end else 0}) / {step}) END"
    )
    rows = rows.withColumn("k", F.expr(f"CAST({k} AS BIGINT)"))
    rows = rows.withColumn(
        "window_start", F.expr(f"CASE WHEN k = 0 THEN start0 ELSE c1 + (k - 1) * {step} END")
    )
    rows = rows.withColumn("piece_cut", F.expr(f"c1 + k * {step}"))
    rows = rows.withColumn("k_last", F.expr(f"max(k) OVER ({part})"))
    rows = rows.withColumn(
        "piece_last", F.expr(f"max({s}) OVER (PARTITION BY {', '.join([*keys, 'gs', 'k'])})")
    )
    rows = rows.withColumn(
        "window_end",
        F.expr(
            f"CASE WHEN k = k_last AND piece_cut >= gs_last + {gap} THEN gs_last + {gap} "
            "ELSE piece_cut END"
        ),
    )
    rows = rows.withColumn(
        "cut", F.expr(f"window_end = piece_cut AND piece_cut < piece_last + {gap}")
    )
    return rows


def _session_marks(
    closed: DataFrame, marks: DataFrame, keys: list[str], *, keep_closed: bool
) -> DataFrame:
    """The marks after the batch: the last closed piece per group decides the carry
    (a session cut at a boundary continues in the next piece); with ``keep_closed``,
    its bounds stay too (``closed_start``, ``closed_until``)."""
    last_closed = (
        closed.groupBy(*keys)
        .agg(F.max(F.struct("window_end", "cut", "piece_last", "window_start")).alias("lc"))
        .select(
            *keys,
            F.lit(True).alias("closed_any"),
            F.expr("CASE WHEN lc.cut THEN lc.window_end END").alias("new_cut"),
            F.expr("CASE WHEN lc.cut THEN lc.piece_last END").alias("new_last"),
            F.expr("lc.window_start").alias("new_start"),
            F.expr("lc.window_end").alias("new_until"),
        )
    )
    kept = "closed_any" if keep_closed else "false"
    new_marks = (
        marks.join(last_closed, on=keys, how="full_outer")
        .select(
            *keys,
            F.expr("CASE WHEN closed_any THEN new_cut ELSE carry_cut END").alias("carry_cut"),
            F.expr("CASE WHEN closed_any THEN new_last ELSE carry_last END").alias("carry_last"),
            F.lit(None).cast("bigint").alias("emitted_until"),
            F.expr(f"CASE WHEN {kept} THEN new_start ELSE closed_start END").alias("closed_start"),
            F.expr(f"CASE WHEN {kept} THEN new_until ELSE closed_until END").alias("closed_until"),
        )
        .filter("carry_cut IS NOT NULL OR closed_until IS NOT NULL")
    )
    return new_marks


def sliding_windows(
    rows: DataFrame,
    marks: DataFrame,
    window: Window,
    groups: list[str],
    due_offset: int,
    govern: Govern | None = None,
    keep: Keep = _as_is,
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Sliding results whose point (window end) the governing watermark has closed.

    ``govern`` and ``keep`` as for :func:`session_windows` (here the rows and the closed
    points are kept). Returns ``(closed rows with window_start/window_end — a row once
    per result it is in —, rows to keep, new marks)``.
    """
    size = window.size
    keys, s, governing = [SCOPE, *groups], SYSTEM_TIME, SCOPE_WATERMARK_END
    rows = keep(rows.join(marks.select(*keys, "emitted_until"), on=keys, how="left"))
    carried = [*keys, governing, *([LAST_DELIVERY] if govern is not None else [])]
    # under accept a row made only the points its admission's watermark left open,
    # and counts only in those (semantics §6.9; the reference's SlidingGroup)
    admitted = ADMIT_WATERMARK in rows.columns
    made = f" AND p + {due_offset} > {ADMIT_WATERMARK}" if admitted else ""
    points = (
        rows.select(*carried, "emitted_until", *_made_by(admitted), F.col(s).alias("p"))
        .unionByName(
            rows.select(
                *carried, "emitted_until", *_made_by(admitted), F.expr(f"{s} + {size}").alias("p")
            )
        )
        .filter(f"p > coalesce(emitted_until, {NEG}){made}")
        .drop(*_made_by(admitted))
        .distinct()
    )
    if govern is not None:  # (the open points are the open windows)
        points = govern(points, "p")
    points = keep(points.filter(f"p + {due_offset} <= {governing}").select(*keys, "p"))
    hits = (
        rows.alias("r")
        .join(
            points.alias("q"),
            on=[*(F.col(f"r.{k}").eqNullSafe(F.col(f"q.{k}")) for k in keys)],
            how="inner",
        )
        .filter(f"r.{s} > q.p - {size} AND r.{s} <= q.p")
    )
    if admitted:
        hits = hits.filter(f"q.p + {due_offset} > r.{ADMIT_WATERMARK}")
    closed = hits.select(
        "r.*", F.expr(f"q.p - {size}").alias("window_start"), F.col("q.p").alias("window_end")
    )
    done = points.groupBy(*keys).agg(F.max("p").alias("done"))
    new_marks = marks.join(done, on=keys, how="full_outer").select(
        *keys,
        F.lit(None).cast("bigint").alias("carry_cut"),
        F.lit(None).cast("bigint").alias("carry_last"),
        F.expr("greatest(coalesce(emitted_until, done), coalesce(done, emitted_until))").alias(
            "emitted_until"
        ),
        F.lit(None).cast("bigint").alias("closed_start"),
        F.lit(None).cast("bigint").alias("closed_until"),
    )
    keep = (
        rows.join(done, on=keys, how="left")
        .filter(f"done IS NULL OR {s} > done - {size}")
        .drop("done", "emitted_until")
    )
    return closed, keep, new_marks


def _made_by(admitted: bool) -> list[str]:
    """The column saying which points a sliding row made (under accept), if any."""
    return [ADMIT_WATERMARK] if admitted else []


def row_windows(context: Context, batch: Batch, decided: DataFrame) -> DataFrame | None:
    """Session and sliding windows of a batch: its admitted rows with those kept in
    state, the windows the governing watermark closed written, the rest kept. Returns,
    for substreams with an idle timeout, the keys' watermarks it forced (``key``,
    ``forced_w``)."""
    w = context.window
    assert w is not None
    groups = context.groups
    rows = window_rows(context, decided)
    store = context.store
    state, marks = open_rows(context, batch, decided)
    every = rows.unionByName(state)
    scope_w, scope_last, table = scope_watermarks(context, batch)
    if table is not None:
        every = every.join(table, on=SCOPE, how="left")
    every = every.withColumn(SCOPE_WATERMARK_END, F.expr(scope_w))
    offset = window_due(0, context.lateness, context.closed_end)
    idle = None
    if w.idle_timeout is not None and not batch.flushing:
        every = every.withColumn(LAST_DELIVERY, F.expr(scope_last))
        idle = _IdleTimeout(context, batch, offset)
    if w.type == "session":
        closed, still_open, new_marks = session_windows(
            every, marks, w, groups, offset, context.closed_end, idle,
            accept=context.accepts_below_rows, keep=batch.keep,
        )  # fmt: skip
    else:
        closed, still_open, new_marks = sliding_windows(
            every, marks, w, groups, offset, idle, keep=batch.keep
        )
    keys = [SCOPE, *groups, "window_start", "window_end"]
    partial = [
        F.expr(expr).alias(name) for plan in context.aggregates for name, expr in plan.partial
    ]
    results = (
        closed.groupBy(*keys)
        .agg(*partial)
        .withColumnRenamed("window_start", "start")
        .withColumnRenamed("window_end", "end")
    )
    write_windows(context, batch, results, groups)
    write_state(store, batch, still_open.select(*rows.columns), "rows", "window_rows")
    write_state(store, batch, new_marks, "marks")
    return None if idle is None else idle.done()


class _IdleTimeout:
    """The idle timeout of session and sliding windows (semantics §6.10), as
    :mod:`.fold`'s for grid windows: per scope, the open windows (sessions, sliding
    points) that have ended and whose source delivered nothing for ``idle_timeout``
    since the later of their end and its last delivery close in turn, oldest first; the
    scope's watermark advances to the due of the last of them. Called once a batch, on
    the frame of open windows; the forced watermarks (``scope``, ``forced_w``, cached)
    are applied to partitions' clocks at once and returned for substreams' keys."""

    def __init__(self, context: Context, batch: Batch, due_offset: int) -> None:
        self.context, self.batch, self.due_offset = context, batch, due_offset
        self.forced: DataFrame | None = None

    def __call__(self, frame: DataFrame, end: str) -> DataFrame:
        """``frame`` (rows or points with their window's ``end``) with its governing
        watermark raised where the idle timeout forces it."""
        w, now = self.context.window, self.batch.now
        assert w is not None and self.forced is None
        governing, due = SCOPE_WATERMARK_END, f"({end} + {self.due_offset})"
        forced = (
            frame.filter(
                f"{due} > {governing} AND "
                f"greatest({end}, {LAST_DELIVERY}) + {w.idle_timeout} <= {now}"
            )
            .groupBy(SCOPE)
            .agg(F.expr(f"max({due})").alias("forced_w"))
            .cache()
        )
        self.forced = forced
        if not self.context.timeline.by_key:
            for row in forced.collect():
                force(self.context, self.batch, row[SCOPE], row["forced_w"])
        raised = f"greatest({governing}, coalesce(forced_w, {governing}))"
        frame = frame.join(F.broadcast(forced), on=SCOPE, how="left")
        return frame.withColumn(governing, F.expr(raised)).drop("forced_w")

    def done(self) -> DataFrame | None:
        """For substreams, the keys' forced watermarks (``key``, ``forced_w``)."""
        forced = self.forced
        if forced is not None and self.context.timeline.by_key:
            return forced.withColumnRenamed(SCOPE, SUBSTREAM_KEY)
        if forced is not None:
            forced.unpersist()
        return None
