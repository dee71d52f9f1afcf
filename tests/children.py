"""How the JVMs the suite starts in child processes are set up (tests/conftest.py says
why): the JVM's options (``$JDK_JAVA_OPTIONS``) and PySpark's arguments
(``$PYSPARK_SUBMIT_ARGS``). Apart from conftest.py so that the class archive
(tests/class_archive.py) can be made with them before pytest is installed."""

from __future__ import annotations

__all__ = ["CHILD_JVM_OPTIONS", "CHILD_SPARK_ARGUMENTS"]

#: The JIT's first tier only, and one garbage-collecting thread: the children live seconds.
CHILD_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Expressions evaluated without generating Java code, as in the session.
CHILD_SPARK_ARGUMENTS = (
    "--conf spark.sql.codegen.wholeStage=false "
    "--conf spark.sql.codegen.factoryMode=NO_CODEGEN pyspark-shell"
)
