"""``[match]`` (MATCH_RECOGNIZE, semantics §11.25) on Spark: the reference engine's
matches on generated streams (disorder, late events adjusted or dropped, several
partitions, substreams), whatever the micro-batch boundaries, and across a restart (the
undecided starts travel in the checkpoint)."""

from __future__ import annotations

import json
import zlib

import pytest

from sparktide.spark import run_job
from tests.spark.streams import (
    clock,
    file_batches,
    job_for,
    read_output,
    reference,
    strip,
    write_stream,
)
from tests.spark.test_differential import (
    assert_matches_reference,
    json_key,
    run_matching_reference,
)

_LEVELS = {
    "Low": "value < 5",
    "Mid": "value >= 5 AND value < 20",
    "High": "value >= 20",
}

CASES = {
    # per device, greedy runs: the last High may wait for the next event of its device
    "merged-per-device": {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "match": {
            "partition_by": ["device"],
            "limit_duration": "40s",
            "pattern": "Low+ Mid* High+",
            "define": _LEVELS,
            "measures": {
                "first_low": "first(Low.id)",
                "last_high": "last(High.id)",
                "rows": "count(*)",
                "mids": "count(Mid)",
                "top": "last(High.value)",
            },
        },
    },
    # substreams of the device, late events dropped; alternation, any event ('.'), a
    # bounded count; no partition_by: one partition per substream
    "substreams-alternation": {
        # (the input's own where filters the events before they are matched, §11.20)
        "source": {"partition": "partition", "over": "device", "where": "id % 5 <> 0"},
        "ordering": {"late_arrival": "15s", "out_of_order": "4s", "on_out_of_order": "drop"},
        "match": {
            "limit_duration": "1m",
            "pattern": "(Low | High) . High{1,2} Mid?",
            "define": _LEVELS,
            "measures": {
                "start": "first(id)",
                "end": "last(id)",
                "highs": "count(High)",
                "device": "last(device)",
            },
        },
    },
    # each partition's own clock; a condition on System.Timestamp(), a variable without
    # a condition (any event), a partition key computed from the value's kind
    "partitioned-timestamp": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "10s", "out_of_order": "3s", "partitioned": True},
        "match": {
            "partition_by": ["device", "value IS NULL"],
            "limit_duration": "30s",
            "pattern": "Even Any+ Even",
            "define": {"Even": "DATEPART(second, System.Timestamp()) % 2 = 0"},
            "measures": {
                "first_id": "first(Even.id)",
                "last_id": "last(Even.id)",
                "n": "count(Any)",
            },
        },
    },
    # a union: System.Input() in DEFINE (semantics §11.22), each input's partitions
    "union-inputs": {
        "inputs": {"a": {"partition": "partition"}, "b": {"partition": "partition"}},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "match": {
            "partition_by": ["device"],
            "limit_duration": "40s",
            "pattern": "FromA+ FromB",
            "define": {
                "FromA": "System.Input() = 'a' AND value < 20",
                "FromB": "System.Input() = 'b'",
            },
            "measures": {"n": "count(FromA)", "last_b": "last(FromB.id)", "first_a": "first(id)"},
        },
    },
}

#: Each case's micro-batches (2 or 3 files each); "merged-per-device" runs in the
#: restart test, in two runs on one checkpoint
RUNS = [
    (case, (2, 3, 2)[i % 3]) for i, case in enumerate(sorted(set(CASES) - {"merged-per-device"}))
]


@pytest.mark.parametrize(("case", "files_per_batch"), RUNS)
def test_matches_are_the_reference_engines(spark, tmp_path, case, files_per_batch):
    seed = zlib.crc32(case.encode()) % 1000
    for i, name in enumerate(CASES[case].get("inputs", {"": {}})):
        directory = tmp_path / "in" / name if name else tmp_path / "in"
        write_stream(directory, seed=seed + i, files=4, partitions=3)
    job = job_for(tmp_path, CASES[case])
    run_matching_reference(spark, job, files_per_batch)
    assert read_output(job.output.path), "the case finds matches"


def test_undecided_starts_survive_a_restart(spark, tmp_path):
    """Two runs on one checkpoint (the second reads files written after the first
    stopped, without a flush between): the matches of the whole input, once each."""
    write_stream(tmp_path / "all", seed=5, files=4, partitions=2)
    (tmp_path / "in").mkdir()
    job = job_for(tmp_path, CASES["merged-per-device"])
    files = sorted((tmp_path / "all").iterdir())
    options = {"once": True, "spark": spark, "max_files_per_trigger": 2, "clock": clock}
    for path in files[:2]:
        path.rename(tmp_path / "in" / path.name)
    run_job(job, flush=False, publish=False, **options)
    first = read_output(job.output.path)
    # (without a flush: the starts the watermark decided, as the reference engine's)
    early = reference(job, file_batches(job.output.checkpoint), flush=False).events
    assert sorted(map(json_key, first)) == sorted(json_key(strip(e, "type")) for e in early)
    for path in files[2:]:
        path.rename(tmp_path / "in" / path.name)
    metrics = run_job(job, flush=True, publish=False, **options)
    assert_matches_reference(job, metrics)
    assert 0 < len(first) < len(read_output(job.output.path))


def test_the_watermark_decides_a_quiet_partitions_match(spark, tmp_path):
    """Without a flush, a match still waiting for more rows of a device that fell quiet
    is decided once the watermark passes its first row's time plus the limit duration,
    not when the device sends again (semantics §11.25)."""
    (tmp_path / "in").mkdir()
    base = "2026-03-01T09:00:{:02d}Z"
    rows = [("q", 0, 1), ("q", 1, 30)] + [("busy", s, 2) for s in range(2, 59, 3)]
    with open(tmp_path / "in" / "part-0.jsonl", "w", encoding="utf-8") as out:
        for i, (device, second, value) in enumerate(rows):
            time = base.format(second)
            out.write(json.dumps({"id": i, "device": device, "t": time, "a": time, "value": value}))
            out.write("\n")
    case = CASES["merged-per-device"]
    # (a measure of a field no record has: diagnosed, missing_column, by both engines)
    measures = {**case["match"]["measures"], "gone": "last(High.nothere)"}
    job = job_for(tmp_path, {**case, "match": {**case["match"], "measures": measures}})
    metrics = run_job(job, once=True, flush=False, spark=spark, clock=clock, publish=False)
    written = read_output(job.output.path)
    assert [(r["first_low"], r["last_high"], r["gone"]) for r in written] == [(0, 1, None)]
    early = reference(job, file_batches(job.output.checkpoint), flush=False)
    assert sorted(map(json_key, written)) == sorted(
        json_key(strip(e, "type")) for e in early.events
    )
    missing = [d for d in metrics["diagnostics"] if d["kind"] == "missing_column"]
    assert [d["column"] for d in missing] == ["nothere"]
    assert [d["column"] for d in early.metrics["diagnostics"] if d["kind"] == "missing_column"] == [
        "nothere"
    ]
