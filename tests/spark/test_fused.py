"""The one-pass plan (``sparktide.spark.onepass``): the same records as the reference engine,
and the general plan whenever a batch does not qualify."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import gzip
import itertools
import json
import os
import random
import shutil
import time
import unittest.mock
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import sparktide.spark.engine as engine_module
import sparktide.spark.plans as plans
import sparktide.spark.taskpass as taskpass
import sparktide.spark.windows.fold as fold_module
from sparktide.core.engine import simulate
from sparktide.core.instants import NEG_INF
from sparktide.job import Job
from sparktide.reader import parse_fields
from sparktide.spark import broker_lines, onepass, run_job, start
from sparktide.spark.engine import SparkEngine
from sparktide.spark.inputs.sqlvalues import partition_id
from sparktide.spark.onepass import fusable, jsonl, parallel, parquetfiles, policy, signals
from sparktide.spark.onepass.policy import running_max_before
from sparktide.time import format_instant, parse_instant
from tests.spark.streams import file_batches, job_for, read_output, write_stream
from tests.spark.test_differential import clock, run_matching_reference

WINDOW = {
    "type": "tumbling",
    "size": "30s",
    "group_by": ["device"],
    "aggregates": {
        "n": "count(*)",
        "mean": "avg(value)",
        "total": "sum(value)",
        "c": "count(value)",
    },
}

CASES = {
    # Stream Analytics defaults, merged partitions, integer and float values mixed
    "merged-adjust": {
        "source": {"partition": "partition"},
        "ordering": {"late_arrival": "15s", "out_of_order": "5s"},
        "window": WINDOW,
    },
    # partitions follow their own watermarks; late and out-of-order events dropped;
    # overlapping hops with (start, end] bounds and allowed lateness
    "partitioned-drop-hopping": {
        "source": {"partition": "partition"},
        "ordering": {
            "late_arrival": "20s",
            "out_of_order": "3s",
            "action": "drop",
            "partitioned": True,
        },
        "window": {
            **WINDOW,
            "type": "hopping",
            "size": "30s",
            "hop": "20s",
            "boundary": "end",
            "allowed_lateness": "4s",
            "group_by": ["partition", "device"],
        },
    },
    # time shifted; a declared partition never seen; no late check; drop; (start, end]
    "shifted-declared-drop": {
        "source": {"partition": "partition", "partitions": 4, "shift": "-7s"},
        "ordering": {"late_arrival": "none", "out_of_order": "2s", "action": "drop"},
        "window": {**WINDOW, "size": "20s", "boundary": "end"},
    },
    # substreams (a timeline per device, judged against the input's arrival clock)
    "substreams-adjust": {
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "15s", "out_of_order": "5s"},
        "window": WINDOW,
    },
    # substreams, drop, overlapping (start, end] hops, allowed lateness; keys that go
    # quiet for a batch close their windows on the idle timeout (batches are 7 s apart)
    "substreams-drop-idle": {
        "source": {"partition": "partition", "over": "device"},
        "ordering": {"late_arrival": "20s", "out_of_order": "3s", "action": "drop"},
        "window": {
            **WINDOW,
            "type": "hopping",
            "hop": "20s",
            "boundary": "end",
            "allowed_lateness": "4s",
            "idle_timeout": "5s",
        },
    },
    # hops wider than the window leave gaps (in_no_window); no early check; an idle timeout
    "merged-gaps-idle": {
        "source": {"partition": "partition"},
        "ordering": {"early_arrival": "none", "late_arrival": "10s", "out_of_order": "0s"},
        "window": {
            "type": "hopping",
            "size": "10s",
            "hop": "25s",
            "offset": "3s",
            "idle_timeout": "20s",
            "group_by": [],
            "aggregates": {"n": "count(*)", "s": "sum(value)"},
        },
    },
}


def _plans(job: Job, field: str = "plan") -> list[str]:
    """The plan of each micro-batch (the flush aside), in batch order (or another field
    of their metrics records)."""
    directory = Path(SparkEngine.metrics_directory_of(job).removeprefix("file:"))
    records = [json.loads(p.read_text()) for p in sorted(directory.glob("batch=*.jsonl"))]
    return [r[field] for r in records]


def _run(spark, tmp_path, tables, files_per_batch: int = 2) -> Job:
    job = job_for(tmp_path, tables)
    assert fusable(job)
    run_matching_reference(spark, job, files_per_batch)
    return job


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_pass_matches_reference(spark, tmp_path, case):
    """Every file holds every partition, so the first batch finds partitions in two tasks
    and is read again in one task (as every later one is); malformed lines are reported
    by the SQL route: each batch takes the one-pass plan."""
    write_stream(tmp_path / "in", seed=zlib.crc32(case.encode()) % 1000, partitions=3)
    job = _run(spark, tmp_path, CASES[case])
    assert _plans(job) == ["one_pass", "one_pass"]
    assert _plans(job, "windows_merged_on") == ["driver", "driver"]
    assert _plans(job, "files_read_by") == ["arrow", "arrow"]  # (by path, in the tasks)
    # the tasks' files (partials, keys, unvouched lines) are gone with their batch
    assert not (Path(job.output.checkpoint) / "sparktide" / "spill").exists()


@pytest.mark.parametrize(
    "case", ["merged-gaps-idle", "partitioned-drop-hopping", "substreams-drop-idle"]
)
def test_open_windows_merge_in_spark_or_on_the_driver_alike(spark, tmp_path, monkeypatch, case):
    """The open windows (and substream keys) a batch merged in Spark are read by the next
    batch merging on the driver, and the other way round, with the same answers (batches
    alternate here; in a run, the size of the partials and open windows chooses). With
    12 devices some keys skip a batch: their windows close on the idle timeout."""
    on_driver, batches = plans.windows_on, itertools.count()  # (asked once a batch)

    def alternating(job, **facts):
        place = on_driver(job, **facts)
        return place if next(batches) % 2 == 1 else ("spark", "odd batches only")

    monkeypatch.setattr(plans, "windows_on", alternating)
    seed = zlib.crc32(case.encode()) % 1000 + 1
    write_stream(tmp_path / "in", seed=seed, partitions=3, devices=12)
    job = _run(spark, tmp_path, CASES[case], files_per_batch=1)
    assert _plans(job) == ["one_pass"] * 4
    assert _plans(job, "windows_merged_on") == ["spark", "driver", "spark", "driver"]


@pytest.mark.parametrize("rows", [plans.DRIVER_WINDOW_ROWS, 0])
def test_a_quiet_partition_closes_its_windows_after_the_idle_timeout(
    spark, tmp_path, monkeypatch, rows
):
    """Partitioned watermarks with an idle timeout: partition 2 delivers nothing in the
    middle batches while the others do, so its open windows close on the timeout (batches
    are 7 s apart) — merged on the driver, or in Spark when the partials are too many."""
    monkeypatch.setattr(plans, "DRIVER_WINDOW_ROWS", rows)
    write_stream(tmp_path / "in", seed=21, partitions=3)
    for k in range(4):
        path = tmp_path / "in" / f"part-{k:03d}.jsonl"
        if k in (1, 2):
            lines = path.read_text().splitlines()
            path.write_text("\n".join(x for x in lines if '"partition": 2' not in x) + "\n")
        os.utime(path, (time.time() + k, time.time() + k))  # (read by age: in name order)
    case = CASES["partitioned-drop-hopping"]
    tables = {**case, "window": {**case["window"], "idle_timeout": "5s"}}
    job = _run(spark, tmp_path, tables, files_per_batch=1)
    assert _plans(job) == ["one_pass"] * 4
    assert _plans(job, "windows_merged_on") == ["driver" if rows else "spark"] * 4


def test_substreams_with_a_partition_per_file_are_judged_per_task(spark, tmp_path, monkeypatch):
    """Keys never cross partitions and each file holds one partition: a batch's files are
    judged in a task each, with the input's arrival clock taken from a guess (the
    partitions seen before deliver); in the last batch partition 1 is idle, the guess
    is wrong and the batch is judged again in one task. The same answers either way."""
    checked = []  # (partitions assumed, partitions delivering) as the engine compares them
    clock_of = taskpass.input_clock

    def spy(plan, delivering):
        checked.append((plan.assumed, set(delivering)))
        return clock_of(plan, delivering)

    monkeypatch.setattr(taskpass, "input_clock", spy)
    write_stream(tmp_path / "src", seed=41, partitions=3, devices=6, files=3, malformed=0)
    (tmp_path / "in").mkdir()
    layout = [(0, (0, 1)), (1, (0, 1)), (2, (0, 2))]  # batch: the partitions delivering
    for k, delivering in layout:
        lines = (tmp_path / "src" / f"part-{k:03d}.jsonl").read_text().splitlines()
        for partition in delivering:
            path = tmp_path / "in" / f"part-{k}{partition}.jsonl"
            mine = [x for x in lines if f'"partition": {partition}' in x]
            path.write_text("\n".join(mine) + "\n")
            os.utime(path, (time.time() + k, time.time() + k))  # (read by age)
    with _file_per_task(spark):
        job = _run(spark, tmp_path, CASES["substreams-adjust"], files_per_batch=2)
    assert _plans(job) == ["one_pass"] * 3
    shared = [(set(assumed), delivering) for assumed, delivering in checked if assumed is not None]
    assert (set(), {"0", "1"}) in shared  # batch 0: tasks shared it (nothing seen before)
    assert ({"0", "1"}, {"0", "1"}) in shared  # batch 1: the guess held
    assert ({"0", "1"}, {"0", "2"}) in shared  # batch 2: it did not (then one task)


@pytest.mark.parametrize("case", ["merged-adjust", "substreams-adjust"])
def test_several_tasks_partials_are_merged_on_the_driver_only_where_they_can_meet(
    spark, tmp_path, monkeypatch, case
):
    """A partition per file, a task per file: with merged partitions the tasks' partials
    share windows (one count over every device here) and are merged on the driver; with
    substreams a key is in one task only, so its windows are too, and they are taken as
    they come. The reference engine's records either way."""
    tasks, distinct = [], []  # (the tasks' partial files; each batch's partials distinct)
    windows, driver_windows = engine_module.fold_windows, fold_module.merge_on_driver

    def spy_windows(context, batch, decided, spilled=None, partial_rows=0):
        tasks.append(len(spilled.files) if spilled is not None else None)
        return windows(context, batch, decided, spilled, partial_rows)

    def spy_driver(context, batch, fresh, **kwargs):
        distinct.append(kwargs["distinct"])
        return driver_windows(context, batch, fresh, **kwargs)

    monkeypatch.setattr(engine_module, "fold_windows", spy_windows)
    monkeypatch.setattr(fold_module, "merge_on_driver", spy_driver)
    write_stream(tmp_path / "src", seed=43, partitions=3, devices=6, files=1, malformed=0)
    (tmp_path / "in").mkdir()
    lines = (tmp_path / "src" / "part-000.jsonl").read_text().splitlines()
    for partition in range(3):
        mine = [x for x in lines if f'"partition": {partition}' in x]
        (tmp_path / "in" / f"part-{partition}.jsonl").write_text("\n".join(mine) + "\n")
    tables = CASES[case]
    if case.startswith("merged"):  # (one window for all devices: every partition in it)
        tables = {**tables, "window": {**tables["window"], "group_by": []}}
    with _file_per_task(spark):
        job = _run(spark, tmp_path, tables, files_per_batch=3)
    assert _plans(job) == ["one_pass"]
    assert _plans(job, "windows_merged_on") == ["driver"]
    assert tasks[0] == 3  # (the flush has no partials)
    assert distinct[0] == case.startswith("substreams")


