"""Percentiles and shares, in exact arithmetic: what ``advise`` reports its figures in.

Percentiles are nearest-rank: the smallest sample value with at least that share of the
values at or below it, so they are always sample values, in integer microseconds.
Shares are fractions; they become floats only to be shown.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from sparktide.errors import ConfigError

__all__ = ["PERCENTILES", "parse_target", "percent_text", "percentile"]

#: Reported percentiles: name, and the share as a fraction (numerator, denominator).
PERCENTILES: tuple[tuple[str, int, int], ...] = (
    ("p50", 1, 2),
    ("p90", 9, 10),
    ("p99", 99, 100),
    ("p99.9", 999, 1000),
)


def percentile(ordered: np.ndarray, numerator: int, denominator: int) -> int:
    """Nearest-rank percentile of a sorted integer array (not empty).

    The value at rank ``ceil(n · numerator / denominator)`` (1-based), in exact integer
    arithmetic: the smallest value with at least that share of the sample at or below it.
    """
    n = int(ordered.size)
    rank = max(1, -(-n * numerator // denominator))
    return int(ordered[rank - 1])


def parse_target(text: str) -> Fraction:
    """Parse ``--target-adjusted``: a percentage such as ``0.1%`` (the ``%`` is optional).

    Raises
    ------
    ConfigError
        If the text is not a number from 0 to 100.
    """
    raw = text.strip()
    number = raw[:-1].strip() if raw.endswith("%") else raw
    try:
        percent = Fraction(number)
    except (ValueError, ZeroDivisionError):
        raise ConfigError(
            "--target-adjusted", f"expected a percentage such as '0.1%', got {text!r}"
        ) from None
    if not 0 <= percent <= 100:
        raise ConfigError("--target-adjusted", f"must be from 0% to 100%, got {text!r}")
    return percent / 100


def percent_text(share: Fraction) -> str:
    """A share as a percentage for people (the float is for display only)."""
    value = float(share * 100)
    if value == 0:
        return "0%"
    if value >= 1:
        return f"{value:.1f}%".replace(".0%", "%")
    return f"{value:.2g}%"
