"""Whole text files into numbered lines, as the reference reader splits them.

A JSON-lines or CSV source arrives as whole files (``file``, ``text``, ``mtime``); the
SQL route parses one row per non-blank line (``file``, ``line``, ``raw``, ``mtime``),
each stripped of :data:`~sparktide.spark.inputs.contract.WHITE_SPACE`, with the bytes of
a line that is not UTF-8 kept so that the line alone is judged for it.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparktide.spark.inputs.contract import WHITE_SPACE

__all__ = ["glob_escape", "json_texts", "lines_of", "split_lines", "whole_texts"]


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
