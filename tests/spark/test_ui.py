"""``start(..., ui=)`` on Spark: /metrics served from the driver while the query runs,
equal to the engine's metrics record, and gone once the query stops."""

from __future__ import annotations

import socket
import threading
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sparktide.spark import start
from tests.spark.streams import clock, job_for, write_stream


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url + "metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_start_with_ui_serves_metrics_until_the_query_stops(spark, tmp_path):
    """Each batch's callback (after the state is fed, while the query runs) scrapes
    /metrics; the server is gone once the query ends."""
    write_stream(tmp_path / "in", seed=5, events=30, files=1)
    window = {"type": "tumbling", "size": "1m", "aggregates": {"n": "count(*)"}}
    job = job_for(tmp_path, {"window": window})
    scraped: list[tuple[dict, dict]] = []
    started: list = []
    ready = threading.Event()

    def on_metrics(record: dict) -> None:
        ready.wait(60)  # (until start() returned the query)
        scraped.append((record, _scrape(started[0].ui.url)))

    query = start(
        spark, job, once=True, max_files_per_trigger=1, clock=clock, on_metrics=on_metrics, ui="0"
    )
    started.append(query)
    ready.set()
    url = query.ui.url
    assert url.startswith("http://127.0.0.1:")
    query.awaitTermination(120)
    assert [record["batch"] for record, _ in scraped] == [0]
    label = (("job", str(tmp_path / "out" / "metrics")),)  # ([output] metrics is set)
    for record, samples in scraped:
        assert samples[("sparktide_batch", label)] == record["batch"]
        assert samples[("sparktide_input_total", label)] == record["input"] > 0
        assert samples[("sparktide_admitted_total", label)] == record["admitted"]
        assert samples[("sparktide_open_windows", label)] == record["open_windows"]
    query.stop()
    assert not query.isActive
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    with pytest.raises(OSError), socket.create_connection((host, int(port)), timeout=2):
        pass
