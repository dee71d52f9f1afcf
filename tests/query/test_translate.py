"""Stream Analytics query → job: what is translated, and every refusal with its position."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktide.errors import ConfigError, QueryError
from sparktide.job import Aggregate
from sparktide.query import Bindings, job_to_toml, load_bindings, translate_text
from sparktide.time import MINUTE, SECOND


def job(text: str, bindings: Bindings | None = None):  # type: ignore[no-untyped-def]
    return translate_text(text, "asaql", bindings, "q.asaql").job


def test_tumbling_count_per_toll_booth() -> None:
    j = job(
        "SELECT System.Timestamp() AS WindowEnd, TollId, COUNT(*) AS Count INTO Counts "
        "FROM TollEntry TIMESTAMP BY EntryTime GROUP BY TumblingWindow(minute, 3), TollId"
    )
    assert j.source.path == "TollEntry" and j.source.timestamp_by == "EntryTime"
    assert j.output.path == "Counts"
    w = j.window
    assert (w.type, w.size, w.boundary, w.offset) == ("tumbling", 3 * MINUTE, "end", 0)
    assert w.group_by == ("TollId",)
    assert w.aggregates == (Aggregate("Count", "count"),)
    assert (j.ordering.late_arrival, j.ordering.out_of_order, j.ordering.action) == (
        5 * SECOND,
        0,
        "adjust",
    )


def test_every_aggregate_and_qualified_columns() -> None:
    j = job(
        "SELECT i.k, COUNT(*) AS n, COUNT(v) AS nv, COUNT(DISTINCT i.u) AS users, SUM(v) AS s, "
        "AVG(v) AS a, MIN(v) AS lo, MAX(v) AS hi FROM Input i "
        "GROUP BY i.k, SlidingWindow(second, 30)"
    )
    assert [str(a) for a in j.window.aggregates] == [
        "count(*)",
        "count(v)",
        "count_distinct(u)",
        "sum(v)",
        "avg(v)",
        "min(v)",
        "max(v)",
    ]
    assert j.window.type == "sliding" and j.window.size == 30 * SECOND


@pytest.mark.parametrize(
    ("stamp", "unit"),
    [
        ("DATEADD(millisecond, ts, '1970-01-01T00:00:00Z')", "ms"),
        ("DATEADD(ss, ts, '1970-01-01T00:00:00.0000000Z')", "s"),
        ("DATEADD(mcs, ts, '1970-01-01')", "us"),
        ("CAST(ts AS datetime)", None),
    ],
)
def test_timestamp_by_epoch_numbers_and_casts(stamp: str, unit: str | None) -> None:
    """TIMESTAMP BY DATEADD(unit, column, epoch) reads the column's epoch numbers
    (source.time_unit, semantics §1.4); CAST(column AS datetime) reads the column."""
    j = job(f"SELECT * INTO o FROM i TIMESTAMP BY {stamp}")
    assert (j.source.timestamp_by, j.source.time_unit) == ("ts", unit)
    assert f'time_unit = "{unit}"' in job_to_toml(j) if unit else "time_unit" not in job_to_toml(j)


@pytest.mark.parametrize(
    ("stamp", "written"),
    [
        ("e.t", "GETRECORDPROPERTYVALUE(e, 't')"),
        ("i.e.t", "GETRECORDPROPERTYVALUE(e, 't')"),
        ("DATEADD(hour, -1, t)", "DATEADD(hour, -1, t)"),
        ("CAST(CONCAT(d, 'T', h) AS datetime)", "CAST(CONCAT(d, 'T', h) AS datetime)"),
        (
            "DATEADD(ms, t, '2000-01-01T00:00:00Z')",
            "DATEADD(millisecond, t, '2000-01-01T00:00:00Z')",
        ),
    ],
)
def test_timestamp_by_an_expression(stamp: str, written: str) -> None:
    """TIMESTAMP BY any scalar expression of the event's fields computes its time
    (semantics §1.4); a nested field reads into its record."""
    j = job(f"SELECT * INTO o FROM i TIMESTAMP BY {stamp}")
    assert j.source.timestamp_by == written
    assert j.source.computes_time and j.source.time_unit is None


def test_over_a_value_inside_a_record_is_a_computed_substream_key() -> None:
    """``OVER IoTHub.ConnectionDeviceId`` (semantics §1.4): ``source.over`` an expression,
    which the window groups by as the same computed column."""
    j = job(
        "SELECT IoTHub.ConnectionDeviceId AS device, COUNT(*) AS n INTO o FROM i "
        "TIMESTAMP BY t OVER IoTHub.ConnectionDeviceId "
        "GROUP BY IoTHub.ConnectionDeviceId, TumblingWindow(minute, 1)"
    )
    key = "GETRECORDPROPERTYVALUE(IoTHub, 'ConnectionDeviceId')"
    assert j.source.over == key and j.source.computes_key
    assert j.window is not None and j.window.group_expressions == (("device", key),)


def test_offsets_are_taken_modulo_the_period() -> None:
    w = job(
        "SELECT COUNT(*) AS n FROM i GROUP BY TumblingWindow(Duration(hour, 1), Offset(ms, -1))"
    ).window
    assert w.offset == 3_600_000_000 - 1000
    w = job("SELECT COUNT(*) AS n FROM i GROUP BY HoppingWindow(second, 10, 5, 7)").window
    assert (w.size, w.hop, w.offset) == (10 * SECOND, 5 * SECOND, 2 * SECOND)


def test_session_snapshot_substreams_and_partitions() -> None:
    j = job(
        "SELECT u, COUNT(*) AS n FROM c TIMESTAMP BY t OVER u "
        "GROUP BY u, SessionWindow(Timeout(minute, 2), MaxDuration(hour, 1)) OVER (PARTITION BY u)"
    )
    assert (j.window.type, j.window.gap, j.window.max_duration) == (
        "session",
        2 * MINUTE,
        60 * MINUTE,
    )
    assert j.source.over == "u"
    j = job(
        "SELECT PartitionId, COUNT(*) AS n FROM i TIMESTAMP BY t PARTITION BY PartitionId "
        "GROUP BY PartitionId, System.Timestamp()"
    )
    assert j.window.type == "snapshot" and j.source.partition == "PartitionId"
    assert j.ordering.partitioned is True


def test_pass_through_queries_and_with_steps() -> None:
    j = job("SELECT * INTO o FROM i TIMESTAMP BY t")
    assert j.window is None and j.source.timestamp_by == "t"
    j = job(
        "WITH s1 AS (SELECT * FROM i TIMESTAMP BY t), "
        "s2 AS (SELECT k, COUNT(*) AS n FROM s1 GROUP BY k, TumblingWindow(minute, 1)) "
        "SELECT * INTO o FROM s2"
    )
    assert j.window.group_by == ("k",) and j.source.timestamp_by == "t" and j.source.path == "i"


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (
            "SELECT * FROM i WHERE CAST(x AS money) IS NULL",
            "1:23",
            "CAST(... AS money) is not supported yet",
        ),
        (
            "SELECT * FROM i WHERE GetRecordProperties(x) = 1",
            "1:23",
            "GetRecordProperties(...) is not supported yet",
        ),
        ("SELECT * FROM i WHERE UPPERCASE(x) = 'A'", "1:23", "UPPERCASE(...) is not supported yet"),
        (
            "SELECT * FROM i WHERE GetMetadataPropertyValue(i, 'EventId') = 1",
            "1:23",
            "GetMetadataPropertyValue(..., 'EventId') is not supported yet: sparktide reads "
            "EventEnqueuedUtcTime, PartitionId",
        ),
        (
            "SELECT GetMetadataPropertyValue(i, 'EventEnqueuedUtcTime') AS e INTO o FROM i",
            "1:8",
            "GetMetadataPropertyValue(..., 'EventEnqueuedUtcTime') reads the field the "
            "input's arrival_time key names, and the job file names none",
        ),
        (
            "SELECT GetMetadataPropertyValue(x, 'PartitionId') AS p INTO o FROM i",
            "1:8",
            "GetMetadataPropertyValue's first argument names the input (i)",
        ),
        ("SELECT * FROM i WHERE COUNT(*) > 1", "1:23", "COUNT(...) without GROUP BY"),
        ("SELECT * FROM i WHERE x LIKE y", "1:30", "LIKE takes a 'string' pattern"),
        ("SELECT * FROM i WHERE x LIKE '[ab]%'", "1:30", "[character classes]"),
        ("SELECT * FROM i HAVING x > 1", "1:17", "HAVING without GROUP BY"),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY TumblingWindow(s, 5) HAVING x > 1",
            "1:66",
            "column x is neither in GROUP BY",
        ),
        (
            "WITH s AS (SELECT COUNT(*) AS n FROM i GROUP BY TumblingWindow(s, 5)) "
            "SELECT * FROM s WHERE m > 1",
            "1:93",
            "m is not a column of the step s",
        ),
        (
            "WITH s AS (SELECT COUNT(*) AS n FROM i GROUP BY TumblingWindow(s, 5)) "
            "SELECT SUM(n) AS t FROM s GROUP BY HoppingWindow(s, 10, 5)",
            "1:106",
            "a hopping window over the windowed step s is not supported yet",
        ),
        ("SELECT *, a, * FROM i", "1:14", "SELECT * twice"),
        ("SELECT x.*, a FROM i", "1:8", "x.* names no input of this SELECT"),
        ("SELECT a AS type FROM i", "1:8", "sparktide writes itself"),
        (
            "WITH s AS (SELECT a, b FROM i) SELECT c FROM s",
            "1:39",
            "c is not a column of the step s",
        ),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY DATEPART(second, System.Timestamp()), "
            "TumblingWindow(s, 5)",
            "1:55",
            "System.Timestamp() inside a GROUP BY expression is not supported",
        ),
        ("SELECT a + 1 FROM i", "1:8", "needs a name"),
        ("SELECT COUNT(*) AS n FROM i", "1:8", "COUNT(...) without GROUP BY"),
        ("SELECT COUNT(*) AS n FROM i GROUP BY k", "1:29", "GROUP BY without a window"),
        ("SELECT * FROM i GROUP BY TumblingWindow(s, 5)", "1:8", "SELECT * with GROUP BY"),
        (
            "SELECT k, x FROM i GROUP BY k, TumblingWindow(s, 5)",
            "1:11",
            "column x is neither in GROUP BY",
        ),
        (
            "SELECT SUM(GetArrayElements(v)) AS d FROM i GROUP BY TumblingWindow(s, 5)",
            "1:12",
            "GetArrayElements(...) is not supported yet",
        ),
        ("SELECT COUNT(*) FROM i GROUP BY TumblingWindow(s, 5)", "1:8", "needs a name"),
        (
            "SELECT v * 2 AS d FROM i GROUP BY TumblingWindow(s, 5)",
            "1:8",
            "column v is neither in GROUP BY",
        ),
        (
            "SELECT UPPERCASE(k) AS u FROM i GROUP BY TumblingWindow(s, 5)",
            "1:8",
            "UPPERCASE(...) is not supported",
        ),
        (
            "SELECT CountIf(DISTINCT v) AS c FROM i GROUP BY TumblingWindow(s, 5)",
            "1:8",
            "COUNTIF(DISTINCT ...) is not supported yet",
        ),
        (
            "SELECT TopOne(v) AS c FROM i GROUP BY TumblingWindow(s, 5)",
            "1:8",
            "TOPONE(...) needs OVER (ORDER BY column [ASC|DESC])",
        ),
        (
            "SELECT TopOne() OVER (PARTITION BY k ORDER BY v LIMIT DURATION(second, 5)) AS c "
            "FROM i GROUP BY TumblingWindow(s, 5)",
            "1:17",
            "the analytic form is not supported yet",
        ),
        (
            "SELECT CollectTop(0) OVER (ORDER BY v) AS c FROM i GROUP BY TumblingWindow(s, 5)",
            "1:8",
            "the number of events is an integer of 1 or more",
        ),
        (
            "SELECT Percentile_Cont(1.5) OVER (ORDER BY v) AS c FROM i "
            "GROUP BY TumblingWindow(s, 5)",
            "1:8",
            "the fraction must be from 0 to 1",
        ),
        (
            "SELECT TopOne() OVER (ORDER BY v + 1) AS c FROM i GROUP BY TumblingWindow(s, 5)",
            "1:32",
            "ORDER BY takes column names",
        ),
        (
            "SELECT SUM(v) OVER (ORDER BY v) AS c FROM i GROUP BY TumblingWindow(s, 5)",
            "1:15",
            "the analytic form of an aggregate",
        ),
        (
            "SELECT SUM(COUNT(*)) AS s FROM i GROUP BY TumblingWindow(s, 5)",
            "1:12",
            "COUNT(...) without GROUP BY",
        ),
        ("SELECT SUM(DISTINCT v) AS s FROM i GROUP BY TumblingWindow(s, 5)", "1:8", "SUM(DISTINCT"),
        ("SELECT SUM(*) AS s FROM i GROUP BY TumblingWindow(s, 5)", "1:8", "only COUNT takes *"),
        (
            "SELECT COUNT(*) AS n, SUM(v) AS N FROM i GROUP BY TumblingWindow(s, 5)",
            "1:23",
            "named twice",
        ),
        (
            "SELECT COUNT(*) AS [my n] FROM i GROUP BY TumblingWindow(s, 5)",
            "1:8",
            "'my n' cannot be",
        ),
        (
            "SELECT [a b] FROM i GROUP BY [a b], TumblingWindow(s, 5)",
            "1:30",
            "column 'a b' cannot be",
        ),
        (
            "SELECT * FROM i TIMESTAMP BY LAG(t) OVER (LIMIT DURATION(hour, 1))",
            "1:30",
            "TIMESTAMP BY LAG(...) is not supported: the time is computed from the event's own",
        ),
        ("SELECT * FROM i TIMESTAMP BY System.Timestamp()", "1:30", "TIMESTAMP BY System"),
        (
            "SELECT * FROM i TIMESTAMP BY DATEADD(minute, t, '1970-01-01')",
            "1:49",
            "DATEADD's time '1970-01-01' is not an ISO-8601 date-time with a zone",
        ),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY TumblingWindow(s, 5), SlidingWindow(s, 5)",
            "1:60",
            "second window",
        ),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY TumblingWindow(minute, 7)",
            "1:38",
            "does not divide a day",
        ),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY HoppingWindow(minute, 14, 7)",
            "1:38",
            "does not divide a day",
        ),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY HoppingWindow(minute, 10, 3)",
            "1:38",
            "not a whole number of hops",
        ),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY SessionWindow(minute, 5, 7)",
            "1:38",
            "maximum duration of 7m",
        ),
        (
            "SELECT u, COUNT(*) AS n FROM i GROUP BY u, SessionWindow(minute, 5, 60)",
            "1:44",
            "sessions then span all groups",
        ),
        (
            "SELECT u, COUNT(*) AS n FROM i GROUP BY u, v, "
            "SessionWindow(minute, 5, 60) OVER (PARTITION BY u)",
            "1:95",
            "exactly the GROUP BY columns",
        ),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY MAX(a) + 1, TumblingWindow(s, 5)",
            "1:38",
            "GROUP BY MAX(...): an aggregate",
        ),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY ISFIRST(second, 5) = 1, TumblingWindow(s, 5)",
            "1:38",
            "ISFIRST(...) in GROUP BY is not supported",
        ),
        (
            "SELECT COUNT(*) AS n FROM i GROUP BY a, a, TumblingWindow(s, 5)",
            "1:41",
            "names a twice",
        ),
        (
            "WITH s AS (SELECT * FROM i) SELECT * FROM s TIMESTAMP BY t",
            "1:45",
            "TIMESTAMP BY on the step s",
        ),
        (
            "WITH s AS (SELECT * INTO o FROM i) SELECT * FROM s",
            "1:26",
            "INTO inside the WITH step s",
        ),
        (
            "WITH s AS (SELECT * FROM i WHERE a = 1 + CAST(b AS decimal)) SELECT * FROM s",
            "1:42",
            "CAST(... AS decimal) is not supported yet",
        ),
        (
            "WITH s AS (SELECT COUNT(*) AS n FROM i GROUP BY TumblingWindow(s, 5)) "
            "SELECT COUNT(*) AS m FROM s GROUP BY TumblingWindow(s, 10)",
            "1:78",
            "COUNT(*) over the windowed step s is not supported yet",
        ),
        (
            "WITH s AS (SELECT * FROM i PARTITION BY p) SELECT * FROM s PARTITION BY q",
            "1:73",
            "PARTITION BY q differs",
        ),
        (
            "SELECT k, COUNT(*) AS n FROM i TIMESTAMP BY t OVER d GROUP BY k, TumblingWindow(s, 5)",
            "1:54",
            "must include the substream key 'd'",
        ),
        (
            "SELECT COUNT(*) AS type FROM i GROUP BY TumblingWindow(s, 5)",
            "1:8",
            "sparktide writes itself",
        ),
    ],
)
def test_refusals_name_construct_and_position(text: str, position: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        job(text)
    assert str(caught.value).startswith(f"q.asaql:{position}: "), str(caught.value)
    assert message in str(caught.value)


def write(folder: Path, text: str) -> Path:
    path = folder / "job.toml"
    path.write_text(text, "utf-8")
    return path


def test_bindings_by_name_ignore_case_and_resolve_paths(tmp_path: Path) -> None:
    b = load_bindings(
        write(
            tmp_path,
            '[inputs.TollEntry]\npath = "in/"\narrival_time = "a"\n'
            '[outputs.tollcounts]\npath = "out/"\ncheckpoint = "cp/"\n'
            '[ordering]\nlate_arrival = "10s"\n[window]\nlate = "drop"\n',
        )
    )
    j = job(
        "SELECT COUNT(*) AS n INTO TollCounts FROM tollentry TIMESTAMP BY t "
        "GROUP BY TumblingWindow(s, 5)",
        b,
    )
    assert j.source.path == str(tmp_path / "in") and j.source.arrival_time == "a"
    assert j.output.path == str(tmp_path / "out") and j.output.checkpoint == str(tmp_path / "cp")
    assert j.ordering.late_arrival == 10 * SECOND and j.window.late == "drop"


def test_a_plain_job_file_binds_the_one_input_and_output(tmp_path: Path) -> None:
    b = load_bindings(
        write(tmp_path, '[source]\npath = "in/"\ntimestamp_by = "t"\n[output]\npath = "o/"\n')
    )
    j = job("SELECT * INTO anything FROM whatever TIMESTAMP BY t", b)
    assert j.source.path == str(tmp_path / "in") and j.output.path == str(tmp_path / "o")


@pytest.mark.parametrize(
    ("toml", "query", "key"),
    [
        ('[inputs.x]\npath = "in"\nformat = "xml"\n', "SELECT * FROM x", "inputs.x.format"),
        ('[inputs.x]\nformat = "csv"\n', "SELECT * FROM x", "inputs.x.path"),
        ('[inputs.x]\npath = "in"\nfromat = "csv"\n', "SELECT * FROM x", "inputs.x.fromat"),
        ('[inputs.x]\npath = "in"\n[inputs.X]\npath = "in2"\n', "SELECT * FROM x", "inputs.X"),
        ('[outputs.o]\npath = "a:b"\n', "SELECT * FROM x", "outputs.o.path"),
        ('[window]\ntype = "tumbling"\n', "SELECT * FROM x", "window.type"),
        ("[ordering]\nlate_arrival = 5\n", "SELECT * FROM x", "ordering.late_arrival"),
        ("[querry]\n", "SELECT * FROM x", "querry"),
        ('[source]\npath = "in"\n[inputs.x]\npath = "in"\n', "SELECT * FROM x", "source"),
        (
            '[inputs.x]\npath = "in"\ntimestamp_by = "u"\n',
            "SELECT * FROM x TIMESTAMP BY t",
            "inputs.x.timestamp_by",
        ),
        (
            '[inputs.x]\npath = "in"\n[ordering]\npartitioned = false\n',
            "SELECT * FROM x PARTITION BY p",
            "ordering.partitioned",
        ),
    ],
)
def test_job_file_mistakes_name_the_key(tmp_path: Path, toml: str, query: str, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        job(query, load_bindings(write(tmp_path, toml)))
    assert caught.value.key == key, str(caught.value)


def test_unbound_names_are_refused_at_their_position(tmp_path: Path) -> None:
    b = load_bindings(
        write(
            tmp_path,
            '[inputs.a]\npath = "in"\n[outputs.o]\npath = "out"\n[outputs.p]\npath = "p"\n',
        )
    )
    with pytest.raises(QueryError, match=r"q.asaql:1:15: no input named 'b'.*inputs bound: a"):
        job("SELECT * FROM b", b)
    with pytest.raises(QueryError, match=r"q.asaql:1:15: no output named 'z'"):
        job("SELECT * INTO z FROM a", b)
    with pytest.raises(QueryError, match=r"q.asaql:1:1: this SELECT has no INTO"):
        job("SELECT * FROM a", b)


def test_where_having_and_computed_columns_are_translated() -> None:
    j = job("SELECT * FROM i TIMESTAMP BY t WHERE speed > 50 AND [lane] IN ('A', 'B')")
    assert j.filter is not None and j.filter.where == "speed > 50 AND lane IN ('A', 'B')"
    assert j.window is None and j.select == ()
    # conditions of pass-through steps and of the statement are joined by AND
    j = job(
        "WITH s AS (SELECT * FROM i TIMESTAMP BY t WHERE i.a IS NOT NULL) "
        "SELECT * FROM s WHERE NOT b BETWEEN 1 AND -2.5 OR c LIKE 'x%'"
    )
    assert j.filter.where == "a IS NOT NULL AND (NOT b BETWEEN 1 AND -2.5 OR c LIKE 'x%')"
    j = job(
        "SELECT TollId, System.Timestamp() AS WindowEnd, COUNT(*) AS n, "
        "SUM(Toll) / COUNT(*) AS avgToll, MAX(Toll) - MIN(Toll) AS spread "
        "FROM i TIMESTAMP BY t GROUP BY TollId, TumblingWindow(minute, 3) "
        "HAVING COUNT(*) > 1 AND SUM(Toll) <> 0"
    )
    window = j.window
    assert [(a.name, str(a)) for a in window.aggregates] == [
        ("n", "count(*)"),
        ("_sum_Toll", "sum(Toll)"),
        ("_max_Toll", "max(Toll)"),
        ("_min_Toll", "min(Toll)"),
    ]
    assert window.having == "n > 1 AND _sum_Toll <> 0"
    assert [(p.name, p.expression) for p in j.select] == [
        ("TollId", "TollId"),
        ("WindowEnd", "window_end"),
        ("n", "n"),
        ("avgToll", "_sum_Toll / n"),
        ("spread", "_max_Toll - _min_Toll"),
    ]
    # a renamed grouped column needs [select]; without computed columns there is none
    j = job("SELECT k AS key, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5)")
    assert [(p.name, p.expression) for p in j.select] == [("key", "k"), ("n", "n")]
    j = job("SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5) HAVING COUNT(*) > 2")
    assert j.select == () and j.window.having == "n > 2"
    # projections without a window
    j = job("SELECT a, b AS bee, a * 2 + -b % 3 AS c FROM i TIMESTAMP BY t WHERE a > 0")
    assert [(p.name, p.expression) for p in j.select] == [
        ("a", "a"),
        ("bee", "b"),
        ("c", "a * 2 + -b % 3"),
    ]


def test_group_by_expressions_are_computed_grouping_columns() -> None:
    translation = translate_text(
        "SELECT UPPER(Make) AS Make, COUNT(*) AS Cars FROM i TIMESTAMP BY t "
        "GROUP BY UPPER(Make), LEN(Plate) > 6, TumblingWindow(minute, 1)",
        "asaql",
        None,
        "q.asaql",
    )
    window = translation.job.window
    assert window is not None
    assert window.group_by == ("Make", "_group1")
    assert window.group_expressions == (("Make", "UPPER(Make)"), ("_group1", "LEN(Plate) > 6"))
    assert translation.job.select == ()  # (the SELECT names the grouping column as is)
    assert any("_group1 (not in SELECT)" in note for note in translation.notes)
    text = job_to_toml(translation.job)
    assert 'group_by = [{ Make = "UPPER(Make)" }, { _group1 = "LEN(Plate) > 6" }]' in text


def test_ordered_and_statistical_aggregates() -> None:
    """Semantics §6.12: TopOne, CollectTop, Collect, the percentiles and STDEV/VAR, with
    OVER (ORDER BY ...) read as the job's ``over (order by ...)``; HAVING on one."""
    j = job(
        "SELECT Make, TopOne() OVER (ORDER BY Speed DESC) AS Fastest, "
        "CollectTop(2, LicensePlate) OVER (ORDER BY Speed DESC, Time) AS Top2, "
        "CollectTop(3) OVER (ORDER BY Speed asc) AS Top3, "
        "Collect(LicensePlate) AS Plates, Collect() AS Cars, "
        "PERCENTILE_CONT(0.5) OVER (ORDER BY Speed) AS Median, "
        "Percentile_Disc(1) OVER (ORDER BY Speed DESC) AS Top, "
        "STDEV(Speed) AS Sd, STDEVP(Speed) AS Sdp, VAR(Speed * 2) AS V, VARP(Speed) AS Vp, "
        "TopOne(Speed * 2) OVER (ORDER BY Time) AS First2 "
        "FROM Input TIMESTAMP BY Time GROUP BY Make, TumblingWindow(second, 10) "
        "HAVING STDEV(Speed) > 1"
    )
    w = j.window
    assert [str(a) for a in w.aggregates] == [
        "topone() over (order by Speed desc)",
        "collecttop(2, LicensePlate) over (order by Speed desc, Time asc)",
        "collecttop(3) over (order by Speed asc)",
        "collect(LicensePlate)",
        "collect()",
        "percentile_cont(0.5) over (order by Speed asc)",
        "percentile_disc(1.0) over (order by Speed desc)",
        "stdev(Speed)",
        "stdevp(Speed)",
        "var(Speed * 2)",
        "varp(Speed)",
        "topone(Speed * 2) over (order by Time asc)",
    ]
    assert w.having == "Sd > 1"


