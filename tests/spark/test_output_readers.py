"""Every output directory opens with the usual readers (docs/outputs.md): Spark's JSON
reader, pandas and pyarrow.dataset, after batches and a flush, empty or not."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds
import pytest

from sparktide.spark import run_job
from sparktide.time import SECOND, format_instant
from tests.spark.streams import BASE, clock, job_for, read_output

JOB = {
    "source": {"partition": "p"},
    "ordering": {"late_arrival": "5s", "out_of_order": "0s"},
    "window": {"type": "tumbling", "size": "10s", "aggregates": {"n": "count(*)"}},
}


def _write(directory: Path, malformed: bool) -> None:
    """Three files, one micro-batch each; with ``malformed``, the second holds a line
    that is not JSON (dead-lettered), so only that batch has dead letters."""
    directory.mkdir(parents=True)
    for n in range(3):
        lines = []
        for i in range(n * 6, n * 6 + 6):
            a = BASE + i * 4 * SECOND
            row = {"id": i, "p": i % 2, "t": format_instant(a), "a": format_instant(a)}
            lines.append(json.dumps(row))
        if malformed and n == 1:
            lines.append("not json")
        (directory / f"part-{n}.jsonl").write_text("\n".join(lines) + "\n")


def _key(record: dict) -> str:
    return json.dumps(record, sort_keys=True)


def _pandas(directory: str) -> pd.DataFrame:
    """Every JSON-lines file under the directory, as one frame."""
    files = sorted(glob.glob(f"{directory}/**/*.jsonl", recursive=True))
    frames = [pd.read_json(f, lines=True) for f in files]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@pytest.mark.parametrize("malformed", [True, False], ids=["dead-letters", "none"])
def test_each_output_directory_opens_with_each_reader(spark, tmp_path, malformed):
    _write(tmp_path / "in", malformed)
    job = job_for(tmp_path, JOB)
    # batches, then a flush, then the flush again (it rewrites the same directory)
    for flush in (False, True, True):
        run_job(job, once=True, flush=flush, spark=spark, max_files_per_trigger=1, clock=clock)
    results, dead, metrics = job.output.path, job.output.dead_letter, job.output.metrics
    assert results is not None and dead is not None and metrics is not None
    root = Path(results)
    assert sorted(p.relative_to(root).as_posix() for p in root.glob("*/*")) == [
        "batch=000000000/flush=0",
        "batch=000000001/flush=0",
        "batch=000000002/flush=0",
        "batch=000000002/flush=1",
    ]
    assert not list(root.rglob("*.txt")) and not list(Path(dead).rglob("*.txt"))
    windows = read_output(results)
    assert len(windows) == 7  # (18 events 4 s apart: 72 s, seven 10 s windows)
    letters = read_output(dead)
    assert len(letters) == (1 if malformed else 0)

    # Spark: the records with the partition columns batch and flush (integers)
    frame = spark.read.json(results)
    assert dict(frame.dtypes)["batch"] == "int" and dict(frame.dtypes)["flush"] == "int"
    rows = [r.asDict() for r in frame.collect()]
    got = [{k: v for k, v in r.items() if k not in ("batch", "flush")} for r in rows]
    assert sorted(map(_key, got)) == sorted(map(_key, windows))
    flush_dir = Path(results, "batch=000000002", "flush=1")
    flushed = [x for f in flush_dir.glob("*.jsonl") for x in f.read_text().splitlines() if x]
    assert sum(r["flush"] for r in rows) == len(flushed) > 0
    dead_frame = spark.read.json(dead)
    assert dead_frame.count() == len(letters)
    assert {"batch", "flush"} <= set(dead_frame.columns)
    if malformed:
        assert dead_frame.first()["reason"] == "malformed"
        assert dead_frame.first()["batch"] == 1
    metrics_frame = spark.read.json(metrics)
    assert metrics_frame.count() == 4  # three batches and one flush
    assert sorted(r["batch"] for r in metrics_frame.select("batch").collect()) == [0, 1, 2, 2]

    # pandas, file by file
    assert len(_pandas(results)) == len(windows)
    assert len(_pandas(dead)) == len(letters)
    assert len(_pandas(metrics)) == 4

    # pyarrow.dataset, with the hive partitioning of the directories
    table = ds.dataset(results, format="json", partitioning="hive").to_table()
    assert table.num_rows == len(windows)
    assert {"batch", "flush", "window_start", "window_end", "n"} <= set(table.column_names)
    assert ds.dataset(dead, format="json", partitioning="hive").to_table().num_rows == len(letters)
    assert ds.dataset(metrics, format="json").to_table().num_rows == 4


def test_typed_reads_with_the_documented_schemas(spark, tmp_path):
    """docs/outputs.md's schemas: window bounds and emitted_at as timestamps, with Spark
    and with pyarrow, equal to the ISO text written."""
    import pyarrow as pa

    from sparktide.time import parse_instant

    _write(tmp_path / "in", False)
    job = job_for(tmp_path, JOB)
    run_job(job, once=True, flush=True, spark=spark, clock=clock)
    results = job.output.path
    assert results is not None
    written = read_output(results)
    frame = spark.read.schema(
        "window_start TIMESTAMP, window_end TIMESTAMP, n BIGINT, emitted_at TIMESTAMP, "
        "batch INT, flush INT"
    ).json(results)
    micros = frame.selectExpr(
        "unix_micros(window_start) AS s", "unix_micros(window_end) AS e", "n"
    ).collect()
    want = sorted(
        (parse_instant(w["window_start"]), parse_instant(w["window_end"]), w["n"]) for w in written
    )
    assert sorted((r["s"], r["e"], r["n"]) for r in micros) == want
    utc = pa.timestamp("us", "UTC")
    schema = pa.schema(
        [
            ("window_start", utc),
            ("window_end", utc),
            ("n", pa.int64()),
            ("emitted_at", utc),
            ("batch", pa.int32()),
            ("flush", pa.int32()),
        ]
    )
    table = ds.dataset(results, format="json", partitioning="hive", schema=schema).to_table()
    assert table.num_rows == len(written)
    assert table.schema.field("window_start").type == utc
    starts = table.column("window_start").cast(pa.int64()).to_pylist()
    assert sorted(starts) == sorted(s for s, _, _ in want)
