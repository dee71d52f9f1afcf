"""Turning raw input lines into typed columns, with the reference reader's exact verdicts.

The checks and their error messages mirror :func:`sparktide.reader.parse_fields` and
``_jsonl_rows``, in the same order, so a malformed record gets the same dead letter
from both engines. JSON is read once with ``try_parse_json`` (strict: no duplicate keys,
no NaN) into a ``variant``, which keeps every value's JSON type; fields are read from it
with ``variant_get`` (a binary search, no second parse). Text from the job file or the
data reaches the SQL built here only through :func:`sparktide.spark.sql.sql_string` or
:func:`~sparktide.spark.sql.field`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.job import Job
from sparktide.reader import MAX_INTEGER_DIGITS, MAX_LINE_CHARS, NUMBER_CANDIDATE
from sparktide.spark.sql import field, quote, sql_string
from sparktide.time import INSTANT_PATTERN, NAIVE_PATTERN, parse_instant

__all__ = [
    "FIRST_INSTANT",
    "FULL_TEXT",
    "LAST_INSTANT",
    "NAIVE_PATTERN",
    "WHITE_SPACE",
    "glob_escape",
    "instant_of",
    "java_pattern",
    "json_texts",
    "lines_of",
    "parse_lines",
    "partition_id",
    "shown_text",
    "split_lines",
    "value_json",
    "whole_texts",
]

#: JSON string literals of valid JSON (possessive: no backtracking, no deep recursion).
_JSON_STRING = r'"(?:[^"\\]++|\\.)*+"'
#: JSON number tokens (once strings are blanked out, every digit belongs to one).
_JSON_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
#: A lines column holding every line's text where ``raw`` may leave a vouched line's out
#: (typed Parquet rows of a windowed job): read for dead letters only, never parsed.
FULL_TEXT = "_full_text"
#: The instants the reference reader can represent (years 1-9999, as datetime).
FIRST_INSTANT = parse_instant("0001-01-01T00:00:00Z")
LAST_INSTANT = parse_instant("9999-12-31T23:59:59.999999Z")
#: What the reference reader strips from a line (ASCII white space).
WHITE_SPACE = " \t\r\n\f\x0b"
_NO_ZONE = " has no time zone (add 'Z' or an offset)"
_NUMBER_TYPES = r"^(TINYINT|SMALLINT|INT|BIGINT|FLOAT|DOUBLE|DECIMAL.*)$"


def value_json(name: str) -> str:
    """Canonical JSON text of field ``name`` (``NULL`` when missing or JSON null)."""
    v = field(name)
    return (
        f"CASE WHEN {v} IS NULL OR schema_of_variant({v}) = 'VOID' THEN NULL ELSE to_json({v}) END"
    )


class _Fields:
    """Per record column the job reads, SQL names of its values computed once per row.

    Stage 1 extracts the variant (``_f<i>``); stage 2 its type (``_k<i>``) and, for time
    columns, its text (``_s<i>``); stage 3 the regex verdicts and the parsed instant. The
    checks then refer to these columns, so nothing is parsed or matched twice per row.
    """

    def __init__(self, guard: Callable[[str], str]) -> None:
        self.index: dict[str, int] = {}
        self.times: set[str] = set()
        self.guard = guard  # restricts the extraction to the rows that need it

    def add(self, column: str, *, time: bool = False) -> int:
        i = self.index.setdefault(column, len(self.index))
        if time:
            self.times.add(column)
        return i

    def value(self, column: str) -> str:
        return f"_f{self.index[column]}"

    def kind(self, column: str) -> str:
        return f"_k{self.index[column]}"

    def text(self, column: str) -> str:
        return f"_s{self.index[column]}"

    def micros(self, column: str) -> str:
        return f"_u{self.index[column]}"

    def zoned(self, column: str) -> str:
        return f"_z{self.index[column]}"

    def missing(self, column: str) -> str:
        return f"({self.value(column)} IS NULL OR {self.kind(column)} = 'VOID')"

    def stages(self) -> list[list[str]]:
        """The three projections (lists of ``expr AS name``) that add the columns."""
        one, two, three = [], [], []
        for column, i in self.index.items():
            one.append(f"{self.guard(field(column))} AS _f{i}")
            two.append(f"schema_of_variant(_f{i}) AS _k{i}")
            if column in self.times:
                two.append(f"try_variant_get(_f{i}, '$', 'string') AS _s{i}")
                three.append(f"_s{i} RLIKE {_INSTANT_SQL} AS _z{i}")
                three.append(f"unix_micros(try_to_timestamp(_s{i})) AS _u{i}")
        return [one, two, three]


def java_pattern(pattern: str) -> str:
    """A ``^...$`` pattern for Java's regex (``RLIKE``), where ``$`` also matches before
    a final line terminator (``\\n``, ``\\r``, U+2028, ...): ends with ``\\z`` instead."""
    return pattern[:-1] + "\\z" if pattern.endswith("$") else pattern


_INSTANT_SQL = sql_string(java_pattern(INSTANT_PATTERN))
_NAIVE_SQL = sql_string(java_pattern(NAIVE_PATTERN))


def instant_of(text: str) -> str:
    """SQL of the instant (``BIGINT`` microseconds) of the SQL string ``text`` read as the
    reference reads a time (:func:`sparktide.time.instant_or_problem`): ISO-8601 with a
    zone, a real date in years 1-9999 once taken to UTC; ``NULL`` otherwise (and for
    ``NULL``). ``text`` is evaluated up to three times: pass a column or a literal."""
    micros = f"unix_micros(try_to_timestamp({text}))"
    return (
        f"CASE WHEN {text} RLIKE {_INSTANT_SQL} AND {micros} BETWEEN {FIRST_INSTANT} AND "
        f"{LAST_INSTANT} THEN {micros} END"
    )


def _time_checks(fields: _Fields, column: str, what: str) -> list[tuple[str, str]]:
    """(condition, error) pairs for a time column, in the reference reader's order."""
    text = fields.text(column)
    prefix = f"column '{column}': "
    return [
        (fields.missing(column), sql_string(f"missing {what} column '{column}'")),
        (
            f"{fields.kind(column)} <> 'STRING'",
            sql_string(prefix + "expected an ISO-8601 time string"),
        ),
        (
            f"NOT {fields.zoned(column)} AND {text} RLIKE {_NAIVE_SQL}",
            f"concat({sql_string(prefix + 'time ')}, {_repr(text)}, {sql_string(_NO_ZONE)})",
        ),
        (
            f"NOT {fields.zoned(column)}",
            f"concat({sql_string(prefix + 'time ')}, {_repr(text)}, "
            f"{sql_string(' is not an ISO-8601 date-time with a zone (YYYY-MM-DDThh:mm:ssZ)')})",
        ),
        (
            # years 1-9999 once taken to UTC, as Python's datetime (Spark reads year 0)
            f"{fields.micros(column)} IS NULL OR {fields.micros(column)} "
            f"NOT BETWEEN {FIRST_INSTANT} AND {LAST_INSTANT}",
            f"concat({sql_string(prefix + 'time ')}, {_repr(text)}, "
            f"{sql_string(' is not a valid date-time')})",
        ),
    ]


