"""Stream Analytics UNION, JOIN and several statements → jobs: what is translated, the
sign of DATEDIFF, the jobs' behaviour on data, and every refusal with its position."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from sparktide.core.engine import simulate
from sparktide.errors import ConfigError, QueryError
from sparktide.job import Job
from sparktide.query import Bindings, job_to_toml, load_bindings, translate_text
from sparktide.time import MINUTE, SECOND


def translate(text: str, bindings: Bindings | None = None):  # type: ignore[no-untyped-def]
    return translate_text(text, "asaql", bindings, "q.asaql")


def job(text: str, bindings: Bindings | None = None) -> Job:
    return translate(text, bindings).job


def round_trips(j: Job) -> bool:
    return Job.from_dict(tomllib.loads(job_to_toml(j))) == j


# ------------------------------------------------------------------------ UNION


def test_a_union_reads_each_branch_input_with_its_timestamp() -> None:
    j = job(
        "SELECT * INTO o FROM North TIMESTAMP BY t1 UNION SELECT * FROM South s TIMESTAMP BY s.t2"
    )
    assert [(name, s.path, s.timestamp_by) for name, s in j.inputs] == [
        ("North", "North", "t1"),
        ("South", "South", "t2"),
    ]
    assert j.source == j.inputs[0][1] and j.join is None and j.window is None
    assert j.output.path == "o" and round_trips(j)


def test_a_union_may_read_one_input_in_two_branches() -> None:
    """A branch that reads an input an earlier branch reads is a second reading of it:
    an input of its own, named by the branch's alias or ``<input>_2`` (the first free
    name), bound to the input's table, with the branch's own WHERE and columns
    (semantics §7.10)."""
    j = job(
        "SELECT k, v AS x INTO o FROM a TIMESTAMP BY t WHERE kind = 'v' "
        "UNION SELECT k, w AS x FROM a TIMESTAMP BY t WHERE kind = 'w'"
    )
    assert [(n, s.path, s.timestamp_by, s.where) for n, s in j.inputs] == [
        ("a", "a", "t", "kind = 'v'"),
        ("a_2", "a", "t", "kind = 'w'"),
    ]
    assert [(p.name, p.expression, p.by_input) for p in j.select] == [
        ("k", "k", ()),
        ("x", "", (("a", "v"), ("a_2", "w"))),
    ]
    assert round_trips(j)
    aliased = job("SELECT * FROM a UNION SELECT * FROM a hum UNION SELECT * FROM a")
    assert [(n, s.path) for n, s in aliased.inputs] == [("a", "a"), ("hum", "a"), ("a_2", "a")]
    taken = job("SELECT * FROM a UNION SELECT * FROM a_2 UNION SELECT * FROM A")
    assert [(n, s.path) for n, s in taken.inputs] == [("a", "a"), ("a_2", "a_2"), ("A_3", "A")]
    nested = job(
        "WITH u AS (SELECT * FROM a UNION SELECT * FROM b) SELECT * FROM u UNION SELECT * FROM a"
    )
    assert [name for name, _ in nested.inputs] == ["a", "b", "a_2"]


def test_union_all_is_union_and_three_branches_keep_their_order() -> None:
    plain = job("SELECT * FROM a UNION SELECT * FROM b UNION SELECT * FROM c")
    every = job("SELECT * FROM a UNION ALL SELECT * FROM b UNION ALL SELECT * FROM c")
    assert plain == every
    assert [name for name, _ in plain.inputs] == ["a", "b", "c"]


def test_a_window_over_a_union_step() -> None:
    j = job(
        "WITH Tolls AS (\n"
        "  SELECT * FROM TollA TIMESTAMP BY EntryTime\n"
        "  UNION\n"
        "  SELECT * FROM TollB TIMESTAMP BY EntryTime)\n"
        "SELECT TollId, COUNT(*) AS Count INTO Counts FROM Tolls t\n"
        "GROUP BY t.TollId, TumblingWindow(minute, 3)"
    )
    assert [name for name, _ in j.inputs] == ["TollA", "TollB"]
    assert {s.timestamp_by for _, s in j.inputs} == {"EntryTime"}
    assert j.window is not None and j.window.size == 3 * MINUTE
    assert j.window.group_by == ("TollId",) and round_trips(j)


def test_a_union_step_in_a_union_flattens() -> None:
    j = job(
        "WITH ab AS (SELECT * FROM a UNION SELECT * FROM b) SELECT * FROM c UNION SELECT * FROM ab"
    )
    assert [name for name, _ in j.inputs] == ["c", "a", "b"]


def test_branches_computing_their_columns_differently_give_one_per_input() -> None:
    """Semantics §11.21: the columns every branch computes alike are one expression, the
    others one per input (each input of a branch that reads a union step takes its)."""
    j = job(
        "WITH cd AS (SELECT * FROM c TIMESTAMP BY t UNION SELECT * FROM d TIMESTAMP BY t)\n"
        "SELECT k, v, 'a' AS origin INTO o FROM a TIMESTAMP BY t\n"
        "UNION SELECT k, v * 2 AS v, 'b' AS origin FROM b TIMESTAMP BY t\n"
        "UNION SELECT k, w AS v, 'cd' AS origin FROM cd"
    )
    assert [(p.name, p.expression, p.by_input) for p in j.select] == [
        ("k", "k", ()),
        ("v", "", (("a", "v"), ("b", "v * 2"), ("c", "w"), ("d", "w"))),
        ("origin", "", (("a", "'a'"), ("b", "'b'"), ("c", "'cd'"), ("d", "'cd'"))),
    ]
    assert round_trips(j)


def test_a_select_over_a_union_step_that_computes_columns_is_one_per_branch() -> None:
    """Semantics §11.21: ``SELECT ... FROM u WHERE ...`` over a UNION step of SELECTs
    that compute columns is the union of that SELECT over each branch: its WHERE reads
    each branch's columns (each input's own where), its columns each branch's."""
    j = job(
        "WITH u AS (SELECT k, v * 2 AS w FROM i TIMESTAMP BY t WHERE v > 0\n"
        "  UNION SELECT k, v AS w FROM j TIMESTAMP BY t)\n"
        "SELECT w, k INTO o FROM u WHERE w > 3"
    )
    assert [(n, s.where) for n, s in j.inputs] == [("i", "v > 0 AND v * 2 > 3"), ("j", "v > 3")]
    assert j.filter is None and j.output.path == "o"
    assert [(p.name, p.expression, p.by_input) for p in j.select] == [
        ("w", "", (("i", "v * 2"), ("j", "v"))),
        ("k", "k", ()),
    ]
    # a UNION of steps that compute their columns, read through a UNION step too
    steps = job(
        "WITH a AS (SELECT id, speed FROM north TIMESTAMP BY t),\n"
        "  b AS (SELECT id, velocity AS speed FROM south TIMESTAMP BY t),\n"
        "  u AS (SELECT * FROM a UNION SELECT * FROM b)\n"
        "SELECT id, speed INTO o FROM u WHERE speed > 3"
    )
    assert [(n, s.where) for n, s in steps.inputs] == [
        ("north", "speed > 3"),
        ("south", "velocity > 3"),
    ]
    assert [(p.name, p.by_input) for p in steps.select] == [
        ("id", ()),
        ("speed", (("north", "speed"), ("south", "velocity"))),
    ]
    alike = job("WITH s AS (SELECT a.k FROM a UNION SELECT k FROM b) SELECT * FROM s")
    assert [(p.name, p.expression) for p in alike.select] == [("k", "k")]
    assert [name for name, _ in alike.inputs] == ["a", "b"] and round_trips(j)


