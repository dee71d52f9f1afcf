"""``source.timestamp_by`` and ``source.over`` as expressions (semantics §1.4): the time
and the substream key each event's own fields compute, judged as their columns' would
be, with their own dead letters."""

from __future__ import annotations

import json

import pytest

from sparktide.core import simulate
from sparktide.errors import ConfigError
from sparktide.job import Job, Source
from sparktide.reader import parse_fields
from sparktide.reader.fields import computed_key
from sparktide.time import parse_instant

NESTED = "GETRECORDPROPERTYVALUE(header, 'time')"


def _time(stamp: str, fields: dict, unit: str | None = None) -> tuple[int | None, str | None]:
    source = Source(path="in", timestamp_by=stamp, time_unit=unit)
    record = parse_fields(0, fields, source, default_arrival=0)
    return record.event_time if record.error is None else None, record.error


def test_a_column_name_is_a_column_and_anything_else_an_expression() -> None:
    assert not Source(path="in", timestamp_by="event-time").computes_time
    assert Source(path="in", timestamp_by="event-time").timestamp_expression is None
    computed = Source(path="in", timestamp_by="DATEADD(hour, -1, t)")
    assert computed.computes_time
    assert computed.timestamp_expression is not None


@pytest.mark.parametrize(
    ("stamp", "message"),
    [
        ("System.Timestamp()", "reads System.Timestamp(): the event's time is computed"),
        ("e.t", "a nested field is GETRECORDPROPERTYVALUE(e, 't')"),
        ("DATEADD(hour, 1", "source.timestamp_by: the expression"),
        ("LAG(t)", "unknown function LAG"),
    ],
)
def test_expressions_that_cannot_compute_a_time_are_refused_by_key(stamp, message) -> None:
    with pytest.raises(ConfigError, match=r"^source\.timestamp_by") as caught:
        Source(path="in", timestamp_by=stamp)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("stamp", "fields", "instant"),
    [
        ("DATEADD(hour, -1, t)", {"t": "2026-03-01T10:00:00Z"}, "2026-03-01T09:00:00Z"),
        (NESTED, {"header": {"time": "2026-03-01T10:00:00.5+01:00"}}, "2026-03-01T09:00:00.5Z"),
        ("CONCAT(d, 'T', h, 'Z')", {"d": "2026-03-01", "h": "10:00:00"}, "2026-03-01T10:00:00Z"),
        ("CAST(t AS datetime)", {"t": "2026-03-01T10:00:00Z"}, "2026-03-01T10:00:00Z"),
    ],
)
def test_the_expression_computes_the_event_time(stamp, fields, instant) -> None:
    assert _time(stamp, fields) == (parse_instant(instant), None)


def test_a_computed_number_is_an_epoch_time_with_a_time_unit() -> None:
    assert _time("ts * 1000", {"ts": 1772355600}, "ms") == (
        parse_instant("2026-03-01T09:00:00Z"),
        None,
    )
    assert _time("ts * 1000", {"ts": 1.5}, "us") == (1500, None)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({}, f"timestamp {NESTED} is null"),
        ({"header": "none"}, f"timestamp {NESTED} is null"),
        ({"header": {"time": 17}}, f"timestamp {NESTED}: expected an ISO-8601 time string"),
        (
            {"header": {"time": "2026-03-01T10:00:00"}},
            f"timestamp {NESTED}: time '2026-03-01T10:00:00' has no time zone",
        ),
        (
            {"header": {"time": "2026-02-30T10:00:00Z"}},
            f"timestamp {NESTED}: time '2026-02-30T10:00:00Z' is not a valid date-time",
        ),
    ],
)
def test_a_computed_time_that_is_no_instant_makes_the_record_malformed(fields, error) -> None:
    time, got = _time(NESTED, fields)
    assert time is None
    assert got is not None and got.startswith(error), got


def test_a_failed_cast_in_the_expression_is_the_record_s_error() -> None:
    assert _time("CAST(t AS datetime)", {"t": "soon"}) == (
        None,
        "timestamp CAST(t AS datetime): CAST to datetime: 'soon' is not a datetime",
    )


def test_simulate_windows_events_by_their_computed_time(tmp_path) -> None:
    """End to end in the reference engine: the nested time orders and windows the events;
    a record whose time cannot be computed is a dead letter with the reason."""
    lines = [
        {"header": {"time": "2026-03-01T09:00:01Z"}, "a": "2026-03-01T09:00:01Z", "v": 1},
        {"header": {"time": "2026-03-01T09:00:04Z"}, "a": "2026-03-01T09:00:04Z", "v": 2},
        {"header": {}, "a": "2026-03-01T09:00:05Z", "v": 9},
        {"header": {"time": "2026-03-01T09:00:12Z"}, "a": "2026-03-01T09:00:12Z", "v": 4},
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    job = Job.from_dict(
        {
            "source": {"path": "in.jsonl", "timestamp_by": NESTED, "arrival_time": "a"},
            "window": {"type": "tumbling", "size": "10s", "aggregates": {"s": "sum(v)"}},
            "output": {"path": "out"},
        },
        base_dir=tmp_path,
    )
    result = simulate(job)
    windows = [r for r in result.records() if r["type"] == "window"]
    assert [(w["window_start"], w["s"]) for w in windows] == [
        ("2026-03-01T09:00:00Z", 3),
        ("2026-03-01T09:00:10Z", 4),
    ]
    assert [letter["error"] for letter in result.dead_letters] == [f"timestamp {NESTED} is null"]


KEY = "GETRECORDPROPERTYVALUE(meta, 'device')"


@pytest.mark.parametrize(
    ("fields", "cti", "outcome"),
    [
        ({"meta": {"device": "d1"}}, False, "d1"),
        ({"meta": {"device": 7}}, False, 7),
        ({"meta": {}}, True, None),  # (a CTI row without a key punctuates every substream)
        ({"meta": {}}, False, f"substream key {KEY} is null"),
        ({"meta": {"device": ["d1"]}}, False, f"substream key {KEY} must be a single value"),
    ],
)
def test_the_expression_computes_the_substream_key(fields, cti, outcome) -> None:
    source = Source(path="in", timestamp_by="t", over=KEY)
    try:
        assert computed_key(fields, source, cti) == outcome
    except ValueError as exc:
        assert str(exc) == outcome


def test_a_window_groups_by_a_computed_key_as_a_computed_column(tmp_path) -> None:
    tables = {
        "source": {"path": "in", "timestamp_by": "t", "over": KEY},
        "window": {"type": "tumbling", "size": "10s", "aggregates": {"n": "count(*)"}},
        "output": {"path": "out"},
    }
    with pytest.raises(ConfigError, match=r"^window\.group_by: must include the substream key"):
        Job.from_dict(tables, base_dir=tmp_path)
    tables["window"]["group_by"] = [{"device": KEY}]
    assert Job.from_dict(tables, base_dir=tmp_path).source.computes_key
