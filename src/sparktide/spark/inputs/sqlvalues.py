"""SQL expressions that read one value as the reference reader does.

Instants (:func:`instant_of`), partition ids (:func:`partition_id`), a field's canonical
JSON text (:func:`value_json`) and text as the reference reader's messages show it
(:func:`shown_text`). They are shared by the SQL route (:mod:`.sqlparse`), the typed
Parquet route (:mod:`.parquettyped`) and the expressions of ``[filter]`` / ``[select]``.
Text from the job file or the data reaches the SQL built here only through
:func:`sparktide.spark.sql.sql_string` or :func:`~sparktide.spark.sql.field`.
"""

from __future__ import annotations

from sparktide.spark.inputs.contract import INSTANT_RANGE
from sparktide.spark.sql import field, sql_string
from sparktide.time import INSTANT_PATTERN, NAIVE_PATTERN

__all__ = [
    "INSTANT_SQL",
    "NAIVE_SQL",
    "instant_of",
    "java_pattern",
    "partition_id",
    "quoted_text",
    "shown_number",
    "shown_text",
    "timestamp_micros",
    "value_json",
]


def java_pattern(pattern: str) -> str:
    """A ``^...$`` pattern for Java's regex (``RLIKE``), where ``$`` also matches before
    a final line terminator (``\\n``, ``\\r``, U+2028, ...): ends with ``\\z`` instead."""
    return pattern[:-1] + "\\z" if pattern.endswith("$") else pattern


#: SQL string literals of the time patterns of :mod:`sparktide.time`, for ``RLIKE``.
INSTANT_SQL = sql_string(java_pattern(INSTANT_PATTERN))
NAIVE_SQL = sql_string(java_pattern(NAIVE_PATTERN))


def value_json(name: str) -> str:
    """Canonical JSON text of field ``name`` (``NULL`` when missing or JSON null)."""
    value = field(name)
    return (
        f"CASE WHEN {value} IS NULL OR schema_of_variant({value}) = 'VOID' THEN NULL "
        f"ELSE to_json({value}) END"
    )


def timestamp_micros(text: str) -> str:
    """SQL: the microseconds of the time string ``text`` as Spark reads it (``NULL``
    when it cannot): to be checked against the reference's rules before use."""
    return f"unix_micros(try_to_timestamp({text}))"


def instant_of(text: str) -> str:
    """SQL of the instant (``BIGINT`` microseconds) of the SQL string ``text`` read as the
    reference reads a time (:func:`sparktide.time.instant_or_problem`): ISO-8601 with a
    zone, a real date in years 1-9999 once taken to UTC; ``NULL`` otherwise (and for
    ``NULL``). ``text`` is evaluated up to three times: pass a column or a literal."""
    micros = timestamp_micros(text)
    return f"CASE WHEN {text} RLIKE {INSTANT_SQL} AND {micros} {INSTANT_RANGE} THEN {micros} END"


def partition_id(text: str) -> str:
    """SQL: the partition id of a partition value given as text (``text``): digit strings
    within 64 bits read as integers (``"007"`` is partition ``7``), other text as it is."""
    return (
        f"CASE WHEN {text} RLIKE '^-?[0-9]+\\\\z' AND try_cast({text} AS BIGINT) IS NOT NULL "
        f"THEN CAST(CAST({text} AS BIGINT) AS STRING) ELSE {text} END"
    )


def shown_number(text: str) -> str:
    """:func:`sparktide.reader.shown_number` in SQL: at most 40 characters."""
    return f"CASE WHEN length({text}) > 40 THEN concat(left({text}, 40), '...') ELSE {text} END"


def shown_text(text: str) -> str:
    """:func:`sparktide.reader.shown_text` in SQL: characters outside printable ASCII as
    ``?``, at most 60 characters."""
    replaced = f"regexp_replace({text}, '[^ -~]', '?')"
    return (
        f"CASE WHEN length({text}) > 60 THEN concat(left({replaced}, 60), '...') "
        f"ELSE {replaced} END"
    )


def quoted_text(text: str) -> str:
    """The text in quotes, as the reference reader's messages show it: ``'…'``."""
    return f"concat('\\'', {shown_text(text)}, '\\'')"
