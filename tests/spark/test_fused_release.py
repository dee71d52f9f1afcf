"""The one-pass plan releasing a windowless job's events itself
(``sparktide.spark.onepass.release``): the reference engine's records, the very text and
state the general plan writes, state that crosses routes and restarts, and the general
plan whenever a batch would hold an event."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sparktide.spark.onepass.plan as plan_module
import sparktide.spark.plans as plans
import sparktide.spark.taskpass as taskpass
from sparktide.core.analytic import analytic_expired as reference_expired
from sparktide.core.instants import NEG_INF, POS_INF
from sparktide.job import Job
from sparktide.spark import run_job
from sparktide.spark.aggregates import json_text
from sparktide.spark.onepass import fusable, fused_plan, kernel_schema
from sparktide.spark.onepass.collect import TaskRows
from sparktide.spark.onepass.judge import judge
from sparktide.spark.onepass.release import analytic_expired, instant_texts
from sparktide.spark.onepass.releaseplan import releasable
from sparktide.spark.onepass.signals import Abort
from sparktide.spark.onepass.values import field_text
from sparktide.time import format_instant
from tests.spark.streams import clock, job_for, write_stream
from tests.spark.test_differential import assert_matches_reference, run_matching_reference

CASES = {
    # Stream Analytics' defaults (late 5 s, no out-of-order tolerance, adjust): every
    # admitted event is released in its batch; one partition, one merged timeline
    "merged-defaults": {
        "ordering": {"late_arrival": "5s", "out_of_order": "0s"},
        "analytic": {
            "prev": {
                "function": "lag",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "30s",
            },
            "first": {"function": "isfirst", "period": "20s", "partition_by": ["device"]},
            "back2": {"function": "lag", "value": "id", "offset": 2, "limit_duration": "1m"},
            "own": {
                "function": "last",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "1m",
            },
        },
        "select": {
            "id": "id",
            "device": "device",
            "value": "value",
            "prev": "prev",
            "first": "first",
            "back2": "back2",
            "own": "own",
        },
    },
    # partitions follow their own watermarks (scopes), late and out-of-order events
    # dropped; a key of two fields (a text and an integer), ISFIRST over the whole scope
    "partitioned-drop-two-keys": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {
            "late_arrival": "10s",
            "out_of_order": "0s",
            "partitioned": True,
            "action": "drop",
            "on_out_of_order": "drop",
        },
        "analytic": {
            "pair": {
                "function": "lag",
                "value": "value",
                "partition_by": ["device", "partition"],
                "limit_duration": "20s",
            },
            "first": {"function": "isfirst", "period": "30s"},
            "back": {
                "function": "lag",
                "value": "id",
                "offset": 2,
                "partition_by": ["device"],
                "limit_duration": "2m",
            },
        },
        "select": {"id": "id", "pair": "pair", "first": "first", "back": "back", "v": "value"},
    },
}


def _metrics(job: Job, field: str) -> list:
    """A field of each micro-batch's metrics record (the flush aside), in batch order."""
    directory = Path(job.output.metrics.removeprefix("file:"))  # type: ignore[union-attr]
    records = [json.loads(p.read_text()) for p in sorted(directory.glob("batch=*.jsonl"))]
    return [r[field] for r in records]


def _texts(job: Job) -> list[str]:
    """Every record file's text, in batch order."""
    root = Path(job.output.path.removeprefix("file:"))  # type: ignore[union-attr]
    return [p.read_text() for p in sorted(root.glob("batch=*/flush=*/*.jsonl"))]


