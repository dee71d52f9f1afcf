"""The Stream Analytics query parser: every construct of the subset, every syntax error
with its position."""

from __future__ import annotations

import pytest

from sparktide.errors import QueryError, SparktideError
from sparktide.query import translate_text
from sparktide.query.asaql import TIME_UNITS, parse_query
from sparktide.query.ast import Call, Column, Literal, Operation, Pos, Select, Star
from sparktide.time import DAY, HOUR, MILLISECOND, MINUTE, SECOND


def select(text: str) -> Select:
    return parse_query(text, "q.asaql").statements[0].selects[0]


def window(group_by: str):  # type: ignore[no-untyped-def]
    item = select(f"SELECT COUNT(*) AS n FROM i GROUP BY {group_by}").group_by[0]
    assert item.window is not None
    return item.window


def test_select_into_from_timestamp_by_over_partition_by() -> None:
    s = select(
        "SELECT * INTO [Out put] FROM Input AS i TIMESTAMP BY EntryTime OVER TollId "
        "PARTITION BY PartitionId"
    )
    assert isinstance(s.items[0].expr, Star)
    assert s.into == "Out put" and s.into_pos == Pos(1, 15)
    src = s.source
    assert (src.name, src.alias) == ("Input", "i")
    assert src.timestamp_by == Column(("EntryTime",), Pos(1, 54))
    assert [c.name for c in src.over] == ["TollId"]
    assert src.partition_by is not None and src.partition_by.name == "PartitionId"
    assert src.timestamp_pos == Pos(1, 41) and src.partition_pos == Pos(1, 76)


def test_partition_by_may_come_before_timestamp_by() -> None:
    """Stream Analytics' FROM reference writes ``PARTITION BY`` first, ``TIMESTAMP BY``
    after it; its examples write both orders: the same source either way."""
    first = select("SELECT * FROM Input i PARTITION BY PartitionId TIMESTAMP BY t OVER k").source
    second = select("SELECT * FROM Input i TIMESTAMP BY t OVER k PARTITION BY PartitionId").source
    assert first.partition_by is not None and first.partition_by.name == "PartitionId"
    assert first.timestamp_by == Column(("t",), Pos(1, 61))
    assert [c.name for c in first.over] == ["k"]
    assert first.partition_pos == Pos(1, 23) and first.timestamp_pos == Pos(1, 48)
    assert (first.name, first.alias) == (second.name, second.alias) == ("Input", "i")
    assert second.partition_by is not None and second.partition_by.name == "PartitionId"
    assert [c.name for c in second.over] == ["k"]
    with pytest.raises(QueryError, match="PARTITION"):
        select("SELECT * FROM Input PARTITION BY p TIMESTAMP BY t PARTITION BY q")


def test_keywords_ignore_case_comments_and_brackets() -> None:
    s = select(
        "-- a comment\nsElEcT [Toll Id], count(*) as [n]  /* block\ncomment */ fRoM [my input] "
        "timestamp by [t]]x] group BY [Toll Id], tumblingwindow(MINUTE, 3)"
    )
    assert s.items[0].expr == Column(("Toll Id",), Pos(2, 8))
    assert s.items[1].alias == "n"
    assert s.source.name == "my input"
    assert s.source.timestamp_by == Column(("t]x",), Pos(3, 41))
    assert s.pos == Pos(2, 1)


def test_select_list_expressions() -> None:
    s = select(
        "SELECT i.*, a.b AS c, System.Timestamp() AS t, System.Timestamp AS u, COUNT(*) AS n, "
        "COUNT(DISTINCT x) AS d, a + b * 2 AS e, -a AS f, CAST(a AS float) AS g, "
        "CASE WHEN a > 1 THEN 'x' ELSE 'y' END AS h, 'it''s' AS s, NULL AS z, TRUE AS y "
        "FROM i"
    )
    exprs = [item.expr for item in s.items]
    assert exprs[0] == Star("i", Pos(1, 8))
    assert exprs[1] == Column(("a", "b"), Pos(1, 13))
    assert isinstance(exprs[2], Call) and exprs[2].function == "system.timestamp"
    assert exprs[3] == Column(("System", "Timestamp"), Pos(1, 48))
    assert isinstance(exprs[4], Call) and exprs[4].star
    assert isinstance(exprs[5], Call) and exprs[5].distinct and exprs[5].args[0].name == "x"  # type: ignore[union-attr]
    assert isinstance(exprs[6], Operation) and exprs[6].operator == "+"
    assert isinstance(exprs[6].operands[1], Operation) and exprs[6].operands[1].operator == "*"
    assert isinstance(exprs[7], Operation) and exprs[7].kind == "sign"
    assert isinstance(exprs[8], Operation) and exprs[8].kind == "CAST"
    assert isinstance(exprs[9], Operation) and exprs[9].kind == "CASE"
    assert exprs[10] == Literal("it's", exprs[10].pos)
    assert [exprs[11].value, exprs[12].value] == [None, True]  # type: ignore[union-attr]


