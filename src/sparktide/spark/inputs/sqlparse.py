"""The general SQL route: lines into typed columns, with the reference reader's verdicts.

Every line a parser did not vouch for comes here, and this route is exact for every
input. The checks and their error messages mirror :func:`sparktide.reader.parse_fields`
and ``_jsonl_rows``, in the same order, so a malformed record gets the same dead letter
from both engines. JSON is read once with ``try_parse_json`` (strict: no duplicate keys,
no NaN) into a ``variant``, which keeps every value's JSON type; fields are read from it
with ``variant_get`` (a binary search, no second parse). The steps, in order:

1. :func:`_with_record`: the line's own verdicts (bytes, length, JSON syntax, numbers in
   range, an object) and the record variant :data:`~sparktide.spark.columns.RECORD`;
2. :func:`_with_field_errors`: the record's fields, checked
   (:func:`~sparktide.spark.inputs.sqlchecks.record_checks`);
3. :func:`_typed_values`: the typed columns (times, partition id, key, and those of CTI,
   interval and edge events), taken from the parser's values on vouched rows;
4. :func:`_shifted`: time shifting.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.expr import Expr
from sparktide.job import Job, Source
from sparktide.reader import MAX_INTEGER_DIGITS, MAX_LINE_CHARS, NUMBER_CANDIDATE
from sparktide.spark.columns import (
    ARRIVAL_TIME,
    EDGE,
    EDGE_ID,
    END_TIME,
    EVENT_TIME,
    IS_CTI,
    LINE,
    PARTITION,
    RAW,
    RECORD,
    SUBSTREAM_KEY,
)
from sparktide.spark.inputs.contract import VOUCHED, VOUCHED_COLUMNS, kernel_column
from sparktide.spark.inputs.sqlchecks import Check, FieldColumns, first_error, record_checks
from sparktide.spark.inputs.sqlvalues import partition_id, shown_number
from sparktide.spark.sql import quote, sql_string

__all__ = ["computed_fields", "parse_lines"]

#: JSON string literals of valid JSON (possessive: no backtracking, no deep recursion).
_JSON_STRING = r'"(?:[^"\\]++|\\.)*+"'
#: JSON number tokens (once strings are blanked out, every digit belongs to one).
_JSON_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
#: SQL: the first number of a parsed JSON line that is out of range for the reference
#: reader (an infinite float, an integer of more than ``MAX_INTEGER_DIGITS`` digits).
_OUT_OF_RANGE_NUMBER = (
    f"CASE WHEN _v IS NOT NULL AND raw RLIKE {sql_string(NUMBER_CANDIDATE)} THEN "
    f"try_element_at(filter(regexp_extract_all(regexp_replace(raw, "
    f"{sql_string(_JSON_STRING)}, '\"\"'), {sql_string(_JSON_NUMBER)}, 0), x -> "
    "CASE WHEN x RLIKE '[.eE]' THEN abs(CAST(x AS DOUBLE)) = CAST('Infinity' AS DOUBLE) "
    f"ELSE length(ltrim('-', x)) > {MAX_INTEGER_DIGITS} END), 1) END"
)
_INVALID_JSON = "concat('line ', line, ': not valid JSON')"
#: SQL: the record is well formed (no dead letter).
_WELL_FORMED = "error IS NULL"


def parse_lines(lines: DataFrame, job: Job, *, epochs: bool = True) -> DataFrame:
    """Parse ``lines`` (``file``, ``line``, ``raw``, ``mtime``) into typed columns.

    When ``lines`` has a column named by ``source.partition`` (a broker's partition
    column), the partition id comes from it instead of the record.

    Adds ``m`` (the record as a ``variant`` object), ``error`` (null when the record
    is well formed), ``t`` and ``a`` (event and arrival time, microseconds), ``pid``
    (partition id as text), ``key`` (substream key as canonical JSON) and, per column
    in ``job.numeric_columns``, nothing more: aggregates read ``m`` themselves.

    Rows a parser vouched for carry ``fast`` and its values (``_kt``, ``_ka``,
    ``_kpid``, ``_kkey``, ``_kmj``: :data:`~sparktide.spark.inputs.contract.VOUCHED_COLUMNS`):
    where ``fast`` is true those are taken and none of the checks is evaluated.
    """
    if "pre_error" not in lines.columns:
        lines = lines.withColumn("pre_error", F.lit(None).cast("string"))
    kernel = VOUCHED in lines.columns
    unvouched = _unvouched_only(kernel)
    out = _with_record(lines, job.source.format == "jsonl", kernel, unvouched)
    partition = job.source.partition
    stream_partition = partition is not None and partition in lines.columns
    # (``epochs``: a time column may hold epoch numbers, semantics §1.4; not a typed
    # stream's rows, whose times are instants already)
    fields = FieldColumns(
        unvouched, job.source.time_unit if epochs else None, computed_fields(job.source)
    )
    checks, cti = record_checks(fields, job, stream_partition)
    out = _with_field_errors(out, fields, checks, unvouched)
    out = _typed_values(out, job, fields, cti, stream_partition, kernel)
    return _shifted(out, job.source)


def computed_fields(source: Source) -> dict[str, Expr]:
    """The fields a source computes from its records: a ``timestamp_by`` or ``over``
    expression (semantics §1.4), named by its text."""
    computed = {}
    for text, expression in (
        (source.timestamp_by, source.timestamp_expression),
        (source.over, source.key_expression),
    ):
        if expression is not None:
            computed[text] = expression
    return computed  # type: ignore[return-value]


def _unvouched_only(kernel: bool) -> Callable[[str], str]:
    """``expr`` for the rows no parser vouched for (all rows when none could)."""

    def unvouched(expr: str) -> str:
        return f"CASE WHEN {VOUCHED} THEN NULL ELSE {expr} END" if kernel else expr

    return unvouched


def _with_record(
    lines: DataFrame, jsonl: bool, kernel: bool, unvouched: Callable[[str], str]
) -> DataFrame:
    """Stage 0: the strict parse, once per row, the line's ``error`` and the record ``m``.

    ``raw`` is stripped, so a JSON value is an object exactly when its first character is
    ``{`` (cheaper than its schema). ``parse_json`` reads the first value and ignores what
    follows it; Python's ``json`` rejects anything after it. So a JSON line is parsed as
    the one element of an array, ``[raw]``: text after the value then fails the parse or
    makes a second element, unless it starts with ``]`` (which closes the array early),
    which parsing ``{"k":raw}`` rejects. Lines too long or not UTF-8 are not parsed at
    all. CSV and Parquet rows arrive as JSON objects their readers made (valid UTF-8, one
    value, no out-of-range number; a CSV line's own length and bytes were judged by its
    reader): they are parsed as they are."""
    if jsonl:
        bad_utf8 = "NOT is_valid_utf8(raw)"
        too_long = f"length(raw) > {MAX_LINE_CHARS}"
        parse = (
            f"CASE WHEN {bad_utf8} OR {too_long} THEN NULL "
            "ELSE try_parse_json(concat('[', raw, ']')) END"
        )
        value = "variant_get(_v, '$[0]')"
    else:
        bad_utf8 = too_long = "false"
        parse, value = "CASE WHEN pre_error IS NULL THEN try_parse_json(raw) END", "_v"
    out = lines.selectExpr(
        *(c for c in lines.columns if c != "raw"),
        f"CASE WHEN {unvouched(bad_utf8)} THEN make_valid_utf8(raw) ELSE raw END AS raw",
        f"coalesce({unvouched(bad_utf8)}, false) AS _vu",  # (judged before raw is made valid)
        f"{unvouched(parse)} AS _v",
        f"left({RAW}, 1) = '{{' AS _vo",
    )
    if jsonl:
        out = out.selectExpr("*", f"{unvouched(_OUT_OF_RANGE_NUMBER)} AS _vn")
    error = first_error(_line_checks(jsonl, too_long))
    out = out.selectExpr("*", f"{unvouched(error)} AS error")
    record = f"CASE WHEN {_WELL_FORMED} THEN {value} END"
    if kernel:
        record = f"CASE WHEN {VOUCHED} THEN parse_json({kernel_column('mj')}) ELSE {record} END"
    return out.selectExpr(
        *(c for c in out.columns if c not in ("_v", "_vo", "_vn", "_vu")), f"{record} AS {RECORD}"
    )


def _line_checks(jsonl: bool, too_long: str) -> list[Check]:
    """The checks of a line itself, in the reference reader's order (``_v``: its parse,
    ``_vu``: not UTF-8, ``_vn``: its first out-of-range number, ``_vo``: an object)."""
    checks: list[Check] = [
        ("pre_error IS NOT NULL", "pre_error"),
        ("_vu", "concat('line ', line, ': invalid UTF-8')"),
        (
            too_long,
            f"concat('line ', line, ': too long (', length(raw), ' characters, the limit is "
            f"{MAX_LINE_CHARS})')",
        ),
        ("_v IS NULL", _INVALID_JSON),
    ]
    if jsonl:
        checks += [
            ("variant_get(_v, '$[1]') IS NOT NULL", _INVALID_JSON),
            (
                "instr(raw, ']') > 0 AND try_parse_json(concat('{\"k\":', raw, '}')) IS NULL",
                _INVALID_JSON,
            ),
            (
                "_vn IS NOT NULL",
                f"concat('line ', line, ': number ', {shown_number('_vn')}, ' is out of range')",
            ),
        ]
    checks.append(("NOT _vo", f"concat('line ', {LINE}, ': expected a JSON object')"))
    return checks


def _with_field_errors(
    out: DataFrame, fields: FieldColumns, checks: list[Check], unvouched: Callable[[str], str]
) -> DataFrame:
    """The fields' columns (:meth:`FieldColumns.stages`) and, for a record whose line
    was well formed, the error of its fields."""
    for stage in fields.stages():
        if stage:
            out = out.selectExpr("*", *stage)
    record_error = first_error(checks) if checks else "CAST(NULL AS STRING)"
    return out.withColumn("error", F.expr(f"coalesce(error, {unvouched(record_error)})"))


def _typed_values(
    out: DataFrame,
    job: Job,
    fields: FieldColumns,
    cti: str,
    stream_partition: bool,
    kernel: bool,
) -> DataFrame:
    """The typed columns of the well-formed records (``NULL`` for the others): ``t``,
    ``a``, ``pid``, ``key``, and ``cti`` / ``e`` / ``edge`` and ``eid`` when the job has
    them; the parser's own values where it vouched for the row. Internal columns go."""
    source = job.source
    ok = _WELL_FORMED
    arrival = fields.micros(source.arrival_time) if source.arrival_time is not None else "mtime"
    event = fields.micros(source.timestamp_by) if source.timestamp_by is not None else arrival
    key = (
        f"to_json({fields.value(source.over)})"
        if source.over is not None
        else "CAST(NULL AS STRING)"
    )
    pid = _partition(source, fields, stream_partition)
    values = {ARRIVAL_TIME: arrival, PARTITION: pid, SUBSTREAM_KEY: key, EVENT_TIME: event}
    extra = _event_kind_columns(job, fields, cti)
    internal = {name.rsplit(" AS ", 1)[1] for stage in fields.stages() for name in stage}
    internal |= {name for name, _ in VOUCHED_COLUMNS}
    kept = [c for c in out.columns if c not in internal]
    out = out.selectExpr(
        *kept,
        *(
            (f"CASE WHEN {VOUCHED} THEN {kernel_column(name)} WHEN {ok} THEN {expr} END AS {name}")
            if kernel
            else f"CASE WHEN {ok} THEN {expr} END AS {name}"
            for name, expr in values.items()
        ),
        *extra,
    )
    typed = (EVENT_TIME, ARRIVAL_TIME, PARTITION, SUBSTREAM_KEY)
    return out.select(*kept, *typed, *(e.rsplit(" AS ", 1)[1] for e in extra))


