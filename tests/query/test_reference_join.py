"""Stream Analytics JOINs with reference data → jobs with ``[inputs.<name>] reference =
true`` and ``[join]`` without ``between``: the job file's ``reference`` key, every
translation (inner, ``LEFT OUTER``, the sides swapped, ``WHERE`` on the stream,
columns), the jobs on data, and every refusal with its position."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from sparktide.core.engine import simulate
from sparktide.errors import ConfigError, QueryError
from sparktide.expr import to_text
from sparktide.job import Job, Reference, load_job
from sparktide.query import Bindings, job_to_toml, load_bindings, translate_text

_JOB_FILE = (
    '[inputs.Telemetry]\npath = "telemetry.jsonl"\narrival_time = "a"\n'
    '[inputs.DeviceRef]\nreference = true\npath = "devices.csv"\nformat = "csv"\n'
    '[inputs.SiteRef]\nreference = true\npath = "sites.jsonl"\n'
    '[inputs.Other]\npath = "other.jsonl"\n'
)
_LOOKUP = (
    "SELECT * INTO o FROM Telemetry s TIMESTAMP BY t JOIN DeviceRef r ON s.DeviceId = r.DeviceId"
)


def bindings(tmp_path: Path, text: str = _JOB_FILE) -> Bindings:
    (tmp_path / "job.toml").write_text(text, "utf-8")
    return load_bindings(tmp_path / "job.toml")


def translate(text: str, b: Bindings | None = None):  # type: ignore[no-untyped-def]
    return translate_text(text, "asaql", b, "q.asaql")


def round_trips(j: Job, tmp_path: Path) -> bool:
    text = job_to_toml(j)
    (tmp_path / "printed.toml").write_text(text, "utf-8")
    return Job.from_dict(tomllib.loads(text)) == j and load_job(tmp_path / "printed.toml") == j


# ------------------------------------------------------------ the job file's key


def test_the_job_file_says_which_input_is_reference_data(tmp_path: Path) -> None:
    b = bindings(tmp_path)
    assert b.is_reference("DeviceRef") and b.is_reference("deviceref")
    assert b.is_reference("SiteRef")
    assert not b.is_reference("Telemetry") and not b.is_reference("Unbound")
    assert not Bindings().is_reference("DeviceRef")  # (no job file: no reference data)
    # reference = false is a stream, as without the key
    b = bindings(tmp_path, '[inputs.a]\nreference = false\npath = "in"\ntimestamp_by = "t"\n')
    assert not b.is_reference("a")
    assert b.input_table("a") == ("inputs.a", {"path": "in", "timestamp_by": "t"})


@pytest.mark.parametrize(
    ("table", "key", "message"),
    [
        (
            'reference = true\npath = "d.csv"\ntimestamp_by = "t"\n',
            "inputs.DeviceRef.timestamp_by",
            "reference data is a table without time, partitions or keys: it takes only path "
            "and format",
        ),
        (
            'reference = true\npath = "d.csv"\npartition = "p"\n',
            "inputs.DeviceRef.partition",
            "it takes only path and format",
        ),
        ('reference = true\nformat = "csv"\n', "inputs.DeviceRef.path", "is required"),
        ('reference = true\npath = ""\n', "inputs.DeviceRef.path", "must be a path string"),
        ('reference = true\npath = "d.csv"\nformat = "xml"\n', "inputs.DeviceRef.format", "xml"),
        ('reference = "yes"\npath = "d.csv"\n', "inputs.DeviceRef.reference", "true or false"),
        (
            'refrence = true\npath = "d.csv"\n',
            "inputs.DeviceRef.refrence",
            "unknown key (did you mean 'reference'?)",
        ),
        (
            'reference = false\npath = "d.csv"\nformat = "csv"\nrow = 1\n',
            "inputs.DeviceRef.row",
            "",
        ),
    ],
)
def test_a_reference_table_takes_path_and_format_only(
    tmp_path: Path, table: str, key: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        bindings(tmp_path, "[inputs.DeviceRef]\n" + table)
    assert caught.value.key == key, str(caught.value)
    assert message in caught.value.message


def test_reference_belongs_to_inputs_tables(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        bindings(tmp_path, '[source]\npath = "in"\nreference = true\n')
    assert caught.value.key == "source.reference"


# ------------------------------------------------------------------ translations


def test_a_join_with_reference_data_is_a_join_without_between(tmp_path: Path) -> None:
    t = translate(_LOOKUP, bindings(tmp_path))
    j = t.job
    assert j.join is not None
    assert (j.join.left, j.join.right, j.join.on, j.join.between, j.join.type) == (
        "Telemetry",
        "DeviceRef",
        ("DeviceId",),
        None,
        "inner",
    )
    assert [name for name, _ in j.inputs] == ["Telemetry"]
    assert j.source.timestamp_by == "t" and j.source.path == str(tmp_path / "telemetry.jsonl")
    assert j.references == (
        ("DeviceRef", Reference(path=str(tmp_path / "devices.csv"), format="csv")),
    )
    assert j.select == () and j.filter is None
    assert any(n.startswith("JOIN is [join] with reference data: DeviceRef") for n in t.notes)
    assert any("{Telemetry: {...}, DeviceRef: {...}, timestamp}" in n for n in t.notes)
    assert round_trips(j, tmp_path)
    assert "[inputs.DeviceRef]\nreference = true\n" in job_to_toml(j)


@pytest.mark.parametrize("kind", ["LEFT OUTER JOIN", "LEFT JOIN", "left outer join"])
def test_left_outer_join_with_reference_data_is_type_left(tmp_path: Path, kind: str) -> None:
    t = translate(_LOOKUP.replace("JOIN", kind), bindings(tmp_path))
    assert t.job.join is not None and t.job.join.type == "left"
    assert any('LEFT OUTER JOIN (type = "left")' in n for n in t.notes)
    assert 'type = "left"' in job_to_toml(t.job) and round_trips(t.job, tmp_path)


def test_reference_data_on_the_left_of_an_inner_join_is_the_same_join(tmp_path: Path) -> None:
    b = bindings(tmp_path)
    swapped = translate(
        "SELECT * INTO o FROM DeviceRef r JOIN Telemetry s TIMESTAMP BY t "
        "ON r.DeviceId = s.DeviceId",
        b,
    )
    assert swapped.job == translate(_LOOKUP, b).job
    assert any("an inner join is the same either way round" in n for n in swapped.notes)


def test_columns_and_a_where_on_the_stream(tmp_path: Path) -> None:
    t = translate(
        "SELECT s.DeviceId, r.Model, Telemetry.Temperature - DeviceRef.Threshold AS OverBy,\n"
        "       DATEDIFF(second, s.t, System.Timestamp()) AS Shift, System.Timestamp() AS At\n"
        "INTO o FROM Telemetry s TIMESTAMP BY t\n"
        "LEFT OUTER JOIN DeviceRef r ON s.DeviceId = r.DeviceId AND r.Site = s.Site\n"
        "WHERE s.Temperature IS NOT NULL AND NOT Telemetry.Status IN ('test', 'off')",
        bindings(tmp_path),
    )
    j = t.job
    assert j.join is not None and j.join.on == ("DeviceId", "Site") and j.join.type == "left"
    assert [(p.name, p.expression) for p in j.select] == [
        ("DeviceId", "Telemetry.DeviceId"),
        ("Model", "DeviceRef.Model"),
        ("OverBy", "Telemetry.Temperature - DeviceRef.Threshold"),
        ("Shift", "DATEDIFF(second, Telemetry.t, timestamp)"),
        ("At", "timestamp"),
    ]
    assert j.filter is not None
    assert j.filter.where == "Temperature IS NOT NULL AND NOT Status IN ('test', 'off')"
    assert any("it stops events before they meet the table" in n for n in t.notes)
    assert any("the time of Telemetry's event" in n for n in t.notes)
    assert round_trips(j, tmp_path)


def test_a_where_on_the_tables_fields_is_the_join_condition(tmp_path: Path) -> None:
    """Semantics §11.8: over an inner JOIN with reference data, a WHERE term reading the
    table's fields (alone or with the stream's) is a term of ``[join] condition``; the
    terms on the stream's fields alone stay its ``[filter]``."""
    t = translate(
        "SELECT s.DeviceId, r.Model INTO o FROM Telemetry s TIMESTAMP BY t "
        "JOIN DeviceRef r ON s.DeviceId = r.DeviceId "
        "WHERE r.Expired = '1' AND s.v > 0 AND s.v > r.Threshold",
        bindings(tmp_path),
    )
    j = t.job
    assert j.join is not None and j.join.type == "inner"
    assert j.join.condition == "DeviceRef.Expired = '1' AND Telemetry.v > DeviceRef.Threshold"
    assert j.filter is not None and j.filter.where == "v > 0"
    assert any(n.startswith("the WHERE over the pair is [join] condition") for n in t.notes)
    assert round_trips(j, tmp_path)


