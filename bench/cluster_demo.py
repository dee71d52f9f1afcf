"""sparktide on a real Spark cluster: a standalone master and two workers on 127.0.0.1,
started from the installed PySpark, run the demo job; the results must equal a local run's.

Usage: ``python bench/cluster_demo.py [--workdir DIR] [--workers 2]`` (``make
cluster-demo``). Exit status 0 when the cluster's window results, dead letters and
metrics counters equal those of the same job run on ``local[2]`` (in a child process,
with the same processing-time schedule); 1 otherwise.

The cluster's executors are separate JVMs with their own Python workers, so this shows
the engine does not depend on local mode: the Arrow parse kernel, the policy and the
windows run on the workers; the driver keeps sparktide's journal and clock state.
State and outputs are on the local file system, which every process here shares (on a
real cluster they would be on a shared file system: HDFS, S3, DBFS, a mounted volume).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
T0 = 1_772_360_000_000_000  # processing time of batch 0 (2026-03-01T10:13:20Z), µs
STEP = 7_000_000


def schedule(batch_id: int) -> int:
    """The processing-time schedule both runs are given (so ``emitted_at`` agrees too)."""
    return T0 + batch_id * STEP


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _spark_home() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent)


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise RuntimeError(f"{log.name}: exited ({process.returncode})\n{log.read_text()}")
        time.sleep(0.25)
    raise RuntimeError(f"{log.name}: no {text!r} within {seconds:.0f} s")


@contextmanager
def standalone_cluster(
    workdir: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g"
) -> Iterator[str]:
    """Start a standalone master and ``workers`` workers on 127.0.0.1; yield the master
    URL; stop them (process groups) on exit."""
    home = _spark_home()
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1"}
    env["PYSPARK_PYTHON"] = sys.executable
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = os.path.join(home, "bin", "spark-class")
    processes: list[subprocess.Popen[bytes]] = []

    def launch(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = workdir / f"{name}.log"
        with open(log, "wb") as handle:
            process = subprocess.Popen(
                [spark_class, *args],
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        processes.append(process)
        return process, log

    try:
        master, log = launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(_free_port()),
        )
        _wait_for(log, "I have been elected leader", master, 120)
        for i in range(workers):
            worker, log = launch(
                f"worker{i}",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--webui-port",
                str(_free_port()),
                "--work-dir",
                str(workdir / f"worker{i}"),
                url,
            )
            _wait_for(log, "Successfully registered with master", worker, 120)
        yield url
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def cluster_session(master: str, *, executors: int = 2) -> Any:
    """A SparkSession on ``master`` configured as ``local_session`` configures local ones."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master(master)
        .appName("sparktide-cluster-demo")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.cores", "1")
        .config("spark.executor.memory", "768m")
        .config("spark.cores.max", str(executors))
        .config("spark.sql.shuffle.partitions", str(executors))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(workdir: Path, spark: Any) -> dict[str, Any]:
    """Run the demo job under ``workdir`` (data in ``workdir/events``) to the end, one
    file per micro-batch; return what it wrote."""
    from sparktide.demo import demo_job
    from sparktide.spark import run_job

    job = demo_job(workdir)
    last = run_job(
        job,
        once=True,
        flush=True,
        spark=spark,
        max_files_per_trigger=1,
        clock=schedule,
        publish=False,
    )
    return {
        "windows": sorted(_records(job.output.path), key=_key),
        "dead_letters": sorted(_records(job.output.dead_letter), key=_key),
        "counters": {k: v for k, v in (last or {}).items() if k not in ("processing_time",)},
        "executors": _executors(spark),
    }


def _records(directory: str | None) -> list[dict[str, Any]]:
    out = []
    for path in sorted(Path(directory or "").glob("batch=*/flush=*/*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def _key(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True)


def _executors(spark: Any) -> int:
    """How many executors the application has (the status tracker lists the driver too)."""
    return len(spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1


def _local_child(workdir: Path) -> dict[str, Any]:
    """The same job on ``local[2]``, in a child process (one SparkContext per process)."""
    done = subprocess.run(
        [sys.executable, __file__, "--local-run", str(workdir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"local run failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="default: a temporary directory")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--local-run", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    if args.local_run is not None:  # the child: the local reference run
        from sparktide.spark import local_session

        result = run(args.local_run, local_session())
        print(json.dumps(result))
        return 0

    from sparktide.demo import generate

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sparktide-cluster-"))
    if workdir.exists():
        shutil.rmtree(workdir)
    for name in ("cluster", "local"):
        generate(workdir / name / "events")
    started = time.monotonic()
    with standalone_cluster(workdir, workers=args.workers) as master:
        print(f"cluster: {master}, {args.workers} workers ({time.monotonic() - started:.0f} s)")
        spark = cluster_session(master, executors=args.workers)
        try:
            on_cluster = run(workdir / "cluster", spark)
        finally:
            spark.stop()
    print(f"cluster run done on {on_cluster['executors']} executors")
    local = _local_child(workdir / "local")
    print("local run done")
    checks = {
        "window results equal": on_cluster["windows"] == local["windows"],
        "dead letters equal": on_cluster["dead_letters"] == local["dead_letters"],
        "metrics equal": on_cluster["counters"] == local["counters"],
        "ran on the workers' executors": on_cluster["executors"] == args.workers,
    }
    for name, ok in checks.items():
        print(f"  {name}: {'yes' if ok else 'NO'}")
    counts = f"{len(on_cluster['windows'])} windows, {len(on_cluster['dead_letters'])} dead letters"
    print(f"{'OK' if all(checks.values()) else 'FAILED'}: {counts} ({workdir})")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
