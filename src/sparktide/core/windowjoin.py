"""A join of an input with a window's records (semantics §7.12; Stream Analytics' "last
event in a window": ``WITH Last AS (SELECT MAX(Time) AS LastTime FROM Input GROUP BY
TumblingWindow(minute, 10)) SELECT ... FROM Input JOIN Last ON DATEDIFF(minute, Input,
Last) BETWEEN 0 AND 10 AND Input.Time = Last.LastTime``).

The window (``[window] name``) reads the events of every input but the join's ``left``
and, instead of writing its records, hands each one to the join as an event of the
input it names, at the window's end (its ``System.Timestamp()``). The join keeps and
matches as :class:`~sparktide.core.join.TemporalJoin` does, and writes its matches.
Each step of the job watermark first closes the windows it allows (their records join
the right side), then releases the matches it reaches.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from sparktide.core.join import TemporalJoin
from sparktide.core.outputs import window_result
from sparktide.core.records import InputRecord
from sparktide.core.sink import Admitted
from sparktide.core.windows import WindowOperator
from sparktide.job import Job, Window, input_of
from sparktide.time import parse_instant

__all__ = ["WindowJoin", "window_event"]


def window_event(name: str, record: dict[str, Any], window: Window) -> Admitted:
    """A window's ``record`` as an event of the input ``name``: at the window's end, its
    fields the record's but ``type`` and ``emitted_at``; placed, among the window records
    of one end, by the window's start, then its grouping values' JSON text."""
    own = window.own_fields
    fields = {k: v for k, v in record.items() if k not in ("type", own["emitted_at"])}
    start = parse_instant(record[own["window_start"]])
    end = parse_instant(record[own["window_end"]])
    values = [record.get(g) for g in window.group_by]
    groups = json.dumps(values, ensure_ascii=False, separators=(",", ":"))
    event = InputRecord(0, fields, partition=f"{name}/0", arrival_time=start, file=groups, line=0)
    return Admitted(event, end, None)


class WindowJoin(TemporalJoin):
    """The sink of a job whose ``[join]`` reads the window's records as its ``right``.

    Parameters
    ----------
    job
        The job (its ``join``, and its ``window`` with a ``name``).
    emit
        Called with each released ``event`` record and the processing time of its release.
    """

    def __init__(self, job: Job, emit: Callable[[dict[str, Any], int], None]) -> None:
        super().__init__(job, emit)
        window = job.window
        assert window is not None and window.name is not None
        self._name = window.name
        self._window = window
        self._having = window.having_expression
        self._windowless = dataclasses.replace(job, select=(), select_star=None)
        self.windows = WindowOperator(job, self._joined, shared_floor=False)
        #: The closed windows ``having`` kept from the join.
        self.windows_filtered = 0

    def admit(self, event: Admitted, watermark: int, now: int) -> tuple[int, int] | None:
        """A ``left`` event meets the window records kept (and is kept); any other goes
        into its windows (their bounds when all are closed already). Then the watermark
        closes windows and releases matches."""
        bounds = None
        if input_of(event.record.partition) == self._join.left:
            self.keep(event)
        else:
            bounds = self.windows.admit(event, watermark, now)
        self.advance(None, watermark, now)
        return bounds

    def advance(self, scope: Any, watermark: int, now: int) -> None:
        """Close the windows ``watermark`` allows (their records join), then release the
        matches it reaches."""
        self.windows.advance(None, watermark, now)
        super().advance(scope, watermark, now)

    def flush(self, now: int) -> None:
        """End of input: every window closed and joined, then every match released."""
        self.windows.flush(now)
        super().flush(now)

    def delivered(self, scope: Any, now: int) -> None:
        """The windows' idle timers (none: ``idle_timeout`` is refused here)."""

    def open_windows(self) -> int:
        """The windows open now."""
        return self.windows.open_windows()

    def _joined(self, record: dict[str, Any]) -> None:
        """A closed window's record that passes ``having`` meets the ``left`` events kept."""
        kept = window_result(self._windowless, record, self._having)
        if kept is None:
            self.windows_filtered += 1
            return
        self.keep(window_event(self._name, kept, self._window))