def test_a_where_over_a_left_outer_join_is_the_join_where(tmp_path: Path) -> None:
    """Semantics §11.8: over LEFT OUTER JOIN, a WHERE term reading the table's fields is
    ``[join] where``, over what the join writes (it also drops an event whose rows all
    fail it, and keeps the events no row met where it reads null as true); the terms on
    the stream's fields alone stay ``[filter]``."""
    t = translate(
        "SELECT s.DeviceId, r.Model INTO o FROM Telemetry s TIMESTAMP BY t "
        "LEFT OUTER JOIN DeviceRef r ON s.DeviceId = r.DeviceId "
        "WHERE s.v > 1 AND (DeviceRef.Threshold < s.v OR r.DeviceId IS NULL)",
        bindings(tmp_path),
    )
    j = t.job
    assert j.join is not None and j.join.type == "left" and j.join.condition is None
    assert j.join.where == ("DeviceRef.Threshold < Telemetry.v OR DeviceRef.DeviceId IS NULL")
    assert j.filter is not None and j.filter.where == "v > 1"
    assert any(n.startswith("the WHERE over the LEFT OUTER JOIN") for n in t.notes)
    assert round_trips(j, tmp_path)


def _keys(j: Job) -> list[tuple[str, str | None]]:
    """The window's grouping columns: name, and the text of a computed one's expression."""
    assert j.window is not None
    return [(n, None if e is None else to_text(e)) for n, e in j.window.group_keys]


