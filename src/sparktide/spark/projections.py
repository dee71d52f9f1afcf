"""``[filter]`` and ``[select]`` in Spark SQL: the job's expressions, compiled by
:mod:`sparktide.spark.expr`, applied to parsed records (:func:`add_record_columns`,
:func:`filter_rows`), released events (:func:`projected_event`) and windows
(:func:`window_projection`); a join's matches in :mod:`sparktide.spark.outputs.matches`."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.expr import EVENT_INPUT, SYSTEM_TIMESTAMP, Ref, ref_nodes, references
from sparktide.job import Job
from sparktide.spark.aggregates import (
    INTEGRAL_FLOAT,
    derived_column,
    derived_variant,
    group_key_column,
)
from sparktide.spark.analytic import admission_columns, admission_names
from sparktide.spark.columns import (
    ARRIVAL_TIME,
    EDGE,
    EDGE_ID,
    END_TIME,
    ERROR,
    EVENT_TIME,
    IS_CTI,
    PARTITION,
    RAW,
    REASON,
    RECORD,
    SUBSTREAM_KEY,
    SYSTEM_TIME,
    VERDICT,
)
from sparktide.spark.expr import (
    Compiled,
    Value,
    json_of,
    of_kind,
    record_field_names,
    variant_leaves,
)
from sparktide.spark.perinput import ROW_INPUT, per_input_column_text
from sparktide.spark.sql import field as variant_field
from sparktide.spark.sql import iso, sql_string

__all__ = [
    "FILTER_COLUMN",
    "RESERVED_FIELDS",
    "add_record_columns",
    "computed_group_keys",
    "derived_aggregates",
    "event_input_value",
    "filter_rows",
    "projected_event",
    "reads_record_after_judging",
    "record_columns",
    "record_fields",
    "row_values",
    "system_time_reads",
    "timed_aggregates",
    "window_projection",
    "with_system_time",
    "with_timed_inputs",
]

#: The column holding whether a row passes ``[filter] where``.
FILTER_COLUMN = "w_pass"
#: The leaf ``System.Timestamp()`` reads (semantics §11.17).
TIME_KEY = SYSTEM_TIMESTAMP.key


def _projects_records(job: Job) -> bool:
    """Whether ``[select]`` reads each record (no window, no join): its columns are then
    computed right after parsing."""
    return job.window is None and job.join is None and job.match is None


def record_columns(job: Job) -> list[str]:
    """The columns :func:`add_record_columns` adds: the filter's verdict, and each
    projected column's JSON text (``e<i>``) in a job without a window or a join."""
    if job.analytics:  # [filter] and [select] run at release (sparktide.spark.analytic)
        return admission_names(job) + ([FILTER_COLUMN] if job.input_conditions else [])
    out = [FILTER_COLUMN] if _filters(job) else []
    if _projects_records(job):
        out += [f"e{i}" for i in range(len(job.select))]
    return out


def _filters(job: Job) -> bool:
    """Whether events are filtered before the windows or the output: by ``[filter]``,
    or by an input's ``where`` (semantics §11.20)."""
    return job.filter is not None or bool(job.input_conditions)


