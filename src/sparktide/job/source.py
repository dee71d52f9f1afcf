"""``[source]`` and ``[inputs.<name>]``: where events come from, and reference data.

A job reads one source, or a union of named inputs (semantics §7) whose partitions are named
``<input>/<id>`` job-wide (:func:`union_partition`, :func:`input_of`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sparktide.errors import ConfigError
from sparktide.expr import (
    EVENT_INPUT,
    SYSTEM_TIMESTAMP,
    Expr,
    parse_expression,
    ref_nodes,
    references,
)
from sparktide.job.perinput import overrides
from sparktide.job.tuplekey import key_parts, tuple_key
from sparktide.job.values import (
    COLUMN_NAME,
    check_choice,
    check_column,
    check_path,
    normalise_duration,
    normalise_signed_duration,
    set_field,
)

__all__ = [
    "FILE_FORMATS",
    "SOURCE_FORMATS",
    "SPARK_STREAMS",
    "TIME_UNITS",
    "Reference",
    "Source",
    "input_of",
    "union_partition",
]

#: The formats of files sparktide reads itself (``source.path``; both engines).
FILE_FORMATS = ("jsonl", "csv", "parquet")
#: Streams Spark reads (``run`` only): its rate sources (``rate-micro-batch``: a fixed
#: number of rows and a fixed time step per micro-batch), and a catalog table's stream
#: (Delta, Iceberg, Parquet: whatever the cluster's catalog can stream).
SPARK_STREAMS = ("rate", "rate-micro-batch", "table")
SOURCE_FORMATS = FILE_FORMATS + SPARK_STREAMS
#: The units of epoch-number time columns of a typed stream (``source.time_unit``).
TIME_UNITS = ("s", "ms", "us", "ns")


@dataclass(frozen=True)
class Source:
    """Where events come from and which columns carry time, partition and key.

    Parameters
    ----------
    path
        A file or a directory of files; ``None`` for a job given its input as a
        streaming DataFrame (:func:`sparktide.spark.start`), which reads no file (``run``
        and ``simulate`` require it).
    format
        ``jsonl``, ``csv`` or ``parquet`` (files); ``rate`` or ``rate-micro-batch``
        (Spark's rate sources: columns ``timestamp``, ``value``) or ``table``
        (:attr:`table`'s stream), which only ``run`` reads, as typed columns
        (:data:`SPARK_STREAMS`).
    table
        With ``format = "table"``: the catalog table Spark streams
        (``spark.readStream.table``), such as ``"events"`` or ``"sales.events"``.
    options
        With a stream Spark reads: its reader options
        (``[source.options]``, such as ``rowsPerSecond`` for the rate source), stored as
        sorted ``(key, text)`` pairs.
    timestamp_by
        Column with the event (application) time; ``None`` runs in arrival-time mode.
        Anything but a column name (letters, digits, ``_``, ``-``) is an expression over
        the record's fields that computes the time (:attr:`timestamp_expression`,
        semantics §1.4), such as ``"DATEADD(hour, -1, local_time)"`` or
        ``"GETRECORDPROPERTYVALUE(header, 'time')"``; so is ``over``'s
        (:attr:`key_expression`).
    arrival_time
        Column with the broker enqueue time; else the file's modification time.
    processing_time
        ``simulate`` only: column with the processing time; else the arrival time.
    partition
        Column with the input partition id; one partition when absent.
    partitions
        How many partitions exist (ids ``0 .. partitions-1``), including never-seen ones.
    over
        Substream key: one timeline per distinct value of this column (or expression,
        semantics §1.4); a list of several: one per combination of their values, the
        key :func:`~sparktide.job.tuplekey.tuple_key` of them.
    end_time
        Column with each event's end time: the events are *intervals* ``[start, end)``
        (semantics §7) instead of points; ``None`` for point events.
    shift
        Time shifting (StreamInsight's ShiftEventTime, semantics §7): every event time, end
        time and CTI of this source is moved by this duration (negative: earlier) before
        anything judges it; ``0`` by default.
    duration
        Event lifetimes (StreamInsight's ``AlterEventLifetime`` / ``AlterEventDuration``,
        semantics §7.6): every event becomes an interval from its start time to start +
        ``duration`` — point events turn into intervals; with ``end_time``, the interval's
        own end is replaced. CTIs do not move (only ``shift`` moves start times).
    edge
        Column that makes the events *edge events* (semantics §7, StreamInsight): ``"start"``
        opens an event of unknown end at the row's time, ``"end"`` ends it at the row's
        time; the two rows share the value of ``edge_id`` (``docs/punctuation.md``).
    edge_id
        Column with the id that pairs a start edge with its end edge (a string or an
        integer, unique among the open edges of a timeline). Both or neither.
    time_unit
        The unit (``s``, ``ms``, ``us``, ``ns``) of time columns (``timestamp_by``,
        ``arrival_time``, ``end_time``) that hold epoch numbers: integers in files (JSON
        lines, CSV, Parquet), any number in a typed stream (``start(spark, job, frame)``),
        semantics §1.4. ISO-8601 text is read as a time still. ``None``: a number in a time
        column is no time (a malformed record, or a configuration error for a typed
        stream).
    import_ctis
        In a union (``[inputs.<name>]``): the name of another input whose watermark this
        one takes at every observation instant (semantics §7, imported CTIs), so a slow input
        (reference data) does not hold the union back.
    ordering, punctuation
        In a union or a join (``[inputs.<name>.ordering]``, ``[inputs.<name>.punctuation]``):
        this input's overrides of the job-wide ``[ordering]`` and ``[punctuation]``, a
        table (dict) of their keys (semantics §7.8, :mod:`sparktide.job.perinput`);
        stored as ``(key, value)`` pairs, empty when the input has none.
    where
        In a union or a join (``[inputs.<name>] where``), or in a one-input job with
        analytic columns (``[source] where``): a condition over this input's own fields,
        such as ``"Type = 'entry'"``; its events for which it is not true are dropped
        with reason ``filtered``, after the ordering policy and before the analytic
        columns and ``[filter]`` (semantics §11.20). ``None``: every event goes on.
    """

    path: str | None = None
    format: str = "jsonl"
    table: str | None = None
    options: Any = ()
    timestamp_by: str | None = None
    arrival_time: str | None = None
    processing_time: str | None = None
    partition: str | None = None
    partitions: int | None = None
    over: str | None = None
    end_time: str | None = None
    shift: int | str = 0
    duration: int | str | None = None
    edge: str | None = None
    edge_id: str | None = None
    import_ctis: str | None = None
    time_unit: str | None = None
    ordering: Any = None
    punctuation: Any = None
    where: str | None = None

    @property
    def condition(self) -> Expr | None:
        """The parsed :attr:`where`, or ``None``."""
        return None if self.where is None else parse_expression(self.where, "source.where")

    @property
    def computes_time(self) -> bool:
        """Whether :attr:`timestamp_by` is an expression rather than a column."""
        return _computed(self.timestamp_by)

    @property
    def computes_key(self) -> bool:
        """Whether :attr:`over` (the substream key) is an expression rather than a column."""
        return _computed(self.over)

    @property
    def computes_fields(self) -> bool:
        """Whether the source computes its time or its substream key (semantics §1.4,
        §2.3): the readers that take them from columns cannot read its records."""
        return self.computes_time or self.computes_key

    @property
    def time_fields(self) -> list[str]:
        """The record fields the event time reads: the ``timestamp_by`` column, or the
        fields its expression reads (none in arrival-time mode)."""
        return _fields(self.timestamp_by)

    @property
    def key_fields(self) -> list[str]:
        """The record fields the substream key reads (:attr:`time_fields`' rule)."""
        return _fields(self.over)

    @property
    def timestamp_expression(self) -> Expr | None:
        """The expression :attr:`timestamp_by` computes each event's time with; ``None``
        when it names a column (or is absent)."""
        return _expression(self.timestamp_by, "source.timestamp_by")

    @property
    def key_expression(self) -> Expr | None:
        """The expression :attr:`over` computes each event's substream key with; ``None``
        when it names a column (or is absent)."""
        return _expression(self.over, "source.over")

    @property
    def spark_stream(self) -> bool:
        """Whether Spark reads the stream (:data:`SPARK_STREAMS`), not sparktide's files."""
        return self.format in SPARK_STREAMS

    def _check_spark_stream(self) -> None:
        set_field(self, "options", _reader_options(self.options))
        if self.format == "table":
            if not isinstance(self.table, str) or not _TABLE_NAME.match(self.table):
                raise ConfigError(
                    "source.table",
                    f'format = "table" streams a catalog table: name it (such as '
                    f'"sales.events"), got {self.table!r}',
                )
        elif self.table is not None:
            raise ConfigError("source.table", 'is read with format = "table" only')
        if self.spark_stream and self.path is not None:
            raise ConfigError(
                "source.path", f"format = {self.format!r} is a stream Spark reads: it has no path"
            )
        if self.options and not self.spark_stream:
            raise ConfigError(
                "source.options",
                f"are Spark's reader options, for {', '.join(SPARK_STREAMS)}; "
                f"{self.format} files are read by sparktide",
            )

    @property
    def intervals(self) -> bool:
        """Whether the events are intervals (an ``end_time`` column or a ``duration``)."""
        return self.end_time is not None or self.duration is not None

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
        if self.intervals:
            raise ConfigError(
                "source.edge",
                "an event is an interval (source.end_time, source.duration) or a pair of "
                "edges, not both",
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

    def _check_over(self) -> None:
        """``over`` a column, an expression, or a list of them (its tuple key)."""
        parts = self.over
        if isinstance(parts, (list, tuple)):
            if not parts:
                raise ConfigError("source.over", "must name at least one column, got []")
            for i, part in enumerate(parts):
                if not isinstance(part, str):
                    raise ConfigError(f"source.over[{i}]", f"must be a column name, got {part!r}")
                _check_computed(part, f"source.over[{i}]", "the substream key")
            set_field(self, "over", tuple_key(list(parts)))
        _check_computed(self.over, "source.over", "the substream key")

    @property
    def key_parts(self) -> tuple[str, ...] | None:
        """The columns (or expressions) of a substream key of several, else ``None``."""
        return key_parts(self.over)

    def __post_init__(self) -> None:
        check_path(self.path, "source.path", optional=True)
        for table in ("ordering", "punctuation"):
            set_field(self, table, overrides(getattr(self, table), f"source.{table}"))
        normalise_signed_duration(self, "shift", "source.shift")
        normalise_duration(self, "duration", "source.duration", allow_none=True, positive=True)
        check_choice(self.format, SOURCE_FORMATS, "source.format")
        self._check_spark_stream()
        if self.time_unit is not None:
            check_choice(self.time_unit, TIME_UNITS, "source.time_unit")
        _check_computed(self.timestamp_by, "source.timestamp_by", "the event's time")
        self._check_over()
        for name in (
            "arrival_time",
            "processing_time",
            "partition",
            "end_time",
            "edge",
            "edge_id",
        ):
            check_column(getattr(self, name), f"source.{name}")
        self._check_edges()
        if self.where is not None:
            _check_where(self.where)
        if self.end_time is not None and self.timestamp_by is None:
            raise ConfigError(
                "source.end_time", "needs source.timestamp_by (the column with each start time)"
            )
        if self.duration is not None and self.timestamp_by is None:
            raise ConfigError(
                "source.duration", "needs source.timestamp_by (the column with each start time)"
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


def _computed(value: str | None) -> bool:
    """Whether a column key's value is an expression (anything but a column name)."""
    return value is not None and not COLUMN_NAME.match(value)


def _expression(value: str | None, key: str) -> Expr | None:
    """The expression a column key computes with (semantics §1.4), ``None`` for a column."""
    return parse_expression(value, key) if _computed(value) else None  # type: ignore[arg-type]


def _fields(value: str | None) -> list[str]:
    """The record fields a column key reads: the column, or its expression's fields."""
    if _computed(value):
        return references(parse_expression(value))  # type: ignore[arg-type]
    return [] if value is None else [value]  # type: ignore[list-item]


def _check_computed(value: Any, key: str, what: str) -> None:
    """``key`` (``timestamp_by``, ``over``) is a column name, or an expression over the
    record's own fields: no join's ``<input>.<field>``, no ``System.Timestamp()`` (the
    time is computed from the record) or ``System.Input()``."""
    if value is None or (isinstance(value, str) and COLUMN_NAME.match(value)):
        return
    if not isinstance(value, str):
        raise ConfigError(key, f"must be a column name or an expression, got {value!r}")
    for ref in ref_nodes(parse_expression(value, key)):
        if ref == SYSTEM_TIMESTAMP or ref == EVENT_INPUT:
            raise ConfigError(
                key, f"{value!r} reads {ref.key}: {what} is computed from the event's own fields"
            )
        if ref.input is not None:
            raise ConfigError(
                key,
                f"{ref.key!r}: {what} is computed from the record's own fields; a nested "
                f"field is GETRECORDPROPERTYVALUE({ref.input}, '{ref.name}')",
            )


def _check_where(where: Any) -> None:
    """An input's ``where`` parses and reads the input's own fields (no join's
    ``<input>.<field>``) and the event's ``System.Timestamp()`` (semantics §11.20)."""
    if not isinstance(where, str):
        raise ConfigError(
            "source.where", f'expected a condition as text, such as "speed > 50", got {where!r}'
        )
    for ref in ref_nodes(parse_expression(where, "source.where")):
        if ref == EVENT_INPUT:
            raise ConfigError("source.where", "an input's where reads that input's events only")
        if ref.input is not None and ref != SYSTEM_TIMESTAMP:
            raise ConfigError(
                "source.where",
                f"{ref.key!r}: an input's where reads that input's own fields: write {ref.name!r}",
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
        check_path(self.path, "source.path", optional=False)
        check_choice(self.format, FILE_FORMATS, "source.format")

    @property
    def as_source(self) -> Source:
        """The table as a :class:`Source` (its path and format), for the file readers."""
        return Source(path=self.path, format=self.format)


_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")


def _reader_options(options: Any) -> tuple[tuple[str, str], ...]:
    """``[source.options]`` as sorted ``(key, text)`` pairs (booleans as ``true`` /
    ``false``, as Spark's options take them)."""
    if isinstance(options, tuple):
        options = dict(options)
    if not isinstance(options, dict):
        raise ConfigError("source.options", f"must be a table of reader options, got {options!r}")
    pairs = []
    for key, value in options.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif not isinstance(value, (str, int, float)):
            raise ConfigError(
                f"source.options.{key}", f"must be text, a number or a boolean, got {value!r}"
            )
        pairs.append((str(key), str(value)))
    return tuple(sorted(pairs))


def union_partition(name: str, partition: Any) -> str:
    """The job-wide id of partition ``partition`` of a union's input ``name``."""
    return f"{name}/{partition}"


def input_of(partition: Any) -> str:
    """The input a union's partition id (:func:`union_partition`) belongs to."""
    return str(partition).split("/", 1)[0]
