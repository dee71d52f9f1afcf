"""PySpark's Python daemon, started with its modules' compiled bytecode.

Spark starts the Python processes that run a job's Arrow functions through a daemon
(``python -m pyspark.daemon``), which forks one worker per task. It puts its own copies
of pyspark and py4j at the head of their path: ``pyspark.zip`` and ``py4j-*-src.zip``
in ``$SPARK_HOME/python/lib``. Python cannot cache the bytecode of a module imported
from a zip file, so the daemon, and every worker it forks, compiles from source each
pyspark module it imports (docs/design.md, "Python workers", has the cost).

:func:`sparktide.spark.local_session` names this module as the daemon
(``spark.python.daemon.module``). It takes the two archives off the path when they are
the ones inside the pyspark package that the rest of the path finds (a pip install of
pyspark ships both), so that package's modules, compiled once into ``__pycache__``, are
imported instead: the same files. Then it runs pyspark's daemon unchanged.

It lives outside :mod:`sparktide.spark`, whose package imports pyspark: this module
must run before any pyspark module is imported.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import runpy
import sys

__all__ = ["DAEMON", "PRELOADED", "bundled_archives"]

#: pyspark's own daemon module, which this one runs.
DAEMON = "pyspark.daemon"

#: What every worker imports to run sparktide's Arrow functions: imported once by the
#: daemon, so that each worker it forks starts with them rather than importing them
#: itself (pyspark's worker, Arrow and pandas, and sparktide's Spark package).
PRELOADED = ("pyspark.worker", "pyarrow", "pandas", "sparktide.spark")


def bundled_archives(path: list[str]) -> list[str]:
    """The entries of ``path`` that are the pyspark and py4j archives shipped inside
    the pyspark package found on the rest of ``path`` (none when pyspark is found only
    in an archive, or the archives are another installation's)."""
    archives = [
        entry
        for entry in path
        if os.path.basename(entry) == "pyspark.zip"
        or (os.path.basename(entry).startswith("py4j-") and entry.endswith("-src.zip"))
    ]
    rest = [entry for entry in path if entry not in archives]
    found = {
        name: importlib.machinery.PathFinder.find_spec(name, rest) for name in ("pyspark", "py4j")
    }
    pyspark, py4j = found["pyspark"], found["py4j"]
    if pyspark is None or py4j is None or not pyspark.submodule_search_locations:
        return []
    package = next(iter(pyspark.submodule_search_locations))
    shipped = os.path.realpath(os.path.join(package, "python", "lib"))
    return [
        entry
        for entry in archives
        if os.path.dirname(os.path.realpath(entry)) == shipped
        and (os.path.basename(entry) == "pyspark.zip" or _same_py4j(entry, py4j.origin))
    ]


def _same_py4j(archive: str, package_init: str | None) -> bool:
    """Whether the py4j package at ``package_init`` is the version ``archive`` names
    (``py4j-<version>-src.zip``)."""
    version = os.path.basename(archive)[len("py4j-") : -len("-src.zip")]
    if package_init is None:
        return False
    try:
        with open(os.path.join(os.path.dirname(package_init), "version.py")) as handle:
            text = handle.read()
    except OSError:
        return False
    return f'"{version}"' in text or f"'{version}'" in text


def preload(names: tuple[str, ...] = PRELOADED) -> list[str]:
    """Import ``names`` (those that import; a worker imports what it needs itself);
    returns the ones imported."""
    imported = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # (an optional dependency missing: the worker will say so)
            continue
        imported.append(name)
    return imported


def main() -> None:
    """Run pyspark's daemon with its bundled archives off ``sys.path`` and the modules
    the workers need (:data:`PRELOADED`) already imported; the daemon's globals name
    them (``preloaded``), and so do those of every worker it forks."""
    for entry in bundled_archives(sys.path):
        sys.path.remove(entry)
    preloaded = preload()
    runpy.run_module(
        DAEMON, init_globals={"preloaded": preloaded}, run_name="__main__", alter_sys=True
    )


if __name__ == "__main__":
    main()