def test_substreams_beyond_the_drivers_share_take_the_spark_routes(spark, tmp_path, monkeypatch):
    """A one-pass substreams batch with more partials than the driver may merge merges in
    Spark (its keys' state goes to Spark as a DataFrame); a batch whose keys' state is
    already beyond that takes the general plan. The same answers either way."""
    monkeypatch.setattr(plans, "DRIVER_WINDOW_ROWS", 3)
    write_stream(tmp_path / "in", seed=31, partitions=3)
    job = _run(spark, tmp_path, CASES["substreams-drop-idle"])
    assert _plans(job) == ["one_pass", "general"]
    assert _plans(job, "windows_merged_on") == ["spark", "spark"]


@contextlib.contextmanager
def _file_per_task(spark):
    """Every file its own Spark task (a file costs more than a task's bytes)."""
    key = "spark.sql.files.openCostInBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, str(1 << 30))
    try:
        yield
    finally:
        spark.conf.set(key, before)


def test_parquet_rows_take_one_pass(spark, tmp_path):
    """Parquet rows (typed timestamp columns in some files, text in others; malformed
    rows) go through the kernel as the JSON text the SQL route would read: a batch with
    text times is read by Spark, not by the kernel."""
    write_stream(tmp_path / "in", seed=13, partitions=3, fmt="parquet")
    tables = {**CASES["merged-adjust"], "source": {"partition": "partition", "format": "parquet"}}
    job = _run(spark, tmp_path, tables)
    assert _plans(job) == ["one_pass", "one_pass"]
    assert _plans(job, "files_read_by") == ["spark", "spark"]


