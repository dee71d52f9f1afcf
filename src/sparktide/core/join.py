"""Temporal joins of two inputs (semantics §7; Stream Analytics' ``JOIN … DATEDIFF … BETWEEN``).

A sink in place of ordered release: every admitted event of either side is kept, and
matched, when it is admitted, against the other side's events kept so far — the same
``on`` values, and ``right.timestamp − left.timestamp`` within ``between`` — so each
pair is found exactly once, by whichever of the two came later. A match takes the later
timestamp of the two; matches are released in the order (timestamp, the left event's
place in arrival order, the right one's) once the job watermark
(the minimum over both inputs' partitions) has reached it, and an inner join never has
to take one back. The reference engine keeps every event (obviously correct); the Spark
engine forgets those no future event can match.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from sparktide.core.records import jsonable, time_or_none, value_at, value_key
from sparktide.core.release import OrderedRelease, release_ready
from sparktide.core.sink import Admitted, Windowless
from sparktide.expr import Expr, evaluate, value_of
from sparktide.job import Job, Join, input_of

__all__ = [
    "ReferenceJoin",
    "TemporalJoin",
    "join_condition_met",
    "join_key",
    "join_where_met",
    "pair_meets",
]


def join_key(fields: dict[str, Any], columns: tuple[str, ...]) -> tuple[Any, ...] | None:
    """The values an event joins on (:func:`value_at`), or ``None`` when one is missing
    or null (such an event matches nothing). Numbers compare by value (``3`` is
    ``3.0``), ``true`` is not ``1``; lists and objects by their text."""
    values = [value_at(fields, column) for column in columns]
    if any(value is None for value in values):
        return None
    return tuple(value_key(value) for value in values)


def join_condition_met(
    join: Join, left: dict[str, Any] | None, right: dict[str, Any] | None, timestamp: int
) -> bool:
    """Whether the pair of records ``left`` and ``right``, a match at ``timestamp``, meets
    ``join.condition`` (semantics §11.8): true when there is none; a condition that is
    false or null (a failed ``CAST`` in it is null) is no match. Its ``timestamp`` is
    the match's time as records write it."""
    return pair_meets(join, join.condition_expression, left, right, timestamp)


def join_where_met(
    join: Join, left: dict[str, Any], right: dict[str, Any] | None, timestamp: int
) -> bool:
    """Whether a released record of a join with reference data, the event ``left`` and
    the row ``right`` it met (``None``: no row), at ``timestamp``, meets ``join.where``
    (semantics §11.8): true when there is none; false or null is not written. Without
    a row, the row's fields read null."""
    return pair_meets(join, join.where_expression, left, right, timestamp)


def pair_meets(
    join: Join,
    condition: Expr | None,
    left: dict[str, Any] | None,
    right: dict[str, Any] | None,
    timestamp: int,
    tables: dict[str, dict[str, Any] | None] | None = None,
) -> bool:
    """Whether ``condition`` over the pair of records ``left`` and ``right``
    (``<input>.<field>``; with ``tables``, the rows a join of two streams met, by table,
    semantics §11.26) and the match's ``timestamp`` is true; true when it is ``None``."""
    if condition is None:
        return True
    sides = {join.left: left or {}, join.right: right or {}}
    sides.update({name: row or {} for name, row in (tables or {}).items()})

    def lookup(key: str) -> Any:
        if key == "timestamp":
            return time_or_none(timestamp)
        side, name = key.split(".", 1)
        return value_of(sides[side].get(name))

    def present(key: str) -> bool:
        if key == "timestamp":
            return True
        side, name = key.split(".", 1)
        return name in sides[side]

    return evaluate(condition, lookup, present=present) is True


