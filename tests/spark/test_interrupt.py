"""Ctrl-C on a continuous ``sparktide run`` stops it cleanly: exit 0, the last metrics
record printed, no traceback, and the checkpoint ready to resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.spark.streams import write_stream


def _job_file(tmp_path) -> None:
    write_stream(tmp_path / "in", seed=7, events=40, files=2)
    (tmp_path / "job.toml").write_text(
        "[source]\n"
        'path = "in"\ntimestamp_by = "t"\narrival_time = "a"\npartition = "partition"\n'
        '[window]\ntype = "tumbling"\nsize = "1m"\naggregates = { n = "count(*)" }\n'
        "[output]\n"
        'path = "out/events"\nmetrics = "out/metrics"\ncheckpoint = "out/checkpoint"\n'
    )


def _run_and_stop(tmp_path, stop: signal.Signals, *options: str) -> tuple[str, str, int]:
    """Start ``sparktide run`` continuous, send ``stop`` once it has run a batch."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sparktide.cli", "run", "job.toml", *options],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = tmp_path / "out" / "metrics" / "batch=000000000.jsonl"
        deadline = time.monotonic() + 120
        while not first.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert first.exists(), "the run wrote no metrics"
        time.sleep(1.5)  # idle now: batches with no data, one a trigger
        process.send_signal(stop)
        out, err = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return out, err, process.returncode


@pytest.mark.jvm(4)  # ``sparktide run`` in a child process
def test_ctrl_c_stops_a_continuous_run_cleanly(tmp_path):
    """Ctrl-C: exit 0, the last metrics printed, no traceback; without ``--flush`` the
    open windows stay in the checkpoint for the next run."""
    _job_file(tmp_path)
    out, err, code = _run_and_stop(tmp_path, signal.SIGINT, "--trigger", "1 second")
    assert code == 0, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    last = json.loads(out.splitlines()[-1])
    assert last["type"] == "metrics" and last["input"] == 40 + 3  # 3 malformed lines
    assert not last["flushed"] and last["open_windows"] > 0


@pytest.mark.jvm(4)  # ``sparktide run`` in a child process
def test_sigterm_with_flush_closes_every_window(tmp_path):
    """SIGTERM stops the run as Ctrl-C does; with ``--flush`` (or ``[output]
    flush_on_stop``) the stop is StreamInsight's final CTI: every window closes."""
    _job_file(tmp_path)
    out, err, code = _run_and_stop(tmp_path, signal.SIGTERM, "--flush")
    assert code == 0, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    last = json.loads(out.splitlines()[-1])
    assert last["flushed"] and last["open_windows"] == 0
    windows = [
        json.loads(line)
        for path in (tmp_path / "out" / "events").rglob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert sum(w["n"] for w in windows) == last["admitted"] > 0
