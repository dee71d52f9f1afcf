"""What :func:`sparktide.spark.local_session` sets up, seen from a running session."""

from __future__ import annotations

from sparktide.pyspark_daemon import PRELOADED
from sparktide.spark.session import DATAFRAME_DEBUGGING, PYTHON_DAEMON_MODULE, SPARKTIDE_DAEMON


def test_python_workers_import_pyspark_from_the_installed_package(spark):
    """Spark's Python workers start from sparktide's daemon module, which leaves
    pyspark's zip archives off the path: they import pyspark's compiled modules; and
    the daemon imported what the workers need before it forked them."""

    def where(batches):
        import sys

        import py4j
        import pyarrow as pa
        import pyspark

        for _ in batches:
            pass
        preloaded = ",".join(sys.modules["__main__"].__dict__.get("preloaded", []))
        yield pa.RecordBatch.from_pydict(
            {"pyspark": [pyspark.__file__], "py4j": [py4j.__file__], "preloaded": [preloaded]}
        )

    assert spark.conf.get(PYTHON_DAEMON_MODULE) == SPARKTIDE_DAEMON
    schema = "pyspark string, py4j string, preloaded string"
    row = spark.range(1).mapInArrow(where, schema).collect()[0]
    assert ".zip" not in row["pyspark"] and ".zip" not in row["py4j"], row
    assert row["pyspark"].endswith("pyspark/__init__.py")
    assert row["preloaded"].split(",") == list(PRELOADED)


def test_dataframe_call_sites_are_not_recorded(spark):
    assert spark.conf.get(DATAFRAME_DEBUGGING) == "false"


def test_a_caller_s_session_gets_the_planner_settings_it_left_at_spark_s_defaults(spark):
    """``start`` applies the code-generation limit and turns dynamic partition pruning off
    on a caller's session left at Spark's defaults (``settings_for``), and leaves a
    value the caller chose."""
    from sparktide.spark.session import (
        DYNAMIC_PRUNING,
        HUGE_METHOD_BYTES,
        HUGE_METHOD_LIMIT,
        settings_for,
    )

    before = {key: spark.conf.get(key) for key in (DYNAMIC_PRUNING, HUGE_METHOD_LIMIT)}
    try:
        spark.conf.set(DYNAMIC_PRUNING, "true")
        spark.conf.set(HUGE_METHOD_LIMIT, "12345")
        settings_for(spark)
        assert spark.conf.get(DYNAMIC_PRUNING) == "false"
        assert spark.conf.get(HUGE_METHOD_LIMIT) == "12345"
        spark.conf.set(HUGE_METHOD_LIMIT, "65535")
        settings_for(spark)
        assert spark.conf.get(HUGE_METHOD_LIMIT) == HUGE_METHOD_BYTES
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)
