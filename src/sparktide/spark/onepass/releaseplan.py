"""Which windowless jobs the one-pass plan releases itself, and what a task needs for it.

A job with analytic columns (``LAG``, ``LAST``, ``ISFIRST``; semantics §11.19) and no
window writes one record per released event. When its columns and its ``[select]``
read plain fields (no expression to compile), a task can judge its timelines, release
their events, look back per partition key and write the records itself, in numpy and
Arrow (:mod:`sparktide.spark.onepass.release`), as it folds window partials for a
windowed job. :func:`releasable` says which jobs qualify (the input's side is
:func:`~sparktide.spark.onepass.plan.fusable`'s); :func:`release_plan` makes the
picklable :class:`ReleasePlan`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparktide.core.namedcolumns import named_columns
from sparktide.expr import Ref
from sparktide.job import Analytic, Job

__all__ = ["ColumnPlan", "ReleasePlan", "releasable", "release_plan"]

#: The analytic functions a task computes (no aggregate: their sums need the SQL rules).
_FUNCTIONS = ("lag", "last", "isfirst")


@dataclass(frozen=True)
class ColumnPlan:
    """One analytic column as a task computes it: its function, the positions (in
    :attr:`ReleasePlan.fields`) of its partition key's fields and of its value's (``-1``:
    none, ``ISFIRST``), how many matching events back it looks (``depth``) and its
    ``period`` (``ISFIRST``) or ``limit_duration`` (``LAG``, ``LAST``)."""

    function: str
    keys: tuple[int, ...]
    value: int
    depth: int
    horizon: int


@dataclass(frozen=True)
class ReleasePlan:
    """What a task needs to release its events and write their records (picklable).

    ``fields`` are the record fields whose JSON text the task reads; ``select`` each
    output column as ``(name, kind, position)``: kind ``"f"`` a field of ``fields``,
    ``"a"`` an analytic column; ``timestamp`` the record's key for the system timestamp;
    ``merged``: one scope for the whole job (``""``), else one per partition; ``state``
    the parquet files of the kept events before the batch (table ``analytic``)."""

    fields: tuple[str, ...]
    columns: tuple[ColumnPlan, ...]
    select: tuple[tuple[str, str, int], ...]
    timestamp: str
    merged: bool
    state: tuple[str, ...] = ()

    @property
    def key_fields(self) -> frozenset[int]:
        """The positions of the fields a partition key reads: their texts are the
        general plan's key texts only for strings, integers, booleans and nulls (a
        float's key text depends on how it was computed: such a batch is the general
        plan's)."""
        return frozenset(i for column in self.columns for i in column.keys)


def _plain_field(expr: object, analytics: set[str]) -> str | None:
    """The field ``expr`` reads when it is a bare top-level field, not an analytic
    column's name (``None`` otherwise)."""
    if not isinstance(expr, Ref) or expr.input is not None or "." in expr.name:
        return None
    return None if expr.name in analytics else expr.name


def _column_fits(analytic: Analytic, names: set[str]) -> bool:
    """Whether a task computes ``analytic``: a function of :data:`_FUNCTIONS` with no
    ``when`` or ``default``, over bare fields."""
    if analytic.function not in _FUNCTIONS:
        return False
    if analytic.when is not None or analytic.default is not None:
        return False
    if not all(_plain_field(e, names) for e in analytic.partition_expressions):
        return False
    value = analytic.value_expression
    return value is None or _plain_field(value, names) is not None


def releasable(job: Job) -> bool:
    """Whether a task can release the job's events (its input qualifying, see
    :func:`~sparktide.spark.onepass.plan.fusable`): analytic columns ``LAG``, ``LAST``
    or ``ISFIRST`` over bare fields, without ``when`` or ``default``; a ``[select]`` of
    bare fields and analytic columns (no ``*``); no window, pattern, ``[apply]``,
    ``[filter]`` or ``[source] where``; one timeline per partition, or one partition
    (nothing waits for another partition's watermark); no out-of-order tolerance
    (Stream Analytics' default: each admitted event is at or below its timeline's
    watermark as soon as it is judged, so none is held); no named column outside those."""
    names = {a.name for a in job.analytics}
    if not job.analytics or not job.select or job.select_star is not None:
        return False
    if job.window is not None or job.match is not None or job.apply is not None:
        return False
    if job.filter is not None or job.input_conditions or job.source.over is not None:
        return False
    if not (job.ordering.partitioned or job.source.partition is None):
        return False
    if job.ordering.out_of_order != 0:  # (else most batches hold events: the general plan's)
        return False
    if not all(_column_fits(a, names) for a in job.analytics):
        return False
    for projection in job.select:
        expr = projection.parsed
        if projection.by_input or not isinstance(expr, Ref):
            return False
        if expr.name not in names and _plain_field(expr, names) is None:
            return False
    fields = set(release_plan(job).fields)
    return all(named.read_by_source or named.column in fields for named in named_columns(job))


def release_plan(job: Job) -> ReleasePlan:
    """The :class:`ReleasePlan` of a :func:`releasable` job (without its state files)."""
    names = {a.name for a in job.analytics}
    fields: dict[str, int] = {}

    def at(expr: object) -> int:
        name = _plain_field(expr, names)
        assert name is not None
        return fields.setdefault(name, len(fields))

    columns = []
    for analytic in job.analytics:
        keys = tuple(at(e) for e in analytic.partition_expressions)
        value = analytic.value_expression
        columns.append(
            ColumnPlan(
                analytic.function,
                keys,
                -1 if value is None else at(value),
                analytic.depth or 1,
                int(analytic.horizon),
            )
        )
    position = {a.name: k for k, a in enumerate(job.analytics)}
    select = []
    for projection in job.select:
        expr = projection.parsed
        assert isinstance(expr, Ref)
        if expr.name in position:
            select.append((projection.name, "a", position[expr.name]))
        else:
            select.append((projection.name, "f", at(expr)))
    return ReleasePlan(
        fields=tuple(fields),
        columns=tuple(columns),
        select=tuple(select),
        timestamp=job.event_fields["timestamp"],
        merged=not job.ordering.partitioned,
    )