def add_record_columns(parsed: DataFrame, job: Job) -> DataFrame:
    """The parsed batch with :func:`record_columns`, computed from the record ``m``
    before it is dropped (only those columns travel on)."""
    derived = derived_aggregates(job)
    keys = computed_group_keys(job)
    if not record_columns(job) and not derived and not keys:
        return parsed
    if job.analytics:  # (only the input's where before them, semantics §11.20)
        parsed = admission_columns(parsed, job)
        if not job.input_conditions:
            return parsed
    job_filter = None if job.analytics else job.filter  # (with analytic columns: at release)
    projections = job.select if _projects_records(job) and not job.analytics else ()
    conditions = job.input_conditions
    exprs = [*conditions.values()]
    exprs += [job_filter.expression] if job_filter is not None else []
    exprs += [e for p in projections for _, e in p.expressions()]
    exprs += [a.parsed for _, a in derived]  # type: ignore[misc]
    exprs += [e for _, e in keys]
    stages, leaves = variant_leaves("_xf", record_field_names(exprs), variant_field)
    leaves[EVENT_INPUT.key] = event_input_value()
    if not job.expands_events:  # (unknown before judging: see with_system_time)
        leaves[TIME_KEY] = Value(null="true")
    else:  # (with [apply], computed after judging: sparktide.spark.apply)
        leaves[TIME_KEY] = Value(s=iso(SYSTEM_TIME), null=f"({SYSTEM_TIME} IS NULL)")
    compiled = Compiled("_xe", leaves)
    outputs = []
    errors = []
    if conditions or job_filter is not None:
        verdict, failures = input_where_verdict(compiled, job, job_filter is not None)
        outputs.append(f"{verdict} AS {FILTER_COLUMN}")
        errors += failures
    for i, projection in enumerate(projections):
        text, failures = per_input_column_text(compiled, projection, variant_field)
        outputs.append(f"{text} AS e{i}")
        errors += failures
    for i, aggregate in derived:
        value = compiled.value(aggregate.parsed)  # type: ignore[arg-type]
        outputs.append(f"{derived_variant(value, aggregate.function)} AS {derived_column(i)}")
        errors.append(value.err)
    for i, expression in keys:  # (the value a record is grouped by, as its JSON text)
        value = compiled.value(expression)
        outputs.append(f"coalesce({json_of(value)}, 'null') AS {group_key_column(i)}")
        errors.append(value.err)
    frame = parsed
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    frame = compiled.apply(frame)
    failed = [e for e in errors if e]
    if not failed:
        return frame.selectExpr(*(f"`{c}`" for c in parsed.columns), *outputs)
    return cast_failures(frame, parsed.columns, outputs, failed)


def input_where_verdict(compiled: Compiled, job: Job, job_filter: bool) -> tuple[str, list[str]]:
    """SQL of whether a row passes its input's ``where`` (semantics §11.20) and, if
    ``job_filter``, ``[filter] where``; and the SQL of each one's ``CAST`` failure."""
    verdicts, errors = [], []
    for name, condition in job.input_conditions.items():  # (each input's where first)
        value = compiled.value(condition)
        own = f"{ROW_INPUT} = {sql_string(name)}" if name else "true"
        verdicts.append(f"(NOT {own} OR coalesce({of_kind(value, 'b')}, false))")
        errors.append(value.err and f"CASE WHEN {own} THEN {value.err} END")
    if job_filter and job.filter is not None:
        value = compiled.value(job.filter.expression)
        verdicts.append(f"coalesce({of_kind(value, 'b')}, false)")
        errors.append(value.err)
    return " AND ".join(verdicts), errors


def _reads_time(expr: Any) -> bool:
    return SYSTEM_TIMESTAMP in ref_nodes(expr)


def system_time_reads(job: Job) -> tuple[bool, list[int]]:
    """Whether the verdict of the inputs' ``where`` and ``[filter]`` reads
    ``System.Timestamp()``, and which ``[select]`` columns over the record do (semantics
    §11.17, §11.20): the system timestamp is known after judging, so
    :func:`with_system_time` computes them again then. With analytic columns only the
    inputs' ``where`` (``[filter]`` and ``[select]`` run at release)."""
    if job.expands_events:  # (computed after judging: sparktide.spark.apply)
        return False, []
    where = any(_reads_time(c) for c in job.input_conditions.values())
    if job.analytics:
        return where, []
    where = where or (job.filter is not None and _reads_time(job.filter.expression))
    if not _projects_records(job):
        return where, []
    return where, [i for i, p in enumerate(job.select) if _reads_time(p.parsed)]


def with_system_time(frame: DataFrame, job: Job, where: bool, columns: list[int]) -> DataFrame:
    """``frame`` (judged rows, with the record's line and system timestamp) with the
    verdict of the inputs' ``where`` and ``[filter]`` (``where``; without ``[filter]``
    with analytic columns) and the ``[select]`` columns ``columns`` computed again,
    ``System.Timestamp()`` reading each row's system timestamp. A ``CAST`` that fails
    here is null: the record was checked when it was read (its timestamp then null)."""
    if not where and not columns:
        return frame
    job_filter = where and not job.analytics
    exprs = [*job.input_conditions.values()] if where else []
    exprs += [job.filter.expression] if job_filter and job.filter is not None else []
    exprs += [e for i in columns for _, e in job.select[i].expressions()]
    names = record_field_names(exprs)
    stages, leaves = variant_leaves("_tf", names, lambda name: variant_field(name, "_tm"))
    leaves[TIME_KEY] = Value(s=iso(SYSTEM_TIME), null=f"({SYSTEM_TIME} IS NULL)")
    leaves[EVENT_INPUT.key] = event_input_value()
    compiled = Compiled("_te", leaves)
    outputs = {}
    if where:
        outputs[FILTER_COLUMN] = input_where_verdict(compiled, job, job_filter)[0]
    for i in columns:  # (a bare column's value passed through, as when it was read)
        text = per_input_column_text(compiled, job.select[i], lambda n: variant_field(n, "_tm"))[0]
        outputs[f"e{i}"] = text
    kept = [f"`{c}`" for c in frame.columns if c not in outputs]
    out = frame.selectExpr("*", f"try_parse_json({RAW}) AS _tm")
    for stage in stages:
        out = out.selectExpr("*", *stage)
    out = compiled.apply(out)
    return out.selectExpr(*kept, *(f"{sql} AS `{name}`" for name, sql in outputs.items()))