def test_the_same_where_or_columns_in_every_branch_become_the_job_s() -> None:
    j = job(
        "SELECT * FROM a TIMESTAMP BY t WHERE a.speed > 50 "
        "UNION SELECT * FROM b TIMESTAMP BY t WHERE speed > 50"
    )
    assert j.filter is not None and j.filter.where == "speed > 50"
    # a pass-through step's WHERE counts as its branch's
    j = job(
        "WITH fast AS (SELECT * FROM a WHERE speed > 50) "
        "SELECT * FROM fast UNION SELECT * FROM b WHERE speed > 50"
    )
    assert j.filter is not None and j.filter.where == "speed > 50"
    # a WHERE over a union step applies to every input
    j = job("WITH u AS (SELECT * FROM a UNION SELECT * FROM b) SELECT * FROM u WHERE x = 1")
    assert j.filter is not None and j.filter.where == "x = 1"
    j = job("SELECT k, v * 2 AS w FROM a UNION SELECT b.k, v * 2 AS w FROM b")
    assert [(p.name, p.expression) for p in j.select] == [("k", "k"), ("w", "v * 2")]
    assert round_trips(j)


def test_branches_that_filter_differently_filter_their_own_inputs() -> None:
    """Each branch's WHERE is its input's ``where`` (semantics §11.20); a WHERE over the
    union step is still the job's ``[filter]``."""
    j = job("SELECT * FROM a WHERE a.x > 1 UNION SELECT * FROM b")
    assert [(n, s.where) for n, s in j.inputs] == [("a", "x > 1"), ("b", None)]
    assert j.filter is None and round_trips(j)
    j = job(
        "WITH u AS (SELECT * FROM a WHERE x > 1 UNION SELECT * FROM b WHERE x >= 1 AND y = 'k') "
        "SELECT * FROM u WHERE z IS NOT NULL"
    )
    assert [(n, s.where) for n, s in j.inputs] == [("a", "x > 1"), ("b", "x >= 1 AND y = 'k'")]
    assert j.filter is not None and j.filter.where == "z IS NOT NULL" and round_trips(j)


def test_branches_that_filter_differently_on_data(tmp_path: Path) -> None:
    """On data: each input's events meet their own branch's WHERE only; a CAST that
    fails in one branch's WHERE dead-letters that input's event, not the other's."""
    t = "2026-03-01T09:00:{:02d}Z"
    _write(
        tmp_path / "a.jsonl",
        [{"k": k, "v": v, "t": t.format(s)} for s, k, v in ((1, "A", 5), (2, "A", 1), (3, "x", 9))],
    )
    _write(
        tmp_path / "b.jsonl",
        [{"k": k, "v": v, "t": t.format(s)} for s, k, v in ((1, "B", 5), (2, "x", 1), (4, "B", 2))],
    )
    (tmp_path / "job.toml").write_text(
        '[inputs.a]\npath = "a.jsonl"\narrival_time = "t"\n'
        '[inputs.b]\npath = "b.jsonl"\narrival_time = "t"\n'
        '[ordering]\nlate_arrival = "none"\nearly_arrival = "none"\n'
    )
    query = (
        "SELECT k, v INTO o FROM a TIMESTAMP BY t WHERE CASE WHEN k = 'x' THEN CAST(k AS bigint) "
        "ELSE v END > 2 UNION SELECT k, v FROM b TIMESTAMP BY t WHERE v < 5"
    )
    result = simulate(job(query, load_bindings(tmp_path / "job.toml")))
    assert sorted((e["k"], e["v"]) for e in result.events) == [("A", 5), ("B", 2), ("x", 1)]
    assert [(d["file"], d["error"]) for d in result.dead_letters] == [
        ("a/a.jsonl", "CAST to bigint: 'x' is not a bigint")
    ]
    assert result.metrics["dropped"]["filtered"] == 2


def test_where_over_a_join_filters_each_input_or_the_pairs() -> None:
    """Semantics §11.20: a WHERE term over one input's fields is that input's ``where``;
    a term over both is part of the ``[join] condition``."""
    j = job(
        "SELECT e.k INTO o FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1 "
        "WHERE e.v > 1 AND UPPER(x.lane) = 'A' AND e.w < x.w AND e.v < 9"
    )
    assert [(n, s.where) for n, s in j.inputs] == [
        ("e", "(v > 1) AND (v < 9)"),
        ("x", "UPPER(lane) = 'A'"),
    ]
    assert j.join is not None and j.join.condition == "e.w < x.w" and j.filter is None
    assert round_trips(j)


def test_system_timestamp_in_the_where_of_a_join_is_the_matchs_time() -> None:
    """Semantics §11.8: a WHERE term reading ``System.Timestamp()`` reads the match's
    time, with or without either input's fields: part of the ``[join] condition``
    (``timestamp``), never an input's own ``where``."""
    j = job(
        "SELECT e.k INTO o FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1 "
        "WHERE DATEPART(second, System.Timestamp()) < 30 AND e.v > 1 "
        "AND DATEDIFF(second, e.t, System.Timestamp()) >= x.w"
    )
    assert [(n, s.where) for n, s in j.inputs] == [("e", "v > 1"), ("x", None)]
    assert j.join is not None and j.join.condition == (
        "DATEPART(second, timestamp) < 30 AND DATEDIFF(second, e.t, timestamp) >= x.w"
    )
    assert round_trips(j)
    # in ON too: the match's time, a term of the condition
    on = job(
        "SELECT e.k INTO o FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1 "
        "AND DATEPART(second, System.Timestamp()) < x.w"
    )
    assert on.join is not None and on.join.condition == "DATEPART(second, timestamp) < x.w"
    assert round_trips(on)


