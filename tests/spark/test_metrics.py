"""Metrics and diagnostics on Spark: equal to ``simulate``'s, and published to listeners."""

from __future__ import annotations

import json
import time
from pathlib import Path

from pyspark.sql.streaming import StreamingQueryListener

from sparktide.core.engine import simulate
from sparktide.core.instants import NEG_INF
from sparktide.job import Job
from sparktide.reader import job_records
from sparktide.spark import run_job
from sparktide.time import SECOND, format_instant, parse_instant
from tests.spark.streams import BASE, clock, file_batches, job_for, metrics_of_once_run, reference


def _write_rows(directory: Path, files: list[list[dict]]) -> None:
    """One JSONL file per list, times (µs) written as ISO text."""
    directory.mkdir(parents=True)
    for n, rows in enumerate(files):
        text = "".join(
            json.dumps({**r, "t": format_instant(r["t"]), "a": format_instant(r["a"])}) + "\n"
            for r in rows
        )
        (directory / f"part-{n}.jsonl").write_text(text)


def _windows_by_batch(directory: str) -> dict[int, list[dict]]:
    """The window records the Spark engine wrote, by micro-batch."""
    out: dict[int, list[dict]] = {}
    for path in sorted(Path(directory).glob("batch=*/flush=0/*.jsonl")):
        batch = int(path.parent.parent.name.removeprefix("batch="))
        lines = path.read_text().split("\n")
        out.setdefault(batch, []).extend(json.loads(line) for line in lines if line.strip())
    return out


def _assert_output_watermark_holds(records: list[dict], windows: dict[int, list[dict]]) -> None:
    """``output_watermark`` never goes back, and every window a later micro-batch writes
    starts at or after it."""
    values = [r["output_watermark"] for r in records]
    instants = [NEG_INF if v is None else parse_instant(v) for v in values]
    assert instants == sorted(instants), values
    for record in records:
        if record["output_watermark"] is None:
            continue
        hold = parse_instant(record["output_watermark"])
        for batch, written in windows.items():
            if batch > record["batch"]:
                assert all(parse_instant(w["window_start"]) >= hold for w in written), batch


def _reference_at(job: Job, batches: dict[str, int], batch: int) -> dict:
    """The reference engine's metrics after the records of micro-batches 0 … ``batch``,
    observed at the same times (no flush)."""
    records = [r for r in job_records(job) if batches[r.file] <= batch]
    for record in records:
        record.processing_time = clock(batches[record.file])
    return simulate(job, records, flush=False, timers_at_due=False, explain=False).metrics


def _write(directory: Path) -> None:
    """Three files, one micro-batch each: partitions 0 and 1 deliver in the first;
    then only partition 0, whose last file holds two late events (arrival − event
    time > 5 s). Partition 1's watermark stays behind: it is not progressing."""
    directory.mkdir(parents=True)
    files: list[list[dict]] = [[], [], []]
    for i in range(6):
        a = BASE + i * SECOND
        files[0].append({"id": i, "p": i % 2, "t": a, "a": a, "v": i})
    for i in range(6, 12):
        a = BASE + i * 4 * SECOND
        files[1].append({"id": i, "p": 0, "t": a, "a": a, "v": i})
    for i in range(12, 18):
        a = BASE + i * 4 * SECOND
        t = a - (20 * SECOND if i in (14, 16) else 0)
        files[2].append({"id": i, "p": 0, "t": t, "a": a, "v": i})
    for n, rows in enumerate(files):
        text = "".join(
            json.dumps({**r, "t": format_instant(r["t"]), "a": format_instant(r["a"])}) + "\n"
            for r in rows
        )
        (directory / f"part-{n}.jsonl").write_text(text)


class _Progress(StreamingQueryListener):
    """Collects the observed metrics ``sparktide`` of sparktide's metrics publisher."""

    def __init__(self) -> None:
        self.seen: list[dict] = []

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = event.progress
        if progress.name and progress.name.startswith("sparktide-metrics:"):
            row = progress.observedMetrics.get("sparktide")
            if row is not None and row["records"]:
                self.seen.append(row.asDict(recursive=True))

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass


def _plain(diagnostics: list[dict]) -> list[dict]:
    """Diagnostics with partitions as text (Spark keeps partition ids as strings)."""
    out = []
    for d in diagnostics:
        d = json.loads(json.dumps(d))
        if "partition" in d:
            d["partition"] = str(d["partition"])
        if "example" in d:
            d["example"]["partition"] = str(d["example"]["partition"])
        out.append(d)
    return out


