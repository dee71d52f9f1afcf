"""Instants and durations as integer microseconds; parsing and formatting at the edges.

Inside the engines an *instant* is an ``int``: microseconds since 1970-01-01T00:00:00Z
(Spark's own precision), and a *duration* is an ``int`` number of microseconds. Nothing
here goes through floating point.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta

from sparktide.errors import TimeFormatError

__all__ = [
    "DAY",
    "FIRST_INSTANT",
    "HOUR",
    "INSTANT_PATTERN",
    "LAST_INSTANT",
    "MILLISECOND",
    "MINUTE",
    "NAIVE_PATTERN",
    "SECOND",
    "epoch_micros",
    "format_duration",
    "format_instant",
    "from_datetime",
    "instant_or_problem",
    "parse_duration",
    "parse_instant",
    "round_duration",
    "to_datetime",
]

MILLISECOND = 1_000
SECOND = 1_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR

#: Microseconds per unit of an epoch number (``source.time_unit``, but ``ns``).
_PER_UNIT = {"s": SECOND, "ms": MILLISECOND, "us": 1}


def epoch_micros(value: int, unit: str) -> int:
    """The instant of the integer ``value`` counted in ``unit`` (``s``, ``ms``, ``us``,
    ``ns``) since 1970-01-01T00:00:00Z: nanoseconds floor to the microsecond."""
    return value // 1000 if unit == "ns" else value * _PER_UNIT[unit]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
_ZERO = timedelta(0)
_MAX_OFFSET = timedelta(hours=18)
_UNITS = {"us": 1, "ms": MILLISECOND, "s": SECOND, "m": MINUTE, "h": HOUR, "d": DAY}
_DURATION_PART = re.compile(r"([0-9]+)(us|ms|s|m|h|d)")
_UNIT_ORDER = ("d", "h", "m", "s", "ms", "us")
#: The one accepted text form of an instant (shared with the Spark engine).
#: ASCII digits only (``[0-9]``, not ``\d``, which in Python also matches other scripts'
#: digits): the same pattern means the same thing to Python's ``re`` and to Java's regex.
INSTANT_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})$"
)
#: A date-time without a zone (said so in the error message).
NAIVE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?$"
_INSTANT = re.compile(INSTANT_PATTERN)
_NAIVE = re.compile(NAIVE_PATTERN)


def from_datetime(value: datetime) -> int:
    """Convert an aware :class:`~datetime.datetime` to integer microseconds.

    Raises
    ------
    TimeFormatError
        If ``value`` is naive (has no time zone).
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise TimeFormatError(f"time {value.isoformat()!r} has no time zone")
    return (value - _EPOCH) // _ONE_US


def to_datetime(instant: int) -> datetime:
    """Convert integer microseconds to an aware UTC :class:`~datetime.datetime`."""
    return _EPOCH + timedelta(microseconds=instant)


def parse_instant(text: str) -> int:
    """Parse an ISO-8601 date-time *with a zone* to integer microseconds.

    The accepted form is exactly ``YYYY-MM-DDThh:mm:ss[.f{1,6}](Z|±hh:mm)`` (see
    :data:`INSTANT_PATTERN`): both engines accept the same texts, and a time never
    silently loses precision.

    Raises
    ------
    TimeFormatError
        If the text is not of that form, has no zone, is not a real date (in years
        1–9999 once taken to UTC), or has an offset beyond ±18:00 or of more than 59 minutes.
    """
    if not isinstance(text, str):
        raise TimeFormatError(f"expected an ISO-8601 time string, got {type(text).__name__}")
    value = instant_or_problem(text)
    if isinstance(value, str):
        raise TimeFormatError(f"time {text!r} {value}")
    return value


def instant_or_problem(text: str) -> int | str:
    """The instant of ``text`` (see :func:`parse_instant`), or what is wrong with it: a
    phrase such as ``"has no time zone (add 'Z' or an offset)"``."""
    if _INSTANT.fullmatch(text) is None:
        if _NAIVE.fullmatch(text):
            return "has no time zone (add 'Z' or an offset)"
        return "is not an ISO-8601 date-time with a zone (YYYY-MM-DDThh:mm:ssZ)"
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        offset = value.utcoffset() or _ZERO
        if abs(offset) > _MAX_OFFSET or (text[-1] != "Z" and int(text[-2:]) > 59):
            raise ValueError("offset out of range")  # as java.time (and so Spark) reads it
        instant = from_datetime(value)
        to_datetime(instant)  # the UTC value must be a representable date (years 1–9999)
    except (ValueError, OverflowError):
        return "is not a valid date-time"
    return instant


