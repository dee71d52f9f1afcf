"""A left outer join of two streams in the reference engine (semantics §7.9): a left
event no right event matched is written once, its right side null, at its timestamp
plus the high end of ``between``, once the job watermark has passed that time."""

from __future__ import annotations

import json

from sparktide.core.engine import simulate
from sparktide.job import Job
from sparktide.reader import job_records


def _job(tmp_path, **join) -> Job:
    """Reboots and logins of three machines; a login counts within 30 s of a reboot."""
    reboots = [
        {"machine": "m1", "t": "2026-03-01T10:00:00Z", "id": 1},
        {"machine": "m2", "t": "2026-03-01T10:00:10Z", "id": 2},
        {"machine": "m3", "t": "2026-03-01T10:01:00Z", "id": 3},
    ]
    logins = [
        {"machine": "m1", "t": "2026-03-01T10:00:20Z", "user": "ann"},
        {"machine": "m2", "t": "2026-03-01T10:00:50Z", "user": "bob"},  # 40 s: too late
        {"machine": "m3", "t": "2026-03-01T10:01:05Z", "user": "cy"},
        {"machine": "m9", "t": "2026-03-01T10:02:00Z", "user": "dee"},
    ]
    for name, rows in (("reboots", reboots), ("logins", logins)):
        (tmp_path / name).mkdir()
        text = "".join(json.dumps(r) + "\n" for r in rows)
        (tmp_path / name / "a.jsonl").write_text(text)
    source = {"timestamp_by": "t", "arrival_time": "t"}
    return Job.from_dict(
        {
            "inputs": {
                "reboots": {"path": "reboots", **source},
                "logins": {"path": "logins", **source},
            },
            "join": {
                "left": "reboots",
                "right": "logins",
                "on": ["machine"],
                "between": ["0s", "30s"],
                "type": "left",
                **join,
            },
            "ordering": {"late_arrival": "1m", "out_of_order": "0s"},
        },
        base_dir=tmp_path,
    )


def _pairs(result) -> list[tuple]:
    return [
        (e["reboots"]["machine"], (e["logins"] or {}).get("user"), e["timestamp"][-9:])
        for e in result.events
    ]


def test_a_left_event_no_match_reached_is_written_at_its_latest_match_time(tmp_path):
    # m2's login comes 40 s after its reboot: m2 is written alone at 10:00:10 + 30 s,
    # once the watermark (the older input's newest time) has passed it: the login at
    # 10:02:00 moves it past 10:01:00, the flush writes the rest
    job = _job(tmp_path)
    result = simulate(job, job_records(job))
    assert _pairs(result) == [
        ("m1", "ann", "10:00:20Z"),
        ("m2", None, "10:00:40Z"),
        ("m3", "cy", "10:01:05Z"),
    ]
    assert result.metrics["released"] == 3


def test_join_where_filters_what_the_left_join_writes(tmp_path):
    # Stream Analytics' "no login followed": WHERE logins.machine IS NULL keeps the lone
    # reboots; a reboot a login matched is not written alone even when its match is not
    job = _job(tmp_path, where="logins.machine IS NULL")
    assert _pairs(simulate(job, job_records(job))) == [("m2", None, "10:00:40Z")]


def test_a_condition_that_fails_leaves_the_left_event_alone(tmp_path):
    # the rest of the ON decides what matches: m1's login by ann does not, so m1 is alone
    job = _job(tmp_path, condition="logins.user <> 'ann'")
    assert _pairs(simulate(job, job_records(job))) == [
        ("m1", None, "10:00:30Z"),
        ("m2", None, "10:00:40Z"),
        ("m3", "cy", "10:01:05Z"),
    ]
