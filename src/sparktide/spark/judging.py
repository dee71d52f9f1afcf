"""The general plan's parse and judgement of a batch in Spark SQL: typed rows, the
policy (:mod:`.policy`), windows assigned (:mod:`.windows.assign`), the per-partition
summary the clocks and counters read, and substreams' key state."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from sparktide.core.instants import NEG_INF
from sparktide.job import record_casts
from sparktide.spark import apply, lookup, policy
from sparktide.spark.aggregates import group_inputs, present
from sparktide.spark.batch import Batch
from sparktide.spark.clocks import idle_estimates, import_ctis
from sparktide.spark.columns import (
    ARRIVAL_ORDER,
    ARRIVAL_TIME,
    CLOSED_WINDOW_END,
    CLOSED_WINDOW_START,
    CTI_INSTANT,
    EDGE,
    EDGE_ID,
    END_TIME,
    ERROR,
    EVENT_TIME,
    FILE,
    GOVERNING_WATERMARK,
    IS_CTI,
    IS_EARLY,
    IS_LATE,
    IS_OUT_OF_ORDER,
    LINE,
    NEWEST_VALUE,
    OPEN_WINDOW_STARTS,
    PARTITION,
    RAW,
    REASON,
    RECORD,
    SCOPE,
    SUBSTREAM_KEY,
    SYSTEM_TIME,
    VERDICT,
    WINDOW_STARTS,
)
from sparktide.spark.context import Context
from sparktide.spark.counters import counter_aggregates
from sparktide.spark.inputs.arrowjson import parse_files
from sparktide.spark.inputs.contract import FULL_TEXT
from sparktide.spark.inputs.sqlparse import parse_lines
from sparktide.spark.inputs.textfiles import split_lines
from sparktide.spark.keys import next_keys
from sparktide.spark.lineshapes import typed_names
from sparktide.spark.lookup import join_keys
from sparktide.spark.onepass import TYPED
from sparktide.spark.projections import (
    add_record_columns,
    filter_rows,
    reads_record_after_judging,
    record_columns,
    row_values,
    with_timed_inputs,
)
from sparktide.spark.punctuation import cti_counted
from sparktide.spark.sql import field
from sparktide.spark.windows.assign import assign_windows, paired_edges
from sparktide.spark.windows.latescan import window_closed_rows
from sparktide.spark.windows.rows import open_rows

__all__ = ["Judged", "column_present", "judge", "parse", "present_counts", "row_inputs"]


@dataclass
class Judged:
    """A batch judged by the general plan."""

    decided: DataFrame  # the judged rows (kept)
    parsed: DataFrame  # the parsed rows (kept only when the estimates came first)
    summary: list[Any]  # one row per partition: clocks' and counters' figures
    delivering: dict[str, Any]  # the partitions that delivered, by pid
    malformed: int  # malformed lines
    arrival_at_start: int  # the input's arrival clock at the start of the batch
    keys_next: DataFrame | None  # substreams: the keys' state after the batch
    #: per named column (``missing_column``): the input records holding a value
    present: list[int] = dataclasses.field(default_factory=list)
    #: one row per input record (``decided`` but with [apply], sparktide.spark.apply)
    counted: DataFrame | None = None


def judge(context: Context, batch: Batch, lines: DataFrame, *, estimates_first: bool) -> Judged:
    """Parse and judge a batch (the general plan). With ``estimates_first`` the batch
    learns which partitions deliver (and their idle estimates) before the policy, which
    then reads other partitions' clocks; else one pass judges and counts.

    A batch known to bring no input (a flush, or a run's batch holding only the
    ticker's row: :attr:`Batch.no_input`) judges none, and every row a judgement holds
    is an input record's (the state's open edges and keys are read beside them): its
    rows are none and its summary is empty, known without running a Spark job. After a
    batch of the same run parsed to the same schema, it does not even build the
    policy's plan: its judged rows are an empty frame of the schema that batch's had."""
    stream = context.job.source.partition in lines.columns and not context.job.inputs
    parsed = _parsed_for_judging(context, lines, stream)
    clock, now = batch.clock, batch.now
    parts = clock["partitions"]
    delivering: dict[str, Any] | None = None
    malformed, arrival_at_start = 0, NEG_INF  # (only substreams read it before the summary)
    source = parsed
    if estimates_first:
        if batch.no_input:  # (nothing delivers, no Spark job)
            delivering, malformed, seen = {}, 0, [0] * len(context.named_columns)
        else:
            parsed = batch.keep(parsed)
            delivering, malformed, seen = _delivering(context, parsed)
        arrival_at_start = idle_estimates(clock, delivering, now, context.watermark_terms)
        import_ctis(context.job, parts)
        source = parsed.filter(f"{ERROR} IS NULL")
    # (no input after a batch of this run: the judged rows' schema is known, and its
    # rows are none: the docstring. The parsed rows' names and types, one call: not
    # their nullability, which differs between the input's shapes — a whole file's
    # lines or a flush's empty frame — and no empty frame's union reads)
    shape = (source._jdf.schema().simpleString(), estimates_first)
    known = context.judged_schemas.get(shape) if batch.no_input else None
    if known is not None:
        decided = context.spark.createDataFrame([], StructType.fromJson(json.loads(known)))
    else:
        keys_batch = context.store.latest(below=batch.id) if context.timeline.by_key else None
        cti_floor = clock.get("cti_floor", NEG_INF)
        start = policy.BatchStart(parts, arrival_at_start, keys_batch, cti_floor)
        decided = _decided(context, batch, source, start)
        if shape not in context.judged_schemas:  # (the schema a plan gives, once per run)
            context.judged_schemas[shape] = decided._jdf.schema().json()
    if context.edges:  # pair start and end edges (with the open ones in state)
        batch.paired = batch.keep(paired_edges(context, decided, batch.previous))
        decided = batch.paired.filter("NOT from_state")
    elif batch.no_input:  # its rows are none (the docstring)
        decided = decided.limit(0)
    else:
        decided = batch.keep(decided)
    counted = decided
    if context.job.expands_events:  # one row per input record counts (sparktide.spark.apply)
        counted, decided = apply.counting_rows(decided), apply.sink_rows(decided)
    keys_next = None
    if context.timeline.by_key:
        assert delivering is not None
        arrivals = (row["max_a"] for row in delivering.values())
        arrival_at_end = max([arrival_at_start, *arrivals])
        keys = _batch_keys(context, counted)
        # (read by every scope watermark of the batch and written: computed once)
        keys_next = batch.keep(next_keys(context, keys, batch.previous, arrival_at_end, now))
    summary = [] if batch.no_input else _summary(context, counted)
    counts = present_counts(context, summary)
    if estimates_first:  # (the malformed rows were counted before the policy)
        counts = [a + b for a, b in zip(counts, seen, strict=True)]
    if delivering is None:
        malformed = sum(row["bad"] for row in summary)
        delivering = {row[PARTITION]: row for row in summary if row[PARTITION] is not None}
        arrival_at_start = idle_estimates(clock, delivering, now, context.watermark_terms)
    return Judged(
        decided,
        parsed,
        summary,
        delivering,
        malformed,
        arrival_at_start,
        keys_next,
        counts,
        counted,
    )


def _decided(
    context: Context, batch: Batch, source: DataFrame, start: policy.BatchStart
) -> DataFrame:
    """The judged rows of the well-formed ``source`` rows: the policy, ``[apply]``,
    ``[filter]``, the windows they fall in; narrowed to what later steps read."""
    judged = policy.judged_rows(context, source, start)
    job = context.job
    if not job.expands_events:
        judged = with_timed_inputs(judged, job, context.aggregates)  # (§6.12)
        decided = assign_windows(context, filter_rows(judged, job))
    else:  # (each admitted event expanded, semantics §11.18, §11.23)
        expand = lookup.rows_met if job.looks_up_in_window else apply.expanded_rows
        judged = expand(context, judged, lambda rows: _row_columns(context, rows))
        decided = assign_windows(context, apply.counted(filter_rows(judged, job)))
    if context.accepts_below_rows:  # (session and sliding windows under accept)
        decided = window_closed_rows(context, decided, *open_rows(context, batch, decided))
    return narrow(context, decided)


def _parsed_for_judging(context: Context, lines: DataFrame, stream: bool) -> DataFrame:
    """The parsed batch, narrowed to what judging and later steps read.

    Persist no raw line that no later step reads: it is the widest column, and the
    cost of persisting grows with the width of the rows (docs/design.md). Nor the
    record variant ``m`` (needed for malformed records only): the values windows read
    are taken out of it here, as narrow typed columns (:func:`row_inputs`), and so are
    the flags of :func:`column_present` (``stream``: the partition is the stream's)."""
    parsed = parse(context, lines)
    expands = context.job.expands_events  # (then computed after the policy)
    if not expands:
        parsed = add_record_columns(parsed, context.job)  # [filter], [select]
    derived = [] if expands else row_values(context.job)
    record = RECORD if expands else f"CASE WHEN {ERROR} IS NOT NULL THEN {RECORD} END"
    inputs = [] if expands else row_inputs(context)
    keep_raw = (
        RAW
        if context.window is None  # (a join's too, of the window's records: §7.12)
        or context.job.joins_windows
        or reads_record_after_judging(context.job)  # (read again)
        else f"CASE WHEN {ERROR} IS NOT NULL THEN {RAW} END"
    )
    absent = {  # semantics §7: CTI rows, intervals, edges
        IS_CTI: "false",
        END_TIME: "CAST(NULL AS BIGINT)",
        EDGE: "CAST(NULL AS STRING)",
        EDGE_ID: "CAST(NULL AS STRING)",
    }
    return parsed.selectExpr(
        *(c for c in parsed.columns if c not in (RAW, "mtime", "pre_error", RECORD, *derived)),
        f"{keep_raw} AS {RAW}",
        f"{record} AS {RECORD}",
        *(f"{expr} AS {name}" for name, expr in inputs),
        *(f"{expr} AS {name}" for name, expr in column_present(context, parsed, stream)),
        *(f"{value} AS {name}" for name, value in absent.items() if name not in parsed.columns),
    )


def _row_columns(context: Context, rows: DataFrame) -> DataFrame:
    """What the parse adds to a job without ``[apply]`` (:func:`_parsed_for_judging`),
    added to expanded ``rows``: the filter's verdict, ``[select]``, the windows' inputs."""
    made = add_record_columns(rows, context.job)
    derived = row_values(context.job)
    return made.selectExpr(
        *(f"`{c}`" for c in made.columns if c not in derived),
        *(f"{expr} AS {name}" for name, expr in row_inputs(context)),
    )


def column_present(context: Context, parsed: DataFrame, stream: bool) -> list[tuple[str, str]]:
    """``(_nc<i>, flag)`` per named column (:func:`~sparktide.core.namedcolumns.named_columns`):
    true when an input record (an event or a malformed record, not a CTI row) holds a value
    in the column, false when it does not, null for other rows; the Spark SQL copy of
    ``column_present`` (``sparktide.rules``). A partition read from the stream's own column
    (``stream``) is in every record."""
    counted = f"({ERROR} IS NOT NULL OR NOT {IS_CTI})" if IS_CTI in parsed.columns else "true"
    out = []
    for i, named in enumerate(context.named_columns):
        flag = present(field(named.column))
        if stream and named.column == context.job.source.partition:
            flag = "true"
        elif named.read_by_source:
            # an event holds its time, partition, key and edge columns (else it is
            # malformed), and a vouched record's ``m`` carries only the other fields
            flag = f"({ERROR} IS NULL OR {flag})"
        out.append((f"_nc{i}", f"CASE WHEN {counted} THEN {flag} END"))
    return out


def present_counts(context: Context, rows: list[Any]) -> list[int]:
    """Per named column, the input records holding a value: the ``_nc<i>`` counts of
    summary ``rows`` summed."""
    return [sum(row[f"_nc{i}"] or 0 for row in rows) for i in range(len(context.named_columns))]


def _present_aggregates(context: Context, condition: str = "true") -> list[Any]:
    """Counts of the ``_nc<i>`` flags that hold (on rows meeting ``condition``)."""
    return [
        F.count(F.when(F.expr(f"{condition} AND _nc{i}"), 1)).alias(f"_nc{i}")
        for i in range(len(context.named_columns))
    ]


def _delivering(context: Context, parsed: DataFrame) -> tuple[dict[str, Any], int, list[int]]:
    """The partitions that deliver in the batch (with their largest arrival time), the
    number of malformed lines and, over those, the named columns' present counts
    (:func:`column_present`): one aggregate over the parsed batch."""
    stats = {
        row[PARTITION]: row
        for row in parsed.groupBy(PARTITION)
        .agg(
            F.count("*").alias("n"),
            F.max(ARRIVAL_TIME).alias("max_a"),
            F.count(F.when(F.col(ERROR).isNotNull(), 1)).alias("bad"),
            *_present_aggregates(context, f"{ERROR} IS NOT NULL"),
        )
        .collect()
    }
    malformed = sum(row["bad"] for row in stats.values())
    seen = present_counts(context, list(stats.values()))
    return {pid: row for pid, row in stats.items() if pid is not None}, malformed, seen


def _batch_keys(context: Context, decided: DataFrame) -> DataFrame:
    """Substreams: each key's newest timestamp, rows, last CTI and events in the batch
    (CTIs without a key move the floor instead)."""
    return (
        decided.filter(f"{SUBSTREAM_KEY} IS NOT NULL")
        .groupBy(SUBSTREAM_KEY)
        .agg(
            F.max(NEWEST_VALUE).alias("max_h"),
            F.count("*").alias("n"),
            F.max(CTI_INSTANT).alias("max_cti"),
            F.count(F.when(F.expr(cti_counted(context)), 1)).alias("events"),
        )
    )


def _summary(context: Context, decided: DataFrame) -> list[Any]:
    """One row per partition of the judged batch: what the clocks and counters read."""
    keyless = f"CASE WHEN {IS_CTI} AND {SUBSTREAM_KEY} IS NULL THEN {EVENT_TIME} END"
    return (
        decided.groupBy(PARTITION)
        .agg(
            F.max(NEWEST_VALUE).alias("max_h"),
            F.max(ARRIVAL_TIME).alias("max_a"),
            F.count(F.when(F.col(ERROR).isNotNull(), 1)).alias("bad"),
            F.max(CTI_INSTANT).alias("max_cti"),  # the partition's last CTI (or generated)
            F.max(F.expr(keyless)).alias("max_y"),
            F.count(F.when(F.expr(cti_counted(context)), 1)).alias("counted"),  # (§7.3)
            *counter_aggregates(),
            # the first late input event in arrival order (the diagnostic's example)
            F.min_by(
                F.struct(*ARRIVAL_ORDER, EVENT_TIME),
                F.when(F.col(IS_LATE), F.struct(*ARRIVAL_ORDER)),
            ).alias("late_example"),
            # (a record skipped before the output start is no input record, §12)
            *_present_aggregates(context, f"{VERDICT} <> 'skipped'"),
        )
        .collect()
    )


def parse(context: Context, lines: DataFrame) -> DataFrame:
    """Typed columns of a batch of lines, or of whole JSONL files (the Arrow fast path,
    :mod:`sparktide.spark.inputs.arrowjson`); a union's lines are parsed input by input,
    each by its own ``[inputs.<name>]`` table, their partitions named
    ``<input>/<partition>`` (as :func:`sparktide.reader.job_records` names them)."""
    job = context.job
    if job.inputs:
        return _parse_union(job, lines)
    if "text" in lines.columns:
        # (unknown to Arrow; a CAST that can fail over a record may make a row the Arrow
        # reader vouched for malformed after it, and its dead letter needs its line)
        if (
            context.explicit
            or context.intervals
            or context.edges
            or record_casts(job)
            or job.source.computes_fields  # (the Arrow reader reads columns)
        ):
            return parse_lines(split_lines(lines), job)
        return parse_files(lines, job)
    if FULL_TEXT in lines.columns:  # (dead letters' text: not parsed, not kept)
        lines = lines.drop(FULL_TEXT)
    if TYPED in lines.columns:  # (the one-pass kernel's inputs)
        lines = lines.drop(*typed_names(job))
    return parse_lines(lines, job, epochs=not context.typed_input)


def _parse_union(job: Any, lines: DataFrame) -> DataFrame:
    """A union's lines parsed input by input (see :func:`parse`)."""
    if "input" not in lines.columns:  # (the flush's empty batch)
        lines = lines.withColumn("input", F.lit(None).cast("string"))
    out = None
    for name, source in job.inputs:
        # (a union's keys: the view is a job with one source)
        one = dataclasses.replace(
            source, import_ctis=None, ordering=None, punctuation=None, where=None
        )
        named = job.window is not None and job.window.name is not None  # (§7.12: no join)
        view = dataclasses.replace(
            job,
            source=one,
            inputs=(),
            join=None,
            window=dataclasses.replace(job.window, name=None) if named else job.window,
            references=(),
            select=(),
            select_star=None,
            select_star_input=None,
            apply=None,
        )
        parsed = parse_lines(lines.filter(F.col("input") == name).drop("input"), view)
        columns = [FILE, LINE, RAW, "mtime", "pre_error", ERROR, RECORD, EVENT_TIME, ARRIVAL_TIME]
        columns += [c for c in (SUBSTREAM_KEY, IS_CTI, END_TIME) if c in parsed.columns]
        pid = F.col(PARTITION)
        parsed = parsed.select(
            *columns,
            F.when(pid.isNotNull(), F.concat(F.lit(f"{name}/"), pid)).alias(PARTITION),
        )
        out = parsed if out is None else out.unionByName(parsed)
    assert out is not None
    return out


def narrow(context: Context, decided: DataFrame) -> DataFrame:
    """Only the columns later steps read, before the judged batch is persisted (the
    cost of persisting grows with the width of its rows).

    The raw line is kept for released events (their field order) and malformed
    records; with windows, other dead letters find theirs in the batch's input
    (:mod:`sparktide.spark.outputs.deadletters`). ``error`` and, for malformed
    records, ``m`` are kept because a batch judged without its estimates first writes
    its malformed records from here."""
    columns = [FILE, LINE, EVENT_TIME, ARRIVAL_TIME, SYSTEM_TIME, PARTITION, SUBSTREAM_KEY]
    columns += [NEWEST_VALUE, SCOPE, VERDICT, REASON, IS_EARLY, IS_LATE, IS_OUT_OF_ORDER]
    columns += [WINDOW_STARTS, OPEN_WINDOW_STARTS, CLOSED_WINDOW_START, CLOSED_WINDOW_END]
    columns += [IS_CTI, CTI_INSTANT, END_TIME]
    if context.edges:
        columns += [EDGE, EDGE_ID, GOVERNING_WATERMARK]
    elif context.accepts_below_rows:  # (a sliding row keeps it: admit_w)
        columns += [GOVERNING_WATERMARK]
    columns += [ERROR, RAW, RECORD]  # the parsed batch keeps them only where needed
    columns += [name for name, _ in row_inputs(context)]
    columns += [f"_nc{i}" for i in range(len(context.named_columns))]
    columns += record_columns(context.job)
    if context.job.expands_events:
        columns += [apply.PART, apply.COUNTS]
    return decided.selectExpr(*columns)


def row_inputs(context: Context) -> list[tuple[str, str]]:
    """``(column, expression over m)``: the group-by values (``g<i>``, JSON text) and
    the aggregates' typed inputs, computed per row right after parsing (of a window over
    a join's matches: of each match, :mod:`sparktide.spark.windows.matches`); for a join,
    the values it matches on (``j<i>``)."""
    job = context.job
    if job.join is not None and not job.looks_up_in_window and context.window is None:
        return join_keys(job)
    if context.window is None:
        return []
    inputs = join_keys(job, "left") if job.joins_windows else []  # (the join's, of left rows)
    inputs += group_inputs(context.window.group_keys)
    return inputs + [item for plan in context.aggregates for item in plan.inputs]
