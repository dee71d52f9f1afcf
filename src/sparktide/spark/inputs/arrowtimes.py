"""Canonical time strings into microseconds, on whole Arrow arrays (the Arrow kernel).

The kernel vouches only for times in the canonical form :data:`CANONICAL_TIME`
(``YYYY-MM-DDThh:mm:ss[.f{1,6}](Z|±hh:mm)`` with ASCII digits, a real date, years
1001-9998): a subset of what the reference reader accepts
(:data:`sparktide.time.INSTANT_PATTERN`) on which the SQL route's
:func:`~sparktide.spark.inputs.sqlvalues.instant_of` gives the same instant, and whose
offset can never leave the representable years. Any other string is left to the SQL
route, which decides it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.spark.inputs.arrays import filled, masked, string_bytes

__all__ = ["CANONICAL_TIME", "time_micros", "time_micros_by_pattern"]

#: The canonical time strings (a real date is checked besides).
CANONICAL_TIME = (
    r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:"
    r"[0-5][0-9](\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)


def time_micros(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Instants of canonical time strings in microseconds (null elsewhere), and which
    strings are canonical (:data:`CANONICAL_TIME`, a real date, years 1001-9998).

    Usually read from the strings' bytes (:func:`_fixed_micros`); the strings that are
    not laid out as others of their width, by regular expression and Arrow's cast."""
    if not pa.types.is_string(text.type):
        return pa.nulls(len(text), pa.int64()), np.zeros(len(text), dtype=bool)
    micros, good, decided = _fixed_micros(text)
    if not decided.all():
        rest = np.flatnonzero(~decided)
        found, ok = time_micros_by_pattern(text.take(pa.array(rest)))
        micros[rest] = pc.fill_null(found, 0).to_numpy()
        good[rest] = ok
    return masked(micros, good, pa.int64()), good


