"""Partition clocks on Spark (``sparktide.spark.clocks``): the state file's JSON read
and written back unchanged, and the rules core defines applied to one partition."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from sparktide.core.instants import NEG_INF
from sparktide.core.watermark import NEVER_SEEN_LAG
from sparktide.spark.clocks import PartitionClock, clock_json, load_clock

STATE = (
    '{"partitions": {"0": {"arrival": 5, "last_arrival": 5, "last_processing": 9, '
    '"seen": true, "newest": 3, "watermark": 1, "events": 2}, "1": {"arrival": '
    f'{NEG_INF}, "last_arrival": {NEG_INF}, "last_processing": {NEG_INF}, "seen": false, '
    f'"newest": {NEG_INF}, "watermark": {NEG_INF}}}}}, "arrival": 5, "job_watermark": 1, '
    '"counters": {"0": {"input": 2}}, "malformed": 0, "processing_time": 9, "started": 9, '
    '"written": {}, "flushed": false, "cti_floor": 4}'
)


def test_the_state_file_reads_and_writes_back_unchanged():
    clock = load_clock(json.loads(STATE), job=None)  # type: ignore[arg-type]
    assert isinstance(clock["partitions"]["0"], PartitionClock)
    assert clock["partitions"]["1"].events is None
    assert json.dumps(clock_json(clock)) == STATE


instants = st.integers(-(1 << 50), 1 << 50)


@given(instants, instants, instants, st.booleans(), instants)
def test_the_idle_estimate_is_the_rule(arrival, last_arrival, last_processing, seen, now):
    part = PartitionClock(arrival, last_arrival, last_processing, seen)
    guess = last_arrival + (now - last_processing) if seen else now - NEVER_SEEN_LAG
    assert part.idle_estimate(now) == max(arrival, guess)


optional = st.none() | st.integers(0, 1 << 40)


@given(instants, instants, instants, optional, optional)
def test_the_refresh_is_the_rule(newest, watermark, arrival, out_of_order, late):
    part = PartitionClock(newest=newest, watermark=watermark)
    expected = watermark
    if out_of_order is not None:
        expected = max(expected, newest - out_of_order)
    if late is not None:
        expected = max(expected, arrival - late)
    assert part.timeline_watermark(arrival, out_of_order, late) == expected


def test_other_spark_tests_run_without_generated_code_or_adaptive_execution(spark):
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
    assert spark.conf.get("spark.sql.adaptive.enabled") == "false"
