"""The job file of a query: what its input and output names mean (docs/query.md).

A query names its inputs and outputs (``FROM TollEntry``, ``INTO TollCounts``; Atlas:
``$source``, ``$emit``/``$merge``); the job file binds each name to files::

    [inputs.TollEntry]            # the keys of [source], except what the query says
    path = "entries/"
    arrival_time = "EnqueuedTime"

    [inputs.Registration]         # reference data (joined to a stream): path and format
    reference = true
    path = "registrations.csv"
    format = "csv"

    [outputs.TollCounts]          # the keys of [output]
    path = "counts/"
    checkpoint = "checkpoint/"

    [ordering]                    # as in any job (Stream Analytics' event-ordering settings)
    late_arrival = "10s"

    [window]                      # only late, allowed_lateness, idle_timeout
    late = "drop"

Names are matched case-insensitively, as Stream Analytics does. A plain job file
(``[source]``/``[output]``) also works: ``[source]`` binds the query's one input and
``[output]`` its one output, whatever their names. Whether an input is reference data is
said here, not in the query, as a Stream Analytics job's configuration says it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from sparktide.errors import ConfigError
from sparktide.job import Job, Output, Source, _read_toml, reference_input
from sparktide.query.javascript import JsFunction, compile_function

__all__ = [
    "INPUT_KEYS",
    "OUTPUT_KEYS",
    "WINDOW_KEYS",
    "Bindings",
    "bindings_from_dict",
    "load_bindings",
]

#: Keys of an ``[inputs.<name>]`` table: those of ``[source]`` but per-input ordering and
#: punctuation (Stream Analytics' policies are job-wide; semantics §7.8).
INPUT_KEYS = tuple(f.name for f in fields(Source) if f.name not in ("ordering", "punctuation"))
#: Keys of an ``[outputs.<name>]`` table: those of ``[output]``.
OUTPUT_KEYS = tuple(f.name for f in fields(Output))
#: Keys of ``[window]`` a query's job file may set: what the query languages cannot say.
WINDOW_KEYS = ("late", "allowed_lateness", "idle_timeout")
_TOP_KEYS = ("source", "output", "inputs", "outputs", "ordering", "window", "functions")


@dataclass(frozen=True)
class Bindings:
    """The tables of a query's job file.

    Attributes
    ----------
    inputs, outputs
        ``[inputs.<name>]`` / ``[outputs.<name>]`` tables by case-folded name, each as
        ``(name as written, table)``. An input table with ``reference = true`` is
        reference data (:class:`~sparktide.job.Reference`): ``path`` and ``format`` only.
    source, output
        The plain ``[source]`` / ``[output]`` tables, if given.
    ordering
        The ``[ordering]`` table (may be empty).
    window
        The ``[window]`` table (only :data:`WINDOW_KEYS`).
    functions
        The JavaScript functions of ``[functions.<name>] javascript = "file.js"``, by
        case-folded name, each read as an expression
        (:func:`~sparktide.query.javascript.compile_function`); ``udf.<name>(...)``
        calls them.
    base_dir
        The job file's folder: relative paths are taken from it (``None``: no job file).
    """

    inputs: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    outputs: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    source: dict[str, Any] | None = None
    output: dict[str, Any] | None = None
    ordering: dict[str, Any] = field(default_factory=dict)
    window: dict[str, Any] = field(default_factory=dict)
    base_dir: Path | None = None
    functions: dict[str, JsFunction] = field(default_factory=dict)

    @property
    def has_job_file(self) -> bool:
        """Whether these bindings come from a job file (else every name is a placeholder)."""
        return self.base_dir is not None

    def input_table(self, name: str) -> tuple[str, dict[str, Any]] | None:
        """The table bound to input ``name`` and its key prefix, or ``None`` if unbound.

        Without a job file, an input reads the folder named like it.
        """
        found = self.inputs.get(name.casefold())
        if found is not None:
            return f"inputs.{found[0]}", dict(found[1])
        if not self.inputs and self.source is not None:
            return "source", dict(self.source)
        if not self.has_job_file:
            return "source", {"path": name}
        return None

    def require_input(self, name: str) -> tuple[str, dict[str, Any]]:
        """:meth:`input_table`, or a ``LookupError`` whose message says how to bind it."""
        found = self.input_table(name)
        if found is None:
            names = ", ".join(self.input_names()) or "none"
            table = name if name.isidentifier() else f'"{name}"'
            raise LookupError(
                f"no input named {name!r} in the job file (inputs bound: {names}); "
                f"add an [inputs.{table}] table"
            )
        return found

    def is_reference(self, name: str) -> bool:
        """Whether the job file binds input ``name`` as reference data (``reference = true``
        in its ``[inputs.<name>]`` table). Without a job file no input is."""
        found = self.inputs.get(name.casefold())
        return found is not None and found[1].get("reference") is True

    def input_names(self) -> list[str]:
        """The bound input names, as written."""
        return [written for written, _ in self.inputs.values()]

    def output_table(self, name: str | None) -> tuple[str, dict[str, Any]] | None:
        """The table bound to output ``name`` (``None``: the query names none), or ``None``."""
        if name is not None:
            found = self.outputs.get(name.casefold())
            if found is not None:
                return f"outputs.{found[0]}", dict(found[1])
        elif len(self.outputs) == 1:
            written, table = next(iter(self.outputs.values()))
            return f"outputs.{written}", dict(table)
        if not self.outputs:
            if self.output is not None:
                return "output", dict(self.output)
            if not self.has_job_file:
                return "output", ({"path": name} if name is not None else {})
            return "output", {}
        return None

    def output_names(self) -> list[str]:
        """The bound output names, as written."""
        return [written for written, _ in self.outputs.values()]


def load_bindings(path: str | Path | None) -> Bindings:
    """Read a query's job file (``None``: no job file, every name is a placeholder).

    Raises
    ------
    ConfigError
        If the file cannot be read or a table or key is wrong (naming the key, such as
        ``inputs.TollEntry.format``).
    """
    if path is None:
        return Bindings()
    job_path = Path(path)
    return bindings_from_dict(_read_toml(job_path), job_path.resolve().parent)


def bindings_from_dict(data: dict[str, Any], base_dir: Path) -> Bindings:
    """Check the parsed tables of a query's job file (see :func:`load_bindings`)."""
    _check_keys(data, _TOP_KEYS, "")
    inputs = _named_tables(data, "inputs", INPUT_KEYS, base_dir)
    outputs = _named_tables(data, "outputs", OUTPUT_KEYS, base_dir)
    source = _table(data, "source") if "source" in data else None
    output = _table(data, "output") if "output" in data else None
    if source is not None and inputs:
        raise ConfigError("source", "cannot be combined with [inputs.<name>] tables")
    if output is not None and outputs:
        raise ConfigError("output", "cannot be combined with [outputs.<name>] tables")
    if source is not None:
        _check_keys(source, INPUT_KEYS, "source")
        _validate({"source": source}, base_dir, "source", "source")
    if output is not None:
        _check_keys(output, OUTPUT_KEYS, "output")
        _validate({"source": {"path": "-"}, "output": output}, base_dir, "output", "output")
    window = _table(data, "window")
    for key in window:
        if key not in WINDOW_KEYS:
            raise ConfigError(
                f"window.{key}",
                "comes from the query; a query's job file may set only " + ", ".join(WINDOW_KEYS),
            )
    ordering = _table(data, "ordering")
    _validate({"source": {"path": "-"}, "ordering": ordering}, base_dir, "ordering", "ordering")
    return Bindings(
        inputs=inputs,
        outputs=outputs,
        source=source,
        output=output,
        ordering=ordering,
        window=window,
        base_dir=base_dir,
        functions=_functions(_table(data, "functions"), base_dir),
    )


