"""One local SparkSession for the whole test session (each worker of ``-n N`` has its own,
all of them in one JVM: tests/shared_jvm.py).

The session evaluates expressions without generating Java code (Spark's own test setting,
``spark.sql.codegen.factoryMode = NO_CODEGEN``) and without adaptive query execution.
The results are the same. On the suite's small micro-batches, compiling each new plan
costs more than running it, and under adaptive execution each shuffle stage is a Spark
job of its own, the rest of the plan optimised again when it ends (docs/design.md,
"The test suite's Spark sessions", has the figures). The ``sparktide run`` child
processes of the crash, restart and interrupt tests evaluate without generated code too
(tests/conftest.py) but keep adaptive execution. Tests marked ``codegen`` (among them
two differential cases) run with Spark's defaults, as the benchmarks, ``make demo`` and
users' jobs do.
"""

from __future__ import annotations

import os

import pytest

from tests.children import CHILD_JVM_OPTIONS
from tests.class_archive import with_archive
from tests.shared_jvm import SHARED_JVM, attached_session, served

#: The session's settings: interpreted expressions, no whole-stage code generation, no
#: adaptive execution.
INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
}
#: The session JVM's options. It lives the whole run, and over the Spark tests about a
#: quarter of the JVMs' CPU went to the JIT compilers: here the optimising one (C2)
#: waits for methods three times as hot as by default and inlines less deep, and the
#: collector is the parallel one, not G1 with its concurrent threads. A sixth less CPU
#: over ``test_transcripts_on_spark.py`` (docs/design.md, "The test suite's Spark
#: sessions"); the records are the same.
SESSION_JVM_OPTIONS = (
    "-XX:+UseParallelGC -XX:MaxInlineLevel=9 -XX:InlineSmallCode=1000 "
    "-XX:Tier4InvocationThreshold=15000 -XX:Tier4MinInvocationThreshold=1800 "
    "-XX:Tier4CompileThreshold=45000 -XX:Tier4BackEdgeThreshold=120000"
)
#: What a ``codegen`` test runs with: Spark's defaults.
GENERATED = {
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
    "spark.sql.adaptive.enabled": "true",
}


def session_jvm_session(memory: str | None = None):
    """A local SparkSession in a new JVM with the session's settings (above)."""
    from sparktide.spark import local_session

    # the session's JVM runs for the whole suite: the JVM's own JIT and collector
    children = os.environ.get("JDK_JAVA_OPTIONS", "")
    ours = children.startswith(CHILD_JVM_OPTIONS)
    if ours:
        del os.environ["JDK_JAVA_OPTIONS"]
    try:
        options = with_archive(SESSION_JVM_OPTIONS) if ours else SESSION_JVM_OPTIONS
        conf = {**INTERPRETED, "spark.driver.extraJavaOptions": options}
        return local_session(memory=memory, conf=conf)
    finally:
        if ours:
            os.environ["JDK_JAVA_OPTIONS"] = children


@pytest.fixture(scope="session")
def spark(request):
    workerinput = getattr(request.config, "workerinput", {})
    directory = workerinput.get(SHARED_JVM)
    server = None if directory is None else served(directory, workerinput["workerid"])
    if server is not None:  # the JVM tests/conftest.py started for every worker
        yield attached_session(*server)
        return
    session = session_jvm_session()
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _code_generation(request):
    """Spark's default settings (whole-stage code generation, adaptive execution) for
    the length of a test marked ``codegen``."""
    if request.node.get_closest_marker("codegen") is None:
        yield
        return
    session = request.getfixturevalue("spark")
    for key, value in GENERATED.items():
        session.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in INTERPRETED.items():
            session.conf.set(key, value)
