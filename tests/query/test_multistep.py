"""Multi-step queries (issue 28.4): the step graph, and WITH steps that filter, project
or window composed with the SELECTs that read them (semantics §13), checked on the
jobs they become and on data."""

from __future__ import annotations

import dataclasses
import io
import textwrap
from pathlib import Path

import pytest

from sparktide.cli import main
from sparktide.core.engine import simulate
from sparktide.errors import QueryError
from sparktide.job import Job
from sparktide.query import Translation, load_bindings, parse_query, translate_text
from sparktide.query.graph import NODE_KINDS, step_graph
from sparktide.reader import parse_fields
from sparktide.time import SECOND, parse_instant
from tests.test_transcripts import TRANSCRIPTS, build_job, load

CORPUS = Path(__file__).parent / "corpus"


def translate(text: str) -> Translation:
    return translate_text(text, "asaql", None, "q.asaql")


def job(text: str) -> Job:
    return translate(text).job


def tables(j: Job) -> tuple[str | None, dict[str, str]]:
    """The job's filter and its [select], as text."""
    where = j.filter.where if j.filter is not None else None
    return where, {p.name: p.expression for p in j.select}


def run(j: Job, rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The records the reference engine writes for ``rows`` (each enqueued at its time)."""
    records = [
        parse_fields(seq, row, j.source, default_arrival=parse_instant(str(row["t"])) + SECOND)
        for seq, row in enumerate(rows)
    ]
    result = simulate(j, records)
    return [
        {k: v for k, v in r.items() if k not in ("type", "emitted_at")}
        for r in result.windows + result.events
    ]


# -------------------------------------------------------------------- the graph


def test_the_graph_has_a_node_per_operation_and_shares_a_step() -> None:
    query = parse_query(
        "WITH a AS (SELECT k, v * 2 AS w FROM i TIMESTAMP BY t WHERE v > 1),\n"
        "u AS (SELECT * FROM a UNION SELECT k, v AS w FROM j TIMESTAMP BY t)\n"
        "SELECT k, w INTO o1 FROM a WHERE w > 4\n"
        "SELECT k, COUNT(*) AS n INTO o2 FROM u GROUP BY TumblingWindow(s, 5), k\n"
        "SELECT e.k, x.w INTO o3 FROM a e JOIN j x TIMESTAMP BY t ON e.k = x.k "
        "AND DATEDIFF(s, e, x) BETWEEN 0 AND 5",
        "q.asaql",
    )
    graph = step_graph(query)
    assert [(n.id, n.kind, n.inputs, n.step) for n in graph.nodes] == [
        ("n1", "input", (), None),
        ("n2", "filter", ("n1",), "a"),
        ("n3", "project", ("n2",), "a"),
        ("n4", "input", (), None),
        ("n5", "project", ("n4",), "u"),
        ("n6", "union", ("n3", "n5"), "u"),
        ("n7", "filter", ("n3",), None),
        ("n8", "project", ("n7",), None),
        ("n9", "output", ("n8",), None),
        ("n10", "window", ("n6",), None),
        ("n11", "output", ("n10",), None),
        ("n12", "join", ("n3", "n4"), None),
        ("n13", "project", ("n12",), None),
        ("n14", "output", ("n13",), None),
    ]
    assert {n.kind for n in graph.nodes} == set(NODE_KINDS)
    labels = [n.label for n in graph.nodes]
    assert labels[0] == "i TIMESTAMP BY t"
    assert labels[1] == "WHERE v > 1"
    assert labels[2] == "k, v * 2 AS w"
    assert labels[9] == "GROUP BY tumbling(size 5s), k: k, COUNT(*) AS n"
    assert labels[10] == "INTO o2"
    assert labels[11] == "INNER JOIN ON (e.k = x.k) AND (DATEDIFF(s, e, x) BETWEEN 0 AND 5)"
    assert graph.text().splitlines()[2] == "n3 project <- n2  k, v * 2 AS w  [step a, 1:12]"


def test_translate_graph_prints_the_graph_as_comments_before_the_jobs() -> None:
    out = io.StringIO()
    case = CORPUS / "asa_multistep_trucks"
    code = main(
        ["translate", str(case / "query.asaql"), "--job", str(case / "job.toml"), "--graph"],
        stdout=out,
    )
    assert code == 0
    lines = out.getvalue().splitlines()
    assert lines[:4] == [
        "# step graph",
        "# n1 input  TollEntry TIMESTAMP BY EntryTime  [8:10]",
        "# n2 filter <- n1  WHERE Axles >= 3  [step Trucks, 9:5]",
        "# n3 project <- n2  TollId, LicensePlate AS Plate, Toll, Toll / Axles AS TollPerAxle  "
        "[step Trucks, 7:5]",
    ]
    assert "# n8 output <- n7  INTO PerBooth  [18:6]" in lines
    assert "# === statement 1 of 2 (line 11): INTO Expensive ===" in lines


# ---------------------------------------------------------- stateless steps


def test_a_where_over_a_computed_column_is_over_its_expression() -> None:
    j = job(
        "WITH a AS (SELECT k, v * 2 AS w, u AS name FROM i TIMESTAMP BY t WHERE v > 1)\n"
        "SELECT name, w, k INTO o FROM a WHERE w > 4 AND a.name <> 'x'"
    )
    assert tables(j) == (
        "v > 1 AND (v * 2 > 4 AND u <> 'x')",
        {"name": "u", "w": "v * 2", "k": "k"},
    )
    rows = [
        {"k": 1, "v": 1, "u": "p", "t": "2026-03-01T09:00:01Z"},  # v > 1 fails
        {"k": 2, "v": 3, "u": "q", "t": "2026-03-01T09:00:02Z"},  # w = 6: written
        {"k": 3, "v": 2, "u": "r", "t": "2026-03-01T09:00:03Z"},  # w = 4: not > 4
        {"k": 4, "v": 5, "u": "x", "t": "2026-03-01T09:00:04Z"},  # name = 'x'
    ]
    assert run(j, rows) == [{"name": "q", "w": 6, "k": 2, "timestamp": "2026-03-01T09:00:02Z"}]


def test_steps_chain_and_each_select_reads_only_the_step_s_columns() -> None:
    j = job(
        "WITH a AS (SELECT k, v + 1 AS w FROM i TIMESTAMP BY t),\n"
        "b AS (SELECT k AS key, w * 10 AS z FROM a WHERE w > 2),\n"
        "c AS (SELECT * FROM b WHERE z < 100)\n"
        "SELECT key, z - 1 AS y INTO o FROM c"
    )
    assert tables(j) == (
        "v + 1 > 2 AND (v + 1) * 10 < 100",
        {"key": "k", "y": "(v + 1) * 10 - 1"},
    )
    with pytest.raises(QueryError, match=r"^q.asaql:2:34: v is not a column of the step a$"):
        translate("WITH a AS (SELECT k, v + 1 AS w FROM i)\nSELECT k INTO o FROM a WHERE w > v")


def test_select_star_over_a_projecting_step_is_its_columns() -> None:
    assert tables(job("WITH a AS (SELECT k, v * 2 AS w FROM i) SELECT * INTO o FROM a")) == (
        None,
        {"k": "k", "w": "v * 2"},
    )


def test_a_window_over_a_projecting_step_aggregates_its_expressions() -> None:
    j = job(
        "WITH a AS (SELECT k AS booth, v * 2 AS w FROM i TIMESTAMP BY t WHERE v > 0)\n"
        "SELECT booth, SUM(w) AS s, COUNT(*) AS n INTO o FROM a\n"
        "GROUP BY booth, TumblingWindow(second, 10) HAVING SUM(w) > 2"
    )
    assert j.window is not None and j.window.group_by == ("k",)
    assert [(a.name, a.function, a.expression) for a in j.window.aggregates] == [
        ("s", "sum", "v * 2"),
        ("n", "count", None),
    ]
    assert j.window.having == "s > 2"
    rows = [
        {"k": 1, "v": 1, "t": "2026-03-01T09:00:01Z"},
        {"k": 1, "v": 3, "t": "2026-03-01T09:00:02Z"},
        {"k": 2, "v": 1, "t": "2026-03-01T09:00:03Z"},  # s = 2: not > 2
        {"k": 2, "v": 0, "t": "2026-03-01T09:00:04Z"},  # v > 0 fails
    ]
    assert run(j, rows) == [
        {
            "booth": 1,
            "s": 8,
            "n": 2,
            "window_start": "2026-03-01T09:00:00Z",
            "window_end": "2026-03-01T09:00:10Z",
        }
    ]


def test_a_window_groups_by_a_column_its_step_computes() -> None:
    j = job(
        "WITH a AS (SELECT k AS key, v * 2 AS w FROM i TIMESTAMP BY t)\n"
        "SELECT w, COUNT(*) AS n, MAX(key) AS top INTO o FROM a\n"
        "GROUP BY TumblingWindow(second, 10), w"
    )
    assert j.window is not None
    assert j.window.group_by == ("w",)
    assert j.window.group_expressions == (("w", "v * 2"),)
    rows = [
        {"k": 1, "v": 1, "t": "2026-03-01T09:00:01Z"},
        {"k": 2, "v": 1, "t": "2026-03-01T09:00:02Z"},
        {"k": 3, "v": 1.5, "t": "2026-03-01T09:00:03Z"},
        {"k": 4, "v": 1.0, "t": "2026-03-01T09:00:04Z"},  # 2.0 is not 2 (semantics §6.13)
    ]
    window = {"window_start": "2026-03-01T09:00:00Z", "window_end": "2026-03-01T09:00:10Z"}
    assert sorted(run(j, rows), key=lambda r: (r["w"], type(r["w"]).__name__)) == [
        {"w": 2.0, **window, "n": 1, "top": 4},
        {"w": 2, **window, "n": 2, "top": 2},
        {"w": 3.0, **window, "n": 1, "top": 3},
    ]


def test_several_statements_read_one_computing_step() -> None:
    t = translate(
        "WITH a AS (SELECT k, v * 2 AS w FROM i TIMESTAMP BY t WHERE v > 1)\n"
        "SELECT k, w INTO o1 FROM a WHERE w > 4\n"
        "SELECT k, w + 1 AS x INTO o2 FROM a"
    )
    first, second = t.jobs
    assert tables(first) == ("v > 1 AND v * 2 > 4", {"k": "k", "w": "v * 2"})
    assert tables(second) == ("v > 1", {"k": "k", "x": "v * 2 + 1"})
    assert first.source == second.source


def test_columns_over_a_join_step() -> None:
    j = job(
        "WITH m AS (SELECT e.k, x.u AS ExitTime, DATEDIFF(second, e.t, x.u) AS d\n"
        "FROM e TIMESTAMP BY t JOIN x TIMESTAMP BY u ON e.k = x.k\n"
        "AND DATEDIFF(second, e, x) BETWEEN 0 AND 60)\n"
        "SELECT k, d * 1000 AS ms INTO o FROM m"
    )
    assert j.join is not None and j.join.on == ("k",)
    assert tables(j) == (None, {"k": "e.k", "ms": "DATEDIFF(second, e.t, x.u) * 1000"})


def test_an_analytic_function_over_a_step_without_where_sees_every_event() -> None:
    j = job(
        "WITH a AS (SELECT k, v * 2 AS w FROM i TIMESTAMP BY t)\n"
        "SELECT k, LAG(w) OVER (LIMIT DURATION(minute, 1)) AS prev INTO o FROM a WHERE w > 2"
    )
    assert [a.name for a in j.analytics] == ["_lag1"]
    rows = [
        {"k": 1, "v": 1, "t": "2026-03-01T09:00:01Z"},  # w = 2: filtered, still LAG's
        {"k": 2, "v": 2, "t": "2026-03-01T09:00:02Z"},
    ]
    assert run(j, rows) == [{"k": 2, "prev": 2, "timestamp": "2026-03-01T09:00:02Z"}]


def test_a_join_of_steps_that_shape_their_streams_joins_their_inputs() -> None:
    j = job(
        "WITH a AS (SELECT k, v * 2 AS w, t FROM e TIMESTAMP BY t),\n"
        "b AS (SELECT *, u AS until FROM x TIMESTAMP BY u)\n"
        "SELECT a.k, a.w, b.until, b.other, DATEDIFF(second, a.t, b.u) AS d INTO o\n"
        "FROM a JOIN b ON a.k = b.k AND DATEDIFF(second, a, b) BETWEEN 0 AND 60"
    )
    assert j.join is not None and (j.join.left, j.join.right, j.join.on) == ("e", "x", ("k",))
    assert tables(j) == (
        None,
        {
            "k": "e.k",
            "w": "e.v * 2",
            "until": "x.u",
            "other": "x.other",
            "d": "DATEDIFF(second, e.t, x.u)",
        },
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "WITH a AS (SELECT k, v FROM e TIMESTAMP BY t)\n"
            "SELECT a.k, a.z INTO o FROM a JOIN x TIMESTAMP BY u\n"
            "ON a.k = x.k AND DATEDIFF(second, a, x) BETWEEN 0 AND 60",
            "2:13: a.z is not a column of the step a",
        ),
        (
            "WITH a AS (SELECT k, System.Timestamp() AS at FROM e TIMESTAMP BY t)\n"
            "SELECT a.k INTO o FROM a JOIN x TIMESTAMP BY u\n"
            "ON a.k = x.k AND DATEDIFF(second, a, x) BETWEEN 0 AND 60",
            "2:24: a JOIN of the step a is not supported yet",
        ),
    ],
)
def test_a_join_of_a_step_that_reads_its_time_is_refused(text: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        translate(text)
    assert str(caught.value).startswith(f"q.asaql:{message}"), str(caught.value)


def test_a_join_of_a_step_that_filters_reads_its_input_with_the_step_s_where() -> None:
    """Semantics §11.20: the step's WHERE is its input's own ``where``."""
    j = job(
        "WITH a AS (SELECT k, v FROM e TIMESTAMP BY t WHERE v > 1)\n"
        "SELECT a.k INTO o FROM a JOIN x TIMESTAMP BY u\n"
        "ON a.k = x.k AND DATEDIFF(second, a, x) BETWEEN 0 AND 60"
    )
    assert [(n, s.where) for n, s in j.inputs] == [("e", "v > 1"), ("x", None)]
    # its System.Timestamp() is the event's (not the match's): the input's where whole
    timed = job(
        "WITH a AS (SELECT k, v FROM e TIMESTAMP BY t\n"
        "  WHERE DATEPART(second, System.Timestamp()) > 1 AND v > 0)\n"
        "SELECT a.k INTO o FROM a JOIN x TIMESTAMP BY u\n"
        "ON a.k = x.k AND DATEDIFF(second, a, x) BETWEEN 0 AND 60 WHERE x.w > 2"
    )
    assert [(n, s.where) for n, s in timed.inputs] == [
        ("e", "DATEPART(second, System.Timestamp()) > 1 AND v > 0"),
        ("x", "w > 2"),
    ]


def test_analytic_functions_over_a_step_that_filters_see_its_events_only() -> None:
    """Semantics §11.20: the step's WHERE is ``[source] where``, which runs before the
    analytic columns; the reader's own WHERE stays ``[filter]``, after them."""
    j = job(
        "WITH a AS (SELECT k, v FROM i TIMESTAMP BY t WHERE i.v > 1)\n"
        "SELECT k, ISFIRST(minute, 1) AS f, AVG(v) OVER (LIMIT DURATION(minute, 1)) AS m\n"
        "INTO o FROM a WHERE k <> 'x'"
    )
    assert j.source.where == "v > 1" and j.input_conditions
    assert j.filter is not None and j.filter.where == "k <> 'x'"
    assert len(j.analytics) == 2 and [p.name for p in j.select] == ["k", "f", "m"]
    # the step's System.Timestamp() is the event's, as the input's where reads it
    timed = job(
        "WITH a AS (SELECT * FROM i WHERE DATEPART(second, System.Timestamp()) > 1)\n"
        "SELECT k, AVG(v) OVER (LIMIT DURATION(minute, 1)) AS p INTO o FROM a"
    )
    assert timed.source.where == "DATEPART(second, System.Timestamp()) > 1"
    assert timed.filter is None and len(timed.analytics) == 1


def test_analytic_functions_over_a_union_step_that_filters_see_its_events_only() -> None:
    """The branches' WHERE (alike or not) is each input's ``where``, before the analytic
    columns (semantics §11.20), not ``[filter]`` after them."""
    for second in ("a > 1", "a > 2"):
        j = job(
            f"WITH s AS (SELECT * FROM i WHERE a > 1 UNION SELECT * FROM j WHERE {second})\n"
            "SELECT b, LAG(b) OVER (LIMIT DURATION(minute, 1)) AS p INTO o FROM s"
        )
        assert [(n, s.where) for n, s in j.inputs] == [("i", "a > 1"), ("j", second)]
        assert j.filter is None and len(j.analytics) == 1


def test_a_column_computed_right_of_star_reads_the_record_s_field_first() -> None:
    """``SELECT *, v * 2 AS w``: a record's own ``w`` (null included) wins over the
    computed one (semantics §11.16), so a later statement reads ``w`` as that field
    where the record has it; the field, absent by design, is not diagnosed missing."""
    from sparktide.core.namedcolumns import named_columns

    j = job("WITH s AS (SELECT *, v * 2 AS w FROM i) SELECT w + 1 AS x INTO o FROM s")
    assert tables(j)[1] == {"x": "CASE WHEN w IS NOT MISSING THEN w ELSE v * 2 END + 1"}
    rows = [
        {"v": 1, "t": "2026-03-01T09:00:01Z"},
        {"v": 1, "w": 10, "t": "2026-03-01T09:00:02Z"},
        {"v": 1, "w": None, "t": "2026-03-01T09:00:03Z"},
    ]
    assert [e["x"] for e in run(j, rows)] == [3, 11, None]
    assert [n.column for n in named_columns(j)] == ["v"]


# ------------------------------------------------------------------- APPLY in steps

_READINGS = [
    {"d": "a", "r": [10, 30], "t": "2026-03-01T09:00:01Z"},
    {"d": "a", "r": [], "t": "2026-03-01T09:00:02Z"},
    {"d": "b", "r": [25], "t": "2026-03-01T09:00:03Z"},
    {"d": "b", "t": "2026-03-01T09:00:04Z"},
    {"d": "a", "r": [50], "t": "2026-03-01T09:01:05Z"},
]


def test_a_window_over_an_expanding_step_averages_its_elements() -> None:
    """The step's CROSS APPLY is the job's [apply]: without it the window would read a
    field ``a`` that no record holds (null averages, silently)."""
    j = job(
        "WITH flat AS (SELECT e.d, a.ArrayValue AS temp FROM i e TIMESTAMP BY t\n"
        "CROSS APPLY GetArrayElements(e.r) AS a)\n"
        "SELECT d, AVG(temp) AS mean, COUNT(*) AS n INTO o FROM flat\n"
        "GROUP BY d, TumblingWindow(minute, 1)"
    )
    assert j.apply is not None and (j.apply.value, j.apply.name) == ("r", "a")
    assert j.window is not None
    assert [str(a) for a in j.window.aggregates] == [
        "avg(GETRECORDPROPERTYVALUE(a, 'ArrayValue'))",
        "count(*)",
    ]
    got = [(w["d"], w["mean"], w["n"], w["window_end"][11:16]) for w in run(j, _READINGS)]
    assert got == [("a", 20.0, 2, "09:01"), ("b", 25.0, 1, "09:01"), ("a", 50.0, 1, "09:02")]


def test_a_select_over_an_expanding_step_filters_its_elements() -> None:
    j = job(
        "WITH flat AS (SELECT e.d, a.ArrayValue AS temp, a.ArrayIndex AS i\n"
        "FROM i e TIMESTAMP BY t OUTER APPLY GetArrayElements(e.r) AS a WHERE e.d = 'a')\n"
        "SELECT d, temp * 2 AS twice, i INTO o FROM flat WHERE temp > 20 OR temp IS NULL"
    )
    assert j.apply is not None and j.apply.outer
    where, select = tables(j)
    value = "GETRECORDPROPERTYVALUE(a, 'ArrayValue')"
    assert where == f"d = 'a' AND ({value} > 20 OR {value} IS NULL)"
    assert select["twice"] == f"{value} * 2"
    got = [(e["d"], e["twice"], e["i"]) for e in run(j, _READINGS)]
    assert got == [("a", 60, 1), ("a", None, None), ("a", 100, 0)]


@pytest.mark.parametrize(
    "step",
    ["SELECT * FROM i WHERE d <> 'b'", "SELECT d, r, t FROM i WHERE d <> 'b'"],
)
def test_apply_over_a_step_that_passes_or_shapes_events(step: str) -> None:
    """``CROSS APPLY`` over a step that filters (and names the columns it keeps) is the
    same job as over the input: the step's WHERE reads the event's own fields, which
    each of its elements carries."""
    j = job(
        f"WITH s AS ({step})\n"
        "SELECT x.d, a.ArrayValue AS v INTO o FROM s x CROSS APPLY GetArrayElements(x.r) AS a"
    )
    direct = job(
        "SELECT d, a.ArrayValue AS v INTO o FROM i CROSS APPLY GetArrayElements(r) AS a "
        "WHERE d <> 'b'"
    )
    assert j.apply == direct.apply and tables(j) == tables(direct)
    assert [e["v"] for e in run(j, _READINGS)] == [10, 30, 50]


def test_a_window_over_a_windowed_expanding_step_keeps_its_apply() -> None:
    j = job(
        "WITH w AS (SELECT e.d, COUNT(*) AS n FROM i e TIMESTAMP BY t\n"
        "CROSS APPLY GetArrayElements(e.r) AS a GROUP BY e.d, TumblingWindow(second, 30))\n"
        "SELECT d, SUM(n) AS n INTO o FROM w GROUP BY d, TumblingWindow(minute, 1)"
    )
    assert j.apply is not None and j.window is not None
    got = [(w["d"], w["n"]) for w in run(j, _READINGS)]
    assert got == [("a", 2), ("b", 1), ("a", 1)]


#: APPLY in steps: what stays refused (semantics §13.2), with the other refusals below.
_APPLY_REFUSALS = [
    (
        "WITH w AS (SELECT d, COUNT(*) AS n FROM i GROUP BY d, TumblingWindow(s, 5))\n"
        "SELECT a.ArrayValue AS v INTO o FROM w OUTER APPLY GetArrayElements(n) AS a",
        "2:40: OUTER APPLY over the windowed step w is not supported yet",
    ),
    (
        "WITH f AS (SELECT d, a.ArrayValue AS v FROM i CROSS APPLY GetArrayElements(r) AS a)\n"
        "SELECT b.ArrayValue AS w INTO o FROM f CROSS APPLY GetArrayElements(v) AS b",
        "2:40: a second CROSS APPLY is not supported yet",
    ),
    (
        "WITH f AS (SELECT d, a.ArrayValue AS v FROM i TIMESTAMP BY t\n"
        "CROSS APPLY GetArrayElements(r) AS a)\n"
        "SELECT f.v INTO o FROM f JOIN x TIMESTAMP BY t\n"
        "ON f.d = x.d AND DATEDIFF(second, f, x) BETWEEN 0 AND 60",
        "3:24: a JOIN of the step f is not supported yet",
    ),
]


# ------------------------------------------------------------ over a window


def test_a_select_over_a_windowed_step_filters_and_computes_its_records() -> None:
    j = job(
        "WITH w AS (SELECT k, System.Timestamp() AS t_end, COUNT(*) AS n, SUM(v) AS s\n"
        "FROM i TIMESTAMP BY t GROUP BY k, TumblingWindow(second, 10) HAVING SUM(v) > 0),\n"
        "busy AS (SELECT * FROM w WHERE n > 1)\n"
        "SELECT k AS key, t_end, s / n AS mean INTO o FROM busy WHERE s < 100"
    )
    assert j.window is not None
    # (the statement names neither SUM(v) nor COUNT(*): the aggregates get names of their own)
    assert j.window.having == "_sum_v > 0 AND _count > 1 AND _sum_v < 100"
    assert tables(j)[1] == {"key": "k", "t_end": "window_end", "mean": "_sum_v / _count"}
    rows = [
        {"k": 1, "v": 4, "t": "2026-03-01T09:00:01Z"},
        {"k": 1, "v": 2, "t": "2026-03-01T09:00:02Z"},  # k 1: n 2, s 6: mean 3.0
        {"k": 2, "v": 5, "t": "2026-03-01T09:00:03Z"},  # k 2: n 1: filtered
        {"k": 3, "v": 60, "t": "2026-03-01T09:00:04Z"},
        {"k": 3, "v": 60, "t": "2026-03-01T09:00:05Z"},  # k 3: s 120: filtered
    ]
    assert run(j, rows) == [
        {
            "key": 1,
            "t_end": "2026-03-01T09:00:10Z",
            "mean": 3.0,
            "window_start": "2026-03-01T09:00:00Z",
            "window_end": "2026-03-01T09:00:10Z",
        }
    ]


# ------------------------------------------------------- a window over a window


def test_a_window_of_whole_step_windows_is_one_window_of_the_events() -> None:
    j = job(
        "WITH a AS (SELECT k, j, v * 2 AS w FROM i TIMESTAMP BY t WHERE v > 0),\n"
        "s AS (SELECT k, j, COUNT(*) AS n, MAX(w) AS m, SUM(w) AS total FROM a\n"
        "GROUP BY TumblingWindow(second, 5), k, j)\n"
        "SELECT k, SUM(n) AS n, MAX(m) AS top, MIN(j) AS lowest, SUM(total) / SUM(n) AS mean,\n"
        "System.Timestamp() AS e INTO o FROM s\n"
        "GROUP BY TumblingWindow(second, 10), k HAVING SUM(n) > 1"
    )
    assert j.filter is not None and j.filter.where == "v > 0"
    assert j.window is not None and (j.window.size, j.window.group_by) == (10 * SECOND, ("k",))
    assert [(a.name, a.function, a.column, a.expression) for a in j.window.aggregates] == [
        ("n", "count", None, None),
        ("top", "max", None, "v * 2"),
        ("lowest", "min", "j", None),
        ("_sum", "sum", None, "v * 2"),
    ]
    assert j.window.having == "n > 1"
    assert tables(j)[1]["mean"] == "_sum / n"
    rows = [  # (k, j, v): the step's 5 s windows (09:00:00, 09:00:05], (09:00:05, 09:00:10]
        {"k": 1, "j": "b", "v": 1, "t": "2026-03-01T09:00:01Z"},
        {"k": 1, "j": "a", "v": 3, "t": "2026-03-01T09:00:02Z"},
        {"k": 1, "j": "b", "v": 2, "t": "2026-03-01T09:00:07Z"},
        {"k": 1, "j": "c", "v": 0, "t": "2026-03-01T09:00:08Z"},  # v > 0 fails
        {"k": 2, "j": "a", "v": 5, "t": "2026-03-01T09:00:09Z"},  # one car: n > 1 fails
    ]
    # k 1: step records (b: n 1, m 2, total 2), (a: 1, 6, 6) at 09:00:05, (b: 1, 4, 4) at
    # 09:00:10 -> n 3, top 6, lowest 'a', mean 12 / 3 = 4.0, e = 09:00:10
    assert run(j, rows) == [
        {
            "k": 1,
            "n": 3,
            "top": 6,
            "lowest": "a",
            "mean": 4.0,
            "e": "2026-03-01T09:00:10Z",
            "window_start": "2026-03-01T09:00:00Z",
            "window_end": "2026-03-01T09:00:10Z",
        }
    ]


def test_a_snapshot_window_over_a_step_regroups_each_of_its_windows() -> None:
    j = job(
        "WITH s AS (SELECT k, j, COUNT(*) AS n FROM i TIMESTAMP BY t\n"
        "GROUP BY TumblingWindow(Duration(minute, 1), Offset(second, 30)), k, j)\n"
        "SELECT k, SUM(n) AS n INTO o FROM s GROUP BY k, System.Timestamp()"
    )
    assert j.window is not None
    assert (j.window.type, j.window.size, j.window.offset) == ("tumbling", 60 * SECOND, 30 * SECOND)


def test_job_file_settings_that_make_a_window_take_late_events_are_refused(
    tmp_path: Path,
) -> None:
    query = (
        "WITH s AS (SELECT k, COUNT(*) AS n FROM i TIMESTAMP BY t\n"
        "GROUP BY TumblingWindow(second, 5), k)\n"
        "SELECT SUM(n) AS n INTO o FROM s GROUP BY TumblingWindow(second, 10)"
    )
    for table, line in (
        ("[window]", 'allowed_lateness = "2s"'),
        ("[window]", 'idle_timeout = "1m"'),
        ("[ordering]", 'on_out_of_order = "accept"'),
    ):
        (tmp_path / "job.toml").write_text(f'[inputs.i]\npath = "in"\n{table}\n{line}\n')
        with pytest.raises(QueryError, match=r"^q.asaql:3:43: a window over a windowed step"):
            translate_text(query, "asaql", load_bindings(tmp_path / "job.toml"), "q.asaql")
    (tmp_path / "job.toml").write_text(
        '[inputs.i]\npath = "in"\n[window]\nallowed_lateness = "0s"\n'
    )
    assert translate_text(query, "asaql", load_bindings(tmp_path / "job.toml")).job.window


def test_the_transcript_s_job_is_the_translation_of_its_query() -> None:
    """tests/transcripts/multistep_composed_steps.toml runs (on both engines) the job the
    query in its description becomes."""
    data = load(TRANSCRIPTS / "multistep_composed_steps.toml")
    query = data["description"].split("\n\n")[1]
    translated = job(textwrap.dedent(query))
    written = build_job(data["job"])
    assert dataclasses.replace(translated, source=written.source, output=written.output) == (
        dataclasses.replace(written, ordering=translated.ordering)
    )
    assert translated.source.timestamp_by == written.source.timestamp_by == "t"


def test_a_window_over_a_union_step_that_computes_its_columns() -> None:
    """Semantics §11.22: the window reads each column as its input's expression, chosen
    by System.Input() (one expression where every branch computes it alike), over the
    union's events, each branch's WHERE its input's own; the step's other readers still
    read it as a union of branches."""
    jobs = translate(
        "WITH u AS (SELECT a.k, v * 2 AS w, 'A' AS f FROM i a WHERE v > 0 "
        "UNION SELECT k, x AS w, 'B' AS f FROM j)\n"
        "SELECT f, SUM(w) AS s, COUNT(DISTINCT k) AS n INTO o FROM u WHERE w > 1 "
        "GROUP BY f, TumblingWindow(s, 5) HAVING SUM(w) > 2\n"
        "SELECT k, w INTO p FROM u"
    ).jobs
    windowed, released = jobs
    assert [(n, s.where) for n, s in windowed.inputs] == [("i", "v > 0"), ("j", None)]
    window = windowed.window
    assert window is not None
    choose = "CASE WHEN System.Input() = 'i' THEN {} WHEN System.Input() = 'j' THEN {} END"
    assert window.group_expressions == (("f", choose.format("'A'", "'B'")),)
    assert [str(a) for a in window.aggregates] == [
        f"sum({choose.format('v * 2', 'x')})",
        "count_distinct(k)",
    ]
    assert window.having == "s > 2"
    assert (
        windowed.filter is not None
        and windowed.filter.where == choose.format("v * 2", "x") + " > 1"
    )
    assert [(p.name, p.by_input) for p in released.select][1] == (
        "w",
        (("i", "v * 2"), ("j", "x")),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5))\n"
            "SELECT AVG(n) AS mean INTO o FROM w GROUP BY TumblingWindow(s, 10)",
            "2:8: AVG(n) over the windowed step w is not supported yet",
        ),
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5))\n"
            "SELECT k, m INTO o FROM w",
            "2:11: m is not a column of the step w",
        ),
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, HoppingWindow(s, 10, 5))\n"
            "SELECT SUM(n) AS n INTO o FROM w GROUP BY TumblingWindow(s, 10)",
            "1:55: a window over the hopping window of the step w is not supported yet",
        ),
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5)\n"
            "HAVING COUNT(*) > 1)\n"
            "SELECT SUM(n) AS n INTO o FROM w GROUP BY TumblingWindow(s, 10)",
            "2:1: HAVING in the step w under a second window is not supported yet",
        ),
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i PARTITION BY p\n"
            "GROUP BY k, TumblingWindow(s, 5))\n"
            "SELECT SUM(n) AS n INTO o FROM w GROUP BY TumblingWindow(s, 10)",
            "1:56: PARTITION BY in the step w under a second window is not supported yet",
        ),
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5))\n"
            "SELECT SUM(n) AS n INTO o FROM w WHERE n > 1 GROUP BY TumblingWindow(s, 10)",
            "2:34: WHERE over the windowed step w under a second window is not supported yet",
        ),
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5))\n"
            "SELECT n, COUNT(*) AS c INTO o FROM w GROUP BY TumblingWindow(s, 10), n",
            "2:71: GROUP BY over the windowed step w: group by the step's grouping columns",
        ),
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5))\n"
            "SELECT k, n INTO o FROM w GROUP BY TumblingWindow(s, 10), k",
            "2:11: n of the windowed step w outside an aggregate of the second window",
        ),
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5))\n"
            "SELECT SUM(k) AS n INTO o FROM w GROUP BY TumblingWindow(s, 10)",
            "2:8: SUM(k) over the windowed step w is not supported yet",
        ),
        (
            "WITH w AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5))\n"
            "SELECT SUM(n) AS n INTO o FROM w GROUP BY TumblingWindow(s, 10, 2)",
            "2:43: a tumbling window over the windowed step w is not supported yet",
        ),
        (
            "WITH a AS (SELECT k, v * 2 AS w FROM i PARTITION BY p)\n"
            "SELECT k, w INTO o FROM a PARTITION BY q",
            "2:40: PARTITION BY q differs from PARTITION BY p",
        ),
        (
            "WITH a AS (SELECT * FROM i WHERE v > 1), b AS (SELECT * FROM a)\n"
            "SELECT k, LAG(v) OVER (LIMIT DURATION(minute, 1)) AS p INTO o FROM b",
            "2:11: LAG(...) over the step b, which filters, is not supported yet",
        ),
        (
            "WITH u AS (SELECT k, v AS w FROM i UNION SELECT w, k FROM j)\n"
            "SELECT k, COUNT(*) AS n INTO o FROM u GROUP BY k, TumblingWindow(s, 5)",
            "1:12: the branches of the UNION step u name different columns",
        ),
        (
            "WITH u AS (SELECT k, v * 2 FROM i UNION SELECT k, v FROM j)\n"
            "SELECT COUNT(*) AS n INTO o FROM u GROUP BY TumblingWindow(s, 5)",
            "1:22: a window over the UNION step u: name each column its branches compute",
        ),
        (
            "WITH p AS (SELECT * FROM i UNION SELECT * FROM j), "
            "u AS (SELECT k, v * 2 AS w FROM p UNION SELECT k, w FROM m)\n"
            "SELECT SUM(w) AS n INTO o FROM u GROUP BY TumblingWindow(s, 5)",
            "1:84: a window over the UNION step u, whose branch reads the step p, is not "
            "supported yet",
        ),
        *_APPLY_REFUSALS,
    ],
)
def test_what_is_still_refused(text: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        translate(text)
    assert str(caught.value).startswith(f"q.asaql:{message}"), str(caught.value)
