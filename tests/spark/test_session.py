"""What :func:`sparktide.spark.local_session` sets up, seen from a running session."""

from __future__ import annotations

from sparktide.spark.session import DATAFRAME_DEBUGGING, PYTHON_DAEMON_MODULE, SPARKTIDE_DAEMON


def test_python_workers_import_pyspark_from_the_installed_package(spark):
    """Spark's Python workers start from sparktide's daemon module, which leaves
    pyspark's zip archives off the path: they import pyspark's compiled modules."""

    def where(batches):
        import py4j
        import pyarrow as pa
        import pyspark

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"pyspark": [pyspark.__file__], "py4j": [py4j.__file__]})

    assert spark.conf.get(PYTHON_DAEMON_MODULE) == SPARKTIDE_DAEMON
    row = spark.range(1).mapInArrow(where, "pyspark string, py4j string").collect()[0]
    assert ".zip" not in row["pyspark"] and ".zip" not in row["py4j"], row
    assert row["pyspark"].endswith("pyspark/__init__.py")


def test_dataframe_call_sites_are_not_recorded(spark):
    assert spark.conf.get(DATAFRAME_DEBUGGING) == "false"
