"""Integer stand-ins for minus and plus infinity on the microsecond time line."""

from __future__ import annotations

__all__ = ["NEG_INF", "POS_INF", "is_finite"]

#: Below every real instant (about 146,000 years before the epoch).
NEG_INF = -(1 << 62)
#: Above every real instant.
POS_INF = 1 << 62
_FINITE = 1 << 61


def is_finite(instant: int) -> bool:
    """True for a real instant, False for (something derived from) ``NEG_INF``/``POS_INF``."""
    return -_FINITE < instant < _FINITE
