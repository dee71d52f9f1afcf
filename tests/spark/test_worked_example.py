"""semantics §5's worked example, run on Spark: same verdicts and release order as the spec."""

from __future__ import annotations

import json

import pytest

from sparktide.job import Job
from sparktide.spark import run_job
from sparktide.time import parse_instant
from tests.spark.streams import read_output

#: Whole-stage code generation, as users' jobs run (tests/spark/conftest.py)
pytestmark = pytest.mark.codegen

T = "2026-03-01T09:{}Z".format
# (id, event time, arrival time) — semantics §5
ROWS = [
    (1, "00:05", "00:06"),
    (2, "00:40", "00:10"),
    (3, "00:12", "00:20"),
    (4, "00:00", "00:45"),
    (5, "02:00", "00:50"),
    (6, "00:41", "00:51"),
]


def _run(spark, tmp_path, action: str) -> list[dict]:
    (tmp_path / "in").mkdir()
    lines = [json.dumps({"id": i, "t": T(e), "a": T(a)}) for i, e, a in ROWS]
    (tmp_path / "in" / "events.jsonl").write_text("\n".join(lines) + "\n")
    job = Job.from_dict(
        {
            "source": {"path": "in", "timestamp_by": "t", "arrival_time": "a"},
            "ordering": {
                "late_arrival": "20s",
                "out_of_order": "10s",
                "early_arrival": "1m",
                "action": action,
            },
            "output": {
                "path": "out/events",
                "dead_letter": "out/dead",
                "checkpoint": "out/checkpoint",
            },
        },
        base_dir=tmp_path,
    )
    metrics = run_job(
        job,
        once=True,
        flush=True,
        spark=spark,
        clock=lambda batch: parse_instant(T("01:00")) + batch,
    )
    assert metrics is not None and metrics["flushed"]
    return read_output(job.output.path)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("adjust", [(1, "00:05"), (3, "00:30"), (4, "00:30"), (2, "00:40"), (6, "00:41")]),
        ("drop", [(1, "00:05"), (2, "00:40"), (6, "00:41")]),
    ],
)
def test_worked_example_on_spark(spark, tmp_path, action, expected):
    events = _run(spark, tmp_path, action)
    assert [(e["id"], e["timestamp"]) for e in events] == [(i, T(t)) for i, t in expected]
    assert all(e["t"] == T(dict((i, e_) for i, e_, _ in ROWS)[e["id"]]) for e in events)


def test_a_codegen_test_runs_with_sparks_default_settings(spark):
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
