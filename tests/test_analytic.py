"""Analytic columns in the job model and the reference engine (semantics §11.11)."""

from __future__ import annotations

import pytest

from sparktide.core.engine import ReferenceEngine
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.reader import parse_fields
from sparktide.time import SECOND, format_instant, parse_instant

T0 = parse_instant("2026-03-01T09:00:00Z")


def _job(analytic, **tables):
    data = {"source": {"path": "-", "timestamp_by": "t", "arrival_time": "a"}}
    data["ordering"] = {"late_arrival": "none", "early_arrival": "none", "out_of_order": "5s"}
    data["analytic"] = analytic
    data.update(tables)
    return Job.from_dict(data)


def _records(job, rows):
    out = []
    for seq, row in enumerate(rows):
        record = parse_fields(seq, row, job.source)
        record.processing_time = record.arrival_time
        out.append(record)
    return out


def _row(i, seconds, **fields):
    t = format_instant(T0 + seconds * SECOND)
    return {"id": i, "t": t, "a": t, **fields}


@pytest.mark.parametrize(
    ("analytic", "tables", "key", "words"),
    [
        ({"p": {"function": "lag", "value": "x"}}, {}, "analytic.p.limit_duration", "required"),
        ({"p": {"function": "lead", "value": "x"}}, {}, "analytic.p.function", "lag, last"),
        ({"p": {"function": "isfirst"}}, {}, "analytic.p.period", "required"),
        (
            {"p": {"function": "lag", "value": "x", "limit_duration": "1m", "offset": 0}},
            {},
            "analytic.p.offset",
            "1 or more",
        ),
        (
            {"p": {"function": "lag", "value": "x", "limit_duration": 60}},
            {},
            "analytic.p.limit_duration",
            "with a unit",
        ),
        (
            {"p": {"function": "isfirst", "period": "1m"}},
            {"window": {"type": "tumbling", "size": "1m"}},
            "analytic",
            "window",
        ),
        (
            {"p": {"function": "isfirst", "period": "1m"}},
            {"ordering": {"on_out_of_order": "accept"}},
            "analytic",
            "accept",
        ),
    ],
)
def test_bad_analytic_tables_name_their_key(analytic, tables, key, words):
    with pytest.raises(ConfigError) as caught:
        _job(analytic, **tables)
    assert caught.value.key == key
    assert words in caught.value.message


def test_lag_offset_two_with_when_and_default():
    """LAG(v, 2, -1) OVER (LIMIT DURATION(second, 20) WHEN v > 0): the second latest
    matching event, within 20 s (the bound included), else the default."""
    job = _job(
        {
            "back": {
                "function": "lag",
                "value": "v",
                "offset": 2,
                "default": "-1",
                "limit_duration": "20s",
                "when": "v > 0",
            }
        },
        select={"id": "id", "back": "back"},
    )
    rows = [
        _row(1, 0, v=1),
        _row(2, 5, v=0),  # does not match
        _row(3, 10, v=3),
        _row(4, 20, v=4),  # matching before it: 1 (0 s), 3 (10 s): the second is 1, 20 s back
        _row(5, 25, v=5),  # 3 (10 s), 4 (20 s): the second is 3, 15 s back
        _row(6, 50, v=6),  # 4, 5: 4 is 30 s back: the default
    ]
    result = ReferenceEngine(job, explain=False).run(_records(job, rows))
    got = [(e["id"], e["back"]) for e in result.events]
    assert got == [(1, -1), (2, -1), (3, -1), (4, 1), (5, 3), (6, -1)]


def test_isfirst_keys_do_not_mix_kinds():
    """1, 1.0 and '1' are three partitions: each is first in its period."""
    job = _job(
        {"f": {"function": "isfirst", "period": "1m", "partition_by": ["k"]}},
        select={"id": "id", "f": "f"},
    )
    rows = [_row(1, 0, k=1), _row(2, 1, k=1.0), _row(3, 2, k="1"), _row(4, 3, k=1)]
    result = ReferenceEngine(job, explain=False).run(_records(job, rows))
    assert [e["f"] for e in result.events] == [1, 1, 1, 0]


def test_state_is_bounded_by_limit_duration():
    """A key per event (partition_by id): without eviction the state would hold every
    event; it holds only those within limit_duration of the watermark."""
    job = _job(
        {"p": {"function": "last", "value": "id", "limit_duration": "10s", "partition_by": ["id"]}}
    )
    engine = ReferenceEngine(job, explain=False)
    rows = [_row(i, i, v=i) for i in range(500)]
    engine.run(_records(job, rows), flush=False)
    assert engine.analytics is not None
    # events at most 10 s behind the watermark (the newest minus 5 s) are kept
    assert 0 < engine.analytics.size() <= 17
