"""Reference data met by a join of two streams (semantics §11.26): the rows a match
meets (:func:`sparktide.core.jointables.tables_met`) and what the job model refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparktide.core.jointables import tables_met
from sparktide.core.namedcolumns import named_columns
from sparktide.errors import ConfigError
from sparktide.job import Job, TableJoin


def _tables(*steps: tuple[TableJoin, dict]) -> list:
    return list(steps)


_CARS = (
    TableJoin("Exit", "Cars", ("plate",)),
    {("A",): [{"owner": "ann"}, {"owner": "al"}], ("B",): [{"owner": "bo"}]},
)
_BOOTHS = (
    TableJoin("Entry", "Booths", (("booth", "id"),), "left"),
    {(1,): [{"name": "north"}]},
)


def test_one_entry_per_combination_in_the_tables_order() -> None:
    met = tables_met(_tables(_CARS, _BOOTHS), "Entry", {"booth": 1}, {"plate": "A"})
    assert met == [
        {"Cars": {"owner": "ann"}, "Booths": {"name": "north"}},
        {"Cars": {"owner": "al"}, "Booths": {"name": "north"}},
    ]


def test_a_left_table_that_meets_none_is_null_an_inner_one_drops_the_match() -> None:
    tables = _tables(_CARS, _BOOTHS)
    assert tables_met(tables, "Entry", {"booth": 2}, {"plate": "B"}) == [
        {"Cars": {"owner": "bo"}, "Booths": None}
    ]
    assert tables_met(tables, "Entry", {"booth": 1}, {"plate": "C"}) == []
    # (a left join's lone left event: the right event's fields meet nothing)
    assert tables_met(tables, "Entry", {"booth": 1}, None) == []
    assert tables_met(_tables(_BOOTHS), "Entry", {}, None) == [{"Booths": None}]


_HOMES = (
    TableJoin("Cars", "Homes", (("home", "id"),)),
    {(1,): [{"city": "Oslo"}], (2,): [{"city": "Rome"}, {"city": "Bari"}]},
)


def test_a_table_met_by_an_earlier_table_s_row_meets_each_combination_s_own() -> None:
    """A table whose ``left`` is an earlier table meets each combination by that table's
    row: Ann's home 1 (one row), Al's home 2 (two rows), Bo's home 3 none (an inner
    table: that combination only is dropped); under ``left`` it is null once, and a
    null row of the earlier table meets none."""
    cars = (
        _CARS[0],
        {
            ("A",): [
                {"owner": "ann", "home": 1},
                {"owner": "al", "home": 2},
                {"owner": "bo", "home": 3},
            ]
        },
    )
    met = tables_met(_tables(cars, _HOMES), "Entry", {}, {"plate": "A"})
    assert [(c["Cars"]["owner"], c["Homes"]["city"]) for c in met] == [
        ("ann", "Oslo"),
        ("al", "Rome"),
        ("al", "Bari"),
    ]
    left_homes = (TableJoin("Cars", "Homes", (("home", "id"),), "left"), _HOMES[1])
    met = tables_met(_tables(cars, left_homes), "Entry", {}, {"plate": "A"})
    assert [(c["Cars"]["owner"], c["Homes"]) for c in met][-1] == ("bo", None)
    left_cars = (TableJoin("Exit", "Cars", ("plate",), "left"), cars[1])
    assert tables_met(_tables(left_cars, left_homes), "Entry", {}, {"plate": "Z"}) == [
        {"Cars": None, "Homes": None}
    ]
    assert tables_met(_tables(left_cars, _HOMES), "Entry", {}, {"plate": "Z"}) == []


def _data(tmp_path: Path, **join: Any) -> dict[str, Any]:
    return {
        "inputs": {
            "Entry": {"path": str(tmp_path / "e"), "timestamp_by": "t"},
            "Exit": {"path": str(tmp_path / "x"), "timestamp_by": "t"},
            "Cars": {"path": str(tmp_path / "cars.jsonl"), "reference": True},
        },
        "join": {"left": "Entry", "right": "Exit", "on": ["plate"], "between": ["0s", "1m"]} | join,
        "output": {"path": str(tmp_path / "out")},
    }


_THEN = [{"left": "Exit", "right": "Cars", "on": ["plate"]}]


@pytest.mark.parametrize(
    ("changes", "key", "message"),
    [
        ({"then": [{"left": "Cars", "right": "Cars", "on": ["plate"]}]}, "join.then[0].right", ""),
        (
            {"then": [{"left": "Nope", "right": "Cars", "on": ["plate"]}]},
            "join.then[0].left",
            "Entry or Exit) or a table met before it (none yet)",
        ),
        (
            {"then": [{**_THEN[0], "condition": "Exit.v > 1"}]},
            "join.then[0].condition",
            "own fields",
        ),
        ({}, "inputs.Cars.reference", "add a [[join.then]]"),
        ({"then": _THEN, "condition": "Cars.x = 1"}, "join.condition", "'Cars' is not an input"),
        (
            {"then": [{**_THEN[0], "left": "Entry"}], "right": "W", "window": True},
            "join.then",
            "a window's records meets no",
        ),
    ],
)
def test_what_the_job_model_refuses(tmp_path, changes, key, message) -> None:
    data = _data(tmp_path, **{k: v for k, v in changes.items() if k != "window"})
    if changes.get("window"):  # (a join of the window's records, §7.12)
        data["window"] = {
            "type": "tumbling",
            "size": "1m",
            "name": "W",
            "aggregates": {"n": "count(*)"},
        }
    with pytest.raises(ConfigError) as info:
        Job.from_dict(data, base_dir=tmp_path)
    assert info.value.key == key and message in str(info.value), info.value


def test_where_and_select_read_the_rows(tmp_path) -> None:
    data = _data(tmp_path, then=_THEN, where="Cars.expired = 1")
    data["select"] = {"owner": "Cars.owner", "plate": "Entry.plate"}
    job = Job.from_dict(data, base_dir=tmp_path)
    assert job.join is not None and job.join.stream_tables == ("Cars",)
    assert not job.references_joined and not job.windows_matches
    data["select"] = {"owner": "Booths.owner"}
    with pytest.raises(ConfigError) as info:
        Job.from_dict(data, base_dir=tmp_path)
    assert info.value.key == "select.owner" and "Entry, Exit or Cars" in str(info.value)


def test_a_window_over_the_matches_reads_the_rows(tmp_path) -> None:
    """A window over the join's matches (semantics §7.11) reads each match's rows as
    ``<table>.<field>``; a table's field is no input column (``missing_column``)."""
    data = _data(tmp_path, then=_THEN)
    data["window"] = {
        "type": "tumbling",
        "size": "1m",
        "group_by": [{"owner": "Cars.owner"}],
        "aggregates": {"n": "count(*)", "top": "max(Cars.rank)"},
    }
    job = Job.from_dict(data, base_dir=tmp_path)
    assert job.windows_matches
    assert not [c.column for c in named_columns(job) if "owner" in c.column or "rank" in c.column]