def _shown(text: str) -> str:
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


def _repr(text: str) -> str:
    """The text in quotes, as the reference reader's messages show it: ``'…'``."""
    return f"concat('\\'', {shown_text(text)}, '\\'')"


def lines_of(text: str) -> str:
    r"""SQL for the lines of a whole file (split at ``\n``) with their bytes intact.

    ``split`` decodes its input, turning bytes that are not UTF-8 into U+FFFD, after
    which no one can tell them from a real U+FFFD. So a file that is not valid UTF-8 is
    split as ISO-8859-1 text (one character per byte, ``\n`` still ``\n``) and each line
    encoded back to its own bytes: ``is_valid_utf8`` then judges each line alone."""
    return (
        f"CASE WHEN is_valid_utf8({text}) THEN split({text}, '\\n') "
        f"ELSE transform(split(decode(CAST({text} AS BINARY), 'ISO-8859-1'), '\\n'), "
        "x -> CAST(encode(x, 'ISO-8859-1') AS STRING)) END"
    )


def whole_texts(frame: DataFrame) -> DataFrame:
    """A ``wholetext`` text source's rows → whole files: ``file`` (the name, decoded),
    ``text``, ``mtime`` (the file's modification time)."""
    # _metadata names are URI-encoded ("a b" → "a%20b"): decode them (keeping "+")
    name = F.expr("url_decode(replace(_metadata.file_name, '+', '%2B'))").alias("file")
    mtime = F.expr("unix_micros(_metadata.file_modification_time)").alias("mtime")
    return frame.select(name, F.col("value").alias("text"), mtime)


def json_texts(files: DataFrame) -> DataFrame:
    """JSONL files named by Spark's ``binaryFile`` stream (``path``, ``file``,
    ``mtime``, ``length``) → whole files (``file``, ``text``, ``mtime``), their text read
    by Spark: for the general plan, or when the tasks cannot read them by path."""
    spark = files.sparkSession
    paths = [row["path"] for row in files.select("path").collect()]
    if not paths:
        return spark.createDataFrame([], "file string, text string, mtime bigint")
    reader = spark.read.format("text").option("wholetext", "true")
    return whole_texts(reader.load([glob_escape(path) for path in paths]))


