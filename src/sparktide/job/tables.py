"""Building a job from the parsed TOML tables: one function per table.

Each table is checked for unknown keys (with the closest known key as a hint), its
relative paths resolved against the job file's folder, and its values handed to the
table's dataclass, which validates them; errors name the key in the job file
(``inputs.<name>.path``, ``window.size``).
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from sparktide.errors import ConfigError
from sparktide.job.analytic import Analytic
from sparktide.job.apply import Apply
from sparktide.job.expressions import STAR, Filter, Projection
from sparktide.job.join import Join
from sparktide.job.match import Match
from sparktide.job.ordering import Ordering
from sparktide.job.output import Output
from sparktide.job.punctuation import Punctuation
from sparktide.job.source import Reference, Source
from sparktide.job.window import Aggregate, Window

__all__ = ["job_tables", "reference_input"]


def reference_input(name: str, table: dict[str, Any]) -> Reference | None:
    """The reference data an ``[inputs.<name>]`` table declares (``reference = true``:
    ``path`` and ``format`` only), or ``None`` for a stream (no ``reference``, or
    ``false``). Pops ``reference`` from ``table``, which is then a stream's table.

    Raises
    ------
    ConfigError
        Naming ``inputs.<name>.<key>``: a ``reference`` that is not a boolean, another key
        beside ``reference = true``, a bad ``path`` or ``format``.
    """
    flag = table.pop("reference", False)
    if not isinstance(flag, bool):
        raise ConfigError(f"inputs.{name}.reference", f"must be true or false, got {flag!r}")
    if not flag:
        return None
    for key in table:
        if key not in ("path", "format"):
            raise ConfigError(
                f"inputs.{name}.{key}",
                "reference data is a table without time, partitions or keys: it takes only "
                "path and format",
            )
    return _input_table(Reference, table, name)


def _input_table(cls: type, table: dict[str, Any], name: str) -> Any:
    """``cls`` (:class:`Source` or :class:`Reference`) of ``[inputs.<name>]``, its errors
    naming the input's key (``inputs.<name>.path``), not ``[source]``'s."""
    try:
        return _build(cls, table, f"inputs.{name}")
    except ConfigError as exc:
        if exc.key.startswith("source."):
            key = f"inputs.{name}." + exc.key.removeprefix("source.")
            raise ConfigError(key, exc.message) from None
        raise


_DURATION_KEYS = {
    "ordering": ("early_arrival", "late_arrival", "out_of_order"),
    "window": ("size", "hop", "gap", "max_duration", "offset", "allowed_lateness", "idle_timeout"),
    "punctuation": ("every", "delay"),
    "source": ("shift",),
}


def _check_duration_strings(data: dict[str, Any]) -> None:
    """In a job file a duration is text with a unit: a bare number would be ambiguous."""
    tables = [(table, data.get(table), keys) for table, keys in _DURATION_KEYS.items()]
    inputs = data.get("inputs")
    if isinstance(inputs, dict):  # a union's inputs: the keys of [source]
        tables += [(f"inputs.{n}", t, _DURATION_KEYS["source"]) for n, t in inputs.items()]
        for n, t in inputs.items():  # per-input ordering and punctuation (semantics §7.8)
            for sub in ("ordering", "punctuation"):
                if isinstance(t, dict):
                    tables.append((f"inputs.{n}.{sub}", t.get(sub), _DURATION_KEYS[sub]))
    for table, values, keys in tables:
        if not isinstance(values, dict):
            continue
        for key in keys:
            value = values.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                raise ConfigError(
                    f"{table}.{key}",
                    f'write durations as text with a unit, e.g. "{value}s" (got {value!r})',
                )


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(name, f"must be a table ([{name}]), got {value!r}")
    return dict(value)


def _check_keys(data: dict[str, Any], allowed: tuple[str, ...] | list[str], prefix: str) -> None:
    for key in data:
        if key not in allowed:
            where = f"{prefix}.{key}" if prefix else key
            hint = _closest(key, allowed)
            raise ConfigError(where, "unknown key" + (f" (did you mean {hint!r}?)" if hint else ""))


def _closest(key: str, allowed: tuple[str, ...] | list[str]) -> str | None:
    import difflib

    matches = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _build(cls: type, data: dict[str, Any], prefix: str) -> Any:
    names = [f.name for f in fields(cls) if not f.name.startswith("_")]
    _check_keys(data, names, prefix)
    try:
        return cls(**data)
    except TypeError as exc:  # a required key is missing
        missing = [
            f.name
            for f in fields(cls)
            if f.name not in data and f.default is MISSING and f.default_factory is MISSING
        ]
        key = f"{prefix}.{missing[0]}" if missing else prefix
        raise ConfigError(key, "is required") from exc


def _resolve(value: Any, base: Path | None) -> Any:
    if not isinstance(value, str) or base is None or not value.strip():
        return value  # (an empty path is not the job's folder: the check rejects it)
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path))


_TABLES = ("source", "inputs", "ordering", "window", "output", "punctuation", "join")


def job_tables(data: dict[str, Any], base_dir: Path | str | None = None) -> dict[str, Any]:
    """The arguments of :class:`~sparktide.job.Job` from the parsed TOML tables ``data``;
    relative paths resolve against ``base_dir``.

    Raises
    ------
    ConfigError
        Naming the first key that is unknown, missing or wrong.
    """
    _check_top_level(data)
    base = Path(base_dir) if base_dir is not None else None
    _check_duration_strings(data)
    if "inputs" in data:  # a union of named inputs: [inputs.<name>]
        inputs, references = _union_inputs(data["inputs"], base)
        source = inputs[0][1]
    else:
        inputs, references = [], []
        source = _source(data, base)
    ordering = _build(Ordering, _table(data, "ordering"), "ordering")
    window = _window(data) if "window" in data else None
    output = _output(data, base)
    punctuation = (
        _build(Punctuation, _table(data, "punctuation"), "punctuation")
        if "punctuation" in data
        else None
    )
    join = _join(data) if "join" in data else None
    job_filter = _build(Filter, _table(data, "filter"), "filter") if "filter" in data else None
    star, star_input = _select_star(data)
    return {
        "source": source,
        "ordering": ordering,
        "window": window,
        "output": output,
        "punctuation": punctuation,
        "inputs": tuple(inputs),
        "join": join,
        "filter": job_filter,
        "select": _select(data),
        "select_star": star,
        "select_star_input": star_input,
        "references": tuple(references),
        "analytics": _analytics(data),
        "apply": _build(Apply, _table(data, "apply"), "apply") if "apply" in data else None,
        "match": _build(Match, _table(data, "match"), "match") if "match" in data else None,
    }


def _check_top_level(data: Any) -> None:
    """A job is a table of known tables, with ``[source]`` or ``[inputs.<name>]``."""
    if not isinstance(data, dict):
        raise ConfigError("", "a job must be a table")
    if "outputs" in data:  # a query's job file (sparktide.query.bind)
        key = "inputs" if "inputs" in data else "outputs"
        raise ConfigError(
            key, "binds the names of a query: run it with --query FILE (docs/query.md)"
        )
    _check_keys(data, (*_TABLES, "filter", "select", "analytic", "apply", "match"), "")
    if "source" in data and "inputs" in data:
        raise ConfigError("inputs", "cannot be combined with [source]: a union names each input")
    if "source" not in data and "inputs" not in data:
        raise ConfigError("source", "the [source] table is required")


def _union_inputs(
    tables: Any, base: Path | None
) -> tuple[list[tuple[str, Source]], list[tuple[str, Reference]]]:
    """The streams and the reference data of ``[inputs.<name>]``, in file order."""
    if not isinstance(tables, dict) or not tables:
        raise ConfigError("inputs", "must hold one [inputs.<name>] table per input")
    inputs: list[tuple[str, Source]] = []
    references: list[tuple[str, Reference]] = []
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ConfigError(f"inputs.{name}", f"must be a table, got {table!r}")
        table = dict(table)
        if "path" in table:
            table["path"] = _resolve(table["path"], base)
        reference = reference_input(name, table)
        if reference is not None:
            references.append((name, reference))
            continue
        inputs.append((name, _input_table(Source, table, name)))
    if not inputs:
        raise ConfigError("inputs", "needs a stream: every [inputs.<name>] table is reference data")
    return inputs, references


def _source(data: dict[str, Any], base: Path | None) -> Source:
    """``[source]``, its path resolved."""
    source_data = _table(data, "source")
    if "path" in source_data:
        source_data["path"] = _resolve(source_data["path"], base)
    return _build(Source, source_data, "source")


def _window(data: dict[str, Any]) -> Window:
    """``[window]``, its aggregates parsed from ``name = "function(column)"``."""
    window_data = _table(data, "window")
    aggregates = window_data.pop("aggregates", {})
    if not isinstance(aggregates, dict):
        raise ConfigError("window.aggregates", 'must be a table of name = "function(column)"')
    window_data["aggregates"] = tuple(
        Aggregate.parse(name, text) for name, text in aggregates.items()
    )
    if "group_by" in window_data and isinstance(window_data["group_by"], list):
        window_data["group_by"] = tuple(window_data["group_by"])
    return _build(Window, window_data, "window")


def _output(data: dict[str, Any], base: Path | None) -> Output:
    """``[output]``, its paths resolved."""
    output_data = _table(data, "output")
    for name in ("path", "dead_letter", "metrics", "checkpoint"):
        if name in output_data:
            output_data[name] = _resolve(output_data[name], base)
    return _build(Output, output_data, "output")


def _join(data: dict[str, Any]) -> Join:
    """``[join]``, its ``between`` bounds written as durations with a unit."""
    join_data = _table(data, "join")
    bounds = join_data.get("between")
    if isinstance(bounds, list) and any(
        isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds
    ):
        raise ConfigError(
            "join.between",
            f'write durations as text with a unit, e.g. ["0s", "15m"] (got {bounds!r})',
        )
    for key in ("on", "between"):
        if isinstance(join_data.get(key), list):
            join_data[key] = tuple(join_data[key])
    return _build(Join, join_data, "join")


def _select(data: dict[str, Any]) -> tuple[Projection, ...]:
    """``[select]``: ``name = "expression"`` per output column, in file order, or
    ``name = { <input> = "expression", ... }`` in a union (semantics §11.21)."""
    select = []
    for name, text in _table(data, "select").items():
        if name == STAR:
            continue
        if isinstance(text, dict) and text:
            for input_name, each in text.items():
                if not isinstance(each, str):
                    raise ConfigError(
                        f"select.{name}.{input_name}",
                        f'expected an expression as text, such as "speed * 2", got {each!r}',
                    )
            select.append(Projection(name, by_input=tuple(text.items())))
            continue
        if not isinstance(text, str):
            raise ConfigError(
                f"select.{name}",
                f'expected an expression as text, such as "total / n", or a table of one '
                f"per input of a union, got {text!r}",
            )
        select.append(Projection(name, text))
    return tuple(select)


def _select_star(data: dict[str, Any]) -> tuple[int | None, str | None]:
    """Where ``"*"`` stands in ``[select]`` (how many columns precede it) and whose
    fields it writes: ``"*" = "*"``, the record's (``SELECT *, expr AS c``: ``None``),
    or in a join ``"*" = "<input>"``, that input's (``SELECT s.*, r.Model``). ``(None,
    None)`` without it."""
    names = list(_table(data, "select"))
    if STAR not in names:
        return None, None
    text = _table(data, "select")[STAR]
    if not isinstance(text, str) or not text:
        raise ConfigError(
            'select."*"',
            f'"*" stands for the record\'s fields ("*" = "*") or, in a join, an input\'s '
            f'("*" = "<input>"), got {text!r}',
        )
    return names.index(STAR), None if text == STAR else text


def _analytics(data: dict[str, Any]) -> tuple[Analytic, ...]:
    """``[analytic.<name>]``: one analytic column per table, in file order."""
    tables = _table(data, "analytic")
    out = []
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ConfigError(f"analytic.{name}", f"must be a table, got {table!r}")
        table = dict(table)
        if "name" in table:
            raise ConfigError(
                f"analytic.{name}.name", "unknown key (the table's name is the column's)"
            )
        for key in ("limit_duration", "period"):
            value = table.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                raise ConfigError(
                    f"analytic.{name}.{key}",
                    f'write durations as text with a unit, e.g. "{value}s" (got {value!r})',
                )
        if isinstance(table.get("partition_by"), list):
            table["partition_by"] = tuple(table["partition_by"])
        out.append(_build(Analytic, {"name": name, **table}, f"analytic.{name}"))
    return tuple(out)
