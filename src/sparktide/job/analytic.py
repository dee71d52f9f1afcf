"""``[analytic.<name>]``: Stream Analytics' analytic functions ``LAG``, ``LAST`` and
``ISFIRST`` and the analytic forms of the aggregates ``SUM``, ``COUNT``, ``AVG``, ``MIN``
and ``MAX`` (semantics §11.19), as named columns the job's ``[filter]`` and ``[select]``
read.

Each table names one column::

    [analytic.previous_make]
    function = "lag"              # lag, last, isfirst, sum, count, avg, min or max
    value = "Make"                # the expression looked up or aggregated (count: optional)
    offset = 1                    # lag: how many matching events back (1 or more)
    default = "'none'"            # lag, last: the value when there is none (else null)
    partition_by = ["Make"]       # expressions: look only at events with the same values
    limit_duration = "1m"         # all but isfirst: how far back from the current event
    when = "Weight < 20000"       # only events where this is true are looked at
    period = "10m"                # isfirst: the tumbling periods it ranks events in

The columns are computed at ordered release, event by event in release order, before
``[filter]``: a column's name hides an input field of the same name in ``[filter]`` and
``[select]``, and in the expressions of the other columns (``value``, ``default``,
``partition_by``, ``when``), which then read its value for the same event (the "duration
of a condition" pattern: ``when = "previous_weight < 20000"`` over ``[analytic.
previous_weight]``). A column's own name in its expressions is the field. The columns
are computed in levels (:func:`analytic_levels`): a column reading no other column is
of level 0, one reading others one level above the highest of theirs; a cycle is a
configuration error.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparktide.errors import ConfigError
from sparktide.expr import Expr, parse_expression, references
from sparktide.job.aggregates import Aggregate
from sparktide.job.values import check_column, normalise_duration, set_field

if TYPE_CHECKING:
    from sparktide.job.model import Job

__all__ = [
    "ANALYTIC_AGGREGATES",
    "ANALYTIC_FUNCTIONS",
    "Analytic",
    "analytic_fields",
    "analytic_levels",
    "analytic_reads",
    "check_analytics",
]

#: The aggregates with an analytic form (``SUM(x) OVER (... LIMIT DURATION(...))``).
ANALYTIC_AGGREGATES = ("sum", "count", "avg", "min", "max")
#: The analytic functions, by their job-file name.
ANALYTIC_FUNCTIONS = ("lag", "last", "isfirst", *ANALYTIC_AGGREGATES)


@dataclass(frozen=True)
class Analytic:
    """One analytic column (``[analytic.<name>]``, semantics §11.19).

    Parameters
    ----------
    name
        The column's name, read by ``[filter]`` and ``[select]``.
    function
        ``lag`` (the value of the ``offset``-th previous matching event), ``last`` (of the
        latest matching event, the current one included), ``isfirst`` (1 when the event
        is the first matching one of its ``period``, else 0), or an aggregate (``sum``,
        ``count``, ``avg``, ``min``, ``max``) of ``value`` over the matching events within
        ``limit_duration``, the current one included when it matches.
    value
        ``lag``, ``last``, the aggregates: the expression evaluated on the event looked up
        (or aggregated); ``count`` without it counts the events (``COUNT(*)``).
    offset
        ``lag``: how many matching events back, at least 1.
    default
        ``lag``, ``last``: the expression (over the current event) given when no matching
        event is found; null when omitted.
    partition_by
        Expressions: only events with equal values (SQL equality of their kinds) are
        looked at.
    limit_duration
        All but ``isfirst`` (required): a matching event counts only while its timestamp
        is at least the current event's minus this duration.
    when
        A condition: only events where it is true are looked at.
    period
        ``isfirst`` (required): the size of the periods, aligned like tumbling windows.
    """

    name: str
    function: str
    value: str | None = None
    offset: int = 1
    default: str | None = None
    partition_by: tuple[str, ...] = ()
    limit_duration: int | str | None = None
    when: str | None = None
    period: int | str | None = None

    def __post_init__(self) -> None:
        key = f"analytic.{self.name}"
        check_column(self.name, key, optional=False)
        if self.function not in ANALYTIC_FUNCTIONS:
            raise ConfigError(
                f"{key}.function",
                f"must be one of {', '.join(ANALYTIC_FUNCTIONS)}; got {self.function!r}",
            )
        if isinstance(self.partition_by, str) or not isinstance(self.partition_by, list | tuple):
            raise ConfigError(
                f"{key}.partition_by", f"must be a list of expressions, got {self.partition_by!r}"
            )
        set_field(self, "partition_by", tuple(self.partition_by))
        for i, text in enumerate(self.partition_by):
            _parse(text, f"{key}.partition_by[{i}]")
        if self.when is not None:
            _parse(self.when, f"{key}.when")
        if self.function == "isfirst":
            self._check_isfirst(key)
        elif self.function in ANALYTIC_AGGREGATES:
            self._check_aggregate(key)
        else:
            self._check_lookup(key)

    def _check_isfirst(self, key: str) -> None:
        for name in ("value", "default", "limit_duration"):
            if getattr(self, name) is not None:
                raise ConfigError(f"{key}.{name}", "isfirst takes period, partition_by and when")
        if self.offset != 1:
            raise ConfigError(f"{key}.offset", "isfirst takes period, partition_by and when")
        normalise_duration(self, "period", f"{key}.period", positive=True)

    def _check_lookup(self, key: str) -> None:
        if self.period is not None:
            raise ConfigError(f"{key}.period", f"{self.function} takes limit_duration, not period")
        if self.value is None:
            raise ConfigError(f"{key}.value", "is required")
        _parse(self.value, f"{key}.value")
        if self.default is not None:
            _parse(self.default, f"{key}.default")
        normalise_duration(self, "limit_duration", f"{key}.limit_duration", positive=True)
        if isinstance(self.offset, bool) or not isinstance(self.offset, int) or self.offset < 1:
            raise ConfigError(
                f"{key}.offset", f"must be an integer of 1 or more, got {self.offset!r}"
            )
        if self.function == "last" and self.offset != 1:
            raise ConfigError(f"{key}.offset", "last takes no offset (it is lag with offset 0)")

    def _check_aggregate(self, key: str) -> None:
        for name in ("period", "default"):
            if getattr(self, name) is not None:
                raise ConfigError(
                    f"{key}.{name}",
                    f"{self.function} takes value, limit_duration, partition_by and when",
                )
        if self.offset != 1:
            raise ConfigError(f"{key}.offset", f"{self.function} takes no offset")
        if self.value is None and self.function != "count":
            raise ConfigError(f"{key}.value", f"is required ({self.function}(*) is count only)")
        if self.value is not None:
            _parse(self.value, f"{key}.value")
        normalise_duration(self, "limit_duration", f"{key}.limit_duration", positive=True)

    @property
    def is_aggregate(self) -> bool:
        """Whether the column is an aggregate's analytic form (``sum`` ... ``max``)."""
        return self.function in ANALYTIC_AGGREGATES

    @property
    def aggregate(self) -> Aggregate:
        """The window aggregate whose value rules the column follows (semantics §6.12):
        ``function`` of ``value`` as an expression, or ``count(*)`` without a value.
        Only for :attr:`is_aggregate` columns."""
        if not self.is_aggregate:
            raise ValueError(f"analytic.{self.name}: {self.function} is no aggregate")
        return Aggregate(self.name, self.function, expression=self.value)

    @property
    def value_expression(self) -> Expr | None:
        """The parsed ``value``."""
        return None if self.value is None else _parse(self.value, f"analytic.{self.name}.value")

    @property
    def default_expression(self) -> Expr | None:
        """The parsed ``default``."""
        if self.default is None:
            return None
        return _parse(self.default, f"analytic.{self.name}.default")

    @property
    def when_expression(self) -> Expr | None:
        """The parsed ``when``."""
        return None if self.when is None else _parse(self.when, f"analytic.{self.name}.when")

    @property
    def partition_expressions(self) -> tuple[Expr, ...]:
        """The parsed ``partition_by``."""
        return tuple(
            _parse(t, f"analytic.{self.name}.partition_by[{i}]")
            for i, t in enumerate(self.partition_by)
        )

    @property
    def depth(self) -> int | None:
        """How many matching events the column keeps per partition: ``offset`` for
        ``lag``, one for ``last`` and ``isfirst``; ``None`` (no limit but
        ``limit_duration``'s) for an aggregate, which reads every matching event within
        it."""
        if self.is_aggregate:
            return None
        return self.offset if self.function == "lag" else 1

    @property
    def horizon(self) -> int:
        """How far behind the watermark a kept event can still matter: ``limit_duration``,
        or ``period`` for ``isfirst`` (an event in a period the watermark has left)."""
        return self.period if self.function == "isfirst" else self.limit_duration  # type: ignore[return-value]

    def expressions(self) -> list[Expr]:
        """Every expression of the column (the fields they read are read at admission)."""
        return [expr for _, expr in self.keyed_expressions()]

    @property
    def reads_time(self) -> bool:
        """Whether an expression of the column reads ``System.Timestamp()``, the event's
        system timestamp after its ordering policy (semantics §11.19)."""
        from sparktide.expr import SYSTEM_TIMESTAMP, ref_nodes

        return any(SYSTEM_TIMESTAMP in ref_nodes(e) for e in self.expressions())

    def keyed_expressions(self) -> list[tuple[str, Expr]]:
        """Every expression of the column with its key (``analytic.<name>.when``)."""
        key = f"analytic.{self.name}"
        out = [(f"{key}.partition_by[{i}]", e) for i, e in enumerate(self.partition_expressions)]
        for name in ("value", "default", "when"):
            expr = getattr(self, f"{name}_expression")
            if expr is not None:
                out.append((f"{key}.{name}", expr))
        return out


