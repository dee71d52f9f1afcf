"""Aggregates ``over (distinct ..., System.Timestamp())`` (semantics §13.4): the job
model's grammar and refusals, and the reference engine's sets of combinations."""

from __future__ import annotations

from typing import Any

import pytest

from sparktide.core.aggregates import accumulate
from sparktide.errors import ConfigError
from sparktide.job import Aggregate, Job

OVER = "over (distinct v, System.Timestamp())"


def test_the_form_parses_and_prints_with_the_timestamp_last() -> None:
    a = Aggregate.parse("mean", "avg(v) OVER ( DISTINCT System.Timestamp ( ), k, v )")
    assert (a.function, a.column, a.distinct) == ("avg", "v", ("k", "v"))
    assert str(a) == "avg(v) over (distinct k, v, System.Timestamp())"
    assert a.columns == ("v", "k")
    rows = Aggregate.parse("n", "count(*) over (distinct system.timestamp())")
    assert rows.counts_rows and rows.distinct == () and rows.columns == ()
    assert Aggregate.parse("n", str(rows)) == rows
    assert Aggregate.parse("total", "sum(v)").distinct is None


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ("avg(v) over (distinct v)", "window.aggregates.x", "names System.Timestamp() once"),
        (
            "avg(v) over (distinct v, System.Timestamp(), System.Timestamp())",
            "window.aggregates.x",
            "names System.Timestamp() once",
        ),
        (
            "avg(v) over (distinct k, System.Timestamp())",
            "window.aggregates.x",
            "avg(v) over (distinct ...) must list v among its columns",
        ),
        (
            "first(v) over (distinct v, System.Timestamp())",
            "window.aggregates.x",
            "first takes no over (distinct ...); count, sum, avg, min, max do",
        ),
        (
            "count_distinct(v) over (distinct v, System.Timestamp())",
            "window.aggregates.x",
            "count_distinct takes no over (distinct ...)",
        ),
        (
            "sum(v * 2) over (distinct v, System.Timestamp())",
            "window.aggregates.x",
            "sum over (distinct ...) reads a column, not an expression",
        ),
        (
            "sum(v) over (distinct v, v, System.Timestamp())",
            "window.aggregates.x.distinct",
            "names v twice",
        ),
        (
            "sum(v) over (distinct v + 1, System.Timestamp())",
            "window.aggregates.x",
            "takes column names and System.Timestamp(), got 'v + 1'",
        ),
        (
            "sum(v) over (distinct v, now(), System.Timestamp())",
            "window.aggregates.x",
            "got 'now()'",
        ),
    ],
)
def test_bad_forms_are_refused_naming_the_key_and_value(text: str, key: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Aggregate.parse("x", text)
    assert caught.value.key == key
    assert message in str(caught.value)


def test_a_job_file_takes_the_form() -> None:
    job = Job.from_dict(
        {
            "source": {"path": "in", "timestamp_by": "t"},
            "window": {
                "type": "tumbling",
                "size": "1m",
                "group_by": ["k"],
                "aggregates": {"mean": f"avg(v) {OVER}"},
            },
            "output": {"path": "out"},
        }
    )
    assert job.window is not None and job.window.aggregates[0].distinct == ("v",)


def _rows(*rows: tuple[int, dict[str, Any]]) -> list[tuple[tuple[int, int, int, int], dict]]:
    """(system timestamp, fields) → (order key, fields), arriving in this order."""
    return [((t, seq, seq, 0), fields) for seq, (t, fields) in enumerate(rows)]


def _all(text: str) -> Aggregate:
    return Aggregate.parse("x", text)


def test_each_distinct_combination_counts_once() -> None:
    rows = _rows(
        (1, {"v": 50}),
        (1, {"v": 50}),  # a duplicate
        (1, {"v": 60}),  # same time, another value
        (2, {"v": 60}),  # same value, another time
        (2, {"v": 60.0}),  # the same number as a float: a combination of its own
        (3, {"v": None}),
        (3, {}),  # missing is null: a duplicate of the row before
        (4, {"v": 100}),
    )
    aggregates = [
        _all(f"count(*) {OVER}"),
        Aggregate.parse("nv", f"count(v) {OVER}"),
        Aggregate.parse("total", f"sum(v) {OVER}"),
        Aggregate.parse("mean", f"avg(v) {OVER}"),
        Aggregate.parse("lo", f"min(v) {OVER}"),
        Aggregate.parse("hi", f"max(v) {OVER}"),
        Aggregate.parse("times", "count(*) over (distinct System.Timestamp())"),
    ]
    got = accumulate(aggregates, rows)
    # combinations of v and time: (1, 50), (1, 60), (2, 60), (3, null), (4, 100), and for
    # the aggregates of v (its integers and floats apart) (2, 60.0)
    assert got == {
        "x": 5,
        "nv": 5,
        "total": 50 + 60 + 60 + 60.0 + 100,
        "mean": 330.0 / 5,
        "lo": 50,
        "hi": 100,
        "times": 4,
    }
    assert isinstance(got["total"], float)


def test_over_no_rows_and_only_nulls() -> None:
    for rows in ([], _rows((1, {"v": None}), (2, {"v": None}))):
        got = accumulate([_all(f"sum(v) {OVER}"), Aggregate.parse("n", f"count(v) {OVER}")], rows)
        assert got == {"x": None, "n": 0}


def test_several_columns_tell_combinations_apart() -> None:
    rows = _rows((1, {"k": "a", "v": 1}), (1, {"k": "b", "v": 1}), (1, {"k": "a", "v": 1}))
    got = accumulate([_all("sum(v) over (distinct k, v, System.Timestamp())")], rows)
    assert got == {"x": 2}
    got = accumulate([_all("sum(v) over (distinct v, System.Timestamp())")], rows)
    assert got == {"x": 1}
