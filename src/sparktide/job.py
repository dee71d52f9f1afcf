"""The job file: typed, frozen, validated configuration objects.

A job is four tables (SPEC §10): ``[source]``, ``[ordering]``, ``[window]`` (optional)
and ``[output]``. Each is a frozen dataclass that validates itself on construction, so the
Python API, the TOML file and the command line build the very same objects. Durations may
be given as strings (``"5s"``) or integer microseconds; they are stored as ``int``
microseconds (``None`` for a disabled check).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from sparktide.errors import ConfigError, TimeFormatError
from sparktide.expr import Expr, parse_expression, ref_nodes, references
from sparktide.time import MINUTE, SECOND, format_duration, parse_duration

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "Aggregate",
    "Filter",
    "Job",
    "Join",
    "Ordering",
    "Output",
    "Projection",
    "Punctuation",
    "Reference",
    "Source",
    "Window",
    "expression_fields",
    "input_of",
    "load_job",
    "reference_input",
    "union_partition",
]

SOURCE_FORMATS = ("jsonl", "csv", "parquet")
OUTPUT_FORMATS = ("jsonl", "parquet")
#: The kinds of join: ``left`` (every event, matched or not) only with reference data.
JOIN_TYPES = ("inner", "left")
ACTIONS = ("adjust", "drop")
OUT_OF_ORDER_ACTIONS = ("adjust", "drop", "dead_letter", "accept")
WINDOW_TYPES = ("tumbling", "hopping", "sliding", "session", "snapshot")
#: Windows on a fixed grid: the only ones interval and edge events go into.
_GRID = ("tumbling", "hopping")
BOUNDARIES = ("start", "end")
LATE_ACTIONS = ("dead_letter", "drop")
#: What moves the watermarks of a job with punctuation (``[punctuation] watermark``).
PUNCTUATION_WATERMARKS = ("cti", "both")
#: Aggregate functions a job may name, with whether they take ``*``.
AGGREGATE_FUNCTIONS = (
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "first",
    "last",
    "collect_list",
    "count_distinct",
)
#: Column names: identifiers (letters, digits, ``_`` and ``-``), never SQL text.
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
_AGGREGATE = re.compile(r"\s*([A-Za-z_]+)\s*\(\s*(\*|[A-Za-z_][A-Za-z0-9_\-]*)\s*\)\s*\Z")
#: The longest duration accepted: 100 years (longer ones would overflow instants in Spark).
MAX_DURATION = 36500 * 86_400_000_000
#: The most windows one event may fall into (hopping: size / hop).
MAX_WINDOWS_PER_EVENT = 10_000
#: Path characters that Spark (Hadoop) would not take literally, and control characters.
_PATH_CHARACTERS = re.compile(r"[\x00-\x1f\x7f:*?\[\]{}\\]")
#: Names sparktide itself writes into window records.
RESERVED_WINDOW_COLUMNS = ("window_start", "window_end", "emitted_at", "type")
#: Names sparktide itself writes into event records.
RESERVED_EVENT_COLUMNS = ("timestamp", "type")
#: Columns of a window's result that ``having`` and ``[select]`` may read besides the
#: group-by columns and the aggregates.
WINDOW_BOUNDS = ("window_start", "window_end")


def _set(obj: object, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


def _duration(
    obj: object, name: str, key: str, *, allow_none: bool = False, positive: bool = False
) -> None:
    """Normalise the duration field ``name`` of ``obj`` to int microseconds in place."""
    value = getattr(obj, name)
    if value is None:
        if not allow_none:
            raise ConfigError(key, "is required" if positive else "cannot be none")
        return
    if isinstance(value, bool):
        raise ConfigError(key, f"expected a duration such as '5s', got {value!r}")
    if isinstance(value, int):
        parsed: int | None = value
    elif isinstance(value, str):
        try:
            parsed = parse_duration(value, allow_none=allow_none)
        except TimeFormatError as exc:
            raise ConfigError(key, str(exc)) from None
    else:
        raise ConfigError(key, f"expected a duration such as '5s', got {value!r}")
    if parsed is not None and parsed < 0:
        raise ConfigError(key, f"must not be negative, got {value!r}")
    if parsed is not None and parsed > MAX_DURATION:
        raise ConfigError(key, f"must be at most 36500d (100 years), got {value!r}")
    if parsed is not None and positive and parsed == 0:
        raise ConfigError(key, f"must be greater than zero, got {value!r}")
    _set(obj, name, parsed)


def _signed_duration(obj: object, name: str, key: str) -> None:
    """Normalise the duration field ``name`` of ``obj``, which may be negative."""
    value = getattr(obj, name)
    if isinstance(value, str):
        try:
            value = parse_duration(value, allow_negative=True)
        except TimeFormatError as exc:
            raise ConfigError(key, str(exc)) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"expected a duration such as '-1h', got {value!r}")
    if abs(value) > MAX_DURATION:
        raise ConfigError(key, "must be within 36500d (100 years)")
    _set(obj, name, value)


def _choice(value: Any, allowed: tuple[str, ...], key: str) -> None:
    if value not in allowed:
        raise ConfigError(key, f"must be one of {', '.join(allowed)}; got {value!r}")


def _column(value: Any, key: str, *, optional: bool = True) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not _COLUMN.match(value):
        raise ConfigError(
            key, f"must be a column name (letters, digits, '_' or '-'), got {value!r}"
        )


def _path(value: Any, key: str, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"must be a path string, got {value!r}")
    bad = _PATH_CHARACTERS.search(value)
    if bad is not None:
        raise ConfigError(
            key,
            f"{value!r} holds {bad.group()!r}: paths cannot hold control characters, ':' or the "
            "characters Spark's file system layer reads as patterns (* ? [ ] { } \\)",
        )


@dataclass(frozen=True)
class Source:
    """Where events come from and which columns carry time, partition and key.

    Parameters
    ----------
    path
        A file or a directory of files.
    format
        ``jsonl``, ``csv`` or ``parquet``.
    timestamp_by
        Column with the event (application) time; ``None`` runs in arrival-time mode.
    arrival_time
        Column with the broker enqueue time; else the file's modification time.
    processing_time
        ``simulate`` only: column with the processing time; else the arrival time.
    partition
        Column with the input partition id; one partition when absent.
    partitions
        How many partitions exist (ids ``0 .. partitions-1``), including never-seen ones.
    over
        Substream key: one timeline per distinct value of this column.
    end_time
        Column with each event's end time: the events are *intervals* ``[start, end)``
        (SPEC §7) instead of points; ``None`` for point events.
    shift
        Time shifting (StreamInsight's ShiftEventTime, SPEC §7): every event time, end
        time and CTI of this source is moved by this duration (negative: earlier) before
        anything judges it; ``0`` by default.
    edge
        Column that makes the events *edge events* (SPEC §7, StreamInsight): ``"start"``
        opens an event of unknown end at the row's time, ``"end"`` ends it at the row's
        time; the two rows share the value of ``edge_id`` (``docs/punctuation.md``).
    edge_id
        Column with the id that pairs a start edge with its end edge (a string or an
        integer, unique among the open edges of a timeline). Both or neither.
    import_ctis
        In a union (``[inputs.<name>]``): the name of another input whose watermark this
        one takes at every observation instant (SPEC §7, imported CTIs), so a slow input
        (reference data) does not hold the union back.
    """

    path: str
    format: str = "jsonl"
    timestamp_by: str | None = None
    arrival_time: str | None = None
    processing_time: str | None = None
    partition: str | None = None
    partitions: int | None = None
    over: str | None = None
    end_time: str | None = None
    shift: int | str = 0
    edge: str | None = None
    edge_id: str | None = None
    import_ctis: str | None = None

    def _check_edges(self) -> None:
        if (self.edge is None) != (self.edge_id is None):
            missing = "edge_id" if self.edge_id is None else "edge"
            raise ConfigError(
                f"source.{missing}",
                "edge events need both source.edge (start or end) and source.edge_id (the id "
                "pairing them)",
            )
        if self.edge is None:
            return
        if self.timestamp_by is None:
            raise ConfigError("source.edge", "needs source.timestamp_by (each edge's time)")
        if self.end_time is not None:
            raise ConfigError(
                "source.edge",
                "an event is an interval (source.end_time) or a pair of edges, not both",
            )
        taken = {self.timestamp_by, self.arrival_time, self.processing_time, self.partition}
        taken.add(self.over)
        for name in ("edge", "edge_id"):
            if getattr(self, name) in taken:
                raise ConfigError(
                    f"source.{name}",
                    f"{getattr(self, name)!r} is a column the source already reads for time, "
                    "partition or key",
                )
        if self.edge == self.edge_id:
            raise ConfigError("source.edge_id", "must name another column than source.edge")

    def __post_init__(self) -> None:
        _path(self.path, "source.path", optional=False)
        _signed_duration(self, "shift", "source.shift")
        _choice(self.format, SOURCE_FORMATS, "source.format")
        for name in (
            "timestamp_by",
            "arrival_time",
            "processing_time",
            "partition",
            "over",
            "end_time",
            "edge",
            "edge_id",
        ):
            _column(getattr(self, name), f"source.{name}")
        self._check_edges()
        if self.end_time is not None and self.timestamp_by is None:
            raise ConfigError(
                "source.end_time", "needs source.timestamp_by (the column with each start time)"
            )
        if self.shift and self.timestamp_by is None:
            raise ConfigError("source.shift", "shifts event times: it needs source.timestamp_by")
        if self.end_time is not None and self.end_time == self.timestamp_by:
            raise ConfigError("source.end_time", "must name another column than timestamp_by")
        if self.partitions is not None:
            if isinstance(self.partitions, bool) or not isinstance(self.partitions, int):
                raise ConfigError(
                    "source.partitions", f"must be an integer, got {self.partitions!r}"
                )
            if self.partitions < 1:
                raise ConfigError("source.partitions", f"must be at least 1, got {self.partitions}")
            if self.partition is None:
                raise ConfigError(
                    "source.partitions", "needs source.partition (the column with the partition id)"
                )


@dataclass(frozen=True)
class Reference:
    """Reference data (Stream Analytics' reference input): a table, not a stream.

    Written ``[inputs.<name>]`` with ``reference = true`` and joined to the job's stream
    by ``[join]`` (its ``right``): every released event meets the rows whose ``on``
    values equal its own. The table is read whole when a run starts (``simulate``: once;
    ``run``: at every start, on the driver) and must not change while a job runs; it has
    no time, partitions or watermark. A row that cannot be read stops the job before it
    starts, naming the file and line (reference data is configuration more than input).

    Parameters
    ----------
    path
        A file or a directory of files (read in name order).
    format
        ``jsonl``, ``csv`` or ``parquet``.
    """

    path: str
    format: str = "jsonl"

    def __post_init__(self) -> None:
        _path(self.path, "source.path", optional=False)
        _choice(self.format, SOURCE_FORMATS, "source.format")

    @property
    def as_source(self) -> Source:
        """The table as a :class:`Source` (its path and format), for the file readers."""
        return Source(path=self.path, format=self.format)


@dataclass(frozen=True)
class Ordering:
    """The event-ordering policy (SPEC §3).

    Parameters
    ----------
    early_arrival
        Events more than this *after* their arrival time are dropped (``None``: no check).
    late_arrival
        Events more than this *before* their arrival time are late (``None``: no check).
    out_of_order
        How far behind its timeline's newest timestamp an event may be (``None``: no check).
    action
        ``adjust`` or ``drop``: what happens to late and out-of-order events.
    on_out_of_order
        Override for out-of-order events: ``adjust``, ``drop``, ``dead_letter`` or ``accept``.
    partitioned
        Each partition's results follow its own watermark instead of the merged one.
    """

    early_arrival: int | str | None = 5 * MINUTE
    late_arrival: int | str | None = 5 * SECOND
    out_of_order: int | str | None = 0
    action: str = "adjust"
    on_out_of_order: str | None = None
    partitioned: bool = False

    def __post_init__(self) -> None:
        for name in ("early_arrival", "late_arrival", "out_of_order"):
            _duration(self, name, f"ordering.{name}", allow_none=True)
        _choice(self.action, ACTIONS, "ordering.action")
        if self.on_out_of_order is not None:
            _choice(self.on_out_of_order, OUT_OF_ORDER_ACTIONS, "ordering.on_out_of_order")
        if not isinstance(self.partitioned, bool):
            raise ConfigError(
                "ordering.partitioned", f"must be true or false, got {self.partitioned!r}"
            )

    @property
    def out_of_order_action(self) -> str:
        """The action for out-of-order events: ``on_out_of_order`` if set, else ``action``."""
        return self.on_out_of_order or self.action


@dataclass(frozen=True)
class Punctuation:
    """CTIs (current time increments): explicit watermarks (SPEC §7).

    Parameters
    ----------
    column, value
        Explicit CTIs: an input row whose ``column`` holds ``value`` (a string, an integer
        or a boolean, compared with its JSON type) is a CTI at its ``timestamp_by`` time,
        not an event. It punctuates its partition's timeline; with substreams, the
        substream named by its ``over`` value, or every substream when it has none.
    every_events
        Generated CTIs: after every N events of a timeline (whatever their verdict).
    every
        Generated CTIs: whenever a timeline's newest timestamp enters a new period of this
        length (aligned to the epoch).
    delay
        A generated CTI is at the timeline's newest timestamp minus ``delay``; negative
        delays are allowed (``"-1us"`` makes every event final at once).
    watermark
        ``cti``: only CTIs move the watermarks (StreamInsight); ``both``: CTIs raise the
        heuristic watermark of SPEC §4.
    """

    column: str | None = None
    value: str | int | bool | None = None
    every_events: int | None = None
    every: int | str | None = None
    delay: int | str | None = None
    watermark: str = "cti"

    def __post_init__(self) -> None:
        _column(self.column, "punctuation.column")
        if (self.column is None) != (self.value is None):
            missing = "value" if self.value is None else "column"
            raise ConfigError(
                f"punctuation.{missing}",
                "is required: explicit CTIs are the rows whose column holds the value",
            )
        if self.value is not None and (
            isinstance(self.value, float) or not isinstance(self.value, (str, int))
        ):
            raise ConfigError(
                "punctuation.value",
                f"must be a string, an integer or true/false, got {self.value!r}",
            )
        if self.every_events is not None:
            if isinstance(self.every_events, bool) or not isinstance(self.every_events, int):
                raise ConfigError(
                    "punctuation.every_events", f"must be an integer, got {self.every_events!r}"
                )
            if self.every_events < 1:
                raise ConfigError(
                    "punctuation.every_events", f"must be at least 1, got {self.every_events}"
                )
        _duration(self, "every", "punctuation.every", allow_none=True)
        if self.every == 0:
            raise ConfigError("punctuation.every", "must be greater than zero")
        if self.every is not None and self.every_events is not None:
            raise ConfigError(
                "punctuation.every",
                "generate CTIs either every N events (every_events) or every period of "
                "application time (every), not both",
            )
        if self.delay is not None:
            if not self.generated:
                raise ConfigError(
                    "punctuation.delay", "applies to generated CTIs: set every_events or every"
                )
            _signed_duration(self, "delay", "punctuation.delay")
        elif self.generated:
            _set(self, "delay", 0)
        _choice(self.watermark, PUNCTUATION_WATERMARKS, "punctuation.watermark")
        if self.column is None and not self.generated:
            raise ConfigError(
                "punctuation",
                "names no CTIs: set column and value (explicit CTIs), or every_events or "
                "every (generated CTIs)",
            )

    @property
    def explicit(self) -> bool:
        """Whether input rows can be CTIs."""
        return self.column is not None

    @property
    def generated(self) -> bool:
        """Whether CTIs are generated from the events."""
        return self.every_events is not None or self.every is not None

    def is_cti(self, fields: dict[str, Any]) -> bool:
        """Whether the row ``fields`` is an explicit CTI (its value has the same JSON type)."""
        if self.column is None:
            return False
        found = fields.get(self.column)
        return type(found) is type(self.value) and found == self.value


@dataclass(frozen=True)
class Join:
    """A temporal join of two inputs of a union (SPEC §7; Stream Analytics' ``JOIN … ON …
    AND DATEDIFF(unit, left, right) BETWEEN low AND high``).

    Parameters
    ----------
    left, right
        The two inputs (``[inputs.<name>]``) joined.
    on
        Columns whose values must be equal on both sides (a missing or null value never
        matches, as in SQL; numbers compare by value, ``true`` is not ``1``).
    between
        ``[low, high]``: a pair matches when ``right.timestamp − left.timestamp`` lies
        within it, both ends included; durations, negative allowed. Required for a join
        of two streams; absent when ``right`` is reference data (:class:`Reference`),
        which has no time.
    type
        ``inner`` (default): only matches are released. ``left`` (reference data only,
        Stream Analytics' ``LEFT OUTER JOIN``): an event with no matching row is released
        once, its right side ``null``.
    """

    left: str
    right: str
    on: tuple[str, ...] = ()
    between: tuple[int | str, int | str] | None = None
    type: str = "inner"

    def __post_init__(self) -> None:
        for name in ("left", "right"):
            _column(getattr(self, name), f"join.{name}", optional=False)
        if self.left == self.right:
            raise ConfigError("join.right", "must name another input than join.left")
        if isinstance(self.on, str) or not isinstance(self.on, (list, tuple)) or not self.on:
            raise ConfigError(
                "join.on", f"must be a non-empty list of column names, got {self.on!r}"
            )
        _set(self, "on", tuple(self.on))
        for column in self.on:
            _column(column, "join.on", optional=False)
        _choice(self.type, JOIN_TYPES, "join.type")
        bounds = self.between
        if bounds is None:
            return
        if isinstance(bounds, str) or not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            raise ConfigError(
                "join.between", f'must be [low, high], e.g. ["0s", "15m"]; got {bounds!r}'
            )
        holder = _Bounds(*bounds)
        _signed_duration(holder, "low", "join.between")
        _signed_duration(holder, "high", "join.between")
        if holder.low > holder.high:  # type: ignore[operator]
            raise ConfigError("join.between", f"low must not be above high, got {bounds!r}")
        _set(self, "between", (holder.low, holder.high))


@dataclass
class _Bounds:
    low: int | str
    high: int | str


@dataclass(frozen=True)
class Aggregate:
    """One named aggregate of a window, such as ``total = "sum(value)"``.

    Parameters
    ----------
    name
        The output column.
    function
        One of :data:`AGGREGATE_FUNCTIONS`.
    column
        The input column, or ``None`` for ``count(*)``.
    """

    name: str
    function: str
    column: str | None = None

    def __post_init__(self) -> None:
        key = f"window.aggregates.{self.name}"
        _column(self.name, key, optional=False)
        _choice(self.function, AGGREGATE_FUNCTIONS, key)
        if self.column is None and self.function != "count":
            raise ConfigError(key, f"{self.function}(*) is not allowed; name a column")
        _column(self.column, key)

    @classmethod
    def parse(cls, name: str, text: Any) -> Aggregate:
        """Parse ``"sum(value)"`` or ``"count(*)"`` by a strict grammar (no SQL, no eval)."""
        key = f"window.aggregates.{name}"
        match = _AGGREGATE.match(text) if isinstance(text, str) else None
        if match is None:
            raise ConfigError(key, f"expected FUNCTION(column) or count(*), got {text!r}")
        function, column = match.group(1).lower(), match.group(2)
        if function not in AGGREGATE_FUNCTIONS:
            raise ConfigError(
                key,
                f"unknown aggregate {function!r}; use one of {', '.join(AGGREGATE_FUNCTIONS)}",
            )
        return cls(name, function, None if column == "*" else column)

    def __str__(self) -> str:
        return f"{self.function}({self.column or '*'})"


@dataclass(frozen=True)
class Window:
    """A window over system timestamps (SPEC §6).

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
        Grouping columns.
    aggregates
        The aggregates, in output order.
    having
        A condition over the window's result (group-by columns, aggregate names,
        ``window_start``, ``window_end``): a window for which it is not true is not
        written (``docs/jobfile.md``).
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
        _choice(self.type, WINDOW_TYPES, "window.type")
        for name in ("size", "hop", "gap", "max_duration"):
            key = f"window.{name}"
            if getattr(self, name) is None:
                if name in self._NEEDS[self.type]:
                    raise ConfigError(key, f"is required for {self.type} windows")
                continue
            if name not in self._ALLOWS[self.type]:
                raise ConfigError(key, f"does not apply to {self.type} windows")
            _duration(self, name, key, positive=True)
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
        _duration(self, "offset", "window.offset")
        _duration(self, "allowed_lateness", "window.allowed_lateness")
        _duration(self, "idle_timeout", "window.idle_timeout", allow_none=True)
        if self.idle_timeout == 0:
            raise ConfigError("window.idle_timeout", "must be greater than zero (or omitted)")
        if self.boundary is None:
            _set(self, "boundary", "end" if self.type == "sliding" else "start")
        _choice(self.boundary, BOUNDARIES, "window.boundary")
        if self.type == "sliding" and self.boundary != "end":
            raise ConfigError(
                "window.boundary",
                "sliding windows follow Stream Analytics' (start, end] boundary; "
                'use boundary = "end" or leave it out',
            )
        _choice(self.late, LATE_ACTIONS, "window.late")
        if isinstance(self.group_by, str) or not isinstance(self.group_by, (list, tuple)):
            raise ConfigError(
                "window.group_by", f"must be a list of column names, got {self.group_by!r}"
            )
        _set(self, "group_by", tuple(self.group_by))
        for column in self.group_by:
            _column(column, "window.group_by", optional=False)
        if len(set(self.group_by)) != len(self.group_by):
            raise ConfigError("window.group_by", "names a column twice")
        _set(self, "aggregates", tuple(self.aggregates))
        seen = set(self.group_by)
        for aggregate in self.aggregates:
            if not isinstance(aggregate, Aggregate):
                raise ConfigError(
                    "window.aggregates", f"expected Aggregate objects, got {aggregate!r}"
                )
            key = f"window.aggregates.{aggregate.name}"
            if aggregate.name in seen:
                raise ConfigError(key, "clashes with a group_by column or another aggregate")
            if aggregate.name in RESERVED_WINDOW_COLUMNS:
                raise ConfigError(key, f"{aggregate.name!r} is a name sparktide writes itself")
            seen.add(aggregate.name)
        for column in self.group_by:
            if column in RESERVED_WINDOW_COLUMNS:
                raise ConfigError(
                    "window.group_by", f"{column!r} is a name sparktide writes itself"
                )
        if self.having is not None:
            having = _expression(self.having, "window.having")
            _no_input_fields(having, "window.having")
            _check_references(having, self.result_columns, "window.having")

    @property
    def result_columns(self) -> tuple[str, ...]:
        """The columns of a window's result that ``having`` and ``[select]`` read: the
        group-by columns, the aggregate names, ``window_start`` and ``window_end``."""
        return (*self.group_by, *(a.name for a in self.aggregates), *WINDOW_BOUNDS)

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


def _expression(text: Any, key: str) -> Expr:
    if not isinstance(text, str):
        raise ConfigError(
            key, f'expected an expression as text, such as "speed > 50", got {text!r}'
        )
    return parse_expression(text, key)


def _no_input_fields(expr: Expr, key: str) -> None:
    """Refuse ``input.field`` names where no join's match is read."""
    for ref in ref_nodes(expr):
        if ref.input is not None:
            raise ConfigError(
                key,
                f"{ref.key!r} names a field of a join's input: input.field names are read by "
                f"[select] over a [join] only; here write {ref.name!r}",
            )


def _check_join_references(expr: Expr, join: Join, key: str) -> None:
    """``[select]`` over a join reads ``<input>.<field>`` of either input and the match's
    ``timestamp``; an unqualified field is refused (the inputs' fields are not known before
    the data, so no name is unambiguous)."""
    inputs = (join.left, join.right)
    for ref in ref_nodes(expr):
        if ref.input is None and ref.name != "timestamp":
            raise ConfigError(
                key,
                f"{ref.name!r} over a join: qualify it with its input ({join.left}.{ref.name} "
                f"or {join.right}.{ref.name}); the match's own time is timestamp",
            )
        if ref.input is not None and ref.input not in inputs:
            raise ConfigError(
                key,
                f"{ref.key!r}: {ref.input!r} is not an input of the join ({join.left} or "
                f"{join.right}; names are case-sensitive)",
            )


def _check_references(expr: Expr, allowed: tuple[str, ...], key: str) -> None:
    for name in references(expr):
        if name not in allowed:
            raise ConfigError(
                key,
                f"{name!r} is not a column of the window's result; use one of {', '.join(allowed)}",
            )


@dataclass(frozen=True)
class Filter:
    """Which admitted events go on to the windows or the output (``[filter]``).

    The filter applies after the ordering policy: an event that fails it has already
    moved its timeline's watermark, and is counted as dropped with reason ``filtered``
    (``docs/semantics.md``).

    Parameters
    ----------
    where
        A condition over the record's top-level fields, such as
        ``"speed > 50 AND lane = 'A'"`` (:mod:`sparktide.expr`); an event passes when it
        is true (not false, not null).
    """

    where: str

    def __post_init__(self) -> None:
        where = _expression(self.where, "filter.where")
        for ref in ref_nodes(where):
            if ref.input is not None:
                raise ConfigError(
                    "filter.where",
                    f"{ref.key!r}: the filter reads each input's own events, before any join "
                    f"(and a union's inputs share it): write {ref.name!r}",
                )

    @property
    def expression(self) -> Expr:
        """The parsed condition."""
        return parse_expression(self.where, "filter.where")


@dataclass(frozen=True)
class Projection:
    """One output column of ``[select]``: ``name = "expression"``.

    Parameters
    ----------
    name
        The output column.
    expression
        Its value: over the window's result (group-by columns, aggregate names,
        ``window_start``, ``window_end``) in a windowed job, over a join's match
        (``<input>.<field>`` of either input, and ``timestamp``) in a job with
        ``[join]``, over the record's fields in a job without either. A bare column
        passes its value through unchanged.
    """

    name: str
    expression: str

    def __post_init__(self) -> None:
        key = f"select.{self.name}"
        _column(self.name, "select", optional=False)
        _expression(self.expression, key)

    @property
    def parsed(self) -> Expr:
        """The parsed expression."""
        return parse_expression(self.expression, f"select.{self.name}")


@dataclass(frozen=True)
class Output:
    """Where results go (``run``); ``simulate`` prints instead.

    Parameters
    ----------
    path
        Directory for window (or ordered event) records.
    format
        ``jsonl`` or ``parquet``.
    dead_letter
        Directory for dead letters.
    metrics
        Directory for metrics.
    checkpoint
        Spark checkpoint directory.
    """

    path: str | None = None
    format: str = "jsonl"
    dead_letter: str | None = None
    metrics: str | None = None
    checkpoint: str | None = None

    def __post_init__(self) -> None:
        for name in ("path", "dead_letter", "metrics", "checkpoint"):
            _path(getattr(self, name), f"output.{name}", optional=True)
        _choice(self.format, OUTPUT_FORMATS, "output.format")


@dataclass(frozen=True)
class Job:
    """A whole job: source, ordering policy, optional window, output, and optionally a
    filter (``[filter]``) and the output columns (``[select]``).

    Cross-table rules are checked here: ``partitioned`` needs a partition column and
    excludes substreams; with substreams every window grouping includes the key;
    ``[select]`` reads the window's result in a windowed job, a join's match
    (``<input>.<field>``, ``timestamp``) in a job with ``[join]``.
    """

    source: Source
    ordering: Ordering = field(default_factory=Ordering)
    window: Window | None = None
    output: Output = field(default_factory=Output)
    punctuation: Punctuation | None = None
    inputs: tuple[tuple[str, Source], ...] = ()
    join: Join | None = None
    filter: Filter | None = None
    select: tuple[Projection, ...] = ()
    references: tuple[tuple[str, Reference], ...] = ()

    def __post_init__(self) -> None:
        self._check_inputs()
        self._check_join()
        self._check_punctuation()
        if self.filter is not None and not isinstance(self.filter, Filter):
            raise ConfigError("filter", f"expected a Filter, got {self.filter!r}")
        if isinstance(self.select, (str, dict)) or not isinstance(self.select, (list, tuple)):
            raise ConfigError(
                "select", f"must be a list of Projection objects, got {self.select!r}"
            )
        object.__setattr__(self, "select", tuple(self.select))
        seen: set[str] = set()
        reserved = RESERVED_WINDOW_COLUMNS if self.window is not None else RESERVED_EVENT_COLUMNS
        for projection in self.select:
            if not isinstance(projection, Projection):
                raise ConfigError("select", f"expected Projection objects, got {projection!r}")
            key = f"select.{projection.name}"
            if projection.name in seen:
                raise ConfigError(key, "is named twice")
            if projection.name in reserved:
                raise ConfigError(key, f"{projection.name!r} is a name sparktide writes itself")
            seen.add(projection.name)
            if self.join is not None:
                _check_join_references(projection.parsed, self.join, key)
                continue
            _no_input_fields(projection.parsed, key)
            if self.window is not None:
                _check_references(projection.parsed, self.window.result_columns, key)
        if self.ordering.partitioned and self.source.partition is None:
            raise ConfigError(
                "ordering.partitioned",
                "needs source.partition (the column that names each event's partition)",
            )
        if self.ordering.partitioned and self.source.over is not None:
            raise ConfigError(
                "ordering.partitioned",
                "cannot be combined with source.over: "
                "substreams already follow their own watermarks",
            )
        if (
            self.window is not None
            and self.ordering.partitioned
            and self.source.partition not in self.window.group_by
        ):
            raise ConfigError(
                "window.group_by",
                f"must include the partition column {self.source.partition!r} when "
                "ordering.partitioned = true: each partition's windows follow its own watermark",
            )
        if self.window is not None and self.source.over is not None:
            if self.source.over not in self.window.group_by:
                raise ConfigError(
                    "window.group_by",
                    f"must include the substream key {self.source.over!r} (source.over): "
                    "each substream's windows follow its own watermark",
                )

    def _check_inputs(self) -> None:
        """A union of named inputs (SPEC §7): ``source`` is the first; the columns that
        make timelines, and whether events carry their own times and ends, agree."""
        if not self.inputs:
            return
        _set(self, "inputs", tuple((name, source) for name, source in self.inputs))
        names = [name for name, _ in self.inputs]
        for name in names:
            if not isinstance(name, str) or not _COLUMN.match(name):
                raise ConfigError(
                    "inputs", f"an input name must be letters, digits, '_' or '-'; got {name!r}"
                )
        if len(set(names)) != len(names):
            raise ConfigError("inputs", "names an input twice")
        for name, source in self.inputs:
            exporter = source.import_ctis
            if exporter is None:
                continue
            key = f"inputs.{name}.import_ctis"
            if exporter not in names or exporter == name:
                raise ConfigError(key, f"must name another input of the union, got {exporter!r}")
            if dict(self.inputs)[exporter].import_ctis is not None:
                raise ConfigError(
                    key, f"{exporter!r} imports its CTIs itself: import from its source"
                )
            if source.over is not None:
                raise ConfigError(
                    key, "substreams follow their own keys' watermarks: nothing to import into"
                )
        first_name, first = self.inputs[0]
        if self.source != first:
            raise ConfigError("inputs", "source must be the first input of a union")
        for name, source in self.inputs[1:]:
            for key in ("over", "end_time"):
                if getattr(source, key) != getattr(first, key):
                    raise ConfigError(
                        f"inputs.{name}.{key}",
                        f"must be the same in every input of a union ({key} = "
                        f"{getattr(first, key)!r} in inputs.{first_name})",
                    )
            if (source.edge is None) != (first.edge is None):
                raise ConfigError(
                    f"inputs.{name}.edge",
                    "every input of a union has edge events (source.edge), or none has",
                )
            if (source.timestamp_by is None) != (first.timestamp_by is None):
                raise ConfigError(
                    f"inputs.{name}.timestamp_by",
                    "every input of a union has a timestamp_by, or none has (arrival-time mode)",
                )
            if self.ordering.partitioned and source.partition != first.partition:
                raise ConfigError(
                    f"inputs.{name}.partition",
                    "must be the same column in every input when ordering.partitioned = true "
                    "(the windows group by it)",
                )

    @property
    def declared_partitions(self) -> list[Any]:
        """Partition ids that exist before they deliver (``source.partitions``); in a union
        ``<input>/<id>``."""
        out: list[Any] = []
        for name, source in self.inputs or (("", self.source),):
            if source.partitions is not None:
                out += [union_partition(name, i) if name else i for i in range(source.partitions)]
        return out

    @property
    def input_sources(self) -> tuple[tuple[str | None, Source], ...]:
        """``(name, source)`` of every input: ``((None, source),)`` for one plain source."""
        return self.inputs or ((None, self.source),)

    def _check_join(self) -> None:
        join = self.join
        _set(self, "references", tuple((name, ref) for name, ref in self.references))
        if join is None:
            if self.references:
                name = self.references[0][0]
                raise ConfigError(
                    f"inputs.{name}.reference",
                    "reference data is joined to the stream: the job needs a [join] with "
                    f'right = "{name}"',
                )
            return
        if self.references:
            self._check_lookup(join)
            return
        if join.between is None:
            raise ConfigError(
                "join.between",
                'is required for a join of two streams, e.g. ["0s", "15m"] (only a join with '
                "reference data has no time bounds)",
            )
        if join.type != "inner":
            raise ConfigError(
                "join.type",
                "a join of two streams is inner: left needs reference data on the right "
                "([inputs.<name>] reference = true)",
            )
        names = [name for name, _ in self.inputs]
        if len(names) != 2 or set(names) != {join.left, join.right}:
            raise ConfigError(
                "join",
                f"joins two inputs: the job must have exactly [inputs.{join.left}] and "
                f"[inputs.{join.right}], got {names or 'a [source]'}",
            )
        if self.window is not None:
            raise ConfigError("window", "a join's matches are released as events: no [window] yet")
        if self.source.over is not None or self.ordering.partitioned:
            raise ConfigError(
                "join", "a join follows the merged watermark of both inputs: no over or partitioned"
            )
        if self.ordering.out_of_order_action == "accept":
            raise ConfigError(
                "ordering.on_out_of_order",
                "'accept' would let an event come below a watermark, so a join could never "
                "forget an event; use adjust, drop or dead_letter",
            )
        if self.source.end_time is not None:
            raise ConfigError("join", "joins point events (no source.end_time) for now")

    def _check_lookup(self, join: Join) -> None:
        """A join with reference data: one stream input (``left``) and one table (``right``)."""
        names = [name for name, _ in self.inputs]
        tables = [name for name, _ in self.references]
        if names != [join.left] or tables != [join.right]:
            raise ConfigError(
                "join",
                f"a join with reference data reads one stream and one table: the job must have "
                f"[inputs.{join.left}] and [inputs.{join.right}] with reference = true, got "
                f"streams {names} and reference data {tables}",
            )
        if join.between is not None:
            raise ConfigError(
                "join.between",
                f"{join.right!r} is reference data, which has no time: leave between out",
            )
        if self.window is not None:
            raise ConfigError("window", "a join's matches are released as events: no [window] yet")
        if self.source.end_time is not None:
            raise ConfigError("join", "joins point events (no source.end_time) for now")

    @property
    def imports(self) -> dict[str, str]:
        """``{importing input: exporting input}`` of a union (``import_ctis``)."""
        return {n: s.import_ctis for n, s in self.inputs if s.import_ctis is not None}

    def _check_punctuation(self) -> None:
        punctuation, source, window = self.punctuation, self.source, self.window
        if source.import_ctis is not None and not self.inputs:
            raise ConfigError("source.import_ctis", "imports from another input of a union")
        if punctuation is not None:
            if source.timestamp_by is None:
                raise ConfigError(
                    "punctuation",
                    "needs source.timestamp_by: CTIs are promises about event times",
                )
            if punctuation.column is not None and punctuation.column in (
                source.timestamp_by,
                source.arrival_time,
                source.partition,
                source.over,
                source.end_time,
                source.edge_id,
            ):
                raise ConfigError(
                    "punctuation.column",
                    f"{punctuation.column!r} is a column the source already reads for time, "
                    "partition or key; name the column that marks CTI rows",
                )
        if source.edge is not None and (window is None or window.type not in _GRID):
            raise ConfigError(
                "window.type" if window is not None else "source.edge",
                "edge events go into tumbling or hopping windows (every window they overlap, "
                "counted while they are open); "
                + (
                    f"{window.type} windows are for point events"
                    if window is not None
                    else "without a [window] there is nothing to release an open event into"
                ),
            )
        if source.end_time is not None and window is not None:
            if window.type not in ("tumbling", "hopping"):
                raise ConfigError(
                    "window.type",
                    f"interval events (source.end_time) go into tumbling or hopping windows "
                    f"(every window they overlap); {window.type} windows are for point events",
                )

    @property
    def edges(self) -> bool:
        """True when the events are edge events (``source.edge``, SPEC §7)."""
        return self.source.edge is not None

    @property
    def numeric_columns(self) -> frozenset[str]:
        """Columns that must hold numbers or null: the inputs of ``sum`` and ``avg``."""
        if self.window is None:
            return frozenset()
        return frozenset(
            a.column
            for a in self.window.aggregates
            if a.function in ("sum", "avg") and a.column is not None
        )

    @property
    def event_time_mode(self) -> bool:
        """True when events carry their own time (``timestamp_by``)."""
        return self.source.timestamp_by is not None

    @classmethod
    def from_dict(cls, data: dict[str, Any], base_dir: Path | str | None = None) -> Job:
        """Build a job from the parsed TOML tables; relative paths resolve against ``base_dir``."""
        if not isinstance(data, dict):
            raise ConfigError("", "a job must be a table")
        if "outputs" in data:  # a query's job file (sparktide.query.bind)
            key = "inputs" if "inputs" in data else "outputs"
            raise ConfigError(
                key, "binds the names of a query: run it with --query FILE (docs/query.md)"
            )
        tables = ("source", "inputs", "ordering", "window", "output", "punctuation", "join")
        _check_keys(data, (*tables, "filter", "select"), "")
        if "source" in data and "inputs" in data:
            raise ConfigError(
                "inputs", "cannot be combined with [source]: a union names each input"
            )
        if "source" not in data and "inputs" not in data:
            raise ConfigError("source", "the [source] table is required")
        base = Path(base_dir) if base_dir is not None else None
        _check_duration_strings(data)
        inputs: list[tuple[str, Source]] = []
        references: list[tuple[str, Reference]] = []
        if "inputs" in data:  # a union of named inputs: [inputs.<name>]
            tables = data["inputs"]
            if not isinstance(tables, dict) or not tables:
                raise ConfigError("inputs", "must hold one [inputs.<name>] table per input")
            for name, table in tables.items():
                if not isinstance(table, dict):
                    raise ConfigError(f"inputs.{name}", f"must be a table, got {table!r}")
                table = dict(table)
                if "path" in table:
                    table["path"] = _resolve(table["path"], base)
                reference = reference_input(name, table)
                if reference is not None:
                    references.append((name, reference))
                    continue
                inputs.append((name, _input_table(Source, table, name)))
            if not inputs:
                raise ConfigError(
                    "inputs", "needs a stream: every [inputs.<name>] table is reference data"
                )
            source = inputs[0][1]
        else:
            source_data = _table(data, "source")
            if "path" in source_data:
                source_data["path"] = _resolve(source_data["path"], base)
            source = _build(Source, source_data, "source")
        ordering = _build(Ordering, _table(data, "ordering"), "ordering")
        window = None
        if "window" in data:
            window_data = _table(data, "window")
            aggregates = window_data.pop("aggregates", {})
            if not isinstance(aggregates, dict):
                raise ConfigError(
                    "window.aggregates", 'must be a table of name = "function(column)"'
                )
            window_data["aggregates"] = tuple(
                Aggregate.parse(name, text) for name, text in aggregates.items()
            )
            if "group_by" in window_data and isinstance(window_data["group_by"], list):
                window_data["group_by"] = tuple(window_data["group_by"])
            window = _build(Window, window_data, "window")
        output_data = _table(data, "output")
        for name in ("path", "dead_letter", "metrics", "checkpoint"):
            if name in output_data:
                output_data[name] = _resolve(output_data[name], base)
        output = _build(Output, output_data, "output")
        punctuation = (
            _build(Punctuation, _table(data, "punctuation"), "punctuation")
            if "punctuation" in data
            else None
        )
        join = None
        if "join" in data:
            join_data = _table(data, "join")
            bounds = join_data.get("between")
            if isinstance(bounds, list) and any(
                isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds
            ):
                raise ConfigError(
                    "join.between",
                    f'write durations as text with a unit, e.g. ["0s", "15m"] (got {bounds!r})',
                )
            for key in ("on", "between"):
                if isinstance(join_data.get(key), list):
                    join_data[key] = tuple(join_data[key])
            join = _build(Join, join_data, "join")
        job_filter = _build(Filter, _table(data, "filter"), "filter") if "filter" in data else None
        select = []
        for name, text in _table(data, "select").items():
            if not isinstance(text, str):
                raise ConfigError(
                    f"select.{name}",
                    f'expected an expression as text, such as "total / n", got {text!r}',
                )
            select.append(Projection(name, text))
        return cls(
            source=source,
            ordering=ordering,
            window=window,
            output=output,
            punctuation=punctuation,
            inputs=tuple(inputs),
            join=join,
            filter=job_filter,
            select=tuple(select),
            references=tuple(references),
        )


def reference_input(name: str, table: dict[str, Any]) -> Reference | None:
    """The reference data an ``[inputs.<name>]`` table declares (``reference = true``:
    ``path`` and ``format`` only), or ``None`` for a stream (no ``reference``, or
    ``false``). Pops ``reference`` from ``table``, which is then a stream's table.

    Raises
    ------
    ConfigError
        Naming ``inputs.<name>.<key>``: a ``reference`` that is not a boolean, another key
        beside ``reference = true``, a bad ``path`` or ``format``.
    """
    flag = table.pop("reference", False)
    if not isinstance(flag, bool):
        raise ConfigError(f"inputs.{name}.reference", f"must be true or false, got {flag!r}")
    if not flag:
        return None
    for key in table:
        if key not in ("path", "format"):
            raise ConfigError(
                f"inputs.{name}.{key}",
                "reference data is a table without time, partitions or keys: it takes only "
                "path and format",
            )
    return _input_table(Reference, table, name)


def _input_table(cls: type, table: dict[str, Any], name: str) -> Any:
    """``cls`` (:class:`Source` or :class:`Reference`) of ``[inputs.<name>]``, its errors
    naming the input's key (``inputs.<name>.path``), not ``[source]``'s."""
    try:
        return _build(cls, table, f"inputs.{name}")
    except ConfigError as exc:
        if exc.key.startswith("source."):
            key = f"inputs.{name}." + exc.key.removeprefix("source.")
            raise ConfigError(key, exc.message) from None
        raise


_DURATION_KEYS = {
    "ordering": ("early_arrival", "late_arrival", "out_of_order"),
    "window": ("size", "hop", "gap", "max_duration", "offset", "allowed_lateness", "idle_timeout"),
    "punctuation": ("every", "delay"),
    "source": ("shift",),
}


def _check_duration_strings(data: dict[str, Any]) -> None:
    """In a job file a duration is text with a unit: a bare number would be ambiguous."""
    tables = [(table, data.get(table), keys) for table, keys in _DURATION_KEYS.items()]
    inputs = data.get("inputs")
    if isinstance(inputs, dict):  # a union's inputs: the keys of [source]
        tables += [(f"inputs.{n}", t, _DURATION_KEYS["source"]) for n, t in inputs.items()]
    for table, values, keys in tables:
        if not isinstance(values, dict):
            continue
        for key in keys:
            value = values.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                raise ConfigError(
                    f"{table}.{key}",
                    f'write durations as text with a unit, e.g. "{value}s" (got {value!r})',
                )


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(name, f"must be a table ([{name}]), got {value!r}")
    return dict(value)


def _check_keys(data: dict[str, Any], allowed: tuple[str, ...] | list[str], prefix: str) -> None:
    for key in data:
        if key not in allowed:
            where = f"{prefix}.{key}" if prefix else key
            hint = _closest(key, allowed)
            raise ConfigError(where, "unknown key" + (f" (did you mean {hint!r}?)" if hint else ""))


def _closest(key: str, allowed: tuple[str, ...] | list[str]) -> str | None:
    import difflib

    matches = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _build(cls: type, data: dict[str, Any], prefix: str) -> Any:
    names = [f.name for f in fields(cls) if not f.name.startswith("_")]
    _check_keys(data, names, prefix)
    try:
        return cls(**data)
    except TypeError as exc:  # a required key is missing
        missing = [
            f.name
            for f in fields(cls)
            if f.name not in data and f.default is MISSING and f.default_factory is MISSING
        ]
        key = f"{prefix}.{missing[0]}" if missing else prefix
        raise ConfigError(key, "is required") from exc


def _resolve(value: Any, base: Path | None) -> Any:
    if not isinstance(value, str) or base is None or not value.strip():
        return value  # (an empty path is not the job's folder: the check rejects it)
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path))


