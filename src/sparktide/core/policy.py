"""The ordering policy of semantics §3: early, late and out-of-order checks for one event."""

from __future__ import annotations

from dataclasses import dataclass

from sparktide.job import Ordering

__all__ = [
    "Judgement",
    "OrderingPolicy",
    "before_start_verdict",
    "early_verdict",
    "late_adjusted",
    "late_verdict",
    "out_of_order_verdict",
]

ACCEPTED = "accepted"
ADJUSTED = "adjusted"
DROPPED = "dropped"
DEAD_LETTERED = "dead_lettered"
SKIPPED = "skipped"


def before_start_verdict(arrival: int, read_point: int | None) -> bool:
    """Whether an event is skipped (semantics §12.2): it arrived before the read point of
    a run whose output starts later (``None``: everything is read)."""
    return read_point is not None and arrival < read_point


def early_verdict(event_time: int, arrival: int, early_arrival: int | None) -> bool:
    """Whether an event is early (semantics §3.2): its event time is ahead of its
    arrival time by more than the early tolerance ``early_arrival`` (``None``: no check)."""
    return early_arrival is not None and event_time - arrival > early_arrival


def late_verdict(event_time: int, arrival: int, late_arrival: int | None) -> bool:
    """Whether an event is late (semantics §3.3): its arrival time is ahead of its event
    time by more than the late tolerance ``late_arrival`` (``None``: no check)."""
    return late_arrival is not None and arrival - event_time > late_arrival


def late_adjusted(arrival: int, late_arrival: int) -> int:
    """A late event's adjusted timestamp (semantics §3.3): its arrival time minus the
    late tolerance."""
    return arrival - late_arrival


def out_of_order_verdict(timestamp: int, watermark: int) -> bool:
    """Whether an event is out of order (semantics §3.4): its timestamp (after the late
    rule) is below its timeline's watermark."""
    return timestamp < watermark


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on one event.

    Attributes
    ----------
    verdict
        ``accepted``, ``adjusted``, ``dropped``, ``dead_lettered`` or ``skipped``.
    timestamp
        The system timestamp when admitted, else ``None``.
    reasons
        Every reason that applied (``before_start``, ``early``, ``late``,
        ``out_of_order``).
    outcome
        For dropped or dead-lettered events, the reason that decided it.
    """

    verdict: str
    timestamp: int | None
    reasons: tuple[str, ...]
    outcome: str | None = None


class OrderingPolicy:
    """Judges events against a timeline's watermark (semantics §3 steps 2–4).

    Parameters
    ----------
    ordering
        The job's ``[ordering]`` table.
    arrival_mode
        The job has no ``timestamp_by``: every event is accepted at its arrival time.
    """

    __slots__ = (
        "arrival_mode",
        "early",
        "late",
        "late_drop",
        "ooo_action",
        "out_of_order",
        "read_point",
    )

    def __init__(self, ordering: Ordering, *, arrival_mode: bool = False) -> None:
        self.arrival_mode = arrival_mode
        self.early: int | None = ordering.early_arrival  # type: ignore[assignment]
        self.late: int | None = ordering.late_arrival  # type: ignore[assignment]
        self.late_drop = ordering.action == "drop"
        self.out_of_order: int | None = ordering.out_of_order  # type: ignore[assignment]
        self.ooo_action = ordering.out_of_order_action
        #: The arrival time before which events are skipped (semantics §12.2), if any
        self.read_point: int | None = None

    def judge(self, event_time: int, arrival: int, watermark: int) -> Judgement:
        """Judge an event with event time ``event_time`` and arrival time ``arrival``.

        ``watermark`` is the event's timeline watermark just before it, after the arrival
        clock took the event's own arrival time into account (step 1). In arrival-time
        mode the policy never triggers: the timestamp is the arrival time.
        The rules are :func:`early_verdict`, :func:`late_verdict` (with
        :func:`late_adjusted`) and :func:`out_of_order_verdict`.
        ``out_of_order = None`` means an unbounded tolerance behind the newest event, but
        the watermark stays a promise: an event below it is still out of order.
        An event that arrived before :attr:`read_point` is skipped first
        (:func:`before_start_verdict`).
        """
        if before_start_verdict(arrival, self.read_point):
            return Judgement(SKIPPED, None, ("before_start",), "before_start")
        if self.arrival_mode:
            return Judgement(ACCEPTED, arrival, ())
        if early_verdict(event_time, arrival, self.early):
            return Judgement(DROPPED, None, ("early",), "early")
        timestamp = event_time
        reasons: tuple[str, ...] = ()
        if self.late is not None and late_verdict(event_time, arrival, self.late):
            if self.late_drop:
                return Judgement(DROPPED, None, ("late",), "late")
            reasons = ("late",)
            timestamp = late_adjusted(arrival, self.late)
        if out_of_order_verdict(timestamp, watermark):
            reasons += ("out_of_order",)
            action = self.ooo_action
            if action == "adjust":
                timestamp = watermark
            elif action == "drop":
                return Judgement(DROPPED, None, reasons, "out_of_order")
            elif action == "dead_letter":
                return Judgement(DEAD_LETTERED, None, reasons, "out_of_order")
        verdict = ADJUSTED if timestamp != event_time else ACCEPTED
        return Judgement(verdict, timestamp, reasons)
