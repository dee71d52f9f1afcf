"""Job files for tests: a valid job as plain tables, a tiny TOML writer, and a catalogue
of configuration errors (each with the dotted key its message must name).

Shared by test_job.py and test_cli.py.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

#: The job of semantics §10, minus the keys that only apply to other window types
#: (``hop``: hopping only; ``gap``/``max_duration``: session only).
SPEC_JOB_TOML = """\
[source]
format = "jsonl"                 # jsonl | csv | parquet
path = "events/"                 # a file or a directory
timestamp_by = "event_time"      # omit for arrival-time mode
arrival_time = "arrival_time"    # column with the broker enqueue time (optional)
processing_time = "seen_at"      # simulate only: column with the processing time (optional)
partition = "partition"          # optional
partitions = 4                   # optional: how many partitions exist
over = "device"                  # optional: substream key

[ordering]
early_arrival = "5m"             # duration or "none"
late_arrival = "5s"
out_of_order = "0s"
action = "adjust"                # adjust | drop
on_out_of_order = "adjust"       # optional: adjust | drop | dead_letter | accept
partitioned = false

[window]
type = "tumbling"
size = "5m"
offset = "0s"
boundary = "start"
allowed_lateness = "0s"
idle_timeout = "1m"
late = "dead_letter"
group_by = ["device"]
aggregates = { n = "count(*)", total = "sum(value)", peak = "max(value)" }

[output]
path = "out/"
format = "jsonl"
dead_letter = "dead_letter/"
metrics = "metrics/"
checkpoint = "checkpoint/"
"""

#: A valid job as tables: the base every catalogue entry mutates.
BASE_JOB: dict[str, Any] = {
    "source": {
        "format": "jsonl",
        "path": "events.jsonl",
        "timestamp_by": "event_time",
        "arrival_time": "arrival_time",
        "partition": "partition",
        "partitions": 4,
    },
    "ordering": {
        "early_arrival": "5m",
        "late_arrival": "5s",
        "out_of_order": "0s",
        "action": "adjust",
        "on_out_of_order": "adjust",
        "partitioned": False,
    },
    "window": {
        "type": "tumbling",
        "size": "5m",
        "offset": "0s",
        "boundary": "start",
        "allowed_lateness": "0s",
        "idle_timeout": "1m",
        "late": "dead_letter",
        "group_by": ["device"],
        "aggregates": {"n": "count(*)", "total": "sum(value)", "peak": "max(value)"},
    },
    "output": {
        "path": "out/",
        "format": "jsonl",
        "dead_letter": "dead_letter/",
        "metrics": "metrics/",
        "checkpoint": "checkpoint/",
    },
}

_DELETE = object()


def mutate(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``base`` with dotted keys set (or deleted when the value is DELETE)."""
    data = copy.deepcopy(base)
    for dotted, value in changes.items():
        *tables, name = dotted.split(".")
        target = data
        for table in tables:
            target = target.setdefault(table, {})
        if value is _DELETE:
            target.pop(name, None)
        else:
            target[name] = value
    return data