#: How each file of :func:`_typed_parquet` types its columns: times (unit, zone),
#: partition and device ids, values; ``extra`` columns no job reads (types Spark reads).
_TYPINGS = [
    {"time": ("us", "UTC"), "partition": pa.int64(), "device": pa.string(), "value": "float"},
    {
        "time": ("ms", "Europe/Paris"),
        "partition": "padded",  # "007": partition 7
        "device": pa.string(),
        "value": "int",
        "extra": True,
    },
    {"time": ("us", "+05:30"), "partition": pa.int32(), "device": None, "value": "float"},
    {"time": ("s", "UTC"), "partition": pa.int16(), "device": pa.string(), "value": None},
]


def _typed_parquet(source: Path, target: Path) -> None:
    """``write_stream``'s JSON lines (``source``) as Parquet files typed each its own way
    (:data:`_TYPINGS`, in turn): integer and text partitions, a file without devices or
    values, integer and float values, zones and units of timestamps, extra columns."""
    target.mkdir(parents=True)
    for k, path in enumerate(sorted(source.glob("*.jsonl"))):
        typing = _TYPINGS[k % len(_TYPINGS)]
        unit, zone = typing["time"]
        records = [json.loads(line) for line in path.read_text().splitlines()]
        columns: dict[str, pa.Array] = {"id": pa.array([r["id"] for r in records])}
        for name in ("t", "a"):
            times = [parse_instant(r[name]) for r in records]
            if unit == "s":  # (whole seconds only)
                times = [x - x % 1_000_000 for x in times]
            elif unit == "ms":
                times = [x - x % 1_000 for x in times]
            micros = pa.array(times, pa.timestamp("us", tz="UTC"))
            columns[name] = micros.cast(pa.timestamp(unit, tz=zone))
        if typing["partition"] == "padded":
            columns["partition"] = pa.array([f"00{r['partition']}" for r in records])
        else:
            columns["partition"] = pa.array([r["partition"] for r in records], typing["partition"])
        if typing["device"] is not None:
            columns["device"] = pa.array([r["device"] for r in records], typing["device"])
        if typing["value"] == "float":
            columns["value"] = pa.array([r["value"] for r in records], pa.float64())
        elif typing["value"] == "int":
            columns["value"] = pa.array(
                [None if r["value"] is None else int(r["value"]) for r in records], pa.int64()
            )
        if typing.get("extra"):
            n = len(records)
            columns["day"] = pa.array([dt.date(2026, 3, 1)] * n, pa.date32())
            columns["price"] = pa.array([None] * n, pa.decimal128(9, 2))
            columns["blob"] = pa.array([b"x"] * n, pa.binary())
            columns["ratio"] = pa.array([0.5] * n, pa.float32())
            columns["flag"] = pa.array([r["id"] % 2 == 0 for r in records])
        pq.write_table(pa.table(columns), target / (path.stem + ".parquet"))


