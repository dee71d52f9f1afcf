"""Typed streaming DataFrames in (issue 27.1): ``start(spark, job, frame)`` on a Parquet
table stream, a Kafka-shaped frame after ``from_json`` and the rate source gives the
records the same events give as JSON lines, on Spark and in the reference engine; so do
a job file's ``[source]`` naming Spark's rate source or a catalog table's stream."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from sparktide.core.engine import simulate
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.reader import job_records
from sparktide.spark import run_job, start
from sparktide.time import SECOND, format_instant, parse_instant
from tests.spark.streams import BASE, clock, read_output

N = 60
SCHEMA = (
    "id BIGINT, device STRING, partition BIGINT, t TIMESTAMP, a TIMESTAMP, value DOUBLE, "
    "loc STRUCT<x: INT, y: DOUBLE>, tags ARRAY<STRING>"
)
WINDOW = {
    "type": "tumbling",
    "size": "10s",
    # (with a computed grouping column, semantics §6.13)
    "group_by": ["device", {"band": "FLOOR(value / 5)"}],
    "aggregates": {"n": "count(*)", "mean": "avg(value)", "total": "sum(value)"},
}


def _event(v: int) -> dict[str, Any]:
    """Event ``v``: the same arithmetic as :func:`_rate_events` does in SQL."""
    arrival = BASE + v * SECOND
    return {
        "id": v,
        "device": f"d{v % 4}",
        "partition": v % 2,
        "t": format_instant(arrival - (v * 7 % 13) * SECOND),
        "a": format_instant(arrival),
        "value": (v % 10) * 1.5,
        "loc": {"x": v, "y": v / 4},
        "tags": [f"k{v % 3}", "x"],
    }


def _events() -> list[dict[str, Any]]:
    """N events, disordered (some late under the job's policy), and two bad ones."""
    events = [_event(v) for v in range(N)]
    events[17]["t"] = None  # a null time: a dead letter
    events[33]["partition"] = None  # a null partition
    return events


def _job(tmp_path: Path, name: str, window: bool = True, **source: Any) -> Job:
    tables: dict[str, Any] = {
        "source": {
            "path": str(tmp_path / "jsonl"),
            "timestamp_by": "t",
            "arrival_time": "a",
            "partition": "partition",
            **source,
        },
        "ordering": {"late_arrival": "5s", "out_of_order": "3s"},
        "output": {
            "path": f"{name}/out",
            "dead_letter": f"{name}/dead",
            "checkpoint": f"{name}/ck",
        },
    }
    if window:
        tables["window"] = WINDOW
    return Job.from_dict(tables, base_dir=tmp_path)


def _write_inputs(tmp_path: Path, events: list[dict[str, Any]]) -> None:
    """The events as a JSON-lines file, a typed Parquet file and a Kafka-shaped one."""
    (tmp_path / "jsonl").mkdir()
    text = "".join(json.dumps(e) + "\n" for e in events)
    (tmp_path / "jsonl" / "part-0.jsonl").write_text(text)
    (tmp_path / "typed").mkdir()
    rows = []
    for e in events:
        row = dict(e)
        for column in ("t", "a"):
            row[column] = None if e[column] is None else dt.datetime.fromisoformat(e[column])
        rows.append(row)
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("device", pa.string()),
            ("partition", pa.int64()),
            ("t", pa.timestamp("us", tz="UTC")),
            ("a", pa.timestamp("us", tz="UTC")),
            ("value", pa.float64()),
            ("loc", pa.struct([("x", pa.int32()), ("y", pa.float64())])),
            ("tags", pa.list_(pa.string())),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "typed" / "p.parquet")
    (tmp_path / "kafka").mkdir()
    kafka = pa.table(
        {
            "key": pa.array([str(e["device"]).encode() for e in events], pa.binary()),
            "value": pa.array([json.dumps(e).encode() for e in events], pa.binary()),
        }
    )
    pq.write_table(kafka, tmp_path / "kafka" / "p.parquet")


def _run(spark, job: Job, frame=None) -> dict[str, list[Any]]:
    query = start(spark, job, frame, once=True, clock=clock)
    query.awaitTermination()
    query.flush()
    out = [{k: v for k, v in r.items() if k != "emitted_at"} for r in read_output(job.output.path)]
    return {"out": out, "dead": _dead(read_output(job.output.dead_letter))}


