"""The query package's public API (the rules of tests/test_public_api.py) and its
promise never to load pyspark."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

QUERY_MODULES = [
    "sparktide.query",
    "sparktide.query.asaql",
    "sparktide.query.ast",
    "sparktide.query.atlas",
    "sparktide.query.bind",
    "sparktide.query.located",
    "sparktide.query.tomlout",
    "sparktide.query.translate",
]


@pytest.mark.parametrize("name", QUERY_MODULES)
def test_all_is_complete_and_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__ and module.__doc__.strip()
    assert len(set(module.__all__)) == len(module.__all__)
    assert all(hasattr(module, n) and not n.startswith("_") for n in module.__all__)
    left_out = [
        attr
        for attr, obj in vars(module).items()
        if not attr.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and getattr(obj, "__module__", None) == name
        and attr not in module.__all__
    ]
    assert not left_out, f"{name}: public names missing from __all__: {left_out}"
    for attr in module.__all__:
        obj = getattr(module, attr)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
            assert doc and doc.strip() and not doc.startswith(f"{attr}("), f"{name}.{attr}"


def test_translating_never_loads_pyspark(tmp_path: Path) -> None:
    corpus = Path(__file__).parent / "corpus" / "asa_toll_tumbling"
    code = (
        "import sys, json\n"
        "from sparktide.cli import main\n"
        f"main(['simulate', {str(corpus / 'job.toml')!r}, '--query', "
        f"{str(corpus / 'query.asaql')!r}, '--format', 'jsonl'], "
        f"stdout=open({str(tmp_path / 'o')!r}, 'w'))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