def _parse(text: Any, key: str) -> Expr:
    if not isinstance(text, str):
        raise ConfigError(key, f'expected an expression as text, such as "speed", got {text!r}')
    return parse_expression(text, key)


def check_analytics(job: Job) -> None:
    """Analytic columns: distinct names, in a job that releases events in timestamp order
    (no window, no join, out-of-order events not accepted behind the watermark), reading
    plain fields and other columns without a cycle."""
    analytics = job.analytics
    if isinstance(analytics, (str, dict)) or not isinstance(analytics, (list, tuple)):
        raise ConfigError("analytic", f"must be a list of Analytic objects, got {analytics!r}")
    set_field(job, "analytics", tuple(analytics))
    if not analytics:
        return
    seen: set[str] = set()
    for analytic in analytics:
        if not isinstance(analytic, Analytic):
            raise ConfigError("analytic", f"expected Analytic objects, got {analytic!r}")
        if analytic.name in seen:
            raise ConfigError(f"analytic.{analytic.name}", "is named twice")
        seen.add(analytic.name)
        for expr in analytic.expressions():
            _plain_fields(expr, f"analytic.{analytic.name}")
    analytic_levels(analytics)  # (a cycle is refused here)
    where = (
        "a window" if job.window is not None else "a join" if job.join or job.references else None
    )
    if where is not None:
        raise ConfigError(
            "analytic",
            f"analytic columns are computed at ordered release, which a job with {where} "
            "does not have (not supported yet)",
        )
    if job.ordering.out_of_order_action == "accept":
        raise ConfigError(
            "analytic",
            "analytic columns read events in timestamp order, which "
            "ordering.on_out_of_order = 'accept' does not keep",
        )
    if job.edges or job.source.intervals:
        raise ConfigError("analytic", "analytic columns read point events only")