def test_metrics_diagnostics_and_listener(spark, tmp_path):
    _write(tmp_path / "in")
    job = job_for(
        tmp_path,
        {
            "source": {"partition": "p"},
            "ordering": {"late_arrival": "5s", "out_of_order": "0s"},
            "window": {"type": "tumbling", "size": "10s", "aggregates": {"n": "count(*)"}},
        },
    )
    listener = _Progress()
    spark.streams.addListener(listener)
    records: list[dict] = []
    try:
        last = run_job(
            job,
            once=True,
            spark=spark,
            max_files_per_trigger=1,
            clock=clock,
            on_metrics=records.append,
        )
        deadline = time.monotonic() + 30
        while not listener.seen and time.monotonic() < deadline:
            time.sleep(0.2)  # the listener bus delivers asynchronously
    finally:
        spark.streams.removeListener(listener)
    assert last is not None
    assert [r["batch"] for r in records] == [0, 1, 2]
    assert records[-1] == last
    assert [r["this_batch"]["input"] for r in records] == [6, 6, 6]
    assert [r["this_batch"]["late"] for r in records] == [0, 0, 2]
    assert sum(r["this_batch"]["windows_emitted"] for r in records) == last["windows_emitted"] > 0
    # the metrics files are the records
    written = sorted(Path(job.output.metrics).glob("batch=*.jsonl"))
    assert [json.loads(p.read_text()) for p in written] == records

    # the same counters and diagnostics as the reference engine at the same times
    expected = reference(job, file_batches(job.output.checkpoint), flush=False).metrics
    for name in ("input", "late", "windows_emitted", "watermark", "open_windows"):
        assert last[name] == expected[name], name
    # the hold (semantics §7): the same as simulate's, kept by the windows of later batches
    assert last["output_watermark"] == expected["output_watermark"] is not None
    _assert_output_watermark_holds(records, _windows_by_batch(job.output.path))
    assert last["open_windows"] > 0  # flush=False: windows stay open
    kinds = [d["kind"] for d in last["diagnostics"]]
    assert kinds == ["late_input", "partition_not_progressing"]
    assert _plain(last["diagnostics"]) == _plain(expected["diagnostics"])
    late, stuck = last["diagnostics"]
    assert late["count"] == 2
    assert late["example"]["line"] == 3  # id 14, the first late event in arrival order
    assert stuck["partition"] == "1" and "partitioned = true" in stuck["message"]

    # published as Spark observed metrics, readable by a StreamingQueryListener
    assert listener.seen, "no progress of the metrics publisher reached the listener"
    observed = listener.seen[-1]
    assert observed["batch"] == 2
    for name in ("input", "late", "windows_emitted", "released", "watermark", "output_watermark"):
        assert observed[name] == last[name], name
    assert observed["this_batch"]["late"] == 2
    assert observed["dropped"] == last["dropped"]
    assert [p["partition"] for p in observed["partitions"]] == ["0", "1"]
    assert [d["kind"] for d in observed["diagnostics"]] == kinds


def test_output_watermark_of_substreams_follows_the_floor(spark, tmp_path):
    """Substreams: ``run`` reports the floor (arrival clock − L) as ``watermark``,
    ``simulate`` the lowest key watermark; both hold ``output_watermark`` at the floor's
    (a key seen for the first time starts there), so they agree on it in every batch.

    Hopping 10 s / 5 s, L = 5 s, O = 0, one file per micro-batch (times after BASE):
    batch 0: key a at 0 … 20 s (arrival = event time): floor 15 s, W(a) 20 s;
    batch 1: key a at 24, 28, 32 s; key b, new, at 30 s arriving at 33 s (3 s late, within
    L): floor 28 s, W(b) 30 s, W(a) 32 s;
    batch 2: keys a and b at 38 and 40 s: floor 35 s, both keys at 40 s.
    output_watermark: E = floor, the first start on the 5 s grid with start + 10 s > E:
    10 s, 20 s, 30 s; from simulate's watermark (20, 30, 40 s) it would be 15, 25, 35 s.
    """
    second = SECOND
    files: list[list[dict]] = [[], [], []]
    for i, t in enumerate(range(0, 21, 4)):
        files[0].append({"id": i, "k": "a", "t": BASE + t * second, "a": BASE + t * second})
    for i, t in enumerate((24, 28, 32)):
        files[1].append({"id": 10 + i, "k": "a", "t": BASE + t * second, "a": BASE + t * second})
    files[1].append({"id": 20, "k": "b", "t": BASE + 30 * second, "a": BASE + 33 * second})
    for i, (k, t) in enumerate((("a", 38), ("b", 38), ("a", 40), ("b", 40))):
        files[2].append({"id": 30 + i, "k": k, "t": BASE + t * second, "a": BASE + t * second})
    _write_rows(tmp_path / "in", files)
    job = job_for(
        tmp_path,
        {
            "source": {"over": "k"},
            "ordering": {"late_arrival": "5s", "out_of_order": "0s"},
            "window": {
                "type": "hopping",
                "size": "10s",
                "hop": "5s",
                "group_by": ["k"],
                "aggregates": {"n": "count(*)"},
            },
        },
    )
    records = metrics_of_once_run(spark, job)
    batches = file_batches(job.output.checkpoint)
    assert [r["batch"] for r in records] == [0, 1, 2]
    at = [format_instant(BASE + s * second) for s in (15, 28, 35)]
    assert [r["watermark"] for r in records] == at  # run: the floor
    expected = [_reference_at(job, batches, b) for b in range(3)]
    lowest = [format_instant(BASE + s * second) for s in (20, 30, 40)]
    assert [m["watermark"] for m in expected] == lowest  # simulate: the lowest key's
    holds = [format_instant(BASE + s * second) for s in (10, 20, 30)]
    assert [r["output_watermark"] for r in records] == holds
    assert [m["output_watermark"] for m in expected] == holds
    _assert_output_watermark_holds(records, _windows_by_batch(job.output.path))


