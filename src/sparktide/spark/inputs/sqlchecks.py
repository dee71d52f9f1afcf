"""The SQL route's checks of a record's fields, with the reference reader's dead letters.

Each check is a pair ``(condition, error)`` of SQL expressions: the first condition that
holds names the record's error, so the pairs come in the order of
:func:`sparktide.reader.parse_fields` (times, partition, substream key, edge, end time,
numbers) and their messages are the reference reader's, word for word. The values they
test are computed once per row by :class:`FieldColumns`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from sparktide.expr import Expr
from sparktide.job import Job, Punctuation
from sparktide.reader.fields import computed_key_label, computed_time_label
from sparktide.spark.inputs.contract import INSTANT_RANGE
from sparktide.spark.inputs.sqlvalues import INSTANT_SQL, NAIVE_SQL, quoted_text, timestamp_micros
from sparktide.spark.sql import field, sql_string

if TYPE_CHECKING:
    from sparktide.spark.exprvalues import Value

__all__ = [
    "Check",
    "FieldColumns",
    "computed_key_checks",
    "computed_time_checks",
    "first_error",
    "record_checks",
    "time_checks",
]

#: A check: (SQL condition, SQL of the error message when it holds).
Check = tuple[str, str]

_NO_ZONE = " has no time zone (add 'Z' or an offset)"
_NUMBER_TYPES = r"^(TINYINT|SMALLINT|INT|BIGINT|FLOAT|DOUBLE|DECIMAL.*)$"
#: The variant types of a JSON integer of at most 64 bits.
_INTEGER_KINDS = "('TINYINT', 'SMALLINT', 'INT', 'BIGINT')"


def _stage_column(prefix: str, doc: str) -> Callable[[FieldColumns, str], str]:
    """A method of :class:`FieldColumns`: a field's column ``_<prefix><i>``."""

    def name(self: FieldColumns, column: str) -> str:
        return f"_{prefix}{self.index[column]}"

    name.__doc__ = doc
    return name


class FieldColumns:
    """Per record field the job reads, SQL names of its values computed once per row.

    Stage 1 extracts the variant (``_f<i>``: of a computed field, its expression's value,
    compiled in stages before it); stage 2 its type (``_k<i>``) and, for time fields, its
    text (``_s<i>``); stage 3 the pattern's verdict (``_z<i>``) and the parsed instant
    (``_u<i>``). The checks then refer to these columns, so nothing is parsed or matched
    twice per row.
    """

    def __init__(
        self,
        guard: Callable[[str], str],
        unit: str | None = None,
        computed: dict[str, Expr] | None = None,
    ) -> None:
        self.index: dict[str, int] = {}
        self.times: set[str] = set()
        self.guard = guard  # restricts the extraction to the rows that need it
        #: ``source.time_unit``: a time field may hold an integer of it (semantics §1.4)
        self.unit = unit
        #: Fields computed by an expression over the record (``timestamp_by`` or
        #: ``over`` an expression, semantics §1.4), by their name: the expression's text
        self.computed: dict[str, Value] = {}
        self._computed_stages: list[list[str]] = []
        if computed:
            # (here, not at the top: the compiler imports this package's modules)
            from sparktide.spark.expr import Compiled, record_field_names, variant_leaves

            exprs = list(computed.values())
            leaf_stages, leaves = variant_leaves(
                "_cf", record_field_names(exprs), lambda name: guard(field(name))
            )
            compiled = Compiled("_ce", leaves)
            self.computed = {name: compiled.value(e) for name, e in computed.items()}
            self._computed_stages = [*leaf_stages, *compiled.stages]

    def failure(self, column: str) -> str | None:
        """SQL of the message of a ``CAST`` that failed computing field ``column``."""
        value = self.computed.get(column)
        return None if value is None else value.err

    def _variant(self, column: str) -> str:
        """SQL of field ``column``'s variant: the record's, or the computed value's."""
        value = self.computed.get(column)
        if value is None:
            return field(column)
        cases = [
            f"WHEN {sql} IS NOT NULL THEN CAST({sql} AS VARIANT)" for sql in value.parts().values()
        ]
        cases += [f"WHEN {value.v} IS NOT NULL THEN {value.v}"] if value.v else []
        return f"CASE {' '.join(cases)} END" if cases else "CAST(NULL AS VARIANT)"

    def add(self, column: str, *, time: bool = False) -> int:
        """Register field ``column`` (a time field also gets its text and instant)."""
        i = self.index.setdefault(column, len(self.index))
        if time:
            self.times.add(column)
        return i

    value = _stage_column("f", "The variant of field ``column``.")
    kind = _stage_column("k", "The variant type of field ``column``.")
    text = _stage_column("s", "The text of time field ``column``.")
    micros = _stage_column("u", "The instant of time field ``column``.")
    zoned = _stage_column("z", "Whether time field ``column`` matches the pattern.")
    epoch = _stage_column("e", "Whether time field ``column`` is an integral number.")
    number = _stage_column("n", "The integral number of time field ``column``.")

    def missing(self, column: str) -> str:
        return f"({self.value(column)} IS NULL OR {self.kind(column)} = 'VOID')"

    def stages(self) -> list[list[str]]:
        """The projections (lists of ``expr AS name``) that add the columns (a fourth
        for time fields that may hold epoch numbers)."""
        one, two, three, four = [], [], [], []
        for column, i in self.index.items():
            one.append(f"{self.guard(self._variant(column))} AS _f{i}")
            two.append(f"schema_of_variant(_f{i}) AS _k{i}")
            if column in self.times and self.unit is None:
                two.append(f"try_variant_get(_f{i}, '$', 'string') AS _s{i}")
                three.append(f"_s{i} RLIKE {INSTANT_SQL} AS _z{i}")
                three.append(f"{timestamp_micros(f'_s{i}')} AS _u{i}")
            elif column in self.times:  # (an epoch number, or ISO text: semantics §1.4)
                two.append(f"try_variant_get(_f{i}, '$', 'string') AS _s{i}")
                three.append(f"_s{i} RLIKE {INSTANT_SQL} AS _z{i}")
                three.append(f"{_integral(f'_f{i}', f'_k{i}')} AS _n{i}")
                four.append(f"_n{i} IS NOT NULL AS _e{i}")
                micros = epoch_micros_sql(f"try_cast(_n{i} AS BIGINT)", self.unit)
                text = timestamp_micros(f"_s{i}")
                four.append(f"CASE WHEN _n{i} IS NOT NULL THEN {micros} ELSE {text} END AS _u{i}")
        stages = [one, two, three, four] if four else [one, two, three]
        return [*self._computed_stages, *stages]


