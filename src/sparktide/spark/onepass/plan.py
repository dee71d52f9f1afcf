"""Which jobs may take the one-pass plan, and what one task needs to run it.

:func:`fusable` looks at the job only (the data decides the rest, per batch, in the
tasks); :func:`fused_plan` makes the picklable :class:`FusedPlan` every task of a
batch receives.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sparktide.core.instants import NEG_INF
from sparktide.core.namedcolumns import named_columns
from sparktide.job import Job
from sparktide.job.source import SPARK_STREAMS
from sparktide.spark.aggregates import plan_aggregates
from sparktide.spark.inputs.arrowvalues import KernelPlan, kernel_plan
from sparktide.spark.onepass.releaseplan import ReleasePlan, releasable, release_plan

__all__ = ["TYPED", "TYPED_TEXT", "FusedPlan", "fusable", "fused_plan", "typed_columns"]

#: The column saying a typed Parquet row's kernel inputs are exact (:func:`typed_columns`),
#: and the JSON text of the rows it leaves to the kernel's parse (null where it holds).
TYPED, TYPED_TEXT = "_kf", "_ktext"


def fusable(job: Job) -> bool:
    """Whether the job's batches may take the one-pass plan (before looking at data).

    JSONL files, Parquet rows, broker lines or a typed stream; one timeline per
    partition, or per key (substreams); no union, no imports; the ordering policy with
    ``adjust`` or ``drop`` (nothing it decides is dead-lettered); no CTIs, intervals,
    edges or computed time or key; no ``[filter]`` or join. Then either tumbling or
    hopping windows whose aggregates are ``count``, ``sum`` or ``avg`` of a column,
    without ``over (distinct ...)`` (the kernel folds numbers, not sets of
    combinations), grouped by columns (none computed), with no ``[select]`` or
    ``having``; or no window and analytic columns the tasks release themselves
    (:func:`~sparktide.spark.onepass.releaseplan.releasable`: JSONL input). The engine
    also requires that the policy need no other partition's clock
    (``SparkEngine._fused``), except for substreams, whose input arrival clock the
    tasks compute (or guess, and the engine checks)."""
    source = job.source
    input_fits = (
        source.format in ("jsonl", "parquet", *SPARK_STREAMS)
        and not source.intervals
        and not source.computes_fields
        and not job.edges
        and not job.inputs
        and not job.imports
        and job.join is None
        and not job.references
        and job.filter is None
        and job.punctuation is None
        and job.ordering.out_of_order_action in ("adjust", "drop")
    )
    if not input_fits:
        return False
    if job.window is None:
        return source.format == "jsonl" and releasable(job)
    return _window_fits(job)


def _window_fits(job: Job) -> bool:
    """:func:`fusable`'s conditions on a windowed job's window."""
    window = job.window
    assert window is not None
    return (
        not job.select
        and window.type in ("tumbling", "hopping")
        and window.having is None
        and not window.group_expressions
        and all(
            a.function in ("count", "sum", "avg") and a.expression is None and a.distinct is None
            for a in window.aggregates
        )
    )


def typed_columns(job: Job) -> list[tuple[str, str]]:
    """The columns (name, SQL type) by which a typed Parquet row reaches the kernel with
    no JSON text (``sparktide.spark.run``'s typed route makes them): :data:`TYPED`, the
    JSON text of the rows it does not hold for (:data:`TYPED_TEXT`), the group-by values'
    text (``_kg<i>``, as :func:`~sparktide.spark.onepass.values.group_text` gives it),
    and per aggregate with a column its present flag (``_kn<k>``: ``count``) or its
    exact integer and float (``_ki<k>``, ``_kd<k>``: ``sum`` / ``avg``); the row's times,
    partition and key come in the typed route's own ``_kt``, ``_ka``, ``_kpid``,
    ``_kkey``."""
    window = job.window
    assert window is not None
    columns = [(TYPED, "boolean"), (TYPED_TEXT, "string")]
    columns += [(f"_kg{i}", "string") for i in range(len(window.group_by))]
    for k, aggregate in enumerate(window.aggregates):
        if aggregate.column is None:
            continue
        if aggregate.function == "count":
            columns.append((f"_kn{k}", "bigint"))
        else:
            columns += [(f"_ki{k}", "bigint"), (f"_kd{k}", "double")]
    return columns


@dataclass(frozen=True)
class FusedPlan:
    """What one task needs to judge and fold its lines (picklable).

    ``clocks`` holds each known partition's ``(pid, arrival clock, watermark, newest
    timestamp)`` at the start of the batch; a partition not in it starts at minus
    infinity. ``early_arrival``, ``late_arrival`` and ``out_of_order`` are the ordering
    policy's tolerances (``None``: that check is off)."""

    parse: KernelPlan
    event_mode: bool
    early_arrival: int | None
    late_arrival: int | None
    out_of_order: int | None
    late_drop: bool
    out_of_order_drop: bool
    shift: int
    size: int
    period: int
    offset: int
    closed_end: bool
    lateness: int
    partitioned: bool
    group_by: tuple[str, ...]
    aggregates: tuple[tuple[str, str | None, tuple[str, ...]], ...]  # function, column, names
    clocks: tuple[tuple[str, int, int, int], ...]
    stream_partition: str | None = None  # the lines' column holding the partition
    threads: int = 1  # files vouched for at once (a task holding a whole batch)
    #: Substreams: the input's arrival clock before the batch, each known partition's
    #: ``(pid, arrival clock, clock if it delivers nothing)`` (its idle estimate), and
    #: the parquet files of the keys' state.
    substreams: bool = False
    arrival_clock: int = NEG_INF
    idle: tuple[tuple[str, int, int], ...] = ()
    keys: tuple[str, ...] = ()
    #: The partitions assumed to deliver when tasks share the batch (the engine checks
    #: the guess); ``None``: those the task finds (it holds the whole batch).
    assumed: tuple[str, ...] | None = None
    #: The directory the tasks write their partials, keys and unvouched lines to.
    spill: str | None = None
    #: The largest Parquet file the task reads itself
    #: (:func:`~sparktide.spark.onepass.parquetfiles.read_parquet`).
    file_bytes: int = 0
    #: Per named column (``missing_column``), where a vouched row's value is: ``("all",
    #: 0)`` a time, partition or key column (every vouched row holds one), ``("g", i)``
    #: group-by ``i``, ``("a", k)`` the input of aggregate ``k``, ``("f", i)`` the
    #: released events' field ``i`` (:attr:`ReleasePlan.fields`).
    present: tuple[tuple[str, int], ...] = ()
    #: A windowless job's release (``None``: window partials are folded).
    release: ReleasePlan | None = None

    @property
    def per_timeline(self) -> bool:
        """Whether windows close on each timeline's own watermark (partitioned or
        substreams), rather than on the merged one."""
        return self.partitioned or self.substreams

    @property
    def group_names(self) -> list[str]:
        """The partials' group-by columns (``g<i>``)."""
        return [f"g{i}" for i in range(len(self.group_by))]