def test_a_misspelled_time_column_is_a_diagnostic_of_each_batch(spark, tmp_path):
    """``timestamp_by`` names a column the input lacks: every record of every batch is
    dead-lettered as malformed, and each batch's metrics say so, as ``simulate``'s do."""
    _write(tmp_path / "in")
    job = job_for(tmp_path, {"source": {"partition": "p", "timestamp_by": "event_tme"}})
    records = metrics_of_once_run(spark, job)
    assert [r["this_batch"]["dead_lettered"] for r in records] == [{"malformed": 6}] * 3
    for record in records:
        (only,) = [d for d in record["diagnostics"] if d["kind"] == "all_dead_lettered"]
        assert only["count"] == 6 and only["reason"] == "malformed"
        assert only["message"].startswith("all 6 input records were dead-lettered (malformed)")
    expected = reference(job, file_batches(job.output.checkpoint), flush=False).metrics
    (whole,) = [d for d in expected["diagnostics"] if d["kind"] == "all_dead_lettered"]
    assert whole["count"] == 18 and whole["reason"] == "malformed"


class _Batches(StreamingQueryListener):
    """Every metrics record one job's publisher (``name``) reports in ``batches``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[dict] = []

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = event.progress
        if progress.name == self.name:
            row = progress.observedMetrics.get("sparktide")
            if row is not None:
                self.seen += [r.asDict(recursive=True) for r in row["batches"] or []]

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass


def test_a_listener_sees_every_batch_once_across_a_restart(spark, tmp_path):
    """Issue 27.4: two runs of one job (a restart between, then a flush), two files a run,
    one file a micro-batch: a listener on the metrics publisher gets every batch's
    record exactly once, its ``this_batch`` as written — batch 0's too, though one
    progress covers both records of a ``--once`` run."""
    _write(tmp_path / "in")  # part-0 … part-2
    extra = tmp_path / "in" / "part-2.jsonl"
    held = extra.read_text()
    extra.unlink()  # (the second run's)
    job = job_for(
        tmp_path,
        {
            "source": {"partition": "p"},
            "window": {"type": "tumbling", "size": "10s", "aggregates": {"n": "count(*)"}},
        },
    )
    listener = _Batches(f"sparktide-metrics:{job.output.checkpoint}")
    spark.streams.addListener(listener)
    records: list[dict] = []
    try:
        for flush in (False, True):
            run_job(
                job,
                once=True,
                flush=flush,
                spark=spark,
                max_files_per_trigger=1,
                clock=clock,
                on_metrics=records.append,
            )
            extra.write_text(held)
        want = sorted((r["batch"], r["flushed"]) for r in records)
        assert want == [(0, False), (1, False), (2, False), (2, True)]
        deadline = time.monotonic() + 30
        while len(listener.seen) < len(want) and time.monotonic() < deadline:
            time.sleep(0.2)  # the listener bus delivers asynchronously
        time.sleep(0.5)  # (a duplicate would come with the rest)
    finally:
        spark.streams.removeListener(listener)
    got = sorted((r["batch"], r["flushed"]) for r in listener.seen)
    assert got == want  # every batch, once
    by_batch = {(r["batch"], r["flushed"]): r["this_batch"] for r in records}
    for seen in listener.seen:
        written = by_batch[(seen["batch"], seen["flushed"])]
        assert {k: written[k] for k in seen["this_batch"]} == seen["this_batch"]
    assert [r["this_batch"]["input"] for r in records] == [6, 6, 6, 0]