@pytest.mark.parametrize("case", ["merged-adjust", "substreams-drop-idle"])
def test_parquet_files_read_by_the_kernel_match_the_reference(spark, tmp_path, case):
    """Typed Parquet files are read by the kernel itself (pyarrow, no Spark scan): times
    of every unit and zone, integer and zero-padded text partitions, integer and float
    values, a file without devices or values, columns no job reads — the reference
    engine's answers, and the same as Spark reading the rows (the batch after a file
    the kernel cannot take, text times here)."""
    write_stream(tmp_path / "jsonl", seed=21, partitions=3, malformed=0, files=8)
    _typed_parquet(tmp_path / "jsonl", tmp_path / "in")
    mixed = tmp_path / "in" / "part-006.parquet"  # text times: Spark reads this batch
    table = pq.read_table(mixed)
    for name in ("t", "a"):
        utc = table.column(name).cast(pa.timestamp("us", tz="UTC"))
        text = pc.strftime(utc, "%Y-%m-%dT%H:%M:%SZ")  # (%S holds the fraction)
        table = table.set_column(table.schema.get_field_index(name), name, text)
    pq.write_table(table, mixed)
    tables = {**CASES[case], "source": {**CASES[case]["source"], "format": "parquet"}}
    job = _run(spark, tmp_path, tables)
    assert _plans(job) == ["one_pass"] * 4
    # (substreams: the file without devices has no keys, which the kernel leaves to Spark)
    second = "spark" if case.startswith("substreams") else "arrow"
    assert _plans(job, "files_read_by") == ["arrow", second, "arrow", "spark"]


def test_parquet_files_the_kernel_cannot_take_are_read_by_spark(spark, tmp_path):
    """A file with a value the kernel leaves to Spark's reading — a NaN, a device whose
    JSON text needs escapes, an unsigned partition column — sends its batch to Spark's
    reading of the rows (the one-pass plan still judges it), with the same answers."""
    write_stream(tmp_path / "jsonl", seed=22, partitions=3, malformed=0, files=4)
    _typed_parquet(tmp_path / "jsonl", tmp_path / "in")
    files = sorted((tmp_path / "in").glob("*.parquet"))
    poisons = [
        ("value", lambda c: pa.array([float("nan"), *c.to_pylist()[1:]], pa.float64())),
        ("device", lambda c: pa.array(['d"1', *c.to_pylist()[1:]], pa.string())),
        ("partition", lambda c: pc.cast(c, pa.uint32())),
    ]
    for path, (name, poison) in zip(files, poisons, strict=False):
        table = pq.read_table(path)
        at = table.schema.get_field_index(name)
        table = table.set_column(at, name, poison(table.column(name).combine_chunks()))
        pq.write_table(table, path)
    for k, path in enumerate(files):  # (Spark's file source takes them by time)
        os.utime(path, (time.time() - 100 + k,) * 2)
    tables = {**CASES["merged-adjust"], "source": {"partition": "partition", "format": "parquet"}}
    job = _run(spark, tmp_path, tables, files_per_batch=1)
    assert _plans(job, "files_read_by") == ["spark", "spark", "spark", "arrow"]