def test_an_ordered_aggregate_orders_by_a_value_inside_a_record() -> None:
    """``OVER (ORDER BY Reading.Speed DESC)`` orders by the value inside the record
    (semantics §6.12); a percentile's order column, whose values it takes, stays a
    column of the record."""
    j = job(
        "SELECT TopOne() OVER (ORDER BY i.Reading.Speed DESC, Time) AS Fastest, "
        "CollectTop(2, Plate) OVER (ORDER BY Reading.Lane) AS Two "
        "FROM Input i TIMESTAMP BY Time GROUP BY TumblingWindow(second, 10)"
    )
    assert j.window is not None
    assert [str(a) for a in j.window.aggregates] == [
        "topone() over (order by Reading.Speed desc, Time asc)",
        "collecttop(2, Plate) over (order by Reading.Lane asc)",
    ]
    assert j.window.aggregates[0].columns == ("Reading", "Time")
    with pytest.raises(QueryError, match=r"window\.aggregates\.m\.order_by: must be a column"):
        job(
            "SELECT Percentile_Cont(0.5) OVER (ORDER BY Reading.Speed) AS m FROM Input "
            "GROUP BY TumblingWindow(second, 10)"
        )


def test_dot_notation_and_metadata_read_into_records() -> None:
    """``r.a.b`` is ``GetRecordPropertyValue(r, 'a.b')`` (a part with a dot bracketed);
    ``GetMetadataPropertyValue`` is the field the job names (semantics §11.14, §11.15)."""
    j = job("SELECT i.r.a.b, r.[x.y] AS xy INTO o FROM i WHERE r.a.c > 1")
    assert j.filter is not None
    assert j.filter.where == "GETRECORDPROPERTYVALUE(r, 'a.c') > 1"
    assert [(p.name, p.expression) for p in j.select] == [
        ("b", "GETRECORDPROPERTYVALUE(r, 'a.b')"),
        ("xy", "GETRECORDPROPERTYVALUE(r, '[x.y]')"),
    ]
    j = job(
        "SELECT GetMetadataPropertyValue(i, 'partitionid') AS p INTO o "
        "FROM i TIMESTAMP BY t PARTITION BY PartitionId"
    )
    assert [(p.name, p.expression) for p in j.select] == [("p", "PartitionId")]


