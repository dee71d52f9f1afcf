"""``System.Timestamp()`` inside a window's aggregates (semantics §6.12): each event's own
system timestamp, the one the policy gave it, aggregated."""

from __future__ import annotations

import json

from sparktide.core import simulate
from sparktide.job import Job


def _windows(tmp_path, lines: list[dict], aggregates: dict[str, str]) -> list[dict]:
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    job = Job.from_dict(
        {
            "source": {"path": "in.jsonl", "timestamp_by": "t", "arrival_time": "a"},
            "window": {
                "type": "tumbling",
                "size": "10s",
                "group_by": ["k"],
                "aggregates": aggregates,
            },
            "output": {"path": "out"},
        },
        base_dir=tmp_path,
    )
    drop = ("type", "emitted_at", "window_start")
    return [
        {k: v for k, v in r.items() if k not in drop}
        for r in simulate(job).records()
        if r["type"] == "window"
    ]


def test_an_aggregate_reads_each_event_s_adjusted_timestamp(tmp_path) -> None:
    """The third event is out of order (09:00:02 after 09:00:04, out_of_order 0 s): the
    policy adjusts it to 09:00:04, and that is the System.Timestamp() its window reads."""
    lines = [
        {"k": "a", "t": "2026-03-01T09:00:01Z", "a": "2026-03-01T09:00:01Z"},
        {"k": "a", "t": "2026-03-01T09:00:04Z", "a": "2026-03-01T09:00:05Z"},
        {"k": "a", "t": "2026-03-01T09:00:02Z", "a": "2026-03-01T09:00:06Z"},
    ]
    aggregates = {
        "last": "max(System.Timestamp())",
        "moved": "max(DATEDIFF(second, t, System.Timestamp()))",
        "times": "collect(System.Timestamp())",
    }
    assert _windows(tmp_path, lines, aggregates) == [
        {
            "k": "a",
            "window_end": "2026-03-01T09:00:10Z",
            "last": "2026-03-01T09:00:04Z",
            "moved": 2,
            "times": ["2026-03-01T09:00:01Z", "2026-03-01T09:00:04Z", "2026-03-01T09:00:04Z"],
        }
    ]


def test_a_window_over_a_join_s_matches_reads_each_match_s_time(tmp_path) -> None:
    """(each match's own timestamp: tests/query/test_join_window.py runs it)"""
    job = Job.from_dict(
        {
            "inputs": {
                "a": {"path": "a", "timestamp_by": "t"},
                "b": {"path": "b", "timestamp_by": "t"},
            },
            "join": {"left": "a", "right": "b", "on": ["k"], "between": ["0s", "5s"]},
            "window": {
                "type": "tumbling",
                "size": "10s",
                "aggregates": {"last": "max(System.Timestamp())"},
            },
            "output": {"path": "out"},
        },
        base_dir=tmp_path,
    )
    assert job.windows_matches
    assert job.window is not None and str(job.window.aggregates[0]) == "max(System.Timestamp())"
