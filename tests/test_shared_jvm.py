"""When the suite's controller starts one Spark JVM for its workers (tests/shared_jvm.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.shared_jvm import wanted


def _config(args=(), workers=2, ignore=(), **more):
    options = {"numprocesses": workers, "ignore": list(ignore)}
    return SimpleNamespace(
        args=list(args), getoption=lambda name, default=None: options.get(name, default), **more
    )


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (_config(), True),  # the whole suite
        (_config(["tests/spark/test_analytic.py::test_x"]), True),
        (_config(["tests"]), True),
        (_config(["tests/core"]), False),  # no Spark test
        (_config(ignore=["tests/spark"]), False),
        (_config(workers=1), False),  # one process: its own session
        (_config(workers=None), False),
        (_config(workerinput={}), False),  # a worker, not the controller
    ],
)
def test_the_controller_starts_a_jvm_only_for_several_workers_running_spark_tests(
    config, expected, monkeypatch
):
    monkeypatch.delenv("SPARKTIDE_SHARED_JVM", raising=False)
    assert wanted(config) is expected


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("SPARKTIDE_SHARED_JVM", "0")
    assert not wanted(_config())


def test_a_worker_finds_its_server_or_learns_there_is_none(tmp_path):
    from tests.shared_jvm import _announce, served

    _announce(tmp_path / "gw0.json", (4242, "secret"))
    (tmp_path / "done").touch()
    assert served(str(tmp_path), "gw0") == (4242, "secret")
    assert served(str(tmp_path), "gw1") is None  # (the JVM did not start: its own)
