"""Generated CTIs (semantics §7): a watermark strategy that punctuates a timeline itself.

Flink's ``WatermarkGenerator`` in StreamInsight's terms: after each event of a timeline
the generator may emit a CTI at the timeline's newest timestamp minus ``delay`` —

- every N events (``every_events``): after the N-th, 2N-th, ... event of the timeline,
  counting every event judged on it (accepted, adjusted, dropped or dead-lettered), so
  the CTIs do not depend on the verdicts they help decide — but end edges, which count
  for neither N nor T and generate nothing (StreamInsight counts start edges only);
- every period T of application time (``every``): whenever the event moved the
  timeline's newest timestamp into a later period ``[k·T, (k+1)·T)`` (aligned to the epoch).

A CTI never moves backwards (the timeline keeps the largest); a negative ``delay`` makes
every event up to the newest final at once (``-1us``: nothing later may start at or
before it); a CTI at *c* commits only what lies strictly before *c*, so with ``delay``
0 an event is released by the next CTI (semantics §7.1). Explicit CTIs (input rows)
need no generator: the engine applies them as they arrive.
"""

from __future__ import annotations

from sparktide.core.instants import NEG_INF, is_finite
from sparktide.job import Punctuation

__all__ = ["CtiGenerator", "generated_ctis"]


def generated_ctis(
    count: int,
    newest_before: int,
    newest: int,
    *,
    every_events: int | None,
    every: int | None,
    delay: int,
) -> int | None:
    """The CTI generated after a timeline's ``count``-th event, or ``None`` (semantics §7.3).

    ``newest_before`` and ``newest`` are the timeline's newest timestamp before and
    after the event (``NEG_INF`` before any admitted event); ``every_events`` (N) or
    ``every`` (T) say when a CTI is due, ``delay`` how far below the newest timestamp.
    """
    if not is_finite(newest):
        return None
    if every_events is not None:
        if count % every_events:
            return None
    elif every is not None:
        if newest_before != NEG_INF and newest // every <= newest_before // every:
            return None
    return newest - delay


class CtiGenerator:
    """Decides after each event whether its timeline gets a generated CTI.

    Parameters
    ----------
    punctuation
        The job's ``[punctuation]`` table (with ``every_events`` or ``every``).
    """

    __slots__ = ("delay", "every", "every_events")

    def __init__(self, punctuation: Punctuation) -> None:
        self.every_events = punctuation.every_events
        self.every: int | None = punctuation.every  # type: ignore[assignment]
        self.delay: int = punctuation.delay or 0  # type: ignore[assignment]

    def after_event(self, count: int, newest_before: int, newest: int) -> int | None:
        """The CTI generated after a timeline's ``count``-th event, or ``None``.

        ``newest_before`` and ``newest`` are the timeline's newest timestamp before and
        after the event (``NEG_INF`` before any admitted event): :func:`generated_ctis`.
        """
        return generated_ctis(
            count,
            newest_before,
            newest,
            every_events=self.every_events,
            every=self.every,
            delay=self.delay,
        )
