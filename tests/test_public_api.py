"""The public API: ``__all__`` is complete and honest, everything public is documented,
and the pure-Python core never touches pyspark."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import sparktide
import sparktide.core

PUBLIC_MODULES = [
    "sparktide.time",
    "sparktide.job",
    "sparktide.errors",
    "sparktide.reader",
    "sparktide.core",
    "sparktide.core.engine",
    "sparktide.core.policy",
    "sparktide.core.watermark",
    "sparktide.core.records",
    "sparktide.core.diagnostics",
    "sparktide.core.hold",
    "sparktide.progress",
    "sparktide.plot",
    "sparktide.advise",
]

CORE_DIR = Path(sparktide.core.__file__).parent


def _defined_here(module, obj) -> bool:
    return getattr(obj, "__module__", None) == module.__name__


def _own_doc(obj) -> str | None:
    """The object's own docstring (dataclasses invent one from the signature: not counted)."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    if not doc or not doc.strip():
        return None
    if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):
        return None
    return doc


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_module_defines_all(name):
    module = importlib.import_module(name)
    assert hasattr(module, "__all__"), f"{name} has no __all__"
    assert isinstance(module.__all__, (list, tuple))
    assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ repeats a name"
    assert all(isinstance(n, str) for n in module.__all__)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_name_in_all_exists(name):
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names missing objects: {missing}"
    private = [n for n in module.__all__ if n.startswith("_")]
    assert not private, f"{name}.__all__ exports private names: {private}"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_function_and_class_is_in_all(name):
    module = importlib.import_module(name)
    left_out = sorted(
        attr
        for attr, obj in vars(module).items()
        if not attr.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and _defined_here(module, obj)
        and attr not in module.__all__
    )
    assert not left_out, f"{name} defines public names missing from __all__: {left_out}"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_star_import_gives_exactly_all(name):
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)
    namespace.pop("__builtins__", None)
    assert set(namespace) == set(importlib.import_module(name).__all__)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_module_has_a_docstring(name):
    module = importlib.import_module(name)
    assert module.__doc__ and module.__doc__.strip()


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_name_has_a_docstring(name):
    module = importlib.import_module(name)
    undocumented = []
    for attr in module.__all__:
        obj = getattr(module, attr)
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and _own_doc(obj) is None:
            undocumented.append(attr)
    assert not undocumented, f"{name}: no docstring on {undocumented}"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_methods_have_docstrings(name):
    module = importlib.import_module(name)
    undocumented = []
    for attr in module.__all__:
        cls = getattr(module, attr)
        if not inspect.isclass(cls) or not _defined_here(module, cls):
            continue
        for method_name, method in vars(cls).items():
            if method_name.startswith("_"):
                continue
            target = method.fget if isinstance(method, property) else method
            if isinstance(target, (classmethod, staticmethod)):
                target = target.__func__
            if inspect.isfunction(target) and not (target.__doc__ or "").strip():
                undocumented.append(f"{attr}.{method_name}")
    assert not undocumented, f"{name}: no docstring on {undocumented}"


def test_core_package_reexports_the_engine():
    from sparktide.core import InputRecord, ReferenceEngine, Result, engine, records, simulate

    assert simulate is engine.simulate
    assert ReferenceEngine is engine.ReferenceEngine
    assert Result is engine.Result
    assert InputRecord is records.InputRecord


def test_errors_share_one_base():
    from sparktide import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.SparktideError)


# ---------------------------------------------------------------------------- no pyspark in core


def _core_modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(sparktide.core.__path__, prefix="sparktide.core.")
    )


def test_core_modules_are_found():
    modules = _core_modules()
    for name in ("sparktide.core.engine", "sparktide.core.policy", "sparktide.core.watermark"):
        assert name in modules


def test_core_source_never_mentions_pyspark_imports():
    offenders = []
    for path in sorted(CORE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, (ast.Name, ast.Attribute))
                and getattr(node.func, "id", getattr(node.func, "attr", ""))
                in (
                    "import_module",
                    "__import__",
                )
            ):
                names = [a.value for a in node.args if isinstance(a, ast.Constant)]
            else:
                continue
            for name in names:
                if isinstance(name, str) and (name == "pyspark" or name.startswith("pyspark.")):
                    offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, f"core imports pyspark: {offenders}"


def test_importing_core_and_running_simulate_does_not_load_pyspark(tmp_path):
    """Import every core module (and the reader, job and time modules the CLI's
    ``simulate`` uses) in a fresh interpreter, run a tiny job, and check sys.modules."""
    events = tmp_path / "events.jsonl"
    events.write_text(
        '{"t": "2026-03-01T12:00:00Z", "a": "2026-03-01T12:00:01Z", "v": 1}\n', encoding="utf-8"
    )
    job = tmp_path / "job.toml"
    job.write_text(
        '[source]\npath = "events.jsonl"\ntimestamp_by = "t"\narrival_time = "a"\n'
        '[window]\ntype = "tumbling"\nsize = "1m"\naggregates = { n = "count(*)" }\n',
        encoding="utf-8",
    )
    modules = [*_core_modules(), "sparktide.core", "sparktide.reader", "sparktide.job"]
    script = (
        "import importlib, io, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "from sparktide.cli import main\n"
        "out = io.StringIO()\n"
        f"code = main(['simulate', {str(job)!r}, '--format', 'jsonl'], stdout=out)\n"
        "loaded = sorted(m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.'))\n"
        "print(json.dumps({'code': code, 'loaded': loaded}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0
    assert report["loaded"] == []
