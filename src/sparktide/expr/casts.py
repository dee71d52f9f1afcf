"""Stream Analytics' data types in the reference engine: ``CAST`` and ``TRY_CAST``
(``docs/semantics.md`` §11.12), ``GetType``, and how values are written as text and
shown in messages. ``sparktide.spark.exprfunctions`` compiles the same rules to Spark
SQL.
"""

from __future__ import annotations

import decimal
import math
import re
from typing import Any

from sparktide.expr import nodes
from sparktide.time import format_instant, instant_or_problem

__all__ = [
    "ConversionError",
    "as_text",
    "cast",
    "finite",
    "int64",
    "is_int",
    "is_number",
    "java_double_text",
    "shown_text",
    "type_name",
]

_BIGINT_TEXT = re.compile(r" *[+-]?[0-9]+ *\Z")
_FLOAT_TEXT = re.compile(r" *[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)? *\Z")


_UNPRINTABLE = re.compile(r"[^ -~]")


def shown_text(text: str) -> str:
    """A text value as error messages show it (both engines alike): every character
    outside printable ASCII as ``?``, at most 60 characters (the reader's messages and
    ``CAST``'s)."""
    text = _UNPRINTABLE.sub("?", text)
    return text if len(text) <= 60 else text[:60] + "..."


class ConversionError(ValueError):
    """A ``CAST`` that cannot convert its value (``TRY_CAST`` gives null instead)."""


def is_number(value: Any) -> bool:
    """Whether ``value`` is a number (an ``int`` or ``float``, not a ``bool``)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (not a ``bool``)."""
    return isinstance(value, int) and not isinstance(value, bool)


def int64(value: int) -> int | None:
    """``value`` when it fits 64 bits, else ``None``."""
    return value if nodes.INT64[0] <= value <= nodes.INT64[1] else None


def finite(value: float) -> float | None:
    """``value`` when finite, else ``None``."""
    return value if math.isfinite(value) else None


def java_double_text(value: float) -> str:
    """A double as text, as Java's ``Double.toString`` (and so Spark's ``CAST(d AS
    STRING)``) writes it: ``1.5``, ``100.0``, ``1.0E7``, ``1.0E-4``."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = decimal.Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    point = len("".join(map(str, digit_tuple))) + int(exponent) - 1  # scientific exponent
    if 1e-3 <= abs(value) < 1e7:
        if point >= 0:
            whole = digits[: point + 1].ljust(point + 1, "0")
            return f"{sign}{whole}.{digits[point + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-point - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point}"


def as_text(value: Any) -> str | None:
    """A value as ``CAST(... AS nvarchar(max))`` and ``CONCAT`` write it (``None`` for
    an array or object)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double_text(value)
    return None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    return "an array or object"


def cast(value: Any, type_: str, safe: bool) -> Any:
    """``CAST(value AS type_)`` (``TRY_CAST`` when ``safe``: null where it fails).

    Raises
    ------
    ConversionError
        When the value cannot be converted and ``safe`` is false.
    """
    if value is None:
        return None
    result = _convert(value, type_)
    if isinstance(result, _Failure):
        if safe:
            return None
        raise ConversionError(f"CAST to {type_}: {result.why}")
    return result


class _Failure:
    def __init__(self, why: str) -> None:
        self.why = why


def _not_a(value: Any, type_: str) -> _Failure:
    if isinstance(value, str):
        return _Failure(f"'{shown_text(value)}' is not a {type_}")
    return _Failure(f"{_kind(value)} is not a {type_}")


def _composite(value: Any, type_: str) -> Any:
    """``CAST(value AS record)`` / ``AS array``: the object (array) itself, anything else
    fails (semantics §11.12)."""
    raw = value.raw if isinstance(value, nodes.Composite) else None
    shape = {dict: "record", list: "array"}.get(type(raw))
    if shape == type_:
        return value
    what = f"'{shown_text(value)}'" if isinstance(value, str) else _kind(value)
    return _Failure(
        f"{nodes.COMPOSITE_TYPES[shape] if shape else what} is not {nodes.COMPOSITE_TYPES[type_]}"
    )


def _convert(value: Any, type_: str) -> Any:
    if type_ in nodes.COMPOSITE_TYPES:
        return _composite(value, type_)
    if type_ == "bigint":
        if isinstance(value, bool):
            return int(value)
        if is_int(value):
            return value
        if isinstance(value, float):
            truncated = math.trunc(value)
            if int64(truncated) is None:
                return _Failure("a float beyond the range of bigint")
            return truncated
        if isinstance(value, str) and _BIGINT_TEXT.match(value):
            number = int(value.strip(" "))
            return number if int64(number) is not None else _not_a(value, type_)
        return _not_a(value, type_)
    if type_ == "float":
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if is_number(value):
            return float(value)
        if isinstance(value, str) and _FLOAT_TEXT.match(value):
            number = float(value.strip(" "))
            return number if math.isfinite(number) else _not_a(value, type_)
        return _not_a(value, type_)
    if type_ == "nvarchar(max)":
        text = as_text(value)
        return text if text is not None else _not_a(value, type_)
    if type_ == "datetime":
        if isinstance(value, str):
            instant = instant_or_problem(value)
            if isinstance(instant, int):
                return format_instant(instant)
        return _not_a(value, type_)
    assert type_ == "bit"
    if isinstance(value, bool):
        return value
    if is_number(value):
        return value != 0
    if isinstance(value, str):
        word = value.strip(" ").lower()
        if word in ("true", "1"):
            return True
        if word in ("false", "0"):
            return False
    return _not_a(value, type_)


def type_name(value: Any) -> str | None:
    """``GetType(value)``: the name of its type in Stream Analytics' words (semantics
    §11.12): ``bigint``, ``float``, ``bit``, ``record``, ``array``; a text is a
    ``datetime`` when it reads as a time (as ``CAST(... AS datetime)`` reads it: what
    sparktide's time functions make are such texts), else ``nvarchar(max)``; null for
    null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bit"
    if isinstance(value, int):
        return "bigint"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "datetime" if isinstance(instant_or_problem(value), int) else "nvarchar(max)"
    raw = value.raw if isinstance(value, nodes.Composite) else None
    return {dict: "record", list: "array"}.get(type(raw))
