"""Arrival clocks and timeline watermarks (semantics §4, §7).

    W(τ) = max( newest(τ) − O ,  A(τ) − L ,  cti(τ) )

A timeline's watermark never decreases. For partition timelines A is the partition's
own arrival clock; for substreams A is the arrival clock of the whole input. ``cti`` is
the largest CTI the timeline has seen (explicit or generated); with
``[punctuation] watermark = "cti"`` the first two terms are absent.
"""

from __future__ import annotations

from typing import Any

from sparktide.core.instants import NEG_INF
from sparktide.time import SECOND

__all__ = [
    "NEVER_SEEN_LAG",
    "PartitionClock",
    "Timeline",
    "idle_estimate",
    "newest_timestamp",
    "timeline_watermark",
]

#: A partition that never delivered an event is estimated this far behind processing time.
NEVER_SEEN_LAG = 5 * SECOND


def idle_estimate(seen: bool, last_arrival: int, last_processing: int, now: int) -> int:
    """The arrival clock a partition that delivers nothing is estimated at, at processing
    time ``now`` (semantics §4.3): its last arrival time plus the processing time since
    its last delivery, or ``now`` minus :data:`NEVER_SEEN_LAG` if it never delivered.
    (The clock takes the estimate only if it is ahead: :meth:`PartitionClock.estimate`.)"""
    if seen:
        return last_arrival + (now - last_processing)
    return now - NEVER_SEEN_LAG


def newest_timestamp(newest: int, timestamp: int) -> int:
    """A timeline's newest timestamp once an event with system timestamp ``timestamp``
    is admitted (semantics §3.5): the larger of the two."""
    return timestamp if timestamp > newest else newest


def timeline_watermark(
    watermark: int,
    newest: int,
    arrival_clock: int,
    out_of_order: int | None,
    late_arrival: int | None,
) -> int:
    """A timeline's watermark refreshed (semantics §4.1): ``max(W, newest − O, A − L)``,
    a term absent where its tolerance is ``None``; it never moves backwards."""
    if out_of_order is not None and newest - out_of_order > watermark:
        watermark = newest - out_of_order
    if late_arrival is not None and arrival_clock - late_arrival > watermark:
        watermark = arrival_clock - late_arrival
    return watermark


class PartitionClock:
    """The arrival clock of one input partition, with its idle estimate.

    Attributes
    ----------
    arrival
        A: the largest arrival time seen or estimated (``NEG_INF`` before any).
    last_arrival, last_processing
        Arrival time and processing time of the last event the partition delivered.
    """

    __slots__ = ("arrival", "last_arrival", "last_processing", "pid", "seen")

    def __init__(self, pid: Any) -> None:
        self.pid = pid
        self.arrival = NEG_INF
        self.last_arrival = NEG_INF
        self.last_processing = NEG_INF
        self.seen = False

    def deliver(self, arrival: int, processing: int) -> None:
        """Step 1 of semantics §3: an event of this partition arrived."""
        if arrival > self.arrival:
            self.arrival = arrival
        self.last_arrival = arrival
        self.last_processing = processing
        self.seen = True

    def estimate(self, now: int) -> bool:
        """Idle estimate at an observation instant where the partition delivered nothing.

        Returns True when the arrival clock moved.
        """
        guess = idle_estimate(self.seen, self.last_arrival, self.last_processing, now)
        if guess > self.arrival:
            self.arrival = guess
            return True
        return False


class Timeline:
    """A unit that owns a watermark: one partition, or one substream key.

    Parameters
    ----------
    key
        The partition id or substream key.
    out_of_order
        O, or ``None`` when the out-of-order check is disabled (the term is then absent).
    late_arrival
        L, or ``None`` when the late check is disabled (the term is then absent).
    """

    __slots__ = ("cti", "events", "key", "late_arrival", "newest", "out_of_order", "watermark")

    def __init__(self, key: Any, out_of_order: int | None, late_arrival: int | None) -> None:
        self.key = key
        self.newest = NEG_INF
        self.watermark = NEG_INF
        self.out_of_order = out_of_order
        self.late_arrival = late_arrival
        self.cti = NEG_INF  # the largest CTI seen (explicit or generated)
        self.events = 0  # events judged on this timeline (generated CTIs count them)

    def refresh(self, arrival_clock: int) -> int:
        """Recompute W from newest and the arrival clock A (:func:`timeline_watermark`)."""
        self.watermark = timeline_watermark(
            self.watermark, self.newest, arrival_clock, self.out_of_order, self.late_arrival
        )
        return self.watermark

    def punctuate(self, instant: int) -> bool:
        """A CTI at ``instant``: no later event may start before it. True if W moved."""
        if instant > self.cti:
            self.cti = instant
        return self.advance_to(instant)

    def admit(self, timestamp: int) -> None:
        """Step 5 of semantics §3: an admitted event's system timestamp
        (:func:`newest_timestamp`)."""
        self.newest = newest_timestamp(self.newest, timestamp)

    def advance_to(self, instant: int) -> bool:
        """Force the watermark up to ``instant`` (idle timeout, flush). True if it moved."""
        if instant > self.watermark:
            self.watermark = instant
            return True
        return False
