"""Output start time (semantics §12): how far back a job must read to write, from a chosen
start time on, exactly what a job that read everything writes.

Stream Analytics starts a job's output at a chosen time (*now*, a custom time, or *when
last stopped*) and "automatically reads the data prior to this time if a temporal
operator is used": it derives from the query how far back in event time results from the
start can reach (:func:`look_back`) and, through the early-arrival limit, the arrival
time from which it reads the input (:func:`read_point`).
"""

from __future__ import annotations

from sparktide.errors import ConfigError
from sparktide.job.model import Job
from sparktide.time import parse_instant

__all__ = ["LAST_STOPPED", "NOW", "look_back", "output_start_option", "read_point"]

#: ``--output-start-time now``: the run's first observation instant (its processing time).
NOW = "now"
#: ``--output-start-time last-stopped``: where the previous run's output stopped.
LAST_STOPPED = "last-stopped"


def output_start_option(
    value: str | int | None, key: str = "output_start_time"
) -> str | int | None:
    """Check an output start option: ``None``, ``"now"``, ``"last-stopped"``, an instant's
    text (semantics §1.4) or integer microseconds. Returns :data:`NOW`,
    :data:`LAST_STOPPED` or the instant in microseconds.

    Raises
    ------
    ConfigError
        Naming ``key``, when ``value`` is none of these.
    """
    if value is None or value in (NOW, LAST_STOPPED):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(key, f"must be a time, 'now' or 'last-stopped', got {value!r}")
    if isinstance(value, int):
        return value
    try:
        return parse_instant(value)
    except ValueError:
        raise ConfigError(
            key,
            f"must be a time such as 2026-03-01T09:00:00Z, 'now' or 'last-stopped', got {value!r}",
        ) from None


def look_back(job: Job) -> int | None:
    """How far before the output start time, in event time, a result written from the start
    on can reach (semantics §12.1); ``None`` when no bound exists (the whole input is read).

    - a window: its ``size`` (tumbling, hopping, sliding); 0 for snapshot windows; no bound
      for session windows (a session is a chain of events each within ``gap`` of the last,
      and with ``max_duration`` the phase of its cuts depends on where the chain began)
      nor for windows with an ``idle_timeout`` (a window the timer closes moves the
      watermark past the events that come after it, so what a window after the start
      holds depends on the windows before it, without bound);
    - analytic columns: the longest ``limit_duration`` (``LAG``, ``LAST``, the aggregates)
      or ``period`` (``ISFIRST``);
    - a join of two streams: the larger bound of ``between``; with a window over its
      matches, or joining a window's records, the two added;
    - interval events: no bound with an ``end_time`` column or edge events (an interval may
      last any time), else their ``duration`` more;
    - punctuation: no bound (a CTI may lie anywhere ahead of its arrival, and an event
      adjusted to it takes its time; generated CTIs count the events from the start);
    - without any of these (ordered release, reference data): 0.
    """
    window = job.window
    if job.edges or any(s.end_time is not None for _, s in job.input_sources):
        return None
    if job.punctuation is not None:
        return None
    spans = [0]
    window_span = 0
    if window is not None:
        if window.type == "session" or window.idle_timeout is not None:
            return None
        window_span = 0 if window.type == "snapshot" else window.size  # type: ignore[assignment]
        spans.append(window_span)
    for analytic in job.analytics:
        spans.append(analytic.limit_duration or analytic.period or 0)  # type: ignore[arg-type]
    if job.join is not None and not job.references_joined:
        bounds = job.join.between
        if bounds is None:
            return None
        join_span = max(abs(b) for b in bounds)  # type: ignore[arg-type]
        # (a window over a join's matches, or a join of a window's records: the two
        # reach back one after the other, semantics §7.11, §7.12)
        chained = window is not None
        spans.append(join_span + window_span if chained else join_span)  # type: ignore[operator]
    durations = [s.duration for _, s in job.input_sources if s.duration is not None]
    return max(spans) + max(durations or [0])  # type: ignore[type-var,operator]


def read_point(job: Job, start: int) -> int | None:
    """The arrival time from which a job whose output starts at ``start`` reads its input
    (semantics §12.1): ``start`` − :func:`look_back` − the early-arrival limit (an event
    arriving earlier is either early or before the look-back; with inputs of their own
    limits, the largest). ``None``: read everything (no look-back bound, or an input
    without an early-arrival limit). In arrival-time mode an event's time
    is its arrival time, so no limit is subtracted."""
    back = look_back(job)
    if back is None:
        return None
    if not job.event_time_mode:
        return start - back
    # each input's own limit (semantics §7.8): the largest reaches furthest back
    limits = [policy.ordering.early_arrival for policy in job.policies.values()]
    if any(limit is None for limit in limits):
        return None
    return start - back - max(limits)  # type: ignore[type-var,operator]