def _partition(source: Source, fields: FieldColumns, stream_partition: bool) -> str:
    """SQL: a record's partition id, from the stream's column or the record's field."""
    if source.partition is None:
        return "'0'"
    if stream_partition:  # a column of the stream itself, e.g. Kafka's partition
        return partition_id(f"CAST({quote(source.partition)} AS STRING)")
    return partition_id(f"try_variant_get({fields.value(source.partition)}, '$', 'string')")


def _event_kind_columns(job: Job, fields: FieldColumns, cti: str) -> list[str]:
    """``expr AS name`` of the columns of CTI rows (``cti``), interval events' ends
    (``e``) and edge events (``edge``, ``eid``), as the job has them."""
    source = job.source
    ok = _WELL_FORMED
    extra = []
    punctuation = job.punctuation
    if punctuation is not None and punctuation.column is not None:
        extra.append(f"coalesce({ok} AND {cti}, false) AS {IS_CTI}")
    if source.duration is not None:  # (semantics §7.6: start + duration, before the shift)
        start = fields.micros(source.timestamp_by)  # type: ignore[arg-type]
        extra.append(
            f"CASE WHEN {ok} AND NOT ({cti}) THEN {start} + {source.duration} END AS {END_TIME}"
        )
    elif source.end_time is not None:
        extra.append(
            f"CASE WHEN {ok} AND NOT ({cti}) THEN {fields.micros(source.end_time)} END "
            f"AS {END_TIME}"
        )
    if source.edge is not None:  # the id as JSON text: 3 and "3" are different ids
        edge_ok = f"{ok} AND NOT ({cti})"
        edge_id = fields.value(source.edge_id)  # type: ignore[arg-type]
        extra.append(
            f"CASE WHEN {edge_ok} THEN try_variant_get({fields.value(source.edge)}, '$', "
            f"'string') END AS {EDGE}"
        )
        extra.append(f"CASE WHEN {edge_ok} THEN to_json({edge_id}) END AS {EDGE_ID}")
    return extra


def _shifted(out: DataFrame, source: Source) -> DataFrame:
    """Time shifting (semantics §7): event times, ends and CTIs alike."""
    if source.shift:
        out = out.withColumn(EVENT_TIME, F.col(EVENT_TIME) + F.lit(source.shift))
        if source.intervals:
            out = out.withColumn(END_TIME, F.col(END_TIME) + F.lit(source.shift))
    return out