def test_large_parquet_files_are_read_by_spark(spark, tmp_path, monkeypatch):
    """A Parquet file beyond ``KERNEL_FILE_BYTES`` sends its batch to Spark's reading of
    the rows, with the same answers."""
    write_stream(tmp_path / "jsonl", seed=23, partitions=3, malformed=0, files=3)
    _typed_parquet(tmp_path / "jsonl", tmp_path / "in")
    files = sorted((tmp_path / "in").glob("*.parquet"))
    for k, path in enumerate(files):  # (Spark's file source takes them by time)
        os.utime(path, (time.time() - 100 + k,) * 2)
    sizes = [path.stat().st_size for path in files]
    assert sizes.count(max(sizes)) == 1
    monkeypatch.setattr(taskpass, "KERNEL_FILE_BYTES", max(sizes) - 1)
    tables = {**CASES["merged-adjust"], "source": {"partition": "partition", "format": "parquet"}}
    job = _run(spark, tmp_path, tables, files_per_batch=1)
    large = sizes.index(max(sizes))
    assert _plans(job, "files_read_by") == [
        "spark" if k == large else "arrow" for k in range(len(files))
    ]


def test_text_partitions_are_read_by_the_kernel_as_by_the_sql_route(spark):
    """The kernel's partition ids of Parquet text (``parquet_partition``) are the SQL
    route's (``partition_id``): digit strings as integers, other text as it is; 19 digits
    or more are left to the route."""
    rng = random.Random(5)
    texts = ["007", "-0", "-007", "7", "abc", "", "-", "+5", " 5", "\u0663", "1e3", "0x1F"]
    texts += ["123456789012345678", "-123456789012345678", "000000000000000001"]
    texts += [
        "".join(rng.choice("0123456789-a ") for _ in range(rng.randrange(6))) for _ in range(200)
    ]
    kernel = parquetfiles.parquet_partition(pa.array(texts)).to_pylist()
    frame = spark.createDataFrame([(t,) for t in texts], "p string")
    assert kernel == [row.id for row in frame.selectExpr(f"{partition_id('p')} AS id").collect()]
    for text in ("1234567890123456789", "-99999999999999999999"):
        with pytest.raises(signals.Abort):
            parquetfiles.parquet_partition(pa.array(["1", text]))


@pytest.mark.parametrize("limit", [taskpass.ONE_TASK_SPLITS, 1])
def test_partitions_across_tasks_are_read_in_one_task(spark, tmp_path, monkeypatch, limit):
    """Partitions whose lines are in several tasks of a batch cannot be judged per task:
    the batch's files then go through one task (and every later batch's too), with the
    same answers — unless the batch is too large for one task (more file splits than
    ``ONE_TASK_SPLITS``): then it takes the general plan."""
    monkeypatch.setattr(taskpass, "ONE_TASK_SPLITS", limit)
    write_stream(tmp_path / "in", seed=11, partitions=3, malformed=0)
    with _file_per_task(spark):
        job = _run(spark, tmp_path, CASES["merged-adjust"], files_per_batch=3)
    first = "one_pass" if limit > 1 else "general"  # (3 files: 3 splits)
    assert _plans(job) == [first, "one_pass"]


