"""Typed outputs (``[output] format = "parquet"`` and ``"delta"``) and the ``foreach_batch``
callback (docs/outputs.md): the records of the ``jsonl`` output, typed, read back with
Spark, pandas, pyarrow.dataset and deltalake, after batches and flushes, empty or not."""

from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from sparktide.errors import RunError
from sparktide.job import Job
from sparktide.spark import BatchResults, run_job, start
from sparktide.time import SECOND, format_instant
from tests.spark.streams import BASE, clock, job_for, read_output

UTC = pa.timestamp("us", "UTC")
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
WINDOWS = {
    "source": {"partition": "p"},
    "ordering": {"late_arrival": "5s", "out_of_order": "0s"},
    "window": {
        "type": "tumbling",
        "size": "10s",
        "group_by": ["g"],
        "aggregates": {"n": "count(*)", "total": "sum(v)", "mean": "avg(v)"},
    },
}
RELEASE = {
    "source": {"partition": "p"},
    "ordering": {"late_arrival": "5s", "out_of_order": "0s"},
}


def _write(directory: Path, malformed: bool) -> None:
    """Three files, one micro-batch each; with ``malformed``, the second holds a line
    that is not JSON and a late event (dead letters in that batch only)."""
    directory.mkdir(parents=True)
    for n in range(3):
        lines = []
        for i in range(n * 6, n * 6 + 6):
            a = BASE + i * 4 * SECOND
            t = format_instant(a + (500_000 if i % 3 == 0 else 0))
            row = {"id": i, "p": i % 2, "g": f"d{i % 2}", "v": i, "t": t, "a": format_instant(a)}
            lines.append(json.dumps(row))
        if malformed and n == 1:
            lines.append("not json")
            late = BASE + (n * 6 + 5) * 4 * SECOND
            lines.append(
                json.dumps(
                    {
                        "id": 99,
                        "p": 0,
                        "g": "d0",
                        "v": 1,
                        "t": format_instant(BASE),
                        "a": format_instant(late),
                    }
                )
            )
        (directory / f"part-{n}.jsonl").write_text("\n".join(lines) + "\n")


def _job(directory: Path, tables: dict[str, Any], fmt: str) -> Job:
    job = job_for(directory, tables)
    return dataclasses.replace(job, output=dataclasses.replace(job.output, format=fmt))