def test_a_window_over_a_join_with_reference_data(tmp_path: Path) -> None:
    """Semantics §11.23: GROUP BY over a JOIN with reference data is the [join] and a
    [window] over each match: the table's fields are its row's, GetRecordPropertyValue(
    DeviceRef, ...), a grouping column of the table's keeps its name, and the WHERE (on
    either input's fields) is [filter] over each match."""
    t = translate(
        "SELECT r.Model, COUNT(*) AS n, AVG(s.v * r.Scale) AS scaled, MAX(s.v) AS peak "
        "INTO o FROM Telemetry s TIMESTAMP BY t JOIN DeviceRef r ON s.DeviceId = r.DeviceId "
        "AND r.Active = 1 WHERE s.v > 0 AND r.Scale < 10 "
        "GROUP BY r.Model, TumblingWindow(minute, 1) HAVING COUNT(*) > 1",
        bindings(tmp_path),
    )
    j = t.job
    assert j.join is not None and j.join.type == "inner" and j.join.where is None
    assert j.join.condition == "DeviceRef.Active = 1"
    assert j.looks_up_in_window and j.window is not None
    assert _keys(j) == [("Model", "GETRECORDPROPERTYVALUE(DeviceRef, 'Model')")]
    aggregates = {a.name: str(a) for a in j.window.aggregates}
    assert aggregates["scaled"] == "avg(v * GETRECORDPROPERTYVALUE(DeviceRef, 'Scale'))"
    assert aggregates["peak"] == "max(v)" and j.window.having == "n > 1"
    assert j.filter is not None
    assert j.filter.where == "v > 0 AND GETRECORDPROPERTYVALUE(DeviceRef, 'Scale') < 10"
    assert any("is dropped (no_match)" in n for n in t.notes)
    assert round_trips(j, tmp_path)


def test_a_window_over_a_left_outer_join_filters_each_match(tmp_path: Path) -> None:
    """Under LEFT OUTER JOIN the WHERE over the table's fields is [filter] too (a window's
    job has no [join] where): an event no row met reads them as null."""
    t = translate(
        "SELECT s.DeviceId, COUNT(*) AS n INTO o FROM Telemetry s TIMESTAMP BY t "
        "LEFT OUTER JOIN DeviceRef r ON s.DeviceId = r.DeviceId WHERE r.Model IS NULL "
        "GROUP BY s.DeviceId, TumblingWindow(minute, 1)",
        bindings(tmp_path),
    )
    j = t.job
    assert j.join is not None and j.join.type == "left" and j.join.where is None
    assert j.window is not None and _keys(j) == [("DeviceId", None)]
    assert j.filter is not None
    assert j.filter.where == "GETRECORDPROPERTYVALUE(DeviceRef, 'Model') IS NULL"
    assert any("one event, DeviceRef null" in n for n in t.notes)
    assert round_trips(j, tmp_path)