def test_events_only_the_sql_route_reads_take_the_general_plan(spark, tmp_path):
    """A well-formed event the kernel does not vouch for (an escaped string) sends its
    batch to the general plan, with the same answers; the other batch goes in one pass."""
    write_stream(tmp_path / "in", seed=12, partitions=3)
    first = tmp_path / "in" / "part-000.jsonl"
    lines = first.read_text().splitlines()
    event = next(line for line in lines if '"device": "d1"' in line)
    lines.insert(len(lines) // 2, event.replace('"d1"', '"d\\u0031"'))
    first.write_text("\n".join(lines) + "\n")
    job = _run(spark, tmp_path, CASES["merged-adjust"])
    assert sorted(_plans(job)) == ["general", "one_pass"]  # (files go by age)


def test_jsonl_files_with_any_name_are_read_by_path(spark, tmp_path):
    """The tasks read JSONL files by the paths Spark lists (URI-encoded there): names
    with spaces, plus signs, percent signs and accents, the reference engine's answers."""
    write_stream(tmp_path / "in", seed=31, partitions=3, files=4)
    names = ["a b.jsonl", "c+d.jsonl", "e%41f.jsonl", "g é.jsonl"]
    for path, name in zip(sorted((tmp_path / "in").glob("*.jsonl")), names, strict=True):
        path.rename(path.with_name(name))
    job = _run(spark, tmp_path, CASES["merged-adjust"])
    assert _plans(job, "files_read_by") == ["arrow", "arrow"]


def test_compressed_jsonl_files_are_read_by_spark(spark, tmp_path):
    """A file Spark's text source decompresses (``.gz``) is not one the tasks read by
    path: the batch goes to Spark's reading of the text (and every later one), with
    the windows of the same lines uncompressed."""
    write_stream(tmp_path / "plain" / "in", seed=32, partitions=3, files=4)
    for k, path in enumerate(sorted((tmp_path / "plain" / "in").glob("*.jsonl"))):
        os.utime(path, (time.time() - 100 + k,) * 2)  # (Spark's file source goes by age)
    plain = _run(spark, tmp_path / "plain", CASES["merged-adjust"])
    assert _plans(plain, "files_read_by") == ["arrow", "arrow"]
    (tmp_path / "gz" / "in").mkdir(parents=True)
    for k, path in enumerate(sorted((tmp_path / "plain" / "in").glob("*.jsonl"))):
        target = tmp_path / "gz" / "in" / path.name
        if k == 2:  # (the second batch's first file)
            target = target.with_name(path.name + ".gz")
            target.write_bytes(gzip.compress(path.read_bytes()))
        else:
            target.write_bytes(path.read_bytes())
        shutil.copystat(path, target)
    job = job_for(tmp_path / "gz", CASES["merged-adjust"])
    run_job(job, once=True, flush=True, spark=spark, max_files_per_trigger=2, clock=clock)
    assert file_batches(job.output.checkpoint)["part-002.jsonl.gz"] == 1
    assert _plans(job, "files_read_by") == ["arrow", "spark"]
    assert read_output(job.output.path) == read_output(plain.output.path)


def test_a_file_split_among_a_tasks_threads_gives_the_same_rows(tmp_path, monkeypatch):
    """A task with more threads than files vouches for each file in pieces of lines: the
    same partials, summaries and unvouched lines (numbered as in the file) as in one."""
    write_stream(tmp_path / "in", seed=33, partitions=3, files=1, events=400, malformed=6)
    path = next((tmp_path / "in").glob("*.jsonl"))
    text = path.read_text().splitlines()
    text.insert(7, "   ")  # blank lines, and a line only the SQL route reads, near the cuts
    text.insert(len(text) // 3, "")
    text.insert(len(text) // 2, text[len(text) // 2].replace('"device": "', '"device": "\\u00e9'))
    path.write_text("\n".join(text) + "\n")
    job = job_for(tmp_path, CASES["substreams-drop-idle"])
    monkeypatch.setattr(jsonl, "PIECE_BYTES", 1)
    batch = pa.RecordBatch.from_pydict(
        {"file": [path.name], "path": [f"file:{path}"], "mtime": [0]}
    )
    found = []
    for threads in (1, 3):
        spill = tmp_path / f"spill-{threads}"
        spill.mkdir()
        plan = onepass.fused_plan(job, {})
        plan = dataclasses.replace(plan, spill=str(spill), threads=threads, substreams=True)
        rows = pa.Table.from_batches(list(onepass.fused_kernel(plan, iter([batch]))))
        task = rows.filter(pc.equal(rows.column("kind"), onepass.TASK)).to_pylist()[0]
        assert task["slow"] > 0
        files = [
            pq.read_table(task[f"{kind}_file"])
            for kind in (onepass.PARTIAL, onepass.KEY, onepass.LINE)
        ]
        found.append((rows.drop_columns([f"{k}_file" for k in "pkl"]), *files))
    assert all(a.equals(b) for a, b in zip(*found, strict=True))


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda row: json.dumps(row, sort_keys=True, default=str))


@pytest.mark.parametrize(
    "case", ["substreams-drop-idle", "partitioned-drop-hopping", "merged-gaps-idle"]
)
def test_a_tasks_timelines_judged_in_pieces_give_the_same_rows(tmp_path, monkeypatch, case):
    """A task with threads splits its rows by timeline (a key's bytes; a partition) and
    judges the pieces at once: the same partials, keys, summaries (counters, the first
    late event of each partition across pieces) as in one piece — with the keys' state
    of a previous batch."""
    write_stream(tmp_path / "in", seed=41, partitions=3, files=3, events=900, devices=40)
    paths = sorted((tmp_path / "in").glob("*.jsonl"))
    job = job_for(tmp_path, CASES[case])
    batch = pa.RecordBatch.from_pydict(
        {
            "file": [path.name for path in paths],
            "path": [f"file:{path}" for path in paths],
            "mtime": [0] * len(paths),
        }
    )
    plan = onepass.fused_plan(job, {})
    if plan.substreams:  # a third of the keys known from a previous batch
        known = tmp_path / "keys.parquet"
        keys = [f'"d{i}"' for i in range(0, 40, 3)]
        base = parse_instant("2026-03-01T09:00:00Z")
        pq.write_table(
            pa.table(
                {
                    "key": keys,
                    "k_newest": [base + i * 7_000_000 for i in range(len(keys))],
                    "k_watermark": [base + i * 5_000_000 for i in range(len(keys))],
                }
            ),
            known,
        )
        plan = dataclasses.replace(plan, keys=(str(known),))
    found = []
    for threads, shard_rows in ((1, parallel.SHARD_ROWS), (2, 40)):
        monkeypatch.setattr(parallel, "SHARD_ROWS", shard_rows)
        spill = tmp_path / f"spill-{threads}"
        spill.mkdir()
        task_plan = dataclasses.replace(plan, spill=str(spill), threads=threads)
        rows = pa.Table.from_batches(list(onepass.fused_kernel(task_plan, iter([batch]))))
        task = rows.filter(pc.equal(rows.column("kind"), onepass.TASK)).to_pylist()[0]
        summary = rows.filter(pc.equal(rows.column("kind"), onepass.SUMMARY))
        partials = pq.read_table(task[f"{onepass.PARTIAL}_file"])
        keys_file = task[f"{onepass.KEY}_file"]
        found.append(
            (
                _sorted(summary.drop_columns([f"{k}_file" for k in "pkl"])),
                _sorted(partials),
                _sorted(pq.read_table(keys_file)) if keys_file else None,
            )
        )
    one, pieces = found
    assert one == pieces
    summary, partials, keys = one
    assert len(summary) == 3 and partials
    assert sum(row["late_a"] is not None for row in summary) >= 2
    assert (keys is not None) == (case.startswith("substreams"))


_PARTIAL_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["", "a", "b"]),
        st.sampled_from(["a", "b", "c", None]),
        st.sampled_from([0, 60, -60]),
        st.integers(0, 5),
    ),
    max_size=40,
)