def test_where_having_and_predicates() -> None:
    s = select(
        "SELECT COUNT(*) AS n FROM i WHERE a >= 1 AND (b <> 2 OR NOT c LIKE 'x%') "
        "AND d NOT BETWEEN 1 AND 2 AND e IS NOT NULL AND f IN (1, 2) "
        "GROUP BY TumblingWindow(s, 5) HAVING COUNT(*) > 3"
    )
    assert s.where is not None and s.where.pos == Pos(1, 29)
    kinds: list[str] = []

    def walk(e: object) -> None:
        if isinstance(e, Operation):
            kinds.append(e.operator)
            for o in e.operands:
                walk(o)

    walk(s.where.expr)
    assert {">=", "<>", "OR", "NOT", "LIKE", "NOT BETWEEN", "IS NOT NULL", "IN", "AND"} <= set(
        kinds
    )
    assert s.having is not None and s.having.pos.column > s.where.pos.column


def test_with_steps_several_statements_union_join() -> None:
    q = parse_query(
        "WITH a AS (SELECT * FROM x TIMESTAMP BY t), b AS (SELECT * FROM a)\n"
        "SELECT * INTO o1 FROM b;\n"
        "SELECT * INTO o2 FROM a UNION ALL SELECT * FROM b\n"
        "SELECT * INTO o3 FROM x X TIMESTAMP BY t JOIN y Y TIMESTAMP BY u "
        "ON X.k = Y.k AND DATEDIFF(minute, X, Y) BETWEEN 0 AND 15",
        "q.asaql",
    )
    assert [s.name for s in q.steps] == ["a", "b"]
    assert len(q.statements) == 3
    union = q.statements[1]
    assert len(union.selects) == 2 and union.union_pos == (Pos(3, 25),)
    join = q.statements[2].selects[0].joins[0]
    assert join.kind == "INNER" and join.source.name == "y" and join.pos == Pos(4, 42)
    cond = join.condition
    assert isinstance(cond, Operation) and cond.operator == "AND"
    between = cond.operands[1]
    assert isinstance(between, Operation) and between.kind == "BETWEEN"
    datediff = between.operands[0]
    assert isinstance(datediff, Call) and datediff.function == "datediff"


@pytest.mark.parametrize(
    ("group_by", "kind", "size", "hop", "offset"),
    [
        ("TumblingWindow(minute, 5)", "tumbling", 5 * MINUTE, None, None),
        ("Tumbling(second, 10, 2)", "tumbling", 10 * SECOND, None, 2 * SECOND),
        (
            "TUMBLINGWINDOW(Duration(hour, 1), Offset(millisecond, -1))",
            "tumbling",
            HOUR,
            None,
            -MILLISECOND,
        ),
        ("HoppingWindow(second, 10, 5)", "hopping", 10 * SECOND, 5 * SECOND, None),
        ("Hopping(mi, 10, 5, 1)", "hopping", 10 * MINUTE, 5 * MINUTE, MINUTE),
        (
            "HoppingWindow(Duration(hh, 1), Hop(n, 5), Offset(ss, 3))",
            "hopping",
            HOUR,
            5 * MINUTE,
            3 * SECOND,
        ),
        ("SlidingWindow(second, 30)", "sliding", 30 * SECOND, None, None),
        ("Sliding(Duration(d, 1))", "sliding", DAY, None, None),
        ("TumblingWindow(second, 1.5)", "tumbling", 1_500_000, None, None),
    ],
)
def test_windows_both_forms(
    group_by: str, kind: str, size: int, hop: int | None, offset: int | None
) -> None:
    w = window(group_by)
    assert (w.kind, w.size, w.hop, w.offset) == (kind, size, hop, offset)


