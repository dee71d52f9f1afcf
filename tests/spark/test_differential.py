"""The Spark engine gives exactly the reference engine's records (emitted_at aside)."""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import pytest

from sparktide.spark import plans, run_job
from tests.spark.streams import (
    clock,
    file_batches,
    job_for,
    read_output,
    reference,
    strip,
    write_reference,
    write_stream,
)

#: Aggregates over distinct (value, timestamp) combinations (semantics §6.12, §13.4).
_DISTINCT = {
    "kept": "count(*) over (distinct value, System.Timestamp())",
    "times": "count(*) over (distinct System.Timestamp())",
    "nv": "count(value) over (distinct value, System.Timestamp())",
    "total": "sum(value) over (distinct value, System.Timestamp())",
    "mean": "avg(value) over (distinct value, System.Timestamp())",
    "lo": "min(value) over (distinct value, System.Timestamp())",
    "hi": "max(value) over (distinct value, System.Timestamp())",
}


def _distinct_case(window: dict, aggregates: dict | None = None) -> dict:
    """A case of ``window`` per device over a stream with repeated events, whose
    aggregates (``aggregates``, then :data:`_DISTINCT`) count distinct combinations."""
    return {
        "stream": {"duplicates": True},
        "ordering": {"late_arrival": "2m", "out_of_order": "2m"},
        "window": {
            **window,
            "group_by": ["device"],
            "aggregates": {**(aggregates or {}), **_DISTINCT},
        },
    }


