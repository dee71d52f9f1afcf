"""``MATCH_RECOGNIZE`` (semantics §11.25): its translation into ``[match]``, the
matches of the reference engine, and every refusal with its place."""

from __future__ import annotations

import pytest

from tests.query.test_multistep import job, run
from tests.query.test_translate import test_refusals_name_construct_and_position as _refused

TOLL = """SELECT * INTO o FROM Booths TIMESTAMP BY t
MATCH_RECOGNIZE (
    LIMIT DURATION (minute, 1)
    PARTITION BY booth
    MEASURES last(toyota.plate) AS toyota_plate, LAST(Lexus.plate) AS lexus_plate,
             count(*) AS cars, COUNT(ford) AS fords, first(plate) AS first_plate
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (toyota+ Ford* lexus+)
    DEFINE
        Toyota AS Toyota.make = 'Toyota',
        Ford AS ford.make = 'Ford',
        Lexus AS Lexus.make = 'Lexus' AND LEN(lexus.plate) > 1
) AS T"""


def test_the_clause_becomes_the_match_table() -> None:
    j = job(TOLL)
    assert j.match is not None
    assert j.match.partition_by == ("booth",)
    assert j.match.limit_duration == 60_000_000
    assert j.match.pattern == "Toyota+ Ford* Lexus+"  # (spelled as DEFINE spells them)
    assert j.match.define == {
        "Toyota": "make = 'Toyota'",
        "Ford": "make = 'Ford'",
        "Lexus": "make = 'Lexus' AND LEN(plate) > 1",
    }
    assert j.match.measures == {
        "toyota_plate": "last(Toyota.plate)",
        "lexus_plate": "last(Lexus.plate)",
        "cars": "count(*)",
        "fords": "count(Ford)",
        "first_plate": "first(plate)",
    }


def _cars(*rows: tuple[str, str, int]) -> list[dict[str, object]]:
    return [
        {"booth": 1, "make": make, "plate": plate, "t": f"2026-03-01T10:00:{s:02d}Z"}
        for make, plate, s in rows
    ]


def test_matches_overlap_and_quantifiers_are_greedy() -> None:
    """Every car starts an attempt: two matches end at the same Lexus run."""
    rows = _cars(
        ("Toyota", "T1", 1),
        ("Toyota", "T2", 2),
        ("Ford", "F1", 3),
        ("Lexus", "L1", 4),
        ("Lexus", "L2", 5),
        ("Honda", "H1", 6),
    )
    got = run(job(TOLL), rows)
    common = {"toyota_plate": "T2", "lexus_plate": "L2", "fords": 1}
    assert got == [
        {**common, "cars": 5, "first_plate": "T1", "timestamp": "2026-03-01T10:00:05Z"},
        {**common, "cars": 4, "first_plate": "T2", "timestamp": "2026-03-01T10:00:05Z"},
    ]


def test_a_row_beyond_the_duration_ends_the_window() -> None:
    """A Lexus 61 s after the first Toyota is outside that start's window (LIMIT
    DURATION), inside the second's."""
    rows = _cars(("Toyota", "T1", 0), ("Toyota", "T2", 2))
    rows.append({"booth": 1, "make": "Lexus", "plate": "L1", "t": "2026-03-01T10:01:01Z"})
    got = run(job(TOLL), rows)
    assert [(r["first_plate"], r["cars"]) for r in got] == [("T2", 2)]


def test_a_variable_without_define_meets_every_event_and_dot_any() -> None:
    text = TOLL.replace(
        "PATTERN (toyota+ Ford* lexus+)", "PATTERN (Toyota (Other | . | Ford) Lexus)"
    )
    rows = _cars(("Toyota", "T1", 1), ("Honda", "H1", 2), ("Lexus", "L1", 3))
    got = run(job(text), rows)
    assert [(r["first_plate"], r["cars"], r["fords"]) for r in got] == [("T1", 3, 0)]