def _integral(value: str, kind: str) -> str:
    """SQL: the variant ``value`` (of type ``kind``) as a ``DECIMAL(38,0)`` when it is a
    number with an integral value (an integer, ``21.0``, ``1e3``), as the reference
    reader takes it; else ``NULL``."""
    return (
        f"CASE WHEN {kind} IN {_INTEGER_KINDS} OR {kind} RLIKE '^DECIMAL[(][0-9]+,0[)]$' "
        f"OR ({kind} IN ('FLOAT', 'DOUBLE') AND try_variant_get({value}, '$', 'double') = "
        f"floor(try_variant_get({value}, '$', 'double'))) "
        f"THEN try_variant_get({value}, '$', 'decimal(38,0)') END"
    )


def epoch_micros_sql(value: str, unit: str) -> str:
    """SQL: the instant of the ``BIGINT`` ``value`` counted in ``unit`` since 1970
    (:func:`sparktide.time.epoch_micros`): nanoseconds floor; ``NULL`` beyond 64 bits."""
    if unit == "ns":
        return f"(({value} - pmod({value}, 1000)) div 1000)"
    factor = {"s": 1_000_000, "ms": 1_000, "us": 1}[unit]
    return f"try_multiply({value}, {factor}L)"


def first_error(checks: list[Check]) -> str:
    """SQL: the error of the first check whose condition holds (``NULL`` if none)."""
    return "CASE " + " ".join(f"WHEN {c} THEN {e}" for c, e in checks) + " END"


def time_checks(fields: FieldColumns, column: str, what: str) -> list[Check]:
    """The checks of a time field, in the reference reader's order (a computed one's:
    a failed ``CAST``, then null, then the checks of its value)."""
    prefix = f"{_label(fields, column)}: "
    if column in fields.computed:
        head, missing = computed_time_checks(fields, column)
    else:
        head = []
        missing = (fields.missing(column), sql_string(f"missing {what} column '{column}'"))
    return head + _value_time_checks(fields, column, prefix, missing)


def computed_time_checks(fields: FieldColumns, column: str) -> tuple[list[Check], Check]:
    """What a computed event time (``timestamp_by`` an expression, semantics §1.4) checks
    before its value: a failed ``CAST`` in it; and its check of a null value."""
    label = _label(fields, column)
    failure = fields.failure(column)
    head: list[Check] = []
    if failure is not None:
        head.append((f"{failure} IS NOT NULL", f"concat({sql_string(label + ': ')}, {failure})"))
    return head, (fields.missing(column), sql_string(f"{label} is null"))