def glob_escape(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped (a file named ``x[1].parquet``)."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", path)


def split_lines(files: DataFrame) -> DataFrame:
    """Whole files → one row per non-blank line: ``file``, ``line`` (1-based), ``raw``,
    ``mtime``; lines are stripped of white space as the reference reader does."""
    lines = files.select(
        "file", "mtime", F.posexplode(F.expr(lines_of("text"))).alias("pos", "text")
    )
    lines = lines.select(
        "file",
        (F.col("pos") + 1).cast("bigint").alias("line"),
        F.btrim("text", F.lit(WHITE_SPACE)).alias("raw"),
        "mtime",
    )
    return lines.filter("raw <> ''")


def parse_lines(lines: DataFrame, job: Job) -> DataFrame:
    """Parse ``lines`` (``file``, ``line``, ``raw``, ``mtime``) into typed columns.

    When ``lines`` has a column named by ``source.partition`` (a broker's partition
    column), the partition id comes from it instead of the record.

    Adds ``m`` (the record as a ``variant`` object), ``error`` (null when the record
    is well formed), ``t`` and ``a`` (event and arrival time, microseconds), ``pid``
    (partition id as text), ``key`` (substream key as canonical JSON) and, per column
    in ``job.numeric_columns``, nothing more: aggregates read ``m`` themselves.

    Rows of :func:`sparktide.spark.arrowparse.parse_files` carry ``fast`` and the Arrow
    kernel's values (``_kt``, ``_ka``, ``_kpid``, ``_kkey``, ``_kmj``): where ``fast``
    is true those are taken and none of the checks below is evaluated.
    """
    source = job.source
    if "pre_error" not in lines.columns:
        lines = lines.withColumn("pre_error", F.lit(None).cast("string"))
    kernel = "fast" in lines.columns

    def slow(expr: str) -> str:
        """``expr`` for rows the Arrow kernel did not vouch for (all rows without it)."""
        return f"CASE WHEN fast THEN NULL ELSE {expr} END" if kernel else expr

    # Stage 0: the strict parse, once per row. ``raw`` is stripped, so a JSON value is an
    # object exactly when its first character is ``{`` (cheaper than its schema).
    # ``parse_json`` reads the first value and ignores what follows it; Python's ``json``
    # rejects anything after it. So a JSON line is parsed as the one element of an array,
    # ``[raw]``: text after the value then fails the parse or makes a second element,
    # unless it starts with ``]`` (which closes the array early), which parsing
    # ``{"k":raw}`` rejects. Lines too long or not UTF-8 are not parsed at all. CSV and
    # Parquet rows arrive as JSON objects their readers made (valid UTF-8, one value, no
    # out-of-range number; a CSV line's own length and bytes were judged by its reader):
    # they are parsed as they are.
    if source.format == "jsonl":
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
        f"CASE WHEN {slow(bad_utf8)} THEN make_valid_utf8(raw) ELSE raw END AS raw",
        f"coalesce({slow(bad_utf8)}, false) AS _vu",  # (judged before raw is made valid)
        f"{slow(parse)} AS _v",
        "left(raw, 1) = '{' AS _vo",
    )
    invalid = "concat('line ', line, ': not valid JSON')"
    checks: list[tuple[str, str]] = [
        ("pre_error IS NOT NULL", "pre_error"),
        ("_vu", "concat('line ', line, ': invalid UTF-8')"),
        (
            too_long,
            f"concat('line ', line, ': too long (', length(raw), ' characters, the limit is "
            f"{MAX_LINE_CHARS})')",
        ),
        ("_v IS NULL", invalid),
    ]
    if source.format == "jsonl":
        number = (
            f"CASE WHEN _v IS NOT NULL AND raw RLIKE {sql_string(NUMBER_CANDIDATE)} THEN "
            f"try_element_at(filter(regexp_extract_all(regexp_replace(raw, "
            f"{sql_string(_JSON_STRING)}, '\"\"'), {sql_string(_JSON_NUMBER)}, 0), x -> "
            "CASE WHEN x RLIKE '[.eE]' THEN abs(CAST(x AS DOUBLE)) = CAST('Infinity' AS DOUBLE) "
            f"ELSE length(ltrim('-', x)) > {MAX_INTEGER_DIGITS} END), 1) END"
        )
        out = out.selectExpr("*", f"{slow(number)} AS _vn")
        checks += [
            ("variant_get(_v, '$[1]') IS NOT NULL", invalid),
            (
                "instr(raw, ']') > 0 AND try_parse_json(concat('{\"k\":', raw, '}')) IS NULL",
                invalid,
            ),
            (
                "_vn IS NOT NULL",
                f"concat('line ', line, ': number ', {_shown('_vn')}, ' is out of range')",
            ),
        ]
    checks.append(("NOT _vo", "concat('line ', line, ': expected a JSON object')"))
    json_error = "CASE " + " ".join(f"WHEN {c} THEN {e}" for c, e in checks) + " END"
    out = out.selectExpr("*", f"{slow(json_error)} AS error")
    record = f"CASE WHEN error IS NULL THEN {value} END"
    if kernel:
        record = f"CASE WHEN fast THEN parse_json(_kmj) ELSE {record} END"
    out = out.selectExpr(
        *(c for c in out.columns if c not in ("_v", "_vo", "_vn", "_vu")), f"{record} AS m"
    )
    fields = _Fields(slow)
    record_checks: list[tuple[str, str]] = []
    if source.arrival_time is not None:
        fields.add(source.arrival_time, time=True)
        record_checks += _time_checks(fields, source.arrival_time, "arrival time")
    if source.timestamp_by is not None:
        fields.add(source.timestamp_by, time=True)
        record_checks += _time_checks(fields, source.timestamp_by, "timestamp")
    stream_partition = source.partition is not None and source.partition in lines.columns
    if source.partition is not None and not stream_partition:
        fields.add(source.partition)
        kind = fields.kind(source.partition)
        record_checks += [
            (
                fields.missing(source.partition),
                sql_string(f"missing partition column '{source.partition}'"),
            ),
            (
                f"NOT ({kind} IN ('TINYINT', 'SMALLINT', 'INT', 'BIGINT') OR {kind} = 'STRING')",
                sql_string(
                    f"partition column '{source.partition}' must be an integer of at most "
                    "64 bits or a string"
                ),
            ),
        ]
    punctuation = job.punctuation
    cti = "false"
    if punctuation is not None and punctuation.column is not None:
        # an explicit CTI row: its marker holds the value, with the value's JSON type
        fields.add(punctuation.column)
        cti = _marker(fields, punctuation.column, punctuation.value)  # type: ignore[arg-type]
    if source.over is not None:
        fields.add(source.over)
        kind = fields.kind(source.over)
        record_checks += [
            (
                # (a CTI row without a key punctuates every substream)
                f"NOT ({cti}) AND {fields.missing(source.over)}",
                sql_string(f"missing substream key column '{source.over}'"),
            ),
            (
                f"{kind} LIKE 'OBJECT%' OR {kind} LIKE 'ARRAY%'",
                sql_string(f"substream key column '{source.over}' must be a single value"),
            ),
        ]
    if source.edge is not None:  # edge events (not CTI rows): kind, then id
        fields.add(source.edge)
        fields.add(source.edge_id)  # type: ignore[arg-type]
        kind = fields.kind(source.edge_id)  # type: ignore[arg-type]
        record_checks += [
            (
                f"NOT ({cti}) AND NOT coalesce({fields.kind(source.edge)} = 'STRING' AND "
                f"try_variant_get({fields.value(source.edge)}, '$', 'string') IN "
                "('start', 'end'), false)",
                sql_string(f'column \'{source.edge}\' must be "start" or "end" (an edge event)'),
            ),
            (
                f"NOT ({cti}) AND {fields.missing(source.edge_id)}",  # type: ignore[arg-type]
                sql_string(f"missing edge id column '{source.edge_id}'"),
            ),
            (
                f"NOT ({cti}) AND NOT ({kind} IN ('TINYINT', 'SMALLINT', 'INT', 'BIGINT') "
                f"OR {kind} = 'STRING')",
                sql_string(
                    f"edge id column '{source.edge_id}' must be a string or an integer of at "
                    "most 64 bits"
                ),
            ),
        ]
    if source.end_time is not None:  # interval events (not CTI rows)
        fields.add(source.end_time, time=True)
        record_checks += [
            (f"NOT ({cti}) AND ({condition})", error)
            for condition, error in _time_checks(fields, source.end_time, "end time")
        ]
        start = fields.micros(source.timestamp_by)  # type: ignore[arg-type]
        record_checks.append(
            (
                f"NOT ({cti}) AND {fields.micros(source.end_time)} <= {start}",
                sql_string(
                    f"column '{source.end_time}': the end time must be after the start time"
                ),
            )
        )
    for column in sorted(job.numeric_columns):
        fields.add(column)
        record_checks.append(
            (
                f"NOT ({cti}) AND NOT ({fields.missing(column)} OR "
                f"{fields.kind(column)} RLIKE '{_NUMBER_TYPES}')",
                sql_string(f"column '{column}' must be a number"),
            )
        )
    for stage in fields.stages():
        if stage:
            out = out.selectExpr("*", *stage)
    record_error = (
        ("CASE " + " ".join(f"WHEN {c} THEN {e}" for c, e in record_checks) + " END")
        if record_checks
        else "CAST(NULL AS STRING)"
    )
    out = out.withColumn("error", F.expr(f"coalesce(error, {slow(record_error)})"))
    ok = "error IS NULL"
    arrival = fields.micros(source.arrival_time) if source.arrival_time is not None else "mtime"
    event = fields.micros(source.timestamp_by) if source.timestamp_by is not None else arrival
    if stream_partition:  # a column of the stream itself, e.g. Kafka's partition
        text = f"CAST({quote(source.partition)} AS STRING)"  # type: ignore[arg-type]
    elif source.partition is not None:
        text = f"try_variant_get({fields.value(source.partition)}, '$', 'string')"
    pid = partition_id(text) if source.partition is not None else "'0'"
    key = (
        f"to_json({fields.value(source.over)})"
        if source.over is not None
        else "CAST(NULL AS STRING)"
    )
    internal = {name.rsplit(" AS ", 1)[1] for stage in fields.stages() for name in stage}
    internal |= {"fast", "_kt", "_ka", "_kpid", "_kkey", "_kmj"}
    kept = [c for c in out.columns if c not in internal]
    values = {"a": arrival, "pid": pid, "key": key, "t": event}
    extra = []
    if punctuation is not None and punctuation.column is not None:
        extra.append(f"coalesce({ok} AND {cti}, false) AS cti")
    if source.end_time is not None:
        extra.append(
            f"CASE WHEN {ok} AND NOT ({cti}) THEN {fields.micros(source.end_time)} END AS e"
        )
    if source.edge is not None:  # the id as JSON text: 3 and "3" are different ids
        edge_ok = f"{ok} AND NOT ({cti})"
        extra.append(
            f"CASE WHEN {edge_ok} THEN try_variant_get({fields.value(source.edge)}, '$', "
            "'string') END AS edge"
        )
        extra.append(f"CASE WHEN {edge_ok} THEN to_json({fields.value(source.edge_id)}) END AS eid")
    out = out.selectExpr(
        *kept,
        *(
            (f"CASE WHEN fast THEN _k{name} WHEN {ok} THEN {expr} END AS {name}")
            if kernel
            else f"CASE WHEN {ok} THEN {expr} END AS {name}"
            for name, expr in values.items()
        ),
        *extra,
    )
    out = out.select(*kept, "t", "a", "pid", "key", *(e.rsplit(" AS ", 1)[1] for e in extra))
    if source.shift:  # time shifting (SPEC §7): event times, ends and CTIs alike
        out = out.withColumn("t", F.col("t") + F.lit(source.shift))
        if source.end_time is not None:
            out = out.withColumn("e", F.col("e") + F.lit(source.shift))
    return out