_PATTERN = "toyota+ Ford* lexus+"


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (TOLL.replace("AFTER MATCH SKIP TO NEXT ROW", ""), "", ""),  # (optional)
        (TOLL.replace("SKIP TO NEXT ROW", "SKIP PAST LAST ROW"), "7:5", "SKIP PAST LAST ROW"),
        (TOLL.replace("    LIMIT DURATION (minute, 1)\n", ""), "2:1", "needs LIMIT DURATION"),
        (TOLL.replace("(minute, 1)", "(fortnight, 1)"), "3:5", "not a unit"),
        (TOLL.replace("PARTITION BY booth", "PATTERN (A)"), "8:5", "a second PATTERN"),
        (TOLL.replace(_PATTERN, "toyota+ Ford lexus |"), "8:14", "at the end"),
        (TOLL.replace(_PATTERN, "toyota*? Ford lexus"), "8:14", "reluctant"),
        (TOLL.replace(_PATTERN, "(Ford*)+ toyota lexus"), "8:14", "can match no event"),
        (TOLL.replace("Ford AS ford.make", "Ford AS Lexus.make"), "11:17", "another variable's"),
        (
            TOLL.replace("Ford AS ford.make", "Honda AS ford.make"),
            "11:9",
            "Honda is not a variable",
        ),
        (TOLL.replace("Ford AS ford.make", "toyota AS ford.make"), "11:9", "toyota a second time"),
        (TOLL.replace("count(*) AS cars", "sum(toyota.x) AS cars"), "6:14", "SUM(...) in MEASURES"),
        (TOLL.replace("count(*) AS cars", "first(toyota) AS cars"), "6:14", "needs a column"),
        (TOLL.replace("COUNT(ford)", "COUNT(plate)"), "6:32", "a pattern variable or *"),
        (TOLL.replace("SELECT *", "SELECT plate"), "2:1", "with a column list"),
        (TOLL + "\nWHERE plate = 'x'", "2:1", "with WHERE"),
    ],
)
def test_refusals(text: str, position: str, message: str) -> None:
    if not message:
        assert job(text).match is not None
        return
    _refused(text, position, message)


def test_a_step_s_where_filters_the_input_before_matching() -> None:
    """``WITH f AS (SELECT * FROM i WHERE ...) SELECT * FROM f MATCH_RECOGNIZE (...)``:
    the step's WHERE is the input's own where (semantics §11.20)."""
    text = TOLL.replace(
        "SELECT * INTO o FROM Booths TIMESTAMP BY t",
        "WITH f AS (SELECT * FROM Booths TIMESTAMP BY t WHERE booth > 0)\nSELECT * INTO o FROM f",
    )
    j = job(text)
    assert j.source.where == "booth > 0" and j.filter is None and j.match is not None


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (
            "WITH m AS (SELECT * FROM i TIMESTAMP BY t MATCH_RECOGNIZE (LIMIT DURATION (minute, 1) "
            "MEASURES Count(*) AS n PATTERN (A)) AS x) SELECT n INTO o FROM m",
            "1:43",
            "MATCH_RECOGNIZE in the WITH step m is not supported yet",
        ),
        (
            "SELECT * INTO o FROM i TIMESTAMP BY t UNION SELECT * FROM j TIMESTAMP BY t "
            "MATCH_RECOGNIZE (LIMIT DURATION (minute, 1) MEASURES Count(*) AS n PATTERN (A)) AS x",
            "1:76",
            "MATCH_RECOGNIZE in a branch of UNION",
        ),
    ],
)
def test_only_a_statement_matches(text: str, position: str, message: str) -> None:
    _refused(text, position, message)


def test_measures_computed_from_measures_are_select_columns() -> None:
    """``DATEDIFF(second, First(a.t), Last(b.t)) AS secs``: each aggregate a measure of
    its own (one per distinct one), the expression a ``[select]`` column; a bare
    ``v.x`` is ``Last(v.x)``; ``System.Timestamp()`` is the match's time."""
    text = TOLL.replace(
        "MEASURES last(toyota.plate) AS toyota_plate,",
        "MEASURES toyota.plate AS toyota_plate, DATEDIFF(second, First(toyota.t), "
        "Last(lexus.t)) AS secs, DATEDIFF(second, First(Toyota.t), System.Timestamp()) AS upto,",
    )
    j = job(text)
    assert j.match is not None
    assert j.match.measures["toyota_plate"] == "last(Toyota.plate)"
    assert {k: v for k, v in j.match.measures.items() if k.startswith("_")} == {
        "_measure1": "first(Toyota.t)",
        "_measure2": "last(Lexus.t)",
    }
    select = {p.name: p.expression for p in j.select}
    assert select["secs"] == "DATEDIFF(second, _measure1, _measure2)"
    assert select["upto"] == "DATEDIFF(second, _measure1, System.Timestamp())"
    assert list(select)[:2] == ["toyota_plate", "secs"]
    rows = _cars(("Toyota", "T1", 1), ("Ford", "F1", 3), ("Lexus", "L1", 7), ("Honda", "H", 9))
    (got,) = run(j, rows)
    assert (got["toyota_plate"], got["secs"], got["upto"], got["cars"]) == ("T1", 6, 6, 3)
    assert "_measure1" not in got