def _label(fields: FieldColumns, column: str) -> str:
    """How a dead letter names the time field ``column``."""
    return computed_time_label(column) if column in fields.computed else f"column '{column}'"


def _value_time_checks(
    fields: FieldColumns, column: str, prefix: str, missing: Check
) -> list[Check]:
    """The checks of a time field's value (``prefix``: how its errors begin)."""
    if fields.unit is None:
        return [
            missing,
            (
                f"{fields.kind(column)} <> 'STRING'",
                sql_string(prefix + "expected an ISO-8601 time string"),
            ),
            *_text_time_checks(fields, column),
        ]
    unit, number, epoch = fields.unit, fields.number(column), fields.epoch(column)
    expected = f"expected an ISO-8601 time string or an integer of {unit} since 1970"
    beyond = f" ({unit} since 1970) is no instant of years 1-9999"
    micros = fields.micros(column)
    text_checks = [(f"NOT {epoch} AND ({c})", e) for c, e in _text_time_checks(fields, column)]
    return [
        missing,
        (f"{fields.kind(column)} <> 'STRING' AND NOT {epoch}", sql_string(prefix + expected)),
        (
            f"{epoch} AND ({micros} IS NULL OR {micros} NOT {INSTANT_RANGE})",
            f"concat({sql_string(prefix)}, CAST({number} AS STRING), {sql_string(beyond)})",
        ),
        *text_checks,
    ]


def _text_time_checks(fields: FieldColumns, column: str) -> list[Check]:
    """The checks of a time field's ISO text, in the reference reader's order."""
    text = fields.text(column)
    prefix = f"{_label(fields, column)}: "
    return [
        (
            f"NOT {fields.zoned(column)} AND {text} RLIKE {NAIVE_SQL}",
            f"concat({sql_string(prefix + 'time ')}, {quoted_text(text)}, {sql_string(_NO_ZONE)})",
        ),
        (
            f"NOT {fields.zoned(column)}",
            f"concat({sql_string(prefix + 'time ')}, {quoted_text(text)}, "
            f"{sql_string(' is not an ISO-8601 date-time with a zone (YYYY-MM-DDThh:mm:ssZ)')})",
        ),
        (
            # years 1-9999 once taken to UTC, as Python's datetime (Spark reads year 0)
            f"{fields.micros(column)} IS NULL OR {fields.micros(column)} NOT {INSTANT_RANGE}",
            f"concat({sql_string(prefix + 'time ')}, {quoted_text(text)}, "
            f"{sql_string(' is not a valid date-time')})",
        ),
    ]


def record_checks(
    fields: FieldColumns, job: Job, stream_partition: bool
) -> tuple[list[Check], str]:
    """The checks of a record's fields, registering each field in ``fields``, and the
    SQL condition of an explicit CTI row (``"false"`` without ``[punctuation]`` column).

    ``stream_partition``: the partition comes from a column of the stream (a broker's),
    not from the record."""
    source = job.source
    checks: list[Check] = []
    if source.arrival_time is not None:
        fields.add(source.arrival_time, time=True)
        checks += time_checks(fields, source.arrival_time, "arrival time")
    if source.timestamp_by is not None:
        fields.add(source.timestamp_by, time=True)
        checks += time_checks(fields, source.timestamp_by, "timestamp")
    if source.partition is not None and not stream_partition:
        checks += _partition_checks(fields, source.partition)
    cti = _explicit_cti(fields, job.punctuation)
    if source.over is not None:
        checks += _key_checks(fields, source.over, cti)
    if source.edge is not None:  # edge events (not CTI rows): kind, then id
        checks += _edge_checks(fields, source.edge, source.edge_id, cti)  # type: ignore[arg-type]
    if source.end_time is not None and source.duration is None:  # intervals (not CTIs)
        start = source.timestamp_by
        checks += _end_checks(fields, source.end_time, start, cti)  # type: ignore[arg-type]
    checks += _number_checks(fields, sorted(job.numeric_columns), cti)
    return checks, cti


def _partition_checks(fields: FieldColumns, column: str) -> list[Check]:
    fields.add(column)
    kind = fields.kind(column)
    return [
        (fields.missing(column), sql_string(f"missing partition column '{column}'")),
        (
            f"NOT ({kind} IN {_INTEGER_KINDS} OR {kind} = 'STRING')",
            sql_string(
                f"partition column '{column}' must be an integer of at most 64 bits or a string"
            ),
        ),
    ]


