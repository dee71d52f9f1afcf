"""The analytic forms of the aggregates in queries (semantics §11.19): ``SUM``, ``COUNT``,
``AVG``, ``MIN``, ``MAX`` with ``OVER (... LIMIT DURATION ...)`` translated into
``[analytic.<name>]`` columns, in one statement and over a step. (Their refusals are in
``test_multistep.py``'s table over steps, and below, by the refusal check of
``test_translate.py``.)"""

from __future__ import annotations

import pytest

from sparktide.core.engine import simulate
from sparktide.reader import parse_fields
from sparktide.time import MINUTE, SECOND, parse_instant
from tests.query.test_multistep import job, run
from tests.query.test_translate import test_refusals_name_construct_and_position as _refused


def test_the_analytic_forms_of_aggregates_are_analytic_columns() -> None:
    """``SUM``, ``COUNT``, ``AVG``, ``MIN``, ``MAX`` with ``OVER (... LIMIT DURATION ...)``
    (semantics §11.19) in ``SELECT`` and ``WHERE`` without ``GROUP BY``: one
    ``[analytic.<name>]`` column per distinct call, ``COUNT(*)`` without a value."""
    j = job(
        "SELECT id, SUM(v) OVER (PARTITION BY k LIMIT DURATION(minute, 5)) AS s, "
        "COUNT(*) OVER (LIMIT DURATION(second, 30) WHEN v > 2) AS n, "
        "Max(v * 2) OVER (PARTITION BY k, z LIMIT DURATION(ms, 1500)) - "
        "min(v * 2) OVER (PARTITION BY k, z LIMIT DURATION(ms, 1500)) AS spread, "
        "COUNT(v) OVER (LIMIT DURATION(hh, 1)) AS nv "
        "FROM i TIMESTAMP BY t "
        "WHERE AVG(v) OVER (PARTITION BY k LIMIT DURATION(minute, 5)) > 3 "
        "AND SUM(v) OVER (PARTITION BY k LIMIT DURATION(minute, 5)) < 100"
    )
    got = [
        (a.name, a.function, a.value, a.partition_by, a.limit_duration, a.when) for a in j.analytics
    ]
    assert got == [
        ("_avg1", "avg", "v", ("k",), 5 * MINUTE, None),
        ("_sum2", "sum", "v", ("k",), 5 * MINUTE, None),
        ("_count3", "count", None, (), 30 * SECOND, "v > 2"),
        ("_max4", "max", "v * 2", ("k", "z"), 1_500_000, None),
        ("_min5", "min", "v * 2", ("k", "z"), 1_500_000, None),
        ("_count6", "count", "v", (), 60 * MINUTE, None),
    ]
    assert j.filter is not None and j.filter.where == "_avg1 > 3 AND _sum2 < 100"
    assert [(p.name, p.expression) for p in j.select] == [
        ("id", "id"),
        ("s", "_sum2"),
        ("n", "_count3"),
        ("spread", "_max4 - _min5"),
        ("nv", "_count6"),
    ]
    assert j.window is None
    # Stream Analytics' own example: an alert when a resource was unhealthy for an hour
    alert = job(
        "SELECT 1 AS alert FROM input "
        "WHERE MAX(healthy) OVER (PARTITION BY id LIMIT DURATION (hour, 1)) = 0"
    )
    (column,) = alert.analytics
    assert (column.function, column.value, column.limit_duration) == ("max", "healthy", 60 * MINUTE)
    assert alert.filter is not None and alert.filter.where == "_max1 = 0"