def partition_id(text: str) -> str:
    """SQL: the partition id of a partition value given as text (``text``): digit strings
    within 64 bits read as integers (``"007"`` is partition ``7``), other text as it is."""
    return (
        f"CASE WHEN {text} RLIKE '^-?[0-9]+\\\\z' AND try_cast({text} AS BIGINT) IS NOT NULL "
        f"THEN CAST(CAST({text} AS BIGINT) AS STRING) ELSE {text} END"
    )


def _marker(fields: _Fields, column: str, value: str | int | bool) -> str:
    """SQL: whether ``column`` holds ``value`` with the same JSON type (``[punctuation]``;
    a float ``1.0`` or the text ``"1"`` is not the integer ``1``)."""
    v, kind = fields.value(column), fields.kind(column)
    if isinstance(value, bool):
        flag = "true" if value else "false"
        return (
            f"coalesce({kind} = 'BOOLEAN' AND try_variant_get({v}, '$', 'boolean') = {flag}, false)"
        )
    if isinstance(value, int):
        return (
            f"coalesce({kind} IN ('TINYINT', 'SMALLINT', 'INT', 'BIGINT') AND "
            f"try_variant_get({v}, '$', 'decimal(38,0)') = {value}BD, false)"
        )
    return (
        f"coalesce({kind} = 'STRING' AND try_variant_get({v}, '$', 'string') = "
        f"{sql_string(value)}, false)"
    )
