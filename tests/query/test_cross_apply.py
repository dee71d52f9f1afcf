"""``CROSS APPLY GetArrayElements(...)`` and ``GetRecordProperties(...)`` → ``[apply]``
(semantics §11.18): what is translated, and what is refused with its position."""

from __future__ import annotations

import tomllib

import pytest

from sparktide.errors import QueryError
from sparktide.job import Job
from sparktide.query import job_to_toml, translate_text
from tests.query.test_translate import test_refusals_name_construct_and_position as _refused


def _translated(text: str):  # type: ignore[no-untyped-def]
    return translate_text(text, "asaql", None, "q.asaql")


def test_elements_with_where_and_select() -> None:
    t = _translated(
        "SELECT e.DeviceId, a.ArrayIndex AS i, a.ArrayValue AS v INTO o "
        "FROM Input e TIMESTAMP BY Time "
        "CROSS APPLY GetArrayElements(e.Readings) AS a WHERE a.ArrayValue > 20"
    )
    j = t.job
    assert j.apply is not None
    assert (j.apply.function, j.apply.value, j.apply.name) == ("elements", "Readings", "a")
    assert j.filter is not None
    assert j.filter.where == "GETRECORDPROPERTYVALUE(a, 'ArrayValue') > 20"
    assert [(p.name, p.expression) for p in j.select] == [
        ("DeviceId", "DeviceId"),
        ("i", "GETRECORDPROPERTYVALUE(a, 'ArrayIndex')"),
        ("v", "GETRECORDPROPERTYVALUE(a, 'ArrayValue')"),
    ]
    assert any(note.startswith("CROSS APPLY is [apply]") for note in t.notes)
    text = job_to_toml(j)
    assert '[apply]\nfunction = "elements"\nvalue = "Readings"\nname = "a"' in text


def test_every_branch_of_a_union_applying_alike_is_the_union_s_apply() -> None:
    """Each branch expands its own input's field of one name (semantics §11.18)."""
    t = _translated(
        "SELECT n.DeviceId, r.ArrayValue AS v INTO o FROM North n TIMESTAMP BY Time "
        "CROSS APPLY GetArrayElements(n.Values) AS r UNION "
        "SELECT s.DeviceId, r.ArrayValue AS v FROM South s TIMESTAMP BY Time "
        "CROSS APPLY GetArrayElements(s.Values) AS r"
    )
    j = t.job
    assert [name for name, _ in j.inputs] == ["North", "South"]
    assert j.apply is not None
    assert (j.apply.function, j.apply.value, j.apply.name) == ("elements", "Values", "r")
    assert [(p.name, p.expression) for p in j.select] == [
        ("DeviceId", "DeviceId"),
        ("v", "GETRECORDPROPERTYVALUE(r, 'ArrayValue')"),
    ]


def test_outer_apply_keeps_an_event_with_nothing_to_expand() -> None:
    t = _translated(
        "SELECT e.DeviceId, a.ArrayValue AS v INTO o FROM Input e "
        "OUTER APPLY GetArrayElements(e.Readings) AS a"
    )
    j = t.job
    assert j.apply is not None and j.apply.outer
    assert (j.apply.function, j.apply.value, j.apply.name) == ("elements", "Readings", "a")
    assert any(
        note.startswith("OUTER APPLY is [apply]") and "stays one event, its a null" in note
        for note in t.notes
    )
    text = job_to_toml(j)
    assert '[apply]\nfunction = "elements"\nvalue = "Readings"\nname = "a"\nouter = true' in text
    assert Job.from_dict(tomllib.loads(text)) == j


