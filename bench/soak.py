"""Soak test: does the Spark engine's state and memory stay flat over many micro-batches?

This is a measurement, not a test: it asserts nothing on timings, and its checks (the
accounting invariant, the flatness of state and memory) are reported, not raised.

Input: ``--events`` (3,000,000) JSONL telemetry events from ``--devices`` (10,000)
devices on ``--partitions`` (4) partitions, over ``--files`` (60) files in arrival
order; each file covers ``--file-seconds`` (60) s of arrival time, so every micro-batch
ends at the same phase of the 1-minute windows. Constant disorder throughout:

* every event is 0–2 s behind its arrival (out-of-order jitter: with ``out_of_order =
  0s``, 94% are out of order on their partition's timeline and adjusted in the merged
  run, 4% on their device's with substreams);
* ``--late`` (5%) are 6–90 s behind (late beyond ``late_arrival = 5s``: adjusted);
* ``--early`` (0.1%) are 5–30 min ahead of their arrival (beyond ``early_arrival = 5m``:
  dropped);
* ``--malformed`` (0.02%) lines are broken: not JSON, no event time, an impossible
  event time, a text ``value`` (dead-lettered).

Two configurations run in one ``local[2]`` session (:func:`sparktide.spark.local_session`,
with ``--spark-conf`` settings on top), each through
:func:`sparktide.spark.run_job` (``once=True``, ``max_files_per_trigger=--per-trigger``,
``publish=False``, ``flush=True``, ``on_metrics``): **merged** (one job watermark, the
minimum over the partitions) and **substreams** (``over = "device"``), both with Stream
Analytics' defaults (late 5 s, out-of-order 0 s, early 5 min, adjust) and a 1-minute
tumbling ``count(*)``/``avg(value)`` per device.

After every micro-batch, once :meth:`SparkEngine.process` has returned (the batch's kept
frames are released then), it records: the batch's events and wall time; the JVM heap
used after ``System.gc()`` (and what that GC hint cost; by default a second GC after
``--settle`` 1 s gives the figure kept, since the first one often still sees ~35 MB
that is released just after a batch); the JVM's, its Python workers' and this driver's
resident memory; Spark's persistent RDDs, storage memory, live accumulators, the jobs /
SQL executions its status store retains and the objects py4j holds; the bytes and
parquet row counts of the sparktide state of the newest committed batch
(``<checkpoint>/sparktide/state/<id>/``); and the files in the checkpoint directories.
At the start of the second half and at the last batch it takes a class histogram of the
JVM heap (``jcmd GC.class_histogram``) and reports the classes that grew most. At the
end it checks the accounting invariant on the final (flushed) metrics record, and fits
a least-squares slope to state bytes, heap and the rest over the second half of the
batches (the time measuring takes is excluded from the events/s).

Results: printed (rich tables) and written as JSON to ``bench/results/soak.json``.

Usage::

    .venv/bin/python bench/soak.py                       # 3M events, 2 x 30 batches
    .venv/bin/python bench/soak.py --events 300000       # quick look (same batch count)
    .venv/bin/python bench/soak.py --config merged       # one configuration only
    .venv/bin/python bench/soak.py --spark-conf spark.sql.ui.retainedExecutions=10
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import glob
import json
import logging
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from spark_vs_plain import (
    BASE_S,
    JOB_SETTINGS,
    SECOND,
    finish_report,
    log,
    report_header,
    sparktide_job,
    write_json,
)

ROOT = Path(__file__).resolve().parent
DEFAULT_OUT = ROOT / "results" / "soak.json"
MB = 1 << 20
CONFIGS = ("merged", "substreams")
#: Series whose second-half slope is reported (``key`` of a per-batch record → label).
SERIES = {
    "state_bytes": "state bytes",
    "heap_used": "JVM heap used after GC",
    "jvm_rss": "JVM RSS",
    "workers_rss": "Python workers RSS",
    "driver_rss": "driver Python RSS",
    "checkpoint_files": "checkpoint files",
    "ui_jobs": "jobs in Spark's status store",
    "ui_sql_executions": "SQL executions in Spark's status store",
    "accumulators": "live accumulators",
    "py4j_objects": "objects py4j holds",
}


# ---------------------------------------------------------------------- data
def generate(
    directory: Path,
    *,
    events: int,
    files: int,
    devices: int,
    partitions: int,
    file_seconds: int,
    p_late: float,
    p_early: float,
    p_malformed: float,
    seed: int,
) -> dict[str, Any]:
    """Write ``events`` lines over ``files`` JSONL files in arrival order (see the module
    docstring); return what was written, with the exact counts the engine must report."""
    from sparktide.time import format_instant

    def iso(instant: int) -> str | None:  # millisecond precision, like a broker's enqueue
        return format_instant(instant - instant % 1000)

    rng = random.Random(seed)
    random_, randrange = rng.random, rng.randrange
    directory.mkdir(parents=True, exist_ok=True)
    per_file = -(-events // files)
    step = file_seconds * SECOND / per_file
    base = BASE_S * SECOND
    width = len(str(devices - 1))
    counts = {"events": 0, "late": 0, "early": 0, "malformed": 0}
    broken = (
        lambda d, p, e, a: f'{{"device":"dev-{d}","partition":{p},"event_time":"{e}",',
        lambda d, p, e, a: f'{{"device":"dev-{d}","partition":{p},"arrival_time":"{a}"}}',
        lambda d, p, e, a: (
            f'{{"device":"dev-{d}","partition":{p},"event_time":"2026-02-30T25:61:00Z",'
            f'"arrival_time":"{a}","value":1.0}}'
        ),
        lambda d, p, e, a: (
            f'{{"device":"dev-{d}","partition":{p},"event_time":"{e}",'
            f'"arrival_time":"{a}","value":"warm"}}'
        ),
    )
    for f in range(files):
        lines = []
        for i in range(f * per_file, min(events, (f + 1) * per_file)):
            arrival = base + int(i * step)
            draw = random_()
            if draw < p_early:
                lag = -randrange(5 * 60 * SECOND + SECOND, 30 * 60 * SECOND)
            elif draw < p_early + p_late:
                lag = randrange(6 * SECOND, 90 * SECOND)
            else:
                lag = randrange(0, 2 * SECOND)
            device = randrange(devices)
            name = f"{device:0{width}d}"
            partition = device % partitions
            event, arrived = iso(arrival - lag), iso(arrival)
            if random_() < p_malformed:
                counts["malformed"] += 1
                lines.append(broken[randrange(len(broken))](name, partition, event, arrived))
                continue
            counts["early"] += lag < -5 * 60 * SECOND
            counts["late"] += lag > 5 * SECOND
            value = round(20.0 + 5.0 * random_(), 2)
            lines.append(
                f'{{"device":"dev-{name}","partition":{partition},"event_time":"{event}",'
                f'"arrival_time":"{arrived}","value":{value}}}'
            )
        (directory / f"part-{f:05d}.jsonl").write_text("\n".join(lines) + "\n")
        counts["events"] += len(lines)
    size = sum(p.stat().st_size for p in directory.iterdir())
    return {
        **counts,
        "files": files,
        "lines_per_file": per_file,
        "devices": devices,
        "partitions": partitions,
        "arrival_span_s": files * file_seconds,
        "rate_per_s": per_file / file_seconds,
        "mb": round(size / 1e6, 1),
    }


def soak_job(data: Path, work: Path, *, substreams: bool, partitions: int) -> Any:
    """The job of one configuration (outputs under ``work/out``): the benchmark's job
    with the partition column."""
    extra = {"partition": "partition", "partitions": partitions}
    return sparktide_job(data, work, substreams=substreams, source_extra=extra)


# ---------------------------------------------------------------------- probes
def session(cores: int, settings: list[str]) -> Any:
    """sparktide's own local session (what ``sparktide run`` uses, with its limits on what
    Spark's status store retains), plus ``settings`` (``KEY=VALUE``)."""
    from sparktide.spark import local_session

    conf = dict(setting.split("=", 1) for setting in settings)
    spark = local_session(cores, conf=conf)
    assert spark.sparkContext.getConf().get("spark.master") == f"local[{cores}]"
    return spark


