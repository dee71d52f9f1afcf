"""Window records written from the driver (``sparktide.spark.outputs.records``) are the very
text the Spark route writes: the same closed windows through both, line for line."""

from __future__ import annotations

import functools
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.spark.batch import Batch
from sparktide.spark.engine import SparkEngine
from sparktide.spark.outputs import records
from sparktide.spark.outputs.records import (
    double_text,
    spark_doubles,
    window_lines,
    write_windows,
)
from sparktide.spark.outputs.text import collect_sorted
from sparktide.time import parse_instant
from tests.spark.streams import job_for

TABLES = {
    "source": {"partition": "partition"},
    "window": {
        "type": "hopping",
        "size": "30s",
        "hop": "10s",
        "group_by": ["device", "partition"],
        "aggregates": {"n": "count(*)", "c": "count(value)", "s": "sum(value)", "m": "avg(v2)"},
    },
}

#: Doubles whose text is hard: plain range edges, Java 17's non-shortest digits (1e23 is
#: 9.999999999999999E22 there), scientific notation both ways, the smallest subnormal.
HARD = [
    0.0,
    -0.0,
    21.0,
    0.1 + 0.2,
    1e-3,
    float(np.nextafter(1e-3, 0)),
    float(np.nextafter(1e7, 0)),
    1e7,
    1e-5,
    12345678.9,
    1e16,
    8.41e21,
    1e23,
    -2.0853372095117043e18,
    5e-324,
    1.7976931348623157e308,
]


def _batch(now: int) -> Batch:
    """A batch writing its windows to the directory ``spark`` at processing time ``now``."""
    return Batch(0, False, now=now, label="spark")


def _closed(rng: random.Random, rows: int) -> pa.Table:
    """Closed windows with merged partials of every kind: no values (null), integers only
    (an exact sum, also beyond 64 bits), floats, and sums that overflow a double."""
    start = parse_instant("2026-03-01T09:00:00Z")
    table: dict[str, list] = {name: [] for name in ("scope", "g0", "g1", "start", "end")}
    names = ["p0_n", "p1_n", "p2_si", "p2_sd", "p2_nn", "p2_nf"]
    names += ["p3_si", "p3_sd", "p3_nn", "p3_nf"]
    table.update({name: [] for name in names})
    for i in range(rows):
        table["scope"].append(rng.choice(["", "0", "1"]))
        table["g0"].append(rng.choice(['"d1"', '"d2"', "null", "7", "true"]))
        table["g1"].append(rng.choice(["0", "1", "12"]))
        s = start + rng.randrange(-3, 20) * 10_000_000 + rng.choice([0, 1, 250_000])
        table["start"].append(s)
        table["end"].append(s + 30_000_000)
        table["p0_n"].append(rng.randrange(1, 50))
        table["p1_n"].append(rng.randrange(0, 50))
        for p in ("p2", "p3"):
            kind = rng.choice(["none", "ints", "huge", "floats", "hard", "overflow"])
            si = sd = None
            nn = nf = 0
            if kind in ("ints", "huge", "floats", "hard"):
                si = rng.randrange(-(10**6), 10**6) if kind != "huge" else 10**30 + i
                nn = rng.randrange(1, 9)
            if kind in ("floats", "hard", "overflow"):
                sd = rng.uniform(-1e4, 1e4) if kind == "floats" else rng.choice(HARD)
                if kind == "overflow":
                    sd, si = 1.7976931348623157e308, 10**37
                nf = rng.randrange(1, 5)
                nn += nf
            table[f"{p}_si"].append(si)
            table[f"{p}_sd"].append(sd)
            table[f"{p}_nn"].append(nn)
            table[f"{p}_nf"].append(nf)
    types = {"start": pa.int64(), "end": pa.int64(), "p2_si": pa.decimal128(38, 0)}
    types["p3_si"] = pa.decimal128(38, 0)
    return pa.table(
        {
            name: pa.array(values, types.get(name, pa.string() if name[0] in "sg" else None))
            for name, values in table.items()
        }
    )


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("split", [False, True])
def test_driver_records_are_the_spark_routes(spark, tmp_path, monkeypatch, seed, split):
    if split:  # the records' text sorted in pieces among threads (as for many windows)
        monkeypatch.setattr(records, "_SPLIT_SORT_ROWS", 50)
        monkeypatch.setattr(records.os, "cpu_count", lambda: 4)
    job = job_for(tmp_path, TABLES)
    engine = SparkEngine(spark, job)
    closed = _closed(random.Random(seed), 400)
    if split:  # a substream key that is the group: the order is the one text's
        columns = closed.column_names
        closed = closed.set_column(0, "scope", closed.column("g0"))
        closed = closed.set_column(2, "g1", pa.repeat(pa.scalar("0"), closed.num_rows))
        closed = closed.group_by(["scope", "g0", "g1", "start"]).aggregate(
            [(name, "max") for name in columns[4:]]
        )
        closed = closed.rename_columns([name.removesuffix("_max") for name in closed.column_names])
        closed = closed.select(columns)
    now = parse_instant("2026-03-01T09:30:00.5Z")
    write_windows(engine.context, _batch(now), spark.createDataFrame(closed), ["g0", "g1"])
    written = sorted(Path(job.output.path, "spark").glob("part-*"))
    want = "".join(path.read_text() for path in written)
    names = [tuple(name for name, _ in plan.partial) for plan in engine.context.aggregates]
    doubles = functools.partial(spark_doubles, spark)
    got = window_lines(closed, job.window, names, now, doubles).to_pylist()
    assert "".join(got) == want
    assert all(line.endswith("}\n") and line.count("\n") == 1 for line in got)
    assert len(got) == closed.num_rows
    assert window_lines(closed.slice(0, 0), job.window, names, now, doubles).to_pylist() == []
    if not split:
        assert len(got) == 400  # (and every kind of value was there)
        assert all(part in want for part in ('"s":null', "E", "00000000000"))


