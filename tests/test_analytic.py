"""Analytic columns (LAG, LAST, ISFIRST and the analytic aggregates) in the job model and
the reference engine (semantics §11.19)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ------------------------------------------------------------ the analytic aggregates
@pytest.mark.parametrize(
    ("analytic", "key", "words"),
    [
        ({"function": "sum", "limit_duration": "1m"}, "analytic.p.value", "required"),
        ({"function": "avg", "value": "x"}, "analytic.p.limit_duration", "required"),
        (
            {"function": "max", "value": "x", "limit_duration": "1m", "period": "1m"},
            "analytic.p.period",
            "takes value, limit_duration",
        ),
        (
            {"function": "min", "value": "x", "limit_duration": "1m", "default": "0"},
            "analytic.p.default",
            "takes value, limit_duration",
        ),
        (
            {"function": "count", "limit_duration": "1m", "offset": 2},
            "analytic.p.offset",
            "no offset",
        ),
        ({"function": "sum", "value": "x +", "limit_duration": "1m"}, "analytic.p.value", ""),
        ({"function": "count", "limit_duration": "-1s"}, "analytic.p.limit_duration", ""),
    ],
)
def test_bad_analytic_aggregates_name_their_key(analytic, key, words):
    with pytest.raises(ConfigError) as caught:
        _job({"p": analytic})
    assert caught.value.key == key
    assert words in caught.value.message


def _aggregates(**extra):
    """Each aggregate of ``v`` over 10 s, with ``extra`` keys (when, partition_by)."""
    columns = {f: {"function": f, "value": "v", "limit_duration": "10s", **extra} for f in _FNS}
    columns["rows"] = {"function": "count", "limit_duration": "10s", **extra}
    return columns


_FNS = ("sum", "count", "avg", "min", "max")


def _values(job, rows):
    names = ["id", *_FNS, "rows"]
    result = ReferenceEngine(job, explain=False).run(_records(job, rows))
    return [tuple(e[n] for n in names) for e in result.events]


def test_aggregates_of_mixed_kinds_follow_the_window_aggregates_rules():
    """SUM of integers is an integer (exactly, beyond 2^53), with a float a float; AVG is
    a float; null, text, booleans and arrays are skipped by SUM and AVG; COUNT(v) counts
    the values that are not null, arrays and objects; MIN/MAX order numbers before text;
    COUNT(*) counts every event; the event itself counts (it matches: no WHEN)."""
    job = _job(_aggregates(), select={"id": "id", **{n: n for n in (*_FNS, "rows")}})
    big = 2**60
    rows = [
        _row(1, 0, v=big),
        _row(2, 1, v=3),  # integers: an exact integer sum
        _row(3, 2, v=None),  # null: skipped by all but COUNT(*)
        _row(4, 3, v="abc"),  # text: SUM and AVG skip it, MIN/MAX rank it after numbers
        _row(5, 4, v=0.5),  # a float: the sum is a float from here on
        _row(6, 5, v=[1, 2]),  # an array: null to every aggregate of a value
        _row(7, 6, v=True),  # a boolean: not a number for SUM and AVG
    ]
    got = _values(job, rows)
    assert got == [
        (1, big, 1, float(big), big, big, 1),
        (2, big + 3, 2, (big + 3) / 2, 3, big, 2),
        (3, big + 3, 2, (big + 3) / 2, 3, big, 3),
        (4, big + 3, 3, (big + 3) / 2, 3, "abc", 4),
        (5, float(big) + 3.5, 4, (float(big) + 3.5) / 3, 0.5, "abc", 5),
        (6, float(big) + 3.5, 4, (float(big) + 3.5) / 3, 0.5, "abc", 6),
        (7, float(big) + 3.5, 5, (float(big) + 3.5) / 3, 0.5, "abc", 7),  # true is 1
    ]
    assert isinstance(got[0][3], float) and isinstance(got[1][1], int)


def test_aggregates_window_when_and_ties():
    """The group is the matching events of the partition at most 10 s before the event
    (the bound included) released up to it: of two events at one timestamp the first
    does not see the second. An event that does not match WHEN still has a value (over
    the earlier matching events), but is not in it; over none: null, COUNT 0."""
    job = _job(
        _aggregates(when="v > 0", partition_by=["k"]),
        select={"id": "id", **{n: n for n in (*_FNS, "rows")}},
    )
    rows = [
        _row(1, 0, k="a", v=4),
        _row(2, 0, k="b", v=100),  # another partition
        _row(3, 5, k="a", v=-1),  # does not match: over event 1 only
        _row(4, 5, k="a", v=2),  # a tie with 3, released after it
        _row(5, 10, k="a", v=6),  # event 1 is exactly 10 s back: still in
        _row(6, 10, k="a", v=0),  # does not match; a tie with 5, which it sees
        _row(7, 21, k="a", v=-5),  # nothing matching within 10 s: null, counts 0
    ]
    assert _values(job, rows) == [
        (1, 4, 1, 4.0, 4, 4, 1),
        (2, 100, 1, 100.0, 100, 100, 1),
        (3, 4, 1, 4.0, 4, 4, 1),
        (4, 6, 2, 3.0, 2, 4, 2),
        (5, 12, 3, 4.0, 2, 6, 3),
        (6, 12, 3, 4.0, 2, 6, 3),
        (7, None, 0, None, None, None, 0),
    ]


def test_an_aggregate_keeps_only_the_events_within_limit_duration():
    """Every matching event is kept (not just the last): COUNT(*) over 10 s of one event a
    second is 11; the state holds the events within 10 s of the watermark, not all."""
    job = _job({"n": {"function": "count", "limit_duration": "10s"}}, select={"id": "id", "n": "n"})
    engine = ReferenceEngine(job, explain=False)
    rows = [_row(i, i) for i in range(300)]
    result = engine.run(_records(job, rows), flush=False)
    assert [e["n"] for e in result.events][:12] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 11]
    assert engine.analytics is not None
    assert 11 <= engine.analytics.size() <= 17  # the watermark is 5 s behind the newest


def _released(job, steps) -> list[dict]:
    """The reference engine's released events of ``steps`` (:func:`_steps`), each event
    ``id`` once (none adjusted)."""
    rows, arrival = [], 0
    for i, (step, behind, k, v) in enumerate(steps):
        arrival += step
        t, a = (
            format_instant(T0 + (arrival - behind) * SECOND),
            format_instant(T0 + arrival * SECOND),
        )
        rows.append({"id": i, "t": t, "a": a, "k": k, "v": v})
    events = ReferenceEngine(job, explain=False).run(_records(job, rows)).events
    assert sorted(e["id"] for e in events) == list(range(len(rows)))  # none adjusted
    return events


def _steps(spread: int) -> st.SearchStrategy:
    """Up to 30 events, each as (seconds after the previous arrival, how far behind its
    arrival its time is (< 5 s), its key, its value: none or within ``spread`` of 0)."""
    return st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(0, 4),
            st.sampled_from("ab"),
            st.one_of(st.none(), st.integers(-spread, spread)),
        ),
        max_size=30,
    )


@settings(max_examples=200, deadline=None)
@given(
    _steps(5),
    st.integers(1, 12),
    st.booleans(),
)
def test_aggregates_match_a_direct_computation(steps, seconds, with_when):
    """Over disordered integer streams (null among them), each aggregate is what a direct
    computation over the released events gives: the matching events of the partition
    released up to the event (the release order is the timestamp order, then arrival),
    at most ``seconds`` before it."""
    extra = {"partition_by": ["k"], "limit_duration": f"{seconds}s"}
    if with_when:
        extra["when"] = "v >= 0"
    columns = {f: {"function": f, "value": "v", **extra} for f in _FNS}
    columns["rows"] = {"function": "count", **extra}
    job = _job(columns, select={"id": "id", "k": "k", "v": "v", **{n: n for n in [*_FNS, "rows"]}})
    events = _released(job, steps)
    for n, event in enumerate(events):
        now = parse_instant(event["timestamp"])
        group = [
            e
            for e in events[: n + 1]
            if e["k"] == event["k"]
            and parse_instant(e["timestamp"]) >= now - seconds * SECOND
            and (not with_when or (e["v"] is not None and e["v"] >= 0))
        ]
        values = [e["v"] for e in group if e["v"] is not None]
        assert event["rows"] == len(group)
        assert event["count"] == len(values)
        assert event["sum"] == (sum(values) if values else None)
        assert event["avg"] == (sum(values) / len(values) if values else None)
        assert event["min"] == (min(values) if values else None)
        assert event["max"] == (max(values) if values else None)
        assert isinstance(event["avg"], float | None) and isinstance(event["sum"], int | None)


# ------------------------------------------------- columns reading columns (levels)
@pytest.mark.parametrize(
    ("analytic", "key", "words"),
    [
        (  # two columns reading each other
            {
                "a": {"function": "lag", "value": "b", "limit_duration": "1m"},
                "b": {"function": "lag", "value": "x", "limit_duration": "1m", "when": "a > 0"},
            },
            "analytic.b.when",
            "a cycle: a -> b -> a",
        ),
        (  # three, through partition_by and default
            {
                "a": {"function": "count", "limit_duration": "1m", "partition_by": ["c"]},
                "b": {"function": "lag", "value": "x", "default": "a", "limit_duration": "1m"},
                "c": {"function": "isfirst", "period": "1m", "when": "b = 1"},
            },
            "analytic.b.default",
            "a cycle: a -> c -> b -> a",
        ),
    ],
)
def test_a_cycle_of_analytic_columns_names_the_expression_closing_it(analytic, key, words):
    with pytest.raises(ConfigError) as caught:
        _job(analytic)
    assert caught.value.key == key
    assert words in caught.value.message


def test_levels_follow_what_each_column_reads():
    """Another column's name reads that column (whatever the order of the tables); a
    column's own name, and a name that is no column, read the event's fields."""
    from sparktide.job import analytic_levels

    job = _job(
        {
            "top": {"function": "last", "value": "mid", "limit_duration": "1m"},
            "mid": {"function": "lag", "value": "id", "limit_duration": "1m", "when": "pw > 0"},
            "pw": {"function": "lag", "value": "pw", "limit_duration": "1m"},  # (the field)
            "other": {"function": "sum", "value": "w", "limit_duration": "1m"},
        }
    )
    assert analytic_levels(job.analytics) == ((2, 3), (1,), (0,))


def _fault_job(**extra):
    """Stream Analytics' "duration of a condition": the previous weight and time of each
    event, and the time of the latest earlier event whose previous weight was below
    20000 (its WHEN reads the other column), for events that go back below it."""
    analytic = {
        "start": {
            "function": "lag",
            "value": "t",
            "limit_duration": "1h",
            "when": "previous_weight < 20000",
        },
        "previous_weight": {"function": "lag", "value": "w", "limit_duration": "1h"},
        "previous_time": {"function": "lag", "value": "t", "limit_duration": "1h"},
    }
    return _job(
        analytic,
        filter={"where": "w < 20000 AND previous_weight > 20000"},
        select={"id": "id", "start": "start", "end": "previous_time"},
        **extra,
    )


_FAULT_ROWS = [  # (seconds, arrival, weight), in arrival order
    (0, 0, 15000),
    (60, 60, 18000),
    (122, 122, 25000),
    (120, 123, 22000),  # out of order (within 5 s): released before 122; the fault starts
    (180, 180, 21000),
    (240, 240, 19000),  # back below: start 120, end 180
    (300, 300, 23000),
    (360, 364, 19500),  # back below: start 300, end 300
    (4000, 4000, 26000),  # over an hour after 360: no previous weight
    (4060, 4060, 17000),  # back below: no earlier match within the hour, end 4000
]


def _fault_rows():
    rows = []
    for i, (seconds, arrival, w) in enumerate(_FAULT_ROWS):
        t = format_instant(T0 + seconds * SECOND)
        a = format_instant(T0 + arrival * SECOND)
        rows.append({"id": i, "t": t, "a": a, "w": w})
    return rows


def test_a_when_reads_another_columns_value_of_each_earlier_event():
    """StartFault is the time of the latest earlier event whose own previous weight was
    below 20000: the events WHERE drops are seen (the columns come first)."""
    job = _fault_job()
    result = ReferenceEngine(job, explain=False).run(_records(job, _fault_rows()))
    t = lambda s: format_instant(T0 + s * SECOND)  # noqa: E731
    assert [(e["id"], e["start"], e["end"]) for e in result.events] == [
        (5, t(120), t(180)),
        (7, t(300), t(300)),
        (9, None, t(4000)),
    ]


def test_columns_reading_columns_across_micro_batches():
    """The same records observed one by one or in chunks of three (the state carries
    each column's kept events, evaluated at their release) give the same events."""
    job = _fault_job()
    one = ReferenceEngine(job, explain=False).run(_records(job, _fault_rows())).events
    records = _records(job, _fault_rows())
    for n, record in enumerate(records):  # observed at the last arrival of its chunk
        last = records[min(n - n % 3 + 2, len(records) - 1)]
        record.processing_time = max(r.arrival_time for r in records[: last.seq + 1])
    chunks = ReferenceEngine(job, explain=False).run(records).events
    assert chunks == one and len(one) == 3


def _latest(events, n, within, test):
    """The latest event released before ``events[n]``, at most ``within`` seconds
    before it, for which ``test`` holds (``None`` if none)."""
    now = parse_instant(events[n]["timestamp"])
    for e in reversed(events[:n]):
        if parse_instant(e["timestamp"]) >= now - within * SECOND and test(e):
            return e
    return None


@settings(max_examples=150, deadline=None)
@given(
    _steps(3),
    st.integers(1, 12),
    st.integers(1, 12),
)
def test_columns_reading_columns_match_a_direct_computation(steps, seconds, back):
    """Three levels over disordered streams: ``pv`` (LAG(v) per k), ``st`` (LAG(id) WHEN
    pv < 0: reads pv of each earlier event), ``n`` (COUNT(*) PARTITION BY pv: the events
    with the same pv) and ``ls`` (LAST(st) per k WHEN st IS NOT NULL: a column of level
    2) are what a direct computation over the released events gives."""
    columns = {
        "ls": {
            "function": "last",
            "value": "st",
            "partition_by": ["k"],
            "limit_duration": f"{back}s",
            "when": "st IS NOT NULL",
        },
        "n": {"function": "count", "partition_by": ["pv"], "limit_duration": f"{seconds}s"},
        "st": {"function": "lag", "value": "id", "limit_duration": f"{back}s", "when": "pv < 0"},
        "pv": {"function": "lag", "value": "v", "partition_by": ["k"], "limit_duration": "5s"},
    }
    names = ("id", "k", "v", "pv", "st", "n", "ls")
    job = _job(columns, select={n: n for n in names})
    events = _released(job, steps)
    for n, event in enumerate(events):
        found = _latest(events, n, 5, lambda e: e["k"] == event["k"])  # noqa: B023
        assert event["pv"] == (None if found is None else found["v"])
        found = _latest(events, n, back, lambda e: e["pv"] is not None and e["pv"] < 0)
        assert event["st"] == (None if found is None else found["id"])
        now = parse_instant(event["timestamp"])
        same = [
            e
            for e in events[: n + 1]
            if e["pv"] == event["pv"] and parse_instant(e["timestamp"]) >= now - seconds * SECOND
        ]
        assert event["n"] == len(same)
        found = _latest(
            events,
            n,
            back,
            lambda e: e["k"] == event["k"] and e["st"] is not None,  # noqa: B023
        )
        expected = event["st"] if event["st"] is not None else found and found["st"]
        assert event["ls"] == expected


def test_a_column_another_reads_is_no_field_of_the_record():
    """The fields the job reads (checked for presence, read at admission) leave out
    the names of the columns other columns read, but not a column's own name."""
    from sparktide.core.namedcolumns import named_columns
    from sparktide.job import expression_fields

    job = _fault_job()
    fields = expression_fields(job)
    assert "previous_weight" not in fields and {"w", "t"} <= set(fields)
    assert "previous_weight" not in {c.column for c in named_columns(job)}
    own = _job({"w": {"function": "lag", "value": "w", "limit_duration": "1m"}})
    assert "w" in expression_fields(own)
