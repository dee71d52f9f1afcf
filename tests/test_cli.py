"""The ``sparktide simulate`` command line (semantics §8, §10), run in-process."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jobfiles import BASE_JOB, CONFIG_ERRORS, mutate, write_job
from sparktide.cli import main
from sparktide.time import parse_instant

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def iso(offset_s: float) -> str:
    return (T0 + timedelta(seconds=offset_s)).isoformat().replace("+00:00", "Z")


def event(event_s: float, arrival_s: float, **extra: Any) -> str:
    row = {"event_time": iso(event_s), "arrival_time": iso(arrival_s), "value": 1}
    row.update(extra)
    return json.dumps(row)


#: Every kind of malformed line the reader knows (semantics §8: dead-lettered as malformed).
MALFORMED_LINES: list[str | bytes] = [
    "not json at all",
    '{"event_time": "2026-03-01T12:00:00Z", "arrival_t',
    "[1, 2, 3]",
    '"just a string"',
    json.dumps({"arrival_time": iso(1), "value": 1}),
    json.dumps({"event_time": None, "arrival_time": iso(1)}),
    json.dumps({"event_time": 1772366400, "arrival_time": iso(1)}),
    json.dumps({"event_time": "2026-03-01T12:00:00", "arrival_time": iso(1)}),
    json.dumps({"event_time": "yesterday", "arrival_time": iso(1)}),
    json.dumps({"event_time": iso(0)}),
    b'{"event_time": "2026-03-01T12:00:00Z", "arrival_time": "\xff\xfe"}',
]

#: Good events (event s, arrival s) chosen so that, under the policies below, some are
#: accepted, early, late, out of order, and (with windows) too late for their window.
GOOD_EVENTS = [
    event(0, 1),
    event(5, 6),
    event(200, 7),  # early by more than 1 minute
    event(3, 8),  # out of order
    event(1, 30),  # late by more than 10 s
    event(25, 31),
    event(7, 32),  # behind everything
    event(41, 42),
    event(47, 48),
]


def write_events(folder: Path, lines: list[str | bytes]) -> Path:
    path = folder / "events.jsonl"
    data = b"".join((x if isinstance(x, bytes) else x.encode("utf-8")) + b"\n" for x in lines)
    path.write_bytes(data)
    return path


def simple_job(**changes: Any) -> dict[str, Any]:
    data = {
        "source": {
            "path": "events.jsonl",
            "timestamp_by": "event_time",
            "arrival_time": "arrival_time",
        },
        "ordering": {"early_arrival": "1m", "late_arrival": "10s", "out_of_order": "0s"},
    }
    return mutate(data, changes)


def simulate(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["simulate", *argv], stdout=out)
    return code, out.getvalue()


def records_of(text: str) -> list[dict[str, Any]]:
    lines = text.splitlines()
    assert lines, "no output"
    return [json.loads(line) for line in lines]


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    write_events(tmp_path, GOOD_EVENTS)
    write_job(tmp_path, simple_job())
    return tmp_path


# ---------------------------------------------------------------------------- jsonl


def test_jsonl_one_object_per_line_with_type_metrics_last(job_dir, capsys):
    code, text = simulate([str(job_dir / "job.toml"), "--format", "jsonl"])
    assert code == 0
    assert capsys.readouterr().err == ""
    records = records_of(text)
    for record in records:
        assert isinstance(record, dict)
        assert isinstance(record.get("type"), str)
    assert records[-1]["type"] == "metrics"
    assert [r["type"] for r in records].count("metrics") == 1
    assert {r["type"] for r in records} <= {"event", "window", "dead_letter", "metrics"}
    assert any(r["type"] == "event" for r in records)


def test_jsonl_is_the_default_when_not_a_terminal(job_dir):
    assert simulate([str(job_dir / "job.toml")]) == simulate(
        [str(job_dir / "job.toml"), "--format", "jsonl"]
    )


def test_released_events_are_ordered_by_system_timestamp(job_dir):
    _, text = simulate([str(job_dir / "job.toml")])
    stamps = [parse_instant(r["timestamp"]) for r in records_of(text) if r["type"] == "event"]
    assert stamps == sorted(stamps)


def test_explain_adds_one_decision_per_input_record_in_seq_order(tmp_path):
    lines = GOOD_EVENTS[:3] + MALFORMED_LINES + GOOD_EVENTS[3:]
    write_events(tmp_path, lines)
    job = write_job(tmp_path, simple_job())
    _, plain = simulate([str(job)])
    code, explained = simulate([str(job), "--explain"])
    assert code == 0
    records = records_of(explained)
    decisions = [r for r in records if r["type"] == "decision"]
    assert [d["seq"] for d in decisions] == list(range(len(lines)))
    fields = {
        "seq",
        "partition",
        "key",
        "event_time",
        "arrival_time",
        "processing_time",
        "timestamp",
        "verdict",
        "reasons",
        "watermark",
    }
    for decision in decisions:
        assert fields <= set(decision)
        assert decision["verdict"] in ("accepted", "adjusted", "dropped", "dead_lettered")
        assert isinstance(decision["reasons"], list)
        admitted = decision["verdict"] in ("accepted", "adjusted")
        assert (decision["timestamp"] is not None) == admitted
    malformed = [d for d in decisions if "malformed" in d["reasons"]]
    assert [d["seq"] for d in malformed] == list(range(3, 3 + len(MALFORMED_LINES)))
    assert all(d["verdict"] == "dead_lettered" for d in malformed)
    # The other records are exactly those of the run without --explain.
    assert [r for r in records if r["type"] != "decision"] == records_of(plain)


def test_dead_letters_and_decisions_say_where_the_record_is(tmp_path):
    """docs/semantics.md: ``file`` and ``line`` (1-based) are carried into decisions and
    dead letters, so a user can find the record."""
    write_events(tmp_path, ["", GOOD_EVENTS[0], "not json", "", GOOD_EVENTS[1]])
    job = write_job(tmp_path, simple_job())
    _, text = simulate([str(job), "--explain"])
    records = records_of(text)
    (letter,) = [r for r in records if r["type"] == "dead_letter"]
    assert (letter["seq"], letter["file"], letter["line"]) == (1, "events.jsonl", 3)
    decisions = [r for r in records if r["type"] == "decision"]
    assert [(d.get("file"), d.get("line")) for d in decisions] == [
        ("events.jsonl", 2),
        ("events.jsonl", 3),
        ("events.jsonl", 5),
    ]


POLICIES = {
    "ordered-adjust": simple_job(),
    "ordered-drop": simple_job(
        **{"ordering.action": "drop", "ordering.on_out_of_order": "dead_letter"}
    ),
    "ordered-drop-all": simple_job(**{"ordering.action": "drop"}),
    "ordered-none": simple_job(
        **{
            "ordering.late_arrival": "none",
            "ordering.early_arrival": "none",
            "ordering.out_of_order": "none",
        }
    ),
    "tumbling-accept": simple_job(
        **{
            "ordering.on_out_of_order": "accept",
            "ordering.late_arrival": "none",
            "window": {
                "type": "tumbling",
                "size": "10s",
                "aggregates": {"n": "count(*)", "total": "sum(value)"},
            },
        }
    ),
    "tumbling-accept-drop-late": simple_job(
        **{
            "ordering.on_out_of_order": "accept",
            "window": {"type": "tumbling", "size": "10s", "late": "drop"},
        }
    ),
    "hopping-gaps": simple_job(
        **{"window": {"type": "hopping", "size": "2s", "hop": "10s", "boundary": "end"}}
    ),
    "session": simple_job(
        **{
            "ordering.on_out_of_order": "accept",
            "window": {"type": "session", "gap": "5s", "aggregates": {"n": "count(*)"}},
        }
    ),
    "sliding": simple_job(**{"window": {"type": "sliding", "size": "10s"}}),
}


@pytest.mark.parametrize("flush", [True, False])
@pytest.mark.parametrize("policy", list(POLICIES))
def test_metrics_account_for_every_input_record(tmp_path, policy, flush):
    lines = [*GOOD_EVENTS[:4], *MALFORMED_LINES, *GOOD_EVENTS[4:]]
    write_events(tmp_path, lines)
    job = write_job(tmp_path, POLICIES[policy])
    argv = [str(job), "--explain"] + ([] if flush else ["--no-flush"])
    code, text = simulate(argv)
    assert code == 0
    records = records_of(text)
    metrics = records[-1]
    assert metrics["type"] == "metrics"
    dropped = sum(metrics["dropped"].values())
    dead = sum(metrics["dead_lettered"].values())
    assert metrics["input"] == len(lines)
    assert metrics["input"] == metrics["admitted"] + dropped + dead
    assert metrics["dead_lettered"].get("malformed") == len(MALFORMED_LINES)
    letters = [r for r in records if r["type"] == "dead_letter"]
    assert len(letters) == dead
    for reason, count in metrics["dead_lettered"].items():
        assert sum(1 for r in letters if r["reason"] == reason) == count
    for letter in letters:
        assert {"seq", "reason", "record"} <= set(letter)
        if letter["reason"] == "malformed":
            assert letter["error"]
            assert letter["record"] is not None
        if letter["reason"] == "window_closed":
            assert letter["window_start"] and letter["window_end"]
    decisions = [r for r in records if r["type"] == "decision"]
    verdicts = [d["verdict"] for d in decisions]
    assert verdicts.count("dropped") == dropped
    assert verdicts.count("dead_lettered") == dead
    assert verdicts.count("accepted") + verdicts.count("adjusted") == metrics["admitted"]
    if flush:
        assert metrics["held"] == 0
        if "window" not in POLICIES[policy]:
            assert metrics["released"] == metrics["admitted"]


def test_the_policies_exercise_every_outcome(tmp_path):
    """The accounting test above is only as good as its data: check it has drops,
    dead letters of several reasons and hopping-gap events."""
    seen_dropped: set[str] = set()
    seen_dead: set[str] = set()
    in_no_window = 0
    for name, data in POLICIES.items():
        folder = tmp_path / name
        folder.mkdir()
        write_events(folder, [*GOOD_EVENTS, *MALFORMED_LINES])
        _, text = simulate([str(write_job(folder, data))])
        metrics = records_of(text)[-1]
        seen_dropped |= set(metrics["dropped"])
        seen_dead |= set(metrics["dead_lettered"])
        in_no_window += metrics.get("in_no_window", 0)
    assert {"early", "late", "out_of_order"} <= seen_dropped
    assert {"malformed", "out_of_order", "window_closed"} <= seen_dead
    assert in_no_window > 0


# ---------------------------------------------------------------------------- --until, --tick


def test_until_and_tick_are_accepted(job_dir):
    code, text = simulate(
        [str(job_dir / "job.toml"), "--until", "2026-03-01T12:05:00Z", "--tick", "1s"]
    )
    assert code == 0
    metrics = records_of(text)[-1]
    assert metrics["type"] == "metrics"
    assert metrics["processing_time"] == "2026-03-01T12:05:00Z"


def test_until_with_an_offset(job_dir):
    code, text = simulate([str(job_dir / "job.toml"), "--until", "2026-03-01T13:05:00+01:00"])
    assert code == 0
    assert records_of(text)[-1]["processing_time"] == "2026-03-01T12:05:00Z"


@pytest.mark.parametrize(
    "argv",
    [
        ["--until", "2026-03-01T12:05:00"],
        ["--until", "2026-03-01"],
        ["--until", "soon"],
        ["--tick", "0s"],
        ["--tick", "-1s"],
        ["--tick", "fast"],
        ["--format", "xml"],
        ["--bogus"],
    ],
)
def test_bad_options_exit_2_via_argparse(job_dir, capsys, argv):
    with pytest.raises(SystemExit) as info:
        simulate([str(job_dir / "job.toml"), *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "usage:" in err


def test_naive_until_message_mentions_the_zone(job_dir, capsys):
    with pytest.raises(SystemExit):
        simulate([str(job_dir / "job.toml"), "--until", "2026-03-01T12:05:00"])
    assert "zone" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["simulate"], ["frobnicate", "job.toml"]])
def test_bad_command_lines_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv, stdout=io.StringIO())
    assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


# ---------------------------------------------------------------------------- --no-flush


def test_no_flush_leaves_events_held(tmp_path):
    write_events(tmp_path, GOOD_EVENTS)
    job = write_job(tmp_path, simple_job(**{"ordering.out_of_order": "20s"}))
    _, flushed = simulate([str(job)])
    code, held = simulate([str(job), "--no-flush"])
    assert code == 0
    flushed_metrics, held_metrics = records_of(flushed)[-1], records_of(held)[-1]
    # The last events (41 s and 47 s) are above the final watermark
    # W = max(newest − O, A − L) = max(47 s − 20 s, 48 s − 10 s) = 38 s.
    assert held_metrics["watermark"] == iso(38)
    assert held_metrics["held"] > 0
    assert flushed_metrics["held"] == 0
    assert held_metrics["released"] + held_metrics["held"] == held_metrics["admitted"]
    assert flushed_metrics["released"] == flushed_metrics["admitted"]
    released = [r for r in records_of(held) if r["type"] == "event"]
    assert all(parse_instant(r["timestamp"]) <= parse_instant(iso(38)) for r in released)


def test_no_flush_with_until_releases_what_the_idle_estimate_allows(tmp_path):
    write_events(tmp_path, GOOD_EVENTS)
    job = write_job(tmp_path, simple_job(**{"ordering.out_of_order": "20s"}))
    code, text = simulate([str(job), "--no-flush", "--until", "2026-03-01T12:10:00Z"])
    assert code == 0
    metrics = records_of(text)[-1]
    # Idle estimate at 12:10:00: A = 48 s + (12:10:00 − 48 s) = 12:10:00, W = 12:09:50.
    assert metrics["watermark"] == "2026-03-01T12:09:50Z"
    assert metrics["held"] == 0
    assert metrics["released"] == metrics["admitted"]


def test_no_flush_leaves_windows_open(tmp_path):
    write_events(tmp_path, GOOD_EVENTS)
    job = write_job(tmp_path, simple_job(**{"window": {"type": "tumbling", "size": "10s"}}))
    _, flushed = simulate([str(job)])
    _, open_ = simulate([str(job), "--no-flush"])
    flushed_windows = [r for r in records_of(flushed) if r["type"] == "window"]
    open_windows = [r for r in records_of(open_) if r["type"] == "window"]
    assert len(open_windows) < len(flushed_windows)
    assert records_of(open_)[-1]["open_windows"] > 0
    assert records_of(flushed)[-1]["open_windows"] == 0
    assert open_windows == flushed_windows[: len(open_windows)]


# ---------------------------------------------------------------------------- --format table


def test_table_format_prints_the_sections(tmp_path):
    write_events(tmp_path, [*GOOD_EVENTS, *MALFORMED_LINES])
    job = write_job(tmp_path, simple_job())
    code, text = simulate([str(job), "--format", "table", "--explain"])
    assert code == 0
    for title in ("Decisions", "Released events", "Dead letters", "Metrics"):
        assert title in text
    assert not text.lstrip().startswith("{")


def test_table_format_prints_windows(tmp_path):
    write_events(tmp_path, GOOD_EVENTS)
    job = write_job(
        tmp_path,
        simple_job(**{"window": {"type": "tumbling", "size": "10s", "group_by": ["value"]}}),
    )
    code, text = simulate([str(job), "--format", "table"])
    assert code == 0
    assert "Windows" in text
    assert "Metrics" in text
    assert "Decisions" not in text


# ---------------------------------------------------------------------------- errors


def assert_one_error_line(capsys, *words: str) -> str:
    captured = capsys.readouterr()
    err = captured.err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sparktide: error:")
    for word in words:
        assert word in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("changes", "key"),
    [pytest.param(changes, key, id=name) for name, changes, key in CONFIG_ERRORS],
)
def test_config_errors_exit_2_with_one_line_naming_the_key(tmp_path, capsys, changes, key):
    write_events(tmp_path, GOOD_EVENTS)
    job = write_job(tmp_path, mutate(BASE_JOB, changes))
    code, text = simulate([str(job)])
    assert code == 2
    assert text == ""
    assert_one_error_line(capsys, key)


def test_unknown_key_hint_reaches_the_command_line(tmp_path, capsys):
    job = write_job(tmp_path, mutate(BASE_JOB, {"ordering.late_arival": "5s"}))
    assert simulate([str(job)])[0] == 2
    assert_one_error_line(capsys, "ordering.late_arival", "late_arrival")


def test_missing_input_path_exits_2_naming_source_path(tmp_path, capsys):
    job = write_job(tmp_path, simple_job(**{"source.path": "nowhere/"}))
    code, text = simulate([str(job)])
    assert code == 2
    assert text == ""
    assert_one_error_line(capsys, "source.path", "nowhere")


def test_missing_job_file_exits_2(tmp_path, capsys):
    code, text = simulate([str(tmp_path / "missing.toml")])
    assert code == 2
    assert text == ""
    assert_one_error_line(capsys, "missing.toml")


def test_job_file_not_toml_exits_2(tmp_path, capsys):
    job = tmp_path / "job.toml"
    job.write_text("this is = = not toml\n", encoding="utf-8")
    code, _ = simulate([str(job)])
    assert code == 2
    assert_one_error_line(capsys, "TOML")


def test_version_prints_the_installed_version(capsys):
    from importlib import metadata

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"sparktide {metadata.version('sparktide')}"


def test_chart_without_matplotlib_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    import importlib.util

    from sparktide.errors import ConfigError
    from sparktide.plot import check_chart_path

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )
    with pytest.raises(ConfigError, match=r"sparktide\[plot\]"):
        check_chart_path(tmp_path / "chart.png")


def test_a_misspelled_time_column_is_a_diagnostic_with_the_count(tmp_path):
    """``timestamp_by = "event_tme"``: every record is dead-lettered as malformed; the
    metrics say so (``all_dead_lettered``) instead of finishing without an alarm."""
    write_events(tmp_path, [event(s, s + 1) for s in range(5)])
    write_job(tmp_path, simple_job(**{"source.timestamp_by": "event_tme"}))
    code, out = simulate([str(tmp_path / "job.toml"), "--format", "jsonl"])
    assert code == 0
    metrics = records_of(out)[-1]
    assert metrics["dead_lettered"] == {"malformed": 5}
    assert [d for d in metrics["diagnostics"] if d["kind"] == "all_dead_lettered"] == [
        {
            "kind": "all_dead_lettered",
            "reason": "malformed",
            "count": 5,
            "message": "all 5 input records were dead-lettered (malformed): check that the "
            "job's column names (source.timestamp_by, arrival_time, partition, over) and "
            "time formats match the input; the dead letters say why each record was refused",
        }
    ]
    # one good record among them: no such diagnostic
    write_events(tmp_path, [event(s, s + 1) for s in range(5)] + ["not json"])
    write_job(tmp_path, simple_job())
    code, out = simulate([str(tmp_path / "job.toml"), "--format", "jsonl"])
    kinds = [d["kind"] for d in records_of(out)[-1]["diagnostics"]]
    assert "all_dead_lettered" not in kinds


def test_all_dead_lettered_needs_one_reason_for_every_record():
    from sparktide.core.diagnostics import all_dead_lettered

    assert all_dead_lettered(0, {}) == []
    assert all_dead_lettered(3, {"malformed": 2}) == []
    assert all_dead_lettered(3, {"malformed": 2, "out_of_order": 1}) == []
    (only,) = all_dead_lettered(3, {"window_closed": 3, "malformed": 0})
    assert only["reason"] == "window_closed" and only["count"] == 3
    assert only["message"] == "all 3 input records were dead-lettered (window_closed)"
