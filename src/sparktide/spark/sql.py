"""Small SQL-expression builders shared by the Spark engine's steps.

Text never reaches Spark SQL as free SQL. Column names from a job file are checked by
:mod:`sparktide.job` against the identifier grammar (letters, digits, ``_``, ``-``) and
then appear only inside JSON paths (``variant_get(m, "$['name']")``, built by
:func:`field`) or back-quoted identifiers (:func:`quote`). Every other text — partition
ids and column names read from the data, messages, patterns — goes through
:func:`sql_string`, which writes anything but plain printable ASCII as
``CAST(unhex('…') AS STRING)``: no quote, backslash or ``${...}`` (which Spark's parser
substitutes with configuration values and environment variables before parsing, even
inside string literals) survives into the SQL text.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.core.instants import NEG_INF
from sparktide.spark.columns import (
    RECORD,
)

__all__ = ["NEG", "field", "iso", "lit_us", "quote", "sql_string", "with_columns"]

_PLAIN = re.compile(r"[ !#%&()*+,\-./0-9:;<=>?@A-Z\[\]^_a-z{|}~]*\Z")
#: The job grammar for column names (:mod:`sparktide.job`), checked again here.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")

#: Minus infinity as a SQL literal (microseconds).
NEG = f"CAST({NEG_INF} AS BIGINT)"


def sql_string(text: str) -> str:
    """A SQL expression for the string ``text``, whatever it holds.

    Printable ASCII without quotes, back-quotes, backslashes or ``$`` is written as a
    quoted literal; anything else as ``CAST(unhex('…') AS STRING)``, which no quoting
    rule, parser setting or ``${...}`` variable substitution can change (Spark folds it
    to a constant).

    Examples
    --------
    >>> sql_string("count")
    "'count'"
    >>> sql_string("it's")
    "CAST(unhex('69742773') AS STRING)"
    """
    if _PLAIN.match(text):
        return f"'{text}'"
    return f"CAST(unhex('{text.encode('utf-8').hex()}') AS STRING)"


def quote(name: str) -> str:
    """A back-quoted identifier for a column name of the job grammar."""
    if not _NAME.match(name):
        raise ValueError(f"not a column name of the job grammar: {name!r}")
    return f"`{name}`"


def field(name: str, record: str = RECORD) -> str:
    """The variant value of top-level field ``name`` of the record ``record`` (a variant
    object column, :data:`~sparktide.spark.columns.RECORD` by default); SQL ``NULL``
    when the field is missing, a ``VOID`` variant for JSON null. ``name`` must be a
    column name of the job grammar, or ``<input>.<name>`` (a match's field, semantics
    §7.11), so that no quote can end the path; ``record`` a plain column name."""
    if not all(_NAME.match(part) for part in name.split(".", 1)):
        raise ValueError(f"not a column name of the job grammar: {name!r}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", record):
        raise ValueError(f"not a plain column name: {record!r}")
    path = sql_string("$['" + name + "']")
    return f"variant_get({record}, {path})"


def field_at(column: str, record: str = RECORD) -> str:
    """:func:`field`, or for a name with dots (``IoTHub.DeviceId``, a join column) the
    variant value inside the records; SQL ``NULL`` where a part is missing or no
    object."""
    if "." not in column:
        return field(column, record)
    parts = column.split(".")
    if not all(_NAME.match(part) for part in parts):
        raise ValueError(f"not a column path of the job grammar: {column!r}")
    field(parts[0], record)  # (checks the record's name)
    path = sql_string("$" + "".join(f"['{part}']" for part in parts))
    return f"variant_get({record}, {path})"


def lit_us(value: int | None) -> str:
    """An integer microsecond literal (``NULL`` for none)."""
    return "CAST(NULL AS BIGINT)" if value is None else f"CAST({int(value)} AS BIGINT)"


def iso(expr: str) -> str:
    """ISO-8601 UTC text of a microsecond expression, as ``format_instant`` writes it.

    Spark's CSV writer renders the instant with the zone given as its option, never the
    session's (which a caller's session, ``start``, may set to anything); the fraction's
    trailing zeros are trimmed, and with them a bare point. Small to analyse: each
    plan that shows an instant as text carries one of these per instant."""
    text = f"to_csv(named_struct('t', timestamp_micros({expr})), {_UTC_TEXT})"
    return (
        f"CASE WHEN ({expr}) IS NULL THEN NULL ELSE concat(rtrim('.', rtrim('0', {text})), 'Z') END"
    )


#: SQL: the CSV writer's options for :func:`iso` (all six fraction digits, in UTC).
_UTC_TEXT = "map('timestampFormat', \"yyyy-MM-dd'T'HH:mm:ss.SSSSSS\", 'timeZone', 'UTC')"


def with_columns(rows: DataFrame, columns: dict[str, str]) -> DataFrame:
    """``rows`` with ``columns`` (name: SQL over ``rows``' own columns, none over another
    of ``columns``) added in one projection: each ``withColumn`` analyses the whole plan
    again (docs/design.md, "The test suite's Spark sessions")."""
    return rows.withColumns({name: F.expr(sql) for name, sql in columns.items()})
