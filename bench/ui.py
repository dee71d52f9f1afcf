"""Benchmark: what serving the live page and ``/metrics`` costs a running job.

This is a measurement, not a test: nothing here asserts on timings.

A job (two partitions, a 5-second tumbling count) reads ``--files`` JSONL files of
``--events`` events each, one file per micro-batch on a 100-millisecond trigger (10
micro-batches a second when a batch takes less). It runs alternately without the
server and with it (``start(..., ui="0")``) while a page polls it as the browser does
(a long poll of ``/state`` answered after every micro-batch, on one kept-alive
connection as a browser's) and a Prometheus scrape
reads ``/metrics`` every ``--scrape`` seconds; ``--rounds`` of each, a fresh checkpoint
every run. Throughput is events per second from the end of the first micro-batch
(start-up) to the end of the last; the cost is the median with the server against the
median without. Over the same stretch: this Python process's CPU per micro-batch (the
driver's share of each batch, plus, with the server, the server's and the polling
page's threads, which run in this process too).

First, in-process with no Spark, the driver's own work with the page open, over
records of 2, 32 and 256 partitions: per micro-batch, feeding the record and the page's
answer (``/state`` after one more record), against the 100-millisecond trigger; per
scrape, one ``/metrics`` exposition (made once per record, whoever scrapes).

Results are printed and written as JSON to ``bench/results/ui.json``.

    .venv/bin/python bench/ui.py [--files 60] [--events 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sparktide.job import Job
from sparktide.spark import local_session, start
from sparktide.time import SECOND, format_instant, parse_instant

RESULTS = Path(__file__).parent / "results" / "ui.json"
BASE = parse_instant("2026-03-01T09:00:00Z")


def _job(root: Path, files: int, events: int) -> Job:
    """The job and its input: ``files`` files of ``events`` events, 10 ms apart."""
    (root / "in").mkdir(parents=True)
    n = 0
    for f in range(files):
        lines = []
        for _ in range(events):
            t = BASE + n * 10_000
            lines.append(
                json.dumps({"t": format_instant(t), "a": format_instant(t + SECOND), "p": n % 2})
            )
            n += 1
        (root / "in" / f"part-{f:04d}.jsonl").write_text("\n".join(lines) + "\n")
    return Job.from_dict(
        {
            "source": {"path": "in", "timestamp_by": "t", "arrival_time": "a", "partition": "p"},
            "ordering": {"late_arrival": "3s"},
            "window": {"type": "tumbling", "size": "5s", "aggregates": {"n": "count(*)"}},
            "output": {
                "path": "out/results",
                "dead_letter": "out/dead_letter",
                "checkpoint": "out/checkpoint",
            },
        },
        base_dir=root,
    )


def _page_and_scraper(url: str, scrape: float, stop: threading.Event) -> list[threading.Thread]:
    """A browser's poll of ``/state`` (long polls, one answer per record) and a
    Prometheus scrape of ``/metrics`` every ``scrape`` seconds, in threads."""

    def page() -> None:  # (as page.html polls: 100 ms after each answer, one connection)
        where = urlsplit(url)
        connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
        path = "/state"
        try:
            while True:
                connection.request("GET", path)
                state = json.loads(connection.getresponse().read())
                if stop.wait(0.1) or state["ended"]:
                    return
                path = f"/state?after={state['seq']}"
        except OSError:  # (the query ended during a poll)
            return
        finally:
            connection.close()

    def scraper() -> None:
        while not stop.wait(scrape):
            try:
                urllib.request.urlopen(url + "metrics", timeout=30).read()
            except OSError:  # (the query ended between two scrapes)
                return

    threads = [threading.Thread(target=page, daemon=True), threading.Thread(target=scraper)]
    for thread in threads:
        thread.start()
    return threads


def _python_cpu() -> float:
    """CPU seconds of this Python process so far (every thread: the driver's batches,
    the server's and the page's)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _run(spark: Any, files: int, events: int, *, ui: bool, scrape: float) -> dict[str, float]:
    """One run: events per second after the first micro-batch, batches per second, and
    this Python process's CPU milliseconds per micro-batch over the same stretch."""
    with tempfile.TemporaryDirectory() as tmp:
        job = _job(Path(tmp), files, events)
        ends: list[float] = []
        done = threading.Event()

        cpu: list[float] = []

        def on_metrics(record: dict[str, Any]) -> None:
            ends.append(time.perf_counter())
            cpu.append(_python_cpu())
            if len(ends) >= files:
                done.set()

        query = start(
            spark,
            job,
            processing_time="100 milliseconds",
            max_files_per_trigger=1,
            on_metrics=on_metrics,
            ui="0" if ui else None,
        )
        stop = threading.Event()
        threads = _page_and_scraper(query.ui.url, scrape, stop) if ui else []
        done.wait(900)
        stop.set()
        query.stop()
        for thread in threads:
            thread.join(30)
    batches = ends[:files]
    seconds = batches[-1] - batches[0]
    return {
        "events_per_s": (len(batches) - 1) * events / seconds,
        "batches_per_s": (len(batches) - 1) / seconds,
        "python_cpu_ms_per_batch": (cpu[files - 1] - cpu[0]) / (len(batches) - 1) * 1000,
    }


