"""The reference engine's scalar functions (Stream Analytics' built-in functions,
``docs/semantics.md`` §11.11; the casts and ``GetType`` are :mod:`sparktide.expr.casts`).

Every function is null-propagating unless it says otherwise, takes the kinds it names
and gives null for any other kind (a string function of a number is null: no implicit
conversion but ``CONCAT``'s). Times are ISO-8601 text with a zone, read as sparktide
reads every time; a time a function makes is written in UTC, as records write times.
``sparktide.spark.exprfunctions`` compiles the same rules to Spark SQL.
"""

from __future__ import annotations

import calendar
import decimal
import math
import re
from collections.abc import Callable
from typing import Any

from sparktide.expr import nodes
from sparktide.expr.casts import as_text, finite, int64, is_int, is_number, type_name
from sparktide.time import DAY, HOUR, MINUTE, SECOND, format_instant, instant_or_problem

__all__ = [
    "MONTH_NAMES",
    "WEEKDAY_NAMES",
    "call",
    "date_part",
    "datediff_calendar",
    "patindex_regex",
]

MONTH_NAMES = tuple(calendar.month_name[1:])
#: Sunday first: ``DATEPART(weekday, t)`` is 1 on a Sunday (SQL Server's default).
WEEKDAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_FIRST = -62135596800 * SECOND  # 0001-01-01T00:00:00Z
_LAST = 253402300799999999  # 9999-12-31T23:59:59.999999Z