CASES = {
    "merged-adjust-release": {"ordering": {"late_arrival": "20s", "out_of_order": "5s"}},
    "merged-drop-tumbling": {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s", "action": "drop"},
        "window": {
            "type": "tumbling",
            "size": "1m",
            "group_by": ["device"],
            "aggregates": {
                "n": "count(*)",
                "total": "sum(value)",
                "hi": "max(value)",
                "lo": "min(value)",
                "mean": "avg(value)",
                "firstv": "first(value)",
                "lastv": "last(value)",
                "vals": "collect_list(value)",
                "kinds": "count_distinct(value)",
                "nv": "count(value)",
            },
        },
    },
    "partitioned-hopping-end": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "10s", "out_of_order": "3s", "partitioned": True},
        "window": {
            "type": "hopping",
            "size": "1m",
            "hop": "20s",
            "boundary": "end",
            "group_by": ["partition"],
            "aggregates": {"n": "count(*)"},
        },
    },
    "merged-accept-one-partition": {  # the job watermark is the one partition's
        "ordering": {"late_arrival": "none", "out_of_order": "0s", "on_out_of_order": "accept"},
        "window": {
            "type": "tumbling",
            "size": "20s",
            "allowed_lateness": "5s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "hi": "max(value)", "mean": "avg(value)"},
        },
    },
    "merged-accept-lateness": {
        "source": {"partition": "partition"},
        "ordering": {"late_arrival": "none", "out_of_order": "2s", "on_out_of_order": "accept"},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "allowed_lateness": "5s",
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "substreams-snapshot-deadletter": {
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "15s", "out_of_order": "4s", "on_out_of_order": "dead_letter"},
        "window": {"type": "snapshot", "group_by": ["device"], "aggregates": {"n": "count(*)"}},
    },
    "merged-idle-timeout": {
        "source": {"partition": "partition"},
        "ordering": {"late_arrival": "none", "out_of_order": "5s"},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "idle_timeout": "20s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)"},
        },
    },
    "substreams-idle-timeout": {
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "none", "out_of_order": "5s"},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "idle_timeout": "20s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)"},
        },
    },
    "merged-session-max-duration": {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "window": {
            "type": "session",
            "gap": "20s",
            "max_duration": "1m",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "substreams-sliding": {
        "source": {"over": "device"},
        "ordering": {"late_arrival": "20s", "out_of_order": "3s"},
        "window": {
            "type": "sliding",
            "size": "30s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "total": "sum(value)"},
        },
    },
    # semantics §6.10 on session and sliding windows: few events (or many devices), so
    # that a partition (or key) delivers nothing in some batch, 7 s after its last one,
    # and its timers fire (the merged job's input delivers in every batch but the flush:
    # window_*_idle_timeout.toml cover it)
    "partitioned-sliding-idle-timeout": {
        "stream": {"events": 24},
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "none", "out_of_order": "2s", "partitioned": True},
        "window": {
            "type": "sliding",
            "size": "30s",
            "idle_timeout": "5s",
            "group_by": ["partition", "device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "substreams-session-idle-timeout": {
        "stream": {"devices": 16, "events": 80},
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "none", "out_of_order": "5s"},
        "window": {
            "type": "session",
            "gap": "20s",
            "max_duration": "1m",
            "idle_timeout": "5s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "partitioned-session-idle-timeout": {
        "stream": {"events": 20},
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "none", "out_of_order": "3s", "partitioned": True},
        "window": {
            "type": "session",
            "gap": "15s",
            "boundary": "end",
            "idle_timeout": "5s",
            "group_by": ["partition", "device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "substreams-sliding-idle-timeout": {
        "stream": {"devices": 16, "events": 80},
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "none", "out_of_order": "3s"},
        "window": {
            "type": "sliding",
            "size": "20s",
            "allowed_lateness": "2s",
            "idle_timeout": "5s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "total": "sum(value)"},
        },
    },
    # semantics §6.9 under accept on session and sliding windows (issue 29 point 8):
    # events below the watermark find sessions and sliding points closed or open as
    # they stood when each arrived (spark.windows.latescan)
    "merged-accept-session": {
        "source": {"partition": "partition"},
        "ordering": {"late_arrival": "none", "out_of_order": "0s", "on_out_of_order": "accept"},
        "window": {
            "type": "session",
            "gap": "8s",
            "max_duration": "30s",
            "allowed_lateness": "2s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "partitioned-accept-sliding": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {
            "late_arrival": "none",
            "out_of_order": "1s",
            "on_out_of_order": "accept",
            "partitioned": True,
        },
        "window": {
            "type": "sliding",
            "size": "6s",
            "group_by": ["partition", "device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "substreams-accept-session-idle-timeout": {
        "stream": {"devices": 16, "events": 80},
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "none", "out_of_order": "0s", "on_out_of_order": "accept"},
        "window": {
            "type": "session",
            "gap": "6s",
            "boundary": "end",
            "idle_timeout": "5s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "merged-accept-sliding-lateness": {
        "source": {"partition": "partition"},
        "ordering": {"late_arrival": "none", "out_of_order": "0s", "on_out_of_order": "accept"},
        "window": {
            "type": "sliding",
            "size": "10s",
            "allowed_lateness": "2s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "total": "sum(value)"},
        },
    },
    "csv-merged-tumbling": {
        "source": {"format": "csv", "partition": "partition"},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "window": {
            "type": "tumbling",
            "size": "1m",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "total": "sum(value)", "ids": "collect_list(id)"},
        },
    },
    "parquet-partitioned-hopping": {
        "source": {"format": "parquet", "partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s", "partitioned": True},
        "window": {
            "type": "hopping",
            "size": "1m",
            "hop": "30s",
            "group_by": ["partition"],
            "aggregates": {"n": "count(*)", "hi": "max(value)"},
        },
    },
    "parquet-substreams-typed": {  # typed timestamps: the typed Parquet route, by key
        # (dead letters of vouched rows carry their text, which the route did not keep)
        "source": {"format": "parquet", "partition": "partition", "over": "device"},
        "ordering": {
            "late_arrival": "15s",
            "out_of_order": "3s",
            "on_out_of_order": "dead_letter",
        },
        "window": {
            "type": "tumbling",
            "size": "30s",
            "late": "dead_letter",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "total": "sum(value)", "ids": "collect_list(id)"},
        },
    },
    "substreams-release-gaps": {
        "source": {"over": "device"},
        "ordering": {"late_arrival": "30s", "out_of_order": "0s"},
    },
    # semantics §7 (issue 7): CTIs, generated CTIs, interval events
    "cti-merged-tumbling": {
        "stream": {"ctis": 0.15},
        "source": {"partition": "partition"},
        "punctuation": {"column": "kind", "value": "cti"},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "cti-substreams-both-drop-release": {
        "stream": {"ctis": 0.2},
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s", "action": "drop"},
        "punctuation": {"column": "kind", "value": "cti", "watermark": "both"},
    },
    "cti-generated-partitioned-hopping": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "none", "partitioned": True},
        "punctuation": {"every_events": 4, "delay": "3s"},
        "window": {
            "type": "hopping",
            "size": "30s",
            "hop": "10s",
            "group_by": ["partition"],
            "aggregates": {"n": "count(*)", "hi": "max(value)"},
        },
    },
    "cti-generated-ahead-adjust": {  # a negative delay: each CTI above the newest event
        "source": {"partition": "partition"},
        "ordering": {"late_arrival": "none", "out_of_order": "2s"},
        "punctuation": {"every_events": 3, "delay": "-2s", "watermark": "both"},
        "window": {
            "type": "tumbling",
            "size": "20s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "cti-generated-period-substreams": {
        "stream": {"ctis": 0.1},
        "source": {"over": "device"},
        "ordering": {"on_out_of_order": "dead_letter"},
        "punctuation": {"column": "kind", "value": "cti", "every": "10s"},
        "window": {
            "type": "tumbling",
            "size": "20s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "total": "sum(value)"},
        },
    },
    "interval-cti-merged-tumbling": {
        "stream": {"ctis": 0.1, "intervals": True},
        "source": {"partition": "partition", "end_time": "e"},
        "ordering": {"late_arrival": "30s"},
        "punctuation": {"column": "kind", "value": "cti", "watermark": "both"},
        "window": {
            "type": "tumbling",
            "size": "20s",
            "boundary": "end",
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "interval-partitioned-accept-hopping": {
        "stream": {"intervals": True},
        "source": {"partition": "partition", "end_time": "e"},
        "ordering": {"late_arrival": "none", "on_out_of_order": "accept", "partitioned": True},
        "window": {
            "type": "hopping",
            "size": "20s",
            "hop": "10s",
            "allowed_lateness": "5s",
            "group_by": ["partition"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "cti-generated-final-drop": {  # -1us: every admitted event is final at once
        "stream": {"intervals": True},
        "source": {"partition": "partition", "end_time": "e"},
        "ordering": {"late_arrival": "20s", "out_of_order": "2s", "action": "drop"},
        "punctuation": {"every": "10s", "delay": "-1us", "watermark": "both"},
        "window": {
            "type": "tumbling",
            "size": "15s",
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "cti-generated-ahead-drop": {  # 10 s ahead: an event must reach the CTI (ctiscan)
        "source": {"partition": "partition"},
        "ordering": {
            "late_arrival": "20s",
            "out_of_order": "2s",
            "on_out_of_order": "drop",
            "partitioned": True,
        },
        "punctuation": {"every_events": 2, "delay": "-10s", "watermark": "both"},
        "window": {
            "type": "tumbling",
            "size": "15s",
            "group_by": ["partition"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "cti-generated-ahead-adjust-intervals": {  # periods, adjust, intervals (ctiscan)
        "stream": {"intervals": True},
        "source": {"partition": "partition", "end_time": "e", "over": "device"},
        "ordering": {"late_arrival": "30s", "on_out_of_order": "adjust"},
        "punctuation": {"every": "5s", "delay": "-1s", "watermark": "cti"},
        "window": {
            "type": "hopping",
            "size": "20s",
            "hop": "10s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "interval-generated-ctis-hopping": {  # generated CTIs read the newest timestamp
        "stream": {"intervals": True},
        "source": {"partition": "partition", "end_time": "e"},
        "ordering": {"late_arrival": "20s", "out_of_order": "2s", "on_out_of_order": "drop"},
        "punctuation": {"every_events": 3, "delay": "1s", "watermark": "both"},
        "window": {
            "type": "hopping",
            "size": "20s",
            "hop": "10s",
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "union-merged-tumbling": {  # a union: the job watermark is the inputs' minimum
        "stream": {"ctis": 0.05},
        "inputs": {
            # each input's own where (semantics §11.20), before the window
            "north": {
                "partition": "partition",
                "partitions": 2,
                # (System.Timestamp(): the adjusted time, read after judging, §11.20)
                "where": "value > 20 OR DATEDIFF(second, t, System.Timestamp()) > 0",
            },
            "south": {
                "format": "csv",
                "partition": "partition",
                "shift": "-30s",
                "where": "id % 3 <> 0 OR value IS NULL",
            },
        },
        "punctuation": {"column": "kind", "value": "cti", "watermark": "both"},
        # System.Input() in [filter] (§11.22), with System.Timestamp(): after judging
        "filter": {
            "where": "CASE System.Input() WHEN 'north' THEN id % 5 <> 0 "
            "ELSE DATEDIFF(second, t, System.Timestamp()) < 3 OR id % 2 = 0 END"
        },
        "window": {
            "type": "tumbling",
            "size": "30s",
            # System.Input() (semantics §11.22): each input's own expression, a CAST that
            # fails on some of south's events only (dead-lettered), and the input as a key
            "group_by": ["device", {"feed": "UPPER(System.Input())"}],
            "aggregates": {
                "n": "count(*)",
                "ids": "collect_list(id)",
                "scaled": "sum(CASE System.Input() WHEN 'north' THEN value "
                "WHEN 'south' THEN CASE WHEN id % 11 = 0 THEN CAST(device AS bigint) "
                "ELSE value * 2 END END)",
            },
        },
    },
    "union-import-ctis-hopping": {  # the slow input takes the fast one's watermark
        "inputs": {
            "fast": {"partition": "partition", "partitions": 2},
            "meta": {"partition": "partition", "import_ctis": "fast"},
        },
        "ordering": {"late_arrival": "none", "out_of_order": "3s"},
        "window": {
            "type": "hopping",
            "size": "30s",
            "hop": "15s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "lo": "min(value)"},
        },
    },
    "join-devices": {  # a temporal join: same device, within 20 s either way; columns
        "inputs": {
            # a JOIN of steps that filter (semantics §11.20): System.Timestamp() in the
            # left's is the event's adjusted time
            "left": {
                "partition": "partition",
                "partitions": 3,
                "where": "DATEDIFF(second, t, System.Timestamp()) < 12 OR id % 4 = 0",
            },
            "right": {"format": "csv", "partition": "partition", "where": "value >= 5"},
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s"},
        "join": {
            "left": "left",
            "right": "right",
            "on": ["device"],
            "between": ["-20s", "20s"],
            # the rest of the ON and the WHERE over the pair (semantics §11.8), which
            # reads the match's time: some pairs do not meet it
            "condition": "(left.value <= right.value OR left.id % 3 = 0) AND "
            "(DATEDIFF(second, left.t, timestamp) < 15 OR right.id % 2 = 0)",
        },
        "select": {  # [select] over the matches: input.field, timestamp, DATEDIFF
            "device": "left.device",
            "lid": "left.id",
            "rid": "right.id",
            "rvalue": "right.value",
            "sum": "left.value + right.value * 2",
            "lag_s": "DATEDIFF(second, left.t, right.t)",
            "lag_ms": "DATEDIFF(ms, right.t, timestamp)",
            "same_minute": "DATEDIFF(minute, left.t, right.t) = 0",
            "ahead": "right.t > left.t",
            "none": "DATEDIFF(hour, left.device, right.t)",
            "at": "timestamp",
        },
    },
    "join-left-absence": {  # LEFT OUTER JOIN of two streams (semantics §7.9): a left
        # event no right event follows within 8 s is written at t + 8 s, right null
        "inputs": {
            "reboots": {"partition": "partition", "partitions": 3},
            # (its events name their device unit: on = [["device", "unit"]])
            "logins": {
                "partition": "partition",
                "where": "value >= 3",
                "stream": {"device_as": "unit"},
            },
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s", "action": "drop"},
        "join": {
            "left": "reboots",
            "right": "logins",
            "on": [["device", "unit"]],
            "type": "left",
            "between": ["0s", "8s"],
            "condition": "reboots.value <= logins.value OR logins.id % 3 = 0",
            # (over what the join writes: the unmatched ones read logins' fields as null)
            "where": "logins.id IS NULL OR reboots.id % 4 <> 0",
        },
        "select": {
            "device": "reboots.device",
            "rid": "reboots.id",
            "lid": "logins.id",
            "missing": "logins.id IS NULL",
            "wait_s": "DATEDIFF(second, reboots.t, timestamp)",
            "at": "timestamp",
        },
    },
    "join-self-left": {  # a stream joined with itself (semantics §7.10): both inputs
        # read the same events (one_stream); a left join, each alias its own where; an
        # event of o may meet itself in c (between includes 0)
        "stream": {"one_stream": True},
        "inputs": {
            "o": {"partition": "partition", "partitions": 3, "where": "id % 2 = 0"},
            "c": {"partition": "partition", "partitions": 3, "where": "value >= 2"},
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s"},
        "join": {
            "left": "o",
            "right": "c",
            "on": ["device"],
            "type": "left",
            "between": ["0s", "10s"],
        },
        "select": {  # (o's record whole first, then the columns: SELECT o.*, §11.16)
            "*": "o",
            "device": "o.device",
            "oid": "o.id",
            "cid": "c.id",
            "itself": "o.id = c.id",
            "at": "timestamp",
        },
    },
    "join-left-whole": {  # a left join's records whole: {left, right: null, timestamp}
        "inputs": {
            "reboots": {"format": "csv", "partition": "partition", "partitions": 3},
            "logins": {"partition": "partition", "partitions": 3},
            "devices": {"reference": True, "format": "csv"},
            "bands": {"reference": True, "format": "jsonl", "stream": {"table": "bands"}},
            "grades": {"reference": True, "format": "jsonl", "stream": {"table": "bands"}},
        },
        "ordering": {"late_arrival": "20s", "out_of_order": "2s"},
        "join": {
            "left": "reboots",
            "right": "logins",
            "on": ["device"],
            "type": "left",
            "between": ["-5s", "4s"],  # (a login up to 5 s before matches too)
            # (each record meets reference data, semantics §11.26: the reboot's device,
            # d1 two rows, d3 none; the login's partition, a lone reboot's none; where
            # reads the rows: d1's rank-3 row is not written; grades meets each devices
            # row by its rank: d0's 1 one row, d1's rows none, d3's null row none)
            "then": [
                {"left": "reboots", "right": "devices", "on": ["device"], "type": "left"},
                {"left": "devices", "right": "grades", "on": [["rank", "part"]], "type": "left"},
                {
                    "left": "logins",
                    "right": "bands",
                    "on": [["partition", "part"]],
                    "type": "left",
                    "condition": "bands.band <> 'mid'",
                },
            ],
            "where": "devices.rank IS NULL OR devices.rank < 3",
        },
    },
    "join-window-hopping": {  # a window over a join's matches (semantics §7.11): each
        # match one event at its timestamp; collect and first read the matches' order (a
        # left event meeting several right ones at one time); a CAST that fails is null
        "inputs": {
            "left": {"partition": "partition", "partitions": 3, "where": "id % 3 <> 0"},
            "right": {"partition": "partition", "partitions": 3},
            "devices": {"reference": True, "format": "csv"},
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s"},
        "join": {
            "left": "left",
            "right": "right",
            "on": ["device"],
            "between": ["-20s", "20s"],
            "condition": "left.value <= right.value OR right.id % 4 = 0",
            # (each match meets the right event's device, §11.26: d1's twice, in the
            # table's order, d3's once with no row; the window reads the rows)
            "then": [{"left": "right", "right": "devices", "on": ["device"], "type": "left"}],
        },
        "window": {
            "type": "hopping",
            "size": "30s",
            "hop": "15s",
            "group_by": [{"dev": "left.device"}],
            "aggregates": {
                "models": "collect(devices.model)",  # (a match's rows in table order)
                "top_rank": "max(devices.rank)",
                "n": "count(*)",
                "s": "sum(right.value)",
                "ids": "collect(right.id)",
                "lefts": "collect(left.id)",
                "first_left": "first(left.id)",
                "lag": "max(DATEDIFF(second, left.t, right.t))",
                "failed": "count(CAST(left.device AS bigint))",
                "pairs": "count_distinct(right.device)",
            },
        },
    },
    "join-window-sliding": {  # sliding windows over a join's matches: one per match,
        # ending at its timestamp (Stream Analytics' (t - size, t])
        "inputs": {
            "left": {"partition": "partition", "partitions": 3},
            "right": {"partition": "partition", "partitions": 3, "where": "value >= 4"},
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s", "action": "drop"},
        "join": {"left": "left", "right": "right", "on": ["device"], "between": ["0s", "15s"]},
        "window": {
            "type": "sliding",
            "size": "20s",
            "group_by": [{"device": "left.device"}],
            "aggregates": {
                "n": "count(*)",
                "top": "max(right.value)",
                "ids": "collect(left.id)",
                "latest": "max(System.Timestamp())",  # (each match's time, §6.12)
            },
        },
    },
    "join-window-session": {  # session windows over a join's matches, per device
        "inputs": {
            "left": {"partition": "partition", "partitions": 3, "where": "id % 2 = 0"},
            "right": {"partition": "partition", "partitions": 3},
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s"},
        "join": {"left": "left", "right": "right", "on": ["device"], "between": ["-10s", "10s"]},
        "window": {
            "type": "session",
            "gap": "8s",
            "max_duration": "1m",
            "group_by": [{"device": "right.device"}],
            "aggregates": {
                "n": "count(*)",
                "first_pair": "first(left.id)",
                "last_pair": "last(right.id)",
                "avg": "avg(left.value + right.value)",
                "seconds": "collect(DATEDIFF(second, left.t, System.Timestamp()))",
            },
        },
    },
    "window-join-devices": {  # a join of an input with the window's records (§7.12):
        # each window record at its end meets the left events within 30 s either way
        "inputs": {
            "left": {"partition": "partition", "partitions": 3, "where": "id % 2 = 0"},
            "win": {"partition": "partition", "partitions": 3},
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s"},
        "window": {
            "type": "hopping",
            "size": "30s",
            "hop": "10s",
            "name": "peaks",
            "group_by": ["device"],
            "aggregates": {"top": "max(value)", "n": "count(*)"},
            "having": "n >= 2",
        },
        "join": {
            "left": "left",
            "right": "peaks",
            "on": ["device"],
            "between": ["-30s", "30s"],
            "condition": "left.value <= peaks.top",
        },
        "select": {
            "device": "left.device",
            "lid": "left.id",
            "top": "peaks.top",
            "n": "peaks.n",
            "end": "peaks.window_end",
            "at": "timestamp",
        },
    },
    "window-join-last": {  # Stream Analytics' "last event in a window": both inputs
        # read one stream; the left events whose time is their window's latest
        "stream": {"one_stream": True},
        "inputs": {
            "cars": {"partition": "partition", "partitions": 3},
            "all": {"partition": "partition", "partitions": 3},
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s", "action": "drop"},
        "window": {
            "type": "tumbling",
            "size": "20s",
            "name": "last",
            "aggregates": {"latest": "max(t)"},
        },
        "join": {
            "left": "cars",
            "right": "last",
            "on": [],
            "between": ["0s", "20s"],
            "condition": "cars.t = last.latest",
        },
    },
    "epoch-ms-times": {  # source.time_unit over files (semantics §1.4): integer and
        # integral-float epoch milliseconds, ISO text, and spoiled times (dead letters)
        "stream": {"epoch_ms": True},
        "source": {"partition": "partition", "partitions": 3, "time_unit": "ms"},
        "ordering": {"late_arrival": "30s", "out_of_order": "3s"},
        "window": {
            "type": "tumbling",
            "size": "20s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "first_t": "first(t)", "s": "sum(value)"},
        },
    },
    "computed-time-hopping": {  # a timestamp_by expression (semantics §1.4): a nested
        # time, a time at the top, or none; CASTs that fail, naive and null times
        "stream": {"nested_time": True},
        "source": {
            "partition": "partition",
            "partitions": 3,
            "timestamp_by": "DATEADD(millisecond, -250, CAST(COALESCE("
            "GETRECORDPROPERTYVALUE(header, 'time'), t) AS datetime))",
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s"},
        "window": {
            "type": "hopping",
            "size": "20s",
            "hop": "10s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect(id)", "s": "sum(value)"},
        },
    },
    "computed-key-tumbling": {  # a source.over expression (semantics §1.4): a nested
        # substream key, as a string or a number; null, arrays and no record: dead letters
        "stream": {"nested_key": True, "ctis": 0.05},
        "source": {"over": "GETRECORDPROPERTYVALUE(meta, 'device')"},
        "punctuation": {"column": "kind", "value": "cti", "watermark": "both"},
        "ordering": {"late_arrival": "30s", "out_of_order": "3s", "action": "drop"},
        "window": {
            "type": "tumbling",
            "size": "20s",
            "group_by": [{"device": "GETRECORDPROPERTYVALUE(meta, 'device')"}],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "computed-union-hopping": {  # a union whose inputs compute their times their own
        # way and share a computed substream key (semantics §1.4)
        "inputs": {
            "north": {
                "partition": "partition",
                "partitions": 2,
                "over": "UPPER(device)",
                "stream": {"nested_time": True},
                "timestamp_by": "CAST(COALESCE(GETRECORDPROPERTYVALUE(header, 'time'), t) "
                "AS datetime)",
            },
            "south": {
                "partition": "partition",
                "over": "UPPER(device)",
                "timestamp_by": "DATEADD(second, 1, t)",
            },
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s", "action": "drop"},
        "window": {
            "type": "hopping",
            "size": "20s",
            "hop": "10s",
            "group_by": [{"dev": "UPPER(device)"}],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "time-in-aggregates-hopping": {  # System.Timestamp() in aggregates (semantics
        # §6.12) and in [filter] (§11.17): each event's adjusted time, read after judging
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "30s", "out_of_order": "3s"},
        "filter": {"where": "value > 20 OR DATEDIFF(second, t, System.Timestamp()) > 0"},
        "window": {
            "type": "hopping",
            "size": "20s",
            "hop": "10s",
            "group_by": ["device"],
            "aggregates": {
                "n": "count(*)",
                "last": "max(System.Timestamp())",
                "moved": "sum(DATEDIFF(millisecond, t, System.Timestamp()))",
                "times": "collect(System.Timestamp())",
                "cast": "count_if(CAST(System.Timestamp() AS bigint) > 0)",
            },
        },
    },
    "time-in-aggregates-session": {  # the same in session windows, ordered aggregates
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "30s", "out_of_order": "3s", "action": "drop"},
        "window": {
            "type": "session",
            "gap": "10s",
            "max_duration": "40s",
            "group_by": ["device"],
            "aggregates": {
                "first": "min(System.Timestamp())",
                "ids": "collect_list(id)",
                "top": "topone(System.Timestamp()) over (order by value desc)",
            },
        },
    },
    "join-left-window-tumbling": {  # a left join's matches and unmatched left events
        # (right null) in tumbling windows, with having and [select] over their results
        "inputs": {
            "reboots": {"partition": "partition", "partitions": 3},
            "logins": {"partition": "partition", "where": "value >= 3"},
        },
        "ordering": {"late_arrival": "30s", "out_of_order": "3s", "action": "drop"},
        "join": {
            "left": "reboots",
            "right": "logins",
            "on": ["device"],
            "type": "left",
            "between": ["0s", "8s"],
            "where": "logins.id IS NULL OR reboots.id % 4 <> 0",
        },
        "window": {
            "type": "tumbling",
            "size": "20s",
            "boundary": "end",
            "group_by": [{"device": "reboots.device"}],
            "aggregates": {
                "n": "count(*)",
                "missing": "count_if(logins.id IS NULL)",
                "waits": "collect(DATEDIFF(second, reboots.t, logins.t))",
                "whole": "last(logins)",
            },
            "having": "n >= 2",
        },
        "select": {
            "device": "device",
            "n": "n",
            "missing": "missing",
            "waits": "waits",
            "whole": "whole",
            "end": "window_end",
        },
    },
    "reference-left-join": {  # reference data: each released event meets the table
        "inputs": {
            "readings": {"partition": "partition", "partitions": 3},
            "devices": {"reference": True, "format": "csv"},
            "bands": {"reference": True, "format": "jsonl", "stream": {"table": "bands"}},
        },
        "ordering": {"late_arrival": "20s", "out_of_order": "5s", "action": "drop"},
        "join": {  # (an event whose rows all fail the condition: once, its right null)
            "left": "readings",
            "right": "devices",
            "on": ["device"],
            "type": "left",
            "condition": "readings.value >= devices.rank",
            # (what is written: a d1 event whose two rows both fail it is not written at
            # all, where a failed condition would write it once with its right null)
            "where": "devices.model IS NULL OR devices.device <> 'd1' OR readings.value > 10",
            # (a table each event meets by its own partition, inner: two rows for 0, the
            # row of 1 fails its condition, so 1's events are not written; a d3 event
            # holds only the band's member)
            "then": [
                {
                    "left": "readings",
                    "right": "bands",
                    "on": [["partition", "part"]],
                    "condition": "bands.band <> 'mid'",
                }
            ],
        },
        "select": {  # (the table's row whole among the columns: SELECT r.*, §11.16)
            "id": "readings.id",
            "*": "devices",
            "model": "devices.model",
            "score": "readings.value * devices.rank",
            "known": "devices.model IS NOT NULL",
            "band": "GETRECORDPROPERTYVALUE(devices.bands, 'band')",
        },
    },
    "reference-inner-substreams": {  # both records whole; each substream's release
        "inputs": {
            "readings": {"over": "device"},
            "devices": {"reference": True, "format": "jsonl"},
        },
        "ordering": {"late_arrival": "15s", "out_of_order": "3s"},
        "join": {
            "left": "readings",
            "right": "devices",
            "on": [["device", "unit"]],  # (columns of other names)
            # (timestamp: the event's, after its policy: late ones adjusted forward fail)
            "condition": "devices.model <> 'TX-200b' AND readings.value > 0 "
            "AND DATEDIFF(second, readings.t, timestamp) < 8",
        },
    },
    "window-records-meet-table": {  # a window's records meet reference data (§13.5):
        # d1's records twice (two rows, in the table's order), d3's once with no row; the
        # condition drops pairs: d2's row always (its record once, the row null), d0's and
        # d1's first row where a window counts two events or fewer
        "inputs": {
            "readings": {"partition": "partition", "partitions": 3},
            "devices": {"reference": True, "format": "csv"},
        },
        "ordering": {"late_arrival": "20s", "out_of_order": "3s", "action": "drop"},
        "window": {
            "type": "hopping",
            "size": "20s",
            "hop": "10s",
            "name": "w",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "hi": "max(value)"},
            "having": "n > 1",
        },
        "join": {
            "left": "w",
            "right": "devices",
            "on": ["device"],
            "type": "left",
            "condition": "devices.rank > 0 AND (w.n > 2 OR devices.rank = 3)",
            "where": "devices.rank IS NULL OR w.hi > devices.rank",
        },
        "select": {
            "device": "w.device",
            "n": "w.n",
            "model": "devices.model",
            "gap": "w.hi - devices.rank",
            "end": "w.window_end",
        },
    },
    "reference-window-left": {  # a window over a join with reference data (§11.23)
        "inputs": {
            "readings": {"partition": "partition", "partitions": 3},
            "devices": {"reference": True, "format": "csv"},
            "bands": {"reference": True, "format": "jsonl", "stream": {"table": "bands"}},
        },
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "join": {  # (d1 meets two rows: its events count twice; d3 none: its row null)
            "left": "readings",
            "right": "devices",
            "on": ["device"],
            "type": "left",
            "condition": "readings.value >= devices.rank OR readings.id % 5 = 0",
            # (a left table each event meets by its partition: 1's row fails the
            # condition, so 1's events hold a null band, 0's count twice more)
            "then": [
                {
                    "left": "readings",
                    "right": "bands",
                    "on": [["partition", "part"]],
                    "type": "left",
                    "condition": "bands.band <> 'mid'",
                }
            ],
        },
        # [filter] reads each match (the row under the table's name): an event none of
        # whose matches passes is filtered
        "filter": {"where": "GETRECORDPROPERTYVALUE(devices, 'model') <> 'TX-200b' OR id % 2 = 0"},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "group_by": [{"model": "GETRECORDPROPERTYVALUE(devices, 'model')"}],
            "aggregates": {
                "n": "count(*)",
                "score": "sum(value * GETRECORDPROPERTYVALUE(devices, 'rank'))",
                "ids": "collect_list(id)",
                "ranks": "collect_list(GETRECORDPROPERTYVALUE(devices, 'rank'))",
                "bands": "collect_list(GETRECORDPROPERTYVALUE(devices, 'bands.band'))",
                "devices": "count_distinct(device)",
                # (the event's own System.Timestamp(), semantics §6.12)
                "moved": "max(DATEDIFF(second, t, System.Timestamp()))",
            },
        },
    },
    "reference-window-substreams-inner": {  # inner: an event meeting no row is no_match
        "inputs": {
            "readings": {"over": "device"},
            "devices": {"reference": True, "format": "jsonl"},
        },
        "ordering": {"late_arrival": "15s", "out_of_order": "3s", "action": "drop"},
        "join": {
            "left": "readings",
            "right": "devices",
            "on": [["device", "unit"]],
            "condition": "devices.model <> 'TX-200' AND DATEDIFF(second, readings.t, "
            "timestamp) < 8",
        },
        "window": {
            "type": "hopping",
            "size": "20s",
            "hop": "10s",
            "group_by": ["device", {"rank": "GETRECORDPROPERTYVALUE(devices, 'rank')"}],
            "aggregates": {
                "n": "count(*)",
                "firstv": "first(value)",
                "lastv": "last(value)",
                "models": "collect_list(GETRECORDPROPERTYVALUE(devices, 'model'))",
            },
        },
        "select": {"device": "device", "rank": "rank", "n": "n", "spread": "lastv - firstv"},
    },
    "edge-cti-merged-tumbling": {  # edge events against explicit CTIs and the heuristics
        "stream": {"ctis": 0.08, "edges": True},
        "source": {"partition": "partition", "edge": "kind", "edge_id": "eid"},
        "ordering": {"late_arrival": "30s"},
        "punctuation": {"column": "kind", "value": "cti", "watermark": "both"},
        "window": {
            "type": "tumbling",
            "size": "20s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)", "hi": "max(value)"},
        },
    },
    "edge-substreams-accept-hopping": {  # accept: an end may lie below the watermark
        "stream": {"edges": True},
        "source": {"partition": "partition", "over": "device", "edge": "kind", "edge_id": "eid"},
        "ordering": {"late_arrival": "20s", "out_of_order": "3s", "on_out_of_order": "accept"},
        "window": {
            "type": "hopping",
            "size": "30s",
            "hop": "10s",
            "boundary": "end",
            "allowed_lateness": "5s",
            "idle_timeout": "20s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "firstv": "first(value)", "ids": "collect_list(id)"},
        },
    },
    "union-substreams-release": {
        "inputs": {
            # an input's where whose CAST fails on one event in seven of a (not of b):
            # those are dead letters with the CAST's message (semantics §11.20)
            "a": {
                "over": "device",
                "where": "CASE WHEN id % 7 = 0 THEN CAST(device AS bigint) > 0 ELSE id % 4 > 0 END",
            },
            "b": {"format": "parquet", "over": "device"},
        },
        "ordering": {"late_arrival": "15s", "out_of_order": "3s"},
        # columns with one expression per input (semantics §11.21): a CAST that fails on
        # some of b's events (only b's expression reads it), System.Timestamp() in a's
        "select": {
            "id": "id",
            "device": "device",
            "reading": {"a": "value", "b": "value * 10"},
            "origin": {"a": "'a'", "b": "CONCAT('b-', device)"},
            "at": {"a": "System.Timestamp()", "b": "id"},
            "n": {"a": "id", "b": "CASE WHEN id % 5 = 0 THEN CAST(device AS bigint) ELSE id END"},
            # (the event's input, semantics §11.22)
            "feed": "CONCAT(System.Input(), '-', device)",
        },
    },
    "interval-substreams-release": {
        "stream": {"intervals": True},
        "source": {"over": "device", "end_time": "e"},
        "ordering": {"late_arrival": "10s", "out_of_order": "2s"},
    },
    # [filter], having and [select] over records of mixed types (write_stream's mixed)
    # with computed grouping columns (semantics §6.13): a condition, a CASE, a CAST that
    # fails on some records (dead-lettered), read by having and [select]
    "filter-tumbling-having-select": {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "filter": {"where": "speed > 10 AND lane IN ('A', 'B', 1) OR value IS NULL"},
        "window": {
            "type": "tumbling",
            "size": "1m",
            "group_by": [
                "device",
                {"fast": "speed > 50"},
                {"lane_no": "CASE WHEN speed > 60 THEN CAST(lane AS bigint) END"},
            ],
            "aggregates": {
                "n": "count(*)",
                "total": "sum(value)",
                "hi": "max(value)",
                "lo": "min(speed)",
                "top": "max(lane)",
            },
            "having": "(n > 1 OR fast IS NOT NULL) AND (total IS NOT NULL OR lo >= 0)",
        },
        "select": {
            "device": "device",
            "fast": "fast",
            "no": "lane_no",
            "end": "window_end",
            "n": "n",
            "mean": "total / n",
            "half": "hi * 0.5",
            "span": "hi - lo",
            "twice": "n * 2 + total % 7",
            "top": "top",
            "late": "window_start < '2026-03-01T09:03:00Z'",
        },
    },
    # aggregates of expressions that may be arrays (semantics §6.12: an array or object
    # is null to them), over lane's arrays and a CASE choosing one
    "filter-tumbling-array-values": {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "filter": {"where": "value IS NOT NULL OR lane IS NOT NULL"},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "group_by": ["device"],
            "aggregates": {
                "top": "max(CASE WHEN speed > 0 THEN lane END)",
                "bottom": "min(CASE WHEN value > 1 THEN lane ELSE speed END)",
                "n": "count(CASE WHEN id % 2 = 0 THEN lane END)",
                "first": "count(GetArrayElement(lane, 0))",
            },
        },
    },
    "filter-release-select": {
        "source": {"partition": "partition"},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s", "action": "drop"},
        "filter": {"where": "NOT (lane = 'B') AND (value >= 2 OR speed % 3 = 1 OR lane LIKE 'a_')"},
        "select": {
            "id": "id",
            "v": "value * 2",
            "neg": "-speed",
            "sum": "speed + value",
            "lane": "lane",
            "between": "value NOT BETWEEN 1 AND 5",
            "ratio": "speed / value",
            "text": "lane <> 'A' AND speed IS NOT NULL",
            "first": "COALESCE(speed, value, lane)",  # (the mixed records' kinds)
        },
    },
    # the record and array functions over lane's arrays (semantics §11.14); an array a
    # CASE chooses is written as itself (the streamed, multi-batch check of Value.v)
    "filter-release-records": {
        "filter": {"where": "GetArrayLength(lane) > 0 OR speed > 60"},
        "select": {
            "id": "id",
            "first": "GetArrayElement(lane, 0)",
            "n": "GetArrayLength(lane)",
            "chosen": "CASE WHEN speed > 60 THEN lane END",
            "key": "GetRecordPropertyValue(lane, 'k')",
        },
    },
    "filter-substreams-session": {
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "15s", "out_of_order": "4s", "on_out_of_order": "dead_letter"},
        "filter": {"where": "device <> 'd2' AND (speed >= 50 OR speed = true OR speed IS NULL)"},
        "window": {
            "type": "session",
            "gap": "20s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)", "s": "max(speed)"},
            "having": "n >= 2 OR s > 100",
        },
    },
    "merged-lifetime-hopping": {  # point events made intervals (semantics §7.6)
        "source": {"partition": "partition", "duration": "25s", "shift": "-2s"},
        "ordering": {"late_arrival": "10s", "out_of_order": "3s"},
        "window": {
            "type": "hopping",
            "size": "1m",
            "hop": "20s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    # aggregates over (distinct ...) (semantics §13.4): one event in four repeated (same
    # time, device, value) up to 40 rows later, across micro-batches; a 2 m out-of-order
    # bound keeps most repeats at their time (the sets are open-window state)
    "window-distinct-duplicates": _distinct_case(
        {"type": "tumbling", "size": "1m"}, {"n": "count(*)"}
    ),
    # ... in the windows a query's sliding and session windows over a snapshot step
    # become (semantics §13.4): the sets in the rows of sliding and session windows
    "window-distinct-sliding": _distinct_case({"type": "sliding", "size": "30s"}),
    "window-distinct-session": _distinct_case({"type": "session", "gap": "20s"}),
}


def _close(a, b) -> bool:
    """Equal, floats within rounding; an integer never equals a float (``21`` is not
    ``21.0`` to a reader of the JSON) nor a boolean."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, float)
            and isinstance(b, float)
            and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
        )
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


def _key(record):
    return json_key(record)


def json_key(record):
    import json

    return json.dumps(record, sort_keys=True, default=str)


#: Each case runs once, with 4 input files read 2, 3 or 1 files per micro-batch (so batch
#: boundaries differ between cases); every Spark query costs seconds (a micro-batch about
#: 1.5 s), so the suite keeps the number of runs small and covers batching through the
#: rotation, one case in five with a batch per file.
_FILES_PER_BATCH = (2, 3, 2, 1, 3)
RUNS = [(case, _FILES_PER_BATCH[i % 5]) for i, case in enumerate(sorted(CASES))]

#: Cases whose records and state tables Spark's writer writes (plans.writes_on; the
#: others' few rows are written from the driver): one per kind of table written, open
#: windows, edges, window rows (sliding, session), held events, a join's, substream keys,
#: dead letters.
SPARK_WRITES = {
    "merged-drop-tumbling",
    "edge-substreams-accept-hopping",
    "merged-accept-sliding-lateness",
    "filter-substreams-session",
    "filter-release-select",
    "join-devices",
    "substreams-snapshot-deadletter",
}


#: Two of the cases Spark's writer writes (a join; sliding windows under accept, the
#: plan with the most shuffle stages) run with Spark's default settings: code generation
#: and adaptive execution, which the other Spark tests run without (tests/spark/conftest.py).
DEFAULT_SETTINGS = {"join-devices", "merged-accept-sliding-lateness"}
CASE_RUNS = [
    pytest.param(case, files, marks=pytest.mark.codegen)
    if case in DEFAULT_SETTINGS
    else (case, files)
    for case, files in RUNS
]


@pytest.mark.parametrize(("case", "files_per_batch"), CASE_RUNS)
def test_spark_matches_reference(spark, tmp_path, monkeypatch, case, files_per_batch):
    if case in SPARK_WRITES:
        monkeypatch.setattr(plans, "DRIVER_WRITE_ROWS", 0)
    tables = dict(CASES[case])
    stream = dict(tables.pop("stream", {}))
    one_stream = stream.pop("one_stream", False)  # (every input the same events: a self-join)
    seed = zlib.crc32(case.encode()) % 1000
    if "inputs" in tables:  # a union: one stream per input, in/<name>
        inputs = {name: dict(table) for name, table in tables["inputs"].items()}
        own = {name: table.pop("stream", {}) for name, table in inputs.items()}  # (its own)
        tables["inputs"] = inputs
        for i, (name, table) in enumerate(inputs.items()):
            i = 0 if one_stream else i
            fmt = table.get("format", "jsonl")
            if table.get("reference"):
                write_reference(tmp_path / "in" / name, fmt, **own[name])
                continue
            write_stream(
                tmp_path / "in" / name,
                seed=seed + i,
                files=4,
                partitions=3,
                fmt=fmt,
                **stream,
                **own[name],
            )
    else:
        fmt = tables.get("source", {}).get("format", "jsonl")
        mixed = case.startswith("filter-")  # speed and lane of every JSON type
        write_stream(
            tmp_path / "in", seed=seed, files=4, partitions=3, fmt=fmt, mixed=mixed, **stream
        )
    job = job_for(tmp_path, tables)
    batches = run_matching_reference(spark, job, files_per_batch)
    assert len(batches) >= 4 // files_per_batch
    assert written_by(job.output.path) == ("spark" if case in SPARK_WRITES else "driver")


def written_by(output: str) -> str:
    """Who wrote the records under ``output``: ``driver`` (``part-00000.jsonl``, from
    the driver) or ``spark`` (the names Spark's writer gives)."""
    names = {p.name for p in Path(output).glob("batch=*/flush=*/part-*.jsonl")}
    assert names, f"no records under {output}"
    return "driver" if names == {"part-00000.jsonl"} else "spark"


def run_matching_reference(spark, job, files_per_batch: int) -> dict[str, int]:
    """Run ``job`` once (with the test clock, ``files_per_batch`` files per micro-batch,
    then the flush) and require the reference engine's records (see below)."""
    metrics = run_job(
        job,
        once=True,
        flush=True,
        spark=spark,
        max_files_per_trigger=files_per_batch,
        clock=clock,
        publish=False,
    )
    return assert_matches_reference(job, metrics)


def assert_matches_reference(job, metrics) -> dict[str, int]:
    """The run of ``job`` (its last metrics record ``metrics``) wrote exactly the reference
    engine's windows or events, dead letters and counters, given the same micro-batches
    (which it returns: file name -> batch id)."""
    batches = file_batches(job.output.checkpoint)
    expected = reference(job, batches)
    assert metrics is not None
    assert_same_counters(metrics, expected.metrics)
    if job.window is not None:
        # the hold (semantics §7) is a function of the watermark; for substreams of the floor,
        # which run reports as their watermark (simulate: the lowest key's), so it agrees
        assert metrics["output_watermark"] == expected.metrics["output_watermark"]
    got_results = read_output(job.output.path)
    got_dead = read_output(job.output.dead_letter)
    want_dead = sorted(
        (strip(d, "type", "seq") for d in expected.dead_letters),
        key=lambda d: (d["file"], d["line"]),
    )
    got_dead = sorted(got_dead, key=lambda d: (d["file"], d["line"]))
    assert got_dead == want_dead
    if job.window is not None and not job.joins_windows:  # (§7.12: writes matches)
        want = [strip(w, "type", "emitted_at") for w in expected.windows]
        got = [strip(w, "emitted_at") for w in got_results]
        assert len(got) == len(want)
        want_sorted = sorted(want, key=_key)
        got_sorted = sorted(got, key=_key)
        for g, w in zip(got_sorted, want_sorted, strict=True):
            assert _close(g, w), f"{g} != {w}"
    else:
        want = [strip(e, "type") for e in expected.events]
        if job.source.over is None and not job.ordering.partitioned and job.match is None:
            assert _close(got_results, want)  # merged: one global release order
        else:
            assert _close(sorted(got_results, key=_key), sorted(want, key=_key))
    return batches


_COUNTED = (
    "input",
    "admitted",
    "early",
    "late",
    "out_of_order",
    "adjusted",
    "dropped",
    "punctuations",
    "ctis_generated",
)


def assert_same_counters(spark_metrics: dict, reference_metrics: dict) -> None:
    """The Spark engine's metrics record agrees with the reference engine's."""
    got, want = _counters(spark_metrics), _counters(reference_metrics)
    for name in ("open_windows", "held", "open_edges"):  # the reference always reports these
        if name not in got["totals"]:
            want["totals"].pop(name, None)
    assert got == want, f"{got['totals']} != {want['totals']}"


def _counters(metrics: dict) -> dict:
    """The counters both engines must agree on: totals and per partition (semantics §8)."""
    totals = {
        name: metrics[name]
        for name in (*_COUNTED, "dead_lettered", "in_no_window", "windows_emitted", "released")
    }
    if "windows_filtered" in metrics:  # jobs with having
        totals["windows_filtered"] = metrics["windows_filtered"]
    # state gauges the Spark record has (grid windows: open windows; release: held)
    for name in ("open_windows", "held", "open_edges"):
        if name in metrics:
            totals[name] = metrics[name]
    partitions = {
        str(p["partition"]): {name: p[name] for name in (*_COUNTED, "dead_lettered")}
        for p in metrics["partitions"]
        if p["input"]
    }
    # the flush record's interval is the flush alone, the reference's the whole run: they
    # agree on the state at the end (which partitions hold the job back), not on the rest
    stuck = [
        {**d, "partition": str(d["partition"])}
        for d in metrics["diagnostics"]
        if d["kind"] == "partition_not_progressing"
    ]
    return {"totals": totals, "partitions": partitions, "not_progressing": stuck}
