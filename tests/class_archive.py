"""A class-data-sharing archive of Spark's classes for the JVMs the suite starts.

A JVM that starts Spark spends most of its first seconds loading, parsing and verifying
Spark's classes; with the classes mapped from an archive (Java's class data sharing,
``-XX:SharedArchiveFile``) a session and one small query take half the CPU time. The
crash, restart and interrupt tests start a JVM in every child they run, about ten in a
run (docs/design.md, *The suite*, has the figures).

A child process starts a session and runs one small query, in a JVM told
``-XX:ArchiveClassesAtExit``, and the archive it leaves at its exit is renamed into place
(:data:`ARCHIVE`, in the virtual environment, whose Spark jars it describes; ``make
clean`` removes it). The workload is pyspark's alone, so ``make test`` makes the
archive (``python -m tests.class_archive``) as soon as pyspark is installed, on the core
pip leaves idle while it installs the rest: the session's JVM then maps the classes from
the first test on. A run that finds no archive (pytest without ``make``, or an older one)
has the controller make it in the background as the run starts
(:func:`make_in_background`), for the children the tests start later
(:func:`with_archive`). A JVM that cannot use it (another Java) ignores it: Java maps
the archive only when it matches. Nothing a JVM computes changes.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["ARCHIVE", "make_in_background", "with_archive"]

#: The archive, beside the Spark jars it describes.
ARCHIVE = Path(sys.prefix) / "sparktide-spark-classes.jsa"

#: What the archive's JVM runs: a session and one small grouped query, then a normal exit
#: (an archive of a whole ``run_job`` is a quarter larger, takes twice as long to make,
#: and made the children no quicker). Pyspark's alone: sparktide's other dependencies
#: may not be installed yet (the module docstring).
_WORKLOAD = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").getOrCreate()
spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
spark.stop()
"""


def with_archive(options: str) -> str:
    """``options`` (a JVM's ``JDK_JAVA_OPTIONS``) with the archive, once it is there."""
    if not ARCHIVE.is_file() or "SharedArchiveFile" in options:
        return options
    return f"{options} -XX:SharedArchiveFile={ARCHIVE}".strip()


def make_in_background(jvm_options: str, spark_arguments: str) -> threading.Thread | None:
    """Start making the archive unless it is there; the thread making it, else ``None``.
    An archive older than the Spark jars it describes is made again."""
    if _current():
        return None
    ARCHIVE.unlink(missing_ok=True)
    thread = threading.Thread(target=_make, args=(jvm_options, spark_arguments), daemon=True)
    thread.start()
    return thread


def _current() -> bool:
    """Whether the archive is there, and newer than the Spark jars it describes."""
    return ARCHIVE.is_file() and ARCHIVE.stat().st_mtime > _jars().stat().st_mtime


def _jars() -> Path:
    """The directory of the Spark jars this environment's JVMs load (found without
    importing pyspark, which the shared JVM's thread may be importing)."""
    spec = importlib.util.find_spec("pyspark")
    return Path(spec.origin if spec and spec.origin else sys.prefix).parent / "jars"


def _make(jvm_options: str, spark_arguments: str) -> None:
    """Run the workload in a JVM that archives its classes at exit; rename the archive
    into place only when the run ended well (a half-written one is never used)."""
    partial = ARCHIVE.with_name(f"{ARCHIVE.name}.{os.getpid()}.partial")
    env = dict(os.environ)
    env["JDK_JAVA_OPTIONS"] = f"{jvm_options} -XX:ArchiveClassesAtExit={partial}"
    env["PYSPARK_SUBMIT_ARGS"] = spark_arguments
    env.pop("PYSPARK_GATEWAY_PORT", None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _WORKLOAD],
            cwd=Path(__file__).parent.parent,
            env=env,
            capture_output=True,
            timeout=600,
            check=False,
        )
        if done.returncode == 0 and partial.is_file() and partial.stat().st_size > 0:
            os.replace(partial, ARCHIVE)
    except (OSError, subprocess.SubprocessError):
        pass  # (no archive: the JVMs load their classes as they always did)
    finally:
        partial.unlink(missing_ok=True)


if __name__ == "__main__":  # make: the archive now, with the children's settings
    from tests.children import CHILD_JVM_OPTIONS, CHILD_SPARK_ARGUMENTS

    if not _current():
        ARCHIVE.unlink(missing_ok=True)
        _make(CHILD_JVM_OPTIONS, CHILD_SPARK_ARGUMENTS)
