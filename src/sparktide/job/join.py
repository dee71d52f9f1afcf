"""``[join]``: a temporal join of two inputs, or of a stream with reference data (semantics §7)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktide.errors import ConfigError
from sparktide.expr import Expr, parse_expression, ref_nodes
from sparktide.job.expressions import check_join_references, parse_text
from sparktide.job.values import (
    check_choice,
    check_column,
    check_column_path,
    normalise_signed_duration,
    set_field,
)

__all__ = ["JOIN_TYPES", "Join", "TableJoin", "check_table_joins", "claim_table"]

#: The kinds of join: ``left`` (every left event, matched or not; semantics §7.9, §11.8).
JOIN_TYPES = ("inner", "left")


class _OnColumns:
    """``left_on`` and ``right_on`` of a join's ``on`` entries (names and pairs)."""

    on: tuple[str | tuple[str, str], ...]

    @property
    def left_on(self) -> tuple[str, ...]:
        """The columns of ``left`` that ``on`` compares, in order."""
        return tuple(e if isinstance(e, str) else e[0] for e in self.on)

    @property
    def right_on(self) -> tuple[str, ...]:
        """The columns of ``right`` that ``on`` compares, in order."""
        return tuple(e if isinstance(e, str) else e[1] for e in self.on)


@dataclass(frozen=True)
class Join(_OnColumns):
    """A temporal join of two inputs of a union (semantics §7; Stream Analytics' ``JOIN … ON …
    AND DATEDIFF(unit, left, right) BETWEEN low AND high``).

    Parameters
    ----------
    left, right
        The two inputs (``[inputs.<name>]``) joined.
    on
        Columns whose values must be equal on both sides (a missing or null value never
        matches, as in SQL; numbers compare by value, ``true`` is not ``1``): a name both
        sides hold, or a pair ``[left column, right column]`` of differently named ones
        (Stream Analytics' ``ON a.DeviceId = r.Id``), stored as a tuple. A name with
        dots is a value inside a record (``IoTHub.ConnectionDeviceId``; null when a part
        is missing or no record).
    between
        ``[low, high]``: a pair matches when ``right.timestamp − left.timestamp`` lies
        within it, both ends included; durations, negative allowed. Required for a join
        of two streams; absent when ``right`` is reference data (:class:`Reference`),
        which has no time.
    type
        ``inner`` (default): only matches are released. ``left`` (Stream Analytics'
        ``LEFT OUTER JOIN``): with reference data an event with no matching row is
        released once, its right side ``null``; of two streams a left event no right
        event matched is written once, its right side ``null``, at its timestamp plus
        ``between``'s high end (semantics §7.9).
    condition
        A condition over both records' fields (``<input>.<field>``) and the match's
        ``timestamp`` that a pair must also meet to match: the rest of Stream Analytics'
        ``ON``, and the terms of its ``WHERE`` over the pair (semantics §11.8). A pair for
        which it is not true (false or null) is no match; under ``left`` an event that
        meets no row then is released once with ``null``.
    then
        With reference data (``[[join.then]]``): further tables that the rows of
        ``right`` meet before any event does (:class:`TableJoin`, semantics §11.8,
        *Further tables*), in order. Of two streams: tables each match meets by the
        fields of one of its events (semantics §11.26).
    where
        With reference data, or with ``type = "left"``: a condition over each released
        record's pair (the event's fields, the row's or the right event's, ``timestamp``)
        that the record must meet to be written, once the event has met the table or
        the other input: Stream Analytics' ``WHERE`` over a ``LEFT OUTER JOIN``
        (semantics §7.9, §11.8). An event no row met has a null right side
        here (``devices.model IS NULL`` keeps exactly those); a record for which it is
        not true (false or null) is not written.
    """

    left: str
    right: str
    on: tuple[str | tuple[str, str], ...] = ()
    between: tuple[int | str, int | str] | None = None
    type: str = "inner"
    condition: str | None = None
    where: str | None = None
    then: tuple[TableJoin, ...] = ()

    def __post_init__(self) -> None:
        for name in ("left", "right"):
            check_column(getattr(self, name), f"join.{name}", optional=False)
        if self.left == self.right:
            raise ConfigError("join.right", "must name another input than join.left")
        set_field(self, "on", _on_entries(self.on, "join.on"))
        check_choice(self.type, JOIN_TYPES, "join.type")
        set_field(self, "then", _table_joins(self.then))
        if self.condition is not None:
            condition = parse_text(self.condition, "join.condition")
            check_join_references(condition, self, "join.condition")
        if self.where is not None:  # (and the tables a join of two streams meets: §11.26)
            where = parse_text(self.where, "join.where")
            check_join_references(where, self, "join.where", self.stream_tables)
        bounds = self.between
        if bounds is None:
            return
        if isinstance(bounds, str) or not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            raise ConfigError(
                "join.between", f'must be [low, high], e.g. ["0s", "15m"]; got {bounds!r}'
            )
        holder = _Bounds(*bounds)
        normalise_signed_duration(holder, "low", "join.between")
        normalise_signed_duration(holder, "high", "join.between")
        if holder.low > holder.high:  # type: ignore[operator]
            raise ConfigError("join.between", f"low must not be above high, got {bounds!r}")
        set_field(self, "between", (holder.low, holder.high))

    @property
    def stream_tables(self) -> tuple[str, ...]:
        """The tables of ``[[join.then]]`` met by the fields of ``left`` or ``right``, or
        by the rows of such a table: of a join with reference data, those each event
        meets by its own fields; of a join of two streams, every one (semantics
        §11.26)."""
        met: list[str] = []
        for step in self.then:
            if step.left in (self.left, self.right) or step.left in met:
                met.append(step.right)
        return tuple(met)

    def on_of(self, side: str) -> tuple[str, ...]:
        """The columns input ``side`` (``left`` or ``right``, by name) joins on."""
        return self.left_on if side == self.left else self.right_on

    @property
    def condition_expression(self) -> Expr | None:
        """The parsed ``condition``, if any."""
        if self.condition is None:
            return None
        return parse_expression(self.condition, "join.condition")

    @property
    def where_expression(self) -> Expr | None:
        """The parsed ``where``, if any."""
        if self.where is None:
            return None
        return parse_expression(self.where, "join.where")


