"""Analytic columns (LAG, LAST, ISFIRST and the analytic forms of SUM, COUNT, AVG, MIN,
MAX; semantics §11.19) on Spark: the reference engine's records, across micro-batches
(state carried in the checkpoint) and restarts."""

from __future__ import annotations

import zlib

import pytest

from sparktide.spark import run_job
from tests.spark.streams import clock, job_for, read_output, reference, write_stream
from tests.spark.test_differential import assert_matches_reference, run_matching_reference

#: Each aggregate over ``speed`` (every JSON kind in a mixed stream), and the two
#: that rank (text, booleans, arrays) over ``lane`` too.
_MIXED = [(f, "speed") for f in ("sum", "count", "avg", "min", "max")] + [
    ("min", "lane"),
    ("max", "lane"),
]

CASES = {
    "merged-lag-last-isfirst": {
        # the input's own where (semantics §11.20): the analytic columns never see the
        # events it stops (a CAST that fails on some is a dead letter), [filter] reads them
        "source": {
            "where": "CASE WHEN id % 11 = 0 THEN CAST(device AS bigint) > 0 ELSE id % 5 <> 0 END"
        },
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "analytic": {
            "prev": {
                "function": "lag",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "30s",
            },
            "big": {
                "function": "last",
                "value": "id",
                "limit_duration": "1m",
                "when": "value > 20",
                "default": "-1",
            },
            "first": {"function": "isfirst", "period": "20s", "partition_by": ["device"]},
            # System.Timestamp(): each event's time after the policy (adjusted or not),
            # read at release on Spark (semantics §11.19)
            "prevt": {
                "function": "lag",
                "value": "System.Timestamp()",
                "partition_by": ["device"],
                "limit_duration": "30s",
                "when": "DATEPART(second, System.Timestamp()) % 3 <> 0",
            },
        },
        "filter": {"where": "prev IS NULL OR prev <> value OR first = 1"},
        "select": {
            "id": "id",
            "device": "device",
            "prev": "prev",
            "big": "big",
            "first": "first",
            "rise": "value - prev",
            "prevt": "prevt",
            "gap": "DATEDIFF(millisecond, prevt, System.Timestamp())",
        },
    },
    "substreams-lag-offset-when": {
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "15s", "out_of_order": "4s", "on_out_of_order": "drop"},
        "analytic": {
            "back2": {
                "function": "lag",
                "value": "t",
                "offset": 2,
                "limit_duration": "2m",
                "when": "value IS NOT NULL",
                "default": "'none'",
            },
            # (columns of one PARTITION BY: one window pass over the rows as they are,
            # sparktide.spark.analytic_shared)
            "first": {"function": "isfirst", "period": "30s", "when": "value > 3"},
            "top": {
                "function": "last",
                "value": "value",
                "limit_duration": "40s",
                "when": "value > 10",
                "default": "0",
            },
        },
        "select": {
            "id": "id",
            "device": "device",
            "back2": "back2",
            "first": "first",
            "top": "top",
        },
    },
    "partitioned-isfirst-filter": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "10s", "out_of_order": "3s", "partitioned": True},
        "analytic": {
            "first": {
                "function": "isfirst",
                "period": "30s",
                "partition_by": ["device"],
                "when": "value >= 5",
            },
            "prev3": {
                "function": "lag",
                "value": "id",
                "offset": 3,
                "partition_by": ["device"],
                "limit_duration": "1m",
            },
        },
        "filter": {"where": "first = 1"},
    },
    # the aggregates: several partitions and durations, WHEN, COUNT(*) and COUNT(x), and a
    # LAG beside them (the two window plans in one pass); the stream's ties at one
    # timestamp (adjusted late events, equal times) are released in order
    "aggregates-merged-with-lag": {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "analytic": {
            "total": {
                "function": "sum",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "30s",
            },
            "n": {"function": "count", "partition_by": ["device"], "limit_duration": "20s"},
            "nbig": {
                "function": "count",
                "value": "value",
                "limit_duration": "1m",
                "when": "value > 5",
            },
            "mean": {
                "function": "avg",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "45s",
            },
            "lo": {"function": "min", "value": "value", "limit_duration": "10s"},
            "hi": {
                "function": "max",
                "value": "value * 2",
                "partition_by": ["device"],
                "limit_duration": "1m",
                "when": "id % 3 <> 0",
            },
            "prev": {
                "function": "lag",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "30s",
            },
        },
        "filter": {"where": "n > 1 OR total IS NULL"},
        "select": {
            "id": "id",
            "device": "device",
            "total": "total",
            "n": "n",
            "nbig": "nbig",
            "mean": "mean",
            "lo": "lo",
            "hi": "hi",
            "prev": "prev",
            "share": "value / total",
        },
    },
    # every JSON kind (text, booleans, arrays, integers beyond 64 bits, integral floats)
    # through each aggregate, per substream and per lane
    "aggregates-mixed-kinds-substreams": {
        "stream": {"mixed": True},
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "15s", "out_of_order": "4s", "on_out_of_order": "drop"},
        "analytic": {
            f"{f}_{v}": {"function": f, "value": v, "limit_duration": "40s"} for f, v in _MIXED
        }
        | {
            "lanes": {
                "function": "count",
                "partition_by": ["lane"],
                "limit_duration": "2m",
                "when": "speed > 20",
            },
            # (an array is the null partition, as in the reference; LAG's key too)
            "prev_lane": {
                "function": "lag",
                "value": "id",
                "partition_by": ["lane"],
                "limit_duration": "1m",
            },
            "long": {"function": "count", "value": "lane", "limit_duration": "36500d"},
            "fast": {
                "function": "sum",
                "value": "CAST(speed AS float)",
                "partition_by": ["lane"],
                "limit_duration": "30s",
            },
        },
        "select": {"id": "id", "speed": "speed", "lane": "lane"}
        | {f"{f}_{v}": f"{f}_{v}" for f, v in _MIXED}
        | {"lanes": "lanes", "fast": "fast", "prev_lane": "prev_lane", "long": "long"},
    },
    "aggregates-partitioned": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "10s", "out_of_order": "3s", "partitioned": True},
        "analytic": {
            "peak": {
                "function": "max",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "25s",
                "when": "value >= 5",
            },
            "seen": {"function": "count", "limit_duration": "15s"},
        },
        "filter": {"where": "peak = value OR seen = 1"},
        "select": {"id": "id", "device": "device", "peak": "peak", "seen": "seen"},
    },
    # columns reading columns (three levels): a WHEN, a value, a partition and a default
    # reading earlier columns' values of each event, per partition (scope watermarks)
    "when-reads-columns-levels": {
        "source": {"partition": "partition", "partitions": 3},
        "ordering": {"late_arrival": "10s", "out_of_order": "3s", "partitioned": True},
        "analytic": {
            "ls": {
                "function": "last",
                "value": "st",
                "partition_by": ["device"],
                "limit_duration": "1m",
                "when": "st IS NOT NULL",
                "default": "pv",
            },
            "big": {"function": "count", "partition_by": ["pv > 20"], "limit_duration": "30s"},
            "st": {"function": "lag", "value": "id", "limit_duration": "1m", "when": "pv < value"},
            "pv": {
                "function": "lag",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "30s",
            },
        },
        "filter": {"where": "st IS NOT NULL OR big > 2"},
        "select": {
            "id": "id",
            "device": "device",
            "pv": "pv",
            "st": "st",
            "big": "big",
            "ls": "ls",
        },
    },
    # a union's analytic column (the only one on Spark), its inputs filtered before it by
    # their own where (semantics §11.20), one with a CAST that fails on some events
    "union-lag-input-wheres": {
        "inputs": {
            "a": {
                "partition": "partition",
                "where": "CASE WHEN id % 7 = 0 THEN CAST(device AS bigint) > 0 ELSE value > 10 END",
            },
            # (System.Timestamp(): the adjusted time, before the analytic columns)
            "b": {
                "format": "csv",
                "partition": "partition",
                "where": "id % 2 = 0 OR DATEDIFF(millisecond, t, System.Timestamp()) = 0",
            },
        },
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "analytic": {  # (System.Input(): the event's input, semantics §11.22)
            "prev": {
                "function": "lag",
                "value": "CASE System.Input() WHEN 'a' THEN value ELSE value * 10 END",
                "partition_by": ["device"],
                "limit_duration": "30s",
            },
            "first": {
                "function": "isfirst",
                "period": "1m",
                "partition_by": ["System.Input()", "device"],
            },
            # (a column reading a column: computed at release, a level above)
            "fed": {
                "function": "last",
                "value": "CONCAT(System.Input(), ':', id)",
                "partition_by": ["device"],
                "limit_duration": "1m",
                "when": "prev IS NOT NULL",
            },
        },
        "filter": {
            "where": "(prev IS NULL OR prev <> value) AND (System.Input() = 'a' OR id % 3 <> 0)"
        },
        "select": {
            "id": "id",
            "device": "device",
            "prev": "prev",
            "first": "first",
            "fed": "fed",
            "src": "UPPER(System.Input())",
            "scaled": {"a": "value", "b": "value * 10"},  # (one expression per input)
        },
    },
}