def test_a_window_over_a_step_that_joins_reference_data(tmp_path: Path) -> None:
    """A WITH step that joins the table and names its columns, windowed by the
    statement: the step is composed, then windowed as one JOIN (semantics §13.2)."""
    t = translate(
        "WITH j AS (SELECT s.k AS k, r.Model AS m, s.v AS v FROM Telemetry s TIMESTAMP BY t "
        "JOIN DeviceRef r ON s.k = r.k WHERE r.Cap > s.v) "
        "SELECT m, COUNT(*) AS n, SUM(v) AS total INTO o FROM j "
        "GROUP BY m, TumblingWindow(s, 5)",
        bindings(tmp_path),
    )
    j = t.job
    assert j.looks_up_in_window and j.window is not None
    assert _keys(j) == [("Model", "GETRECORDPROPERTYVALUE(DeviceRef, 'Model')")]
    assert j.filter is not None and j.filter.where == "GETRECORDPROPERTYVALUE(DeviceRef, 'Cap') > v"
    assert [(p.name, p.expression) for p in j.select] == [
        ("m", "Model"),
        ("n", "n"),
        ("total", "total"),
    ]
    assert round_trips(j, tmp_path)


def test_join_where_takes_reference_data(tmp_path: Path) -> None:
    """``[join] where`` filters what a left join writes (with reference data, or of two
    streams); an inner join of two streams has its condition for that; a field of no
    input of the join is refused."""
    base = {
        "inputs": {"a": {"path": "a.jsonl"}, "b": {"path": "b.jsonl"}},
        "join": {"left": "a", "right": "b", "on": ["k"], "between": ["0s", "1m"]},
        "output": {"path": "out"},
    }
    with pytest.raises(ConfigError, match=r"join\.where: filters what a left join writes"):
        Job.from_dict({**base, "join": {**base["join"], "where": "b.v > 1"}})
    left = Job.from_dict({**base, "join": {**base["join"], "where": "b.v > 1", "type": "left"}})
    assert left.join is not None and left.join.where == "b.v > 1"
    with pytest.raises(ConfigError, match=r"join\.where: 'c\.v': 'c' is not an input"):
        Job.from_dict({**base, "join": {**base["join"], "where": "c.v > 1"}})


def test_the_stream_may_be_partitioned_or_keyed(tmp_path: Path) -> None:
    b = bindings(tmp_path)
    j = translate(
        "SELECT r.Model INTO o FROM Telemetry s TIMESTAMP BY t PARTITION BY PartitionId "
        "JOIN DeviceRef r ON s.DeviceId = r.DeviceId",
        b,
    ).job
    assert (j.source.partition, j.ordering.partitioned) == ("PartitionId", True)
    # the stream on the right of the query's JOIN: its PARTITION BY and OVER all the same
    j = translate(
        "SELECT r.Model INTO o FROM DeviceRef r JOIN Telemetry s TIMESTAMP BY t "
        "PARTITION BY PartitionId ON s.DeviceId = r.DeviceId",
        b,
    ).job
    assert (j.source.partition, j.ordering.partitioned) == ("PartitionId", True)
    j = translate(
        "SELECT * INTO o FROM Telemetry s TIMESTAMP BY t OVER DeviceId "
        "JOIN DeviceRef r ON s.DeviceId = r.DeviceId",
        b,
    ).job
    assert j.source.over == "DeviceId" and round_trips(j, tmp_path)


def test_names_are_matched_as_the_query_writes_them(tmp_path: Path) -> None:
    b = bindings(
        tmp_path,
        '[inputs.telemetry]\npath = "t"\n[inputs.deviceref]\nreference = true\npath = "d"\n',
    )
    j = translate(_LOOKUP, b).job
    assert j.join is not None and (j.join.left, j.join.right) == ("Telemetry", "DeviceRef")
    assert [name for name, _ in j.references] == ["DeviceRef"]


