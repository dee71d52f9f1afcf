"""``[apply]`` in the reference engine (semantics §11.18): the expansion rule, and the
columns the job names for ``missing_column``."""

from __future__ import annotations

import pytest

from sparktide.core.apply import expand
from sparktide.core.namedcolumns import named_columns
from sparktide.errors import ConfigError
from sparktide.job import Apply, Job
from tests.jobfiles import BASE_JOB, DELETE, mutate


def test_elements_keep_the_record_and_replace_a_field_of_the_name() -> None:
    apply = Apply("elements", "GetRecordPropertyValue(r, 's')", "a")
    fields = {"id": 1, "a": "mine", "r": {"s": [None, 2.0, {"x": [1]}]}}
    got = expand(apply, fields)
    assert [g["a"] for g in got] == [
        {"ArrayIndex": 0, "ArrayValue": None},
        {"ArrayIndex": 1, "ArrayValue": 2.0},
        {"ArrayIndex": 2, "ArrayValue": {"x": [1]}},
    ]
    assert all(g["id"] == 1 and g["r"] == fields["r"] for g in got)
    assert fields["a"] == "mine"  # (the input record is not changed)


def test_properties_in_the_order_of_their_names() -> None:
    got = expand(Apply("properties", "s", "p"), {"s": {"b": 1, "a b": None, "é": 2, "B": 3}})
    assert [g["p"]["PropertyName"] for g in got] == ["B", "a b", "b", "é"]
    assert [g["p"]["PropertyValue"] for g in got] == [3, None, 1, 2]


@pytest.mark.parametrize(
    ("function", "value"),
    [
        ("elements", {"k": 1}),
        ("elements", []),
        ("elements", "[1, 2]"),
        ("elements", None),
        ("properties", [1, 2]),
        ("properties", {}),
        ("properties", 4),
        ("properties", None),
    ],
)
def test_nothing_to_expand(function: str, value: object) -> None:
    assert expand(Apply(function, "v", "a"), {"v": value}) == []
    assert expand(Apply(function, "v", "a"), {}) == []


@pytest.mark.parametrize("function", ["elements", "properties"])
def test_outer_keeps_a_record_with_nothing_to_expand_its_name_null(function: str) -> None:
    apply = Apply(function, "v", "a", outer=True)
    for value in ([], {}, None, "[1]", 3):
        assert expand(apply, {"v": value, "a": 1}) == [{"v": value, "a": None}]
    assert expand(apply, {}) == [{"a": None}]
    found = {"elements": [7], "properties": {"k": 7}}[function]
    assert expand(apply, {"v": found}) == expand(Apply(function, "v", "a"), {"v": found})


def test_outer_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match=r"apply\.outer: must be true or false, got 'yes'"):
        Apply("elements", "v", "a", outer="yes")  # type: ignore[arg-type]


def test_the_apply_name_is_no_input_column_its_value_fields_are() -> None:
    data = mutate(
        BASE_JOB,
        {
            "apply": {"function": "elements", "value": "GetArrayElement(r, 0)", "name": "el"},
            "filter.where": "GetRecordPropertyValue(el, 'ArrayValue') > 1",
            "window": DELETE,
            "select": {"v": "GetRecordPropertyValue(el, 'ArrayValue')"},
        },
    )
    columns = {n.column: n.roles for n in named_columns(Job.from_dict(data))}
    assert "el" not in columns
    assert columns["r"] == ("apply.value",)


def test_a_misspelled_value_field_is_a_missing_column() -> None:
    """Semantics §8.4: the field ``[apply]`` reads is held by no record."""
    from tests.test_transcripts import TRANSCRIPTS, load, run_transcript

    data = load(TRANSCRIPTS / "apply_array_elements.toml")
    data["job"]["apply"]["value"] = "rr"
    result = run_transcript(data)
    (missing,) = [d for d in result.metrics["diagnostics"] if d["kind"] == "missing_column"]
    assert (missing["column"], missing["role"], missing["count"]) == ("rr", "apply.value", 6)
    assert "no event expands into anything (dropped: no_elements; kept" in missing["message"]
    assert result.metrics["dropped"] == {"no_elements": 6}