def test_records_with_no_group_or_aggregate_are_the_spark_routes(spark, tmp_path):
    """Windows with neither groups nor aggregates, of one start and end (substreams: a
    window per key): every line is the same text, as the Spark route writes it."""
    job = job_for(tmp_path, {**TABLES, "window": {"type": "tumbling", "size": "30s"}})
    engine = SparkEngine(spark, job)
    start = parse_instant("2026-03-01T09:00:00Z")
    closed = pa.table(
        {
            "scope": pa.array(["a", "b", "c"]),
            "start": pa.array([start] * 3, pa.int64()),
            "end": pa.array([start + 30_000_000] * 3, pa.int64()),
        }
    )
    now = start + 45_000_000
    write_windows(engine.context, _batch(now), spark.createDataFrame(closed), [])
    written = sorted(Path(job.output.path, "spark").glob("part-*"))
    want = "".join(path.read_text() for path in written)
    doubles = functools.partial(spark_doubles, spark)
    got = window_lines(closed, job.window, [], now, doubles).to_pylist()
    assert "".join(got) == want and len(set(got)) == 1 and len(got) == 3


@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=300))
def test_double_text_is_sparks_cast(spark, values):
    """Every double (the plain range by Arrow, the others by Spark) reads as Spark's
    ``CAST(d AS STRING)`` writes it."""
    values = [*values, *HARD]
    frame = spark.createDataFrame([(v,) for v in values], "v double")
    want = [row["s"] for row in frame.selectExpr("CAST(v AS STRING) AS s").collect()]
    got = double_text(np.array(values), functools.partial(spark_doubles, spark))
    assert got.to_pylist() == want


def test_records_collected_to_the_driver_are_in_sparks_order(spark):
    """``collect_sorted`` sorts on the driver, in Arrow, as ``write_text``'s Spark sort
    orders the same rows: ascending, nulls first, texts by their UTF-8 bytes (an upper
    case letter before a lower, ``é`` and an emoji after ``~``), negative numbers first."""
    texts = [None, "b", "a", "Z", "é", "~", "\U0001f600", "\uffff", "", "a b"]
    numbers = [None, -3, 0, 7, 2**62]
    rows = [
        (text, number, f"{text}|{number}")
        for text in texts
        for number in numbers
        if (len(text or "") + (number or 0)) % 3 != 1  # (not every combination)
    ]
    random.Random(5).shuffle(rows)
    frame = spark.createDataFrame(rows, "_o0 string, _o1 bigint, value string").repartition(3)
    want = [row["value"] for row in frame.orderBy("_o0", "_o1").collect()]
    got = collect_sorted(frame, ["_o0", "_o1"])
    assert got.column_names == ["value"]
    assert got.column("value").to_pylist() == want
    assert want[0] == "None|None" and len(want) == len(rows) > 20