def _state(job: Job, table: str) -> list[dict]:
    """The rows of the last committed batch's state table, sorted."""
    root = Path(job.output.checkpoint.removeprefix("file:")) / "sparktide" / "state"  # type: ignore[union-attr]
    last = max((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    files = sorted((last / table).glob("*.parquet"))
    rows = [row for f in files for row in pq.read_table(f).to_pylist()]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_pass_release_matches_reference_and_the_general_plan(
    spark, tmp_path, monkeypatch, case
):
    """Each batch takes the one-pass plan and writes the reference engine's records; the
    general plan, on the same input, writes the same text and keeps the same events. (No
    flush: nothing is held, so it would write nothing, and it would empty the state.)"""
    seed = zlib.crc32(case.encode()) % 1000
    for route in ("fast", "slow"):  # (files a second apart: the same micro-batches)
        write_stream(tmp_path / route / "in", seed=seed, partitions=3, devices=6)
        for i, path in enumerate(sorted((tmp_path / route / "in").iterdir())):
            os.utime(path, (1_800_000_000 + i, 1_800_000_000 + i))
    options = {"once": True, "flush": False, "publish": False, "clock": clock}
    options |= {"spark": spark, "max_files_per_trigger": 2}
    fast = job_for(tmp_path / "fast", CASES[case])
    assert fusable(fast)
    assert_matches_reference(fast, run_job(fast, **options))
    assert _metrics(fast, "plan") == ["one_pass", "one_pass"]
    assert _metrics(fast, "held") == [0, 0]
    monkeypatch.setattr(plans, "fusable", lambda job: False)
    slow = job_for(tmp_path / "slow", CASES[case])
    assert_matches_reference(slow, run_job(slow, **options))
    assert _metrics(slow, "plan") == ["general", "general"]
    assert _texts(fast) == _texts(slow)
    kept = _state(fast, "analytic")
    assert kept == _state(slow, "analytic")
    assert 0 < len(kept) < 120


def test_kept_events_cross_routes_and_restarts(spark, tmp_path, monkeypatch):
    """Batches alternate between the one-pass plan and the general one (as a batch with
    an event only the SQL route reads would), over two runs on one checkpoint: each
    route reads the kept events the other wrote. Twelve devices: some skip a batch."""
    batches = itertools.count()
    attempt = taskpass.one_pass

    def alternating(*args):
        if next(batches) % 2:
            return taskpass.Declined("odd batches only")
        return attempt(*args)

    monkeypatch.setattr(taskpass, "one_pass", alternating)
    write_stream(tmp_path / "all", seed=5, partitions=3, devices=12)
    (tmp_path / "in").mkdir()
    job = job_for(tmp_path, CASES["partitioned-drop-two-keys"])
    files = sorted((tmp_path / "all").iterdir())
    options = {"once": True, "spark": spark, "max_files_per_trigger": 1, "clock": clock}
    for part, flush in ((files[:2], False), (files[2:], True)):
        for path in part:
            path.rename(tmp_path / "in" / path.name)
        metrics = run_job(job, flush=flush, publish=False, **options)
    assert_matches_reference(job, metrics)
    assert _metrics(job, "plan") == ["one_pass", "general", "one_pass", "general"]


def test_a_batch_that_would_hold_an_event_takes_the_general_plan(spark, tmp_path, monkeypatch):
    """With an out-of-order tolerance the watermark trails the newest timestamp, and most
    batches hold events: such a job takes the general plan. Were its tasks to try (the
    tolerance check left out here), a batch whose events are not all released would be
    the general plan's (the held events wait in its state), and so would every batch
    after it while events are held, the flush too (it releases them), with the
    reference engine's records."""
    tables = json.loads(json.dumps(CASES["merged-defaults"]))
    tables["ordering"] = {"late_arrival": "1m", "out_of_order": "5s"}
    write_stream(tmp_path / "in", seed=9, partitions=3, devices=6)
    job = job_for(tmp_path, tables)
    assert not fusable(job)
    monkeypatch.setattr(plan_module, "releasable", _releasable_with_any_tolerance)
    assert fusable(job)
    run_matching_reference(spark, job, 2)
    assert _metrics(job, "plan") == ["general", "general"]
    assert max(_metrics(job, "held")) > 0


def test_field_texts_are_the_general_plans_or_left_to_it(spark):
    """A float the kernel writes as written is the text Spark's ``json_text`` gives;
    every other float token leaves the batch to the general plan."""
    tokens = ["20.5", "0.25", "-3.125", "7.0", "-7.0", "0.0", "1234567.0", "0.000001"]
    tokens += ["20.50", "-0.0", "1e2", "1.5E3", "12345678.0", "100.00"]
    tokens += ["3.14159265358979323", "123456789012345678.5", "42", "-7", "0", "-0"]
    rows = spark.createDataFrame([(f'{{"x":{t}}}',) for t in tokens], "j string")
    spark_texts = [
        r[0] for r in rows.selectExpr(json_text("variant_get(parse_json(j), '$.x')")).collect()
    ]
    for token, expected in zip(tokens, spark_texts, strict=True):
        column = pa.array([float(token)], pa.float64())
        try:
            got = field_text(column, pa.array([token]), pa.array([""]), "x")
        except Abort:
            assert token in ("20.50", "-0.0", "1e2", "1.5E3", "12345678.0", "100.00", "-0")
            continue
        assert got.to_pylist() == [expected], token


@given(st.lists(st.integers(min_value=-62_135_596_800_000_000, max_value=253_402_300_799_999_999)))
def test_instant_texts_are_format_instant(instants):
    assert instant_texts(np.array(instants, np.int64)).to_pylist() == [
        format_instant(i) for i in instants
    ]


@pytest.mark.parametrize("instant", [-62_135_596_800_000_001, 253_402_300_800_000_000])
def test_instants_beyond_year_9999_leave_the_batch_to_the_general_plan(instant):
    with pytest.raises(Abort):
        instant_texts(np.array([instant], np.int64))


_TIMES = st.integers(min_value=-(10**15), max_value=10**15)


@given(
    st.sampled_from(["isfirst", "lag"]),
    st.integers(min_value=1, max_value=10**9),
    st.lists(st.tuples(_TIMES, st.one_of(_TIMES, st.just(NEG_INF), st.just(POS_INF)))),
)
def test_analytic_expired_is_the_reference_rule(function, horizon, pairs):
    span = f"{horizon}us"
    fields = {"period": span} if function == "isfirst" else {"limit_duration": span}
    analytic = Job.from_dict(
        {
            "source": {"path": "in"},
            "analytic": {"c": {"function": function, "value": "v", **fields}}
            if function == "lag"
            else {"c": {"function": function, **fields}},
            "select": {"c": "c"},
        }
    ).analytics[0]
    t = np.array([p[0] for p in pairs], np.int64)
    watermark = np.array([p[1] for p in pairs], np.int64)
    got = analytic_expired(analytic, t, watermark).tolist()
    assert got == [reference_expired(analytic, a, w) for a, w in pairs]


def _releasable_with_any_tolerance(job: Job) -> bool:
    """:func:`releasable` as if ``job`` had no out-of-order tolerance."""
    ordering = dataclasses.replace(job.ordering, out_of_order=0)
    return releasable(dataclasses.replace(job, ordering=ordering))


_RELEASABLE = {
    "source": {"path": "in", "timestamp_by": "t"},
    "analytic": {
        "prev": {"function": "lag", "value": "v", "partition_by": ["d"], "limit_duration": "1m"}
    },
    "select": {"d": "d", "prev": "prev"},
}


@pytest.mark.parametrize(
    ("change", "releases"),
    [
        ({}, True),
        ({"ordering": {"partitioned": True}, "source": {"partition": "p"}}, True),
        ({"source": {"partition": "p"}}, False),  # merged partitions: events wait
        ({"source": {"over": "d"}}, False),
        ({"ordering": {"out_of_order": "1s"}}, False),
        ({"source": {"where": "v > 1"}}, False),
        ({"filter": {"where": "prev > 1"}}, False),
        ({"select": {"d": "d", "up": "v + 1"}}, False),
        ({"select": {"d": "d", "prev": "prev", "v": "v"}}, True),
        ({"analytic": {"n": {"function": "count", "limit_duration": "1m"}}}, False),
        (
            {
                "analytic": {
                    "prev": {
                        "function": "lag",
                        "value": "v",
                        "limit_duration": "1m",
                        "when": "v > 1",
                    }
                }
            },
            False,
        ),
        (
            {"analytic": {"prev": {"function": "lag", "value": "v * 2", "limit_duration": "1m"}}},
            False,
        ),
    ],
)
def test_which_windowless_jobs_the_tasks_release(change, releases):
    tables = json.loads(json.dumps(_RELEASABLE))
    for key, value in change.items():
        if key == "source":
            tables["source"].update(value)
        else:
            tables[key] = value
    if "n" in tables["analytic"]:
        tables["select"] = {"d": "d", "n": "n"}
    assert releasable(Job.from_dict(tables)) is releases


def test_events_at_one_instant_are_released_by_file_and_line_across_partitions():
    """Two partitions' events with the same system timestamp and arrival time are
    released by file name, then line (the general plan's order), not by partition."""
    tables = {
        "source": {"path": "in", "timestamp_by": "t", "arrival_time": "a", "partition": "p"},
        "ordering": {"partitioned": True, "out_of_order": "0s"},
        "analytic": {"first": {"function": "isfirst", "period": "1m"}},
        "select": {"id": "id", "first": "first"},
    }
    plan = fused_plan(Job.from_dict(tables), {})
    rows = TaskRows(
        file=np.array([1, 0, 0]),
        files=["a.jsonl", "b.jsonl"],
        line=np.array([1, 7, 3]),
        event_time=np.full(3, 10**15, np.int64),
        arrival=np.full(3, 10**15, np.int64),
        pid=pa.array(["0", "1", "1"]),
        key=pa.nulls(3, pa.string()),
        groups=[],
        inputs=[],
        texts=[pa.array(["1", "2", "3"])],
    )
    records, kept, _ = judge(plan, kernel_schema(plan), 0, rows)
    assert [json.loads(line)["id"] for line in records.column("value").to_pylist()] == [3, 2, 1]
    assert records.column("file").to_pylist() == ["a.jsonl", "a.jsonl", "b.jsonl"]
    assert sorted(kept.column("scope").to_pylist()) == ["0", "1"]