def timed_aggregates(job: Job) -> list[int]:
    """The window's aggregates of expressions that read ``System.Timestamp()``, the
    event's (semantics §6.12), by index: known after judging, so
    :func:`with_timed_inputs` computes their inputs again then (with ``[apply]`` or a
    lookup every aggregate's inputs are computed after judging already)."""
    if job.expands_events:
        return []
    return [i for i, a in derived_aggregates(job) if _reads_time(a.parsed)]


def reads_record_after_judging(job: Job) -> bool:
    """Whether a judged row's record is read again from its line (``System.Timestamp()``
    in the inputs' ``where``, ``[filter]`` or a window's aggregates): its line is kept."""
    return system_time_reads(job)[0] or bool(timed_aggregates(job))


def with_timed_inputs(
    frame: DataFrame, job: Job, plans: list[Any], from_line: bool = True
) -> DataFrame:
    """``frame`` (judged rows with their line and system timestamp) with the inputs of
    the aggregates :func:`timed_aggregates` names computed again (``plans``: the
    window's :class:`~sparktide.spark.aggregates.AggregatePlan` list), their expressions'
    ``System.Timestamp()`` reading each row's system timestamp. A ``CAST`` that fails
    here is null (the record was read without it). The record is read again from the
    line (``from_line``: the parse's record is narrowed), else it is the row's own
    (a join's matches, semantics §7.11)."""
    timed = timed_aggregates(job)
    if not timed:
        return frame
    assert job.window is not None
    aggregates = [job.window.aggregates[i] for i in timed]
    stages, leaves = variant_leaves(
        "_gf", record_field_names([a.parsed for a in aggregates]), variant_field
    )
    leaves[TIME_KEY] = Value(s=iso(SYSTEM_TIME), null=f"({SYSTEM_TIME} IS NULL)")
    leaves[EVENT_INPUT.key] = event_input_value()
    compiled = Compiled("_ge", leaves)
    values = [compiled.value(a.parsed) for a in aggregates]  # type: ignore[arg-type]
    # (the record read again from the line, as m, which the plans' inputs read)
    record = f"try_parse_json({RAW})" if from_line else "_gm"
    out = frame.withColumnRenamed(RECORD, "_gm").selectExpr("*", f"{record} AS {RECORD}")
    for stage in stages:
        out = out.selectExpr("*", *stage)
    out = compiled.apply(out).selectExpr(
        "*",
        *(
            f"{derived_variant(v, a.function)} AS {derived_column(i)}"
            for i, a, v in zip(timed, aggregates, values, strict=True)
        ),
    )
    inputs = dict(item for i in timed for item in plans[i].inputs)
    kept = [f"`{c}`" for c in frame.columns if c not in inputs and c != RECORD]
    return out.selectExpr(*kept, f"_gm AS {RECORD}", *(f"{s} AS `{n}`" for n, s in inputs.items()))


def derived_aggregates(job: Job) -> list[tuple[int, Any]]:
    """The window's aggregates of expressions, with their index (their value is a column
    of its own, :func:`sparktide.spark.aggregates.derived_column`, read once per row)."""
    if job.window is None:
        return []
    return [(i, a) for i, a in enumerate(job.window.aggregates) if a.expression is not None]


def computed_group_keys(job: Job) -> list[tuple[int, Any]]:
    """The window's computed grouping columns, with their index (their JSON text is a
    column of its own, :func:`sparktide.spark.aggregates.group_key_column`, read once
    per row)."""
    if job.window is None:
        return []
    return [(i, e) for i, (_, e) in enumerate(job.window.group_keys) if e is not None]


