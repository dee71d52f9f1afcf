"""Job-file expressions compiled to Spark SQL give the reference evaluator's values.

One Spark query (no stream): the record ``tests/test_expr.py::TIMES`` is parsed as the
engine parses records, each expression of ``DATEDIFF_CASES`` becomes a ``[select]``
column (:func:`sparktide.spark.expr.add_record_columns`), and every column's JSON text
must read back as the value the table states (and the reference engine computes).
"""

from __future__ import annotations

import json

from sparktide.job import Job, Projection, Source
from sparktide.spark.projections import add_record_columns
from tests.test_expr import DATEDIFF_CASES, TIMES, same


def test_datediff_in_spark_sql_matches_the_table(spark):
    job = Job(
        Source(path="unused"),
        select=tuple(Projection(f"c{i}", text) for i, (text, _) in enumerate(DATEDIFF_CASES)),
    )
    record = spark.createDataFrame([(json.dumps(TIMES),)], "raw string").selectExpr(
        "parse_json(raw) AS m"
    )
    (row,) = add_record_columns(record, job).collect()
    for i, (text, value) in enumerate(DATEDIFF_CASES):
        got = json.loads(row[f"e{i}"])
        assert same(got, value), (text, got, value)
