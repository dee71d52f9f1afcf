"""One Spark JVM for the Spark tests of every pytest worker (``make test`` runs two).

A local Spark JVM spends much of a short life compiling Spark's own code (its JIT) and
loading its classes; two workers, each with its own JVM, paid that twice over the same
code on the machine's two cores. Instead pytest-xdist's controller process starts one
JVM (:class:`SharedJvm`, in the background while the workers start and collect) and
opens in it one py4j server per worker (:func:`open_server`: Spark's own ``Py4JServer``,
as PySpark's gateway is), whose port and secret it writes to a file for that worker. The
worker's ``spark`` fixture waits for the file (:func:`served`) and connects
(:func:`attached_session`), wraps the JVM's SparkContext in a PySpark SparkContext of its
own (its own accumulator and callback servers) and takes a new SparkSession: its own SQL
settings, temporary views and streaming queries. Tests run as before; their Spark jobs
share the JVM's task slots. The controller stops the JVM when the run ends.

The ``sparktide run`` and ``restart_runner.py`` children of the crash, restart and
interrupt tests still start JVMs of their own: the gateway's port is never left in the
environment they inherit. ``SPARKTIDE_SHARED_JVM=0`` gives each worker its own JVM.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = [
    "SHARED_JVM",
    "SharedJvm",
    "attached_session",
    "open_server",
    "served",
    "start",
    "wanted",
]

#: The key of a worker's ``workerinput`` holding the directory of the servers' files.
SHARED_JVM = "sparktide_shared_jvm"
#: The shared JVM's heap: the two sessions' batches at once.
MEMORY = "4g"
_SPARK_TESTS = Path(__file__).parent / "spark"


def wanted(config: Any) -> bool:
    """Whether the controller of ``config`` should start the shared JVM: several
    workers, some of the run's paths holding Spark tests, and not turned off."""
    if os.environ.get("SPARKTIDE_SHARED_JVM") == "0" or hasattr(config, "workerinput"):
        return False
    workers = config.getoption("numprocesses", None)
    if not isinstance(workers, int) or workers < 2:
        return False
    paths = [Path(a.split("::")[0]).resolve() for a in config.args] or [Path.cwd()]
    spark = _SPARK_TESTS.resolve()
    ignored = [Path(p).resolve() for p in config.getoption("ignore", None) or []]
    if any(spark.is_relative_to(p) for p in ignored):
        return False
    return any(spark.is_relative_to(p) or p.is_relative_to(spark) for p in paths)


class SharedJvm:
    """The controller's JVM, started in the background: when it is up, one server per
    worker (``gw0``, ``gw1``, ...), each announced in ``<directory>/<worker>.json``, then
    ``<directory>/done`` (also when the JVM could not start: the workers then start
    their own)."""

    def __init__(self, workers: int) -> None:
        self.directory = tempfile.mkdtemp(prefix="sparktide-jvm-")
        self.session: Any = None
        self._thread = threading.Thread(target=self._start, args=(workers,), daemon=True)
        self._thread.start()

    def _start(self, workers: int) -> None:
        try:
            self.session = start()
            for i in range(workers):
                _announce(Path(self.directory) / f"gw{i}.json", open_server(self.session))
        except Exception as error:  # (each worker starts its own, and says why it cannot)
            print(f"sparktide tests: no shared Spark JVM ({error}); one per worker")
        finally:
            Path(self.directory, "done").touch()

    def stop(self) -> None:
        """Stop the JVM (once the workers are done) and remove the servers' files."""
        self._thread.join()
        if self.session is not None:
            self.session.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def _announce(path: Path, server: tuple[int, str]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(server))
    temporary.rename(path)  # (a worker never reads half a file)


def served(directory: str, worker: str) -> tuple[int, str] | None:
    """The port and secret of ``worker``'s server in the shared JVM, once announced;
    ``None`` when there is none (the JVM did not start)."""
    path = Path(directory) / f"{worker}.json"
    deadline = time.monotonic() + 300  # (a JVM that never comes up: the worker's own)
    while not path.exists():
        if Path(directory, "done").exists() or time.monotonic() > deadline:
            if not path.exists():  # (announced just before "done": read it)
                return None
            break
        time.sleep(0.05)
    port, secret = json.loads(path.read_text())
    return int(port), str(secret)


def start() -> Any:
    """The controller's session in a new JVM, with the test session's settings."""
    from tests.spark.conftest import session_jvm_session

    return session_jvm_session(memory=MEMORY)


def open_server(session: Any) -> tuple[int, str]:
    """A new py4j server in ``session``'s JVM for one worker: its port and secret."""
    jvm = session.sparkContext._jvm
    server = jvm.org.apache.spark.api.python.Py4JServer(session.sparkContext._jsc.sc().conf())
    server.start()
    return int(server.getListeningPort()), str(server.secret())


def attached_session(port: int, secret: str) -> Any:
    """A SparkSession of this process on the shared JVM's SparkContext (through the
    server at ``port``), with its own SQL settings."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # (as local_session does)
    os.environ["PYSPARK_GATEWAY_PORT"], os.environ["PYSPARK_GATEWAY_SECRET"] = str(port), secret
    try:
        gateway = launch_gateway()
    finally:  # (the children the tests start launch JVMs of their own)
        del os.environ["PYSPARK_GATEWAY_PORT"], os.environ["PYSPARK_GATEWAY_SECRET"]
    jvm = gateway.jvm
    jsc = jvm.org.apache.spark.api.java.JavaSparkContext.fromSparkContext(
        jvm.org.apache.spark.SparkContext.getOrCreate()
    )
    context = SparkContext(gateway=gateway, jsc=jsc, conf=SparkConf(_jconf=jsc.getConf()))
    default = jvm.org.apache.spark.sql.classic.SparkSession.getDefaultSession().get()
    return SparkSession(context, jsparkSession=default.newSession())