#: Each case's micro-batches: 2 or 3 of the 4 files each (an analytic column's state
#: crosses a batch boundary in every case; the restart test carries it across runs)
RUNS = [(case, (2, 3, 2)[i % 3]) for i, case in enumerate(sorted(CASES))]
#: (ties across batches of one file each: the transcript
#: ``analytic_aggregates_ties_across_batches``, on Spark in test_transcripts_on_spark)


@pytest.mark.parametrize(("case", "files_per_batch"), RUNS)
def test_analytic_matches_reference(spark, tmp_path, case, files_per_batch):
    tables = dict(CASES[case])
    stream = tables.pop("stream", {})
    seed = zlib.crc32(case.encode()) % 1000
    for i, (name, table) in enumerate(tables.get("inputs", {"": {}}).items()):
        fmt = table.get("format", "jsonl")
        directory = tmp_path / "in" / name if name else tmp_path / "in"
        write_stream(directory, seed=seed + i, files=4, partitions=3, fmt=fmt, **stream)
    job = job_for(tmp_path, tables)
    batches = run_matching_reference(spark, job, files_per_batch)
    assert len(batches) >= 4 // files_per_batch
    expected = reference(job, batches)
    events = read_output(job.output.path)
    assert events, "the case writes events"
    if job.filter is not None:  # the filter stopped some, and both engines count them
        last = _last_metrics(job)
        assert last["events_filtered"] == expected.metrics["events_filtered"] > 0


