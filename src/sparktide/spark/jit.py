"""numba's compiler for the engine's compiled loops, with its on-disk cache where numba
can write one.

The loops (:mod:`sparktide.spark.ctiloop`, :mod:`sparktide.spark.windows.scanloops`) run
in Spark's Python workers, which Spark starts and stops as it needs them; each worker
that runs a loop compiles it on first use, and compiling costs far more than running it
on a micro-batch. With numba's cache, the first worker writes the machine code beside
the module (its ``__pycache__``) or in the user's cache directory, and every later
worker, of this run or the next, loads it (numba recompiles when the module's source
changes). Where numba can write neither, the loop is compiled in each worker as before.

This module imports numba: only the modules of the loops import it, and only the
workers import those.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba

__all__ = ["njit"]


def njit(function: Callable[..., Any]) -> Any:
    """``function`` compiled by ``numba.njit``, cached on disk where numba can write.

    ``function`` must be defined at a module's top level and call other compiled loops
    only through the module's globals: numba keys a closure's cache entry by its
    variables' pickled bytes, which differ in every process."""
    try:
        return numba.njit(cache=True)(function)
    except RuntimeError:  # no cache directory numba can write: compile in each worker
        return numba.njit(function)
