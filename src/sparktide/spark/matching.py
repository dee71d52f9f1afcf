"""``[match]`` on Spark (semantics §11.25): the same matches as
:mod:`sparktide.core.matching`, per batch.

- Each released row (its line in ``value``) is read once: its partition key ``key`` (the
  ``partition_by`` values' JSON texts, as the analytic columns' keys), its ``mask`` (bit
  ``v`` when variable ``v``'s ``define`` condition holds) and the JSON text ``c<i>`` of
  each column a measure reads.
- Under them come the rows kept from earlier batches (table ``match``: each partition's
  rows from its first undecided start on, with whether each start is decided). Every
  row carries its scope's watermark; the rows are grouped by ``(scope, key)``, sorted in
  release order, and one ``mapInArrow`` runs the compiled matcher over each task's
  groups (:func:`sparktide.spark.matchloop.match_partitions`): no Python per row.
- Its answer gives the rows to keep (the new ``match`` table) and the matches decided in
  this batch, written as records: the measures in order and the ``timestamp`` of the
  match's last row.
"""

from __future__ import annotations

import functools
import json

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructType

from sparktide.expr import EVENT_INPUT, SYSTEM_TIMESTAMP
from sparktide.job import Job
from sparktide.spark.aggregates import json_text
from sparktide.spark.analytic import filter_and_select
from sparktide.spark.analytic_rules import RELEASE_ORDER
from sparktide.spark.batch import Batch
from sparktide.spark.columns import FILE, RAW, RECORD, SCOPE, SYSTEM_TIME
from sparktide.spark.context import Context
from sparktide.spark.expr import (
    Compiled,
    Value,
    of_kind,
    record_field_names,
    scalar_json_of,
    variant_leaves,
)
from sparktide.spark.outputs.text import ordered, state_schema, write_state
from sparktide.spark.perinput import RELEASED_INPUT
from sparktide.spark.projections import projected_event
from sparktide.spark.sql import field as variant_field
from sparktide.spark.sql import field_at, iso, sql_string

__all__ = ["match_release"]

_FUNCTIONS = {"first": 0, "last": 1, "count": 2}


def _schema(job: Job) -> str:
    """The columns of the kept rows (table ``match``)."""
    assert job.match is not None
    columns = "".join(f", c{i} string" for i in range(len(job.match.columns)))
    order = ", ".join(f"{c} {'string' if c == FILE else 'long'}" for c in RELEASE_ORDER)
    return f"{SCOPE} string, key string, {order}, mask long, decided long{columns}"


def _inputs(job: Job, frame: DataFrame) -> DataFrame:
    """The released rows (``value``: the line) with ``key``, ``mask`` and the measures'
    column texts ``c<i>``."""
    match = job.match
    assert match is not None
    exprs = [e for _, e in match.expressions()]
    stages, leaves = variant_leaves("_mf", record_field_names(exprs), variant_field)
    leaves[SYSTEM_TIMESTAMP.key] = Value(s=iso(SYSTEM_TIME))
    leaves[EVENT_INPUT.key] = Value(s=RELEASED_INPUT)
    compiled = Compiled("_me", leaves)
    parts = [scalar_json_of(compiled.value(e)) for e in match.partition_expressions]
    key = "''" if not parts else "concat_ws(chr(1), " + ", ".join(parts) + ")"
    bits = ["0L"]
    for v, condition in enumerate(match.conditions):
        holds = "true" if condition is None else of_kind(compiled.value(condition), "b")
        bits.append(f"CASE WHEN coalesce({holds}, false) THEN {1 << v}L ELSE 0L END")
    texts = [
        f"coalesce({json_text(field_at(c), members=True)}, 'null') AS c{i}"
        for i, c in enumerate(match.columns)
    ]
    read = frame.withColumn(RECORD, F.expr(f"try_parse_json({RAW})"))
    for stage in stages:
        read = read.selectExpr("*", *stage)
    read = compiled.apply(read)
    return read.selectExpr(
        SCOPE,
        f"{key} AS key",
        *RELEASE_ORDER,
        f"{' + '.join(bits)} AS mask",
        "0L AS decided",
        *texts,
    )


