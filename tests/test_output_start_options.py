"""Output start time (docs/semantics.md §12): the look-back and read point of each kind of
job, the option's values, ``now`` and ``last-stopped``, what a checkpoint accepts, and
the command line. No Spark session: the checkpoint rules run on a state store alone."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobfiles import write_job
from sparktide.cli import main
from sparktide.core.engine import simulate
from sparktide.core.records import InputRecord
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.job.start import look_back, output_start_option, read_point
from sparktide.reader import job_records
from sparktide.spark.outputstart import begin_output, check_output_start
from sparktide.spark.state import StateStore
from sparktide.time import MINUTE, SECOND, format_instant, parse_instant

T0 = parse_instant("2026-03-01T09:00:00Z")


def _job(**tables: Any) -> Job:
    data: dict[str, Any] = {"source": {"path": "-", "timestamp_by": "t", "arrival_time": "a"}}
    data.update(tables)
    return Job.from_dict(data)


# ------------------------------------------------------------------ look-back, read point
@pytest.mark.parametrize(
    ("tables", "back"),
    [
        ({}, 0),
        ({"window": {"type": "tumbling", "size": "10s"}}, 10 * SECOND),
        ({"window": {"type": "hopping", "size": "10s", "hop": "2s"}}, 10 * SECOND),
        ({"window": {"type": "sliding", "size": "7s"}}, 7 * SECOND),
        ({"window": {"type": "snapshot"}}, 0),
        ({"window": {"type": "session", "gap": "5s", "max_duration": "1m"}}, None),
        ({"window": {"type": "tumbling", "size": "10s", "idle_timeout": "1m"}}, None),
        ({"window": {"type": "tumbling", "size": "10s", "allowed_lateness": "1m"}}, 10 * SECOND),
        (
            {"analytic": {"p": {"function": "lag", "value": "x", "limit_duration": "3m"}}},
            3 * MINUTE,
        ),
        ({"analytic": {"f": {"function": "isfirst", "period": "1h"}}}, 60 * MINUTE),
        ({"punctuation": {"column": "kind", "value": "cti"}}, None),
    ],
    ids=[
        "release",
        "tumbling",
        "hopping",
        "sliding",
        "snapshot",
        "session",
        "idle_timeout",
        "allowed_lateness",
        "lag",
        "isfirst",
        "punctuation",
    ],
)
def test_look_back_of_each_kind_of_job(tables: dict[str, Any], back: int | None) -> None:
    job = _job(**tables)
    assert look_back(job) == back
    start = T0 + 10 * MINUTE
    expected = None if back is None else start - back - 5 * MINUTE  # (early_arrival 5m)
    assert read_point(job, start) == expected


def test_read_point_intervals_joins_arrival_mode_and_no_early_limit() -> None:
    start = T0 + 10 * MINUTE
    lifetime = _job(
        source={"path": "-", "timestamp_by": "t", "arrival_time": "a", "duration": "30s"},
        window={"type": "tumbling", "size": "10s"},
    )
    assert look_back(lifetime) == 40 * SECOND
    ended = _job(source={"path": "-", "timestamp_by": "t", "arrival_time": "a", "end_time": "e"})
    assert look_back(ended) is None
    join = Job.from_dict(
        {
            "inputs": {
                "entry": {"path": "-", "timestamp_by": "t", "arrival_time": "a"},
                "exit": {"path": "-", "timestamp_by": "t", "arrival_time": "a"},
            },
            "join": {"left": "entry", "right": "exit", "on": ["car"], "between": ["0s", "5m"]},
        }
    )
    assert look_back(join) == 5 * MINUTE
    arrival_mode = Job.from_dict(
        {"source": {"path": "-"}, "window": {"type": "tumbling", "size": "10s"}}
    )
    assert read_point(arrival_mode, start) == start - 10 * SECOND  # (no early limit)
    unlimited = _job(ordering={"early_arrival": "none"})
    assert read_point(unlimited, start) is None


@pytest.mark.parametrize("value", ["soon", "2026-03-01T09:00:00", "", 1.5, True, "NOW"])
def test_an_option_that_is_no_time_is_an_error_naming_it(value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        output_start_option(value, "--output-start-time")
    assert info.value.key == "--output-start-time"
    assert repr(value) in str(info.value)


def test_option_values() -> None:
    assert output_start_option("2026-03-01T10:00:00+01:00") == T0
    assert output_start_option(T0) == T0
    assert output_start_option("now") == "now"
    assert output_start_option("last-stopped") == "last-stopped"
    assert output_start_option(None) is None


# ------------------------------------------------------------------ the reference engine
def _record(seq: int, t: int, a: int, **fields: Any) -> InputRecord:
    values = {"id": seq, "t": format_instant(t), "a": format_instant(a), **fields}
    return InputRecord(seq, values, partition=0, event_time=t, arrival_time=a)


def test_now_is_the_first_observation_instant() -> None:
    job = _job(ordering={"early_arrival": "2s", "late_arrival": "none"})
    records = [_record(i, T0 + i * SECOND, T0 + i * SECOND) for i in range(10)]
    for r in records:
        r.processing_time = r.arrival_time + 5 * SECOND  # (seen 5 s after it arrived)
    result = simulate(job, records, output_start="now")
    assert result.metrics["output_start_time"] == format_instant(T0 + 5 * SECOND)
    assert result.metrics["read_point"] == format_instant(T0 + 3 * SECOND)  # (B = 0, E = 2 s)
    assert result.metrics["skipped_before_start"] == 3
    assert [e["id"] for e in result.events] == [5, 6, 7, 8, 9]


def test_last_stopped_is_refused_without_a_checkpoint() -> None:
    with pytest.raises(ConfigError) as info:
        simulate(_job(), [], output_start="last-stopped")
    assert info.value.key == "output_start_time"
    assert "checkpoint" in str(info.value)


def test_without_the_option_the_metrics_are_as_before() -> None:
    result = simulate(_job(), [_record(0, T0, T0)])
    assert "skipped_before_start" not in result.metrics
    assert "output_start_time" not in result.metrics


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-8, 8), st.integers(0, 6), st.sampled_from("ab")), max_size=25),
    st.integers(0, 40),
    st.sampled_from(["lag", "last", "isfirst", "sum", "count", "avg", "min", "max"]),
)
def test_analytic_columns_from_the_start_time(
    steps: list[tuple[int, int, str]], at: int, function: str
) -> None:
    """LAG, LAST, ISFIRST and the analytic aggregates (semantics §11.19) see the events of
    their look-back: released events from the start on carry the columns a run over
    everything gives."""
    analytic: dict[str, Any] = {"function": function, "partition_by": ["k"]}
    if function == "isfirst":
        analytic["period"] = "4s"
    else:
        analytic.update(value="id", limit_duration="3s")
    job = _job(
        ordering={"early_arrival": "2s", "late_arrival": "3s", "out_of_order": "1s"},
        analytic={"col": analytic},
    )
    records, a = [], T0
    for i, (skew, step, key) in enumerate(steps):
        a += step * 500_000
        records.append(_record(i, a + skew * 500_000, a, k=key))
    start = T0 + at * 500_000
    full = [e for e in simulate(job, records).events if parse_instant(e["timestamp"]) >= start]
    assert simulate(job, records, output_start=start).events == full


# ------------------------------------------------------------------ the checkpoint (Spark)
def _engine(tmp_path: Path, first: int = T0) -> SimpleNamespace:
    job = _job(
        window={"type": "tumbling", "size": "10s"},
        output={"path": str(tmp_path / "out"), "checkpoint": str(tmp_path / "cp")},
    )
    store = StateStore(None, str(tmp_path / "cp"))  # type: ignore[arg-type]
    context = SimpleNamespace(output_start=None, read_point=None)
    return SimpleNamespace(
        job=job,
        store=store,
        context=context,
        batch_time=lambda batch: store.processing_time(batch, first),
    )


def _commit_a_batch(engine: SimpleNamespace) -> None:
    committed = engine.store.root / "state" / "0"
    committed.mkdir(parents=True)
    (committed / "_COMMITTED").touch()


def test_a_new_checkpoint_records_the_start_and_now_is_the_first_batch_time(tmp_path) -> None:
    engine = _engine(tmp_path, first=T0 + MINUTE)
    begin_output(engine, "now")
    assert engine.context.output_start == T0 + MINUTE  # (batch 0's journaled time)
    assert engine.store.processing_time(0) == T0 + MINUTE
    assert engine.context.read_point == T0 + MINUTE - 10 * SECOND - 5 * MINUTE
    _commit_a_batch(engine)
    again = _engine(tmp_path, first=T0 + 2 * MINUTE)  # (a restart, later)
    for option in ("now", "last-stopped", None):
        begin_output(again, option)
        assert again.context.output_start == T0 + MINUTE  # kept: exactly once
    with pytest.raises(ConfigError) as info:
        begin_output(again, "2026-03-01T09:05:00Z")
    assert info.value.key == "output_start_time"
    assert "'now'" in str(info.value) and "new checkpoint" in str(info.value)


def test_last_stopped_needs_a_committed_batch(tmp_path) -> None:
    engine = _engine(tmp_path)
    with pytest.raises(ConfigError, match="needs a previous run"):
        begin_output(engine, "last-stopped")
    _commit_a_batch(engine)
    begin_output(engine, "last-stopped")  # a run without a start time: resumed as it was
    assert engine.context.output_start is None


def test_a_time_on_a_checkpoint_started_without_one_is_refused(tmp_path) -> None:
    engine = _engine(tmp_path)
    _commit_a_batch(engine)
    with pytest.raises(ConfigError, match="started without one"):
        check_output_start(engine.job, "2026-03-01T09:05:00Z")


def test_a_start_given_again_before_any_commit_starts_afresh(tmp_path) -> None:
    engine = _engine(tmp_path)
    begin_output(engine, "2026-03-01T09:05:00Z")
    begin_output(engine, "2026-03-01T09:06:00Z")  # (nothing committed: a new start)
    assert engine.context.output_start == T0 + 6 * MINUTE
    record = json.loads((engine.store.root / "output_start.json").read_text())
    assert record == {"option": "2026-03-01T09:06:00Z", "start": T0 + 6 * MINUTE}


# ------------------------------------------------------------------ the command line
def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, stdout=out), out.getvalue()


def _files(folder: Path) -> Path:
    rows = [
        {
            "id": i,
            "t": format_instant(T0 + i * 4 * SECOND),
            "a": format_instant(T0 + i * 4 * SECOND),
        }
        for i in range(20)
    ]
    (folder / "in").mkdir()
    (folder / "in" / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return write_job(
        folder,
        {
            "source": {"path": "in", "timestamp_by": "t", "arrival_time": "a"},
            "ordering": {"early_arrival": "5s", "late_arrival": "5s"},
            "window": {"type": "tumbling", "size": "10s", "aggregates": {"n": "count(*)"}},
            "output": {"path": "out", "checkpoint": "cp"},
        },
    )


def test_simulate_writes_from_the_start_time(tmp_path) -> None:
    job = _files(tmp_path)
    code, text = _cli(["simulate", str(job), "--output-start-time", "2026-03-01T09:00:40Z"])
    assert code == 0
    records = [json.loads(line) for line in text.splitlines()]
    windows = [r for r in records if r["type"] == "window"]
    assert windows and min(w["window_end"] for w in windows) == "2026-03-01T09:00:40Z"
    metrics = records[-1]
    assert metrics["read_point"] == "2026-03-01T09:00:25Z"  # 40 s - 10 s - 5 s
    assert metrics["skipped_before_start"] == 7  # ids 0..6 arrived before 00:25
    _, everything = _cli(["simulate", str(job)])
    all_windows = [json.loads(x) for x in everything.splitlines()]
    later = [
        w
        for w in all_windows
        if w["type"] == "window" and w["window_end"] >= "2026-03-01T09:00:40Z"
    ]
    assert windows == later


@pytest.mark.parametrize("command", ["simulate", "run"])
@pytest.mark.parametrize(("value", "words"), [("soon", "'soon'"), ("last-stopped", "last-stopped")])
def test_a_bad_start_is_one_error_line_naming_the_option(
    tmp_path, capsys, command: str, value: str, words: str
) -> None:
    job = _files(tmp_path)
    once = ["--once"] if command == "run" else []
    code, text = _cli([command, str(job), *once, "--output-start-time", value])
    assert code == 2 and text == ""
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("sparktide: error: --output-start-time:")
    assert words in err[0]


_JOIN = {"left": "a", "right": "b", "on": ["device"], "between": ["-20s", "30s"]}
_WINDOW = {"type": "tumbling", "size": "10s", "aggregates": {"n": "count(*)"}}


@pytest.mark.parametrize("shape", ["window over the matches", "join of the window's records"])
def test_a_join_and_a_window_reach_back_one_after_the_other(tmp_path, shape: str) -> None:
    """A window over a join's matches, or a join of a window's records (semantics §7.11,
    §7.12): the look-back is the window's size plus the join's larger bound, and a run
    from an output start time writes what a run over the whole input writes from it."""
    from tests.spark.streams import write_stream

    for name in ("a", "b"):
        write_stream(tmp_path / "in" / name, seed=5, events=80, files=1)
    inputs = {
        name: {"path": f"in/{name}", "timestamp_by": "t", "arrival_time": "a"}
        for name in ("a", "b")
    }
    window = dict(_WINDOW, group_by=[{"device": "a.device"}])
    join = _JOIN
    if shape != "window over the matches":
        window = dict(_WINDOW, name="w", group_by=["device"])
        join = dict(_JOIN, right="w")
    job = Job.from_dict(
        {
            "inputs": inputs,
            "ordering": {"early_arrival": "5s", "late_arrival": "20s", "out_of_order": "5s"},
            "join": join,
            "window": window,
        },
        base_dir=tmp_path,
    )
    assert look_back(job) == 40 * SECOND
    records = job_records(job)
    full = simulate(job, records, flush=True)
    start = T0 + 60 * SECOND
    cut = simulate(job, job_records(job), flush=True, output_start=start)
    if shape == "window over the matches":
        ends = [w for w in full.windows if parse_instant(w["window_end"]) >= start]
        strip = lambda ws: [{k: v for k, v in w.items() if k != "emitted_at"} for w in ws]  # noqa: E731
        assert strip(cut.windows) == strip(ends) and ends
    else:
        later = [e for e in full.events if parse_instant(e["timestamp"]) >= start]
        assert cut.events == later and later