def _functions(tables: dict[str, Any], base_dir: Path) -> dict[str, JsFunction]:
    """``[functions.<name>] javascript = "file.js"``: each file's function, read."""
    out: dict[str, JsFunction] = {}
    for name, table in tables.items():
        prefix = f"functions.{name}"
        if not isinstance(table, dict):
            raise ConfigError(prefix, f'must be a table (javascript = "file.js"), got {table!r}')
        _check_keys(table, ("javascript",), prefix)
        path = table.get("javascript")
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(f"{prefix}.javascript", 'is required: the function\'s file, "f.js"')
        file = Path(path).expanduser()
        file = file if file.is_absolute() else base_dir / file
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"{prefix}.javascript", f"cannot read {str(file)!r}: {exc.strerror}"
            ) from None
        out[name.casefold()] = compile_function(text, str(file))
    return out


def _named_tables(
    data: dict[str, Any], name: str, keys: tuple[str, ...], base_dir: Path
) -> dict[str, tuple[str, dict[str, Any]]]:
    tables = _table(data, name)
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for binding, table in tables.items():
        prefix = f"{name}.{binding}"
        if not isinstance(table, dict):
            raise ConfigError(prefix, f"must be a table ([{prefix}]), got {table!r}")
        folded = binding.casefold()
        if folded in out:
            raise ConfigError(
                prefix, f"names the same {name[:-1]} as {name}.{out[folded][0]} (names ignore case)"
            )
        if name == "inputs":
            stream = dict(table)  # (the job file's own rules; paths resolve later)
            if reference_input(binding, stream) is not None:  # reference data
                out[folded] = (binding, dict(table))
                continue
            _check_keys(stream, (*keys, "reference"), prefix)  # ("reference": for hints)
            if "path" not in stream:
                raise ConfigError(f"{prefix}.path", "is required")
            _validate({"source": stream}, base_dir, "source", prefix)
            table = stream  # (reference = false: a stream, as without the key)
        else:
            _check_keys(table, keys, prefix)
            _validate({"source": {"path": "-"}, "output": table}, base_dir, "output", prefix)
        out[folded] = (binding, dict(table))
    return out


def _validate(data: dict[str, Any], base_dir: Path, table: str, prefix: str) -> None:
    """Build a throw-away job from ``data`` so the job file's own rules check the table."""
    try:
        Job.from_dict(data, base_dir=base_dir)
    except ConfigError as exc:
        key = exc.key
        if key == table or key.startswith(table + "."):
            key = prefix + key[len(table) :]
        raise ConfigError(key, exc.message) from None


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(name, f"must be a table ([{name}]), got {value!r}")
    return dict(value)


def _check_keys(data: dict[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    for key in data:
        if key not in allowed:
            where = f"{prefix}.{key}" if prefix else key
            hints = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
            hint = f" (did you mean {hints[0]!r}?)" if hints else ""
            raise ConfigError(where, "unknown key" + hint)