def test_star_beside_computed_columns_writes_the_records_fields_there() -> None:
    """``SELECT *, expr AS c`` (semantics §11.16): ``"*" = "*"`` where the ``*`` stands."""
    j = job("SELECT UPPER(Make) AS Make, i.*, Speed * 2 AS Double FROM i TIMESTAMP BY t")
    assert [(p.name, p.expression) for p in j.select] == [
        ("Make", "UPPER(Make)"),
        ("Double", "Speed * 2"),
    ]
    assert j.select_star == 1
    assert job("SELECT * FROM i").select_star is None and not job("SELECT * FROM i").select
    composed = job("WITH s AS (SELECT v * 2 AS w, * FROM i) SELECT *, w + 1 AS x FROM s")
    assert [(p.name, p.expression) for p in composed.select] == [
        ("w", "v * 2"),
        ("x", "v * 2 + 1"),
    ]
    assert composed.select_star == 1


def test_system_timestamp_without_a_window_is_the_events_timestamp() -> None:
    """``System.Timestamp()`` in an event statement (semantics §11.17): the expression
    language's ``System.Timestamp()``, in ``[filter]`` and ``[select]``."""
    j = job(
        "SELECT System.Timestamp() AS ts, DATEDIFF(second, t, System.Timestamp()) AS d "
        "FROM i TIMESTAMP BY t WHERE System.Timestamp() > '2026-03-01T09:00:00Z'"
    )
    assert j.filter is not None
    assert j.filter.where == "System.Timestamp() > '2026-03-01T09:00:00Z'"
    assert [(p.name, p.expression) for p in j.select] == [
        ("ts", "System.Timestamp()"),
        ("d", "DATEDIFF(second, t, System.Timestamp())"),
    ]
    windowed = job(
        "SELECT System.Timestamp() AS ts, COUNT(*) AS n FROM i TIMESTAMP BY t "
        "GROUP BY TumblingWindow(minute, 1)"
    )
    assert windowed.window is not None  # (over a window it is the window's end, as before)
    assert "System.Timestamp()" not in job_to_toml(windowed)


