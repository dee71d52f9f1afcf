"""What the live page and ``/metrics`` show: the metrics records a job wrote, as they come.

:class:`LiveState` is fed each micro-batch's metrics record (the ``on_metrics`` callback
of :func:`sparktide.spark.start`, or :class:`MetricsFollower` reading a metrics
directory) and keeps the newest record and a bounded history. Every number it serves is
a field of a record: nothing is computed a second time. Feeding costs the batch one
append under a lock; times are parsed when the page asks for them.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from sparktide.time import parse_instant
from sparktide.ui.deadletters import DeadLetters

__all__ = ["CHART_PARTITIONS", "HISTORY", "LiveState", "point_of"]

#: Metrics records kept for the page's charts (the newest; older ones are dropped).
HISTORY = 600
#: Partitions whose lines the chart draws (the first of each record; the table has all).
CHART_PARTITIONS = 8
#: Diagnostics kept for the page (the newest).
DIAGNOSTICS = 50
#: The verdict counts of a batch the page charts, from the record's ``this_batch``.
_BATCH_COUNTS = ("input", "admitted", "adjusted", "late", "early", "out_of_order")


def _instant(text: str | None) -> int | None:
    """An ISO time of a record as microseconds (``None`` stays ``None``)."""
    return None if text is None else parse_instant(text)


def point_of(seq: int, record: dict[str, Any]) -> dict[str, Any]:
    """One record as a point of the page's charts: times in microseconds (the clocks of
    the first :data:`CHART_PARTITIONS` partitions), the batch's own counts
    (``this_batch``; dropped and dead-lettered summed over their reasons)."""
    this, parts = record.get("this_batch") or {}, record.get("partitions", [])
    counts = {name: this.get(name, 0) for name in _BATCH_COUNTS}
    counts["dropped"] = sum((this.get("dropped") or {}).values())
    counts["dead_lettered"] = sum((this.get("dead_lettered") or {}).values())
    counts["windows_emitted"] = this.get("windows_emitted", 0)
    return {
        "seq": seq,
        "batch": record.get("batch"),
        "flushed": bool(record.get("flushed")),
        "t": _instant(record.get("processing_time")),
        "watermark": _instant(record.get("watermark")),
        "output_watermark": _instant(record.get("output_watermark")),
        "partitions": [
            [str(p["partition"]), _instant(p.get("watermark")), _instant(p.get("arrival_clock"))]
            for p in parts[:CHART_PARTITIONS]
        ],
        "partition_count": len(parts),
        "this_batch": counts if record.get("this_batch") is not None else None,
    }


class LiveState:
    """The metrics records of one job, fed as they are written; safe across threads.

    Parameters
    ----------
    job
        The job's name (the ``job`` label of ``/metrics``, the page's title).
    dead_letter
        The job's dead-letter directory (``[output] dead_letter``): the page shows the
        latest dead letters read from it. ``None``: no dead letters shown.
    history
        How many records the charts keep.
    """

    def __init__(self, job: str, *, dead_letter: str | None = None, history: int = HISTORY):
        self.job = job
        self._records: deque[tuple[int, dict[str, Any]]] = deque(maxlen=history)
        self._points: deque[dict[str, Any]] = deque(maxlen=history)
        self._diagnostics: deque[dict[str, Any]] = deque(maxlen=DIAGNOSTICS)
        self._seq = 0
        self._changed = threading.Condition()
        self._dead = DeadLetters(dead_letter)
        self.ended = False

    def __call__(self, record: dict[str, Any]) -> None:
        """Feed one metrics record (the ``on_metrics`` callback); others are ignored."""
        if record.get("type") != "metrics":
            return
        with self._changed:
            self._seq += 1
            self._records.append((self._seq, record))
            self._changed.notify_all()

    def end(self) -> None:
        """Say that no record will follow (the query stopped); wakes waiting pages."""
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    @property
    def seq(self) -> int:
        """How many records were fed."""
        return self._seq

    @property
    def latest(self) -> dict[str, Any] | None:
        """The newest record (``None`` before the first)."""
        with self._changed:
            return self._records[-1][1] if self._records else None

    def wait(self, after: int, timeout: float) -> int:
        """Wait until a record after the ``after``-th was fed (or ``timeout`` seconds
        passed, or the state ended); return how many were fed."""
        with self._changed:
            self._changed.wait_for(lambda: self._seq > after or self.ended, timeout)
            return self._seq

    def snapshot(self, after: int = 0) -> dict[str, Any]:
        """What the page needs: the newest record whole, the chart points and
        diagnostics of records after the ``after``-th (all kept ones when the page has
        fallen behind the history: ``reset`` true), the latest dead letters."""
        with self._changed:
            fresh = [(s, r) for s, r in self._records if s > after]
            seq, ended = self._seq, self.ended
            for s, record in fresh:
                if not self._points or self._points[-1]["seq"] < s:
                    self._points.append(point_of(s, record))
                    self._diagnostics.extend(
                        {"seq": s, "batch": record.get("batch"), **d}
                        for d in record.get("diagnostics", [])
                    )
            reset = not self._points or self._points[0]["seq"] > after + 1
            points = [p for p in self._points if reset or p["seq"] > after]
            diagnostics = [d for d in self._diagnostics if reset or d["seq"] > after]
            latest = self._records[-1][1] if self._records else None
        if fresh:
            self._dead.read_batches([r for _, r in fresh])
        return {
            "job": self.job,
            "seq": seq,
            "ended": ended,
            "reset": reset,
            "latest": latest,
            "points": points,
            "diagnostics": diagnostics,
            "dead_letters": self._dead.latest(),
        }
