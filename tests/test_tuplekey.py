"""A substream key of several columns (semantics §1.4, *Several columns*)."""

from __future__ import annotations

import itertools

import pytest

from sparktide.errors import ConfigError
from sparktide.expr import evaluate, parse_expression
from sparktide.job import Job
from sparktide.job.tuplekey import key_label, key_parts, tuple_key
from sparktide.query.tomlout import job_to_toml


def _key(parts: list[str], fields: dict) -> object:
    return evaluate(parse_expression(tuple_key(parts)), fields.get, strict=True)


def test_one_part_is_itself_and_several_read_back() -> None:
    assert tuple_key(["device"]) == "device"
    assert key_parts("device") is None
    assert key_parts(None) is None
    nested = "GETRECORDPROPERTYVALUE(meta, 'lane')"
    assert key_parts(tuple_key(["TollId", nested])) == ("TollId", nested)
    assert key_parts(tuple_key(["a", "b", "c"])) == ("a", "b", "c")
    assert key_label(tuple_key(["TollId", "Lane"])) == "(TollId, Lane)"
    # an expression of another shape is no key of several
    assert key_parts("CASE WHEN (a) IS NULL THEN NULL ELSE CONCAT(a, b) END") is None


#: Values whose texts a naive key would confuse: 1, 1.0, true and their texts; commas,
#: colons and backslashes that end one value's text or begin the next (each pair that
#: one escape less would confuse).
_VALUES = [1, "1", 1.0, "1.0", True, "true", "a", "b", "a,b", "b,", ",", "\\", "a\\", "\\,b"]
_VALUES += ["bigint:1", ":", "", "x,nvarchar(max):y", "y,nvarchar(max):", ",nvarchar(max):"]
_VALUES += [",nvarchar(max):\\"]


def test_distinct_values_are_distinct_keys() -> None:
    """Every pair of :data:`_VALUES`, and every triple of some: never one key."""
    for width, values in ((2, _VALUES), (3, _VALUES[::2])):
        names = "abc"[:width]
        rows = list(itertools.product(values, repeat=width))
        keys = {_key(list(names), dict(zip(names, row, strict=True))) for row in rows}
        assert len(keys) == len(rows)


def test_a_null_part_is_a_null_key_and_a_record_fails() -> None:
    assert _key(["a", "b"], {"a": 1}) is None
    assert _key(["a", "b"], {"a": 1, "b": None}) is None
    with pytest.raises(Exception, match="nvarchar"):
        _key(["a", "b"], {"a": {"x": 1}, "b": 1})


def _job(over: object, group_by: list[str]) -> Job:
    return Job.from_dict(
        {
            "source": {"path": "in", "timestamp_by": "t", "over": over},
            "window": {
                "type": "tumbling",
                "size": "5s",
                "group_by": group_by,
                "aggregates": {"n": "count(*)"},
            },
            "output": {"path": "out"},
        }
    )


def test_the_job_file_lists_the_columns() -> None:
    job = _job(["TollId", "Lane"], ["Lane", "TollId"])
    assert job.source.key_parts == ("TollId", "Lane")
    assert job.source.computes_key
    assert 'over = ["TollId", "Lane"]' in job_to_toml(job)
    assert _job(["TollId"], ["TollId"]).source.over == "TollId"


@pytest.mark.parametrize(
    ("over", "group_by", "key", "message"),
    [
        ([], ["TollId"], "source.over", "at least one column"),
        (["TollId", 3], ["TollId"], "source.over[1]", "must be a column name, got 3"),
        (["TollId", "System.Timestamp()"], ["TollId"], "source.over[1]", "reads System"),
        (["TollId", "Lane"], ["TollId"], "window.group_by", "(TollId, Lane)"),
    ],
)
def test_a_bad_list_names_its_entry(over, group_by, key, message) -> None:
    with pytest.raises(ConfigError) as raised:
        _job(over, group_by)
    assert raised.value.key == key
    assert message in str(raised.value)