def test_group_by_a_value_inside_a_record() -> None:
    """``GROUP BY IoTHub.ConnectionDeviceId`` (semantics §6.13): a computed grouping
    column reading into the record, named by the SELECT's alias, else by its last part,
    and read by that name where the SELECT names the same value."""
    named = job(
        "SELECT IoTHub.ConnectionDeviceId AS device, COUNT(*) AS n FROM i "
        "GROUP BY IoTHub.ConnectionDeviceId, TumblingWindow(s, 5)"
    )
    assert named.window is not None
    assert named.window.group_by == ("device",)
    assert named.window.group_expressions == (
        ("device", "GETRECORDPROPERTYVALUE(IoTHub, 'ConnectionDeviceId')"),
    )
    unnamed = job("SELECT i.r.a.b, COUNT(*) AS n FROM i GROUP BY r.a.b, TumblingWindow(s, 5)")
    assert unnamed.window is not None
    assert unnamed.window.group_expressions == (("b", "GETRECORDPROPERTYVALUE(r, 'a.b')"),)
    assert unnamed.select == ()  # (the window's record is the SELECT: b, then n)
    assert unnamed.window.result_columns[:1] == ("b",)


def test_a_session_over_a_value_inside_a_record() -> None:
    """``SessionWindow(...) OVER (PARTITION BY r.a)`` with ``GROUP BY r.a``: the PARTITION BY
    names the computed grouping column by its value (or by its name)."""
    for over in ("IoTHub.ConnectionDeviceId", "d"):
        j = job(
            "SELECT IoTHub.ConnectionDeviceId AS d, COUNT(*) AS n FROM i TIMESTAMP BY t "
            "GROUP BY IoTHub.ConnectionDeviceId, SessionWindow(minute, 5, 30) "
            f"OVER (PARTITION BY {over})"
        )
        assert j.window is not None and j.window.type == "session"
        assert j.window.group_by == ("d",)
    with pytest.raises(QueryError, match="must name exactly the GROUP BY columns"):
        job(
            "SELECT COUNT(*) AS n FROM i GROUP BY r.a, SessionWindow(minute, 5, 30) "
            "OVER (PARTITION BY r.b)"
        )