@dataclass(frozen=True)
class TableJoin(_OnColumns):
    """One more table of reference data met by the rows of a join's table
    (``[[join.then]]``; Stream Analytics' second ``JOIN`` of reference data, ``FROM s JOIN
    devices d ON s.DeviceId = d.DeviceId JOIN sites x ON d.SiteId = x.SiteId``;
    semantics §11.8, *Further tables*).

    The tables meet each other once, when the run reads them, before any event: each
    row of ``left`` meets the rows of ``right`` as an event meets a table (equal ``on``
    values, ``condition`` true), and the row met becomes the member ``right`` of the
    join's table row (``Devices.Sites``; a field of that name is replaced), one row per
    row met, in both tables' order. Events then meet those rows.

    Parameters
    ----------
    left
        A table the rows already hold: ``[join] right``, or the ``right`` of an earlier
        ``[[join.then]]``; or the stream (``[join] left``): each event then meets the
        table by its own fields (``on``: the event's columns and the table's), as it
        meets ``[join] right``, and the row met is the member ``right`` of the row of
        ``[join] right`` it meets (of an empty one where it meets none under a left
        join).
    right
        Another input with ``reference = true``.
    on
        As ``[join] on``: ``left``'s columns and ``right``'s, equal values.
    type
        ``inner`` (default): a row of ``[join] right`` that meets no row of ``right`` is
        dropped. ``left``: it is kept once, its member ``right`` null.
    condition
        A condition over the tables' fields (``<table>.<field>`` of ``[join] right``,
        of ``right`` and of the earlier tables; of ``right`` only when ``left`` is the
        stream) that a pair must also meet.
    """

    left: str
    right: str
    on: tuple[str | tuple[str, str], ...] = ()
    type: str = "inner"
    condition: str | None = None
    key: str = field(default="join.then", compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("left", "right"):
            check_column(getattr(self, name), f"{self.key}.{name}", optional=False)
        if self.left == self.right:
            raise ConfigError(f"{self.key}.right", "must name another table than its left")
        set_field(self, "on", _on_entries(self.on, f"{self.key}.on"))
        check_choice(self.type, JOIN_TYPES, f"{self.key}.type")
        if self.condition is not None:
            parse_text(self.condition, f"{self.key}.condition")

    @property
    def condition_expression(self) -> Expr | None:
        """The parsed ``condition``, if any."""
        if self.condition is None:
            return None
        return parse_expression(self.condition, f"{self.key}.condition")


def check_table_joins(join: Join, tables: list[str]) -> None:
    """Refuse ``[[join.then]]`` entries that do not chain the job's reference data
    ``tables``: each ``left`` a table the rows already hold, each ``right`` another
    table, every table joined once, and each ``condition`` reading those tables only.

    Raises
    ------
    ConfigError
        Naming the entry's key (``join.then[1].left``) or the unjoined table.
    """
    held = [join.right]
    by_event: list[str] = []  # (tables each event meets by its own fields)
    for step in join.then:
        if step.left in by_event:
            raise ConfigError(
                f"{step.key}.left",
                f"{step.left!r} is met by each event (its left is {join.left!r}): a table "
                "met by an event's fields is not joined further yet",
            )
        if step.left != join.left and step.left not in held:
            raise ConfigError(
                f"{step.key}.left",
                f"must be a table the rows already hold ({', '.join(held)}), or the stream "
                f"{join.left!r}, got {step.left!r}",
            )
        claim_table(step, tables, held)
        readable = [step.right] if step.left == join.left else held
        if step.left == join.left:
            by_event.append(step.right)
        expr = step.condition_expression
        for ref in ref_nodes(expr) if expr is not None else ():
            if ref.input not in readable:
                raise ConfigError(
                    f"{step.key}.condition",
                    f"{ref.key!r}: reads the tables' fields as <table>.<field> "
                    f"({', '.join(readable)})",
                )
    unjoined = [t for t in tables if t not in held]
    if unjoined:
        raise ConfigError(
            f"inputs.{unjoined[0]}.reference",
            f"reference data is joined: add a [[join.then]] with right = {unjoined[0]!r} "
            f"(a job meets one table, {join.right!r}, and the tables its rows meet)",
        )


def claim_table(step: TableJoin, tables: list[str], held: list[str]) -> None:
    """Hold ``step.right`` among the tables joined so far (``held``); refuse it unless it
    is one of the job's ``tables`` not joined yet."""
    if step.right not in tables or step.right in held:
        unused = [t for t in tables if t not in held]
        raise ConfigError(
            f"{step.key}.right",
            f"must be reference data not joined yet ({', '.join(unused) or 'none left'}), "
            f"got {step.right!r}",
        )
    held.append(step.right)


def _table_joins(entries: object) -> tuple[TableJoin, ...]:
    """``[[join.then]]`` as :class:`TableJoin` values, each error naming its entry."""
    if isinstance(entries, (str, dict)) or not isinstance(entries, (list, tuple)):
        raise ConfigError("join.then", f"must be a list of tables ([[join.then]]), got {entries!r}")
    out = []
    for i, entry in enumerate(entries):
        key = f"join.then[{i}]"
        if isinstance(entry, TableJoin):
            out.append(entry)
            continue
        if not isinstance(entry, dict):
            raise ConfigError(key, f"must be a table (left, right, on, ...), got {entry!r}")
        unknown = sorted(set(entry) - {"left", "right", "on", "type", "condition"})
        if unknown:
            raise ConfigError(f"{key}.{unknown[0]}", "is not a key of [[join.then]]")
        for required in ("left", "right"):
            if required not in entry:
                raise ConfigError(f"{key}.{required}", "is required")
        out.append(TableJoin(**entry, key=key))
    return tuple(out)


def _on_entries(entries: object, key: str) -> tuple[str | tuple[str, str], ...]:
    """``on`` (of ``[join]`` or a ``[[join.then]]`` at ``key``) as names and pairs."""
    if isinstance(entries, str) or not isinstance(entries, (list, tuple)):
        raise ConfigError(key, f"must be a list of column names, got {entries!r}")
    return tuple(_on_entry(entry, key) for entry in entries)


def _on_entry(entry: object, key: str) -> str | tuple[str, str]:
    """One ``on`` entry: a column name both sides hold, or a pair ``[left, right]`` of
    column names (a pair of one name is that name); a name with dots is a value inside
    a record (``IoTHub.ConnectionDeviceId``)."""
    if isinstance(entry, str):
        check_column_path(entry, key)
        return entry
    if isinstance(entry, (list, tuple)) and len(entry) == 2:
        for column in entry:
            check_column_path(column, key)
        left, right = entry
        return left if left == right else (left, right)  # type: ignore[return-value]
    raise ConfigError(
        key,
        f'takes column names and [left, right] pairs, such as ["k", ["DeviceId", "Id"]]; '
        f"got {entry!r}",
    )


@dataclass
class _Bounds:
    low: int | str
    high: int | str