def test_a_pass_through_step_keeps_the_join_and_its_where(tmp_path: Path) -> None:
    j = translate(
        "WITH enriched AS (SELECT * FROM Telemetry s TIMESTAMP BY t JOIN DeviceRef r "
        "ON s.DeviceId = r.DeviceId WHERE s.Temperature > 20)\n"
        "SELECT * INTO o FROM enriched",
        bindings(tmp_path),
    ).job
    assert j.join is not None and j.join.between is None
    assert j.filter is not None and j.filter.where == "Temperature > 20"


# ----------------------------------------------------------------------- on data


def _write(path: Path, records: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")


def test_each_event_meets_its_rows_in_the_table_s_order(tmp_path: Path) -> None:
    """Inner: an event is written once per row with its key, in the table's order, at
    its own timestamp; no row, no record; a missing key or another type never meets a
    row. LEFT OUTER: those events are written once with the table null. WHERE on the
    stream stops events before they meet the table."""
    t = "2026-03-01T09:00:{:02d}Z"
    _write(
        tmp_path / "telemetry.jsonl",
        [
            {"id": 1, "DeviceId": 2, "v": 5, "t": t.format(1), "a": t.format(2)},
            {"id": 2, "DeviceId": 9, "v": 5, "t": t.format(3), "a": t.format(4)},
            {"id": 3, "DeviceId": "1", "v": 5, "t": t.format(5), "a": t.format(6)},
            {"id": 4, "v": 5, "t": t.format(7), "a": t.format(8)},
            {"id": 5, "DeviceId": 1, "v": 0, "t": t.format(9), "a": t.format(10)},
            {"id": 6, "DeviceId": 1, "v": 5, "t": t.format(11), "a": t.format(12)},
        ],
    )
    (tmp_path / "devices.csv").write_text("DeviceId,Model\n2,A\n1,B\n2,C\n", "utf-8")
    b = bindings(tmp_path)
    query = (
        "SELECT s.id, r.Model, System.Timestamp() AS At INTO o FROM Telemetry s TIMESTAMP BY t "
        "{} DeviceRef r ON s.DeviceId = r.DeviceId WHERE s.v > 0"
    )

    def rows(kind: str) -> list[tuple[object, object, object]]:
        result = simulate(translate(query.format(kind), b).job)
        assert result.metrics["dropped"] == {"filtered": 1}  # id 5
        return [(e["id"], e["Model"], e["At"]) for e in result.events]

    assert rows("JOIN") == [(1, "A", t.format(1)), (1, "C", t.format(1)), (6, "B", t.format(11))]
    # a WHERE on the table's fields: the rows an event meets that fail it are no match
    expired = simulate(translate(query.format("JOIN") + " AND r.Model <> 'A'", b).job)
    assert [(e["id"], e["Model"]) for e in expired.events] == [(1, "C"), (6, "B")]
    assert rows("LEFT OUTER JOIN") == [
        (1, "A", t.format(1)),
        (1, "C", t.format(1)),
        (2, None, t.format(3)),
        (3, None, t.format(5)),  # the text "1" is not the number 1
        (4, None, t.format(7)),  # no DeviceId
        (6, "B", t.format(11)),
    ]
    # over LEFT OUTER JOIN, [join] where: what the join writes, no row read as null
    unknown = simulate(translate(query.format("LEFT JOIN") + " AND r.Model IS NULL", b).job)
    assert [(e["id"], e["Model"]) for e in unknown.events] == [(2, None), (3, None), (4, None)]
    not_a = query.format("LEFT JOIN") + " AND (r.Model IS NULL OR r.Model <> 'A')"
    kept = simulate(translate(not_a, b).job).events
    assert [(e["id"], e["Model"]) for e in kept] == [
        (1, "C"),
        (2, None),
        (3, None),
        (4, None),
        (6, "B"),
    ]
    # (the condition instead: id 1 meets C alone, and no event loses its record)
    whole = simulate(translate(_LOOKUP.replace("JOIN", "LEFT JOIN"), b).job).events
    assert whole[2] == {
        "type": "event",
        "Telemetry": {"id": 2, "DeviceId": 9, "v": 5, "t": t.format(3), "a": t.format(4)},
        "DeviceRef": None,
        "timestamp": t.format(3),
    }


# ---------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r TIMESTAMP BY t ON s.DeviceId = r.DeviceId",
            "1:44",
            "TIMESTAMP BY on the reference data DeviceRef: reference data has no time "
            "(Stream Analytics refuses it too)",
        ),
        (
            "SELECT * FROM DeviceRef TIMESTAMP BY t JOIN Telemetry s ON s.k = DeviceRef.k",
            "1:25",
            "TIMESTAMP BY on the reference data DeviceRef",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r PARTITION BY p ON s.k = r.k",
            "1:57",
            "PARTITION BY on the reference data DeviceRef: reference data has no partitions",
        ),
        (
            "SELECT * FROM Telemetry s TIMESTAMP BY t JOIN DeviceRef r\n"
            "ON s.DeviceId = r.DeviceId AND DATEDIFF(minute, s, r) BETWEEN 0 AND 5",
            "2:32",
            "DATEDIFF in the ON of a JOIN with reference data: DeviceRef is reference data, "
            "which has no time (Stream Analytics refuses DATEDIFF there too)",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON DATEDIFF(s, s, r) BETWEEN 0 AND 1",
            "1:47",
            "DATEDIFF in the ON of a JOIN with reference data",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.v > r.Threshold",
            "1:27",
            "JOIN without an equality of columns (a.k = b.k) in ON",
        ),
        (
            "SELECT * FROM DeviceRef d JOIN SiteRef x ON d.Site = x.Site",
            "1:27",
            "a JOIN of two reference inputs (DeviceRef and SiteRef) is not supported: "
            "reference data is joined to a stream",
        ),
        (
            "SELECT * FROM DeviceRef r LEFT OUTER JOIN Telemetry s ON r.k = s.k",
            "1:38",
            "LEFT OUTER JOIN with the reference data DeviceRef on its left is not supported: "
            "it would keep the table's rows that meet no event; Stream Analytics puts "
            "reference data on the right (FROM Telemetry LEFT OUTER JOIN DeviceRef)",
        ),
        (
            "SELECT * FROM Telemetry s CROSS JOIN DeviceRef r ON s.k = r.k",
            "1:33",
            "CROSS JOIN with reference data is not supported: Stream Analytics joins "
            "reference data by JOIN (inner) or LEFT OUTER JOIN",
        ),
        (
            "SELECT * FROM Telemetry r JOIN DeviceRef r ON r.k = r.k",
            "1:32",
            "r names both inputs of the JOIN",
        ),
        (
            "SELECT * FROM Telemetry s LEFT OUTER JOIN Other o ON s.k = o.k",
            "1:38",
            "JOIN without DATEDIFF(unit, a, b) BETWEEN low AND high in ON: Stream Analytics "
            "joins of two streams need a time bound",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k WHERE v > 1",
            "1:63",
            "v over a JOIN: qualify it with its input (s.v)",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k WHERE x.v > 1",
            "1:63",
            "x names neither input of the JOIN",
        ),
        (
            "WITH j AS (SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k) "
            "SELECT * FROM j WHERE v > 1",
            "1:85",
            "WHERE over a JOIN is not supported yet",
        ),
        # reference data is read through a JOIN only
        ("SELECT * FROM DeviceRef", "1:15", "DeviceRef is reference data (reference = true in"),
        (
            "SELECT * FROM Telemetry UNION SELECT * FROM deviceref",
            "1:45",
            "deviceref is reference data (reference = true in the job file): it is read only "
            "through a JOIN with a stream (FROM stream JOIN deviceref ON ...)",
        ),
        (
            "WITH d AS (SELECT * FROM DeviceRef) SELECT * FROM d",
            "1:26",
            "DeviceRef is reference data",
        ),
        (
            "SELECT COUNT(*) AS n FROM DeviceRef GROUP BY TumblingWindow(s, 5)",
            "1:27",
            "DeviceRef is reference data",
        ),
        # what no join has yet
        (
            "SELECT s.*, r.* FROM Telemetry s JOIN DeviceRef r ON s.k = r.k",
            "1:13",
            "r.*: a SELECT over a JOIN writes one input's fields whole",
        ),
        (
            "SELECT Model FROM Telemetry s JOIN DeviceRef r ON s.k = r.k",
            "1:8",
            "Model over a JOIN: qualify it with its input (s.Model or r.Model)",
        ),
        # later JOINs meet more reference data, by the tables' columns
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k "
            "JOIN SiteRef x ON s.Site = x.Site AND r.Zone = x.Zone",
            "1:95",
            "reads the stream and the table DeviceRef",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k "
            "JOIN SiteRef x ON s.Site = x.Site AND x.Cap > s.v",
            "1:95",
            "takes conditions on its own columns only",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k "
            "JOIN Other x ON r.Site = x.Site",
            "1:57",
            "a JOIN of the stream Other after a JOIN with reference data is not supported yet",
        ),
        (
            "SELECT * FROM Telemetry s JOIN Other o ON s.k = o.k AND DATEDIFF(s, s, o) "
            "BETWEEN 0 AND 1 JOIN SiteRef x ON o.Site = x.Site AND s.k = x.k",
            "1:129",
            "the ON of the JOIN with SiteRef reads two inputs",
        ),
        (
            "SELECT x.* FROM Telemetry s JOIN DeviceRef r ON s.k = r.k "
            "JOIN SiteRef x ON r.Site = x.Site",
            "1:8",
            "SELECT x.* of a later JOIN's table is not supported yet",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k JOIN SiteRef x ON x.Open = 1",
            "1:57",
            "reads no column of the stream or of the tables before it (r)",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k "
            "JOIN SiteRef x ON r.Site = x.Site AND x.Since < System.Timestamp()",
            "1:105",
            "System.Timestamp() in the ON of the JOIN with SiteRef: the tables meet before",
        ),
        (
            "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k "
            "JOIN SiteRef r ON r.Site = r.Site",
            "1:62",
            "r names two inputs of the JOINs",
        ),
    ],
)
def test_refusals_name_construct_and_position(
    tmp_path: Path, text: str, position: str, message: str
) -> None:
    with pytest.raises(QueryError) as caught:
        translate(text, bindings(tmp_path))
    assert str(caught.value).startswith(f"q.asaql:{position}: "), str(caught.value)
    assert message in str(caught.value), str(caught.value)