# ------------------------------------------------------------------------- dates
def _instant(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    instant = instant_or_problem(value)
    return instant if isinstance(instant, int) else None


def _civil(instant: int) -> tuple[int, int, int]:
    """The UTC (year, month, day) of an instant."""
    import datetime as dt

    day = dt.date(1970, 1, 1) + dt.timedelta(days=instant // DAY)
    return day.year, day.month, day.day


def _days(year: int, month: int, day: int) -> int:
    import datetime as dt

    return (dt.date(year, month, day) - dt.date(1970, 1, 1)).days


def date_part(unit: str, instant: int) -> int:
    """``DATEPART(unit, t)`` of an instant (UTC): weeks start on Sunday, week 1 holds
    January 1st, weekdays count from Sunday = 1 (SQL Server's defaults)."""
    year, month, day = _civil(instant)
    days = instant // DAY
    of_day = instant - days * DAY
    if unit == "year":
        return year
    if unit == "quarter":
        return (month - 1) // 3 + 1
    if unit == "month":
        return month
    if unit == "day":
        return day
    weekday = (days + 4) % 7 + 1  # 1970-01-01 was a Thursday (5)
    dayofyear = days - _days(year, 1, 1) + 1
    if unit == "dayofyear":
        return dayofyear
    if unit == "weekday":
        return weekday
    if unit == "week":
        first = (_days(year, 1, 1) + 4) % 7 + 1
        return (dayofyear + first - 2) // 7 + 1
    if unit == "hour":
        return of_day // HOUR
    if unit == "minute":
        return of_day % HOUR // MINUTE
    if unit == "second":
        return of_day % MINUTE // SECOND
    if unit == "millisecond":
        return of_day % SECOND // 1000
    assert unit == "microsecond"
    return of_day % SECOND


def datediff_calendar(unit: str, start: int, end: int) -> int:
    """``DATEDIFF`` in a calendar unit: the year, quarter, month or week (starting on
    Sunday) boundaries crossed from ``start`` to ``end``."""
    if unit == "week":
        return (end // DAY + 4) // 7 - (start // DAY + 4) // 7
    (y1, m1, _), (y2, m2, _) = _civil(start), _civil(end)
    if unit == "year":
        return y2 - y1
    if unit == "quarter":
        return (y2 * 4 + (m2 - 1) // 3) - (y1 * 4 + (m1 - 1) // 3)
    return (y2 * 12 + m2) - (y1 * 12 + m1)


def _in_range(instant: int | None) -> str | None:
    if instant is None or not _FIRST <= instant <= _LAST:
        return None
    return format_instant(instant)


def _dateadd(unit: str, number: Any, time: Any) -> str | None:
    instant = _instant(time)
    if instant is None or not is_int(number):
        return None
    if unit in nodes.DATEDIFF_UNITS or unit == "week":
        length = DAY * 7 if unit == "week" else nodes.DATEDIFF_UNITS[unit][1]
        return _in_range(instant + number * length)
    months = number * {"year": 12, "quarter": 3, "month": 1}[unit]
    if abs(months) > 120000:
        return None
    year, month, day = _civil(instant)
    of_day = instant - (instant // DAY) * DAY
    year, month0 = divmod(year * 12 + month - 1 + months, 12)
    if not 1 <= year <= 9999:
        return None
    day = min(day, calendar.monthrange(year, month0 + 1)[1])
    return _in_range(_days(year, month0 + 1, day) * DAY + of_day)


def _from_parts(parts: list[Any]) -> str | None:
    if not all(is_int(p) for p in parts):
        return None
    year, month, day, *rest = parts
    hour, minute, second, milli = rest or (0, 0, 0, 0)
    if not (1 <= year <= 9999 and 1 <= month <= 12):
        return None
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    if not (0 <= hour <= 23 and 0 <= minute <= 59 and 0 <= second <= 59 and 0 <= milli <= 999):
        return None
    days = _days(year, month, day)
    return format_instant(
        days * DAY + hour * HOUR + minute * MINUTE + second * SECOND + milli * 1000
    )


# ----------------------------------------------------------------------- strings
def patindex_regex(pattern: str, java: bool = False) -> str:
    """The regular expression of a ``PATINDEX`` pattern: ``%`` any text, ``_`` one
    character, anchored at a side without ``%`` (Python's syntax, or Java's)."""
    core = pattern
    start = not core.startswith("%")
    end = not core.endswith("%") or core == "%"
    core = core[0 if start else 1 :]
    core = core[: len(core) - (0 if end else 1)] if core else core
    parts = []
    for char in core:
        if char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        elif char.isascii() and char.isalnum():
            parts.append(char)
        else:
            parts.append(f"\\x{{{ord(char):x}}}" if java else re.escape(char))
    return (
        "(?s)"
        + ("\\A" if start else "")
        + "".join(parts)
        + (("\\z" if java else "\\Z") if end else "")
    )


def _position(match: re.Match[str] | None) -> int:
    return 0 if match is None else match.start() + 1


def _round(value: Any, length: int) -> Any:
    if is_int(value):
        if length >= 0:
            return value
        step = 10**-length
        magnitude = (abs(value) + step // 2) // step * step
        return int64(-magnitude if value < 0 else magnitude)
    if not isinstance(value, float):
        return None
    context = decimal.Context(prec=1000, rounding=decimal.ROUND_HALF_UP)
    rounded = decimal.Decimal(repr(value)).quantize(
        decimal.Decimal(1).scaleb(-length), context=context
    )
    result = float(rounded)
    return finite(result) if result != 0 else 0.0


def _float_of(function: Callable[[float], float]) -> Callable[[Any], float | None]:
    def apply(value: Any) -> float | None:
        if not is_number(value):
            return None
        try:
            return finite(function(float(value)))
        except (ValueError, OverflowError):
            return None

    return apply


def _strings(function: Callable[..., Any]) -> Callable[..., Any]:
    def apply(*args: Any) -> Any:
        return function(*args) if all(isinstance(a, str) for a in args) else None

    return apply


def _substring(text: Any, start: Any, length: Any) -> str | None:
    if not (isinstance(text, str) and is_int(start) and is_int(length)) or length < 0:
        return None
    return text[max(start, 1) - 1 : max(start + length - 1, 0)]


def _charindex(find: Any, text: Any, start: Any = 1) -> int | None:
    if not (isinstance(find, str) and isinstance(text, str) and is_int(start)):
        return None
    if find == "":
        return 0
    return text.find(find, max(start, 1) - 1) + 1 if start <= len(text) else 0


def _concat(*args: Any) -> str | None:
    texts = [("" if a is None else as_text(a)) for a in args]
    return None if any(t is None for t in texts) else "".join(texts)  # type: ignore[arg-type]


def _abs(value: Any) -> Any:
    if is_int(value):
        return int64(abs(value))
    return abs(value) if isinstance(value, float) else None


def _ceiling_floor(up: bool) -> Callable[[Any], Any]:
    def apply(value: Any) -> Any:
        if is_int(value):
            return value
        if not isinstance(value, float):
            return None
        return float(math.ceil(value) if up else math.floor(value))

    return apply


def _sign(value: Any) -> Any:
    if is_int(value):
        return (value > 0) - (value < 0)
    return float((value > 0) - (value < 0)) if isinstance(value, float) else None


def _power(base: Any, exponent: Any) -> float | None:
    if not (is_number(base) and is_number(exponent)):
        return None
    try:
        return finite(math.pow(float(base), float(exponent)))
    except (ValueError, OverflowError, ZeroDivisionError):
        return None


_SIMPLE: dict[str, Callable[..., Any]] = {
    "ABS": _abs,
    "CEILING": _ceiling_floor(True),
    "FLOOR": _ceiling_floor(False),
    "POWER": _power,
    "SQRT": _float_of(math.sqrt),
    "SQUARE": _float_of(lambda x: x * x),
    "EXP": _float_of(math.exp),
    "SIGN": _sign,
    "CONCAT": _concat,
    "LEN": _strings(lambda s: len(s.rstrip(" "))),
    "LOWER": _strings(str.lower),
    "UPPER": _strings(str.upper),
    "SUBSTRING": _substring,
    "REPLACE": _strings(lambda s, f, r: s if f == "" else s.replace(f, r)),
    "CHARINDEX": _charindex,
    "LTRIM": _strings(lambda s: s.lstrip(" ")),
    "RTRIM": _strings(lambda s: s.rstrip(" ")),
    "TRIM": _strings(lambda s: s.strip(" ")),
    "DATEFROMPARTS": lambda *parts: _from_parts(list(parts)),
    "GETTYPE": type_name,
    "DATETIMEFROMPARTS": lambda *parts: _from_parts(list(parts)),
}


#: The white space JavaScript's ``parseInt`` skips before the number (semantics §11.11).
JS_SPACE = (
    " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: The digits of every radix up to 36, in order.
RADIX_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def parseint(text: Any, radix: int) -> int | None:
    """JavaScript's ``parseInt(text, radix)`` of a text (semantics §11.11): white space
    skipped, a sign, ``0x`` for radix 16, then the longest run of the radix's digits;
    null for no digits (JavaScript's ``NaN``), for a magnitude of 2**63 or more, and for
    anything but a text."""
    if not isinstance(text, str):
        return None
    rest = text.lstrip(JS_SPACE)
    sign = -1 if rest.startswith("-") else 1
    if rest[:1] in ("+", "-"):
        rest = rest[1:]
    if radix == 16 and rest[:2] in ("0x", "0X"):
        rest = rest[2:]
    digits = RADIX_DIGITS[:radix]
    end = 0
    while end < len(rest) and rest[end].lower() in digits and rest[end].isascii():
        end += 1
    if end == 0:
        return None
    magnitude = int(rest[:end], radix)
    return sign * magnitude if magnitude < 2**63 else None


def call(func: nodes.Func, args: list[Any]) -> Any:
    """The value of the scalar function ``func`` of the argument values ``args``."""
    name = func.name
    if name in _SIMPLE:
        return _SIMPLE[name](*args)
    if name == "ROUND":
        return _round(args[0], _literal_int(func.args[1]))
    if name == "PARSEINT":
        return parseint(args[0], _literal_int(func.args[1]))
    if name in ("PATINDEX", "REGEXMATCH"):
        text = args[0 if name == "REGEXMATCH" else 1]
        if not isinstance(text, str):
            return None
        if name == "PATINDEX":
            return _position(re.search(patindex_regex(func.args[0].value), text))  # type: ignore[union-attr]
        pattern = func.args[1].value  # type: ignore[union-attr]
        return _position(re.search(pattern, text, re.IGNORECASE))
    if name == "DATEADD":
        return _dateadd(func.unit, args[0], args[1])  # type: ignore[arg-type]
    instant = _instant(args[0])
    if instant is None:
        return None
    if name in ("DAY", "MONTH", "YEAR"):
        return date_part(name.lower(), instant)
    part = date_part(func.unit, instant)  # type: ignore[arg-type]
    if name == "DATEPART":
        return part
    if func.unit == "month":
        return MONTH_NAMES[part - 1]
    if func.unit == "weekday":
        return WEEKDAY_NAMES[part - 1]
    return str(part)


def _literal_int(expr: nodes.Expr) -> int:
    if isinstance(expr, nodes.Unary):
        return -_literal_int(expr.operand)
    assert isinstance(expr, nodes.Lit)
    return int(expr.value)
