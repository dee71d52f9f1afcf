"""Metrics and diagnostics on Spark: equal to ``simulate``'s, and published to listeners."""

from __future__ import annotations

import json
import time
from pathlib import Path

from pyspark.sql.streaming import StreamingQueryListener

from sparktide.spark import run_job
from sparktide.time import SECOND, format_instant
from tests.spark.streams import BASE, clock, file_batches, job_for, reference


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
    written = sorted(Path(job.output.metrics).glob("batch=*.json"))
    assert [json.loads(p.read_text()) for p in written] == records

    # the same counters and diagnostics as the reference engine at the same times
    expected = reference(job, file_batches(job.output.checkpoint), flush=False).metrics
    for name in ("input", "late", "windows_emitted", "watermark", "open_windows"):
        assert last[name] == expected[name], name
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
    for name in ("input", "late", "windows_emitted", "released", "watermark"):
        assert observed[name] == last[name], name
    assert observed["this_batch"]["late"] == 2
    assert observed["dropped"] == last["dropped"]
    assert [p["partition"] for p in observed["partitions"]] == ["0", "1"]
    assert [d["kind"] for d in observed["diagnostics"]] == kinds