def test_without_a_job_file_a_join_needs_datediff() -> None:
    """The query does not say which input is reference data: the job file does."""
    with pytest.raises(QueryError) as caught:
        translate(_LOOKUP)
    assert str(caught.value).startswith("q.asaql:1:49: JOIN without DATEDIFF(unit, a, b)")
    assert "say so in the job file, [inputs.DeviceRef] reference = true" in str(caught.value)


def test_a_pipeline_source_is_never_reference_data(tmp_path: Path) -> None:
    pipeline = (
        '[{"$source": {"connectionName": "c", "topic": "DeviceRef"}}, '
        '{"$emit": {"connectionName": "c", "topic": "o"}}]'
    )
    with pytest.raises(QueryError) as caught:
        translate_text(pipeline, "json", bindings(tmp_path), "p.json")
    assert str(caught.value).startswith("p.json:1:14: $source reads DeviceRef, which the job")


def test_a_where_over_reference_data_reads_the_events_system_timestamp(tmp_path: Path) -> None:
    """``System.Timestamp()`` in the WHERE of a JOIN with reference data is the stream
    event's timestamp (semantics §11.17), the match's: the filter stops events before
    they meet the table."""
    j = translate(
        "SELECT * FROM Telemetry s TIMESTAMP BY t JOIN DeviceRef r ON s.k = r.k "
        "WHERE DATEDIFF(second, s.t, System.Timestamp()) > 1",
        bindings(tmp_path),
    ).job
    assert j.filter is not None
    assert j.filter.where == "DATEDIFF(second, t, System.Timestamp()) > 1"
    assert round_trips(j, tmp_path)


