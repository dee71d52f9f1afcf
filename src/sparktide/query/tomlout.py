"""Write a :class:`~sparktide.job.Job` as a TOML job file (``sparktide translate``).

The text loads back, through :func:`sparktide.job.load_job` or
:meth:`sparktide.job.Job.from_dict`, into an equal job: every value is written as the
job holds it (durations as their shortest exact text, paths as they are). A union or a
join is written as its ``[inputs.<name>]`` tables (and ``[join]``) instead of
``[source]``.
"""

from __future__ import annotations

import json
from typing import Any

from sparktide.job import Job, Join, Ordering, Output, Projection, Source, Window
from sparktide.time import format_duration

__all__ = ["job_to_toml"]

_DURATIONS = {
    "early_arrival",
    "late_arrival",
    "out_of_order",
    "size",
    "hop",
    "gap",
    "max_duration",
    "offset",
    "allowed_lateness",
    "idle_timeout",
    "shift",
}
_SOURCE_KEYS = (
    "path",
    "format",
    "timestamp_by",
    "time_unit",
    "arrival_time",
    "processing_time",
    "partition",
    "partitions",
    "over",
    "end_time",
    "shift",
    "import_ctis",
    "where",
)
_ORDERING_KEYS = (
    "early_arrival",
    "late_arrival",
    "out_of_order",
    "action",
    "on_out_of_order",
    "partitioned",
)
_WINDOW_KEYS = (
    "type",
    "name",
    "size",
    "hop",
    "gap",
    "max_duration",
    "offset",
    "boundary",
    "allowed_lateness",
    "idle_timeout",
    "late",
)
_OUTPUT_KEYS = ("path", "format", "dead_letter", "metrics", "checkpoint")


def _projection(projection: Projection) -> str:
    """A ``[select]`` column's value: its expression, or its table of one per input."""
    if not projection.by_input:
        return _value("", projection.expression)
    pairs = (f"{_key(name)} = {_value('', text)}" for name, text in projection.by_input)
    return "{ " + ", ".join(pairs) + " }"