def test_an_analytic_aggregate_over_a_step_reads_its_computed_column() -> None:
    """``SUM(w) OVER (...)`` over a step that computes ``w`` sums the input's ``v * 2``,
    over every event (the outer WHERE does not stop them being summed)."""
    j = job(
        "WITH a AS (SELECT k, v * 2 AS w FROM i TIMESTAMP BY t)\n"
        "SELECT k, SUM(w) OVER (PARTITION BY k LIMIT DURATION(second, 10)) AS total,\n"
        "COUNT(*) OVER (LIMIT DURATION(second, 10) WHEN w > 2) AS big INTO o FROM a WHERE w > 2"
    )
    assert [(a.name, a.value) for a in j.analytics] == [("_sum1", "v * 2"), ("_count2", None)]
    rows = [
        {"k": 1, "v": 1, "t": "2026-03-01T09:00:01Z"},  # w = 2: filtered, still summed
        {"k": 1, "v": 2, "t": "2026-03-01T09:00:05Z"},
        {"k": 2, "v": 3, "t": "2026-03-01T09:00:06Z"},
        {"k": 1, "v": 4, "t": "2026-03-01T09:00:12Z"},  # the first is 11 s back
    ]
    assert run(j, rows) == [
        {"k": 1, "total": 6, "big": 1, "timestamp": "2026-03-01T09:00:05Z"},
        {"k": 2, "total": 6, "big": 2, "timestamp": "2026-03-01T09:00:06Z"},
        {"k": 1, "total": 12, "big": 3, "timestamp": "2026-03-01T09:00:12Z"},
    ]


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (
            "SELECT SUM(v) OVER (PARTITION BY k) AS s FROM i",
            "1:8",
            "SUM(...) OVER needs LIMIT DURATION(unit, length)",
        ),
        (
            "SELECT COUNT(DISTINCT v) OVER (LIMIT DURATION(second, 5)) AS c FROM i",
            "1:8",
            "COUNT(DISTINCT ...) OVER (...) is not supported",
        ),
        ("SELECT MAX(*) OVER (LIMIT DURATION(second, 5)) AS m FROM i", "1:8", "MAX(*) is not"),
        (
            "SELECT AVG(v, w) OVER (LIMIT DURATION(second, 5)) AS a FROM i",
            "1:8",
            "AVG(...) OVER (...) takes one value",
        ),
        (
            "SELECT SUM(v) OVER (ORDER BY v LIMIT DURATION(second, 5)) AS s FROM i",
            "1:15",
            "SUM takes no ORDER BY in OVER",
        ),
        (
            "SELECT STDEV(v) OVER (LIMIT DURATION(second, 5)) AS s FROM i",
            "1:8",
            "the aggregates with an analytic form are SUM, COUNT, AVG, MIN and MAX",
        ),
        (
            "SELECT k, MIN(v) OVER (LIMIT DURATION(second, 5)) AS m FROM i "
            "GROUP BY k, TumblingWindow(s, 5)",
            "1:18",
            "the analytic form of an aggregate is not supported with GROUP BY yet",
        ),
    ],
)
def test_analytic_aggregate_refusals_name_construct_and_position(
    text: str, position: str, message: str
) -> None:
    _refused(text, position, message)


# ------------------------------------------- analytic functions reading analytic ones
_DURATION_OF_A_CONDITION = """WITH SelectPreviousEvent AS (
  SELECT
    LAG([time]) OVER (LIMIT DURATION(hour, 24)) AS previous_time,
    LAG([weight]) OVER (LIMIT DURATION(hour, 24)) AS previous_weight,
    *
  FROM input TIMESTAMP BY [time]
)
SELECT
  LAG(time) OVER (LIMIT DURATION(hour, 24) WHEN previous_weight < 20000) [StartFault],
  previous_time [EndFault]
INTO output
FROM SelectPreviousEvent
WHERE [weight] < 20000 AND previous_weight > 20000"""


def test_the_duration_of_a_condition_reads_the_steps_lag_in_when() -> None:
    """Stream Analytics' "duration of a condition": the outer LAG's WHEN reads the
    step's LAG, which becomes a column of its own, declared first, that the outer
    column's ``when`` names (the same call in WHERE is the same column)."""
    j = job(_DURATION_OF_A_CONDITION)
    got = [(a.name, a.function, a.value, a.when) for a in j.analytics]
    assert got == [
        ("_lag1", "lag", "weight", None),
        ("_lag2", "lag", "time", "_lag1 < 20000"),
        ("_lag3", "lag", "time", None),
    ]
    assert j.filter is not None and j.filter.where == "weight < 20000 AND _lag1 > 20000"
    assert [(p.name, p.expression) for p in j.select] == [
        ("StartFault", "_lag2"),
        ("EndFault", "_lag3"),
    ]
    t = [f"2026-03-01T09:0{m}:00Z" for m in range(8)]
    weights = [15000, 18000, 22000, 25000, 19000, 21000, 23000, 19000]
    rows = [{"time": time, "t": time, "weight": w} for time, w in zip(t, weights, strict=True)]
    assert run(j, rows) == [
        {"StartFault": t[2], "EndFault": t[3], "timestamp": t[4]},
        {"StartFault": t[5], "EndFault": t[6], "timestamp": t[7]},
    ]


def test_an_analytic_function_inside_another_is_a_column_it_reads() -> None:
    """Written in one SELECT (which Stream Analytics refuses in the argument and the
    default): the inner call is a column computed first, over every event, and the
    outer one reads its value of each event, as through a step."""
    j = job(
        "SELECT id, LAG(x) OVER (LIMIT DURATION(hour, 1) WHEN LAG(y) OVER "
        "(LIMIT DURATION(hour, 1)) > 3) AS a, "
        "SUM(LAG(v) OVER (LIMIT DURATION(second, 5))) OVER (PARTITION BY "
        "ISFIRST(minute, 1) LIMIT DURATION(second, 5)) AS s FROM i"
    )
    got = [(a.name, a.function, a.value, a.partition_by, a.when) for a in j.analytics]
    assert got == [
        ("_lag1", "lag", "y", (), None),
        ("_lag2", "lag", "x", (), "_lag1 > 3"),
        ("_lag3", "lag", "v", (), None),
        ("_isfirst4", "isfirst", None, (), None),
        ("_sum5", "sum", "_lag3", ("_isfirst4",), None),
    ]


