"""JSON lines: one JSON object per line, read strictly (as Spark's ``parse_json`` reads).

A line that is blank is not a row; a line that is not UTF-8, too long, not JSON, holds a
number no engine can hold exactly, or is not an object becomes a row with an error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sparktide.reader.contract import (
    MAX_INTEGER_DIGITS,
    MAX_LINE_CHARS,
    NUMBER_CANDIDATE,
    Row,
    shown_number,
    too_long,
)

__all__ = ["jsonl_rows", "out_of_range_number"]

_NUMBER_CANDIDATE = re.compile(NUMBER_CANDIDATE)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate key")
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: Strict JSON, as Spark's ``parse_json`` reads it: no duplicate keys, no NaN/Infinity.
_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


def jsonl_rows(file: Path) -> Iterator[Row]:
    """The rows of a JSON lines file, numbered from line 1."""
    with open(file, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            stripped = line.strip()
            if not stripped:
                continue
            try:
                text = stripped.decode("utf-8")
            except UnicodeDecodeError:
                raw = stripped.decode("utf-8", "replace")
                yield number, {}, raw, f"line {number}: invalid UTF-8"
                continue
            if len(text) > MAX_LINE_CHARS:
                yield number, {}, text, too_long(number, len(text))
                continue
            yield _row(number, text)


def _row(number: int, text: str) -> Row:
    """Line ``number`` (UTF-8, not too long) as a row: its object, or why it is not one."""
    try:
        value = _DECODER.decode(text)
        if "\\u" in text and _SURROGATE_ESCAPE.search(text):
            # a lone surrogate (``"\ud800"``) decodes but is not text: not JSON
            json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return number, {}, text, f"line {number}: not valid JSON"
    except UnicodeEncodeError:
        return number, {}, text, f"line {number}: not valid JSON"
    if _NUMBER_CANDIDATE.search(text):
        token = out_of_range_number(text)
        if token is not None:
            return number, {}, text, f"line {number}: number {shown_number(token)} is out of range"
    if not isinstance(value, dict):
        return number, {}, text, f"line {number}: expected a JSON object"
    return number, value, text, None


def out_of_range_number(text: str) -> str | None:
    """The first number of the (valid JSON) ``text`` that no engine can hold exactly: an
    integer of more than 38 digits, or a number beyond the range of a double."""
    found: list[str] = []

    def integer(token: str) -> int:
        if len(token.lstrip("-")) > MAX_INTEGER_DIGITS:
            found.append(token)
            return 0
        return int(token)

    def number(token: str) -> float:
        value = float(token)
        if math.isinf(value):
            found.append(token)
        return value

    decoder = json.JSONDecoder(
        object_pairs_hook=_no_duplicates,
        parse_constant=_no_constant,
        parse_int=integer,
        parse_float=number,
    )
    decoder.decode(text)
    return found[0] if found else None
