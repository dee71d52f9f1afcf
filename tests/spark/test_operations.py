"""Operational faults (issue 6): a checkpoint in use, a checkpoint from another job, an
output that cannot be written — each refused or reported clearly, and the job resumes
correctly once the cause is gone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sparktide.cli import main
from sparktide.errors import ConfigError, RunError
from sparktide.job import Job
from sparktide.spark import run_job, start
from tests.spark.streams import clock, job_for, read_output, write_stream

WINDOW = {
    "source": {"partition": "partition"},
    "ordering": {"late_arrival": "20s", "out_of_order": "5s"},
    "window": {
        "type": "tumbling",
        "size": "30s",
        "group_by": ["device"],
        "aggregates": {"n": "count(*)"},
    },
}


def _job(tmp_path: Path, tables: dict = WINDOW, *, seed: int = 5) -> Job:
    if not (tmp_path / "in").exists():
        write_stream(tmp_path / "in", seed=seed, events=60, files=2)
    return job_for(tmp_path, tables)


def _run(job: Job, spark) -> dict | None:
    return run_job(job, once=True, spark=spark, clock=clock, publish=False)


def test_a_checkpoint_in_use_by_another_process_is_refused(spark, tmp_path):
    job = _job(tmp_path)
    lock = Path(job.output.checkpoint) / "sparktide" / "LOCK"
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            f"f = open({str(lock)!r}, 'a+'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "f.write('pid 4242 on elsewhere'); f.flush(); print('locked', flush=True)\n"
            "time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError) as caught:
            _run(job, spark)
        assert caught.value.key == "output.checkpoint"
        assert "in use by pid 4242 on elsewhere" in str(caught.value)
        assert not (Path(job.output.path)).exists()  # refused before anything ran
    finally:
        holder.kill()
        holder.wait()
    # the holder is gone (however it ended): the lock went with it
    assert _run(job, spark)["input"] == 60 + 3


def test_a_second_run_in_the_same_process_is_refused_until_the_first_stops(spark, tmp_path):
    job = _job(tmp_path)
    first = start(spark, job, processing_time="1 hour", clock=clock)
    try:
        with pytest.raises(ConfigError, match="is in use by pid"):
            _run(job, spark)
    finally:
        first.stop()
    _run(job, spark)  # not refused: the stopped query gave the checkpoint up


def test_a_checkpoint_of_another_window_is_refused_with_advice(spark, tmp_path):
    job = _job(tmp_path)
    _run(job, spark)
    changed = {**WINDOW, "window": {**WINDOW["window"], "size": "1m"}}
    with pytest.raises(ConfigError) as caught:
        _run(_job(tmp_path, changed), spark)
    message = str(caught.value)
    assert caught.value.key == "window.size"
    assert "was 30000000, now 60000000" in message
    assert "new output.checkpoint" in message and "job.json" in message
    regrouped = {**WINDOW, "window": {**WINDOW["window"], "group_by": []}}
    with pytest.raises(ConfigError, match=r"window\.group_by"):
        _run(_job(tmp_path, regrouped), spark)
    # settings that only decide when windows close may change between runs
    tuned = {**WINDOW, "window": {**WINDOW["window"], "allowed_lateness": "10s"}}
    _run(_job(tmp_path, tuned), spark)  # not refused


def test_an_unwritable_output_fails_clearly_and_the_job_resumes_once_fixed(spark, tmp_path):
    reference = _job(tmp_path / "reference")
    _run(reference, spark)
    job = _job(tmp_path / "faulty")
    blocker = Path(job.output.path)
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a directory\n")  # the output directory cannot be created
    with pytest.raises(RunError) as caught:
        _run(job, spark)
    message = str(caught.value)
    assert "the run failed" in message and "run again" in message
    blocker.unlink()
    _run(job, spark)
    assert read_output(job.output.path) == read_output(reference.output.path)
    assert read_output(job.output.dead_letter) == read_output(reference.output.dead_letter)


def test_cli_reports_an_unwritable_output_in_one_line(spark, tmp_path, monkeypatch, capsys):
    """``sparktide run`` in this process: its session is the one already running."""
    job_dir = tmp_path / "cli"
    write_stream(job_dir / "in", seed=5, events=20, files=1)
    (job_dir / "out").mkdir()
    (job_dir / "out" / "events").write_text("in the way\n")
    (job_dir / "job.toml").write_text(
        "[source]\n"
        'path = "in"\ntimestamp_by = "t"\narrival_time = "a"\n'
        "[output]\n"
        'path = "out/events"\ncheckpoint = "out/checkpoint"\n'
    )
    monkeypatch.chdir(job_dir)
    returncode = main(["run", "job.toml", "--once"])
    stderr = capsys.readouterr().err
    assert returncode == 1, stderr[-2000:]
    errors = [line for line in stderr.splitlines() if line.startswith("sparktide: error:")]
    assert len(errors) == 1 and "run again" in errors[0]
    assert "Traceback" not in stderr


def test_a_checkpoint_of_other_paths_or_ordering_is_refused_in_one_line(
    spark, tmp_path, monkeypatch, capsys
):
    """Another source, output or metrics path, or another ordering policy, on the same
    checkpoint: refused before any batch runs, naming the key and both values (and
    ``sparktide run`` says it in one line, exit 2)."""
    job = _job(tmp_path)
    _run(job, spark)
    write_stream(tmp_path / "other", seed=6, events=20, files=1)
    cases = {
        "input.path": {**WINDOW, "source": {**WINDOW["source"], "path": "other"}},
        "ordering.late_arrival": {
            **WINDOW,
            "ordering": {**WINDOW["ordering"], "late_arrival": "1m"},
        },
    }
    for key, tables in cases.items():
        with pytest.raises(ConfigError) as caught:
            _run(job_for(tmp_path, tables), spark)
        assert caught.value.key == key, key
        assert "new output.checkpoint" in str(caught.value)
    moved = Job.from_dict(
        {
            **WINDOW,
            "source": {
                "path": "in",
                "timestamp_by": "t",
                "arrival_time": "a",
                "partition": "partition",
            },
            "output": {
                "path": "out/results",
                "dead_letter": "out/dead_letter",
                "metrics": "out/metrics-2",
                "checkpoint": "out/checkpoint",
            },
        },
        base_dir=tmp_path,
    )
    with pytest.raises(ConfigError, match=r"output\.metrics was \".*/out/metrics\", now "):
        _run(moved, spark)
    # the same job still runs (nothing was recorded by the refused runs)
    _run(job, spark)

    # the command line: one line, exit 2, no traceback
    (tmp_path / "job.toml").write_text(
        "[source]\n"
        'path = "in"\ntimestamp_by = "t"\narrival_time = "a"\npartition = "partition"\n'
        "[ordering]\n"
        'late_arrival = "20s"\nout_of_order = "5s"\n'
        "[window]\n"
        'type = "tumbling"\nsize = "30s"\ngroup_by = ["device"]\n'
        "[window.aggregates]\n"
        'n = "count(*)"\n'
        "[output]\n"
        'path = "out/elsewhere"\ndead_letter = "out/dead_letter"\nmetrics = "out/metrics"\n'
        'checkpoint = "out/checkpoint"\n'
    )
    monkeypatch.chdir(tmp_path)
    returncode = main(["run", "job.toml", "--once"])
    stderr = capsys.readouterr().err
    assert returncode == 2, stderr[-2000:]
    errors = [line for line in stderr.splitlines() if line.startswith("sparktide: error:")]
    assert len(errors) == 1 and "output.path" in errors[0] and "out/elsewhere" in errors[0]
    assert "Traceback" not in stderr
