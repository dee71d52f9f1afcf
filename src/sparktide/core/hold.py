"""The hold of the downstream watermark (semantics §7): the ``output_watermark`` metric.

A window's result starts at ``window_start``, so an operator after a window could only
be promised what the window operator can still emit: StreamInsight holds the CTI it
passes downstream at the start of the earliest window that can still produce output.
sparktide has no operator after a window; it reports that promise as the metric
``output_watermark`` (``docs/metrics.md``): every window record written after the
metrics record has ``window_start ≥ output_watermark``.

It is a pure function of the watermark ``W`` that governs the windows (or a lower bound
of it) and of the ``[window]`` table, so both engines compute it from their own metrics
without state. A window with end ``e`` closes when ``W ≥ due(e)``, ``due(e) = e +
allowed_lateness`` (``+ 1 µs`` for ``(start, end]`` windows, sliding and snapshot
windows): every window still to be written has ``e > E = W − allowed_lateness − c``
(``c`` the 1 µs or 0), that is ``e ≥ E + 1``. Then:

- **grid** (tumbling, hopping; starts ``offset + k·hop``, ends ``start + size``): the
  earliest grid start ``≥ E + 1 − size`` — the start of the earliest window not yet
  closed (with gaps, the next window's start);
- **snapshot** (``[t, t]``): ``W − allowed_lateness`` (a grid of size 0 and hop 1 µs);
- **sliding** (results ``(p − size, p]``): ``W − allowed_lateness − size`` (a grid of
  hop 1 µs): any change point ``p ≥ W − allowed_lateness`` can still give a result;
- **session with max_duration m**: a session from ``s`` ends at or before its cut, the
  first boundary ``offset + k·m`` after ``s + m``; the cut is after ``E`` exactly when
  ``s + m ≥ B``, ``B`` the last boundary ``≤ E``. So ``B − m``;
- **session without max_duration**: no promise (−∞, reported as null): a session starts
  at its first event and stays open while events keep coming within ``gap``, however
  long ago that was, and under ``accept`` an event below the watermark can extend an
  open session backwards. Only the sessions held in state could bound it.

Arithmetic uses floor modulo (Python's ``%``), so it is correct before 1970.
"""

from __future__ import annotations

from sparktide.core.instants import NEG_INF, is_finite
from sparktide.job import Window

__all__ = ["output_watermark"]


def output_watermark(window: Window, watermark: int) -> int:
    """The start below which no window result will be written any more.

    Parameters
    ----------
    window
        The job's ``[window]`` table.
    watermark
        The watermark governing the windows (integer microseconds), or a lower bound of
        every governing watermark (partitioned jobs: the minimum over partitions;
        substreams: the floor every key has reached). ``NEG_INF`` before it is defined.

    Returns
    -------
    int
        Integer microseconds: every window written from now on has ``window_start`` at or
        above it. ``NEG_INF`` when there is no promise (the watermark is −∞, or a session
        window without ``max_duration``); the watermark itself when it is +∞. Never
        decreases when ``watermark`` does not.

    Examples
    --------
    >>> from sparktide.time import parse_instant, format_instant
    >>> hopping = Window(type="hopping", size="1m", hop="20s")
    >>> w = parse_instant("2026-03-01T09:01:30Z")
    >>> format_instant(output_watermark(hopping, w))  # [09:00:40, 09:01:40) is open
    '2026-03-01T09:00:40Z'
    """
    if not is_finite(watermark):
        return watermark
    kind = window.type
    lateness: int = window.allowed_lateness  # type: ignore[assignment]
    closed_end = window.boundary == "end" or kind in ("sliding", "snapshot")
    last_closed_end = watermark - lateness - (1 if closed_end else 0)  # E: ends ≤ E closed
    if kind == "session":
        m = window.max_duration
        if m is None:
            return NEG_INF
        assert isinstance(m, int) and isinstance(window.offset, int)
        boundary = last_closed_end - (last_closed_end - window.offset) % m
        return boundary - m
    if kind == "snapshot":
        size, period, offset = 0, 1, 0
    elif kind == "sliding":
        size, period, offset = window.size, 1, 0  # type: ignore[assignment]
    else:  # tumbling, hopping
        size, period, offset = window.size, window.period, window.offset  # type: ignore[assignment]
    low = last_closed_end + 1 - size  # the earliest start whose end is after E
    return low + (offset - low) % period  # the first grid start at or after it
