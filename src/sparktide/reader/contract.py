"""What the reader's rules share with the Spark engine: limits, patterns and messages.

The Spark engine parses its input in SQL and Arrow, not with this package's code, but
with these constants, so that both engines reject the same rows with the same words.
Every reader module yields rows of one shape, :data:`Row`.
"""

from __future__ import annotations

import re
from typing import Any

from sparktide.expr.casts import shown_text

__all__ = [
    "CSV_FIELD",
    "CSV_QUOTED",
    "INT64_RANGE",
    "INTEGER",
    "MAX_INTEGER_DIGITS",
    "MAX_LINE_CHARS",
    "NUMBER_CANDIDATE",
    "UNREADABLE_PARQUET",
    "Row",
    "shown_number",
    "shown_text",
    "too_long",
]

#: One row of an input file: line number, fields, raw text, error (``None`` if none).
Row = tuple[int, dict[str, Any], str | None, str | None]

#: The longest line (JSONL) or row (CSV) read, in characters: a longer one is malformed
#: (``line N: too long``), so one runaway line cannot exhaust memory in either engine.
MAX_LINE_CHARS = 1 << 20
#: Integers of more digits than this (Spark's exact decimal range) are out of range.
MAX_INTEGER_DIGITS = 38
#: Where a JSON line may hold an out-of-range number: a run of more than 38 digits, or an
#: exponent of three digits or more (both engines look closer only at such lines).
NUMBER_CANDIDATE = r"[0-9]{39}|[0-9.][eE][+-]?[0-9]{3}"
#: One CSV field after the comma that precedes it (the line gets a leading comma, so every
#: match is non-empty): a quoted field (``""`` is a quote; text after the closing quote
#: belongs to the field; an unclosed quote runs to the end of the line), else plain text
#: up to the next comma. Python's ``re`` and Java's regex read it alike (possessive
#: quantifiers, no backtracking); the Spark engine splits rows with the same pattern.
CSV_FIELD = r',("(?:[^"]++|"")*+(?:"[^,]*+)?|[^,]*+)'
#: A quoted CSV field: its body (``""`` still doubled) and what follows the closing quote.
CSV_QUOTED = r'"((?:[^"]++|"")*+)(?:"(.*))?'
#: The message for a Parquet file that cannot be read at all (both engines).
UNREADABLE_PARQUET = "cannot read the file as Parquet (not a Parquet file, or damaged)"
#: The range of a signed 64-bit integer: partition ids must fit in it.
INT64_RANGE = (-(2**63), 2**63 - 1)
#: An integer's text: CSV cells and partition ids of this form are integers.
INTEGER = re.compile(r"-?[0-9]+")


def too_long(number: int, length: int) -> str:
    """The error of line ``number``, ``length`` characters long: over :data:`MAX_LINE_CHARS`."""
    return f"line {number}: too long ({length} characters, the limit is {MAX_LINE_CHARS})"


def shown_number(token: str) -> str:
    """A number token as error messages show it: at most 40 characters."""
    return token if len(token) <= 40 else token[:40] + "..."
