"""``[join]``: a temporal join of two inputs, or of a stream with reference data (semantics §7)."""

from __future__ import annotations

from dataclasses import dataclass

from sparktide.errors import ConfigError
from sparktide.expr import Expr, parse_expression
from sparktide.job.expressions import check_join_references, parse_text
from sparktide.job.values import check_choice, check_column, normalise_signed_duration, set_field

__all__ = ["JOIN_TYPES", "Join"]

#: The kinds of join: ``left`` (every left event, matched or not; semantics §7.9, §11.8).
JOIN_TYPES = ("inner", "left")


@dataclass(frozen=True)
class Join:
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
        (Stream Analytics' ``ON a.DeviceId = r.Id``), stored as a tuple.
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

    def __post_init__(self) -> None:
        for name in ("left", "right"):
            check_column(getattr(self, name), f"join.{name}", optional=False)
        if self.left == self.right:
            raise ConfigError("join.right", "must name another input than join.left")
        if isinstance(self.on, str) or not isinstance(self.on, (list, tuple)):
            raise ConfigError("join.on", f"must be a list of column names, got {self.on!r}")
        set_field(self, "on", tuple(_on_entry(entry) for entry in self.on))
        check_choice(self.type, JOIN_TYPES, "join.type")
        if self.condition is not None:
            condition = parse_text(self.condition, "join.condition")
            check_join_references(condition, self, "join.condition")
        if self.where is not None:
            check_join_references(parse_text(self.where, "join.where"), self, "join.where")
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
    def left_on(self) -> tuple[str, ...]:
        """The columns of ``left`` that ``on`` compares, in order."""
        return tuple(e if isinstance(e, str) else e[0] for e in self.on)

    @property
    def right_on(self) -> tuple[str, ...]:
        """The columns of ``right`` that ``on`` compares, in order."""
        return tuple(e if isinstance(e, str) else e[1] for e in self.on)

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


def _on_entry(entry: object) -> str | tuple[str, str]:
    """One ``on`` entry: a column name both sides hold, or a pair ``[left, right]`` of
    column names (a pair of one name is that name)."""
    if isinstance(entry, str):
        check_column(entry, "join.on", optional=False)
        return entry
    if isinstance(entry, (list, tuple)) and len(entry) == 2:
        for column in entry:
            check_column(column, "join.on", optional=False)
        left, right = entry
        return left if left == right else (left, right)  # type: ignore[return-value]
    raise ConfigError(
        "join.on",
        f'takes column names and [left, right] pairs, such as ["k", ["DeviceId", "Id"]]; '
        f"got {entry!r}",
    )


@dataclass
class _Bounds:
    low: int | str
    high: int | str