def test_properties_of_a_nested_record_into_a_window() -> None:
    j = _translated(
        "SELECT COUNT(*) AS n, SUM(p.PropertyValue) AS total, MAX(p.PropertyName) AS last "
        "FROM Input i TIMESTAMP BY Time "
        "CROSS APPLY GetRecordProperties(i.Reading.Sensors) p "
        "GROUP BY TumblingWindow(minute, 1)"
    ).job
    assert j.apply is not None
    assert j.apply.function == "properties" and j.apply.name == "p"
    assert j.apply.value == "GETRECORDPROPERTYVALUE(Reading, 'Sensors')"
    assert [str(a) for a in j.window.aggregates] == [
        "count(*)",
        "sum(GETRECORDPROPERTYVALUE(p, 'PropertyValue'))",
        "max(GETRECORDPROPERTYVALUE(p, 'PropertyName'))",
    ]


def test_a_nested_field_in_an_aggregate_without_cross_apply() -> None:
    j = _translated(
        "SELECT k, AVG(r.Speed) AS speed FROM i GROUP BY k, TumblingWindow(minute, 1)"
    ).job
    assert [str(a) for a in j.window.aggregates] == ["avg(GETRECORDPROPERTYVALUE(r, 'Speed'))"]


_HEAD = "SELECT a.ArrayValue AS v FROM i "


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (_HEAD + "CROSS APPLY Foo(x) AS a", "1:45", "CROSS APPLY takes GetArrayElements"),
        (_HEAD + "CROSS MERGE GetArrayElements(x) AS a", "1:39", "expected CROSS JOIN or"),
        (_HEAD + "CROSS APPLY GetArrayElements(x, y) AS a", "1:45", "takes one value"),
        (
            _HEAD + "OUTER APPLY GetArrayElements(x) AS a "
            "JOIN j ON i.k = j.k AND DATEDIFF(second, i, j) BETWEEN 0 AND 5",
            "1:33",
            "OUTER APPLY with a JOIN is not supported yet",
        ),
        (_HEAD + "OUTER APPLY Foo(x) AS a", "1:45", "OUTER APPLY takes GetArrayElements"),
        (
            _HEAD + "CROSS APPLY GetArrayElements(x) AS a CROSS APPLY GetArrayElements(y) AS b",
            "1:70",
            "a second CROSS APPLY is not supported yet",
        ),
        (
            "SELECT * FROM i CROSS APPLY GetArrayElements(x) AS a",
            "1:17",
            "SELECT * with CROSS APPLY is not supported yet: name the columns "
            "(the element is a.ArrayValue)",
        ),
        (
            "SELECT a.ArrayValue AS v FROM i CROSS APPLY GetArrayElements(i.x) AS i",
            "1:33",
            "AS i: names the input",
        ),
        (
            "WITH s AS (SELECT * FROM i CROSS APPLY GetArrayElements(x) AS a) SELECT * FROM s",
            "1:28",
            "CROSS APPLY inside the WITH step s is not supported yet",
        ),
        (
            "WITH s AS (SELECT k, COUNT(*) AS n FROM i GROUP BY k, TumblingWindow(s, 5)) "
            "SELECT a.ArrayValue AS v FROM s CROSS APPLY GetArrayElements(x) AS a",
            "1:109",
            "CROSS APPLY over the windowed step s is not supported yet",
        ),
        (
            "SELECT a.ArrayValue AS v FROM i CROSS APPLY GetArrayElements(x) AS a "
            "UNION SELECT a.ArrayValue AS v FROM j CROSS APPLY GetArrayElements(y) AS a",
            "1:108",
            "the branches of UNION apply differently",
        ),
        (
            "SELECT a.ArrayValue AS v FROM i CROSS APPLY GetArrayElements(x) AS a "
            "UNION SELECT v FROM j",
            "1:76",
            "a branch of UNION without the CROSS APPLY the others write",
        ),
        (
            "WITH u AS (SELECT a.ArrayValue AS v FROM i CROSS APPLY GetArrayElements(x) AS a "
            "UNION SELECT a.ArrayValue AS v FROM j CROSS APPLY GetArrayElements(x) AS a) "
            "SELECT v FROM u",
            "1:44",
            "CROSS APPLY inside the WITH step u",
        ),
        (
            "SELECT i.k AS k FROM i CROSS APPLY GetArrayElements(x) AS a "
            "JOIN j ON i.k = j.k AND DATEDIFF(second, i, j) BETWEEN 0 AND 5",
            "1:24",
            "CROSS APPLY with a JOIN is not supported yet",
        ),
        (
            "SELECT LAG(a.ArrayValue) OVER (LIMIT DURATION(minute, 1)) AS p FROM i "
            "CROSS APPLY GetArrayElements(x) AS a",
            "1:1",
            "is not supported with analytic columns",
        ),
    ],
)
def test_refusals(text: str, position: str, message: str) -> None:
    _refused(text, position, message)