def analytic_reads(analytic: Analytic, names: Collection[str]) -> dict[str, str]:
    """The other analytic columns (of ``names``) whose value ``analytic``'s expressions
    read, each with the key of the first expression reading it; its own name is the
    field."""
    out: dict[str, str] = {}
    for key, expr in analytic.keyed_expressions():
        for name in references(expr):
            if name in names and name != analytic.name:
                out.setdefault(name, key)
    return out


def analytic_fields(analytic: Analytic, names: Collection[str]) -> list[str]:
    """The input fields ``analytic``'s expressions read, in order, repeats included:
    every name but another analytic column's (of ``names``); its own name is the field
    (the complement of :func:`analytic_reads`)."""
    return [
        name
        for expr in analytic.expressions()
        for name in references(expr)
        if name == analytic.name or name not in names
    ]


def analytic_levels(analytics: Sequence[Analytic]) -> tuple[tuple[int, ...], ...]:
    """The positions of the columns of each level, in order: level 0 reads no other
    column, a column reading others is one level above the highest of theirs (so it is
    computed after them, seeing their values for the same event). A cycle is a
    :class:`~sparktide.errors.ConfigError` naming the expression that closes it."""
    position = {a.name: k for k, a in enumerate(analytics)}
    reads = [analytic_reads(a, position) for a in analytics]
    level: dict[int, int] = {}

    def visit(k: int, path: tuple[int, ...]) -> int:
        if k in level:
            return level[k]
        deepest = -1
        for name, key in reads[k].items():
            j = position[name]
            if j in path:
                cycle = " -> ".join(analytics[i].name for i in (*path[path.index(j) :], k, j))
                raise ConfigError(
                    key,
                    f"reads the analytic column {name!r}, which needs this one's value "
                    f"first (a cycle: {cycle})",
                )
            deepest = max(deepest, visit(j, (*path, k)))
        level[k] = deepest + 1
        return level[k]

    for k in range(len(analytics)):
        visit(k, ())
    depth = max(level.values(), default=-1) + 1
    return tuple(tuple(k for k in range(len(analytics)) if level[k] == n) for n in range(depth))


def _plain_fields(expr: Expr, key: str) -> None:
    from sparktide.expr import EVENT_INPUT, SYSTEM_TIMESTAMP, ref_nodes

    for ref in ref_nodes(expr):
        if ref in (EVENT_INPUT, SYSTEM_TIMESTAMP):  # (the event's input and time, §11.19)
            continue
        if ref.input is not None:
            raise ConfigError(key, f"{ref.key!r}: an analytic column reads the event's own fields")
