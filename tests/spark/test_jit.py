"""The compiled loops are cached on disk (sparktide.spark.jit): a worker that starts after
the first loads the machine code rather than compiling the loop again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from sparktide.spark.jit import njit

_RUN = """
import json
import numpy as np
from sparktide.spark.windows.scanloops import sliding_scan
from sparktide.spark.ctiloop import scan

i, b = np.zeros(3, np.int64), np.zeros(3, np.bool_)
sliding_scan(i, i, i, i, i, 5, 1)
scan(i, b, b, i, 0, 0, True, 1, 0, 5)
stats = [f.stats for f in (sliding_scan, scan)]
print(json.dumps([[sum(s.cache_hits.values()), sum(s.cache_misses.values())] for s in stats]))
"""


def _compile_in_a_new_process(cache: str) -> list[list[int]]:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", _RUN], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_compiled_loops(tmp_path):
    first = _compile_in_a_new_process(str(tmp_path))
    assert first == [[0, 1], [0, 1]]  # compiled, and written to the cache
    assert any(p.suffix == ".nbi" for p in tmp_path.rglob("*"))
    second = _compile_in_a_new_process(str(tmp_path))
    assert second == [[1, 0], [1, 0]]  # loaded, not compiled


def test_a_loop_numba_cannot_cache_is_compiled_all_the_same():
    namespace: dict = {}
    exec("def twice(x):\n    return 2 * x\n", namespace)  # (no file: nowhere to cache)
    assert njit(namespace["twice"])(21) == 42