#: Positions of the digits of ``YYYY-MM-DDThh:mm:ss`` and the characters between them.
_DIGITS_AT = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18])
_MARKS = ((4, ord("-")), (7, ord("-")), (10, ord("T")), (13, ord(":")), (16, ord(":")))
_DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def _fixed_micros(text: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`time_micros` from the strings' bytes: the microseconds, which strings are
    canonical, and which were decided here — those laid out as the first string of
    their width (``YYYY-MM-DDThh:mm:ss``, then ``.`` and 1-6 digits or not, then ``Z``
    or ``±hh:mm``) with ASCII digits where it has digits. The others (another layout,
    or no string) are left to the regular expression."""
    n = len(text)
    micros = np.zeros(n, dtype=np.int64)
    good = np.zeros(n, dtype=bool)
    decided = np.zeros(n, dtype=bool)
    if n == 0:
        return micros, good, decided
    offsets, octets = string_bytes(text)
    widths = np.diff(offsets)
    padded = np.zeros(len(octets) + _WIDEST, dtype=np.uint8)
    padded[: len(octets)] = octets
    windows = np.lib.stride_tricks.sliding_window_view(padded, _WIDEST)
    counts = np.bincount(np.clip(widths, 0, _WIDEST + 1), minlength=_WIDEST + 2)
    for width in np.flatnonzero(counts[20 : _WIDEST + 1]) + 20:
        rows = np.flatnonzero(widths == width)
        chars = windows[offsets[rows], :width]
        found = _layout_micros(chars)
        if found is not None:
            micros[rows], good[rows], decided[rows] = found
    if text.null_count:  # (a missing string's slot may hold bytes)
        missing = ~filled(pc.is_valid(text))
        good[missing] = decided[missing] = False
    return micros, good, decided


_WIDEST = 32  # (``YYYY-MM-DDThh:mm:ss.ffffff+hh:mm``)


def _layout_micros(chars: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_fixed_micros` of strings of one width (``chars``: a row of bytes each)
    laid out as the first one; ``None`` when that one has no canonical layout."""
    width = chars.shape[1]
    first = chars[0]
    fraction = 0
    if first[19] == ord("."):
        while 20 + fraction < width and 48 <= first[20 + fraction] <= 57:
            fraction += 1
        if not 1 <= fraction <= 6:
            return None
    zone = 19 + (fraction + 1 if fraction else 0)
    if width - zone not in (1, 6):
        return None
    digits_at = [*_DIGITS_AT, *range(20, 20 + fraction)]
    marks = list(_MARKS) + ([(19, ord("."))] if fraction else [])
    if width - zone == 1:
        marks.append((zone, ord("Z")))
    else:
        marks.append((zone + 3, ord(":")))
        digits_at += [zone + 1, zone + 2, zone + 4, zone + 5]
    columns = np.ascontiguousarray(chars.T)  # (a row per position: contiguous reads)
    digit = columns[digits_at] - np.uint8(48)  # (wraps below '0': not a digit either)
    decided = (digit <= 9).all(axis=0)
    for at, mark in marks:
        decided &= columns[at] == mark
    if width - zone == 6:
        sign = columns[zone]
        decided &= (sign == ord("+")) | (sign == ord("-"))

    def number(i: int, count: int) -> np.ndarray:
        value = digit[i].astype(np.int64)
        for k in range(i + 1, i + count):
            value = value * 10 + digit[k]
        return value

    year, month, day = number(0, 4), number(4, 2), number(6, 2)
    hour, minute, second = number(8, 2), number(10, 2), number(12, 2)
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    month_ok = (month >= 1) & (month <= 12)
    last_day = _DAYS_IN_MONTH[np.where(month_ok, month, 1)] + (leap & (month == 2))
    good = decided & (year >= 1001) & (year <= 9998) & month_ok & (day >= 1)
    good &= (day <= last_day) & (hour <= 23) & (minute <= 59) & (second <= 59)
    # (days by table, for the dates that can be good: the others are 0 in the end)
    at = np.where(good, (year - 1001) * 12 + month - 1, 0)
    days = _MONTH_DAYS.reshape(-1)[at] + day - 1
    micros = ((days * 24 + hour) * 60 + minute) * 60 + second
    micros *= 1_000_000
    if fraction:
        micros += number(14, fraction) * 10 ** (6 - fraction)
    if width - zone == 6:
        offset_hours, offset_minutes = number(14 + fraction, 2), number(16 + fraction, 2)
        good &= (offset_hours <= 23) & (offset_minutes <= 59)
        east = np.where(columns[zone] == ord("+"), 1, -1)
        micros -= east * (offset_hours * 60 + offset_minutes) * 60_000_000
    return np.where(good, micros, 0), good, decided


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (years ≥ 1)."""
    year = year - (month <= 2)
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * np.where(month > 2, month - 3, month + 9) + 2) // 5 + day - 1
    of_eras = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146097 + of_eras - 719468


#: Days from 1970-01-01 to the first of each month of years 1001-9998 (checked dates).
_MONTH_DAYS = _days_from_civil(
    np.repeat(np.arange(1001, 9999), 12), np.tile(np.arange(1, 13), 9999 - 1001), 1
).reshape(-1, 12)


def time_micros_by_pattern(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """:func:`time_micros` by regular expression and Arrow's cast."""
    good = filled(pc.match_substring_regex(text, CANONICAL_TIME))
    year = pc.cast(
        pc.utf8_slice_codeunits(pc.if_else(pa.array(good), text, "0000"), 0, 4), pa.int64()
    )
    good &= filled(pc.and_(pc.greater_equal(year, 1001), pc.less_equal(year, 9998)))
    chosen = pc.if_else(pa.array(good), text, pa.nulls(len(text), pa.string()))
    try:
        stamps = pc.cast(chosen, pa.timestamp("us", "UTC"))
    except pa.ArrowInvalid:  # not a real date (2026-02-30): find which ones
        seconds = pc.utf8_slice_codeunits(chosen, 0, 19)
        parsed = pc.strptime(seconds, format="%Y-%m-%dT%H:%M:%S", unit="s", error_is_null=True)
        again = pc.strftime(parsed, format="%Y-%m-%dT%H:%M:%S")  # strptime rolls days over
        good &= filled(pc.equal(again, seconds))
        chosen = pc.if_else(pa.array(good), text, pa.nulls(len(text), pa.string()))
        stamps = pc.cast(chosen, pa.timestamp("us", "UTC"))
    return pc.cast(stamps, pa.int64()), good