def test_microsoft_s_text_reads_the_record_s_field_first() -> None:
    """Microsoft's text of the pattern computes the step's columns right of ``*``: a
    later statement reads each as the record's field of that name where the record has
    one, else the computed value (semantics §11.16), so the same columns as written left
    of ``*`` are guarded by ``IS NOT MISSING``."""
    text = _DURATION_OF_A_CONDITION.replace("SELECT\n    LAG", "SELECT *,\n    LAG").replace(
        "previous_weight,\n    *", "previous_weight"
    )
    j = job(text)
    weight = "CASE WHEN previous_weight IS NOT MISSING THEN previous_weight ELSE _lag1 END"
    got = [(a.name, a.function, a.value, a.when) for a in j.analytics]
    assert got == [
        ("_lag1", "lag", "weight", None),
        ("_lag2", "lag", "time", f"{weight} < 20000"),
        ("_lag3", "lag", "time", None),
    ]
    assert j.filter is not None and j.filter.where == f"weight < 20000 AND {weight} > 20000"
    ended = "CASE WHEN previous_time IS NOT MISSING THEN previous_time ELSE _lag3 END"
    assert [(p.name, p.expression) for p in j.select] == [
        ("StartFault", "_lag2"),
        ("EndFault", ended),
    ]
    t = [f"2026-03-01T09:0{m}:00Z" for m in range(5)]
    weights = [15000, 22000, 19000, 17000, 18000]
    rows: list[dict[str, object]] = [
        {"time": time, "t": time, "weight": w} for time, w in zip(t, weights, strict=True)
    ]
    # WHEN matches 09:01 (15000) and 09:04 (17000); WHERE keeps 09:02 (22000 before it)
    # and 09:03, whose own fields win: 30000 (no WHEN match) and a null previous time
    rows[3]["previous_weight"] = 30000
    rows[3]["previous_time"] = None
    got_rows = [(r["StartFault"], r["EndFault"]) for r in run(j, rows)]
    assert got_rows == [(t[1], t[1]), (t[1], None)]


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (
            "WITH s AS (SELECT LAG(w) OVER (LIMIT DURATION(hour, 1)) AS pw, t FROM i) "
            "SELECT LAG(t) OVER (LIMIT DURATION(hour, 1) WHEN pz < 2) AS sf FROM s",
            "1:123",
            "pz is not a column of the step s",
        ),
        (
            "WITH s AS (SELECT LAG(w) OVER (LIMIT DURATION(hour, 1)) AS pw, t FROM i "
            "WHERE w > 0) SELECT LAG(t) OVER (LIMIT DURATION(hour, 1) WHEN pw < 2) AS sf FROM s",
            "1:93",
            "LAG(...) over the step s, which filters, is not supported yet",
        ),
    ],
)
def test_analytic_functions_reading_analytic_ones_keep_refusing(
    text: str, position: str, message: str
) -> None:
    _refused(text, position, message)


def test_lag_of_system_timestamp_is_the_previous_event_s_time_after_the_policy() -> None:
    """``LAG(System.Timestamp())`` (semantics §11.19): the previous event's system
    timestamp, after its ordering policy: a late event adjusted to the watermark is seen
    at its adjusted time, by its own ``DATEDIFF`` and by the next event's ``LAG``."""
    j = job(
        "SELECT k, DATEDIFF(second, LAG(System.Timestamp()) OVER (PARTITION BY k "
        "LIMIT DURATION(minute, 5)), System.Timestamp()) AS gap, "
        "LAG(System.Timestamp()) OVER (PARTITION BY k LIMIT DURATION(minute, 5) "
        "WHEN DATEPART(second, System.Timestamp()) = 0) AS whole "
        "FROM i TIMESTAMP BY t"
    )
    got = [(a.name, a.value, a.when) for a in j.analytics]
    assert got == [
        ("_lag1", "System.Timestamp()", None),
        ("_lag2", "System.Timestamp()", "DATEPART(second, System.Timestamp()) = 0"),
    ]
    times = [("09:00:00", "09:00:01"), ("09:00:40", "09:00:41")]
    times += [("09:00:20", "09:00:42"), ("09:01:10", "09:01:11")]  # (time, enqueued)
    records = [
        parse_fields(
            seq,
            {"t": f"2026-03-01T{t}Z", "k": "a"},
            j.source,
            default_arrival=parse_instant(f"2026-03-01T{enqueued}Z"),
        )
        for seq, (t, enqueued) in enumerate(times)
    ]
    # 09:00:20, enqueued 22 s later, is late (late_arrival 5 s): adjusted to 09:00:37,
    # then out of order (the watermark is 09:00:40): adjusted to 09:00:40
    result = simulate(j, records)
    assert [(r["gap"], r["whole"], r["timestamp"][-9:]) for r in result.events] == [
        (None, None, "09:00:00Z"),
        (40, "2026-03-01T09:00:00Z", "09:00:40Z"),
        (0, "2026-03-01T09:00:00Z", "09:00:40Z"),
        (30, "2026-03-01T09:00:00Z", "09:01:10Z"),
    ]
