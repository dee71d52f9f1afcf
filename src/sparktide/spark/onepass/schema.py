"""The rows the one-pass kernel sends back, and the files it writes beside them.

A task answers with few rows (:func:`kernel_schema`): one summary per partition, one
row for the task, or one row saying it gave up; the bulky rows (window partials, the
keys' rows, the lines it did not vouch for) go to parquet files whose paths the task's
row carries.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type

from sparktide.core.counts import VERDICT_COUNTERS
from sparktide.spark.columns import (
    KERNEL_ABORT,
    KERNEL_KEPT,
    KERNEL_KEY,
    KERNEL_LINE,
    KERNEL_PARTIAL,
    KERNEL_SUMMARY,
    KERNEL_TASK,
    PARTITION,
)
from sparktide.spark.onepass.plan import FusedPlan

__all__ = [
    "ABORT",
    "COUNTED",
    "FILE_TEXT",
    "KEPT",
    "KEPT_SCHEMA",
    "KEY",
    "KEY_SCHEMA",
    "LINE",
    "LINE_SCHEMA",
    "PARTIAL",
    "RELEASED_SCHEMA",
    "SUMMARY",
    "TASK",
    "counter_column",
    "fused_schema",
    "kernel_schema",
    "partial_schema",
    "record_batch",
]

#: The kinds of the kernel's output rows: window partials, one summary per partition,
#: one row per task (how many lines it could not judge, how many partials it wrote),
#: those lines, "give up", and (substreams) one row per key of the batch.
PARTIAL, SUMMARY, TASK = KERNEL_PARTIAL, KERNEL_SUMMARY, KERNEL_TASK
LINE, ABORT, KEY = KERNEL_LINE, KERNEL_ABORT, KERNEL_KEY
#: A windowless job's tasks write their released records where partials go
#: (:data:`PARTIAL`) and the analytic columns' kept events here.
KEPT = KERNEL_KEPT
#: The row of a task that could not read a JSONL file by its path (not a local file, or
#: compressed): the engine gives the kernel the files' text instead.
FILE_TEXT = "r"

#: Counters the kernel counts per partition (the engine's other counters are 0 here).
COUNTED = (
    *VERDICT_COUNTERS,
    "in_no_window",
    "dropped.early",
    "dropped.late",
    "dropped.out_of_order",
)

_ARROW_TYPES = {"string": pa.string(), "int64": pa.int64()}


def counter_column(name: str) -> str:
    """The column (and summary key) of counter ``name``: ``dropped.late`` → ``c_dropped__late``."""
    return "c_" + name.replace(".", "__")


def _fields(columns: str) -> list[pa.Field]:
    """Arrow fields from ``"name type, ..."`` (types ``string`` and ``int64``)."""
    pairs = (column.split() for column in columns.split(","))
    return [pa.field(name, _ARROW_TYPES[kind]) for name, kind in pairs]


def kernel_schema(plan: FusedPlan) -> pa.Schema:
    """The kernel's rows: one summary per partition, one row per task, or "give up"."""
    return pa.schema(
        [
            *_fields(
                f"kind string, task int64, {PARTITION} string, max_h int64, max_a int64, "
                "late_a int64, "
                "late_file string, late_line int64, late_t int64"
            ),
            *(pa.field(counter_column(name), pa.int64()) for name in COUNTED),
            *_fields("slow int64, parts int64"),
            *(pa.field(f"_nc{i}", pa.int64()) for i in range(len(plan.present))),
            *(pa.field(f"{kind}_file", pa.string()) for kind in (PARTIAL, KEY, LINE, KEPT)),
        ]
    )


def fused_schema(plan: FusedPlan) -> T.StructType:
    """The kernel's output as a Spark schema."""
    return T.StructType(
        [T.StructField(f.name, from_arrow_type(f.type)) for f in kernel_schema(plan)]
    )


def _partial_fields(plan: FusedPlan) -> list[pa.Field]:
    fields = []
    for function, _, names in plan.aggregates:
        for name in names:
            if name.endswith("_si"):
                fields.append(pa.field(name, pa.decimal128(38, 0)))
            elif name.endswith("_sd"):
                fields.append(pa.field(name, pa.float64()))
            else:
                fields.append(pa.field(name, pa.int64()))
        assert function in ("count", "sum", "avg")
    return fields


def partial_schema(plan: FusedPlan) -> pa.Schema:
    """The window partials a task writes (:data:`PARTIAL`): one row per (scope, group,
    start), the partial aggregates' columns; a windowless job's released records
    (:data:`RELEASED_SCHEMA`)."""
    if plan.release is not None:
        return RELEASED_SCHEMA
    return pa.schema(
        [
            pa.field("scope", pa.string()),
            *(pa.field(name, pa.string()) for name in plan.group_names),
            pa.field("start", pa.int64()),
            *_partial_fields(plan),
        ]
    )


#: A task's released records: their release order and their JSON text.
RELEASED_SCHEMA = pa.schema(_fields("s int64, a int64, file string, line int64, value string"))
#: The kept events of the analytic columns a task writes (:data:`KEPT`): the state
#: table ``analytic``'s columns.
KEPT_SCHEMA = pa.schema(
    _fields(
        "idx int64, scope string, key string, s int64, a int64, file string, line int64, v string"
    )
)
#: The rows a task writes for substreams (:data:`KEY`): each key's largest ``h`` and events.
KEY_SCHEMA = pa.schema(_fields("scope string, max_h int64, kn int64"))
#: The lines a task did not vouch for (:data:`LINE`), for the SQL route.
LINE_SCHEMA = pa.schema(
    _fields("file string, line int64, raw string, mtime int64, pre_error string, lpart int64")
)


def record_batch(schema: pa.Schema, columns: dict[str, pa.Array]) -> pa.RecordBatch:
    """``columns`` as a batch of ``schema`` (each cast to its field's type), a column
    the schema has and ``columns`` lacks all null."""
    count = len(next(iter(columns.values())))
    return pa.RecordBatch.from_arrays(
        [
            columns[f.name].cast(f.type) if f.name in columns else pa.nulls(count, f.type)
            for f in schema
        ],
        schema=schema,
    )