def _runs(spark: Any, job: Job) -> None:
    """Batches, then a run that flushes."""
    for flush in (False, True):
        run_job(job, once=True, flush=flush, spark=spark, max_files_per_trigger=1, clock=clock)


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    """A typed record as the JSON output writes it (times as ISO text)."""
    out = {}
    for key, value in record.items():
        if key in ("batch", "flush"):
            continue
        if isinstance(value, pd.Timestamp):
            value = format_instant(value.value // 1000)
        elif isinstance(value, datetime.datetime):  # (Spark's: naive, session zone UTC)
            value = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
            value = format_instant((value - EPOCH) // datetime.timedelta(microseconds=1))
        out[key] = value
    return out


def _key(record: dict[str, Any]) -> str:
    return json.dumps(_plain(record), sort_keys=True, default=str)


def _same(rows: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert sorted(map(_key, rows)) == sorted(map(_key, want))


@pytest.fixture(scope="module")
def jsonl_outputs(spark, tmp_path_factory) -> dict[tuple[str, bool], tuple[list, list]]:
    """The jsonl output of each case: what every typed output must hold."""
    out = {}
    for case, tables in (("windows", WINDOWS), ("release", RELEASE)):
        for malformed in (True, False) if case == "windows" else (True,):
            directory = tmp_path_factory.mktemp(f"jsonl-{case}-{malformed}")
            _write(directory / "in", malformed)
            job = _job(directory, tables, "jsonl")
            _runs(spark, job)
            out[case, malformed] = (
                read_output(str(job.output.path)),
                read_output(str(job.output.dead_letter)),
            )
            out["leaves", case, malformed] = {
                (int(leaf.parent.name[6:]), int(leaf.name[6:])): len(read_output_leaf(leaf))
                for leaf in Path(str(job.output.path)).glob("batch=*/flush=*")
            }
    return out


def _expected(outputs: dict, case: str, malformed: bool) -> tuple[list, list, dict]:
    """The records, dead letters and records per (batch, flush) of the jsonl output."""
    want, letters = outputs[case, malformed]
    return want, letters, outputs["leaves", case, malformed]


def _letters(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Typed dead letters as the jsonl output writes them (``record`` parsed)."""
    return [{**r, "record": json.loads(r["record"])} for r in rows]


def read_output_leaf(leaf: Path) -> list[str]:
    return [x for f in leaf.glob("*.jsonl") for x in f.read_text().split("\n") if x.strip()]


def _parquet_dataset(directory: str) -> ds.Dataset:
    """pyarrow.dataset as docs/outputs.md says: the schema of ``_common_metadata`` and
    the partition columns."""
    schema = pq.read_schema(f"{directory}/_common_metadata")
    for name in ("batch", "flush"):
        schema = schema.append(pa.field(name, pa.int32()))
    return ds.dataset(directory, format="parquet", partitioning="hive", schema=schema)


@pytest.mark.parametrize(
    ("case", "malformed"),
    [("windows", True), ("windows", False), ("release", True)],
    ids=["windows-dead-letters", "windows-none", "release-dead-letters"],
)
def test_parquet_output_reads_back_with_each_reader(
    spark, tmp_path, jsonl_outputs, case, malformed
):
    _write(tmp_path / "in", malformed)
    job = _job(tmp_path, WINDOWS if case == "windows" else RELEASE, "parquet")
    _runs(spark, job)
    want, letters, leaves = _expected(jsonl_outputs, case, malformed)
    results, dead = str(job.output.path), str(job.output.dead_letter)
    root = Path(results)
    assert sorted(p.relative_to(root).as_posix() for p in root.glob("batch=*/*")) == [
        "batch=000000000/flush=0",
        "batch=000000001/flush=0",
        "batch=000000002/flush=0",
        "batch=000000002/flush=1",
    ]
    assert (
        sorted(p.name for p in root.glob("batch=*/flush=*/*"))
        == ["_SUCCESS"] * 4 + ["part-00000.parquet"] * 4
    )
    assert want and bool(letters) == malformed

    frame = spark.read.parquet(results)  # (its schema from _common_metadata)
    types = dict(frame.dtypes)
    assert types["batch"] == "int" and types["flush"] == "int"
    time_columns = (
        ("window_start", "window_end", "emitted_at") if case == "windows" else ("timestamp",)
    )
    for name in time_columns:
        assert types[name] == "timestamp", types
    if case == "windows":
        assert types["n"] == "bigint" and types["total"] == "bigint" and types["mean"] == "double"
    else:
        assert types["id"] == "bigint" and types["v"] == "bigint"
    _same([r.asDict() for r in frame.collect()], want)
    per_leaf = frame.groupBy("batch", "flush").count().collect()
    assert {(r["batch"], r["flush"]): r["count"] for r in per_leaf} == {
        k: v for k, v in leaves.items() if v
    }

    table = _parquet_dataset(results).to_table()
    assert table.schema.field(time_columns[0]).type == UTC
    _same(table.to_pylist(), want)
    _same(pd.read_parquet(results, schema=table.schema).to_dict("records"), want)

    dead_frame = spark.read.parquet(dead)
    assert dead_frame.count() == len(letters)
    assert {"batch", "flush", "file", "line", "reason", "record", "error"} <= set(
        dead_frame.columns
    )
    dead_table = _parquet_dataset(dead).to_table()
    assert dead_table.num_rows == len(letters)
    assert len(pd.read_parquet(dead)) == len(letters)
    _same(_letters(dead_table.to_pylist()), letters)
    _same(_letters([r.asDict() for r in dead_frame.collect()]), letters)
    if case == "windows":
        assert dead_table.schema.field("window_start").type == UTC


@pytest.mark.parametrize("malformed", [True, False], ids=["dead-letters", "none"])
def test_delta_output_reads_back_with_each_reader(spark, tmp_path, jsonl_outputs, malformed):
    from deltalake import DeltaTable

    _write(tmp_path / "in", malformed)
    job = _job(tmp_path, WINDOWS, "delta")
    _runs(spark, job)
    want, letters, _ = _expected(jsonl_outputs, "windows", malformed)
    results, dead = str(job.output.path), str(job.output.dead_letter)
    table = DeltaTable(results)
    assert table.transaction_version("sparktide") == 2 * 2 + 1  # the flush after batch 2
    arrow = table.to_pyarrow_table()
    assert arrow.schema.field("window_start").type == UTC
    assert arrow.schema.field("batch").type == pa.int32()
    _same(arrow.to_pylist(), want)
    assert sorted(set(arrow.column("batch").to_pylist())) <= [0, 1, 2]
    _same(table.to_pandas().to_dict("records"), want)
    # Spark reads the table's Parquet files (no Delta jar here: Spark's own reader of
    # Delta is the delta-spark package, docs/outputs.md)
    parquet_files = [str(p) for p in Path(results).glob("*.parquet")]
    assert len(table.file_uris()) == len(parquet_files)
    _same([r.asDict() for r in spark.read.parquet(*parquet_files).collect()], want)
    dead_table = DeltaTable(dead).to_pyarrow_table()
    _same(_letters(dead_table.to_pylist()), letters)
    assert DeltaTable(dead).to_pandas().shape[0] == len(letters)


def test_a_delta_batch_already_committed_is_not_appended_again(spark, tmp_path):
    """A replayed batch (its state not committed when the run died) finds its
    transaction in the table and writes nothing twice."""
    from deltalake import DeltaTable

    _write(tmp_path / "in", False)
    job = _job(tmp_path, WINDOWS, "delta")
    run_job(job, once=True, spark=spark, max_files_per_trigger=1, clock=clock)
    results = str(job.output.path)
    before = DeltaTable(results).to_pyarrow_table().num_rows
    version = DeltaTable(results).version()
    # forget batch 2's state: the next run replays batch 2
    state = Path(str(job.output.checkpoint), "sparktide", "state", "2")
    (state / "_COMMITTED").unlink()
    commits = Path(str(job.output.checkpoint), "spark", "commits", "2")
    commits.unlink()
    commits.with_name(".2.crc").unlink(missing_ok=True)
    run_job(job, once=True, spark=spark, max_files_per_trigger=1, clock=clock)
    assert DeltaTable(results).to_pyarrow_table().num_rows == before
    assert DeltaTable(results).version() == version


def test_foreach_batch_hands_each_batch_as_dataframes(spark, tmp_path, jsonl_outputs):
    _write(tmp_path / "in", True)
    job = _job(tmp_path, WINDOWS, "jsonl")
    job = dataclasses.replace(
        job, output=dataclasses.replace(job.output, path=None, dead_letter=None)
    )
    seen: list[tuple[int, bool, list, list, dict]] = []

    def callback(batch_id: int, results: BatchResults) -> None:
        metrics = results.metrics.collect()[0].asDict(recursive=True)
        seen.append(
            (
                batch_id,
                results.flush,
                [r.asDict() for r in results.results.collect()],
                [r.asDict() for r in results.dead_letters.collect()],
                metrics,
            )
        )
        if results.results.columns:
            assert dict(results.results.dtypes)["window_start"] == "timestamp"

    query = start(
        spark,
        job,
        once=True,
        clock=clock,
        max_files_per_trigger=1,
        foreach_batch=callback,
        flush_on_stop=True,
    )
    query.awaitTermination()
    query.stop()  # (flushes)
    assert [(b, f) for b, f, *_ in seen] == [(0, False), (1, False), (2, False), (2, True)]
    want, letters = jsonl_outputs["windows", True]
    _same([r for *_, rows, _, _ in seen for r in rows], want)
    _same(_letters([r for *_, rows, _ in seen for r in rows]), letters)
    assert [m["batch"] for *_, m in seen] == [0, 1, 2, 2]
    assert seen[-1][4]["flushed"] is True
    assert not Path(tmp_path, "out", "results").exists()


def test_a_value_that_does_not_fit_its_column_fails_the_batch_naming_it(spark, tmp_path):
    """sum(v) written as integers, then a float: a Parquet column keeps one type."""
    directory = tmp_path / "in"
    directory.mkdir()
    for n, value in enumerate(("1", "2.5")):
        a = BASE + n * 30 * SECOND
        at = format_instant(a)
        row = f'{{"p": 0, "g": "d0", "v": {value}, "t": "{at}", "a": "{at}"}}'
        (directory / f"part-{n}.jsonl").write_text(row + "\n")
    job = _job(tmp_path, WINDOWS, "parquet")
    with pytest.raises(RunError, match="'total' was first written as int64"):
        run_job(job, once=True, flush=True, spark=spark, max_files_per_trigger=1, clock=clock)