def _dead(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Dead letters without their place (a typed row's is its place in the batch)."""
    return sorted(
        (d["reason"], d.get("error"), json.dumps(d["record"], sort_keys=True)) for d in records
    )


def _reference(job: Job) -> dict[str, list[Any]]:
    records = job_records(job)
    for record in records:
        record.processing_time = clock(0)
    result = simulate(job, records, flush=True, timers_at_due=False)
    drop = ("type", "emitted_at")
    out = result.windows if job.window is not None else result.events
    return {
        "out": [{k: v for k, v in r.items() if k not in drop} for r in out],
        "dead": _dead(result.dead_letters),
    }


def _rate_events(spark):
    """The rate source's rows mapped to the job's columns by :func:`_event`'s arithmetic."""
    rate = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", N)
        .option("numPartitions", 1)
        .load()
    )
    v = F.col("value")
    arrival = F.expr(f"timestamp_micros({BASE} + value * {SECOND})")
    late = F.expr("make_dt_interval(0, 0, 0, (value * 7) % 13)")
    return rate.select(
        v.alias("id"),
        F.concat(F.lit("d"), (v % 4).cast("string")).alias("device"),
        F.when(v != 33, v % 2).alias("partition"),
        F.when(v != 17, arrival - late).alias("t"),
        arrival.alias("a"),
        ((v % 10) * 1.5).alias("value"),
        F.struct(v.cast("int").alias("x"), (v / 4).alias("y")).alias("loc"),
        F.array(F.concat(F.lit("k"), (v % 3).cast("string")), F.lit("x")).alias("tags"),
    )


@pytest.mark.parametrize("window", [True, False], ids=["windows", "released"])
def test_typed_frames_give_the_records_of_json_lines(spark, tmp_path, window):
    """JSON-lines files, a typed Parquet stream, a Kafka-shaped frame after ``from_json``
    and the rate source: the same records, and the reference engine's. Released events
    carry the struct and array payload through."""
    _write_inputs(tmp_path, _events())
    want = _reference(_job(tmp_path, "ref", window))
    assert want["out"] and [d[0] for d in want["dead"]] == ["malformed", "malformed"]
    if not window:
        assert all(e["loc"]["x"] == e["id"] and e["tags"][1] == "x" for e in want["out"])
    typed = spark.readStream.schema(SCHEMA).parquet(str(tmp_path / "typed"))
    kafka = (
        spark.readStream.schema("key BINARY, value BINARY")
        .parquet(str(tmp_path / "kafka"))
        .select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("e"))
        .select("e.*")
    )
    frames = {"jsonl": None, "typed": typed, "kafka": kafka, "rate": _rate_events(spark)}
    if not window:  # (the payload's way through: two frames suffice)
        frames = {"typed": typed, "kafka": kafka}
    for name, frame in frames.items():
        unread = {} if frame is None else {"path": None}  # (a frame's job reads no file)
        got = _run(spark, _job(tmp_path, name, window, **unread), frame)
        assert got == want, name


def test_computed_times_and_keys_read_a_typed_frame_s_columns(spark, tmp_path):
    """``timestamp_by`` and ``over`` as expressions (semantics §1.4) over a typed stream's
    columns (a timestamp, a struct's member): the records and dead letters of the same
    events as JSON lines in the reference engine."""
    _write_inputs(tmp_path, _events())
    stamp = "DATEADD(second, GETRECORDPROPERTYVALUE(loc, 'x') % 3, t)"

    def job(name: str, path: str | None) -> Job:
        tables = {
            "source": {"path": path, "timestamp_by": stamp, "arrival_time": "a"},
            "ordering": {"late_arrival": "5s", "out_of_order": "3s"},
            "window": {**WINDOW, "group_by": [{"dev": "UPPER(device)"}]},
            "output": {"path": f"{name}/out", "dead_letter": f"{name}/dead"},
        }
        tables["source"]["over"] = "UPPER(device)"
        tables["output"]["checkpoint"] = f"{name}/ck"
        return Job.from_dict(tables, base_dir=tmp_path)

    want = _reference(job("ref", str(tmp_path / "jsonl")))
    assert [d[1] for d in want["dead"]].count(f"timestamp {stamp} is null") == 1
    typed = spark.readStream.schema(SCHEMA).parquet(str(tmp_path / "typed"))
    got = _run(spark, job("typed", None), typed)
    assert got["dead"] == want["dead"]
    # (windows of different substreams closing together: any order, as the differential
    # tests compare them)
    assert sorted(got["out"], key=json.dumps) == sorted(want["out"], key=json.dumps)


