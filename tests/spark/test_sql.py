"""The SQL helpers of :mod:`sparktide.spark.sql` give the reference engine's text.

:func:`~sparktide.spark.sql.iso` writes every instant of a record as text, in every
representation the Spark engine has; it must read as :func:`sparktide.time.format_instant`
does, whatever the session's time zone (a caller's ``start`` may set any).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.spark.sql import iso
from sparktide.time import format_instant

#: The first and last microsecond of years 1-9999.
FIRST, LAST = -62_135_596_800_000_000, 253_402_300_799_999_999
#: Instants whose text has a trap: no fraction, trailing zeros, seconds of 0 and 10,
#: before 1970, the ends of the range, a daylight-saving change in New York.
EDGES = [
    FIRST,
    LAST,
    0,
    -1,
    1,
    1_000_000,
    -1_000_000,
    10_000_000,
    1_772_366_400_500_000,
    1_772_366_410_000_000,
    1_772_366_400_000_100,
    1_699_163_999_999_999,  # 2023-11-05T05:59:59.999999Z, New York's clocks go back
    1_699_164_000_000_000,
]


def _texts(spark, values: list[int | None], zone: str) -> list[str | None]:
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        frame = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i int, x bigint")
        return [r.text for r in frame.selectExpr("i", f"{iso('x')} AS text").orderBy("i").collect()]
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_iso_writes_what_format_instant_writes_in_any_session_zone(spark, zone):
    rng = random.Random(zone)
    values = [
        *EDGES,
        *(rng.randrange(FIRST, LAST) for _ in range(300)),
        *(rng.randrange(FIRST, LAST) // 1_000_000 * 1_000_000 for _ in range(100)),
        *(1_699_164_000_000_000 + rng.randrange(-7200, 7200) * 1_000_000 for _ in range(100)),
    ]
    texts = _texts(spark, [*values, None], zone)
    assert texts == [*map(format_instant, values), None]


@settings(max_examples=5, deadline=None)
@given(st.lists(st.integers(FIRST, LAST), min_size=1, max_size=200))
def test_iso_of_any_instant_of_the_range(spark, values):
    assert _texts(spark, values, "Europe/Paris") == [format_instant(v) for v in values]
