"""``[match]`` in the job model and the reference engine (semantics §11.25): what the
table accepts and refuses by key, when a start is decided, and what the state keeps."""

from __future__ import annotations

from typing import Any

import pytest

from sparktide.core.engine import ReferenceEngine, simulate
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.reader import parse_fields
from sparktide.time import parse_instant

MATCH = {
    "partition_by": ["device"],
    "limit_duration": "30s",
    "pattern": "Low+ High",
    "define": {"Low": "v < 10", "High": "v >= 10"},
    "measures": {"lows": "count(Low)", "peak": "last(High.v)", "from": "first(id)"},
}


def job(**tables: Any) -> Job:
    data = {"source": {"path": "in.jsonl", "timestamp_by": "t"}, "output": {"path": "out"}}
    return Job.from_dict({**data, "match": MATCH, **tables})


def rows(j: Job, *events: tuple[str, int, int]) -> list:
    """Records of ``(device, second, v)`` events, each arriving at its time, ids in order."""
    out = []
    for seq, (device, second, v) in enumerate(events):
        t = (
            f"2026-03-01T10:00:{second:02d}Z"
            if second < 60
            else f"2026-03-01T10:01:{second - 60:02d}Z"
        )
        fields = {"id": seq, "device": device, "t": t, "v": v}
        out.append(parse_fields(seq, fields, j.source, default_arrival=parse_instant(t)))
    return out


def test_matches_per_partition_with_their_measures() -> None:
    j = job()
    result = simulate(j, rows(j, ("a", 0, 1), ("b", 1, 2), ("a", 2, 3), ("a", 3, 12), ("b", 4, 15)))
    got = [{k: v for k, v in e.items() if k != "type"} for e in result.events]
    assert got == [
        {"lows": 2, "peak": 12, "from": 0, "timestamp": "2026-03-01T10:00:03Z"},
        {"lows": 1, "peak": 12, "from": 2, "timestamp": "2026-03-01T10:00:03Z"},
        {"lows": 1, "peak": 15, "from": 1, "timestamp": "2026-03-01T10:00:04Z"},
    ]


def test_the_watermark_decides_a_start_and_the_state_forgets_it() -> None:
    """``Low+ High`` from a: a's window (30 s) closes once the watermark passes it, while
    only b sends; without a flush. Decided starts leave the state."""
    j = job(match={**MATCH, "pattern": "Low High?"})
    engine = ReferenceEngine(j)
    events = [("a", 0, 1)] + [("b", s, 20) for s in range(5, 45, 5)]
    result = engine.run(rows(j, *events), flush=False)
    assert [e["from"] for e in result.events] == [0]  # (Low alone, High optional)
    assert engine.matches is not None and engine.matches.size() <= 1


@pytest.mark.parametrize(
    ("tables", "key", "message"),
    [
        (
            {"window": {"type": "tumbling", "size": "1m", "aggregates": {"n": "count(*)"}}},
            "match",
            "[window]",
        ),
        ({"select": {"x": "v"}}, "select.x", "not a column of the match's measures"),
        ({"select": {"*": "*", "x": "lows"}}, "match", '[select] with "*"'),
        ({"filter": {"where": "v > 1"}}, "match", "[filter]"),
        ({"ordering": {"on_out_of_order": "accept"}}, "match", "accept"),
        ({"match": {**MATCH, "pattern": "Low+ (High"}}, "match.pattern", "not closed"),
        ({"match": {**MATCH, "define": {"Mid": "v = 5"}}}, "match.define.Mid", "not a variable"),
        ({"match": {**MATCH, "measures": {"x": "sum(v)"}}}, "match.measures.x", "the measures are"),
        (
            {"match": {**MATCH, "measures": {"x": "first(Low)"}}},
            "match.measures.x",
            "takes a column",
        ),
        ({"match": {**MATCH, "measures": {"x": "count(v)"}}}, "match.measures.x", "count takes"),
        ({"match": {**MATCH, "measures": {}}}, "match.measures", "at least one"),
        ({"match": {**MATCH, "limit_duration": "0s"}}, "match.limit_duration", ""),
        ({"match": {**MATCH, "partition_by": "device"}}, "match.partition_by", "a list"),
    ],
)
def test_refusals_name_the_key(tables: dict, key: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        job(**tables)
    assert caught.value.key == key
    assert message in caught.value.message
