"""The vouching contract in code: the constants and column names every parser shares.

The package docstring (:mod:`sparktide.spark.inputs`) says what a parser must guarantee;
this module holds the few values that guarantee is written in, so that the SQL route, the
Arrow kernel, the typed Parquet route and the one-pass kernel read them from one place.
"""

from __future__ import annotations

from sparktide.spark.columns import ARRIVAL_TIME, EVENT_TIME, PARTITION, SUBSTREAM_KEY
from sparktide.time import FIRST_INSTANT, LAST_INSTANT

__all__ = [
    "FIRST_INSTANT",
    "FULL_TEXT",
    "INSTANT_RANGE",
    "KERNEL_VALUES",
    "LAST_INSTANT",
    "PLAIN_TEXT",
    "VOUCHED",
    "VOUCHED_COLUMNS",
    "WHITE_SPACE",
    "kernel_column",
]

#: What the reference reader strips from a line (ASCII white space).
WHITE_SPACE = " \t\r\n\f\x0b"
#: SQL: the representable instants, after a ``BIGINT`` of microseconds (or ``NOT``).
INSTANT_RANGE = f"BETWEEN {FIRST_INSTANT} AND {LAST_INSTANT}"
#: A text that is its own JSON string's inside: printable ASCII, no quote or backslash.
PLAIN_TEXT = r"^[ !#-\[\]-~]*$"
#: A lines column holding every line's text where ``raw`` may leave a vouched line's out
#: (typed Parquet rows of a windowed job): read for dead letters only, never parsed.
FULL_TEXT = "_full_text"

#: The column saying a row was vouched for: its values below are final, and the SQL
#: route evaluates none of its checks for it.
VOUCHED = "fast"
#: The values a parser gives for a row it vouches for, with their SQL types: event and
#: arrival time (microseconds), partition id, substream key (JSON text), and ``mj``, the
#: JSON object of the fields later steps read (the record variant
#: :data:`~sparktide.spark.columns.RECORD` is made of it).
KERNEL_VALUES = (
    (EVENT_TIME, "bigint"),
    (ARRIVAL_TIME, "bigint"),
    (PARTITION, "string"),
    (SUBSTREAM_KEY, "string"),
    ("mj", "string"),
)


def kernel_column(name: str) -> str:
    """The column of lines that holds the vouched value ``name`` (``t`` → ``_kt``)."""
    return f"_k{name}"


#: A vouched row's columns as the SQL route receives them, with their SQL types.
VOUCHED_COLUMNS = (
    (VOUCHED, "boolean"),
    *((kernel_column(name), kind) for name, kind in KERNEL_VALUES),
)