def test_a_join_of_steps_that_filter_is_the_join_with_their_wheres() -> None:
    """A JOIN of steps that filter (and compute columns) reads their inputs, each step's
    WHERE its input's own ``where`` (semantics §11.20), before the JOIN's own."""
    steps = job(
        "WITH Fast AS (SELECT * FROM e WHERE v > 1), "
        "Laned AS (SELECT k, UPPER(lane) AS L, w FROM x WHERE x.w >= 0) "
        "SELECT f.k INTO o FROM Fast f JOIN Laned l ON f.k = l.k "
        "AND DATEDIFF(s, f, l) BETWEEN 0 AND 1 WHERE l.L = 'A'"
    )
    assert [(n, s.where) for n, s in steps.inputs] == [
        ("e", "v > 1"),
        ("x", "(w >= 0) AND (UPPER(lane) = 'A')"),
    ]
    assert steps.join is not None and steps.join.condition is None and round_trips(steps)


def test_a_join_of_steps_that_filter_on_data(tmp_path: Path) -> None:
    """On data: the WHERE over the JOIN stops each side's events before they meet."""
    t = "2026-03-01T09:00:{:02d}Z"
    _write(
        tmp_path / "entry.jsonl",
        [
            {"Plate": p, "Toll": toll, "EntryTime": t.format(s), "a": t.format(s)}
            for p, s, toll in (("A", 10, 1), ("B", 11, 5))
        ],
    )
    _write(
        tmp_path / "exit.jsonl",
        [
            {"Plate": p, "Lane": lane, "ExitTime": t.format(s), "a": t.format(s)}
            for p, s, lane in (("A", 12, "x"), ("B", 13, "y"), ("B", 14, "x"))
        ],
    )
    query = (
        "SELECT * FROM Entry TIMESTAMP BY EntryTime JOIN Exit TIMESTAMP BY ExitTime "
        "ON Entry.Plate = Exit.Plate AND DATEDIFF(second, Entry, Exit) BETWEEN 0 AND 15 "
        "WHERE Entry.Toll > 2 AND Exit.Lane = 'x'"
    )
    assert _matches(query, tmp_path) == [("B", t.format(14), t.format(14))]
    # System.Timestamp() in the WHERE is the match's time (the later of the two): B's
    # exits at :13 and :14 both meet its entry at :11, A's exit at :12 its entry at :10
    timed = query.split(" WHERE ")[0] + " WHERE DATEPART(second, System.Timestamp()) >= 13"
    assert _matches(timed, tmp_path) == [
        ("B", t.format(13), t.format(13)),
        ("B", t.format(14), t.format(14)),
    ]
    # ... and in ON, the same term is the same condition
    in_on = query.split(" WHERE ")[0] + " AND DATEPART(second, System.Timestamp()) >= 13"
    assert _matches(in_on, tmp_path) == _matches(timed, tmp_path)