def test_ntz_times_are_utc_and_epoch_numbers_take_their_unit(spark, tmp_path):
    """A ``TIMESTAMP_NTZ`` event time is read as UTC whatever the session's zone, an
    epoch-milliseconds arrival time by ``time_unit``; a number that is no instant of
    years 1-9999 is a dead letter that says so, and the run goes on."""
    events = _events()
    _write_inputs(tmp_path, events)
    (tmp_path / "ntz").mkdir()
    naive = [
        None if e["t"] is None else dt.datetime.fromisoformat(e["t"]).replace(tzinfo=None)
        for e in events
    ]
    millis = [parse_instant(e["a"]) // 1000 for e in events]
    millis[40] = 9_000_000_000_000_000_000
    table = pa.table(
        {
            "id": [e["id"] for e in events],
            "device": [e["device"] for e in events],
            "partition": [e["partition"] for e in events],
            "t": pa.array(naive, pa.timestamp("us")),
            "a": pa.array(millis, pa.int64()),
            "value": [e["value"] for e in events],
        }
    )
    pq.write_table(table, tmp_path / "ntz" / "p.parquet")
    ntz = "id BIGINT, device STRING, partition BIGINT, t TIMESTAMP_NTZ, a BIGINT, value DOUBLE"
    frame = spark.readStream.schema(ntz).parquet(str(tmp_path / "ntz"))
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        got = _run(spark, _job(tmp_path, "units", time_unit="ms"), frame)
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    # the reference: event 40 dead-lettered for its arrival
    (tmp_path / "jsonl" / "part-0.jsonl").write_text(
        "".join(
            json.dumps({k: v for k, v in e.items() if k not in ("loc", "tags")}) + "\n"
            for e in events
            if e["id"] != 40
        )
    )
    want = _reference(_job(tmp_path, "ref"))
    assert got["out"] == want["out"]
    errors = [d[1] for d in got["dead"]]
    assert len(errors) == 3
    assert any("a = 9000000000000000000 (ms since 1970) is no instant" in e for e in errors), errors


@pytest.mark.parametrize(
    ("source", "select", "key", "says"),
    [
        ({}, "id, device, partition, a, value", "source.timestamp_by", "'t' is not in"),
        ({}, "id, device, partition, true AS t, a, value", "source.timestamp_by", "boolean"),
        ({}, "id, device, partition, 5L AS t, a, value", "source.timestamp_by", "time_unit"),
        (  # (a computed time's fields: semantics §1.4)
            {"timestamp_by": "DATEADD(second, 1, tt)"},
            "id, device, partition, t, a, value",
            "source.timestamp_by",
            "'tt' is not in",
        ),
        (
            {},
            "id, device, struct(partition) AS partition, t, a, value",
            "source.partition",
            "struct<partition:bigint>",
        ),
        ({}, "id, device, partition, t, a, 'x' AS value", "window.aggregates.mean", "string"),
        ({}, "id, partition, t, a, value", "window.group_by", "'device' is not in"),
    ],
)
def test_a_bad_column_is_one_error_before_any_batch(spark, tmp_path, source, select, key, says):
    """A missing or mistyped column is a ConfigError naming the key, the column and its
    type, raised by ``start`` before anything runs (no checkpoint is written)."""
    _write_inputs(tmp_path, _events()[:3])
    frame = (
        spark.readStream.schema(SCHEMA)
        .parquet(str(tmp_path / "typed"))
        .selectExpr(*select.split(", "))
    )
    job = _job(tmp_path, "bad", **source)
    with pytest.raises(ConfigError) as error:
        start(spark, job, frame, once=True, clock=clock)
    assert error.value.key == key and says in str(error.value)
    assert not Path(job.output.checkpoint).exists()


def test_epoch_seconds_as_decimals_and_nanoseconds_are_exact(spark, tmp_path):
    """Epoch numbers in each unit read to the microsecond (decimals exactly, integer
    nanoseconds by floor division)."""
    from sparktide.spark.inputs.typedframe import _epoch_micros

    rows = spark.sql(
        "SELECT "
        + ", ".join(
            [
                _epoch_micros("CAST(1772366400.123456 AS DECIMAL(20,6))", _dec(), "s") + " AS s",
                _epoch_micros("-1500L", _long(), "ns") + " AS ns",
                _epoch_micros("1772366400123L", _long(), "ms") + " AS ms",
                _epoch_micros("9223372036854775807L", _long(), "ms") + " AS overflow",
            ]
        )
    ).collect()[0]
    assert rows["s"] == parse_instant("2026-03-01T12:00:00.123456Z")
    assert rows["ns"] == -2 and rows["ms"] == 1772366400123000 and rows["overflow"] is None


def _dec():
    from pyspark.sql import types as T

    return T.DecimalType(20, 6)


def _long():
    from pyspark.sql import types as T

    return T.LongType()


def test_a_job_file_names_spark_s_rate_source(spark, tmp_path):
    """``[source] format = "rate-micro-batch"`` with its options, run by ``run_job``: the
    typed route on Spark's own stream, the records the reference engine gives the same
    rows as JSON lines (arriving at the batch's processing time)."""
    start_ms = (clock(0) - 2 * SECOND) // 1000  # (the rows' time: 2 s before they arrive)
    options = {"rowsPerBatch": 40, "numPartitions": 2, "startTimestamp": start_ms}
    tables: dict[str, Any] = {
        "source": {
            "format": "rate-micro-batch",
            "timestamp_by": "timestamp",
            "options": {**options, "advanceMillisPerBatch": 30_000},
        },
        "window": {
            "type": "tumbling",
            "size": "10s",
            "aggregates": {"n": "count(*)", "total": "sum(value)"},
        },
        "output": {"path": "rate/out", "dead_letter": "rate/dead", "checkpoint": "rate/ck"},
    }
    job = Job.from_dict(tables, base_dir=tmp_path)
    metrics: list[dict[str, Any]] = []
    run_job(
        job,
        once=True,
        flush=True,
        spark=spark,
        clock=clock,
        publish=False,
        on_metrics=metrics.append,
    )
    assert [m["plan"] for m in metrics] == ["one_pass", "flush"]
    assert metrics[0]["this_batch"]["admitted"] == 40 and metrics[0]["this_batch"]["late"] == 0
    got = [{k: v for k, v in r.items() if k != "emitted_at"} for r in read_output(job.output.path)]

    rows = _rate_rows(spark, tables["source"]["options"])
    (tmp_path / "jsonl").mkdir()
    lines = [json.dumps({"timestamp": format_instant(t), "value": v}) for t, v in rows]
    path = tmp_path / "jsonl" / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, ns=(clock(0) * 1000, clock(0) * 1000))  # (arriving as the batch did)
    reference = {**tables, "source": {"path": "jsonl", "timestamp_by": "timestamp"}}
    want = _reference(Job.from_dict(reference, base_dir=tmp_path))["out"]
    assert len(rows) == 40 and got == want and sum(w["n"] for w in want) == 40


