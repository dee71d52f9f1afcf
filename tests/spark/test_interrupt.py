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


@pytest.mark.jvm(4)  # ``sparktide run`` in a child process
def test_ctrl_c_stops_a_continuous_run_cleanly(tmp_path):
    write_stream(tmp_path / "in", seed=7, events=40, files=2)
    (tmp_path / "job.toml").write_text(
        "[source]\n"
        'path = "in"\ntimestamp_by = "t"\narrival_time = "a"\npartition = "partition"\n'
        "[output]\n"
        'path = "out/events"\nmetrics = "out/metrics"\ncheckpoint = "out/checkpoint"\n'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "sparktide.cli", "run", "job.toml", "--trigger", "1 second"],
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
        time.sleep(1.5)  # idle now: the query waits for the next trigger
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    last = json.loads(out.splitlines()[-1])
    assert last["type"] == "metrics" and last["input"] == 40 + 3  # 3 malformed lines