def test_a_union_needs_inputs_bound_by_name(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_text('[source]\npath = "in"\n')
    with pytest.raises(ConfigError) as caught:
        job("SELECT * FROM a UNION SELECT * FROM b", load_bindings(tmp_path / "job.toml"))
    assert caught.value.key == "source" and "bind each with an [inputs.<name>]" in str(caught.value)
    (tmp_path / "job.toml").write_text(
        '[inputs.A]\npath = "in/a"\narrival_time = "e"\n[inputs.b]\npath = "in/b"\n'
    )
    j = job("SELECT * FROM a UNION SELECT * FROM B", load_bindings(tmp_path / "job.toml"))
    assert [(name, s.path, s.arrival_time) for name, s in j.inputs] == [
        ("a", str(tmp_path / "in/a"), "e"),
        ("B", str(tmp_path / "in/b"), None),
    ]


# ------------------------------------------------------------------------- JOIN

_TOLL_JOIN = (
    "SELECT * INTO o FROM Entry {ea} TIMESTAMP BY EntryTime "
    "JOIN [Exit] {xa} TIMESTAMP BY ExitTime "
    "ON {e}.TollId = {x}.TollId AND {x}.Plate = {e}.Plate "
    "AND DATEDIFF({unit}, {first}, {second}) BETWEEN {low} AND {high}"
)


@pytest.mark.parametrize(
    ("aliases", "order", "unit", "low", "high", "between"),
    [
        # DATEDIFF(unit, a, b) is b − a; the job bounds right − left (Exit − Entry)
        (False, "entry-exit", "minute", "0", "15", (0, 15 * MINUTE)),
        (False, "exit-entry", "minute", "0", "15", (-15 * MINUTE, 0)),
        (True, "entry-exit", "second", "-5", "10", (-5 * SECOND, 10 * SECOND)),
        (True, "exit-entry", "second", "-5", "10", (-10 * SECOND, 5 * SECOND)),
        (True, "exit-entry", "ms", "1500", "1500", (-1500_000, -1500_000)),
        (False, "entry-exit", "hh", "0.5", "1", (30 * MINUTE, 60 * MINUTE)),
    ],
)
def test_datediff_bounds_the_right_minus_the_left_timestamp(
    aliases: bool, order: str, unit: str, low: str, high: str, between: tuple[int, int]
) -> None:
    e, x = ("e", "x") if aliases else ("Entry", "[Exit]")
    first, second = (e, x) if order == "entry-exit" else (x, e)
    j = job(
        _TOLL_JOIN.format(
            ea=e if aliases else "",
            xa=x if aliases else "",
            e=e,
            x=x,
            unit=unit,
            first=first,
            second=second,
            low=low,
            high=high,
        )
    )
    assert j.join is not None
    assert (j.join.left, j.join.right) == ("Entry", "Exit")
    assert j.join.on == ("TollId", "Plate")
    assert j.join.between == between
    assert [name for name, _ in j.inputs] == ["Entry", "Exit"]
    assert (j.inputs[0][1].timestamp_by, j.inputs[1][1].timestamp_by) == ("EntryTime", "ExitTime")
    assert round_trips(j)


def test_a_join_key_said_twice_is_one_key() -> None:
    j = job(
        "SELECT * FROM a JOIN b ON a.k = b.k AND b.k = a.k AND DATEDIFF(s, a, b) BETWEEN 0 AND 1"
    )
    assert j.join is not None and j.join.on == ("k",)


def _write(path: Path, records: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return str(path)


def _matches(text: str, tmp_path: Path) -> list[tuple[str, str, str]]:
    (tmp_path / "job.toml").write_text(
        '[inputs.Entry]\npath = "entry.jsonl"\narrival_time = "a"\n'
        '[inputs.Exit]\npath = "exit.jsonl"\narrival_time = "a"\n'
        '[ordering]\nlate_arrival = "none"\nearly_arrival = "none"\n'
    )
    result = simulate(job(text, load_bindings(tmp_path / "job.toml")))
    return [(e["Entry"]["Plate"], e["Exit"]["ExitTime"], e["timestamp"]) for e in result.events]


def test_both_orders_of_datediff_join_the_same_events(tmp_path: Path) -> None:
    """On data: DATEDIFF(second, Entry, Exit) BETWEEN 0 AND 15 and DATEDIFF(second, Exit,
    Entry) BETWEEN -15 AND 0 match the exits 0 to 15 s after their entry (both ends
    included), and the other sign matches the exits before it."""
    t = "2026-03-01T09:00:{:02d}Z"
    _write(
        tmp_path / "entry.jsonl",
        [{"Plate": p, "EntryTime": t.format(s), "a": t.format(s)} for p, s in (("A", 10),)],
    )
    _write(
        tmp_path / "exit.jsonl",
        [{"Plate": "A", "ExitTime": t.format(s), "a": t.format(s)} for s in (4, 9, 10, 18, 25, 26)],
    )
    query = (
        "SELECT * FROM Entry TIMESTAMP BY EntryTime JOIN Exit TIMESTAMP BY ExitTime "
        "ON Entry.Plate = Exit.Plate AND DATEDIFF(second, {}, {}) BETWEEN {} AND {}"
    )
    after = [("A", t.format(s), t.format(s)) for s in (10, 18, 25)]
    assert _matches(query.format("Entry", "Exit", 0, 15), tmp_path) == after
    assert _matches(query.format("Exit", "Entry", -15, 0), tmp_path) == after
    before = [("A", t.format(s), t.format(10)) for s in (4, 9, 10)]
    assert _matches(query.format("Exit", "Entry", 0, 6), tmp_path) == before


def test_the_rest_of_on_is_a_condition_each_pair_must_meet(tmp_path: Path) -> None:
    """On data (semantics §11.8): ``x.Toll > e.Toll * 2`` is the job's ``[join]
    condition``, a pair that fails it no match; an equality of columns with other names
    (``e.Tag = x.Code``) is a pair of join columns, ``["Tag", "Code"]``."""
    t = "2026-03-01T09:00:{:02d}Z"
    entries = [("A", 10, 1, "A"), ("B", 11, 3, "X")]
    _write(
        tmp_path / "entry.jsonl",
        [
            {"Plate": p, "Toll": toll, "Tag": tag, "EntryTime": t.format(s), "a": t.format(s)}
            for p, s, toll, tag in entries
        ],
    )
    exits = [("A", 12, 3, "A"), ("A", 13, 1, "A"), ("B", 14, 9, "B"), ("B", 15, 9, "X")]
    _write(
        tmp_path / "exit.jsonl",
        [
            {"Plate": p, "Toll": toll, "Code": code, "ExitTime": t.format(s), "a": t.format(s)}
            for p, s, toll, code in exits
        ],
    )
    query = (
        "SELECT * FROM Entry e TIMESTAMP BY EntryTime JOIN Exit x TIMESTAMP BY ExitTime "
        "ON e.Plate = x.Plate AND x.Toll > e.Toll * 2 AND e.Tag = x.Code "
        "AND DATEDIFF(second, e, x) BETWEEN 0 AND 15"
    )
    j = job(query)
    assert j.join is not None and j.join.on == ("Plate", ("Tag", "Code"))
    assert j.join.condition == "Exit.Toll > Entry.Toll * 2"
    # A: 3 > 2 and A = A (the exit at 13: 1 > 2 fails); B: 9 > 6, but only X = X
    assert _matches(query, tmp_path) == [
        ("A", t.format(12), t.format(12)),
        ("B", t.format(15), t.format(15)),
    ]


_SELECT_JOIN = (
    "SELECT {} INTO o FROM Entry e TIMESTAMP BY EntryTime JOIN [Exit] x TIMESTAMP BY ExitTime "
    "ON Entry.Plate = [Exit].Plate AND DATEDIFF(minute, e, x) BETWEEN 0 AND 15"
)


@pytest.mark.parametrize(
    ("columns", "select"),
    [
        (  # by the inputs' names
            "Entry.Plate, [Exit].ExitTime AS Out, DATEDIFF(minute, Entry.EntryTime, "
            "[Exit].ExitTime) AS Minutes",
            {
                "Plate": "Entry.Plate",
                "Out": "Exit.ExitTime",
                "Minutes": "DATEDIFF(minute, Entry.EntryTime, Exit.ExitTime)",
            },
        ),
        (  # by their aliases: the job names the inputs as the query does
            "e.Plate AS p, DATEDIFF(ss, e.EntryTime, System.Timestamp()) AS s, "
            "System.Timestamp() AS t",
            {
                "p": "Entry.Plate",
                "s": "DATEDIFF(second, Entry.EntryTime, timestamp)",
                "t": "timestamp",
            },
        ),
        (
            "x.Toll * 2 + 1 AS Twice, DATEDIFF(d, e.EntryTime, '2026-03-02T00:00:00+01:00') "
            "BETWEEN 0 AND 1 AS Today, x.[lane-id]",
            {
                "Twice": "Exit.Toll * 2 + 1",
                "Today": "DATEDIFF(day, Entry.EntryTime, '2026-03-02T00:00:00+01:00') "
                "BETWEEN 0 AND 1",
                "lane-id": "Exit.[lane-id]",
            },
        ),
    ],
)
def test_columns_over_a_join_are_a_select_over_its_matches(
    columns: str, select: dict[str, str]
) -> None:
    j = job(_SELECT_JOIN.format(columns))
    assert j.join is not None and j.join.between == (0, 15 * MINUTE)
    assert [(p.name, p.expression) for p in j.select] == list(select.items())
    assert round_trips(j)


def test_a_self_join_reads_its_input_once_per_alias(tmp_path: Path) -> None:
    """``FROM Doors o JOIN Doors c``: two inputs named by the aliases, both bound to the
    input's table (the job file's, or its plain ``[source]``), each with its own WHERE
    terms and TIMESTAMP BY; a door closed within 90 s of its opening is one match."""
    t = "2026-03-01T09:{}Z"
    rows = [
        {"Door": "D1", "Action": "open", "Time": t.format("00:00")},
        {"Door": "D1", "Action": "close", "Time": t.format("00:50")},
        {"Door": "D2", "Action": "open", "Time": t.format("01:00")},
        {"Door": "D2", "Action": "close", "Time": t.format("03:00")},
    ]
    _write(tmp_path / "doors.jsonl", [{**row, "a": row["Time"]} for row in rows])
    query = (
        "SELECT o.Door, DATEDIFF(second, o.Time, c.Time) AS OpenSeconds INTO output\n"
        "FROM Doors o TIMESTAMP BY Time JOIN Doors c TIMESTAMP BY Time\n"
        "ON o.Door = c.Door AND DATEDIFF(second, o, c) BETWEEN 1 AND 90\n"
        "WHERE o.Action = 'open' AND c.Action = 'close'"
    )
    bound = 'path = "doors.jsonl"\narrival_time = "a"\n'
    for table in (f"[inputs.Doors]\n{bound}", f"[source]\n{bound}"):
        (tmp_path / "job.toml").write_text(table)
        translation = translate(query, load_bindings(tmp_path / "job.toml"))
        j = translation.job
        assert [(name, s.path, s.timestamp_by, s.where) for name, s in j.inputs] == [
            ("o", str(tmp_path / "doors.jsonl"), "Time", "Action = 'open'"),
            ("c", str(tmp_path / "doors.jsonl"), "Time", "Action = 'close'"),
        ]
        assert (j.join.left, j.join.right) == ("o", "c") and round_trips(j)  # type: ignore[union-attr]
        assert any("once per alias" in note for note in translation.notes)
        result = simulate(j)
        assert [(e["Door"], e["OpenSeconds"]) for e in result.events] == [("D1", 50)]
        assert result.metrics["input"] == 8  # (each alias counts the input's 4 events)
    step = (  # a step that filters, joined with itself: each alias with the step's WHERE
        "WITH Moves AS (SELECT Door, Action, Time FROM Doors TIMESTAMP BY Time "
        "WHERE Door <> 'D9')\n" + query.replace("Doors o TIMESTAMP BY Time", "Moves o")
    ).replace("Doors c TIMESTAMP BY Time", "Moves c")
    j = translate(step, load_bindings(tmp_path / "job.toml")).job
    assert [s.where for _, s in j.inputs] == [
        "(Door <> 'D9') AND (Action = 'open')",
        "(Door <> 'D9') AND (Action = 'close')",
    ]
    assert [(e["Door"], e["OpenSeconds"]) for e in simulate(j).events] == [("D1", 50)]
    (tmp_path / "job.toml").write_text(
        '[inputs.Doors]\npath = "doors.jsonl"\n[inputs.o]\npath = "doors.jsonl"\n'
    )
    with pytest.raises(QueryError, match="the alias o of Doors is also an input of the job"):
        translate(query, load_bindings(tmp_path / "job.toml"))


def test_an_input_s_star_over_a_join_writes_its_fields_where_it_stands(tmp_path: Path) -> None:
    """``SELECT e.*, x.Lane AS ExitLane`` over a JOIN: ``"*" = "Entry"`` (by input name,
    from the alias), the entry's fields where ``*`` stands, then the columns; ``x.*``
    alone writes the exit's fields only; a left join's lone event has none of them."""
    t = "2026-03-01T09:{}Z"
    _write(
        tmp_path / "entry.jsonl",
        [
            {"Plate": "X", "Lane": 1, "t": t.format("00:00")},
            {"Plate": "Y", "Lane": 2, "t": t.format("01:00")},
        ],
    )
    _write(tmp_path / "exit.jsonl", [{"Plate": "X", "Lane": 7, "t": t.format("00:30")}])
    (tmp_path / "job.toml").write_text(
        '[inputs.Entry]\npath = "entry.jsonl"\narrival_time = "t"\n'
        '[inputs.Exit]\npath = "exit.jsonl"\narrival_time = "t"\n'
    )
    bindings = load_bindings(tmp_path / "job.toml")
    join = "FROM Entry e TIMESTAMP BY t {} JOIN Exit x TIMESTAMP BY t ON e.Plate = x.Plate "
    join += "AND DATEDIFF(minute, e, x) BETWEEN 0 AND 1"
    j = job(f"SELECT e.*, x.Lane AS ExitLane INTO o {join.format('')}", bindings)
    assert (j.select_star, j.select_star_input, [p.name for p in j.select]) == (
        0,
        "Entry",
        ["ExitLane"],
    )
    assert round_trips(j)
    assert simulate(j).events == [
        {
            "type": "event",
            "Plate": "X",
            "Lane": 1,
            "t": t.format("00:00"),
            "ExitLane": 7,
            "timestamp": t.format("00:30"),
        }
    ]
    alone = job(f"SELECT x.* INTO o {join.format('LEFT OUTER')}", bindings)
    assert (alone.select, alone.select_star_input) == ((), "Exit") and round_trips(alone)
    assert simulate(alone).events == [
        {"type": "event", "Plate": "X", "Lane": 7, "t": t.format("00:30"), **_at("00:30")},
        {"type": "event", **_at("02:00")},  # (Y: no exit within a minute, at 09:01 + 1 m)
    ]
    for query, message in (
        (f"SELECT *, x.Lane AS L INTO o {join.format('')}", "name the input whose fields"),
        (f"SELECT e.*, x.* INTO o {join.format('')}", "writes one input's fields whole"),
        (f"SELECT q.*, x.Lane AS L INTO o {join.format('')}", "q.* names neither input"),
    ):
        with pytest.raises(QueryError, match=message):
            job(query, bindings)


def _at(minute: str) -> dict:
    return {"timestamp": f"2026-03-01T09:{minute}Z"}


def test_the_documentation_toll_join_runs_exactly(tmp_path: Path) -> None:
    """Stream Analytics' toll-booth JOIN with its SELECT: each match is released with
    exactly the SELECT's columns, in order, then timestamp; DATEDIFF counts minute
    boundaries crossed (09:03:30 -> 09:05:20 is 2)."""
    t = "2026-03-01T09:{}Z"
    _write(
        tmp_path / "entry.jsonl",
        [
            {"TollId": 2, "Plate": "X", "EntryTime": t.format("03:30"), "a": t.format("03:30")},
            {"TollId": 2, "Plate": "Y", "EntryTime": t.format("04:00"), "a": t.format("04:00")},
        ],
    )
    _write(
        tmp_path / "exit.jsonl",
        [
            {"TollId": 2, "Plate": "X", "ExitTime": t.format("05:20"), "a": t.format("05:20")},
            {"TollId": 3, "Plate": "Y", "ExitTime": t.format("05:30"), "a": t.format("05:30")},
        ],
    )
    (tmp_path / "job.toml").write_text(
        '[inputs.Entry]\npath = "entry.jsonl"\narrival_time = "a"\n'
        '[inputs.Exit]\npath = "exit.jsonl"\narrival_time = "a"\n'
    )
    query = (
        "SELECT Entry.TollId, Entry.EntryTime, [Exit].ExitTime, Entry.Plate,\n"
        "       DATEDIFF(minute, Entry.EntryTime, [Exit].ExitTime) AS DurationInMinutes\n"
        "INTO output FROM Entry TIMESTAMP BY EntryTime JOIN [Exit] TIMESTAMP BY ExitTime\n"
        "ON (Entry.TollId = [Exit].TollId AND Entry.Plate = [Exit].Plate)\n"
        "AND DATEDIFF(minute, Entry, [Exit]) BETWEEN 0 AND 15"
    )
    translation = translate(query, load_bindings(tmp_path / "job.toml"))
    assert any("[select] reads each match" in note for note in translation.notes)
    assert simulate(translation.job).events == [
        {
            "type": "event",
            "TollId": 2,
            "EntryTime": t.format("03:30"),
            "ExitTime": t.format("05:20"),
            "Plate": "X",
            "DurationInMinutes": 2,
            "timestamp": t.format("05:20"),
        }
    ]


def test_datediff_outside_a_join_is_translated() -> None:
    j = job(
        "SELECT Plate, DATEDIFF(second, EntryTime, ExitTime) AS s FROM i WHERE "
        "DATEDIFF(mi, EntryTime, '2026-03-01T09:00:00Z') < 0"
    )
    assert j.filter is not None
    assert j.filter.where == "DATEDIFF(minute, EntryTime, '2026-03-01T09:00:00Z') < 0"
    assert [(p.name, p.expression) for p in j.select] == [
        ("Plate", "Plate"),
        ("s", "DATEDIFF(second, EntryTime, ExitTime)"),
    ]
    w = job(
        "SELECT TollId, DATEDIFF(hh, System.Timestamp(), '2026-03-02T00:00:00Z') AS h, "
        "COUNT(*) AS n FROM i GROUP BY TollId, TumblingWindow(minute, 3) "
        "HAVING DATEDIFF(second, '2026-03-01T00:00:00Z', System.Timestamp()) > 60"
    )
    assert w.window is not None
    assert w.window.having == "DATEDIFF(second, '2026-03-01T00:00:00Z', window_end) > 60"
    assert [(p.name, p.expression) for p in w.select] == [
        ("TollId", "TollId"),
        ("h", "DATEDIFF(hour, window_end, '2026-03-02T00:00:00Z')"),
        ("n", "n"),
    ]


# ---------------------------------------------------------- several statements


def test_each_statement_is_a_job_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_text(
        '[inputs.TollEntry]\npath = "in"\n'
        '[outputs.All]\npath = "all"\n'
        '[outputs.Counts]\npath = "counts"\ncheckpoint = "cp"\n'
    )
    t = translate(
        "-- every entry, and counts per booth\n"
        "SELECT * INTO [All] FROM TollEntry TIMESTAMP BY EntryTime;\n"
        "SELECT TollId, COUNT(*) AS n\n"
        "INTO Counts FROM TollEntry TIMESTAMP BY EntryTime\n"
        "GROUP BY TollId, TumblingWindow(minute, 3)",
        load_bindings(tmp_path / "job.toml"),
    )
    assert [(s.output, s.line, s.column) for s in t.statements] == [("All", 2, 1), ("Counts", 3, 1)]
    first, second = t.jobs
    assert first.window is None and first.output.path == str(tmp_path / "all")
    assert second.window is not None and second.output.checkpoint == str(tmp_path / "cp")
    assert first.source == second.source
    with pytest.raises(QueryError, match=r"^q.asaql:3:1: the query has 2 statements"):
        t.job  # noqa: B018
    with pytest.raises(QueryError, match=r"^q.asaql:3:1: the query has 2 statements"):
        t.notes  # noqa: B018


def test_statements_share_the_with_steps() -> None:
    t = translate(
        "WITH fast AS (SELECT * FROM i TIMESTAMP BY t WHERE speed > 50)\n"
        "SELECT * INTO a FROM fast\n"
        "SELECT COUNT(*) AS n INTO b FROM fast GROUP BY TumblingWindow(s, 10)"
    )
    a, b = t.jobs
    assert a.filter == b.filter and a.filter is not None and a.filter.where == "speed > 50"
    assert (a.output.path, b.output.path) == ("a", "b")


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[outputs.a]\npath = "o"\n[outputs.b]\npath = "o"\n', "outputs.b.path"),
        (
            '[outputs.a]\npath = "x"\ncheckpoint = "cp"\n'
            '[outputs.b]\npath = "y"\ncheckpoint = "cp"\n',
            "outputs.b.checkpoint",
        ),
        (
            '[outputs.a]\npath = "x"\n[outputs.b]\npath = "y"\ndead_letter = "x"\n',
            "outputs.b.dead_letter",
        ),
    ],
)
def test_statements_outputs_do_not_share_folders(tmp_path: Path, toml: str, key: str) -> None:
    (tmp_path / "job.toml").write_text('[inputs.i]\npath = "in"\n' + toml)
    with pytest.raises(ConfigError) as caught:
        translate(
            "SELECT * INTO a FROM i\nSELECT * INTO b FROM i", load_bindings(tmp_path / "job.toml")
        )
    assert caught.value.key == key, str(caught.value)


