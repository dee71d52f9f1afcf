"""``[window]`` and its aggregates: windows over system timestamps (semantics §6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sparktide.errors import ConfigError
from sparktide.expr import Expr, parse_expression
from sparktide.job.aggregates import AGGREGATE_FUNCTIONS, ALL_AGGREGATE_FUNCTIONS, Aggregate
from sparktide.job.expressions import check_references, no_input_fields, parse_text
from sparktide.job.values import (
    OWN_WINDOW_FIELDS,
    RESERVED_WINDOW_COLUMNS,
    WINDOW_BOUNDS,
    check_choice,
    check_column,
    claim_name,
    normalise_duration,
    own_names,
    set_field,
)
from sparktide.time import format_duration

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "ALL_AGGREGATE_FUNCTIONS",
    "BOUNDARIES",
    "GRID_WINDOWS",
    "LATE_ACTIONS",
    "MAX_WINDOWS_PER_EVENT",
    "WINDOW_TYPES",
    "Aggregate",
    "Window",
    "group_by_names",
]

WINDOW_TYPES = ("tumbling", "hopping", "sliding", "session", "snapshot")
#: Windows on a fixed grid: the only ones interval and edge events go into.
GRID_WINDOWS = ("tumbling", "hopping")
BOUNDARIES = ("start", "end")
LATE_ACTIONS = ("dead_letter", "drop")
#: The most windows one event may fall into (hopping: size / hop).
MAX_WINDOWS_PER_EVENT = 10_000


def group_by_names(entries: list[str | dict[str, str]] | tuple[str, ...]) -> list[str]:
    """The column names of ``window.group_by`` entries: a name, or a computed column's
    table of one ``name = "expression"`` (semantics §6.13)."""
    return [e if isinstance(e, str) else next(iter(e)) for e in entries]


@dataclass(frozen=True)
class Window:
    """A window over system timestamps (semantics §6).

    Parameters
    ----------
    type
        ``tumbling``, ``hopping``, ``sliding``, ``session`` or ``snapshot``.
    size
        Window length (tumbling, hopping, sliding).
    hop
        Distance between window starts (hopping).
    gap
        Session gap (session).
    max_duration
        Optional session cap, aligned to the epoch (session).
    offset
        Shift of the window grid from the epoch.
    boundary
        ``start``: ``[start, end)``; ``end``: ``(start, end]``. Default ``start``, except
        sliding windows, which always follow Stream Analytics' ``(start, end]``.
    allowed_lateness
        How long after the watermark passes its end a window stays open.
    idle_timeout
        Close the oldest window when the source is idle this long (``None``: never).
    late
        What happens to an event whose windows are all closed: ``dead_letter`` or ``drop``.
    group_by
        Grouping columns: each a column name, or a one-entry table ``{name =
        "expression"}``, a computed grouping column named ``name`` whose value is the
        expression's over the record (Stream Analytics' ``GROUP BY`` of an expression,
        semantics §6.13). Normalised to the names; the expressions are
        :attr:`group_expressions`.
    aggregates
        The aggregates, in output order.
    having
        A condition over the window's result (group-by columns, aggregate names,
        ``window_start``, ``window_end``): a window for which it is not true is not
        written (``docs/jobfile.md``).
    name
        With a ``[join]`` whose ``right`` it is: the window's records are not written
        but joined, as the events of an input of that name (semantics §7.12).
    """

    type: str
    size: int | str | None = None
    hop: int | str | None = None
    gap: int | str | None = None
    max_duration: int | str | None = None
    offset: int | str = 0
    boundary: str | None = None
    allowed_lateness: int | str = 0
    idle_timeout: int | str | None = None
    late: str = "dead_letter"
    group_by: tuple[str, ...] = ()
    aggregates: tuple[Aggregate, ...] = ()
    having: str | None = None
    name: str | None = None
    #: ``(name, expression text)`` of the computed grouping columns, in ``group_by`` order
    #: (set from ``group_by``'s tables).
    group_expressions: tuple[tuple[str, str], ...] = ()

    _NEEDS: ClassVar[dict[str, tuple[str, ...]]] = {
        "tumbling": ("size",),
        "hopping": ("size", "hop"),
        "sliding": ("size",),
        "session": ("gap",),
        "snapshot": (),
    }
    _ALLOWS: ClassVar[dict[str, tuple[str, ...]]] = {
        "tumbling": ("size",),
        "hopping": ("size", "hop"),
        "sliding": ("size",),
        "session": ("gap", "max_duration"),
        "snapshot": (),
    }

    def __post_init__(self) -> None:
        self._check_lengths()
        self._check_columns()
        if self.having is not None:
            having = parse_text(self.having, "window.having")
            no_input_fields(having, "window.having")
            check_references(having, self.result_columns, "window.having")

    def _check_lengths(self) -> None:
        """The type, and the durations it needs or allows; the boundary."""
        check_choice(self.type, WINDOW_TYPES, "window.type")
        for name in ("size", "hop", "gap", "max_duration"):
            key = f"window.{name}"
            if getattr(self, name) is None:
                if name in self._NEEDS[self.type]:
                    raise ConfigError(key, f"is required for {self.type} windows")
                continue
            if name not in self._ALLOWS[self.type]:
                raise ConfigError(key, f"does not apply to {self.type} windows")
            normalise_duration(self, name, key, positive=True)
        if self.type == "hopping":
            size, hop = self.size, self.hop
            assert isinstance(size, int) and isinstance(hop, int)
            if -(-size // hop) > MAX_WINDOWS_PER_EVENT:
                raise ConfigError(
                    "window.hop",
                    f"{format_duration(hop)} puts each event in {-(-size // hop):,} windows of "
                    f"{format_duration(size)} (at most {MAX_WINDOWS_PER_EVENT:,}); use a larger "
                    "hop, or a sliding window",
                )
        normalise_duration(self, "offset", "window.offset")
        normalise_duration(self, "allowed_lateness", "window.allowed_lateness")
        normalise_duration(self, "idle_timeout", "window.idle_timeout", allow_none=True)
        if self.idle_timeout == 0:
            raise ConfigError("window.idle_timeout", "must be greater than zero (or omitted)")
        if self.boundary is None:
            set_field(self, "boundary", "end" if self.type == "sliding" else "start")
        check_choice(self.boundary, BOUNDARIES, "window.boundary")
        if self.type == "sliding" and self.boundary != "end":
            raise ConfigError(
                "window.boundary",
                "sliding windows follow Stream Analytics' (start, end] boundary; "
                'use boundary = "end" or leave it out',
            )

    def _check_columns(self) -> None:
        """What happens to late events; the group-by columns and the aggregates' names."""
        check_choice(self.late, LATE_ACTIONS, "window.late")
        if self.name is not None:
            check_column(self.name, "window.name", optional=False)
        self._split_group_by()
        set_field(self, "aggregates", tuple(self.aggregates))
        seen = set(self.group_by)
        for aggregate in self.aggregates:
            if not isinstance(aggregate, Aggregate):
                raise ConfigError(
                    "window.aggregates", f"expected Aggregate objects, got {aggregate!r}"
                )
            key = f"window.aggregates.{aggregate.name}"
            claim_name(
                aggregate.name,
                key,
                seen,
                RESERVED_WINDOW_COLUMNS,
                twice="clashes with a group_by column or another aggregate",
            )
        for column in self.group_by:
            if column in RESERVED_WINDOW_COLUMNS:
                raise ConfigError(
                    "window.group_by", f"{column!r} is a name sparktide writes itself"
                )

    def _split_group_by(self) -> None:
        """``group_by``'s names, and the expressions of its computed columns (a table of
        one ``name = "expression"`` each), checked: an expression reads the record's
        fields, not ``System.Timestamp()``."""
        if isinstance(self.group_by, str) or not isinstance(self.group_by, (list, tuple)):
            raise ConfigError(
                "window.group_by", f"must be a list of column names, got {self.group_by!r}"
            )
        names: list[str] = []
        computed = dict(self.group_expressions)
        for entry in self.group_by:
            if isinstance(entry, dict):
                if len(entry) != 1:
                    raise ConfigError(
                        "window.group_by",
                        f'a computed column is a table of one name = "expression", got {entry!r}',
                    )
                ((name, text),) = entry.items()
                check_column(name, "window.group_by", optional=False)
                key = f"window.group_by.{name}"
                no_input_fields(parse_text(text, key), key, event_input=True, input_fields=True)
                computed[name] = text
                names.append(name)
                continue
            check_column(entry, "window.group_by", optional=False)
            names.append(entry)
        if len(set(names)) != len(names):
            raise ConfigError("window.group_by", "names a column twice")
        set_field(self, "group_by", tuple(names))
        set_field(
            self, "group_expressions", tuple((n, computed[n]) for n in names if n in computed)
        )

    @property
    def group_keys(self) -> tuple[tuple[str, Expr | None], ...]:
        """``(name, expression)`` per grouping column: the expression of a computed
        one, ``None`` for a column of the record."""
        computed = dict(self.group_expressions)
        return tuple(
            (name, None if name not in computed else parse_expression(computed[name], name))
            for name in self.group_by
        )

    def keyed_expressions(self) -> list[tuple[str, Expr]]:
        """``(key, expression)`` of each expression the window evaluates over an input
        record: its computed grouping columns, then its aggregates of expressions."""
        out = [(f"window.group_by.{n}", e) for n, e in self.group_keys if e is not None]
        return out + [
            (f"window.aggregates.{a.name}", a.parsed) for a in self.aggregates if a.parsed
        ]

    @property
    def record_group_columns(self) -> tuple[str, ...]:
        """The grouping columns that are the record's own fields (not computed)."""
        computed = dict(self.group_expressions)
        return tuple(name for name in self.group_by if name not in computed)

    @property
    def result_columns(self) -> tuple[str, ...]:
        """The columns of a window's result that ``having`` and ``[select]`` read: the
        group-by columns, the aggregate names and the window's bounds (as
        :attr:`own_fields` names them)."""
        own = self.own_fields
        return (*self.user_columns, *(own[b] for b in WINDOW_BOUNDS))

    @property
    def user_columns(self) -> tuple[str, ...]:
        """The group-by columns and the aggregate names."""
        return (*self.group_by, *(a.name for a in self.aggregates))

    @property
    def own_fields(self) -> dict[str, str]:
        """The names of ``window_start``, ``window_end`` and ``emitted_at`` in the
        window's result: their own, unless a group-by column or an aggregate has it
        (then ``sparktide_window_start`` ..., :func:`sparktide.job.values.own_names`)."""
        return own_names(OWN_WINDOW_FIELDS, self.user_columns)

    @property
    def having_expression(self) -> Expr | None:
        """The parsed ``having`` condition, if any."""
        return None if self.having is None else parse_expression(self.having, "window.having")

    @property
    def period(self) -> int | None:
        """The distance between window starts of a grid window (size, or hop if hopping)."""
        if self.type == "hopping":
            return self.hop  # type: ignore[return-value]
        if self.type == "tumbling":
            return self.size  # type: ignore[return-value]
        return None