def _rate_rows(spark, options: dict[str, Any]) -> list[tuple[int, int]]:
    """The first micro-batch of a ``rate-micro-batch`` stream: (time, value) rows."""
    stream = spark.readStream.format("rate-micro-batch").options(**options).load()
    query = (
        stream.selectExpr("unix_micros(timestamp) AS t", "value")
        .writeStream.format("memory")
        .queryName("rate_rows")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    try:
        return sorted((r.t, r.value) for r in spark.table("rate_rows").collect())
    finally:
        spark.catalog.dropTempView("rate_rows")


def test_a_job_file_names_a_catalog_table_s_stream(spark, tmp_path):
    """``[source] format = "table"``: Spark streams the catalog table (here a Parquet
    table over the typed events); the records are the JSON lines' and the reference
    engine's."""
    _write_inputs(tmp_path, _events())
    want = _reference(_job(tmp_path, "ref"))
    name = f"typed_events_{tmp_path.name.replace('-', '_')}"
    spark.sql(f"CREATE TABLE {name} ({SCHEMA}) USING parquet LOCATION '{tmp_path / 'typed'}'")
    try:
        job = _job(tmp_path, "table", path=None, format="table", table=name)
        assert _run(spark, job) == want
    finally:
        spark.sql(f"DROP TABLE {name}")
    two = f"{name}_two"  # (two files, one per micro-batch: the run's max_files_per_trigger)
    pq.write_table(
        pq.read_table(tmp_path / "typed" / "p.parquet"), tmp_path / "typed" / "q.parquet"
    )
    spark.sql(f"CREATE TABLE {two} ({SCHEMA}) USING parquet LOCATION '{tmp_path / 'typed'}'")
    try:
        job = _job(tmp_path, "two", path=None, format="table", table=two)
        metrics: list[dict[str, Any]] = []
        query = start(
            spark, job, once=True, clock=clock, on_metrics=metrics.append, max_files_per_trigger=1
        )
        query.awaitTermination()
        assert [m["this_batch"]["input"] for m in metrics] == [N, N]
    finally:
        spark.sql(f"DROP TABLE {two}")
    missing = _job(tmp_path, "missing", path=None, format="table", table=name)
    with pytest.raises(ConfigError, match=r"source\.table: Spark cannot stream this source"):
        start(spark, missing, once=True)