def test_a_plain_output_binds_one_statement(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_text('[source]\npath = "in"\n[output]\npath = "o"\n')
    with pytest.raises(QueryError, match=r"^q.asaql:2:15: INTO b writes to the output of"):
        translate(
            "SELECT * INTO a FROM i\nSELECT * INTO b FROM i", load_bindings(tmp_path / "job.toml")
        )


# --------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        # UNION
        (
            "SELECT k, v FROM a UNION SELECT w AS v, k FROM b",
            "1:26",
            "the branches of UNION select different columns (k, v; w AS v, k): Stream "
            "Analytics matches them by name and order",
        ),
        ("SELECT k FROM a UNION SELECT k, v FROM b", "1:23", "select different columns (k; k, v)"),
        ("SELECT * FROM a UNION SELECT k FROM b", "1:23", "select different columns (*; k)"),
        (
            "SELECT k, System.Input() AS s FROM a UNION SELECT k, System.Input() AS s FROM A",
            "1:79",
            "UNION reads the input A twice (also at 1:36) in a query that reads System.Input()",
        ),
        (
            "WITH u AS (SELECT * FROM a UNION SELECT * FROM b) "
            "SELECT *, System.Input() AS s FROM u UNION SELECT *, System.Input() AS s FROM a",
            "1:129",
            "UNION reads the input a twice (also at 1:26) in a query that reads System.Input()",
        ),
        (
            "WITH u AS (SELECT k, v AS c FROM a UNION SELECT k, w AS c FROM a) "
            "SELECT AVG(c) AS m FROM u GROUP BY TumblingWindow(s, 5)",
            "1:64",
            "(a window or an analytic function over a UNION step whose branches compute a "
            "column differently reads it too)",
        ),
        (
            "SELECT * FROM a PARTITION BY p UNION SELECT * FROM b PARTITION BY p",
            "1:30",
            "PARTITION BY in a UNION is not supported yet",
        ),
        (
            "WITH u AS (SELECT * FROM a UNION SELECT * FROM b) SELECT * FROM u PARTITION BY p",
            "1:80",
            "PARTITION BY over a UNION is not supported yet",
        ),
        (
            "SELECT COUNT(*) AS n FROM a GROUP BY TumblingWindow(s, 5) "
            "UNION SELECT COUNT(*) AS n FROM b GROUP BY TumblingWindow(s, 5)",
            "1:29",
            "a window in a branch of UNION is not supported yet",
        ),
        (
            "WITH w AS (SELECT COUNT(*) AS n FROM a GROUP BY TumblingWindow(s, 5)) "
            "SELECT * FROM w UNION SELECT * FROM b",
            "1:71",
            "a window in a branch of UNION",
        ),
        (
            "SELECT * FROM a TIMESTAMP BY t UNION SELECT * FROM b",
            "1:52",
            "b has no TIMESTAMP BY but a has",
        ),
        (
            "SELECT * FROM a TIMESTAMP BY t OVER d UNION SELECT * FROM b TIMESTAMP BY t OVER e",
            "1:81",
            "OVER e differs from OVER d of a",
        ),
        (
            "SELECT * FROM a UNION SELECT * INTO o FROM b",
            "1:37",
            "INTO in a later branch of UNION",
        ),
        (
            "SELECT * FROM [toll a] UNION SELECT * FROM b",
            "1:15",
            "the input 'toll a' cannot name an input of a job's union",
        ),
        (
            "SELECT * FROM a UNION SELECT * FROM e JOIN x ON e.k = x.k "
            "AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:39",
            "a JOIN in a branch of UNION is not supported yet",
        ),
        (
            "WITH s AS (SELECT a.k FROM a UNION SELECT k FROM b JOIN c ON b.k = c.k "
            "AND DATEDIFF(s, b, c) BETWEEN 0 AND 1) "
            "SELECT COUNT(*) AS n FROM s GROUP BY TumblingWindow(s, 5)",
            "1:36",
            "a window over the UNION step s: its branches read inputs, without JOIN or APPLY",
        ),
        # JOIN
        (  # (LEFT OUTER JOIN of two streams is translated: semantics §7.9)
            "SELECT * FROM e LEFT JOIN x ON e.k = x.k",
            "1:22",
            "JOIN without DATEDIFF(unit, a, b) BETWEEN low AND high",
        ),
        ("SELECT * FROM e CROSS JOIN x ON e.k = x.k", "1:23", "CROSS JOIN is not supported yet"),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k",
            "1:17",
            "JOIN without DATEDIFF(unit, a, b) BETWEEN low AND high",
        ),
        (
            "SELECT * FROM e JOIN x ON DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:17",
            "JOIN without an equality of columns",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = e.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:27",
            "e.k = e.k compares two columns of one input",
        ),
        (
            "SELECT * FROM e JOIN x ON k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:27",
            "k in the ON of a JOIN: qualify it with its input (e.k = x.k)",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = y.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:33",
            "y names neither input of the JOIN",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k + 1 AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:33",
            "an expression with '+' in an equality of ON",
        ),
        (
            "SELECT * FROM e JOIN x ON e.[a b] = x.[a b] AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:27",
            "column 'a b' cannot be a sparktide column name",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e) BETWEEN 0 AND 1",
            "1:41",
            "DATEDIFF(unit, a, b) takes a unit and the two inputs",
        ),
        (
            "WITH j AS (SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1) "
            "SELECT * FROM j PARTITION BY p",
            "1:116",
            "PARTITION BY over a JOIN is not supported yet",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) > 0 "
            "AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:41",
            "an expression with '>' in the ON of a JOIN is not supported yet",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k OR DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:27",
            "an expression with OR in the ON of a JOIN",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e.t, x.t) BETWEEN 0 AND 1",
            "1:53",
            "DATEDIFF(unit, e.t, ...) in the ON of a JOIN is not supported yet",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, e) BETWEEN 0 AND 1",
            "1:41",
            "DATEDIFF(unit, a, b) in a JOIN names both inputs",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, z) BETWEEN 0 AND 1",
            "1:56",
            "z names neither input of the JOIN",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(month, e, x) BETWEEN 0 AND 1",
            "1:50",
            "DATEDIFF(month, ...) in a JOIN: use day, hour",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) NOT BETWEEN 0 AND 1",
            "1:41",
            "DATEDIFF(...) NOT BETWEEN in ON",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) > 0",
            "1:41",
            "an expression with '>' in the ON of a JOIN",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 5 AND 1",
            "1:67",
            "with low above high matches nothing",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(day, e, x) BETWEEN 0 AND 8",
            "1:69",
            "bounds a JOIN's DATEDIFF to 7 days",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(mcs, e, x) BETWEEN 0 AND 0.5",
            "1:75",
            "0.5 is not a whole number of microseconds",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 'a' AND 1",
            "1:67",
            "a constant as a bound of DATEDIFF",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1 "
            "AND DATEDIFF(s, e, x) BETWEEN 0 AND 2",
            "1:79",
            "a second DATEDIFF in ON",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1 "
            "JOIN y ON e.k = y.k AND DATEDIFF(s, e, y) BETWEEN 0 AND 1",
            "1:75",
            "a JOIN of a third stream (y) is not supported yet",
        ),
        (
            "SELECT * FROM e JOIN e ON e.k = e.k AND DATEDIFF(s, e, e) BETWEEN 0 AND 1",
            "1:15",
            "a JOIN of e with itself needs an alias on each side",
        ),
        (
            "SELECT * FROM e a JOIN e ON a.k = e.k AND DATEDIFF(s, a, e) BETWEEN 0 AND 1",
            "1:24",
            "a JOIN of e with itself needs an alias on each side",
        ),
        (
            "SELECT * FROM e a JOIN e A ON a.k = a.k AND DATEDIFF(s, a, a) BETWEEN 0 AND 1",
            "1:24",
            "A names both sides of the JOIN",
        ),
        (
            "SELECT * FROM e a JOIN x a ON a.k = a.k AND DATEDIFF(s, a, a) BETWEEN 0 AND 1",
            "1:24",
            "a names both inputs of the JOIN",
        ),
        (
            "WITH s AS (SELECT * FROM i) "
            "SELECT * FROM s JOIN x ON s.k = x.k AND DATEDIFF(s, s, x) BETWEEN 0 AND 1",
            "1:43",
            "a JOIN of the step s is not supported yet",
        ),
        (
            "SELECT * FROM e PARTITION BY p JOIN x "
            "ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:30",
            "PARTITION BY in a JOIN is not supported yet",
        ),
        (
            "SELECT * FROM e TIMESTAMP BY t OVER d JOIN x TIMESTAMP BY t "
            "ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:37",
            "TIMESTAMP BY ... OVER in a JOIN is not supported yet",
        ),
        (
            "SELECT * FROM e TIMESTAMP BY t JOIN x "
            "ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:37",
            "x has no TIMESTAMP BY but e has: every input of a JOIN",
        ),
        (
            "SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1 WHERE v > 1",
            "1:81",
            "v over a JOIN: qualify it with its input (e.v)",
        ),
        (
            "WITH j AS (SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1) "
            "SELECT * FROM j WHERE v > 1",
            "1:103",
            "WHERE over a JOIN is not supported yet",
        ),
        (
            "SELECT e.*, x.* FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:13",
            "x.*: a SELECT over a JOIN writes one input's fields whole; name the other's columns",
        ),
        (
            "WITH j AS (SELECT e.*, x.v AS w FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) "
            "BETWEEN 0 AND 1) SELECT j.k FROM j",
            "1:106",
            "j.k is not a column of the step j: name it there (e.k AS k), e.* is not read",
        ),
        # columns over a JOIN: qualified, of an input, computable
        (
            "SELECT Plate FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:8",
            "Plate over a JOIN: qualify it with its input (e.Plate or x.Plate)",
        ),
        (
            "SELECT a.k AS k, DATEDIFF(minute, a, b) AS d FROM e a JOIN x b "
            "ON a.k = b.k AND DATEDIFF(s, a, b) BETWEEN 0 AND 1",
            "1:35",
            "a names an input of the JOIN: outside ON a column is input.field",
        ),
        (
            "SELECT y.k FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:8",
            "y names neither input of the JOIN",
        ),
        (
            "SELECT e.k, x.k FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:13",
            "the output column k is named twice",
        ),
        (
            "SELECT DATEDIFF(minute, e.t, x.t) FROM e JOIN x "
            "ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:8",
            "DATEDIFF(...) needs a name: add AS name",
        ),
        (
            "SELECT DATEDIFF(fortnight, e.t, x.t) AS m FROM e JOIN x "
            "ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:17",
            "DATEDIFF(fortnight, ...) in SELECT: the date part is one of year, quarter, month",
        ),
        (
            "SELECT DATEDIFF(minute, e.t, '2026-03-01 09:00:00') AS m FROM e JOIN x "
            "ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:30",
            "DATEDIFF's time '2026-03-01 09:00:00' is not an ISO-8601 date-time with a zone",
        ),
        (
            "SELECT DATEDIFF(minute, e.t, GetArrayElements(x.t)) AS m FROM e JOIN x "
            "ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:30",
            "GetArrayElements(...) is not supported yet",
        ),
        (
            "SELECT DATEDIFF(minute, e.t) AS m FROM e JOIN x "
            "ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:8",
            "DATEDIFF(unit, start, end) takes a unit and two times",
        ),
        (
            "SELECT UPPERCASE(e.p) AS p FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) "
            "BETWEEN 0 AND 1",
            "1:8",
            "UPPERCASE(...) is not supported yet: functions are not translated (only the scalar",
        ),
        (
            "SELECT COUNT(*) AS n FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:8",
            "COUNT(...) over a JOIN is not supported yet",
        ),
        (
            "SELECT e.k AS type FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:8",
            "'type' is a name sparktide writes itself",
        ),
        (
            "SELECT e.k, * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1",
            "1:13",
            "SELECT * with other columns over a JOIN: name the input whose fields it writes",
        ),
        (
            "WITH j AS (SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1) "
            "SELECT j.k FROM j",
            "1:94",
            "SELECT j.k over the JOIN of the step j is not supported yet: select the columns in "
            "the JOIN's own SELECT",
        ),
        (
            "SELECT * FROM i WHERE DATEDIFF(fortnight, a, b) > 1",
            "1:32",
            "DATEDIFF(fortnight, ...) in WHERE: the date part is one of",
        ),
        (
            "WITH j AS (SELECT * FROM e JOIN x ON e.k = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1) "
            "SELECT COUNT(*) AS n FROM j GROUP BY TumblingWindow(s, 5)",
            "1:115",
            "a window over a step that selects a JOIN's matches whole (SELECT *)",
        ),
        # several statements
        (
            "SELECT * INTO a FROM x; SELECT * INTO A FROM y",
            "1:39",
            "INTO A writes to the output of the statement at 1:1",
        ),
        (
            "SELECT * FROM x\nSELECT * FROM y",
            "2:1",
            "this SELECT (no INTO) writes to the output of the statement at 1:1",
        ),
        (
            "SELECT * INTO a FROM x\nSELECT * INTO b FROM y WHERE CAST(v AS money) > 1",
            "2:30",
            "CAST(... AS money) is not supported yet",
        ),
    ],
)
def test_refusals_name_construct_and_position(text: str, position: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        translate(text)
    assert str(caught.value).startswith(f"q.asaql:{position}: "), str(caught.value)
    assert message in str(caught.value), str(caught.value)


def test_values_inside_a_match_s_fields_are_read_inside_them() -> None:
    """``a.rec.w.q`` over a JOIN of two streams, in SELECT and in WHERE, is the value
    inside the input's field (semantics §11.14); a field that is no record reads null."""
    j = translate(
        "SELECT a.rec.z AS z, a.rec.w.q AS q, b.info.name AS name INTO o "
        "FROM e a JOIN x b ON a.k = b.k AND DATEDIFF(s, a, b) BETWEEN 0 AND 5 "
        "WHERE b.info.name IS NOT NULL OR a.rec.z > 5"
    ).job
    assert j.join is not None
    assert j.join.condition == (
        "GETRECORDPROPERTYVALUE(x.info, 'name') IS NOT NULL OR GETRECORDPROPERTYVALUE(e.rec, "
        "'z') > 5"
    )
    assert [p.expression for p in j.select] == [
        "GETRECORDPROPERTYVALUE(e.rec, 'z')",
        "GETRECORDPROPERTYVALUE(e.rec, 'w.q')",
        "GETRECORDPROPERTYVALUE(x.info, 'name')",
    ]
    assert round_trips(j)


def test_a_value_inside_a_record_is_a_join_column() -> None:
    """``ON e.k.z = x.k`` joins on the value ``z`` inside ``e``'s record ``k``: the pair
    ``["k.z", "k"]``, which the reference engine reads inside the record (a missing
    part, or a part that is no record, never matches)."""
    from sparktide.core.join import join_key

    j = translate(
        "SELECT * INTO o FROM e JOIN x ON e.k.z = x.k AND DATEDIFF(s, e, x) BETWEEN 0 AND 1"
    ).job
    assert j.join is not None and j.join.on == (("k.z", "k"),)
    assert join_key({"k": {"z": 3}}, j.join.left_on) == join_key({"k": 3.0}, j.join.right_on)
    assert join_key({"k": "z"}, j.join.left_on) is None
    assert join_key({"k": {"y": 3}}, j.join.left_on) is None
    assert round_trips(j)
