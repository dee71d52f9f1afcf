"""The live page's server without a browser: /metrics parsed by prometheus_client's own
parser equals the metrics records, the state the page polls, read-only HTTP, addresses,
dead letters, ``sparktide ui``."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.request
from argparse import Namespace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sparktide.errors import ConfigError, InputError
from sparktide.time import parse_instant
from sparktide.ui import LiveState, MetricsFollower, UiServer, parse_address
from tests.uirecords import INJECTED, record, write_dead_letters, write_record


@pytest.fixture
def served():
    state = LiveState("jobs/telemetry")
    server = UiServer(state).start()
    yield state, server
    server.stop()


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by name and labels, via prometheus_client's parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _expected(job: str, rec: dict) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """What /metrics must hold for a record: each value read from the record."""
    out: dict = {}

    def put(name: str, value: float, **labels: str) -> None:
        out[(name, tuple(sorted({"job": job, **labels}.items())))] = value

    for entry, prefix, labels in [(rec, "sparktide_", {})] + [
        (p, "sparktide_partition_", {"partition": p["partition"]}) for p in rec["partitions"]
    ]:
        for name in ("input", "admitted", "late", "early", "out_of_order", "adjusted"):
            put(f"{prefix}{name}_total", entry[name], **labels)
        for kind in ("dropped", "dead_lettered"):
            for reason, count in entry[kind].items():
                put(f"{prefix}{kind}_total", count, reason=reason, **labels)
        if prefix == "sparktide_partition_":
            for name in ("watermark", "arrival_clock"):
                put(f"{prefix}{name}_seconds", parse_instant(entry[name]) / 1e6, **labels)
    put("sparktide_windows_emitted_total", rec["windows_emitted"])
    put("sparktide_released_total", rec["released"])
    put("sparktide_batch", rec["batch"])
    for name in ("processing_time", "watermark", "output_watermark"):
        put(f"sparktide_{name}_seconds", parse_instant(rec[name]) / 1e6)
    put("sparktide_watermark_delay_seconds", rec["watermark_delay_us"] / 1e6)
    put("sparktide_open_windows", rec["open_windows"])
    put("sparktide_state_size", rec["open_windows"], kind="open_windows")
    return out


def test_metrics_endpoint_equals_the_newest_record(served):
    state, server = served
    assert _samples(_get(server.url + "metrics").decode()) == {}  # before the first batch
    for batch in range(3):
        rec = record(batch, late=batch)
        state(rec)
        assert _samples(_get(server.url + "metrics").decode()) == _expected(state.job, rec)


def test_a_watermark_at_minus_infinity_is_left_out(served):
    state, server = served
    rec = record(0)
    rec.update(watermark=None, watermark_delay_us=None, output_watermark=None)
    rec["partitions"][0]["watermark"] = None
    state(rec)
    names = {name for name, _ in _samples(_get(server.url + "metrics").decode())}
    assert "sparktide_watermark_seconds" not in names
    assert "sparktide_watermark_delay_seconds" not in names
    samples = _samples(_get(server.url + "metrics").decode())
    watermarks = [k for k in samples if k[0] == "sparktide_partition_watermark_seconds"]
    assert watermarks == [
        ("sparktide_partition_watermark_seconds", (("job", state.job), ("partition", "1")))
    ]


def test_the_state_the_page_polls_is_incremental(served):
    state, server = served
    first = json.loads(_get(server.url + "state"))
    assert (first["seq"], first["latest"], first["points"]) == (0, None, [])
    state(record(0))
    state(record(1, late=2))
    state({"type": "window"})  # (not a metrics record: ignored)
    whole = json.loads(_get(server.url + "state?after=0"))
    assert whole["seq"] == 2 and whole["latest"]["batch"] == 1
    assert [p["batch"] for p in whole["points"]] == [0, 1]
    point = whole["points"][1]
    assert point["t"] == parse_instant(record(1)["processing_time"])
    assert point["watermark"] == parse_instant(record(1)["watermark"])
    assert point["partitions"][1] == [
        "1",
        parse_instant(record(1)["partitions"][1]["watermark"]),
        parse_instant(record(1)["partitions"][1]["arrival_clock"]),
    ]
    assert point["this_batch"]["adjusted"] == 4 and point["this_batch"]["dead_lettered"] == 1
    assert [d["batch"] for d in whole["diagnostics"]] == [1]

    waited: list[dict] = []
    poll = threading.Thread(
        target=lambda: waited.append(json.loads(_get(server.url + "state?after=2")))
    )
    poll.start()
    time.sleep(0.3)
    assert not waited  # (a long poll: it waits for the next record)
    state(record(2))
    poll.join(5)
    assert [p["batch"] for p in waited[0]["points"]] == [2]
    assert not waited[0]["reset"]


def test_read_only(served):
    _, server = served
    host, port = server.url.removeprefix("http://").rstrip("/").split(":")
    assert host == "127.0.0.1"
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"):
        connection = http.client.HTTPConnection(host, int(port), timeout=5)
        connection.request(method, "/metrics", body=b"x")
        response = connection.getresponse()
        assert response.status == 405, method
        assert response.getheader("Allow") == "GET, HEAD"
        connection.close()
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    connection.request("HEAD", "/")
    response = connection.getresponse()
    assert response.status == 200 and response.read() == b""
    assert int(response.getheader("Content-Length")) > 1000
    assert "script-src 'unsafe-inline'" in response.getheader("Content-Security-Policy")
    assert "connect-src 'self'" in response.getheader("Content-Security-Policy")
    connection.request("GET", "/nothing")
    assert connection.getresponse().status == 404
    connection.close()


def test_the_page_loads_nothing_from_elsewhere(served):
    page = _get(served[1].url).decode()
    assert (
        "<script>" in page
        and "src=" not in page
        and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    )
    assert "innerHTML" not in page and "insertAdjacentHTML" not in page


def test_addresses():
    assert parse_address("8080") == ("127.0.0.1", 8080)
    assert parse_address("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_address("[::1]:0") == ("::1", 0)
    for bad in ("", "http", "host:", "1.2.3.4:99999", ":80x"):
        with pytest.raises(ConfigError, match=r"--ui.*HOST:.*PORT"):
            parse_address(bad, "--ui")


def test_a_port_in_use_is_a_config_error(served):
    port = served[1].url.rstrip("/").rsplit(":", 1)[1]
    with pytest.raises(ConfigError, match=r"^--ui: cannot serve on '127\.0\.0\.1:"):
        UiServer(LiveState("x"), f"127.0.0.1:{port}", option="--ui")


def test_stopped_server_is_gone():
    server = UiServer(LiveState("x")).start()
    host, port = server.url.removeprefix("http://").rstrip("/").split(":")
    kept = http.client.HTTPConnection(host, int(port), timeout=5)  # (kept alive, as a page's)
    kept.request("GET", "/state")
    assert kept.getresponse().read()
    server.stop()
    with pytest.raises(OSError), socket.create_connection((host, int(port)), timeout=2):
        pass
    with pytest.raises((OSError, http.client.HTTPException)):
        kept.request("GET", "/metrics")
        kept.getresponse()


def test_following_a_directory_and_its_dead_letters(tmp_path: Path):
    metrics, dead = tmp_path / "metrics", tmp_path / "dead_letter"
    state = LiveState("j", dead_letter=str(dead))
    for batch in range(2):
        write_record(metrics, record(batch))
    (metrics / ".batch=000000002.jsonl.tmp").write_text("{")  # (half written: not read)
    follower = MetricsFollower(str(metrics), state)
    assert follower.poll() == 2 and state.seq == 2
    write_record(metrics, record(1))  # a replayed batch rewrites its file: fed once
    write_record(metrics, record(1, flushed=True))
    assert follower.poll() == 1 and state.latest["flushed"]
    write_dead_letters(
        dead, 0, [{"file": "a.jsonl", "line": 3, "reason": "malformed", "record": INJECTED}]
    )
    shown = state.snapshot()["dead_letters"]
    assert [(d["batch"], d["reason"], d["record"]) for d in shown] == [(0, "malformed", INJECTED)]
    with pytest.raises(InputError, match="no such directory"):
        MetricsFollower(str(tmp_path / "nothing"), state)


def test_sparktide_ui_command_serves_a_directory(tmp_path: Path):
    from sparktide.cli import ui

    metrics = tmp_path / "ck" / "sparktide" / "metrics"
    write_record(metrics, record(0))
    port = _free_port()
    done = threading.Event()
    args = Namespace(metrics=str(metrics), address=f"127.0.0.1:{port}", dead_letter=None, job=None)
    thread = threading.Thread(target=ui.execute, args=(args, None), kwargs={"until": done})
    thread.start()
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(100):
            try:
                text = _get(url + "metrics").decode()
                break
            except OSError:
                time.sleep(0.05)
        assert f'sparktide_batch{{job="{tmp_path / "ck"}"}} 0.0' in text
        write_record(metrics, record(1))
        for _ in range(100):  # (followed: the new record shows)
            if (
                'sparktide_batch{job="' + str(tmp_path / "ck") + '"} 1.0'
                in _get(url + "metrics").decode()
            ):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the new record never showed")
    finally:
        done.set()
        thread.join(10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address", ["nonsense", "host:", "127.0.0.1:70000"])
def test_run_refuses_a_bad_ui_address_before_spark_starts(tmp_path: Path, capsys, address):
    from jobfiles import BASE_JOB, write_job
    from sparktide.cli import main

    data = {**BASE_JOB, "output": {"path": "out", "checkpoint": "cp"}}
    (tmp_path / "events.jsonl").write_text("")
    job = write_job(tmp_path, data)
    assert main(["run", str(job), "--once", "--ui", address]) == 2
    assert capsys.readouterr().err.startswith("sparktide: error: --ui: expected [HOST:]PORT")


def test_the_chart_takes_the_first_partitions_and_the_table_all():
    rec = record(0)
    rec["partitions"] = [{**rec["partitions"][0], "partition": str(n)} for n in range(12)]
    state = LiveState("j")
    state(rec)
    snapshot = state.snapshot()
    point = snapshot["points"][0]
    assert [p[0] for p in point["partitions"]] == [str(n) for n in range(8)]
    assert point["partition_count"] == 12 and len(snapshot["latest"]["partitions"]) == 12


def test_on_the_loopback_only_loopback_names_are_answered(served):
    """Another site's page cannot read the server through a DNS name rebound to
    127.0.0.1: the Host it sends is that name."""
    _, server = served
    port = int(server.url.rstrip("/").rsplit(":", 1)[1])
    for host, status in [
        ("evil.example", 403),
        (f"evil.example:{port}", 403),
        ("127.0.0.1.evil.example", 403),
        (f"localhost:{port}", 200),
        (f"127.0.0.1:{port}", 200),
        (f"[::1]:{port}", 200),
    ]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.putrequest("GET", "/state", skip_host=True)
        connection.putheader("Host", host)
        connection.endheaders()
        assert connection.getresponse().status == status, host
        connection.close()


def test_job_labels_are_the_same_for_run_and_ui(tmp_path: Path, monkeypatch):
    from sparktide.job import Job
    from sparktide.ui import directory_label, job_label

    monkeypatch.chdir(tmp_path)
    assert directory_label("cp/sparktide/metrics") == str(tmp_path / "cp")
    assert directory_label("file:/data/cp/sparktide/metrics/") == "/data/cp"
    assert directory_label("out/metrics") == str(tmp_path / "out" / "metrics")
    assert directory_label("s3a://bucket/m") == "s3a://bucket/m"
    tables = {"source": {"path": "in", "timestamp_by": "t"}, "output": {"path": "o"}}
    bare = Job.from_dict({**tables, "output": {"path": "o", "checkpoint": "cp"}}, base_dir=tmp_path)
    assert job_label(bare) == str(tmp_path / "cp")
    named = Job.from_dict(
        {**tables, "output": {"path": "o", "checkpoint": "cp", "metrics": "m"}}, base_dir=tmp_path
    )
    assert job_label(named) == str(tmp_path / "m") == directory_label("m")


def test_dead_letters_of_a_delta_output(tmp_path: Path):
    """A Delta dead-letter output (its ``batch`` and ``flush`` columns, as the sink
    writes them): the page shows the batches' rows that the metrics count."""
    import pyarrow as pa
    from deltalake import write_deltalake

    metrics, dead = tmp_path / "metrics", tmp_path / "dead_letter"
    rows = [
        {"file": "a.jsonl", "line": 3, "reason": "malformed", "record": INJECTED, "batch": 0},
        {"file": "b.jsonl", "line": 1, "reason": "late", "record": "{}", "batch": 1},
    ]
    table = pa.Table.from_pylist(rows).append_column("flush", pa.array([0, 0], pa.int32()))
    table = table.set_column(4, "batch", pa.array([0, 1], pa.int32()))
    write_deltalake(str(dead), table)
    state = LiveState("j", dead_letter=str(dead))
    write_record(metrics, record(0))
    MetricsFollower(str(metrics), state).poll()
    shown = state.snapshot()["dead_letters"]
    assert [(d["batch"], d["file"], d["record"]) for d in shown] == [(0, "a.jsonl", INJECTED)]