def test_getarrayelements_elsewhere_is_still_refused() -> None:
    with pytest.raises(QueryError, match=r"GetArrayElements\(\.\.\.\) is not supported yet"):
        _translated("SELECT GetArrayElements(x) AS y FROM i")


def test_a_union_of_branches_that_apply_is_the_apply_over_a_union_step() -> None:
    """The same job as a UNION step read with one CROSS APPLY (the form the corpus case
    ``asa_union_apply_readings`` runs in both engines)."""
    step = _translated(
        "WITH Both AS (SELECT * FROM North TIMESTAMP BY Time UNION "
        "SELECT * FROM South TIMESTAMP BY Time) SELECT DeviceId, r.ArrayValue AS v INTO o "
        "FROM Both CROSS APPLY GetArrayElements(Both.Values) AS r"
    ).job
    branches = _translated(
        "SELECT n.DeviceId, r.ArrayValue AS v INTO o FROM North n TIMESTAMP BY Time "
        "CROSS APPLY GetArrayElements(n.Values) AS r UNION "
        "SELECT s.DeviceId, r.ArrayValue AS v FROM South s TIMESTAMP BY Time "
        "CROSS APPLY GetArrayElements(s.Values) AS r"
    ).job
    assert branches == step


def test_an_apply_over_a_union_step_that_computes_its_columns() -> None:
    """CROSS APPLY over a UNION step whose branches compute their columns (semantics
    §11.21): the union's one ``[apply]``; each column, and the WHERE as each input's
    ``where``, read the expanded rows by input (the corpus case
    ``asa_union_apply_sites`` runs it)."""
    job = _translated(
        "WITH u AS (SELECT k, xs, 1 AS scale FROM i UNION "
        "SELECT k, xs, 10 AS scale FROM j) "
        "SELECT k, a.ArrayValue * scale AS v INTO o FROM u "
        "CROSS APPLY GetArrayElements(u.xs) AS a WHERE a.ArrayValue * scale > 5"
    ).job
    assert job.apply is not None and (job.apply.value, job.apply.name) == ("xs", "a")
    assert job.filter is None
    wheres = {name: source.where for name, source in job.inputs}
    assert wheres == {
        "i": "GETRECORDPROPERTYVALUE(a, 'ArrayValue') * 1 > 5",
        "j": "GETRECORDPROPERTYVALUE(a, 'ArrayValue') * 10 > 5",
    }
    (k, v) = job.select
    assert k.expression == "k" and not k.by_input
    assert dict(v.by_input) == {
        "i": "GETRECORDPROPERTYVALUE(a, 'ArrayValue') * 1",
        "j": "GETRECORDPROPERTYVALUE(a, 'ArrayValue') * 10",
    }
    # an array the branches compute differently: the one [apply] chooses it by input
    job = _translated(
        "WITH u AS (SELECT k, xs FROM i UNION SELECT k, ys AS xs FROM j) "
        "SELECT k, a.ArrayValue AS v INTO o FROM u CROSS APPLY GetArrayElements(u.xs) AS a"
    ).job
    assert job.apply is not None
    assert job.apply.value == (
        "CASE WHEN System.Input() = 'i' THEN xs WHEN System.Input() = 'j' THEN ys END"
    )
    assert [(p.name, p.expression) for p in job.select] == [
        ("k", "k"),
        ("v", "GETRECORDPROPERTYVALUE(a, 'ArrayValue')"),
    ]
