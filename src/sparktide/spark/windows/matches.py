"""A window over the matches of a join of two streams, in Spark SQL (semantics §7.11;
:class:`sparktide.core.joinwindow.JoinedWindows`).

The join (:func:`sparktide.spark.outputs.join.join`) hands over the matches the job
watermark released in the batch; :func:`match_rows` makes each one a row of the
window, as the judging stage makes an admitted event one: its timestamp, its record
``m`` (:func:`match_record`), its place among the window's events, its grouping values
and the aggregates' inputs, and the windows it falls in. Every one of them is open: a
match is released at or after its timestamp, and its windows close later.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from sparktide.spark.columns import (
    ARRIVAL_TIME,
    EDGE,
    END_TIME,
    ERROR,
    FILE,
    GOVERNING_WATERMARK,
    LINE,
    PARTITION,
    REASON,
    RECORD,
    SCOPE,
    SUBSTREAM_KEY,
    SYSTEM_TIME,
    VERDICT,
)
from sparktide.spark.context import Context
from sparktide.spark.judging import row_inputs
from sparktide.spark.outputs.jointables import ROW_PLACES
from sparktide.spark.projections import add_record_columns, row_values, with_timed_inputs
from sparktide.spark.sql import NEG, sql_string
from sparktide.spark.windows.assign import assign_windows

__all__ = ["match_place", "match_record", "match_rows"]


def match_record(inputs: list[str], value: str = "value") -> str:
    """SQL of the record a window reads of a match (``value``: its JSON text, each
    input's record under the input's name): a variant object with each record under
    its input's name and each of its fields as ``<input>.<field>``
    (:func:`sparktide.core.joinwindow.match_record`). The values are the records'
    own variants, as their parse made them."""
    parsed = f"parse_json({value})"
    whole, fields = [], []
    for name in inputs:
        path = sql_string("$['" + name + "']")
        whole += [sql_string(name), f"variant_get({parsed}, {path})"]
        as_map = f"variant_get({parsed}, {path}, 'map<string,variant>')"
        prefix = sql_string(name + ".")
        fields.append(
            f"transform_keys(coalesce({as_map}, CAST(map() AS MAP<STRING, VARIANT>)), "
            f"(k, v) -> concat({prefix}, k))"
        )
    return f"to_variant_object(map_concat(map({', '.join(whole)}), {', '.join(fields)}))"


def _ordered_long(column: str) -> str:
    """SQL: fixed-width text of a long that sorts as the number does."""
    return f"lpad(hex(coalesce({column}, 0) ^ -9223372036854775808), 16, '0')"


def match_place() -> str:
    """SQL of the text that orders the matches of a window after their timestamp and
    the left event's arrival time, in the window's :data:`~.FILE` column (the right
    event's line in :data:`~.LINE`): the left event's file and line, then the right
    event's arrival time and file; a left join's unmatched event (no right event) before
    any match of it, as :func:`sparktide.core.joinwindow.match_place` orders them; then
    the places of the table rows it met (``ro``, semantics §11.26)."""
    left = f"coalesce(lfile, ''), {_ordered_long('lline')}"
    right = f"{_ordered_long('ra')}, coalesce(rfile, '')"
    matched = f"concat_ws(chr(0), {left}, {right})"
    place = f"CASE WHEN ra IS NULL THEN concat_ws(chr(0), {left}) ELSE {matched} END"
    # (the rows a match met, in the tables' order, after it: semantics §11.26)
    return f"concat_ws(chr(1), {place}, coalesce({ROW_PLACES}, ''))"


def match_rows(context: Context, ready: DataFrame) -> DataFrame:
    """The window's rows of the matches ``ready`` (``MATCHES_SCHEMA`` rows, ``value``
    holding both records), under ``context`` (the window stage's,
    :attr:`Context.matches`)."""
    join = context.job.join
    assert join is not None
    inputs = [name for name, _ in context.job.inputs if name not in join.stream_tables]
    inputs += join.stream_tables  # (the rows each match met, semantics §11.26)
    rows = ready.selectExpr(
        SYSTEM_TIME,
        "la AS _la",  # (not the arrival time until the record's columns are made)
        f"{match_place()} AS {FILE}",
        f"coalesce(rline, 0) AS {LINE}",
        f"{match_record(inputs)} AS {RECORD}",
        f"CAST(NULL AS STRING) AS {ERROR}",
        f"'accepted' AS {VERDICT}",
        f"CAST(NULL AS STRING) AS {REASON}",
        f"'' AS {SCOPE}",
        f"{NEG} AS {GOVERNING_WATERMARK}",
        f"CAST(NULL AS STRING) AS {EDGE}",
        f"CAST(NULL AS BIGINT) AS {END_TIME}",
        f"CAST(NULL AS STRING) AS {PARTITION}",
        f"CAST(NULL AS STRING) AS {SUBSTREAM_KEY}",
    )
    # (a CAST that fails in a grouping column or an aggregate is null over a match:
    # there is no input record to dead-letter, and the error column is dropped)
    made = add_record_columns(rows, context.job)
    derived = row_values(context.job)
    rows = made.selectExpr(
        *(f"`{c}`" for c in made.columns if c not in (*derived, ERROR, "_la")),
        f"_la AS {ARRIVAL_TIME}",
        *(f"{expr} AS {name}" for name, expr in row_inputs(context)),
    )
    # (System.Timestamp() in an aggregate: the match's timestamp, semantics §6.12)
    rows = with_timed_inputs(rows, context.job, context.aggregates, from_line=False)
    return assign_windows(context, rows)