def match_release(
    context: Context, batch: Batch, ready: DataFrame, watermark: str, scopes: DataFrame | None
) -> DataFrame:
    """The match records decided in this batch (``value`` and the ``_o<i>`` order of
    :func:`~sparktide.spark.outputs.text.write_text`), from the released rows ``ready``
    (``value``: the line; ``watermark``: SQL of a row's scope watermark, reading
    ``scopes``' columns when given); writes the rows kept (table ``match``)."""
    job = context.job
    match = job.match
    assert match is not None
    schema = state_schema(_schema(job))
    kept = context.store.load_table(batch.previous, "match", schema)
    # (the kept rows were released before the batch's: they come first, semantics §11.25)
    batch_rows = _inputs(job, ready.withColumnRenamed("value", RAW)).withColumn("_src", F.lit(1))
    rows = batch_rows.unionByName(kept.withColumn("_src", F.lit(0)))
    if scopes is not None:
        rows = rows.join(scopes, on=SCOPE, how="left")
    rows = rows.withColumn("watermark", F.expr(f"CAST({watermark} AS LONG)"))
    rows = rows.repartition(SCOPE, "key").sortWithinPartitions(SCOPE, "key", "_src", *RELEASE_ORDER)
    rows = rows.select(*schema.names, "watermark")
    measures = tuple(
        (_FUNCTIONS[m.function], _variable(job, m.variable), _column(job, m.column))
        for m in match.measure_list
    )
    values = ", ".join(f"v{j} string" for j in range(len(measures)))
    answer = state_schema(f"kind long, {_schema(job)}, match_time long, {values}")
    program = match.program
    body = functools.partial(
        _body,
        final=batch.flushing,
        duration=match.limit_duration,
        program=(program.ops, program.first, program.second),
        measures=measures,
        schema=_arrow(answer),
    )
    answered = batch.keep(rows.mapInArrow(body, answer))
    write_state(context.store, batch, answered.filter("kind = 0").select(*schema.names), "match")
    found = answered.filter("kind = 1").withColumn(SYSTEM_TIME, F.col("match_time"))
    records = found.select(SCOPE, *RELEASE_ORDER, F.expr(_measures(job)).alias(RAW))
    stamp = sql_string("," + json.dumps(job.event_fields["timestamp"]) + ':"')
    value = f"concat(substring({RAW}, 1, length({RAW}) - 1), {stamp}, {iso(SYSTEM_TIME)}, '\"}}')"
    if job.select:  # (columns computed from the measures and System.Timestamp())
        records = filter_and_select(job, batch, records)
        value = projected_event(job, iso(SYSTEM_TIME))
    return records.select(
        *ordered(SYSTEM_TIME, SCOPE, *RELEASE_ORDER[1:]), F.expr(value).alias("value"), SYSTEM_TIME
    )


def _body(batches, **options):  # type: ignore[no-untyped-def]
    """The ``mapInArrow`` body: imports the compiled loop in the worker (numba stays out
    of the driver)."""
    from sparktide.spark.matchloop import match_partitions

    return match_partitions(batches, **options)


def _arrow(schema: StructType) -> pa.Schema:
    """The Arrow schema of the state-typed ``schema`` (strings and longs)."""
    return pa.schema(
        (f.name, pa.string() if isinstance(f.dataType, StringType) else pa.int64())
        for f in schema.fields
    )


def _variable(job: Job, name: str | None) -> int:
    assert job.match is not None
    return -1 if name is None else job.match.program.variables.index(name)


def _column(job: Job, column: str | None) -> int:
    assert job.match is not None
    return -1 if column is None else job.match.columns.index(column)


def _measures(job: Job) -> str:
    """SQL of a match's measures as a JSON object, in order (their JSON texts ``v<j>``)."""
    assert job.match is not None
    parts = [f"'\"{m.name}\":', v{j}" for j, m in enumerate(job.match.measure_list)]
    return "concat('{', " + ", ',', ".join(parts) + ", '}')"