def expression_fields(job: Job) -> list[str]:
    """The record fields the job's expressions read: ``[filter] where`` and, in a job
    without a window or a join, ``[select]`` (over a join it reads the matches)."""
    exprs = [job.filter.expression] if job.filter is not None else []
    if job.window is None and job.join is None:
        exprs += [p.parsed for p in job.select]
    return list(dict.fromkeys(name for e in exprs for name in references(e)))


def union_partition(name: str, partition: Any) -> str:
    """The job-wide id of partition ``partition`` of a union's input ``name``."""
    return f"{name}/{partition}"


def input_of(partition: Any) -> str:
    """The input a union's partition id (:func:`union_partition`) belongs to."""
    return str(partition).split("/", 1)[0]


def load_job(path: str | Path) -> Job:
    """Read and validate a TOML job file; relative paths are taken from the file's folder.

    Raises
    ------
    ConfigError
        If the file is missing, not TOML, or any key is wrong.
    """
    job_path = Path(path)
    return Job.from_dict(_read_toml(job_path), base_dir=job_path.resolve().parent)


def _read_toml(job_path: Path) -> dict[str, Any]:
    """The tables of the TOML file ``job_path`` (a :class:`ConfigError` if it cannot be
    read or is not TOML)."""
    try:
        raw = job_path.read_bytes()
    except OSError as exc:
        raise ConfigError("", f"cannot read job file {str(job_path)!r}: {exc.strerror}") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"job file {str(job_path)!r} is not valid TOML: {exc}") from None