class TemporalJoin(Windowless):
    """The join sink of a job with ``[join]``.

    Under ``type = "left"`` (``LEFT OUTER JOIN``, semantics §7.9) a left event that no
    right event matched is written once, ``right: null``, at the latest time a match
    could have had (its timestamp plus ``between``'s high end), once the job watermark
    has passed that time (a right event at the watermark could still match it); in the
    release order it comes before the matches of a later left event at that time.

    Parameters
    ----------
    job
        The job (its ``join`` and the names of its two inputs).
    emit
        Called with each released ``event`` record (``{left: {...}, right: {...},
        "timestamp": ...}``) and the processing time of its release.
    """

    def __init__(self, job: Job, emit: Callable[[dict[str, Any], int], None]) -> None:
        join = job.join
        assert join is not None
        self._join = join
        self._low, self._high = join.between  # type: ignore[misc]
        self._emit = emit
        self._kept: dict[str, dict[tuple[Any, ...], list[Admitted]]] = {
            join.left: {},
            join.right: {},
        }
        self._held: list[tuple[Any, ...]] = []
        #: The tables each match meets (semantics §11.26), else ``None``
        self._tables = _stream_tables(job) if join.then else None
        # CTIs commit strictly before them; a left join writes a time's records together
        # once the watermark has passed it (semantics §7.9)
        self._strict = job.punctuation is not None or join.type == "left"
        #: Under a left join: the left events no match may yet reach, by the time it
        #: would have (a heap), and those a match reached (by identity).
        self._open: list[tuple[int, tuple[Any, ...], Admitted]] = []
        self._matched: set[int] = set()
        self.held = 0
        self.matches = 0

    def admit(self, event: Admitted, watermark: int, now: int) -> None:
        """Match ``event`` against the other side's events; keep it; release what the job
        watermark allows."""
        self.keep(event)
        self.advance(None, watermark, now)

    def keep(self, event: Admitted) -> None:
        """Match ``event`` against the other side's events kept so far, and keep it."""
        join = self._join
        side = input_of(event.record.partition)
        key = join_key(event.record.fields or {}, join.on_of(side))
        if key is not None:
            other = join.right if side == join.left else join.left
            for kept in self._kept[other].get(key, ()):
                left, right = (event, kept) if side == join.left else (kept, event)
                if self._low <= right.timestamp - left.timestamp <= self._high:  # type: ignore[operator]
                    at = max(left.timestamp, right.timestamp)
                    if join_condition_met(join, left.record.fields, right.record.fields, at):
                        self._hold(left, right)
                        self._matched.add(id(left))
            self._kept[side].setdefault(key, []).append(event)
        if join.type == "left" and side == join.left:  # (its key may be null: no match)
            latest = event.timestamp + self._high  # type: ignore[operator]
            heapq.heappush(self._open, (latest, _arrival(event), event))

    def _hold(self, left: Admitted, right: Admitted) -> None:
        timestamp = max(left.timestamp, right.timestamp)
        order = (timestamp, _arrival(left), _arrival(right))
        heapq.heappush(self._held, (order, left, right))
        self.held += 1
        self.matches += 1

    def advance(self, scope: Any, watermark: int, now: int) -> None:
        """The job watermark reached ``watermark``: release the matches it allows (and,
        under a left join, the left events it leaves without a match)."""
        self.unmatched_left(watermark)
        while self._held and release_ready(self._held[0][0][0], watermark, strict=self._strict):
            order, left, right = heapq.heappop(self._held)
            self._release(order[0], left, right, now)

    def advance_floor(self, floor: int, now: int) -> None:
        """Joins have no substreams."""

    def unmatched_left(self, watermark: int | None) -> None:
        """Hold, to be written with ``right: null``, each left event whose latest match
        time lies below ``watermark`` (``None``: every one) that no match reached."""
        while self._open and (watermark is None or self._open[0][0] < watermark):
            latest, arrival, left = heapq.heappop(self._open)
            if id(left) not in self._matched:
                heapq.heappush(self._held, ((latest, arrival, ()), left, None))
                self.held += 1
            self._matched.discard(id(left))

    def flush(self, now: int) -> None:
        """End of input: release every held match, in order."""
        self.unmatched_left(None)
        while self._held:
            order, left, right = heapq.heappop(self._held)
            self._release(order[0], left, right, now)

    def _release(self, timestamp: int, left: Admitted, right: Admitted | None, now: int) -> None:
        self.held -= 1
        join = self._join
        fields = left.record.fields or {}
        other = None if right is None else (right.record.fields or {})
        if self._tables is None:
            if join_where_met(join, fields, other, timestamp):  # (a left join's where)
                self._write(timestamp, left, right, now)
            return
        from sparktide.core.jointables import tables_met

        combinations = tables_met(self._tables, join.left, fields, other)  # (§11.26)
        for place, rows in enumerate(combinations):
            if pair_meets(join, join.where_expression, fields, other, timestamp, rows):
                self._write(timestamp, left, right, now, rows, place)

    def _write(
        self,
        timestamp: int,
        left: Admitted,
        right: Admitted | None,
        now: int,
        rows: dict[str, dict[str, Any] | None] | None = None,
        place: int = 0,
    ) -> None:
        """Write the released match of ``left`` and ``right`` (``None``: a left join's
        lone left event) at ``timestamp``, with the table ``rows`` it met (semantics
        §11.26; ``place``: the combination's among the match's); a window over the
        matches takes it instead (:class:`sparktide.core.joinwindow.JoinedWindows`)."""
        join = self._join
        fields = left.record.fields or {}
        other = None if right is None else (right.record.fields or {})
        record = {
            "type": "event",
            join.left: jsonable(fields),
            join.right: None if other is None else jsonable(other),
            **{name: None if row is None else jsonable(row) for name, row in (rows or {}).items()},
            "timestamp": time_or_none(timestamp),
        }
        self._emit(record, now)