def test_session_and_snapshot_windows() -> None:
    w = window("SessionWindow(minute, 2, 60) OVER (PARTITION BY u)")
    assert (w.kind, w.timeout, w.max_duration) == ("session", 2 * MINUTE, HOUR)
    assert [c.name for c in w.partition_by] == ["u"]
    w = window("Session(Timeout(second, 30), MaxDuration(minute, 10))")
    assert (w.timeout, w.max_duration, w.partition_by) == (30 * SECOND, 10 * MINUTE, ())
    assert window("SnapshotWindow()").kind == "snapshot"
    assert window("System.Timestamp()").kind == "snapshot"


@pytest.mark.parametrize("unit", sorted(TIME_UNITS))
def test_every_time_unit(unit: str) -> None:
    assert window(f"TumblingWindow({unit}, 2)").size == 2 * TIME_UNITS[unit]
    assert window(f"TumblingWindow({unit.upper()}, 2)").size == 2 * TIME_UNITS[unit]


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("SELECT * FROM", "1:14", "unexpected end of the query"),
        ('SELECT "a" FROM x', "1:8", "unexpected character '\"'"),
        ("SELECT * FROM x WHERE", "1:22", "unexpected end of the query"),
        ("SELECT * FROM x\nGROUP x", "2:7", "unexpected 'x'"),
        ("SELECT a b c FROM x", "1:12", "unexpected 'c'"),
        ("SELECT * FROM x ORDER BY a", "1:23", "unexpected 'BY'"),
        (
            "SELECT * FROM x GROUP BY TumblingWindow(fortnight, 5)",
            "1:41",
            "unknown time unit 'fortnight'",
        ),
        ("SELECT * FROM x GROUP BY TumblingWindow(year, 1)", "1:41", "unknown time unit 'year'"),
        ("SELECT * FROM x GROUP BY TumblingWindow(minute, 0)", "1:49", "greater than zero"),
        ("SELECT * FROM x GROUP BY TumblingWindow(minute, -5)", "1:49", "greater than zero"),
        ("SELECT * FROM x GROUP BY TumblingWindow(minute, x)", "1:49", "expected a number"),
        (
            "SELECT * FROM x GROUP BY TumblingWindow(ms, 1.0005)",
            "1:45",
            "not a whole number of microseconds",
        ),
        ("SELECT * FROM x GROUP BY TumblingWindow(day, 8)", "1:26", "at most 7 days"),
        (
            "SELECT * FROM x GROUP BY TumblingWindow(minute)",
            "1:26",
            "takes 2 or 3 arguments, got 1",
        ),
        ("SELECT * FROM x GROUP BY SessionWindow(minute, 5)", "1:26", "takes 3 arguments, got 2"),
        ("SELECT * FROM x GROUP BY SnapshotWindow(1)", "1:26", "takes no arguments"),
        (
            "SELECT * FROM x GROUP BY k, Windows(TumblingWindow(hour, 1), TumblingWindow(day, 1))",
            "1:29",
            "Windows(...) is not supported yet: a job has one window",
        ),
        (
            "SELECT * FROM x GROUP BY HoppingWindow(Duration(minute, 5))",
            "1:26",
            "needs Hop(timeunit, size)",
        ),
        (
            "SELECT * FROM x GROUP BY HoppingWindow(Hop(minute, 1), Duration(minute, 5))",
            "1:56",
            "out of place",
        ),
        (
            "SELECT * FROM x GROUP BY TumblingWindow(Duration(minute, 5), Hop(minute, 1))",
            "1:62",
            "takes Duration, Offset",
        ),
        (
            "SELECT * FROM x GROUP BY TumblingWindow(Duration(minute), Offset(s, 1))",
            "1:41",
            "takes 2 arguments",
        ),
        (
            "SELECT * FROM x GROUP BY TumblingWindow(minute, 5) OVER (PARTITION BY a)",
            "1:71",
            "SessionWindow only",
        ),
        ("SELECT * FROM x GROUP BY a OVER (PARTITION BY a)", "1:28", "SessionWindow only"),
    ],
)
def test_refusals_name_their_position(text: str, position: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        parse_query(text, "q.asaql")
    error = caught.value
    assert str(error).startswith(f"q.asaql:{position}: "), str(error)
    assert message in str(error)
    assert isinstance(error, SparktideError)
    assert f"{error.line}:{error.column}" == position


def test_an_alias_may_follow_its_expression_without_as() -> None:
    """``expression [ [ AS ] column_alias ]`` (Stream Analytics' SELECT reference)."""
    j = translate_text("SELECT a b, v + 1 [Next] FROM x", "asaql", None, "q.asaql").job
    assert [(p.name, p.expression) for p in j.select] == [("b", "a"), ("Next", "v + 1")]
