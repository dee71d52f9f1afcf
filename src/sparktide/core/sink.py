"""What the ordering stage hands on: admitted events, and the sink interface they go to."""

from __future__ import annotations

from typing import Any, Protocol

from sparktide.core.records import InputRecord

__all__ = ["Admitted", "Sink", "Windowless"]


class Admitted:
    """An event that passed the ordering policy.

    Attributes
    ----------
    record
        The input record.
    timestamp
        Its system timestamp.
    scope
        Whose watermark governs its results: ``None`` (the job), a partition id or a
        substream key.
    done
        Set once the event has been released (ordered output).
    windows
        The windows it joined, as ``(start, end)`` pairs (for ``--explain``).
    part
        Its place among the events ``[apply]`` made of one input record (``0``
        otherwise): after the record's own place, what orders them.
    """

    __slots__ = ("done", "part", "record", "scope", "timestamp", "windows")

    def __init__(self, record: InputRecord, timestamp: int, scope: Any, part: int = 0) -> None:
        self.record = record
        self.part = part
        self.timestamp = timestamp
        self.scope = scope
        self.done = False
        self.windows: list[tuple[int, int]] | None = None


class Sink(Protocol):
    """Where admitted events go: ordered release, or a window operator.

    ``admit`` returns ``None`` when the event is taken, or the ``(start, end)`` of the
    last window it would have joined when all of them are already closed.
    """

    held: int

    def admit(
        self, event: Admitted, watermark: int, now: int
    ) -> tuple[int, int] | None: ...  # pragma: no cover - protocol

    def advance(self, scope: Any, watermark: int, now: int) -> None: ...  # pragma: no cover

    def advance_floor(self, floor: int, now: int) -> None: ...  # pragma: no cover

    def flush(self, now: int) -> None: ...  # pragma: no cover

    def next_timer(self) -> int | None: ...  # pragma: no cover

    def delivered(self, scope: Any, now: int) -> None: ...  # pragma: no cover

    def open_windows(self) -> int: ...  # pragma: no cover

    def fire_timers(self, now: int) -> None: ...  # pragma: no cover


class Windowless:
    """The parts of the :class:`Sink` interface a sink without windows has nothing to do
    for (ordered release, joins): no deliveries to track, no windows, no timers."""

    def delivered(self, scope: Any, now: int) -> None:
        """Nothing tracks deliveries."""

    def open_windows(self) -> int:
        """No windows."""
        return 0

    def next_timer(self) -> int | None:
        """No timers."""
        return None

    def fire_timers(self, now: int) -> None:
        """No timers."""