def test_system_timestamp_inside_an_aggregate_is_each_event_s() -> None:
    """``MAX(System.Timestamp())`` in a window (semantics §6.12): each event's own system
    timestamp, aggregated; outside an aggregate it stays the window's end."""
    j = job(
        "SELECT k, MAX(System.Timestamp()) AS last, System.Timestamp() AS endsAt, "
        "DATEDIFF(second, MIN(System.Timestamp()), MAX(System.Timestamp())) AS span "
        "FROM i TIMESTAMP BY t GROUP BY k, TumblingWindow(second, 10)"
    )
    assert j.window is not None
    assert [(a.name, a.function, a.expression) for a in j.window.aggregates] == [
        ("last", "max", "System.Timestamp()"),
        ("_min", "min", "System.Timestamp()"),
    ]
    assert [(p.name, p.expression) for p in j.select][2:] == [
        ("endsAt", "window_end"),
        ("span", "DATEDIFF(second, _min, last)"),
    ]


def test_countif_is_count_if_of_its_condition() -> None:
    """``CountIf(condition)`` (semantics §6.12): the window's ``count_if``."""
    j = job(
        "SELECT k, CountIf(v > 1 AND w IS NULL) AS c, COUNTIF(flag) AS f FROM i "
        "GROUP BY k, TumblingWindow(s, 5)"
    )
    assert j.window is not None
    assert [str(a) for a in j.window.aggregates] == [
        "count_if(v > 1 AND w IS NULL)",
        "count_if(flag)",
    ]


def test_coalesce_translates_in_select_where_and_aggregates() -> None:
    """``COALESCE`` (semantics §11.11) is the expression language's own, wherever a
    scalar function goes; one argument is refused as Stream Analytics refuses it."""
    j = job("SELECT Make, COALESCE(Speed, Limit, 0) AS s FROM i WHERE COALESCE(Toll, 0) > 2")
    assert [(p.name, p.expression) for p in j.select] == [
        ("Make", "Make"),
        ("s", "COALESCE(Speed, Limit, 0)"),
    ]
    assert j.filter is not None and j.filter.where == "COALESCE(Toll, 0) > 2"
    w = job(
        "SELECT SUM(COALESCE(Toll, 0)) AS total FROM i TIMESTAMP BY t "
        "GROUP BY TumblingWindow(minute, 1)"
    ).window
    assert w is not None and w.aggregates[0].expression == "COALESCE(Toll, 0)"
    with pytest.raises(QueryError, match=r"COALESCE.*takes 2 or more arguments; got 1"):
        job("SELECT COALESCE(Toll) AS t FROM i")
