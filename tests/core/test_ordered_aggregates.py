"""The ordered and statistical aggregates of the reference engine (semantics §6.12), on
values worked out by hand, and their job-file syntax."""

from __future__ import annotations

import pytest

from sparktide.core.aggregates import accumulate
from sparktide.core.ordered import order_rank, percentile_cont, percentile_disc, spread
from sparktide.errors import ConfigError
from sparktide.job import Aggregate


def _rows(*records: dict) -> list:
    return [((i, i, i), r) for i, r in enumerate(records)]


def test_order_rank_puts_null_first_then_numbers_text_and_the_rest():
    values = ["b", 3, None, 2.5, True, [1], "a", -1]
    ordered = sorted(values, key=lambda v: order_rank(v))
    assert ordered[:6] == [None, -1, 2.5, 3, "a", "b"]
    assert order_rank(True) == order_rank([1]) == order_rank({"a": 1})  # (all equal)


def test_stream_analytics_percentile_example():
    """The reference pages' example: 0.988 (PERCENTILE_CONT) and 0.99 (_DISC)."""
    values = [0.98, 0.93, 0.78, 0.99, 0.89]
    assert percentile_cont(values, 0.95, False) == 0.988
    rows = list(enumerate(values))
    assert percentile_disc(rows, 0.95, False) == 0.99
    assert percentile_cont(values, 0.5, False) == 0.93  # position 2 exactly
    assert percentile_cont(values, 0.0, True) == 0.99  # descending: the largest first
    assert percentile_disc(rows, 0.0, False) == 0.78  # max(ceil(0), 1) = the first


def test_percentiles_ignore_nulls_and_keep_the_written_type():
    rows = [(0, 5), (1, None), (2, 7), (3, "x")]
    assert percentile_disc(rows, 0.5, False) == 5 and isinstance(
        percentile_disc(rows, 0.5, False), int
    )
    assert percentile_cont([5, None, 7], 0.5, False) == 6.0
    assert percentile_cont([4], 0.3, False) == 4.0
    assert percentile_cont([], 0.3, False) is None
    assert percentile_disc([(0, None)], 0.3, False) is None


def test_spread_sample_and_population():
    # 50, 60, 70: mean 60, squared differences 200
    assert spread("var", [70, 50, 60]) == 100.0
    assert spread("stdev", [70, 50, 60]) == 10.0
    assert spread("varp", [70, 50, 60]) == 200 / 3
    assert spread("var", [5]) is None and spread("stdev", [5]) is None
    assert spread("varp", [5]) == 0.0 and spread("stdevp", [5]) == 0.0
    assert spread("varp", [None]) is None
    assert spread("var", [1e308, 1e308, -1e308]) is None  # the sum leaves a double's range


def test_spread_does_not_depend_on_the_order_rows_came_in():
    values = [0.1, 0.7, 1e-9, 3.3, 2.2, 1e6]
    assert spread("stdev", values) == spread("stdev", list(reversed(values)))


def test_ordered_aggregates_over_rows():
    aggregates = [
        Aggregate.parse("fastest", "topone() over (order by speed desc)"),
        Aggregate.parse("plate", "topone(plate) over (order by speed desc)"),
        Aggregate.parse("slowest", "bottomone(plate) over (order by speed desc)"),
        Aggregate.parse("top3", "collecttop(3, plate) over (order by speed desc)"),
        Aggregate.parse("first2", "topn(2, plate) over (order by speed asc, plate desc)"),
        Aggregate.parse("last2", "bottomn(2, plate) over (order by speed)"),
        Aggregate.parse("plates", "collect(plate)"),
        Aggregate.parse("speeds", "collect(speed)"),
    ]
    rows = _rows(
        {"plate": "A", "speed": 60},
        {"plate": "B", "speed": 80},
        {"plate": "C"},  # no speed: the smallest
        {"plate": "D", "speed": 80},
    )
    got = accumulate(aggregates, rows)
    # desc: B 80, D 80 (tie: window order), A 60, C null
    assert got["fastest"] == {"plate": "B", "speed": 80}
    assert got["plate"] == "B"
    assert got["slowest"] == "C"
    assert got["top3"] == [
        {"rank": 1, "value": "B"},
        {"rank": 1, "value": "D"},
        {"rank": 3, "value": "A"},
    ]
    # asc by speed then plate desc: C (null), A 60, D 80, B 80
    assert got["first2"] == ["C", "A"]
    # asc by speed (ties in window order): C, A, B, D -> the last two in order
    assert got["last2"] == ["B", "D"]
    assert got["plates"] == ["A", "B", "C", "D"]
    assert got["speeds"] == [60, 80, None, 80]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("topone(plate)", "topone needs over (order by column [asc|desc])"),
        ("collecttop(0) over (order by s)", "collecttop needs a count of at least 1"),
        ("collecttop(plate) over (order by s)", "expected a number as the first argument"),
        ("percentile_cont(1.5) over (order by s)", "needs a fraction from 0 to 1"),
        ("percentile_disc(0.5) over (order by s, t)", "orders by one column"),
        ("percentile_cont(0.5, s) over (order by s)", "takes only its fraction"),
        ("sum(s) over (order by s)", "sum takes no over (order by ...)"),
        ("topone() over (order by s sideways)", "order by takes column names"),
        ("stdev()", "expected FUNCTION(column)"),
        ("collect(*)", "collect(*) is not allowed"),
    ],
)
def test_ordered_aggregate_syntax_errors_name_the_key(text, message):
    with pytest.raises(ConfigError) as caught:
        Aggregate.parse("a", text)
    assert str(caught.value).startswith("window.aggregates.a: ")
    assert message in str(caught.value)


def test_ordered_aggregates_print_back_as_they_parse():
    for text in (
        "topone() over (order by speed desc)",
        "collecttop(3, plate) over (order by speed desc, t asc)",
        "percentile_cont(0.95) over (order by speed asc)",
        "topn(2, CAST(x AS bigint)) over (order by y asc)",
        "collect()",
        "stdev(speed)",
    ):
        assert str(Aggregate.parse("a", text)) == text
        assert Aggregate.parse("a", str(Aggregate.parse("a", text))) == Aggregate.parse("a", text)
