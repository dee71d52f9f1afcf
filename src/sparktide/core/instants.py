"""Integer stand-ins for minus and plus infinity on the microsecond time line, and the
observation instants of a run."""

from __future__ import annotations

__all__ = ["NEG_INF", "POS_INF", "is_finite", "observation_instants"]

#: Below every real instant (about 146,000 years before the epoch).
NEG_INF = -(1 << 62)
#: Above every real instant.
POS_INF = 1 << 62
_FINITE = 1 << 61


def is_finite(instant: int) -> bool:
    """True for a real instant, False for (something derived from) ``NEG_INF``/``POS_INF``."""
    return -_FINITE < instant < _FINITE


def observation_instants(
    processing_times: set[int], *, until: int | None, tick: int | None
) -> list[int]:
    """Observation instants of a run: the records' ``processing_times``, ``until`` (when
    not before the last of them), and multiples of ``tick`` between the first and last."""
    instants = set(processing_times)
    if until is not None and (not instants or until >= max(instants)):
        instants.add(until)
    if tick is not None and instants:
        first, last = min(instants), max(instants)
        t = first - (first % tick) + tick  # floor modulo: correct before 1970 too
        while t <= last:
            instants.add(t)
            t += tick
    return sorted(instants)
