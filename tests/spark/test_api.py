"""The PySpark API: a job run on a broker-shaped stream the caller built."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparktide.core.engine import simulate
from sparktide.job import Job
from sparktide.reader import parse_fields
from sparktide.spark import broker_lines, start
from sparktide.spark.engine import check_job
from sparktide.spark.plans import scans_ctis
from sparktide.time import parse_instant
from tests.spark.streams import read_output

#: Whole-stage code generation, as users' jobs run (tests/spark/conftest.py)
pytestmark = pytest.mark.codegen

T = "2026-03-01T09:{}Z".format
# (partition, offset, broker timestamp, event time, id)
ROWS = [
    (0, 0, "00:06", "00:05", 1),
    (1, 0, "00:10", "00:40", 2),
    (0, 1, "00:20", "00:12", 3),
    (1, 1, "00:45", "00:00", 4),
    (0, 2, "00:50", "02:00", 5),
    (1, 2, "00:51", "00:41", 6),
    (0, 3, "01:30", "01:25", 7),
    (1, 3, "01:31", "01:29", 8),
]


def _job(tmp_path) -> Job:
    return Job.from_dict(
        {
            "source": {"path": "-", "timestamp_by": "t", "partition": "partition", "partitions": 2},
            "ordering": {"late_arrival": "20s", "out_of_order": "10s", "early_arrival": "1m"},
            "window": {
                "type": "tumbling",
                "size": "30s",
                "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
            },
            "output": {"path": "out/windows", "dead_letter": "out/dead", "checkpoint": "out/ck"},
        },
        base_dir=tmp_path,
    )


def test_broker_stream_matches_reference(spark, tmp_path):
    """A caller's stream, on a caller's session in another time zone than UTC (Spark
    renders timestamps in the session's zone; sparktide's output times must not move)."""
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        _broker_stream_matches_reference(spark, tmp_path)
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def _broker_stream_matches_reference(spark, tmp_path):
    utc = dt.UTC
    table = pa.table(
        {
            "value": [json.dumps({"id": i, "t": T(e)}) for *_, e, i in ROWS],
            "partition": pa.array([p for p, *_ in ROWS], pa.int32()),
            "offset": pa.array([o for _, o, *_ in ROWS], pa.int64()),
            "timestamp": pa.array(
                [dt.datetime.fromisoformat(T(a)).astimezone(utc) for _, _, a, *_ in ROWS],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )
    (tmp_path / "kafka").mkdir()
    pq.write_table(table, tmp_path / "kafka" / "part-0.parquet")
    folder = str(tmp_path / "kafka")
    stream = spark.readStream.schema(spark.read.parquet(folder).schema).parquet(folder)
    job = _job(tmp_path)
    query = start(
        spark, job, broker_lines(stream), once=True, clock=lambda b: parse_instant(T("02:00")) + b
    )
    query.awaitTermination()
    query.flush()
    got = [{k: v for k, v in w.items() if k != "emitted_at"} for w in read_output(job.output.path)]

    records = []
    for seq, (p, _o, a, e, i) in enumerate(sorted(ROWS, key=lambda r: (r[2], r[0], r[1]))):
        record = parse_fields(
            seq,
            {"id": i, "t": T(e), "partition": p},
            job.source,
            default_arrival=parse_instant(T(a)),
        )
        record.processing_time = parse_instant(T("02:00"))
        records.append(record)
    want = [
        {k: v for k, v in w.items() if k not in ("type", "emitted_at")}
        for w in simulate(job, records).windows
    ]
    assert got == want
    assert [w["n"] for w in got] and sum(w["n"] for w in got) == 7  # event 5 is early


@pytest.mark.parametrize(
    ("ordering", "punctuation", "source"),
    [
        ({"on_out_of_order": "drop"}, {"every_events": 2, "delay": "-2us"}, {}),
        ({"on_out_of_order": "dead_letter"}, {"every": "5s", "delay": "-1s"}, {"end_time": "e"}),
        ({}, {"every": "10s", "delay": "-1us"}, {}),
        ({}, {"every_events": 2, "delay": "-1us"}, {"end_time": "e"}),
    ],
)
def test_every_generated_cti_delay_runs_on_spark(ordering, punctuation, source):
    """Negative delays whose CTIs feed back into the newest timestamp with no closed form
    (below -1us under drop / dead_letter; adjust with periods or intervals) run as the
    compiled pass (sparktide.spark.ctiscan); the rest keep their closed forms."""
    tables = {
        "source": {"path": "in/", "timestamp_by": "t", **source},
        "ordering": ordering,
        "punctuation": punctuation,
        "output": {"path": "out/", "checkpoint": "cp/"},
    }
    job = Job.from_dict(tables)
    check_job(job)
    assert scans_ctis(job)
    for delay in ("0s", "-1us"):  # closed forms: delays of zero or more; -1us unless adjusted
        runs = Job.from_dict(dict(tables, punctuation={**punctuation, "delay": delay}))
        check_job(runs)
        assert scans_ctis(runs) == (delay == "-1us" and not ordering)
    accepted = Job.from_dict(dict(tables, ordering={"on_out_of_order": "accept"}))
    check_job(accepted)  # nothing reads the CTIs
    assert not scans_ctis(accepted)


@pytest.mark.parametrize(
    "window",
    [
        {"type": "session", "gap": "10s"},
        {"type": "session", "gap": "10s", "max_duration": "1m"},
        {"type": "sliding", "size": "10s"},
    ],
)
def test_session_and_sliding_windows_take_idle_timeout_and_accept_on_spark(window):
    """``idle_timeout`` runs on Spark for every window kind (issue 29.8; the behaviour:
    tests/spark/test_differential.py ``*-idle-timeout``, window_*_idle_timeout.toml);
    ``accept`` for these two kinds too (tests/spark/test_differential.py ``*-accept-*``,
    window_*_accept.toml)."""
    tables = {
        "source": {"path": "in/", "timestamp_by": "t"},
        "window": {**window, "idle_timeout": "30s", "aggregates": {"n": "count(*)"}},
        "output": {"path": "out/", "checkpoint": "cp/"},
    }
    check_job(Job.from_dict(tables))
    check_job(Job.from_dict(dict(tables, ordering={"on_out_of_order": "accept"})))


def test_a_stopped_query_flushes_when_the_job_says_so(spark, tmp_path):
    """``start(..., flush_on_stop=True)`` (``[output] flush_on_stop``): ``query.stop()``
    is StreamInsight's final CTI — every window closes, and the flush is committed."""
    import time

    from tests.spark.streams import clock, job_for, write_stream

    write_stream(tmp_path / "in", seed=3, events=30, files=1)
    window = {"type": "tumbling", "size": "1m", "aggregates": {"n": "count(*)"}}
    job = job_for(tmp_path, {"window": window})
    query = start(spark, job, processing_time="1 second", clock=clock, flush_on_stop=True)
    deadline = time.monotonic() + 60
    while query.engine.last_metrics is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert query.engine.last_metrics["open_windows"] > 0
    query.stop()
    assert not query.isActive
    assert query.flushed is not None and query.flushed["open_windows"] == 0
    closed = sum(w["n"] for w in read_output(job.output.path))
    assert closed == query.flushed["admitted"] > 0
    assert query.flush() is None  # flushed already: nothing written twice
