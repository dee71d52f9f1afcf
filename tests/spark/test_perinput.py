"""Per-input ordering policy and punctuation on Spark (semantics §7.8, issue 29 point 5):
the Spark engine writes exactly the reference engine's records when the inputs of a union
or a join carry their own ``[inputs.<name>.ordering]`` and ``[inputs.<name>.punctuation]``.

Three cheap cases (small streams, 2 files per micro-batch): a union whose inputs differ in
tolerances, late and out-of-order actions and CTI generation (closed forms, one input with
no out-of-order bound, so the job watermark is followed row by row); a union whose inputs'
CTIs need the compiled pass with different parameters per input (dead-lettering below a
CTI two microseconds ahead, adjusting up to CTIs every period); and a temporal join whose
two sides judge lateness differently and generate CTIs differently.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from sparktide.job import input_of
from sparktide.spark.plans import scans_ctis
from sparktide.time import format_duration
from tests.spark.streams import job_for, write_stream
from tests.spark.test_differential import run_matching_reference

CASES = {
    "union-tumbling-closed-forms": {
        "inputs": {
            "north": {
                "partition": "partition",
                "partitions": 2,
                "ordering": {"late_arrival": "20s", "action": "adjust"},
                "punctuation": {"every_events": 3, "delay": "1s"},
            },
            "south": {
                "partition": "partition",
                "ordering": {"late_arrival": "40s", "out_of_order": "none", "action": "drop"},
            },
        },
        "ordering": {"late_arrival": "10s", "out_of_order": "3s"},
        "punctuation": {"every_events": 5, "watermark": "both"},
        "window": {
            "type": "tumbling",
            "size": "30s",
            "group_by": ["device"],
            "aggregates": {"n": "count(*)", "ids": "collect_list(id)"},
        },
    },
    "union-release-scanned": {
        "inputs": {
            "north": {
                "partition": "partition",
                "ordering": {"on_out_of_order": "dead_letter"},
                "punctuation": {"every_events": 4, "delay": "-2us"},
            },
            "south": {
                "partition": "partition",
                "ordering": {"late_arrival": "30s"},
                "punctuation": {"every": "10s", "delay": "-1us"},
            },
        },
        "ordering": {"late_arrival": "15s", "out_of_order": "2s"},
        "punctuation": {"every_events": 2},
    },
    "join-per-side": {
        "inputs": {
            "entry": {"partition": "partition", "ordering": {"late_arrival": "30s"}},
            "exit": {
                "partition": "partition",
                "ordering": {"late_arrival": "5s", "action": "drop"},
                "punctuation": {"every_events": 3, "delay": "-1us"},
            },
        },
        "ordering": {"late_arrival": "15s"},
        "punctuation": {"every_events": 2, "watermark": "both"},
        "join": {"left": "entry", "right": "exit", "on": ["device"], "between": ["0s", "3s"]},
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_per_input_settings_match_reference(spark, tmp_path, case):
    tables = CASES[case]
    seed = zlib.crc32(case.encode()) % 1000
    for i, name in enumerate(tables["inputs"]):
        write_stream(tmp_path / "in" / name, seed=seed + i, events=60, files=4, partitions=2)
    job = job_for(tmp_path, tables)
    assert job.per_input
    assert scans_ctis(job) == (case == "union-release-scanned")
    run_matching_reference(spark, job, files_per_batch=2)
    # a batch's late_input diagnostic names its example's own input's tolerance
    named = 0
    for path in sorted(Path(job.output.metrics).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            for found in json.loads(line).get("diagnostics", []):
                if found["kind"] != "late_input":
                    continue
                name = input_of(found["example"]["partition"])
                bound = job.policy_of(name).ordering.late_arrival
                assert f"late_arrival {format_duration(bound)})" in found["message"], found
                named += 1
    assert named