def _rss(pid: int | str) -> int | None:
    """Resident set size of a process in bytes (``VmRSS``), None if it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _descendants(root: int) -> list[int]:
    """Every live descendant of process ``root`` (from ``/proc/*/stat``)."""
    children: dict[int, list[int]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat, encoding="ascii", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()  # the command may hold spaces
        children.setdefault(int(fields[1]), []).append(int(stat.split("/")[2]))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


class Probe:
    """Memory of the JVM, its Python workers and this driver, and Spark's retained
    bookkeeping, read through py4j (no Spark job)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        self.jvm = self.sc._jvm
        self.runtime = self.jvm.java.lang.Runtime.getRuntime()
        self.jvm_pid = int(self.jvm.java.lang.ProcessHandle.current().pid())

    def heap_after_gc(self, settle: float = 0.0) -> dict[str, Any]:
        """JVM heap used and committed after a ``System.gc()`` hint, and what it cost.

        With ``settle``, it waits that many seconds and runs a second GC: ``heap_used``
        is then read after the second one and ``heap_used_first`` after the first."""
        gc.collect()
        start = time.perf_counter()
        self.jvm.java.lang.System.gc()
        seconds = time.perf_counter() - start
        total, free = self.runtime.totalMemory(), self.runtime.freeMemory()
        out = {"heap_used": total - free, "heap_committed": total, "gc_s": seconds}
        if settle:
            time.sleep(settle)
            self.jvm.java.lang.System.gc()
            total, free = self.runtime.totalMemory(), self.runtime.freeMemory()
            out.update(heap_used_first=out["heap_used"], heap_used=total - free)
            out["heap_committed"] = total
        return out

    def memory(self) -> dict[str, Any]:
        """Resident memory: the JVM, its Python workers (all its descendants), this driver
        (now and its peak)."""
        workers = [_rss(pid) for pid in _descendants(self.jvm_pid)]
        return {
            "jvm_rss": _rss(self.jvm_pid),
            "workers_rss": sum(r for r in workers if r is not None),
            "workers": sum(r is not None for r in workers),
            "driver_rss": _rss("self"),
            "driver_peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        }

    def histogram(self) -> dict[str, tuple[int, int]]:
        """The JVM heap's live objects by class (``jcmd GC.class_histogram``, which runs a
        full GC first): class name → (instances, bytes); empty if ``jcmd`` fails."""
        try:
            text = subprocess.run(
                ["jcmd", str(self.jvm_pid), "GC.class_histogram"],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return {}
        out: dict[str, tuple[int, int]] = {}
        for line in text.splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[0].endswith(":") and fields[1].isdigit():
                out[fields[3]] = (int(fields[1]), int(fields[2]))
        return out

    def bookkeeping(self) -> dict[str, Any]:
        """Spark's persistent RDDs and their storage memory; how many jobs and SQL executions
        its status store retains (bounded by ``spark.ui.retainedJobs`` and
        ``spark.sql.ui.retainedExecutions``, 1000 each, even with the UI off); live
        accumulators; and the JVM objects py4j keeps referenced for Python."""
        out: dict[str, Any] = {}
        jsc = self.sc._jsc
        with contextlib.suppress(Exception):
            out["persistent_rdds"] = int(jsc.getPersistentRDDs().size())
        with contextlib.suppress(Exception):
            infos = list(jsc.sc().getRDDStorageInfo())
            out["storage_bytes"] = sum(int(i.memSize()) + int(i.diskSize()) for i in infos)
        with contextlib.suppress(Exception):
            out["ui_jobs"] = int(jsc.sc().statusStore().jobsList(None).size())
        with contextlib.suppress(Exception):
            store = self.spark._jsparkSession.sharedState().statusStore()
            out["ui_sql_executions"] = int(store.executionsCount())
        with contextlib.suppress(Exception):  # registered until garbage-collected
            out["accumulators"] = int(self.jvm.org.apache.spark.util.AccumulatorContext.numAccums())
        with contextlib.suppress(Exception):  # JVM objects py4j holds for Python
            gateway = self.sc._gateway.java_gateway_server.getGateway()
            out["py4j_objects"] = int(gateway.getBindings().size())
        return out


def state_of(checkpoint: str, batch: int) -> dict[str, Any]:
    """Bytes on disk (apparent sizes, ``.crc`` files included) and parquet row counts
    (from the footers) of the sparktide state committed for ``batch``."""
    import pyarrow.parquet as pq

    root = Path(checkpoint.removeprefix("file:")) / "sparktide" / "state"
    path = root / str(batch)
    rows: dict[str, int] = {}
    total = 0
    for item in sorted(path.rglob("*")):
        if item.is_file():
            total += item.stat().st_size
        if item.is_file() and item.suffix == ".parquet":
            table = item.relative_to(path).parts[0]
            rows[table] = rows.get(table, 0) + pq.read_metadata(item).num_rows
    for table in (p.name for p in path.iterdir() if p.is_dir()):
        rows.setdefault(table, 0)  # a table written with no rows has no parquet file
    kept = [p for p in root.iterdir() if p.is_dir()]
    return {
        "state_bytes": total,
        "clock_bytes": (path / "clock.json").stat().st_size,
        "rows": dict(sorted(rows.items())),
        "state_dirs_kept": len(kept),
        "state_bytes_all_kept": sum(f.stat().st_size for p in kept for f in p.rglob("*")),
    }


def files_under(directory: str | None) -> dict[str, dict[str, int]]:
    """Files and bytes in each sub-directory of ``directory`` two levels down (the
    checkpoint's ``spark/offsets``, ``sparktide/journal`` ...), or one level (outputs)."""
    if directory is None:
        return {}
    root = Path(directory.removeprefix("file:"))
    out: dict[str, dict[str, int]] = {}
    for file in root.rglob("*"):
        if not file.is_file():
            continue
        parts = file.relative_to(root).parts
        area = "/".join(parts[:2]) if len(parts) > 2 else parts[0] if len(parts) > 1 else "."
        entry = out.setdefault(area, {"files": 0, "bytes": 0})
        entry["files"] += 1
        entry["bytes"] += file.stat().st_size
    return dict(sorted(out.items()))


def histogram_growth(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], top: int = 15
) -> list[dict[str, Any]]:
    """The classes whose live bytes grew most between two heap histograms."""
    rows = []
    for name in before.keys() | after.keys():
        n0, b0 = before.get(name, (0, 0))
        n1, b1 = after.get(name, (0, 0))
        rows.append({"class": name, "bytes": b1 - b0, "instances": n1 - n0, "bytes_after": b1})
    rows.sort(key=lambda r: -r["bytes"])
    return rows[:top]


@contextlib.contextmanager
def measured_engine(after: Callable[[dict[str, Any], float], None]) -> Iterator[None]:
    """Make :func:`sparktide.spark.start` build engines that call ``after(metrics,
    seconds)`` once each :meth:`SparkEngine.process` (micro-batch or flush) has
    returned, when the batch's kept frames have been released."""
    import sparktide.spark.run as run_module

    base = run_module.SparkEngine

    class Measured(base):  # type: ignore[misc, valid-type]
        def process(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            start = time.perf_counter()
            metrics = super().process(*args, **kwargs)
            after(metrics, time.perf_counter() - start)
            return metrics

    run_module.SparkEngine = Measured  # type: ignore[misc]
    try:
        yield
    finally:
        run_module.SparkEngine = base  # type: ignore[misc]


# ---------------------------------------------------------------------- one configuration
def run_config(
    spark: Any,
    probe: Probe,
    data: Path,
    work: Path,
    *,
    config: str,
    args: argparse.Namespace,
    expected: dict[str, Any],
) -> dict[str, Any]:
    """Run one configuration to the end (with flush); per-batch records and the final
    metrics record."""
    from sparktide.spark import run_job

    job = soak_job(data, work, substreams=config == "substreams", partitions=args.partitions)
    checkpoint = job.output.checkpoint
    records: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []  # what on_metrics received
    clock = {"mark": 0.0}  # the end of the previous measurement
    expected_batches = -(-args.files // args.per_trigger)
    # heap histograms at the start of the second half and at the last batch
    snapshots = {expected_batches // 2, expected_batches - 1}
    histograms: dict[int, dict[str, tuple[int, int]]] = {}

    def on_metrics(metrics: dict[str, Any]) -> None:
        seen.append(metrics)

    def after(metrics: dict[str, Any], process_s: float) -> None:
        start = time.perf_counter()
        this = metrics["this_batch"]
        record: dict[str, Any] = {
            "batch": metrics["batch"],
            "flushed": bool(metrics.get("flushed")),
            "events": this["input"],
            "windows_emitted": this["windows_emitted"],
            "dropped": sum(this["dropped"].values()),
            "dead_lettered": sum(this["dead_lettered"].values()),
            "process_s": process_s,
            "wall_s": start - clock["mark"],
            "watermark": metrics["watermark"],
            # the engine's own state gauges (docs/metrics.md), where this version has them
            "gauges": {name: metrics[name] for name in _GAUGES if name in metrics},
        }
        record.update(probe.heap_after_gc(args.settle))
        record.update(probe.memory())
        record.update(probe.bookkeeping())
        record.update(state_of(checkpoint, metrics["batch"]))
        areas = files_under(checkpoint)
        record["checkpoint_areas"] = areas
        record["checkpoint_files"] = sum(v["files"] for v in areas.values())
        record["checkpoint_bytes"] = sum(v["bytes"] for v in areas.values())
        if args.histograms and not record["flushed"] and record["batch"] in snapshots:
            histograms[record["batch"]] = probe.histogram()
        record["measure_s"] = time.perf_counter() - start
        records.append(record)
        clock["mark"] = time.perf_counter()
        if not record["flushed"]:
            log(
                f"  {config} batch {record['batch']}: {record['events']:,} events, "
                f"{record['wall_s']:.1f} s, heap {record['heap_used'] / MB:.0f} MB "
                f"(GC {record['gc_s']:.2f} s), state {record['state_bytes'] / 1e3:.0f} kB "
                f"{record['rows']}"
            )

    probe.heap_after_gc()  # a first full GC, so the one measured next starts settled
    before = {**probe.heap_after_gc(args.settle), **probe.memory(), **probe.bookkeeping()}
    with measured_engine(after):
        start = clock["mark"] = time.perf_counter()
        final = run_job(
            job,
            once=True,
            flush=True,
            spark=spark,
            max_files_per_trigger=args.per_trigger,
            publish=False,
            on_metrics=on_metrics,
        )
        seconds = time.perf_counter() - start
    assert final is not None
    assert len(seen) == len(records), (len(seen), len(records))
    batches = [r for r in records if not r["flushed"]]
    measure = sum(r["measure_s"] for r in records)
    events = sum(r["events"] for r in batches)
    return {
        "config": config,
        "events": events,
        "batches": len(batches),
        "seconds": seconds,
        "measure_seconds": measure,
        "events_per_s": events / (seconds - measure),
        "process_seconds": sum(r["process_s"] for r in batches),
        "gc_seconds_mean": sum(r["gc_s"] for r in records) / len(records),
        "before": before,
        "final_metrics": final,
        "checks": check(job, final, batches, expected),
        "flatness": {key: flatness(batches, key, args.tolerance) for key in SERIES},
        "rows_flatness": {
            table: flatness(
                [{**r, "_rows": r["rows"].get(table, 0)} for r in batches], "_rows", args.tolerance
            )
            for table in sorted({t for r in batches for t in r["rows"]})
        },
        "heap_growth_second_half": (
            {
                "from_batch": min(histograms),
                "to_batch": max(histograms),
                "classes": histogram_growth(
                    histograms[min(histograms)], histograms[max(histograms)]
                ),
            }
            if len(histograms) == 2 and all(histograms.values())
            else None
        ),
        "per_batch": records,
        "output_files": {
            name: sum(v["files"] for v in files_under(getattr(job.output, name)).values())
            for name in ("path", "dead_letter", "metrics")
        },
    }


def check(
    job: Any, final: dict[str, Any], batches: list[dict[str, Any]], expected: dict[str, Any]
) -> dict[str, Any]:
    """The accounting invariant on the final (flushed) metrics record, against the records
    actually written and the counts the generator knows (``expected``)."""
    out = job.output
    windows = in_windows = 0
    for path in glob.glob(f"{out.path}/batch=*/flush=*/*.jsonl"):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    windows += 1
                    in_windows += json.loads(line)["n"]
    dead_lines = 0
    for path in glob.glob(f"{out.dead_letter}/batch=*/flush=*/*.jsonl"):
        with open(path, encoding="utf-8") as handle:
            dead_lines += sum(1 for line in handle if line.strip())
    dropped = sum(final["dropped"].values())
    dead = sum(final["dead_lettered"].values())
    accounted = final["admitted"] + dropped + dead
    in_some_window = final["admitted"] - final["in_no_window"]
    result = {
        "flushed": bool(final.get("flushed")),
        "input": final["input"],
        "admitted": final["admitted"],
        "dropped": final["dropped"],
        "dead_lettered": final["dead_lettered"],
        "in_no_window": final["in_no_window"],
        "accounted": accounted,
        "input_accounted": final["input"] == accounted,
        "window_n_sum": in_windows,
        "admitted_minus_in_no_window": in_some_window,
        "window_n_matches": in_windows == in_some_window,
        "windows_written": windows,
        "windows_emitted": final["windows_emitted"],
        "windows_match": windows == final["windows_emitted"],
        "dead_letter_lines": dead_lines,
        "dead_letters_match": dead_lines == dead,
        "batch_inputs_sum": sum(r["events"] for r in batches),
    }
    result["batch_inputs_match"] = result["batch_inputs_sum"] == final["input"]
    # the parquet row counts read here against the engine's gauges, batch by batch
    result["state_gauges_match"] = all(
        r["rows"].get(table, 0) == r["gauges"][gauge]
        for r in batches
        for gauge, table in _GAUGES.items()
        if gauge in r["gauges"]
    )
    result["matches_generator"] = {
        "input": final["input"] == expected["events"],
        "early": final["early"] == expected["early"],
        "late": final["late"] == expected["late"],
        "malformed": final["dead_lettered"].get("malformed", 0) == expected["malformed"],
    }
    result["ok"] = all(result[k] for k in _CHECKS) and all(result["matches_generator"].values())
    return result


#: The engine's state gauges and the state tables they count.
_GAUGES = {
    "open_windows": "windows",
    "held": "held",
    "window_rows": "rows",
    "substream_keys": "keys",
}
_CHECKS = (
    "flushed",
    "input_accounted",
    "window_n_matches",
    "windows_match",
    "dead_letters_match",
    "batch_inputs_match",
    "state_gauges_match",
)


# ---------------------------------------------------------------------- flatness
def slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares slope of ``ys`` over ``xs`` and its standard error."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if not sxx:
        return 0.0, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    residuals = sum((y - my - b * (x - mx)) ** 2 for x, y in zip(xs, ys, strict=True))
    return b, (residuals / (n - 2) / sxx) ** 0.5 if n > 2 else 0.0


def flatness(batches: list[dict[str, Any]], key: str, tolerance: float) -> dict[str, Any]:
    """First and last values of ``key`` and its slope per batch over the second half of
    ``batches``; flat when the fitted change over that half is within ``tolerance`` of
    the half's mean."""
    points = [(r["batch"], r[key]) for r in batches if r.get(key) is not None]
    if len(points) < 4:
        return {"flat": None}
    half = points[len(points) // 2 :]
    xs, ys = [float(b) for b, _ in half], [float(v) for _, v in half]
    per_batch, stderr = slope(xs, ys)
    mean = sum(ys) / len(ys)
    change = per_batch * (xs[-1] - xs[0])
    return {
        "first": points[0][1],
        "second_half_first": half[0][1],
        "last": points[-1][1],
        "max": max(v for _, v in points),
        "second_half_mean": mean,
        "slope_per_batch": per_batch,
        "slope_stderr": stderr,
        "fitted_change_second_half": change,
        "relative_change": change / mean if mean else None,
        "flat": abs(change) <= tolerance * abs(mean) if mean else change == 0,
    }


# ---------------------------------------------------------------------- reporting
def _fmt(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key in ("state_bytes",):
        return f"{value / 1e3:,.1f} kB"
    if key.endswith("rss") or key.startswith("heap"):
        return f"{value / MB:,.1f} MB"
    return f"{value:,.1f}" if isinstance(value, float) else f"{value:,}"


def print_report(report: dict[str, Any]) -> None:
    """Per-batch and summary tables on standard output."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    for run in report["runs"]:
        table = Table(title=f"{run['config']}: per micro-batch", title_justify="left")
        for name in (
            "batch",
            "events",
            "wall s",
            "GC s",
            "heap MB",
            "JVM RSS MB",
            "workers MB",
            "driver MB",
            "UI jobs",
            "state kB",
            "rows (windows/keys)",
            "ckpt files",
        ):
            table.add_column(name, justify="right")
        for r in run["per_batch"]:
            rows = r["rows"]
            table.add_row(
                ("flush " if r["flushed"] else "") + str(r["batch"]),
                f"{r['events']:,}",
                f"{r['wall_s']:.1f}",
                f"{r['gc_s']:.2f}",
                f"{r['heap_used'] / MB:.0f}",
                f"{(r['jvm_rss'] or 0) / MB:.0f}",
                f"{r['workers_rss'] / MB:.0f}",
                f"{(r['driver_rss'] or 0) / MB:.0f}",
                str(r.get("ui_jobs", "-")),
                f"{r['state_bytes'] / 1e3:.0f}",
                f"{rows.get('windows', 0):,}/{rows.get('keys', '-')}",
                str(r["checkpoint_files"]),
            )
        console.print(table)

    summary = Table(title="Soak summary", title_justify="left")
    summary.add_column("")
    for run in report["runs"]:
        summary.add_column(run["config"], justify="right")
    runs = report["runs"]

    def row(label: str, get: Callable[[dict[str, Any]], str]) -> None:
        summary.add_row(label, *(get(r) for r in runs))

    row("events / micro-batches", lambda r: f"{r['events']:,} / {r['batches']}")
    row("seconds (measurement excluded)", lambda r: f"{r['seconds'] - r['measure_seconds']:.0f}")
    row("events/s", lambda r: f"{r['events_per_s']:,.0f}")
    row("GC hint, mean s", lambda r: f"{r['gc_seconds_mean']:.2f}")
    for key, label in SERIES.items():
        row(
            f"{label}: first → last",
            lambda r, k=key: (
                f"{_fmt(k, r['flatness'][k].get('first'))} → "
                f"{_fmt(k, r['flatness'][k].get('last'))}"
            ),
        )
        row(
            "  slope/batch (2nd half), flat?",
            lambda r, k=key: (
                f"{_fmt(k, r['flatness'][k].get('slope_per_batch'))} "
                f"({_pct(r['flatness'][k].get('relative_change'))}) "
                f"{_verdict(r['flatness'][k])}"
            ),
        )
    tables = sorted({t for r in runs for t in r["rows_flatness"]})
    for table in tables:
        row(
            f"rows {table}: first → last, slope",
            lambda r, t=table: _rows_text(r["rows_flatness"].get(t)),
        )
    row(
        "invariant (input = admitted + dropped + DL)", lambda r: _ok(r["checks"]["input_accounted"])
    )
    row("Σ window n = admitted − in_no_window", lambda r: _ok(r["checks"]["window_n_matches"]))
    row("all checks", lambda r: _ok(r["checks"]["ok"]))
    console.print(summary)
    areas = Table(
        title="checkpoint directories: files (bytes), first → last micro-batch",
        title_justify="left",
    )
    areas.add_column("directory")
    for run in runs:
        areas.add_column(run["config"], justify="right")
    names = sorted({a for r in runs for b in r["per_batch"] for a in b["checkpoint_areas"]})
    for name in names:
        cells = []
        for run in runs:
            batches = [b for b in run["per_batch"] if not b["flushed"]]
            ends = [b["checkpoint_areas"].get(name, {"files": 0, "bytes": 0}) for b in batches]
            cells.append(
                f"{ends[0]['files']} ({ends[0]['bytes']:,}) → {ends[-1]['files']} "
                f"({ends[-1]['bytes']:,})"
            )
        areas.add_row(name, *cells)
    console.print(areas)
    for run in runs:
        growth = run.get("heap_growth_second_half")
        if not growth:
            continue
        table = Table(
            title=f"{run['config']}: live heap growth by class, batch {growth['from_batch']} → "
            f"{growth['to_batch']} (jcmd GC.class_histogram)",
            title_justify="left",
        )
        for name in ("class", "bytes", "instances", "bytes at the end"):
            table.add_column(name, justify="left" if name == "class" else "right")
        for entry in growth["classes"][:10]:
            table.add_row(
                entry["class"],
                f"{entry['bytes']:+,}",
                f"{entry['instances']:+,}",
                f"{entry['bytes_after']:,}",
            )
        console.print(table)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%} over 2nd half"


def _verdict(flat: dict[str, Any]) -> str:
    if flat.get("flat") is None:
        return "-"
    if flat["flat"]:
        return "flat"
    return "GROWS" if flat["slope_per_batch"] > 0 else "falls"


def _ok(value: bool) -> str:
    return "ok" if value else "FAILED"


def _rows_text(flat: dict[str, Any] | None) -> str:
    if not flat or flat.get("flat") is None:
        return "-"
    return (
        f"{flat['first']:,} → {flat['last']:,}, {flat['slope_per_batch']:+,.1f}/batch "
        f"{_verdict(flat)}"
    )


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=3_000_000, help="events (3,000,000)")
    parser.add_argument("--files", type=int, default=60, help="input files (60)")
    parser.add_argument("--per-trigger", type=int, default=2, help="files per micro-batch (2)")
    parser.add_argument("--devices", type=int, default=10_000, help="devices (10,000)")
    parser.add_argument("--partitions", type=int, default=4, help="input partitions (4)")
    parser.add_argument("--file-seconds", type=int, default=60, help="arrival s per file (60)")
    parser.add_argument("--late", type=float, default=0.05, help="late share (0.05)")
    parser.add_argument("--early", type=float, default=0.001, help="early share (0.001)")
    parser.add_argument("--malformed", type=float, default=0.0002, help="malformed (0.0002)")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.05,
        help="flat: fitted change over the 2nd half within this share of its mean (0.05)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=1.0,
        help="seconds to wait before a second GC whose heap figure is kept (1; 0: one GC)",
    )
    parser.add_argument("--config", choices=CONFIGS, nargs="+", default=list(CONFIGS))
    parser.add_argument(
        "--no-histograms",
        dest="histograms",
        action="store_false",
        help="skip the two JVM heap histograms per configuration (jcmd)",
    )
    parser.add_argument(
        "--spark-conf",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark settings for the session (e.g. spark.ui.retainedJobs=50)",
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None, help="scratch directory (temp)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    args = parser.parse_args(argv)
    batches = -(-args.files // args.per_trigger)
    if batches < 30:
        log(f"note: {batches} micro-batches (fewer than 30): slopes will be rough")

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # the engine logs each batch's diagnostics (late input) as warnings: not measured here
    logging.getLogger("sparktide").setLevel(logging.ERROR)
    work = args.work or Path(tempfile.mkdtemp(prefix="sparktide-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    report = report_header(
        "soak",
        args,
        **JOB_SETTINGS,
    )
    try:
        data = work / "data"
        t0 = time.perf_counter()
        report["data"] = generate(
            data,
            events=args.events,
            files=args.files,
            devices=args.devices,
            partitions=args.partitions,
            file_seconds=args.file_seconds,
            p_late=args.late,
            p_early=args.early,
            p_malformed=args.malformed,
            seed=args.seed,
        )
        log(f"data: {report['data']} in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        spark = session(args.cores, args.spark_conf)
        report["session_seconds"] = time.perf_counter() - t0
        import pyspark

        report["pyspark"] = pyspark.__version__
        report["jvm_max_heap"] = int(
            spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
        )
        probe = Probe(spark)
        conf = spark.sparkContext.getConf()
        report["retention"] = {
            key: conf.get(key, default)
            for key, default in (
                ("spark.ui.retainedJobs", "1000"),
                ("spark.ui.retainedStages", "1000"),
                ("spark.sql.ui.retainedExecutions", "1000"),
                ("spark.sql.streaming.minBatchesToRetain", "100"),
            )
        }
        log(f"session up in {report['session_seconds']:.1f} s; work dir {work}")
        for config in args.config:
            run = run_config(
                spark, probe, data, work / config, config=config, args=args, expected=report["data"]
            )
            report["runs"].append(run)
            log(
                f"{config}: {run['events']:,} events in {run['batches']} batches, "
                f"{run['events_per_s']:,.0f} ev/s; checks {run['checks']}"
            )
            write_json(args.out, report)
            if not args.keep:
                shutil.rmtree(work / config, ignore_errors=True)
        finish_report(args.out, report, print_report)
    finally:
        if args.work is None and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