def _driver_share(partitions: int, records: int = 300) -> dict[str, float]:
    """Microseconds of driver work per micro-batch with the page open: feed, the page's
    answer, one exposition; no Spark."""
    from prometheus_client import generate_latest

    from sparktide.ui.prom import registry_of
    from sparktide.ui.state import LiveState

    state = LiveState("bench")
    registry = registry_of(state)
    parts = [
        {
            "partition": str(p),
            "input": 1000,
            "admitted": 990,
            "late": 5,
            "early": 0,
            "out_of_order": 2,
            "adjusted": 5,
            "dropped": {"late": 3},
            "dead_lettered": {"out_of_order": 2},
            "arrival_clock": "2026-03-01T09:00:10.5Z",
            "watermark": "2026-03-01T09:00:07.5Z",
        }
        for p in range(partitions)
    ]
    this = {"input": 2000, "admitted": 1990, "dropped": {"late": 3}, "dead_lettered": {}}
    record = {
        "type": "metrics",
        "input": 2000 * partitions,
        "admitted": 1990 * partitions,
        "dropped": {"late": 3},
        "dead_lettered": {"malformed": 1},
        "processing_time": "2026-03-01T09:00:11Z",
        "watermark": "2026-03-01T09:00:07.5Z",
        "watermark_delay_us": 3_500_000,
        "output_watermark": "2026-03-01T09:00:05Z",
        "open_windows": 4,
        "partitions": parts,
        "this_batch": this,
        "diagnostics": [],
    }
    started = time.perf_counter()
    for batch in range(records):
        state({**record, "batch": batch})
        json.dumps(state.snapshot(state.seq - 1))
    page = (time.perf_counter() - started) / records * 1e6
    started = time.perf_counter()
    for _ in range(records // 10):
        generate_latest(registry)
    scrape = (time.perf_counter() - started) / (records // 10) * 1e6
    return {"partitions": partitions, "page_us_per_batch": page, "metrics_us_per_scrape": scrape}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scrape", type=float, default=1.0)
    parser.add_argument("--skip-spark", action="store_true", help="the driver's share only")
    args = parser.parse_args()
    out: dict[str, Any] = {
        "driver_share": [_driver_share(n) for n in (2, 32, 256)],
        "trigger_ms": 100,
    }
    for share in out["driver_share"]:
        print(
            f"{share['partitions']} partitions: the page's answer {share['page_us_per_batch']:.0f}"
            f" µs per batch ({share['page_us_per_batch'] / 1000:.2f}% of 100 ms), /metrics "
            f"{share['metrics_us_per_scrape']:.0f} µs per scrape"
        )
    if not args.skip_spark:
        spark = local_session()
        _run(spark, 5, args.events, ui=False, scrape=args.scrape)  # (warm-up)
        runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
        for _ in range(args.rounds):
            for mode in ("off", "on"):
                run = _run(spark, args.files, args.events, ui=mode == "on", scrape=args.scrape)
                runs[mode].append(run)
                print(mode, {k: round(v, 1) for k, v in run.items()})
        off = statistics.median(r["events_per_s"] for r in runs["off"])
        on = statistics.median(r["events_per_s"] for r in runs["on"])
        for mode in ("off", "on"):
            out[f"python_cpu_ms_per_batch_{mode}"] = statistics.median(
                r["python_cpu_ms_per_batch"] for r in runs[mode]
            )
        print(
            "Python CPU per micro-batch without the server "
            f"{out['python_cpu_ms_per_batch_off']:.1f} ms, with it "
            f"{out['python_cpu_ms_per_batch_on']:.1f} ms"
        )
        out.update(
            runs=runs,
            files=args.files,
            events_per_file=args.events,
            events_per_s_off=off,
            events_per_s_on=on,
            cost_percent=(off - on) / off * 100,
        )
        print(
            f"throughput without the server {off:,.0f} events/s, with it {on:,.0f}: "
            f"cost {out['cost_percent']:.1f}%"
        )
        spark.stop()
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