def event_input_value() -> Value:
    """``System.Input()`` of a row: the name of its union input, the part of its
    partition id before ``/`` (semantics §11.22), read by a union's window, filter,
    analytic columns and ``[select]`` when the record is read (a held event's, at its
    release: :data:`~sparktide.spark.perinput.RELEASED_INPUT`)."""
    return Value(s=ROW_INPUT)


def row_values(job: Job) -> list[str]:
    """The columns :func:`add_record_columns` computes for the windows' inputs only (the
    aggregates of expressions, the computed grouping columns): dropped once those are
    taken (:func:`sparktide.spark.judging.row_inputs`)."""
    names = [derived_column(i) for i, _ in derived_aggregates(job)]
    return names + [group_key_column(i) for i, _ in computed_group_keys(job)]


#: The columns a malformed record does not have (semantics §8.2): nulled when a CAST
#: over the record fails.
_RECORD_VALUES = (EVENT_TIME, ARRIVAL_TIME, PARTITION, SUBSTREAM_KEY, END_TIME, EDGE, EDGE_ID)


def cast_failures(
    frame: DataFrame, columns: list[str], outputs: list[str], failed: list[str]
) -> DataFrame:
    """A record on which a ``CAST`` of ``[filter]`` or ``[select]`` fails is malformed
    (semantics §11.13), with the first failure's message as its error, as the reference
    reader makes it (:func:`sparktide.job.record_casts`): a well-formed record that is
    not a CTI takes the message; its typed values are dropped as a malformed record's."""
    message = failed[0] if len(failed) == 1 else f"coalesce({', '.join(failed)})"
    cti = f"coalesce({IS_CTI}, false)" if IS_CTI in columns else "false"
    frame = frame.selectExpr(
        "*", f"CASE WHEN {ERROR} IS NULL AND NOT {cti} THEN {message} END AS _cast_error"
    )
    kept = []
    for c in columns:
        if c == ERROR:
            kept.append(f"coalesce({ERROR}, _cast_error) AS {ERROR}")
        elif c in _RECORD_VALUES:
            kept.append(f"CASE WHEN _cast_error IS NULL THEN `{c}` END AS `{c}`")
        else:
            kept.append(f"`{c}`")
    return frame.selectExpr(*kept, *outputs)


def filter_rows(decided: DataFrame, job: Job) -> DataFrame:
    """Judged rows after ``[filter]``: an event the policy admitted that fails the filter
    is dropped with reason ``filtered`` and has no system timestamp for the windows (its
    policy columns, which moved its timeline, stay as they are)."""
    if not _filters(job) or (job.analytics and not job.input_conditions):
        return decided  # (with analytic columns [filter] runs at release)
    if system_time_reads(job)[0]:  # System.Timestamp(): after judging
        decided = with_system_time(decided, job, True, [])
    stopped = f"({VERDICT} IN ('accepted', 'adjusted') AND NOT {FILTER_COLUMN})"
    if job.edges:  # an end edge has no payload of its own: it ends what passed
        stopped = f"({stopped} AND coalesce({EDGE} <> 'end', true))"
    dropped = f"CASE WHEN _stopped THEN 'dropped' ELSE {VERDICT} END"
    filtered = f"CASE WHEN _stopped THEN 'filtered' ELSE {REASON} END"
    no_time = f"CASE WHEN _stopped THEN CAST(NULL AS BIGINT) ELSE {SYSTEM_TIME} END"
    return (
        decided.withColumn("_stopped", _expr(stopped))
        .withColumn(VERDICT, _expr(dropped))
        .withColumn(REASON, _expr(filtered))
        .withColumn(SYSTEM_TIME, _expr(no_time))
        .drop("_stopped")
    )


def _expr(sql: str) -> Any:
    return F.expr(sql)


