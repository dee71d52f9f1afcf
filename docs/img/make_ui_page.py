"""Take the screenshot of the live page in README.md and docs/metrics.md:
``python docs/img/make_ui_page.py`` (needs Spark, Playwright and /usr/bin/chromium).

The telemetry example (examples/telemetry: three partitions, late readings, a fast
clock, malformed lines) cut into 20-second slices of arrival time, one file a slice, is
run on local Spark one file per micro-batch with a 1-minute tumbling count (processing
time: the slice's end plus 2 s). Then ``sparktide ui``'s server serves the run's metrics
and dead letters, and headless Chromium takes the page.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from sparktide.job import Job
from sparktide.spark import run_job
from sparktide.time import SECOND, parse_instant
from sparktide.ui import serve_directory

HERE = Path(__file__).resolve().parent
EVENTS = HERE.parent.parent / "examples" / "telemetry" / "events"
SLICE = 20 * SECOND


def _slices(into: Path) -> int:
    """The example's lines, cut by arrival time into files; how many files."""
    rows = []
    for path in sorted(EVENTS.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                arrival = parse_instant(json.loads(line)["arrival_time"])
            except (ValueError, KeyError, TypeError, AttributeError):
                arrival = None
            rows.append((arrival, line))
    known = [a for a, _ in rows if a is not None]
    first = min(known)
    into.mkdir(parents=True)
    files: dict[int, list[str]] = {}
    for arrival, line in rows:  # (a line without an arrival time goes with the first)
        files.setdefault(0 if arrival is None else (arrival - first) // SLICE, []).append(line)
    for n, lines in sorted(files.items()):
        (into / f"slice-{n:03d}.jsonl").write_text("\n".join(lines) + "\n")
    global START
    START = first
    return len(files)


START = 0


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _slices(root / "in")
        names = sorted(p.name for p in (root / "in").iterdir())
        job = Job.from_dict(
            {
                "source": {
                    "path": "in",
                    "timestamp_by": "event_time",
                    "arrival_time": "arrival_time",
                    "partition": "partition",
                    "partitions": 3,
                },
                "ordering": {
                    "late_arrival": "10s",
                    "out_of_order": "5s",
                    "early_arrival": "5m",
                    "action": "adjust",
                },
                "window": {"type": "tumbling", "size": "1m", "aggregates": {"n": "count(*)"}},
                "output": {
                    "path": "out/windows",
                    "dead_letter": "out/dead_letter",
                    "metrics": "out/metrics",
                    "checkpoint": "telemetry/checkpoint",
                },
            },
            base_dir=root,
        )
        slices = [int(n.removeprefix("slice-").removesuffix(".jsonl")) for n in names]
        run_job(
            job,
            once=True,
            max_files_per_trigger=1,
            clock=lambda b: START + (slices[min(b, len(slices) - 1)] + 1) * SLICE + 2 * SECOND,
            publish=False,
        )
        server, follower = serve_directory(
            str(root / "out" / "metrics"),
            "0",
            job="telemetry",
            dead_letter=str(root / "out" / "dead_letter"),
        )
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(server.url)
                page.wait_for_selector("#status[data-batch]")
                page.wait_for_timeout(500)
                page.screenshot(path=str(HERE / "ui-page.png"), full_page=True)
                browser.close()
        finally:
            follower.stop()
            server.stop()
    print(HERE / "ui-page.png")


if __name__ == "__main__":
    main()
