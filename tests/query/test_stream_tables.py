"""JOINs of reference data after a JOIN of two streams (semantics §11.26): the
translation (``[[join.then]]`` per table, ``WHERE`` over the rows as ``[join] where``,
the rows' columns in ``[select]``), what the job does on data, and every refusal with
its position."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from sparktide.core.engine import simulate
from sparktide.core.records import InputRecord
from sparktide.errors import QueryError
from sparktide.job import Job
from sparktide.query import Bindings, job_to_toml, load_bindings, translate_text
from sparktide.time import parse_instant

_JOB_FILE = (
    '[inputs.Entry]\npath = "entries"\n'
    '[inputs.Exit]\npath = "exits"\n'
    '[inputs.Cars]\nreference = true\npath = "cars.jsonl"\n'
    '[inputs.Booths]\nreference = true\npath = "booths.jsonl"\n'
    '[inputs.Third]\npath = "third"\n'
)
_TRIPS = (
    "FROM Entry e TIMESTAMP BY t JOIN Exit x TIMESTAMP BY t "
    "ON e.plate = x.plate AND DATEDIFF(minute, e, x) BETWEEN 0 AND 15 "
)


@pytest.fixture
def b(tmp_path: Path) -> Bindings:
    (tmp_path / "job.toml").write_text(_JOB_FILE, "utf-8")
    return load_bindings(tmp_path / "job.toml")


def job(text: str, b: Bindings) -> Job:
    return translate_text(text, "asaql", b, "q.asaql").job


def test_each_later_join_of_a_table_is_a_then_entry(b: Bindings) -> None:
    j = job(
        "SELECT e.plate, c.owner, o.name AS booth INTO out "
        + _TRIPS
        + "JOIN Cars c ON x.plate = c.plate "
        "LEFT OUTER JOIN Booths o ON e.booth = o.id AND o.open = 1 "
        "WHERE c.expired = 1 AND e.speed > 10",
        b,
    )
    assert j.join is not None and j.join.between == (0, 15 * 60_000_000)
    assert [(s.left, s.right, s.on, s.type, s.condition) for s in j.join.then] == [
        ("Exit", "Cars", ("plate",), "inner", None),
        ("Entry", "Booths", (("booth", "id"),), "left", "Booths.open = 1"),
    ]
    assert j.join.where == "Cars.expired = 1"  # (over the rows: after they are met)
    assert dict(j.inputs)["Entry"].where == "speed > 10"  # (one input's: before, §11.20)
    assert [(p.name, p.expression) for p in j.select] == [
        ("plate", "Entry.plate"),
        ("owner", "Cars.owner"),
        ("booth", "Booths.name"),
    ]
    assert not j.references_joined and Job.from_dict(tomllib.loads(job_to_toml(j))) == j


def test_a_self_join_meets_a_table_by_one_alias(b: Bindings) -> None:
    """A JOIN of an input with itself reads it once per alias (the inputs ``a`` and
    ``b``): the table is met by the alias its ``ON`` names."""
    j = job(
        "SELECT a.plate, c.owner INTO out FROM Entry a TIMESTAMP BY t JOIN Entry z "
        "TIMESTAMP BY t ON a.plate = z.plate AND DATEDIFF(minute, a, z) BETWEEN 1 AND 5 "
        "JOIN Cars c ON z.plate = c.plate",
        b,
    )
    assert j.join is not None and (j.join.left, j.join.right) == ("a", "z")
    assert [(s.left, s.right) for s in j.join.then] == [("z", "Cars")]
    assert [(p.name, p.expression) for p in j.select] == [
        ("plate", "a.plate"),
        ("owner", "Cars.owner"),
    ]


def test_a_later_table_meets_the_rows_of_an_earlier_one(b: Bindings, tmp_path: Path) -> None:
    """``JOIN Booths o ON c.home = o.id`` after ``JOIN Cars c``: [[join.then]] with left =
    Cars; each combination meets the table by its row of Cars (one per car row met, a
    left table none once with null); an inner one that meets none drops only that
    combination."""
    (tmp_path / "cars.jsonl").write_text(
        '{"plate": "A", "owner": "ann", "home": 1}\n{"plate": "B", "owner": "bo", "home": 9}\n'
        '{"plate": "A", "owner": "al", "home": 2}\n'
    )
    (tmp_path / "booths.jsonl").write_text(
        '{"id": 1, "name": "north"}\n{"id": 2, "name": "south"}\n'
    )
    text = (
        "SELECT e.plate, c.owner, o.name AS home INTO out "
        + _TRIPS
        + "JOIN Cars c ON x.plate = c.plate {} JOIN Booths o ON c.home = o.id"
    )
    j = job(text.format("LEFT OUTER"), b)
    assert j.join is not None
    assert [(s.left, s.right, s.on, s.type) for s in j.join.then] == [
        ("Exit", "Cars", ("plate",), "inner"),
        ("Cars", "Booths", (("home", "id"),), "left"),
    ]
    assert Job.from_dict(tomllib.loads(job_to_toml(j))) == j
    records = [
        _record(0, "Entry", "2026-03-01T09:00:00Z", plate="A"),
        _record(1, "Entry", "2026-03-01T09:01:00Z", plate="B"),
        _record(2, "Exit", "2026-03-01T09:03:00Z", plate="A"),
        _record(3, "Exit", "2026-03-01T09:04:00Z", plate="B"),
    ]
    events = [(e["plate"], e["owner"], e["home"]) for e in simulate(j, records).events]
    assert events == [("A", "ann", "north"), ("A", "al", "south"), ("B", "bo", None)]
    inner = job(text.format(""), b)
    events = [(e["plate"], e["owner"], e["home"]) for e in simulate(inner, records).events]
    assert events == [("A", "ann", "north"), ("A", "al", "south")]


def _record(seq: int, name: str, t: str, **fields: object) -> InputRecord:
    at = parse_instant(t)
    return InputRecord(
        seq, {"t": t, **fields}, partition=f"{name}/0", event_time=at, arrival_time=at
    )


def test_each_match_is_written_once_per_row_it_meets(b: Bindings, tmp_path: Path) -> None:
    (tmp_path / "cars.jsonl").write_text(
        '{"plate": "A", "owner": "ann"}\n{"plate": "B", "owner": "bo"}\n'
        '{"plate": "A", "owner": "al"}\n'
    )
    (tmp_path / "booths.jsonl").write_text('{"id": 1, "name": "north"}\n')
    j = job(
        "SELECT e.plate, c.owner, o.name AS booth INTO out "
        + _TRIPS
        + "JOIN Cars c ON x.plate = c.plate LEFT OUTER JOIN Booths o ON e.booth = o.id",
        b,
    )
    records = [
        _record(0, "Entry", "2026-03-01T09:00:00Z", plate="A", booth=1),
        _record(1, "Entry", "2026-03-01T09:01:00Z", plate="B", booth=2),
        _record(2, "Entry", "2026-03-01T09:02:00Z", plate="C", booth=1),
        _record(3, "Exit", "2026-03-01T09:03:00Z", plate="A"),
        _record(4, "Exit", "2026-03-01T09:04:00Z", plate="B"),
        _record(5, "Exit", "2026-03-01T09:05:00Z", plate="C"),  # (no car: not written)
    ]
    events = [(e["plate"], e["owner"], e["booth"]) for e in simulate(j, records).events]
    assert events == [("A", "ann", "north"), ("A", "al", "north"), ("B", "bo", None)]


@pytest.mark.parametrize(
    ("tail", "where", "message"),
    [
        ("JOIN Third y ON e.plate = y.plate", "1:145", "a JOIN of a third stream (Third)"),
        (
            "JOIN Cars c ON x.plate = c.plate AND e.booth = c.booth",
            "1:182",
            "the ON of the JOIN with Cars reads two inputs",
        ),
        (
            "JOIN Cars c ON x.plate = c.plate JOIN Booths o ON o.id = c.booth AND o.x = e.x",
            "1:220",
            "the ON of the JOIN with Booths reads two inputs",
        ),
        ("JOIN Cars c ON c.plate = 'A'", "1:145", "reads no column of e, x or a table met"),
        (
            "JOIN Cars c ON x.plate = c.plate AND x.speed > c.limit",
            "1:182",
            "takes conditions on its own columns only",
        ),
        ("JOIN Cars c ON x.plate = plate", "1:170", "plate in the ON of the JOIN"),
        ("JOIN Cars e ON x.plate = e.plate", "1:150", "e names two inputs of the JOINs"),
    ],
)
def test_refusals_name_construct_and_position(
    b: Bindings, tail: str, where: str, message: str
) -> None:
    with pytest.raises(QueryError) as info:
        job("SELECT e.plate INTO out " + _TRIPS + tail, b)
    text = str(info.value)
    assert f"q.asaql:{where}: " in text and message in text, text


def test_a_step_that_joins_names_the_columns_a_later_select_reads(b: Bindings) -> None:
    """The step's columns are composed (semantics §13.2): the later WHERE over a table's
    column is ``[join] where``."""
    j = job(
        "WITH trips AS (SELECT e.plate AS plate, c.owner AS owner "
        + _TRIPS
        + "JOIN Cars c ON x.plate = c.plate) "
        "SELECT plate, owner INTO out FROM trips WHERE owner <> 'ann'",
        b,
    )
    assert j.join is not None and j.join.where == "Cars.owner <> 'ann'"
    assert [(s.left, s.right) for s in j.join.then] == [("Exit", "Cars")]
    assert [(p.name, p.expression) for p in j.select] == [
        ("plate", "Entry.plate"),
        ("owner", "Cars.owner"),
    ]


def test_a_window_over_the_matches_reads_the_rows(b: Bindings) -> None:
    """GROUP BY over the JOINs: a window over the matches (semantics §7.11, §11.26)."""
    j = job(
        "SELECT c.owner, COUNT(*) AS trips, COLLECT(c.model) AS models INTO out "
        + _TRIPS
        + "LEFT OUTER JOIN Cars c ON x.plate = c.plate "
        "GROUP BY c.owner, TumblingWindow(minute, 10)",
        b,
    )
    assert j.windows_matches and j.window is not None and j.join is not None
    assert [(s.left, s.right, s.type) for s in j.join.then] == [("Exit", "Cars", "left")]
    assert j.window.group_by == ("owner",)
    assert [str(a) for a in j.window.aggregates] == ["count(*)", "collect(Cars.model)"]
