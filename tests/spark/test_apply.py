"""``[apply]`` on Spark (semantics §11.18): the same records, dead letters and counters
as the reference engine, over a stream whose ``readings`` are arrays, records, empty,
null or neither (:func:`tests.spark.streams.write_stream`), ``CROSS`` and ``OUTER``
(``outer = true``) for arrays and for records, and a run killed after a batch's outputs
and restarted."""

from __future__ import annotations

import zlib

import pytest

from sparktide.spark import plans
from tests.spark.streams import job_for, write_stream
from tests.spark.test_differential import run_matching_reference

_VALUE = "GetRecordPropertyValue(el, 'ArrayValue')"
_ELEMENTS = {"function": "elements", "value": "readings", "name": "el"}
_PROPERTIES = {"function": "properties", "value": "readings", "name": "p"}

CASES = {
    # merged ordering: one release order, the elements of an event in their order; OUTER
    # APPLY: an event with none is one event, its element null
    "elements-outer-release-filter": {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "apply": {**_ELEMENTS, "outer": True},
        "filter": {"where": f"{_VALUE} > 10 OR {_VALUE} IS NULL OR device = 'd1'"},
        "select": {
            "id": "id",
            "device": "device",
            "i": "GetRecordPropertyValue(el, 'ArrayIndex')",
            "v": _VALUE,
            "at": "System.Timestamp()",
        },
    },
    "elements-tumbling-count": {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s", "action": "drop"},
        "apply": _ELEMENTS,
        "filter": {"where": "GetRecordPropertyValue(el, 'ArrayIndex') < 3"},
        "window": {
            "type": "tumbling",
            "size": "1m",
            "group_by": ["device"],
            "aggregates": {
                "n": "count(*)",
                "total": f"sum({_VALUE})",
                "hi": f"max({_VALUE})",
                "firstv": f"first({_VALUE})",
                "lastv": f"last({_VALUE})",
            },
        },
    },
    "properties-partitioned-hopping": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "10s", "out_of_order": "3s", "partitioned": True},
        "apply": _PROPERTIES,
        "window": {
            "type": "hopping",
            "size": "1m",
            "hop": "20s",
            "late": "dead_letter",
            "group_by": ["partition"],
            "aggregates": {
                "n": "count(*)",
                "names": "collect_list(GetRecordPropertyValue(p, 'PropertyName'))",
                "total": "sum(GetRecordPropertyValue(p, 'PropertyValue'))",
            },
        },
    },
    # a union's events expanded alike (each input parsed on its own, then [apply]),
    # released with [select]: Stream Analytics' CROSS APPLY over a UNION step
    "union-elements-release": {
        "inputs": {"a": {"partition": "partition", "partitions": 3}, "b": {}},
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        # (System.Input(), semantics §11.22: b's odd ids expand nothing, kept by outer)
        "apply": {
            **_ELEMENTS,
            "value": "CASE WHEN System.Input() = 'a' OR id % 2 = 0 THEN readings END",
            "outer": True,
        },
        "filter": {"where": f"System.Input() = 'a' OR {_VALUE} > 10 OR {_VALUE} IS NULL"},
        "select": {
            "id": "id",
            "device": "device",
            "v": _VALUE,
            "src": "UPPER(System.Input())",
            "scaled": {"a": _VALUE, "b": f"{_VALUE} * 10"},
        },
    },
    "properties-outer-substreams-release": {
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "15s", "out_of_order": "4s", "on_out_of_order": "dead_letter"},
        "apply": {**_PROPERTIES, "outer": True},
        "select": {
            "id": "id",
            "name": "GetRecordPropertyValue(p, 'PropertyName')",
            "value": "GetRecordPropertyValue(p, 'PropertyValue')",
        },
    },
}


@pytest.mark.parametrize(("case", "files_per_batch"), [(c, 2) for c in sorted(CASES)])
def test_apply_matches_reference(spark, tmp_path, monkeypatch, case, files_per_batch):
    if case == "elements-tumbling-count":  # Spark's writer, not the driver's
        monkeypatch.setattr(plans, "DRIVER_WRITE_ROWS", 0)
    seed = zlib.crc32(case.encode()) % 1000
    inputs = CASES[case].get("inputs", {"": {}})  # (a union: one stream per input)
    for i, name in enumerate(inputs):
        write_stream(tmp_path / "in" / name, seed=seed + i, files=4, partitions=3, readings=True)
    job = job_for(tmp_path, dict(CASES[case]))
    assert plans.plan_batch(job).route == "general"
    batches = run_matching_reference(spark, job, files_per_batch)
    assert len(batches) >= 2