def _partials_table(rows: list[tuple]) -> pa.Table:
    return pa.table(
        {
            "scope": pa.array([r[0] for r in rows], pa.string()),
            "g0": pa.array([r[1] for r in rows], pa.string()),
            "start": pa.array([r[2] for r in rows], pa.int64()),
            "n": pa.array([r[3] for r in rows], pa.int64()),
        }
    )


@settings(max_examples=100, deadline=None)
@given(_PARTIAL_ROWS, st.sampled_from(["any", "one scope", "group is scope"]))
@example([("", "a", 0, 1), ("", None, 0, 2)], "any")  # (a null is a value of its own)
@example([("a", "a", 0, 1), ("b", "b", 0, 2), ("b", "b", 60, 3)], "any")
def test_merged_partials_are_the_sums_per_key(rows, shape):
    """:func:`onepass.merge_partials` leaves out keys that tell no rows apart (one value;
    equal to another key) and puts them back: the rows are those of a plain grouping."""
    if shape == "one scope":
        rows = [("", g, start, n) for _, g, start, n in rows]
    elif shape == "group is scope":
        rows = [(scope, scope, start, n) for scope, _, start, n in rows]
    table = _partials_table(rows)
    want: dict[tuple, int] = {}
    for scope, group, begins, n in rows:
        want[(scope, group, begins)] = want.get((scope, group, begins), 0) + n
    merged = onepass.merge_partials(table, ["scope", "g0", "start"])
    assert merged.schema == table.schema
    got = {(r["scope"], r["g0"], r["start"]): r["n"] for r in merged.to_pylist()}
    assert got == want and merged.num_rows == len(want)


@settings(max_examples=100, deadline=None)
@given(_PARTIAL_ROWS, _PARTIAL_ROWS, st.sampled_from([[], ["start"], ["start", "g0"], ["scope"]]))
@example([("a", None, 0, 1)], [("b", None, 0, 2), ("a", None, 0, 3)], ["start", "g0"])
def test_fresh_partials_merged_into_held_windows_as_all_together(fresh, held, probe):
    """:func:`onepass.merge_into` groups only the held windows that may share a key with
    a fresh row, and keeps the others: the same rows as merging everything."""
    keys = ["scope", "g0", "start"]
    held_table = onepass.merge_partials(_partials_table(held), keys)  # (one row per window)
    want = onepass.merge_partials(_partials_table(fresh + held), keys)
    got = onepass.merge_into(_partials_table(fresh), held_table, keys, probe)
    assert got.schema == want.schema
    assert sorted(got.to_pylist(), key=repr) == sorted(want.to_pylist(), key=repr)