def test_on_columns_of_other_names_are_a_pair_of_join_columns(tmp_path: Path) -> None:
    """``ON s.DeviceId = r.Id`` (either way round): ``on = [["DeviceId", "Id"]]``, the
    stream's column first, which round-trips through the job file; the reference engine
    meets each event with the rows whose ``Id`` equals its ``DeviceId``."""
    from sparktide.core.join import join_key

    for on in ("s.DeviceId = r.Id", "r.Id = s.DeviceId"):
        j = translate(
            f"SELECT * INTO o FROM Telemetry s JOIN DeviceRef r ON {on}", bindings(tmp_path)
        )
        join = j.job.join
        assert join is not None and join.on == (("DeviceId", "Id"),)
        assert (join.left_on, join.right_on) == (("DeviceId",), ("Id",))
        assert join_key({"DeviceId": "d1"}, join.left_on) == join_key({"Id": "d1"}, join.right_on)
        assert round_trips(j.job, tmp_path)


def the_table(j: Job) -> tuple[object, ...]:
    """The one ``[[join.then]]`` of ``j``: its left, right, on and type."""
    assert j.join is not None
    (step,) = j.join.then
    return step.left, step.right, step.on, step.type


def test_later_joins_of_reference_data_are_join_then_tables(tmp_path: Path) -> None:
    """``JOIN a ... JOIN b ON a.k = b.k`` (semantics §11.8, *Further tables*): the later
    JOIN is a ``[[join.then]]`` table whose row is the member ``SiteRef`` of the first
    table's row; the SELECT reads it there, the rest of its ON is its condition, and it
    round-trips through the job file. An inner later JOIN makes the first JOIN inner."""
    j = translate(
        "SELECT s.v, r.Model, x.Region, x.Geo.Lat AS lat INTO o FROM Telemetry s "
        "LEFT OUTER JOIN DeviceRef r ON s.DeviceId = r.DeviceId "
        "LEFT JOIN SiteRef x ON x.Id = r.Site AND x.Open = 1 AND r.Kind = 'pump'",
        bindings(tmp_path),
    ).job
    assert j.join is not None and j.join.type == "left"
    assert the_table(j) == ("DeviceRef", "SiteRef", (("Site", "Id"),), "left")
    assert j.join.then[0].condition == "SiteRef.Open = 1 AND DeviceRef.Kind = 'pump'"
    assert {p.name: p.expression for p in j.select} == {
        "v": "Telemetry.v",
        "Model": "DeviceRef.Model",
        "Region": "GETRECORDPROPERTYVALUE(DeviceRef.SiteRef, 'Region')",
        "lat": "GETRECORDPROPERTYVALUE(DeviceRef.SiteRef, 'Geo.Lat')",
    }
    assert [name for name, _ in j.references] == ["DeviceRef", "SiteRef"]
    assert round_trips(j, tmp_path)
    inner = translate(
        "SELECT s.v INTO o FROM Telemetry s LEFT JOIN DeviceRef r ON s.k = r.k "
        "JOIN SiteRef x ON r.Site = x.Site WHERE x.Open = 1",
        bindings(tmp_path),
    ).job
    assert inner.join is not None and inner.join.type == "inner"
    assert inner.join.then[0].type == "inner"
    assert inner.join.condition == "GETRECORDPROPERTYVALUE(DeviceRef.SiteRef, 'Open') = 1"


