"""How the suite is spread over ``pytest -n N`` workers (``make test`` runs two).

Each worker that runs a Spark test takes one local SparkSession (tests/spark/conftest.py)
and keeps it for the rest of the run; the workers' sessions share one JVM, which the
controller starts (tests/shared_jvm.py says why). A worker given only Spark tests would
leave the other idle at the end; one given every Spark test would start them after the
other had finished. So under pytest-xdist's ``worksteal`` scheduler, which hands each worker one
contiguous slice of the collection and lets an idle worker take the second half of
another's queue, the collection is reordered: each slice begins with its share of the
Spark tests (balanced by weight) and ends with plain Python tests, the small ones that
stealing moves about at the end. The order within each share is the collection's, so
module and session fixtures are set up as often as without workers.

A test is a Spark test if it takes the ``spark`` fixture or is marked ``jvm(weight)``
(it starts JVMs of its own: ``sparktide run`` or ``restart_runner.py`` children); its
weight is one Spark job's, or the marker's.

The JVMs of child processes (``CHILD_JVM_OPTIONS``, tests/children.py) compile with the
JIT's first tier only and collect garbage on one thread: they live seconds, where the
optimising compiler and the parallel collector would take the cores the tests need. The
session's JVM lives the whole run and keeps both compilers, tuned to compile less
(``SESSION_JVM_OPTIONS`` in tests/spark/conftest.py). Both map Spark's classes from an
archive once it is made (tests/class_archive.py). Like the session, the children
evaluate expressions without generating Java code (``CHILD_SPARK_ARGUMENTS``, read by
PySpark when it starts a JVM; tests/spark/conftest.py says why). Neither changes a
record: ``$JDK_JAVA_OPTIONS`` and ``$PYSPARK_SUBMIT_ARGS``, if set, are left as they are.
"""

from __future__ import annotations

import os

import pytest

from tests.children import CHILD_JVM_OPTIONS, CHILD_SPARK_ARGUMENTS

os.environ.setdefault("JDK_JAVA_OPTIONS", CHILD_JVM_OPTIONS)
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", CHILD_SPARK_ARGUMENTS)


def _weight(item: pytest.Item) -> int:
    """How many Spark jobs ``item`` costs, about (0: no JVM)."""
    marker = item.get_closest_marker("jvm")
    if marker is not None:
        return int(marker.args[0]) if marker.args else 1
    return 1 if "spark" in getattr(item, "fixturenames", ()) else 0


def _jvms(item: pytest.Item) -> int:
    """The weight of ``item`` if it starts JVMs of its own (marked ``jvm``), else 0."""
    return _weight(item) if item.get_closest_marker("jvm") is not None else 0


def _slices(total: int, workers: int) -> list[int]:
    """The sizes of the slices the worksteal scheduler first sends to each worker."""
    sizes = []
    for remaining_workers in range(workers, 0, -1):
        sizes.append(total // remaining_workers)
        total -= sizes[-1]
    return sizes


def spread(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """``items`` reordered into ``workers`` slices, each its Spark tests then plain ones;
    the tests that start JVMs of their own (marked ``jvm``) last among the Spark tests,
    so their children find the class archive made (tests/class_archive.py), the
    heaviest of them first (a long chain of children started last would end alone)."""
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    loads = [0] * workers
    plain = []
    for item in items:
        weight = _weight(item)
        if weight == 0:
            plain.append(item)
            continue
        lightest = loads.index(min(loads))
        shares[lightest].append(item)
        loads[lightest] += weight
    ordered: list[pytest.Item] = []
    for share in shares:  # (a stable sort: the collection's order otherwise)
        share.sort(key=lambda item: (item.get_closest_marker("jvm") is not None, -_jvms(item)))
    for share, size in zip(shares, _slices(len(items), workers), strict=True):
        fill = max(0, size - len(share))
        ordered += share + plain[:fill]
        del plain[:fill]
    return ordered + plain


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker (each collects the whole suite, in the same order)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if hasattr(config, "workerinput") and workers > 1:
        items[:] = spread(items, workers)


_shared: dict[str, object] = {}


def pytest_configure(config: pytest.Config) -> None:
    """On the controller of several workers: one JVM for all their Spark tests
    (tests/shared_jvm.py), started while the workers start; and the archive of Spark's
    classes for the JVMs the tests start (tests/class_archive.py), made meanwhile."""
    from tests import class_archive, shared_jvm

    if shared_jvm.wanted(config):
        _shared["jvm"] = shared_jvm.SharedJvm(config.getoption("numprocesses"))
        _shared["archive"] = class_archive.make_in_background(
            CHILD_JVM_OPTIONS, CHILD_SPARK_ARGUMENTS
        )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """The children a test starts map Spark's classes from the archive once it is made
    (unless ``$JDK_JAVA_OPTIONS`` was the caller's own)."""
    from tests.class_archive import with_archive

    if os.environ.get("JDK_JAVA_OPTIONS") == CHILD_JVM_OPTIONS:
        os.environ["JDK_JAVA_OPTIONS"] = with_archive(CHILD_JVM_OPTIONS)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    """pytest-xdist's hook, on the controller as it starts a worker: where the worker
    finds its server in the shared JVM."""
    from tests import shared_jvm

    jvm = _shared.get("jvm")
    if jvm is not None:
        node.workerinput[shared_jvm.SHARED_JVM] = jvm.directory  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    jvm = _shared.pop("jvm", None)
    if jvm is not None:
        jvm.stop()  # type: ignore[attr-defined]
    archive = _shared.pop("archive", None)
    if archive is not None:  # (long made in a run of the whole suite)
        archive.join()  # type: ignore[attr-defined]