def _naive_before(h: list[int], group: list[int]) -> list[int]:
    out, best, last = [], NEG_INF, None
    for value, g in zip(h, group, strict=True):
        if g != last:
            best, last = NEG_INF, g
        out.append(best)
        best = max(best, value)
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),
            # (values over most of the int64 range: ranked, not offset)
            st.one_of(
                st.just(NEG_INF),
                st.integers(-(10**15), 10**15),
                st.integers(-(4 * 10**18), 4 * 10**18),
            ),
        ),
        max_size=60,
    )
)
def test_running_max_before_is_the_segmented_scan(rows):
    rows.sort(key=lambda r: r[0])  # (the kernel sorts by partition first)
    group = np.array([g for g, _ in rows], dtype=np.int64)
    h = np.array([v for _, v in rows], dtype=np.int64)
    for groups in (0, policy.SCAN_GROUPS):  # (values ranked at once; a scan per group)
        with unittest.mock.patch.object(policy, "SCAN_GROUPS", groups):
            got = running_max_before(h, group).tolist()
        assert got == _naive_before(h.tolist(), group.tolist())


def test_broker_lines_take_one_pass(spark, tmp_path):
    """Kafka-shaped lines (``broker_lines``: the partition and arrival time from the
    stream, not the record): one pass per task, the reference engine's windows; a
    malformed value is a dead letter, as in the general plan."""
    rng = random.Random(5)
    rows = []  # (partition, offset, arrival, value text)
    arrival = parse_instant("2026-03-01T09:00:00Z")
    for i in range(60):
        arrival += rng.choice([0, 400_000, 1_000_000, 3_000_000])
        partition = i % 3
        lag = rng.choice([0, 1, 2, 4, 30]) * 1_000_000
        value = {"id": i, "t": format_instant(arrival - lag), "device": f"d{i % 4}"}
        value["value"] = rng.choice([1, 2.5, None, 7])
        rows.append((partition, i // 3, arrival, json.dumps(value)))
    rows.append((1, 99, arrival, '{"id": 99, "t": "nope"}'))  # malformed
    utc = dt.UTC
    table = pa.table(
        {
            "value": [v for *_, v in rows],
            "partition": pa.array([p for p, *_ in rows], pa.int32()),
            "offset": pa.array([o for _, o, *_ in rows], pa.int64()),
            "timestamp": pa.array(
                [dt.datetime.fromtimestamp(a / 1e6, utc) for _, _, a, _ in rows],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )
    (tmp_path / "kafka").mkdir()
    pq.write_table(table, tmp_path / "kafka" / "part-0.parquet")
    folder = str(tmp_path / "kafka")
    stream = spark.readStream.schema(spark.read.parquet(folder).schema).parquet(folder)
    job = Job.from_dict(
        {
            "source": {"path": "-", "timestamp_by": "t", "partition": "partition"},
            "ordering": {"late_arrival": "10s", "out_of_order": "2s"},
            "window": {**WINDOW, "size": "10s"},
            "output": {
                "path": "out/windows",
                "dead_letter": "out/dead",
                "metrics": "out/metrics",
                "checkpoint": "out/ck",
            },
        },
        base_dir=tmp_path,
    )
    now = parse_instant("2026-03-01T10:00:00Z")
    query = start(spark, job, broker_lines(stream), once=True, clock=lambda b: now + b)
    query.awaitTermination()
    query.flush()
    assert _plans(job) == ["one_pass"]
    got = [{k: v for k, v in w.items() if k != "emitted_at"} for w in read_output(job.output.path)]
    records = []
    order = sorted(range(len(rows)), key=lambda k: (rows[k][2], rows[k][0], rows[k][1]))
    good = [k for k in order if rows[k][1] != 99]
    for seq, k in enumerate(good):
        partition, _, arrival_us, text = rows[k]
        record = parse_fields(
            seq,
            {**json.loads(text), "partition": partition},
            job.source,
            default_arrival=arrival_us,
        )
        record.processing_time = now
        records.append(record)
    want = [
        {k: v for k, v in w.items() if k not in ("type", "emitted_at")}
        for w in simulate(job, records).windows
    ]
    key = json.dumps
    assert sorted(map(key, got)) == sorted(map(key, want))
    dead = read_output(job.output.dead_letter)
    assert [(d["reason"], d["line"]) for d in dead] == [("malformed", 99)]


def test_a_batch_s_file_splits_come_from_its_files_sizes(spark, tmp_path):
    """The one-task guard counts splits from the files' sizes (the optimiser's
    statistics), and from the RDD where the source reports no size."""
    from sparktide.spark.taskpass import _splits

    table = pa.table({"x": pa.array(np.arange(50_000), pa.int64())})
    pq.write_table(table, tmp_path / "x.parquet", compression="none")
    size = (tmp_path / "x.parquet").stat().st_size
    files = spark.read.parquet(str(tmp_path)).selectExpr("x", "x * 2 AS y")
    assert _splits(files) == 1
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(size // 3))
    try:
        assert _splits(files) == -(-size // (size // 3)) >= 3
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)
    unsized = spark.sparkContext.parallelize([(i,) for i in range(10)], 7).toDF(["x"])
    assert _splits(unsized) == 7