def _stream_tables(job: Job) -> Any:
    """The tables a join of two streams meets (:mod:`sparktide.core.jointables`, which
    reads this module's keys)."""
    from sparktide.core.jointables import stream_tables

    return stream_tables(job)


def _arrival(event: Admitted) -> tuple[Any, ...]:
    """An event's place in arrival order: arrival time, file, line (as on Spark)."""
    record = event.record
    return (record.arrival_time, record.file or "", record.line or 0, record.seq)


class ReferenceJoin(OrderedRelease):
    """The sink of a job joining its stream with reference data (``[join]`` whose
    ``right`` is ``[inputs.<name>] reference = true``; Stream Analytics' reference-data
    JOIN).

    Admitted events are released as by :class:`~sparktide.core.release.OrderedRelease`
    (timestamp, then arrival order, once the governing watermark reaches them); each
    released event meets the table's rows with equal ``on`` values (compared as
    :func:`join_key` does) and is written once per such row, in the table's order, as
    ``{left: {...}, right: {...}, timestamp}`` at the event's timestamp. An event that
    meets no row is written once with ``right: null`` under ``type = "left"``, and not at
    all under ``inner``. The table has no time: it never holds the stream back.

    Parameters
    ----------
    job
        The job (its ``join`` and its one ``references`` table).
    emit
        Called with each written ``event`` record and the processing time of its release.
    shared_floor
        True for substreams (see :class:`~sparktide.core.release.OrderedRelease`).
    """

    def __init__(
        self, job: Job, emit: Callable[[dict[str, Any], int], None], *, shared_floor: bool
    ) -> None:
        from sparktide.core.lookup import ReferenceTable

        join = job.join
        assert join is not None
        self._join = join
        self._table = ReferenceTable(job)
        self._write = emit
        super().__init__(self._meet, shared_floor=shared_floor, strict=job.punctuation is not None)

    def _meet(self, event: Admitted, now: int) -> None:
        join = self._join
        fields = event.record.fields or {}
        rows = self._table.rows_met(fields, event.timestamp)
        for row in rows:
            if not join_where_met(join, fields, row, event.timestamp):
                continue
            record = {
                "type": "event",
                join.left: jsonable(fields),
                join.right: jsonable(row) if row is not None else None,
                "timestamp": time_or_none(event.timestamp),
            }
            self._write(record, now)
