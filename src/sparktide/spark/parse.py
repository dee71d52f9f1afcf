"""Turning raw input lines into typed columns, with the reference reader's exact verdicts.

The checks and their error messages mirror :func:`sparktide.reader.parse_fields` and
``_jsonl_rows``, in the same order, so a malformed record gets the same dead letter
from both engines. JSON is read with ``try_parse_json`` (strict: no duplicate keys, no
NaN) into a ``map<string, variant>``, which keeps every value's JSON type.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.job import Job
from sparktide.spark.sql import field, quote
from sparktide.time import INSTANT_PATTERN

__all__ = ["NAIVE_PATTERN", "parse_lines", "value_json"]

NAIVE_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$"
_WS = r"^[ \t\r\n\f\x0B]+|[ \t\r\n\f\x0B]+$"
_NO_ZONE = " has no time zone (add 'Z' or an offset)"
_NUMBER_TYPES = r"^(TINYINT|SMALLINT|INT|BIGINT|FLOAT|DOUBLE|DECIMAL.*)$"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def value_json(name: str) -> str:
    """Canonical JSON text of field ``name`` (``NULL`` when missing or JSON null)."""
    v = field(name)
    return (
        f"CASE WHEN {v} IS NULL OR schema_of_variant({v}) = 'VOID' THEN NULL ELSE to_json({v}) END"
    )


def _time_checks(column: str, what: str) -> list[tuple[str, str]]:
    """(condition, error) pairs for a time column, in the reference reader's order."""
    v = field(column)
    text = f"try_variant_get({v}, '$', 'string')"
    prefix = f"column '{column}': "
    return [
        (
            f"{v} IS NULL OR schema_of_variant({v}) = 'VOID'",
            _sql_string(f"missing {what} column '{column}'"),
        ),
        (
            f"schema_of_variant({v}) <> 'STRING'",
            _sql_string(prefix + "expected an ISO-8601 time string"),
        ),
        (
            f"NOT {text} RLIKE {_sql_string(INSTANT_PATTERN)} AND {text} RLIKE "
            f"{_sql_string(NAIVE_PATTERN)}",
            f"concat({_sql_string(prefix + 'time ')}, {_repr(text)}, {_sql_string(_NO_ZONE)})",
        ),
        (
            f"NOT {text} RLIKE {_sql_string(INSTANT_PATTERN)}",
            f"concat({_sql_string(prefix + 'time ')}, {_repr(text)}, "
            f"{_sql_string(' is not an ISO-8601 date-time with a zone (YYYY-MM-DDThh:mm:ssZ)')})",
        ),
        (
            f"try_to_timestamp({text}) IS NULL",
            f"concat({_sql_string(prefix + 'time ')}, {_repr(text)}, "
            f"{_sql_string(' is not a valid date-time')})",
        ),
    ]


def _repr(text: str) -> str:
    """Python's ``repr`` of a string without quotes or backslashes: ``'…'``."""
    return f"concat('\\'', {text}, '\\'')"


def _micros(column: str) -> str:
    return f"unix_micros(try_to_timestamp(try_variant_get({field(column)}, '$', 'string')))"


