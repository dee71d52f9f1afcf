"""CSV files as JSON-object lines in Spark SQL, split by regular expressions as the
reference reader (:mod:`sparktide.reader`) splits them."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.reader import CSV_FIELD, CSV_QUOTED, MAX_INTEGER_DIGITS, MAX_LINE_CHARS
from sparktide.spark.inputs.contract import WHITE_SPACE
from sparktide.spark.inputs.sqlvalues import shown_text
from sparktide.spark.inputs.textfiles import lines_of
from sparktide.spark.sql import sql_string

__all__ = ["csv_rows"]

_INT = rf"^-?[0-9]{{1,{MAX_INTEGER_DIGITS}}}\z"
_FLOAT = r"^-?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?\z"


def _json_string(expr: str) -> str:
    """SQL for the JSON string literal of a text expression."""
    return f"substr(to_json(array({expr})), 2, length(to_json(array({expr}))) - 2)"


def _csv_value(cell: str) -> str:
    """SQL for the JSON value of a CSV cell, typed as ``sparktide.reader`` types it: empty
    is null, then an integer of at most 38 digits, then a finite float, else text."""
    return (
        f"CASE WHEN {cell} = '' THEN 'null' "
        f"WHEN {cell} RLIKE {sql_string(_INT)} THEN CAST(CAST({cell} AS DECIMAL(38,0)) AS STRING) "
        f"WHEN {cell} RLIKE {sql_string(_FLOAT)} AND abs(CAST({cell} AS DOUBLE)) "
        "<> CAST('Infinity' AS DOUBLE) "
        f"THEN CAST(CAST({cell} AS DOUBLE) AS STRING) "
        f"ELSE {_json_string(cell)} END"
    )


def _csv_cells(line: str) -> str:
    """SQL for the unquoted cells of a CSV line (:data:`sparktide.reader.CSV_FIELD`)."""
    quoted = "(?s)^" + CSV_QUOTED + r"\z"
    pattern = sql_string(quoted)
    unquote = (
        f"CASE WHEN left(c, 1) = '\"' THEN concat(replace(regexp_extract(c, {pattern}, 1), "
        f"'\"\"', '\"'), regexp_extract(c, {pattern}, 2)) ELSE c END"
    )
    fields = f"regexp_extract_all(concat(',', {line}), {sql_string(CSV_FIELD)}, 1)"
    return f"transform({fields}, c -> {unquote})"


def csv_rows(files: DataFrame) -> DataFrame:
    r"""CSV files → one JSON-object line per data row, as the reference reader reads them:
    lines end at ``\n`` (a trailing ``\r`` is dropped), cells are split and typed alike
    (empty → null, integer, float, else text), and a row that is not UTF-8, too long,
    under a header that is not UTF-8 or names a column twice, or with the wrong number of
    cells keeps its text and gets the reference reader's error in ``pre_error``."""
    pieces = files.select(
        "file", "mtime", F.posexplode(F.expr(lines_of("text"))).alias("pos", "piece")
    )
    # the trailing \r goes by bytes: the line may not be UTF-8 (a regex would decode it)
    lines = pieces.selectExpr(
        "file",
        "mtime",
        "pos",
        "CASE WHEN endswith(piece, '\\r') THEN "
        "CAST(substring(CAST(piece AS BINARY), 1, octet_length(piece) - 1) AS STRING) "
        "ELSE piece END AS text",
    ).withColumn("utf8", F.expr("is_valid_utf8(text)"))
    headers = lines.filter("pos = 0").selectExpr(
        "file",
        "utf8 AS header_utf8",
        f"CASE WHEN utf8 THEN {_csv_cells('text')} ELSE array() END AS names",
    )
    rows = lines.filter(f"pos > 0 AND btrim(text, {sql_string(WHITE_SPACE)}) <> ''").join(
        headers, on="file"
    )
    rows = rows.withColumn(
        "cells",
        F.expr(
            f"CASE WHEN utf8 AND length(text) <= {MAX_LINE_CHARS} THEN {_csv_cells('text')} "
            "ELSE array() END"
        ),
    ).withColumn(
        "twice",
        F.expr("try_element_at(filter(names, (x, i) -> array_position(names, x) <> i + 1), 1)"),
    )
    pairs = (
        "transform(arrays_zip(names, cells), x -> concat("
        f"{_json_string('x.names')}, ':', {_csv_value('x.cells')}))"
    )
    number = "concat('line ', pos + 1, ': '"
    checks = [
        ("NOT utf8", f"{number}, 'invalid UTF-8')"),
        (
            f"length(text) > {MAX_LINE_CHARS}",
            f"{number}, 'too long (', length(text), ' characters, the limit is {MAX_LINE_CHARS})')",
        ),
        ("NOT header_utf8", f"{number}, 'the header (line 1) is not valid UTF-8')"),
        (
            "twice IS NOT NULL",
            f"{number}, 'the header names column \\'', {shown_text('twice')}, '\\' twice')",
        ),
        (
            "size(cells) <> size(names)",
            f"{number}, 'expected ', size(names), ' columns, got ', size(cells))",
        ),
    ]
    error = "CASE " + " ".join(f"WHEN {c} THEN {e}" for c, e in checks) + " END"
    rows = rows.withColumn("pre_error", F.expr(error))
    return rows.select(
        "file",
        (F.col("pos") + 1).cast("bigint").alias("line"),
        F.expr(
            "CASE WHEN NOT utf8 THEN make_valid_utf8(text) WHEN pre_error IS NOT NULL THEN text "
            f"ELSE concat('{{', array_join({pairs}, ','), '}}') END"
        ).alias("raw"),
        "mtime",
        "pre_error",
    )