def test_a_nested_field_of_a_joined_table_is_read_inside_it(tmp_path: Path) -> None:
    """``WHERE r.v.w > 1`` over a JOIN with reference data reads ``w`` inside the row's
    ``v`` (semantics §11.14)."""
    j = translate(
        "SELECT * FROM Telemetry s JOIN DeviceRef r ON s.k = r.k WHERE r.v.w > 1",
        bindings(tmp_path),
    ).job
    assert j.join is not None
    assert j.join.condition == "GETRECORDPROPERTYVALUE(DeviceRef.v, 'w') > 1"


def test_a_later_join_keyed_by_the_stream_is_met_by_each_event(tmp_path: Path) -> None:
    """``JOIN SiteRef x ON s.Site = x.Site`` (a table keyed by the stream's columns):
    ``[[join.then]] left`` is the stream; its row is the member ``SiteRef`` of the
    first table's row, read as any later table's; its own condition stays; an inner
    one does not make the first JOIN inner (semantics §11.8)."""
    j = translate(
        "SELECT s.v, x.Region INTO o FROM Telemetry s LEFT JOIN DeviceRef r ON s.k = r.k "
        "JOIN SiteRef x ON x.Site = s.SiteId AND x.Open = 1",
        bindings(tmp_path),
    ).job
    assert j.join is not None and j.join.type == "left"
    assert the_table(j) == ("Telemetry", "SiteRef", (("SiteId", "Site"),), "inner")
    assert j.join.then[0].condition == "SiteRef.Open = 1"
    assert {p.name: p.expression for p in j.select}["Region"] == (
        "GETRECORDPROPERTYVALUE(DeviceRef.SiteRef, 'Region')"
    )
    assert round_trips(j, tmp_path)