def format_instant(instant: int | None) -> str | None:
    """Format integer microseconds as ISO-8601 UTC (``2026-03-01T12:07:00Z``).

    Fractions of a second are written only when present. ``None`` stays ``None``, and
    so does an instant outside years 1–9999.
    """
    if instant is None:
        return None
    seconds, micros = divmod(instant, SECOND)
    base = _format_seconds(seconds)
    if base is None:
        return None
    if micros:
        return f"{base}.{micros:06d}".rstrip("0") + "Z"
    return base + "Z"


@functools.lru_cache(maxsize=4096)
def _format_seconds(seconds: int) -> str | None:
    try:
        value = _EPOCH + timedelta(seconds=seconds)
    except OverflowError:
        return None
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
        f"T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    )


def parse_duration(
    text: str, *, allow_none: bool = False, allow_negative: bool = False
) -> int | None:
    """Parse a duration such as ``500ms``, ``5s``, ``2m``, ``1h``, ``1d`` or ``1m30s``.

    Parameters
    ----------
    text
        The duration. ``"0"`` is zero. Units: ``us``, ``ms``, ``s``, ``m``, ``h``, ``d``.
    allow_none
        Accept ``"none"`` and return ``None`` (a disabled check).
    allow_negative
        Accept a leading ``-``.

    Raises
    ------
    TimeFormatError
        If the text is not a duration in this grammar.
    """
    if not isinstance(text, str):
        raise TimeFormatError(
            f"expected a duration string such as '5s', got {type(text).__name__} {text!r}"
        )
    candidate = text.strip().lower()
    if candidate == "none":
        if allow_none:
            return None
        raise TimeFormatError("'none' is not allowed here")
    sign = 1
    if candidate.startswith("-"):
        if not allow_negative:
            raise TimeFormatError(f"duration {text!r} is negative")
        sign, candidate = -1, candidate[1:]
    if candidate == "0":
        return 0
    total, position, last_rank = 0, 0, -1
    for match in _DURATION_PART.finditer(candidate):
        rank = _UNIT_ORDER.index(match.group(2))
        if match.start() != position or rank <= last_rank:
            position = -1  # a gap, or units repeated or out of order ("1s1s", "30s1m")
            break
        total += int(match.group(1)) * _UNITS[match.group(2)]
        position, last_rank = match.end(), rank
    if position <= 0 or position != len(candidate):
        raise TimeFormatError(
            f"bad duration {text!r}: use a number and a unit (us, ms, s, m, h, d), "
            "e.g. '5s' or '1m30s'"
        )
    return sign * total


def format_duration(duration: int | None) -> str:
    """Format microseconds as the shortest duration string (``90_000_000`` → ``1m30s``)."""
    if duration is None:
        return "none"
    if duration == 0:
        return "0s"
    sign = "-" if duration < 0 else ""
    rest = abs(duration)
    parts = []
    for unit in ("d", "h", "m", "s", "ms", "us"):
        size = _UNITS[unit]
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count}{unit}")
    return sign + "".join(parts)


def round_duration(duration: int) -> str:
    """Microseconds as a duration string of at most two units, for people reading logs
    (``11_438_918`` → ``11s438ms``, ``23_083_572_961_337`` → ``267d4h``); the exact form
    is :func:`format_duration`'s."""
    sign = "-" if duration < 0 else ""
    rest = abs(duration)
    units = ("d", "h", "m", "s", "ms", "us")
    for i, unit in enumerate(units):
        if rest >= _UNITS[unit] or unit == "us":
            kept = _UNITS[unit] if unit in ("ms", "us") else _UNITS[units[i + 1]]
            return sign + format_duration(rest - rest % kept)
    return "0s"  # pragma: no cover - the loop always returns


#: The instants sparktide represents: years 1-9999 (as Python's ``datetime``).
FIRST_INSTANT = parse_instant("0001-01-01T00:00:00Z")
LAST_INSTANT = parse_instant("9999-12-31T23:59:59.999999Z")