def _explicit_cti(fields: FieldColumns, punctuation: Punctuation | None) -> str:
    """SQL: whether a row is an explicit CTI row: its marker holds the value, with the
    value's JSON type (``"false"`` when the job has no marker column)."""
    if punctuation is None or punctuation.column is None:
        return "false"
    fields.add(punctuation.column)
    return _marker(fields, punctuation.column, punctuation.value)  # type: ignore[arg-type]


def _marker(fields: FieldColumns, column: str, value: str | int | bool) -> str:
    """SQL: whether ``column`` holds ``value`` with the same JSON type (``[punctuation]``;
    a float ``1.0`` or the text ``"1"`` is not the integer ``1``)."""
    variant, kind = fields.value(column), fields.kind(column)
    if isinstance(value, bool):
        flag = "true" if value else "false"
        return (
            f"coalesce({kind} = 'BOOLEAN' AND try_variant_get({variant}, '$', 'boolean') = "
            f"{flag}, false)"
        )
    if isinstance(value, int):
        return (
            f"coalesce({kind} IN {_INTEGER_KINDS} AND "
            f"try_variant_get({variant}, '$', 'decimal(38,0)') = {value}BD, false)"
        )
    return (
        f"coalesce({kind} = 'STRING' AND try_variant_get({variant}, '$', 'string') = "
        f"{sql_string(value)}, false)"
    )


def _key_checks(fields: FieldColumns, column: str, cti: str) -> list[Check]:
    fields.add(column)
    if column in fields.computed:
        return computed_key_checks(fields, column, cti)
    kind = fields.kind(column)
    return [
        (
            # (a CTI row without a key punctuates every substream)
            f"NOT ({cti}) AND {fields.missing(column)}",
            sql_string(f"missing substream key column '{column}'"),
        ),
        (
            f"{kind} LIKE 'OBJECT%' OR {kind} LIKE 'ARRAY%'",
            sql_string(f"substream key column '{column}' must be a single value"),
        ),
    ]


def computed_key_checks(fields: FieldColumns, column: str, cti: str) -> list[Check]:
    """The checks of a computed substream key (``over`` an expression, semantics §1.4):
    a failed ``CAST`` in it, a null (but on a CTI row), an array or object."""
    label = computed_key_label(column)
    kind = fields.kind(column)
    failure = fields.failure(column)
    checks: list[Check] = []
    if failure is not None:
        checks.append((f"{failure} IS NOT NULL", f"concat({sql_string(label + ': ')}, {failure})"))
    return [
        *checks,
        (f"NOT ({cti}) AND {fields.missing(column)}", sql_string(f"{label} is null")),
        (
            f"{kind} LIKE 'OBJECT%' OR {kind} LIKE 'ARRAY%'",
            sql_string(f"{label} must be a single value"),
        ),
    ]


def _edge_checks(fields: FieldColumns, column: str, id_column: str, cti: str) -> list[Check]:
    fields.add(column)
    fields.add(id_column)
    kind = fields.kind(id_column)
    return [
        (
            f"NOT ({cti}) AND NOT coalesce({fields.kind(column)} = 'STRING' AND "
            f"try_variant_get({fields.value(column)}, '$', 'string') IN "
            "('start', 'end'), false)",
            sql_string(f'column \'{column}\' must be "start" or "end" (an edge event)'),
        ),
        (
            f"NOT ({cti}) AND {fields.missing(id_column)}",
            sql_string(f"missing edge id column '{id_column}'"),
        ),
        (
            f"NOT ({cti}) AND NOT ({kind} IN {_INTEGER_KINDS} OR {kind} = 'STRING')",
            sql_string(
                f"edge id column '{id_column}' must be a string or an integer of at most 64 bits"
            ),
        ),
    ]


def _end_checks(fields: FieldColumns, column: str, start: str, cti: str) -> list[Check]:
    fields.add(column, time=True)
    checks = [
        (f"NOT ({cti}) AND ({condition})", error)
        for condition, error in time_checks(fields, column, "end time")
    ]
    checks.append(
        (
            f"NOT ({cti}) AND {fields.micros(column)} <= {fields.micros(start)}",
            sql_string(f"column '{column}': the end time must be after the start time"),
        )
    )
    return checks


def _number_checks(fields: FieldColumns, columns: Iterable[str], cti: str) -> list[Check]:
    checks = []
    for column in columns:
        fields.add(column)
        checks.append(
            (
                f"NOT ({cti}) AND NOT ({fields.missing(column)} OR "
                f"{fields.kind(column)} RLIKE '{_NUMBER_TYPES}')",
                sql_string(f"column '{column}' must be a number"),
            )
        )
    return checks