def fused_plan(
    job: Job, clocks: dict[str, dict[str, int]], stream_partition: str | None = None
) -> FusedPlan:
    """The plan of one batch of ``job`` (:func:`fusable`), given the partitions' clocks
    (and the column of the input lines holding the partition, if the stream has it:
    then records need not name it, as the SQL route reads it)."""
    window, ordering = job.window, job.ordering
    parse = dataclasses.replace(kernel_plan(job), carried=())  # (no ``mj``: unread)
    if stream_partition is not None:
        parse = dataclasses.replace(parse, partition=None)
    shape: dict[str, object] = {"size": 0, "period": 0, "offset": 0, "closed_end": False}
    shape.update(lateness=0, group_by=(), aggregates=())
    if window is not None:
        plans = plan_aggregates(window.aggregates)
        shape.update(size=window.size, period=window.period, offset=window.offset)
        shape.update(closed_end=window.boundary == "end", lateness=window.allowed_lateness)
        shape["group_by"] = tuple(window.group_by)
        shape["aggregates"] = tuple(
            (a.function, a.column, tuple(name for name, _ in plan.partial))
            for a, plan in zip(window.aggregates, plans, strict=True)
        )
    release = release_plan(job) if window is None else None
    return FusedPlan(
        parse=parse,
        event_mode=job.event_time_mode,
        early_arrival=ordering.early_arrival,
        late_arrival=ordering.late_arrival,
        out_of_order=ordering.out_of_order,
        late_drop=ordering.action == "drop",
        out_of_order_drop=ordering.out_of_order_action == "drop",
        shift=job.source.shift,
        partitioned=ordering.partitioned,
        substreams=job.source.over is not None,
        clocks=tuple((pid, p["arrival"], p["watermark"], p["newest"]) for pid, p in clocks.items()),
        stream_partition=stream_partition,
        present=_present_sources(job, release),
        release=release,
        **shape,  # type: ignore[arg-type]
    )


def _present_sources(job: Job, release: ReleasePlan | None) -> tuple[tuple[str, int], ...]:
    """:attr:`FusedPlan.present` of ``job`` (``release``: its plan without a window)."""
    window = job.window
    out = []
    for named in named_columns(job):
        if any(role.startswith("source.") for role in named.roles):
            out.append(("all", 0))
        elif release is not None:
            out.append(("f", release.fields.index(named.column)))
        elif named.column in window.group_by:  # type: ignore[union-attr]
            out.append(("g", window.group_by.index(named.column)))  # type: ignore[union-attr]
        else:
            columns = [a.column for a in window.aggregates]  # type: ignore[union-attr]
            out.append(("a", columns.index(named.column)))
    return tuple(out)