def projected_event(job: Job, timestamp: str, fields: str | None = None) -> str:
    """SQL of a released event's JSON text under ``[select]``: the ``e<i>`` columns, then
    ``timestamp`` (``timestamp``: SQL of its ISO text); with ``fields`` (SQL of the
    record's fields as a map), those fields where ``job.select_star`` puts them, a name
    written twice keeping the value on the left (semantics §11.16)."""
    members = [
        f"concat({sql_string(json.dumps(p.name) + ':')}, e{i})" for i, p in enumerate(job.select)
    ]
    if fields is not None and job.select_star is not None:
        star = job.select_star
        left = [p.name for p in job.select[:star]] + list(job.event_fields.values())
        kept = ", ".join(sql_string(name) for name in left)
        fields = f"map_filter({fields}, (k, v) -> k NOT IN ({kept}))"
        text = f"to_json({fields})"
        after = [
            f"CASE WHEN NOT map_contains_key({fields}, {sql_string(p.name)}) "
            f"THEN {members[star + i]} END"
            for i, p in enumerate(job.select[star:])
        ]
        inner = f"nullif(substring({text}, 2, length({text}) - 2), '')"
        members = [*members[:star], inner, *after]
    key = sql_string(json.dumps(job.event_fields["timestamp"]) + ":")
    members.append(f"concat({key}, '\"', {timestamp}, '\"')")
    return "concat('{', concat_ws(',', " + ", ".join(members) + "), '}')"


#: SQL of the field names an event record writes itself (``timestamp``, ``type``): a
#: record's own fields of these names take the prefix ``input_`` (:func:`record_fields`).
RESERVED_FIELDS = "'timestamp', 'type'"


def record_fields(column: str, reserved: str = RESERVED_FIELDS) -> str:
    """SQL of the fields of the record whose JSON text is in ``column`` (an event's
    line, a join's side) as a map, as an event record writes them (in the line's order):
    integral floats stay floats, ``reserved`` names (SQL strings) take the prefix
    ``input_``."""
    return (
        f"transform_keys(transform_values(from_json({column}, "
        "'map<string,variant>'), (k, v) -> CASE WHEN schema_of_variant(v) RLIKE "
        f"{INTEGRAL_FLOAT} THEN CAST(try_variant_get(v, '$', 'double') AS VARIANT) "
        "ELSE v END), "
        f"(k, x) -> CASE WHEN k IN ({reserved}) THEN concat('input_', k) ELSE k END)"
    )


# ---------------------------------------------------------------------- windows
def window_projection(
    closed: DataFrame,
    job: Job,
    texts: dict[str, str],
    bounds: tuple[str, str],
) -> tuple[DataFrame, str | None, list[tuple[str, str]] | None]:
    """Columns for ``having`` and ``[select]`` over closed windows.

    Parameters
    ----------
    closed
        The closed windows.
    job
        The job.
    texts
        JSON text SQL of each group-by column and aggregate, by name.
    bounds
        SQL of the window's start and end instants.

    Returns
    -------
    The frame with the computed columns, the SQL of the ``having`` verdict (``None``
    without ``having``), and the window record's fields as ``(name, JSON text SQL)``
    under ``[select]`` (``None`` without it).
    """
    window = job.window
    assert window is not None
    having = window.having_expression
    exprs = [having] if having is not None else []
    exprs += [p.parsed for p in job.select]
    names = list(dict.fromkeys(n for e in exprs for n in references(e)))
    own, written = window.own_fields, job.window_fields  # (semantics §10.3)
    iso_of = {own["window_start"]: iso(bounds[0]), own["window_end"]: iso(bounds[1])}
    variant_names = [n for n in names if n not in iso_of]
    stages, leaves = variant_leaves(
        "_hf", variant_names, lambda name: f"try_parse_json({texts[name]})"
    )
    for name in names:
        if name in iso_of:
            leaves[name] = Value(s=iso_of[name])
    compiled = Compiled("_he", leaves)
    outputs = []
    verdict = None
    if having is not None:
        value = compiled.value(having)
        outputs.append(f"coalesce({of_kind(value, 'b')}, false) AS _having")
        verdict = "_having"
    fields = None
    if job.select:
        fields = [
            (written["window_start"], f"concat('\"', {iso(bounds[0])}, '\"')"),
            (written["window_end"], f"concat('\"', {iso(bounds[1])}, '\"')"),
        ]
        for i, projection in enumerate(job.select):
            expr = projection.parsed
            if isinstance(expr, Ref):
                if expr.name in iso_of:
                    fields.append((projection.name, f"concat('\"', {iso_of[expr.name]}, '\"')"))
                else:
                    fields.append((projection.name, texts[expr.name]))
                continue
            outputs.append(f"{json_of(compiled.value(expr))} AS _hs{i}")
            fields.append((projection.name, f"_hs{i}"))
    frame = closed
    for stage in stages:
        if stage:
            frame = frame.selectExpr("*", *stage)
    frame = compiled.apply(frame)
    if outputs:
        frame = frame.selectExpr("*", *outputs)
    return frame, verdict, fields
