"""Dead letters (semantics §8): malformed records and dead-lettered events, with the reason,
the record as it came and, for closed windows, the window it missed."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparktide.spark.batch import Batch
from sparktide.spark.columns import CLOSED_WINDOW_END, CLOSED_WINDOW_START, RECORD
from sparktide.spark.context import Context
from sparktide.spark.inputs.contract import FULL_TEXT
from sparktide.spark.inputs.textfiles import split_lines
from sparktide.spark.outputs.text import collect_sorted, empty_directory, ordered, write_text
from sparktide.spark.outputs.typed import DEAD_LETTERS, dead_letter_schema
from sparktide.spark.sql import iso

__all__ = ["raw_lines", "write_dead_letters"]

#: A record as it came: a record that parsed (``m``) is its own JSON text (every
#: format's ``raw`` is), else the line as a JSON string. Never through parse_json: a
#: malformed line may be far longer than a variant (or Jackson's longest string) can
#: hold, and through the variant a float such as 3.0 would come out as 3.
_ORIGINAL = (
    f"CASE WHEN {RECORD} IS NOT NULL THEN raw "
    "ELSE substr(to_json(array(raw)), 2, length(to_json(array(raw))) - 2) END"
)


def write_dead_letters(
    context: Context,
    batch: Batch,
    parsed: DataFrame,
    decided: DataFrame | None,
    lines: DataFrame | None,
    malformed_count: int,
) -> None:
    """Malformed records (from ``parsed``) and dead-lettered events (from ``decided``;
    ``lines``, the batch's input, when there are any: with windows their raw lines are
    not kept, so they are looked up there by file and line)."""
    directory = context.job.output.dead_letter
    if directory is None and not batch.callback:
        return
    if lines is None and not malformed_count:  # nothing to write: no Spark job
        if batch.sink is not None:
            schema = dead_letter_schema(context.written_window is not None)
            batch.sink(DEAD_LETTERS, directory, pa.array([], pa.string()), schema.empty_table())
        elif directory is not None:
            empty_directory(f"{directory}/{batch.label}")
        return
    rows = parsed.filter("error IS NOT NULL").select(
        "file",
        "line",
        F.lit("malformed").alias("reason"),
        F.expr(_ORIGINAL).alias("record"),
        "error",
        F.lit(None).cast("bigint").alias(CLOSED_WINDOW_START),
        F.lit(None).cast("bigint").alias(CLOSED_WINDOW_END),
    )
    if lines is not None:
        assert decided is not None
        rows = rows.unionByName(_lettered(context, decided, lines))
    if batch.sink is None:
        out = rows.select(*ordered("file", "line"), F.expr(_record(context)).alias("value"))
        write_text(batch, out, directory)
        return
    # collected: the JSON text and the typed columns in one Spark job
    value = F.expr(_record(context)).alias("value")
    both = rows.select(*ordered("file", "line"), value, *_typed_columns(context))
    got = collect_sorted(both, ["_o0", "_o1"])
    schema = dead_letter_schema(context.written_window is not None)
    table = pa.Table.from_arrays([got.column(f.name).cast(f.type) for f in schema], schema=schema)
    batch.sink(DEAD_LETTERS, directory, got.column("value").combine_chunks(), table)


def _typed_columns(context: Context) -> list[Column]:
    """A dead letter's typed columns (:func:`.dead_letter_schema`), from its row."""
    columns = [F.col(n) for n in ("file", "line", "reason", "record", "error")]
    window = context.written_window
    if window is not None:
        size = window.size if window.type in ("tumbling", "hopping") else 0
        start = F.col(CLOSED_WINDOW_START)
        columns.append(F.timestamp_micros(start).alias("window_start"))
        columns.append(F.timestamp_micros(start + F.lit(size)).alias("window_end"))
    return columns


def _lettered(context: Context, decided: DataFrame, lines: DataFrame) -> DataFrame:
    """The dead-lettered events of the batch, with their record's text."""
    lettered = decided.filter("verdict = 'dead_lettered'")
    end = (  # (the one-pass plan's rows name the start only: grid windows)
        F.col(CLOSED_WINDOW_END)
        if CLOSED_WINDOW_END in decided.columns
        else F.expr(f"{CLOSED_WINDOW_START} + {_grid_size(context)}").alias(CLOSED_WINDOW_END)
    )
    if context.window is not None:  # raw lines are kept for malformed records only
        lettered = lettered.drop("raw").join(raw_lines(lines, lettered), ["file", "line"])
    return lettered.select(
        "file",
        "line",
        "reason",
        F.col("raw").alias("record"),  # a well-formed record: JSON text already
        F.lit(None).cast("string").alias("error"),
        CLOSED_WINDOW_START,
        end,
    )


def _record(context: Context) -> str:
    """SQL of a dead letter's JSON record."""
    head = ["'file', file", "'line', line", "'reason', reason"]
    tail = ["'error', error"]
    window = context.written_window
    if window is not None:
        tail.append(f"'window_start', {iso(CLOSED_WINDOW_START)}")
        tail.append(f"'window_end', {iso(CLOSED_WINDOW_END)}")
    options = "map('ignoreNullFields', 'false')"
    head_json = f"to_json(named_struct({', '.join(head)}), {options})"
    tail_json = f"to_json(named_struct({', '.join(tail)}), {options})"
    return (
        f"concat(left({head_json}, length({head_json}) - 1), ',\"record\":', record, ',', "
        f"substr({tail_json}, 2))"
    )


def _grid_size(context: Context) -> int:
    """The size of the job's grid windows (0: a snapshot, or no window)."""
    window = context.window
    return window.size if window is not None and window.type in ("tumbling", "hopping") else 0


def raw_lines(lines: DataFrame, wanted: DataFrame) -> DataFrame:
    """``file``, ``line``, ``raw`` of the input lines ``wanted`` names (few: only the
    files holding them are split into lines again)."""
    if FULL_TEXT in lines.columns:  # typed Parquet rows: raw may be left out
        return lines.select("file", "line", F.col(FULL_TEXT).alias("raw"))
    if "raw" in lines.columns:
        return lines.select("file", "line", "raw")
    files = wanted.select("file").distinct()
    return split_lines(lines.join(F.broadcast(files), "file", "left_semi")).select(
        "file", "line", "raw"
    )