def _value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if key in _DURATIONS:
        return json.dumps(format_duration(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value("", v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")  # pragma: no cover


def _key(name: str) -> str:
    """A TOML key: bare when it can be (letters, digits, ``_``, ``-``), else quoted."""
    bare = name and all(c.isascii() and (c.isalnum() or c in "_-") for c in name)
    return name if bare else json.dumps(name)


def _table(name: str, obj: Source | Ordering | Window | Output, keys: tuple[str, ...]) -> list[str]:
    lines = [f"[{name}]"]
    for key in keys:
        value = getattr(obj, key)
        if value is None and key not in ("early_arrival", "late_arrival", "out_of_order"):
            continue  # (a disabled ordering check is written "none"; other None keys are absent)
        if key == "shift" and not value:
            continue  # (no time shifting: the default)
        if key == "over" and isinstance(obj, Source) and obj.key_parts is not None:
            value = obj.key_parts  # (a key of several columns: as the job file lists them)
        lines.append(f"{key} = {_value(key, value)}")
    return lines


def job_to_toml(job: Job, comments: tuple[str, ...] | list[str] = ()) -> str:
    """The TOML text of ``job``, with ``comments`` as ``#`` lines at the top.

    Parameters
    ----------
    job
        The job.
    comments
        Lines to write as comments first (one ``# ...`` line each).
    """
    lines = [f"# {line}" if line else "#" for line in comments]
    if lines:
        lines.append("")
    if job.inputs:
        for name, source in job.inputs:
            lines += _table(f"inputs.{_key(name)}", source, _SOURCE_KEYS)
            lines.append("")
        for name, reference in job.references:  # reference data: a table, not a stream
            lines += [
                f"[inputs.{_key(name)}]",
                "reference = true",
                f"path = {_value('', reference.path)}",
                f"format = {_value('', reference.format)}",
                "",
            ]
    else:
        lines += _table("source", job.source, _SOURCE_KEYS)
        lines.append("")
    if job.join is not None:
        lines += _join_table(job.join)
    lines += _table("ordering", job.ordering, _ORDERING_KEYS)
    if job.window is not None:
        window = job.window
        lines.append("")
        lines += _table("window", window, _WINDOW_KEYS)
        computed = dict(window.group_expressions)
        keys = [  # (a computed column: a table of its name and expression)
            _value("", name)
            if name not in computed
            else f"{{ {_key(name)} = {_value('', computed[name])} }}"
            for name in window.group_by
        ]
        lines.append(f"group_by = [{', '.join(keys)}]")
        aggregates = ", ".join(f"{a.name} = {json.dumps(str(a))}" for a in window.aggregates)
        lines.append(f"aggregates = {{ {aggregates} }}" if aggregates else "aggregates = {}")
        if window.having is not None:
            lines.append(f"having = {_value('', window.having)}")
    for analytic in job.analytics:  # (semantics §11.19)
        lines.append("")
        lines.append(f"[analytic.{_key(analytic.name)}]")
        for key in ("function", "value", "offset", "default", "partition_by"):
            value = getattr(analytic, key)
            if value is not None and value != () and not (key == "offset" and value == 1):
                lines.append(f"{key} = {_value('', value)}")
        for key in ("limit_duration", "period"):
            value = getattr(analytic, key)
            if value is not None:
                lines.append(f"{key} = {json.dumps(format_duration(value))}")
        if analytic.when is not None:
            lines.append(f"when = {_value('', analytic.when)}")
    lines += _expression_tables(job)
    output = _table("output", job.output, _OUTPUT_KEYS)
    lines.append("")
    lines += output
    return "\n".join(lines) + "\n"


def _join_table(join: Join) -> list[str]:
    """The lines of ``[join]``, then a blank line."""
    lines = [
        "[join]",
        f"left = {_value('', join.left)}",
        f"right = {_value('', join.right)}",
        f"on = {_value('', list(join.on))}",
    ]
    if join.between is not None:
        bounds = ", ".join(json.dumps(format_duration(b)) for b in join.between)  # type: ignore[arg-type]
        lines.append(f"between = [{bounds}]")
    if join.type != "inner":
        lines.append(f"type = {_value('', join.type)}")
    for key in ("condition", "where"):
        if getattr(join, key) is not None:
            lines.append(f"{key} = {_value('', getattr(join, key))}")
    for step in join.then:  # (further tables its rows meet)
        lines += ["", "[[join.then]]", f"left = {_value('', step.left)}"]
        lines += [f"right = {_value('', step.right)}", f"on = {_value('', list(step.on))}"]
        if step.type != "inner":
            lines.append(f"type = {_value('', step.type)}")
        if step.condition is not None:
            lines.append(f"condition = {_value('', step.condition)}")
    return [*lines, ""]


def _expression_tables(job: Job) -> list[str]:
    """The lines of ``[apply]``, ``[match]``, ``[filter]`` and ``[select]`` (each after a
    blank line)."""
    lines: list[str] = []
    if job.apply is not None:  # (semantics §11.18)
        lines.append("")
        lines.append("[apply]")
        lines += [
            f"{k} = {_value('', getattr(job.apply, k))}" for k in ("function", "value", "name")
        ]
        if job.apply.outer:  # (OUTER APPLY)
            lines.append("outer = true")
    if job.match is not None:  # (semantics §11.25)
        match = job.match
        lines += ["", "[match]"]
        if match.partition_by:
            lines.append(f"partition_by = {_value('', list(match.partition_by))}")
        lines.append(f"limit_duration = {json.dumps(format_duration(match.limit_duration))}")
        lines.append(f"pattern = {_value('', match.pattern)}")
        for key in ("define", "measures"):
            table = getattr(match, key)
            if table:
                pairs = ", ".join(f"{_key(k)} = {_value('', v)}" for k, v in table.items())
                lines.append(f"{key} = {{ {pairs} }}")
    if job.filter is not None:
        lines.append("")
        lines += ["[filter]", f"where = {_value('', job.filter.where)}"]
    if job.select or job.select_star is not None:
        lines.append("")
        lines.append("[select]")
        columns = [f"{_key(p.name)} = {_projection(p)}" for p in job.select]
        if job.select_star is not None:  # the record's fields (SELECT *, expr AS c)
            star = job.select_star_input or "*"  # (in a join: an input's, SELECT s.*)
            columns.insert(job.select_star, f'"*" = {_value("", star)}')
        lines += columns
    return lines