def parse_lines(lines: DataFrame, job: Job) -> DataFrame:
    """Parse ``lines`` (``file``, ``line``, ``raw``, ``mtime``) into typed columns.

    When ``lines`` has a column named by ``source.partition`` (a broker's partition
    column), the partition id comes from it instead of the record.

    Adds ``m`` (the record as ``map<string, variant>``), ``error`` (null when the record
    is well formed), ``t`` and ``a`` (event and arrival time, microseconds), ``pid``
    (partition id as text), ``key`` (substream key as canonical JSON) and, per column
    in ``job.numeric_columns``, nothing more: aggregates read ``m`` themselves.
    """
    source = job.source
    raw = "raw"
    checks: list[tuple[str, str]] = [
        ("pre_error IS NOT NULL", "pre_error"),
        (f"instr({raw}, '\ufffd') > 0", "concat('line ', line, ': invalid UTF-8')"),
        (f"try_parse_json({raw}) IS NULL", "concat('line ', line, ': not valid JSON')"),
        (
            # parse_json stops after the first value; Python's json rejects trailing text
            f"schema_of_variant(try_parse_json({raw})) LIKE 'OBJECT%' AND NOT {raw} LIKE '%}}'",
            "concat('line ', line, ': not valid JSON')",
        ),
        (
            "NOT schema_of_variant(try_parse_json(raw)) LIKE 'OBJECT%'",
            "concat('line ', line, ': expected a JSON object')",
        ),
    ]
    record_checks: list[tuple[str, str]] = []
    if source.arrival_time is not None:
        record_checks += _time_checks(source.arrival_time, "arrival time")
    if source.timestamp_by is not None:
        record_checks += _time_checks(source.timestamp_by, "timestamp")
    stream_partition = source.partition is not None and source.partition in lines.columns
    if source.partition is not None and not stream_partition:
        v = field(source.partition)
        record_checks += [
            (
                f"{v} IS NULL OR schema_of_variant({v}) = 'VOID'",
                _sql_string(f"missing partition column '{source.partition}'"),
            ),
            (
                f"NOT (schema_of_variant({v}) IN ('TINYINT', 'SMALLINT', 'INT', 'BIGINT') OR "
                f"schema_of_variant({v}) = 'STRING')",
                _sql_string(
                    f"partition column '{source.partition}' must be an integer or a string"
                ),
            ),
        ]
    if source.over is not None:
        v = field(source.over)
        record_checks += [
            (
                f"{v} IS NULL OR schema_of_variant({v}) = 'VOID'",
                _sql_string(f"missing substream key column '{source.over}'"),
            ),
            (
                f"schema_of_variant({v}) LIKE 'OBJECT%' OR schema_of_variant({v}) LIKE 'ARRAY%'",
                _sql_string(f"substream key column '{source.over}' must be a single value"),
            ),
        ]
    for column in sorted(job.numeric_columns):
        v = field(column)
        record_checks.append(
            (
                f"NOT ({v} IS NULL OR schema_of_variant({v}) = 'VOID' OR "
                f"schema_of_variant({v}) RLIKE '{_NUMBER_TYPES}')",
                _sql_string(f"column '{column}' must be a number"),
            )
        )
    json_error = "CASE " + " ".join(f"WHEN {c} THEN {e}" for c, e in checks) + " END"
    record_error = (
        ("CASE " + " ".join(f"WHEN {c} THEN {e}" for c, e in record_checks) + " END")
        if record_checks
        else "CAST(NULL AS STRING)"
    )
    if "pre_error" not in lines.columns:
        lines = lines.withColumn("pre_error", F.lit(None).cast("string"))
    out = lines.withColumn("error", F.expr(json_error))
    out = out.withColumn(
        "m",
        F.expr("CASE WHEN error IS NULL THEN from_json(raw, 'map<string,variant>') END"),
    )
    out = out.withColumn("error", F.expr(f"coalesce(error, {record_error})"))
    ok = "error IS NULL"
    arrival = _micros(source.arrival_time) if source.arrival_time is not None else "mtime"
    out = out.withColumn("a", F.expr(f"CASE WHEN {ok} THEN {arrival} END"))
    event = _micros(source.timestamp_by) if source.timestamp_by is not None else "a"
    out = out.withColumn("t", F.expr(f"CASE WHEN {ok} THEN {event} END"))
    if stream_partition:  # a column of the stream itself, e.g. Kafka's partition
        text = f"CAST({quote(source.partition)} AS STRING)"  # type: ignore[arg-type]
        pid = (
            f"CASE WHEN {text} RLIKE '^-?[0-9]+$' "
            f"THEN CAST(CAST({text} AS DECIMAL(38,0)) AS STRING) ELSE {text} END"
        )
    elif source.partition is not None:
        v = field(source.partition)
        text = f"try_variant_get({v}, '$', 'string')"
        pid = (
            f"CASE WHEN {text} RLIKE '^-?[0-9]+$' "
            f"THEN CAST(CAST({text} AS DECIMAL(38,0)) AS STRING) ELSE {text} END"
        )
    else:
        pid = "'0'"
    out = out.withColumn("pid", F.expr(f"CASE WHEN {ok} THEN {pid} END"))
    key = f"to_json({field(source.over)})" if source.over is not None else "CAST(NULL AS STRING)"
    return out.withColumn("key", F.expr(f"CASE WHEN {ok} THEN {key} END"))