DELETE = _DELETE


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def _key(key: str) -> str:
    """A TOML key: bare when it can be, else quoted."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def to_toml(data: dict[str, Any]) -> str:
    """Write tables of scalars, lists and inline tables as TOML."""
    lines: list[str] = []
    for name, value in data.items():
        if not isinstance(value, dict):
            lines.append(f"{name} = {_value(value)}")
    for name, value in data.items():
        if isinstance(value, dict):
            lines.append(f"[{name}]")
            for key, item in value.items():
                lines.append(f"{_key(key)} = {_value(item)}")
            lines.append("")
    return "\n".join(lines) + "\n"


def write_job(folder: Path, data: dict[str, Any] | str, name: str = "job.toml") -> Path:
    """Write a job file (tables or TOML text) into ``folder``; return its path."""
    path = folder / name
    path.write_text(data if isinstance(data, str) else to_toml(data), encoding="utf-8")
    return path


def _agg(**aggregates: str) -> dict[str, Any]:
    return {"window.aggregates": aggregates}


#: (id, changes to BASE_JOB, the dotted key the error must name)
#: An [apply] table the catalogue's apply-* entries change.
_APPLY = {"apply.function": "elements", "apply.value": "readings", "apply.name": "a"}

CONFIG_ERRORS: list[tuple[str, dict[str, Any], str]] = [
    # unknown tables and keys
    ("unknown-table", {"outputs": {"path": "x"}}, "outputs"),
    ("unknown-top-level-key", {"name": "job"}, "name"),
    ("unknown-source-key", {"source.colour": "red"}, "source.colour"),
    ("unknown-ordering-key", {"ordering.late_arival": "5s"}, "ordering.late_arival"),
    ("unknown-window-key", {"window.sise": "5m"}, "window.sise"),
    ("unknown-output-key", {"output.pth": "out/"}, "output.pth"),
    # durations
    ("bad-duration", {"ordering.late_arrival": "5 seconds"}, "ordering.late_arrival"),
    ("bad-duration-no-unit", {"window.size": "5"}, "window.size"),
    ("bad-duration-float", {"ordering.out_of_order": 1.5}, "ordering.out_of_order"),
    ("bad-duration-bool", {"ordering.early_arrival": True}, "ordering.early_arrival"),
    ("negative-duration", {"ordering.late_arrival": "-5s"}, "ordering.late_arrival"),
    ("negative-out-of-order", {"ordering.out_of_order": "-1s"}, "ordering.out_of_order"),
    ("negative-int-duration", {"ordering.early_arrival": -1}, "ordering.early_arrival"),
    ("negative-lateness", {"window.allowed_lateness": "-1s"}, "window.allowed_lateness"),
    ("none-size", {"window.size": "none"}, "window.size"),
    ("zero-size", {"window.size": "0s"}, "window.size"),
    ("zero-idle-timeout", {"window.idle_timeout": "0s"}, "window.idle_timeout"),
    # enums
    ("bad-action", {"ordering.action": "ignore"}, "ordering.action"),
    ("bad-on-out-of-order", {"ordering.on_out_of_order": "keep"}, "ordering.on_out_of_order"),
    ("bad-source-format", {"source.format": "xml"}, "source.format"),
    # streams Spark reads (no path; a table's name; reader options for them only)
    ("spark-stream-with-path", {"source.format": "rate"}, "source.path"),
    ("table-without-name", {"source.format": "table", "source.path": DELETE}, "source.table"),
    ("table-name-for-files", {"source.table": "events"}, "source.table"),
    ("options-for-files", {"source.options": {"rowsPerSecond": 5}}, "source.options"),
    (
        "bad-reader-option",
        {"source.format": "rate", "source.path": DELETE, "source.options": {"x": [1]}},
        "source.options.x",
    ),
    ("bad-output-format", {"output.format": "csv"}, "output.format"),
    ("bad-boundary", {"window.boundary": "middle"}, "window.boundary"),
    ("bad-late", {"window.late": "keep"}, "window.late"),
    ("bad-window-type", {"window.type": "rolling"}, "window.type"),
    ("bad-partitioned", {"ordering.partitioned": "yes"}, "ordering.partitioned"),
    # partitions
    (
        "partitioned-without-partition",
        {
            "ordering.partitioned": True,
            "source.partition": DELETE,
            "source.partitions": DELETE,
        },
        "ordering.partitioned",
    ),
    (
        "partitioned-with-over",
        {
            "ordering.partitioned": True,
            "source.over": "device",
            "window.group_by": ["partition", "device"],
        },
        "ordering.partitioned",
    ),
    ("partitions-without-partition", {"source.partition": DELETE}, "source.partitions"),
    ("partitions-zero", {"source.partitions": 0}, "source.partitions"),
    ("partitions-negative", {"source.partitions": -2}, "source.partitions"),
    ("partitions-not-int", {"source.partitions": "4"}, "source.partitions"),
    # source
    ("missing-source", {"source": DELETE}, "source"),
    ("source-not-a-table", {"source": "events.jsonl"}, "source"),
    ("bad-column-name", {"source.timestamp_by": "t; drop table"}, "source.timestamp_by"),
    ("ordering-not-a-table", {"ordering": "adjust"}, "ordering"),
    # windows
    ("hopping-without-hop", {"window.type": "hopping"}, "window.hop"),
    ("size-on-session", {"window.type": "session", "window.gap": "30s"}, "window.size"),
    ("session-without-gap", {"window.type": "session", "window.size": DELETE}, "window.gap"),
    ("gap-on-tumbling", {"window.gap": "30s"}, "window.gap"),
    ("hop-zero", {"window.type": "hopping", "window.hop": "0s"}, "window.hop"),
    ("hop-zero-int", {"window.type": "hopping", "window.hop": 0}, "window.hop"),
    ("sliding-with-start-boundary", {"window.type": "sliding"}, "window.boundary"),
    # aggregates
    ("unknown-aggregate", _agg(n="median(value)"), "window.aggregates.n"),
    ("aggregate-injection", _agg(total="sum(value); drop table"), "window.aggregates.total"),
    ("aggregate-two-args", _agg(total="sum(a,b)"), "window.aggregates.total"),
    ("aggregate-no-parens", _agg(total="sum value"), "window.aggregates.total"),
    ("aggregate-star", _agg(total="sum(*)"), "window.aggregates.total"),
    ("aggregate-not-text", _agg(total=5), "window.aggregates.total"),
    ("aggregates-not-a-table", {"window.aggregates": "count(*)"}, "window.aggregates"),
    ("aggregate-clashes-group-by", _agg(device="count(*)"), "window.aggregates.device"),
    ("aggregate-reserved-name", _agg(type="min(value)"), "window.aggregates.type"),
    ("group-by-not-a-list", {"window.group_by": "device"}, "window.group_by"),
    ("group-by-not-names", {"window.group_by": [1]}, "window.group_by"),
    ("group-by-twice", {"window.group_by": ["device", "device"]}, "window.group_by"),
    # computed grouping columns (semantics §6.13)
    (
        "group-by-computed-twice",
        {"window.group_by": ["device", {"device": "v"}]},
        "window.group_by",
    ),
    ("group-by-table-of-two", {"window.group_by": [{"a": "v", "b": "w"}]}, "window.group_by"),
    ("group-by-computed-bad-name", {"window.group_by": [{"a b": "v"}]}, "window.group_by"),
    ("group-by-computed-not-text", {"window.group_by": [{"a": 3}]}, "window.group_by.a"),
    ("group-by-computed-bad-expr", {"window.group_by": [{"a": "v +"}]}, "window.group_by.a"),
    (
        "group-by-computed-system-time",
        {"window.group_by": [{"a": "DATEPART(hour, System.Timestamp())"}]},
        "window.group_by.a",
    ),
    (
        "over-computed-in-group-by",
        {"source.over": "device", "window.group_by": [{"device": "UPPER(device)"}]},
        "window.group_by",
    ),
    # substreams
    ("over-not-in-group-by", {"source.over": "site"}, "window.group_by"),
    # punctuation and interval events (semantics §7)
    ("unknown-punctuation-key", {"punctuation.colum": "kind"}, "punctuation.colum"),
    ("punctuation-names-nothing", {"punctuation.watermark": "cti"}, "punctuation"),
    ("punctuation-column-without-value", {"punctuation.column": "kind"}, "punctuation.value"),
    ("punctuation-value-without-column", {"punctuation.value": "cti"}, "punctuation.column"),
    (
        "punctuation-value-float",
        {"punctuation.column": "kind", "punctuation.value": 1.5},
        "punctuation.value",
    ),
    (
        "punctuation-column-is-timestamp",
        {"punctuation.column": "event_time", "punctuation.value": "cti"},
        "punctuation.column",
    ),
    ("punctuation-every-events-zero", {"punctuation.every_events": 0}, "punctuation.every_events"),
    (
        "punctuation-every-events-text",
        {"punctuation.every_events": "5"},
        "punctuation.every_events",
    ),
    ("punctuation-every-zero", {"punctuation.every": "0s"}, "punctuation.every"),
    ("punctuation-every-bare-number", {"punctuation.every": 5}, "punctuation.every"),
    (
        "punctuation-every-and-every-events",
        {"punctuation.every": "1m", "punctuation.every_events": 10},
        "punctuation.every",
    ),
    (
        "punctuation-delay-without-generator",
        {"punctuation.column": "kind", "punctuation.value": "cti", "punctuation.delay": "1s"},
        "punctuation.delay",
    ),
    (
        "punctuation-bad-delay",
        {"punctuation.every_events": 5, "punctuation.delay": "-1 second"},
        "punctuation.delay",
    ),
    (
        "punctuation-bad-watermark",
        {"punctuation.every_events": 5, "punctuation.watermark": "heuristic"},
        "punctuation.watermark",
    ),
    (
        "punctuation-without-timestamp",
        {"punctuation.every_events": 5, "source.timestamp_by": DELETE},
        "punctuation",
    ),
    ("end-time-is-timestamp", {"source.end_time": "event_time"}, "source.end_time"),
    ("shift-bare-number", {"source.shift": 5}, "source.shift"),
    ("import-ctis-without-union", {"source.import_ctis": "fast"}, "source.import_ctis"),
    ("shift-bad", {"source.shift": "soon"}, "source.shift"),
    (
        "shift-without-timestamp",
        {"source.shift": "1m", "source.timestamp_by": DELETE},
        "source.shift",
    ),
    (
        "end-time-without-timestamp",
        {"source.end_time": "end", "source.timestamp_by": DELETE},
        "source.end_time",
    ),
    (
        "end-time-with-session",
        {
            "source.end_time": "end",
            "window.type": "session",
            "window.gap": "1m",
            "window.size": DELETE,
        },
        "window.type",
    ),
    # edge events
    ("edge-without-id", {"source.edge": "kind"}, "source.edge_id"),
    ("edge-id-without-edge", {"source.edge_id": "id"}, "source.edge"),
    (
        "edge-without-timestamp",
        {"source.edge": "kind", "source.edge_id": "id", "source.timestamp_by": DELETE},
        "source.edge",
    ),
    (
        "edge-with-end-time",
        {"source.edge": "kind", "source.edge_id": "id", "source.end_time": "end"},
        "source.edge",
    ),
    ("edge-is-partition", {"source.edge": "partition", "source.edge_id": "id"}, "source.edge"),
    ("edge-id-is-edge", {"source.edge": "kind", "source.edge_id": "kind"}, "source.edge_id"),
    (
        "edge-in-session",
        {
            "source.edge": "kind",
            "source.edge_id": "id",
            "window.type": "session",
            "window.gap": "1m",
            "window.size": DELETE,
        },
        "window.type",
    ),
    (
        "edge-without-window",
        {"source.edge": "kind", "source.edge_id": "id", "window": DELETE},
        "source.edge",
    ),
    (
        "edge-id-is-cti-marker",
        {
            "source.edge": "kind",
            "source.edge_id": "id",
            "punctuation.column": "id",
            "punctuation.value": "cti",
        },
        "punctuation.column",
    ),
    # [filter], having, [select]
    ("filter-syntax", {"filter.where": "speed >"}, "filter.where"),
    ("filter-not-text", {"filter.where": 5}, "filter.where"),
    ("filter-double-quotes", {"filter.where": 'lane = "A"'}, "filter.where"),
    ("filter-unknown-key", {"filter.when": "a = 1"}, "filter.when"),
    ("filter-without-where", {"filter": {}}, "filter.where"),
    ("filter-not-a-table", {"filter": "a = 1"}, "filter"),
    ("having-syntax", {"window.having": "n >> 1"}, "window.having"),
    ("having-reads-a-field", {"window.having": "value > 1"}, "window.having"),
    ("select-unknown-column", {"select.mean": "total / count"}, "select.mean"),
    ("select-reserved-name", {"select.type": "n"}, "select.type"),
    ("select-not-text", {"select.x": 1}, "select.x"),
    ("select-bad-name", {"select": {"a b": "n"}}, "select"),
    ("select-like-a-column", {"select.x": "device LIKE device"}, "select.x"),
    ("select-datediff-unit", {"select.d": "DATEDIFF(fortnight, window_start, t)"}, "select.d"),
    ("select-datediff-arity", {"select.d": "DATEDIFF(minute, window_end)"}, "select.d"),
    ("filter-unknown-function", {"filter.where": "uppr(lane) = 'A'"}, "filter.where"),
    ("having-input-field", {"window.having": "entry.n > 1"}, "window.having"),
    # [apply]
    ("apply-unknown-function", {**_APPLY, "apply.function": "rows"}, "apply.function"),
    ("apply-without-value", {**_APPLY, "apply.value": DELETE}, "apply.value"),
    ("apply-without-name", {**_APPLY, "apply.name": DELETE}, "apply.name"),
    ("apply-value-syntax", {**_APPLY, "apply.value": "readings +"}, "apply.value"),
    ("apply-value-not-text", {**_APPLY, "apply.value": 3}, "apply.value"),
    ("apply-value-input-field", {**_APPLY, "apply.value": "e.readings"}, "apply.value"),
    ("apply-value-cast", {**_APPLY, "apply.value": "CAST(r AS array)"}, "apply.value"),
    ("apply-bad-name", {**_APPLY, "apply.name": "a b"}, "apply.name"),
    ("apply-outer-not-boolean", {**_APPLY, "apply.outer": "yes"}, "apply.outer"),
    # IS MISSING tests a field of the input record (semantics §11.16)
    ("missing-in-having", {"window.having": "n IS MISSING"}, "window.having"),
    ("missing-in-window-select", {"select": {"d": "device IS NOT MISSING"}}, "select.d"),
    (
        "missing-of-an-analytic-column",
        {
            "window": DELETE,
            "analytic": {"p": {"function": "lag", "value": "value", "limit_duration": "1m"}},
            "filter.where": "p IS MISSING",
        },
        "filter.where",
    ),
    ("apply-name-is-time", {**_APPLY, "apply.name": "event_time"}, "apply.name"),
    ("apply-unknown-key", {**_APPLY, "apply.as": "a"}, "apply.as"),
    ("apply-not-a-table", {"apply": "elements"}, "apply"),
    ("apply-with-edges", {**_APPLY, "source.edge": "kind", "source.edge_id": "id"}, "apply"),
    (
        "apply-with-failing-cast",
        {**_APPLY, "filter.where": "CAST(GetRecordPropertyValue(a, 'ArrayValue') AS bigint) > 1"},
        "apply",
    ),
    ("apply-without-select", {**_APPLY, "window": DELETE}, "select"),
    (
        "apply-select-star",
        {**_APPLY, "window": DELETE, "select": {"*": "*", "v": "GetArrayLength(readings)"}},
        'select."*"',
    ),
]