def test_analytic_state_survives_restart_and_stays_bounded(spark, tmp_path):
    """Two runs on one checkpoint (the second reads files written after the first
    stopped) give the reference engine's records for the whole input: the kept events
    travel in the checkpoint. Keyed by ``id`` (a key per event), the state holds only
    the events ``limit_duration`` has not left behind, not one per event seen; the
    aggregates keep as many events as the reference engine does."""
    write_stream(tmp_path / "all", seed=11, files=4, partitions=2)
    (tmp_path / "in").mkdir()
    tables = {
        "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
        "analytic": {
            "mine": {
                "function": "last",
                "value": "value",
                "partition_by": ["id"],
                "limit_duration": "5s",
            },
            "prev": {
                "function": "lag",
                "value": "id",
                "partition_by": ["device"],
                "limit_duration": "1m",
                "when": "value IS NOT NULL",
            },
            "recent": {
                "function": "avg",
                "value": "value",
                "partition_by": ["device"],
                "limit_duration": "20s",
                "when": "value IS NOT NULL",
            },
            "seen": {"function": "count", "limit_duration": "10s"},
            # (a column reading a column: its WHEN's verdicts travel in the kept events)
            "back": {
                "function": "lag",
                "value": "id",
                "partition_by": ["device"],
                "limit_duration": "1m",
                "when": "recent > 10",
            },
        },
        "filter": {"where": "prev IS NOT NULL"},
        "select": {
            "id": "id",
            "prev": "prev",
            "mine": "mine",
            "recent": "recent",
            "seen": "seen",
            "back": "back",
        },
    }
    job = job_for(tmp_path, tables)
    files = sorted((tmp_path / "all").iterdir())
    for path in files[:2]:
        path.rename(tmp_path / "in" / path.name)
    # one micro-batch per run (two files each): the state crosses the restart
    options = {"once": True, "spark": spark, "max_files_per_trigger": 2, "clock": clock}
    run_job(job, flush=False, publish=False, **options)
    kept = spark.read.parquet(_latest_state(job, "analytic"))
    by_id = kept.filter("idx = 0").count()
    # the reference engine, stopped at the same instant, keeps as many events (the same
    # rule drops them), and fewer than it released: the state forgets
    engine = _reference_engine(job, _batches(job))
    kept_by_reference = sum(len(k) for k in engine.analytics._state[0].values())
    assert by_id == kept_by_reference
    assert 0 < by_id < len(engine.result.events) * 2 // 3, (by_id, len(engine.result.events))
    # an aggregate keeps every matching event within its limit_duration, and no more
    for idx in (2, 3):
        kept_here = sum(len(k) for k in engine.analytics._state[idx].values())
        assert kept.filter(f"idx = {idx}").count() == kept_here > 1
    kept_here = sum(len(k) for k in engine.analytics._state[4].values())
    assert kept.filter("idx = 4").count() == kept_here
    for path in files[2:]:
        path.rename(tmp_path / "in" / path.name)
    metrics = run_job(job, flush=True, publish=False, **options)
    assert_matches_reference(job, metrics)
    assert metrics["events_filtered"] == reference(job, _batches(job)).metrics["events_filtered"]


def _reference_engine(job, batches):
    from sparktide.core.engine import ReferenceEngine
    from sparktide.reader import job_records

    records = job_records(job)
    for record in records:
        if not record.malformed:
            record.processing_time = clock(batches[record.file])
    engine = ReferenceEngine(job, explain=False)
    engine.run(records, flush=False, timers_at_due=False)
    return engine


def _batches(job):
    from tests.spark.streams import file_batches

    return file_batches(job.output.checkpoint)


def _latest_state(job, table):
    from pathlib import Path

    state = Path(job.output.checkpoint) / "sparktide" / "state"
    newest = max((p for p in state.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    return str(newest / table)


def _last_metrics(job):
    import glob
    import json

    lines = []
    for path in sorted(glob.glob(f"{job.output.metrics}/**/*.jsonl", recursive=True)):
        lines += [json.loads(x) for x in open(path).read().splitlines() if x.strip()]
    return lines[-1]
