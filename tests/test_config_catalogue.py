"""The bad-configuration catalogue: every job-file mistake a user is likely to make gives
one clear line on stderr naming the key, exit status 2 and no traceback, from
``sparktide simulate`` and from ``sparktide run`` — which must fail before it starts
Spark (a guard makes starting a session fail the test).

Each entry is a change to a valid job (``tests/jobfiles.py``), or a whole job file, with
the key (and any other words) its message must name.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from jobfiles import BASE_JOB, CONFIG_ERRORS, DELETE, mutate, write_job
from sparktide.cli import main
from tests.test_cli import assert_one_error_line

_HOPPING = {"window.type": "hopping", "window.size": "1h"}

#: (id, changes to BASE_JOB, words the one error line must hold: the key first)
MISTAKES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    # typos
    ("table-typo", {"sorce": {"path": "x"}}, ("sorce", "source")),
    ("key-typo", {"source.timestamp_By": "t"}, ("source.timestamp_By", "timestamp_by")),
    ("key-typo-window", {"window.group-by": ["device"]}, ("window.group-by", "group_by")),
    ("key-in-wrong-table", {"ordering.size": "5m"}, ("ordering.size",)),
    ("key-at-top-level", {"late_arrival": "5s"}, ("late_arrival",)),
    # durations: units, signs, types, size
    ("unit-with-space", {"ordering.late_arrival": "5 sec"}, ("ordering.late_arrival", "5 sec")),
    ("unit-spelled-out", {"window.size": "5minutes"}, ("window.size", "5minutes")),
    ("unit-missing", {"ordering.out_of_order": "30"}, ("ordering.out_of_order",)),
    ("fraction", {"window.size": "1.5m"}, ("window.size",)),
    ("iso-8601-duration", {"window.size": "PT5M"}, ("window.size",)),
    ("units-out-of-order", {"window.size": "30s1m"}, ("window.size",)),
    ("empty-duration", {"ordering.late_arrival": ""}, ("ordering.late_arrival",)),
    ("bare-number", {"ordering.late_arrival": 5}, ("ordering.late_arrival", '"5s"')),
    ("negative", {"ordering.early_arrival": "-1m"}, ("ordering.early_arrival", "negative")),
    ("negative-offset", {"window.offset": "-1s"}, ("window.offset",)),
    ("too-long", {"window.allowed_lateness": "36501d"}, ("window.allowed_lateness", "100 years")),
    ("none-where-required", {"window.offset": "none"}, ("window.offset",)),
    ("list-duration", {"ordering.late_arrival": ["5s"]}, ("ordering.late_arrival",)),
    ("boolean-duration", {"window.size": True}, ("window.size",)),
    # windows
    ("hop-zero", {**_HOPPING, "window.hop": "0s"}, ("window.hop", "greater than zero")),
    ("hop-missing", {"window.type": "hopping"}, ("window.hop", "required")),
    ("hop-on-tumbling", {"window.hop": "1m"}, ("window.hop", "tumbling")),
    ("hop-tiny", {**_HOPPING, "window.hop": "1ms"}, ("window.hop", "3,600,000 windows")),
    ("size-missing", {"window.size": DELETE}, ("window.size", "required")),
    (
        "gap-zero",
        {"window.type": "session", "window.size": DELETE, "window.gap": "0s"},
        ("window.gap",),
    ),
    ("type-missing", {"window.type": DELETE}, ("window.type", "required")),
    ("type-unknown", {"window.type": "rolling"}, ("window.type", "tumbling")),
    ("type-capitalised", {"window.type": "Tumbling"}, ("window.type",)),
    ("window-not-a-table", {"window": "tumbling"}, ("window",)),
    ("boundary-unknown", {"window.boundary": "both"}, ("window.boundary",)),
    ("late-unknown", {"window.late": "keep"}, ("window.late",)),
    # group_by and substreams / partitions
    ("group-by-without-substream-key", {"source.over": "site"}, ("window.group_by", "'site'")),
    (
        "group-by-without-partition",
        {"ordering.partitioned": True, "window.group_by": ["device"]},
        ("window.group_by", "'partition'"),
    ),
    ("group-by-a-string", {"window.group_by": "device"}, ("window.group_by",)),
    ("group-by-a-number", {"window.group_by": [1]}, ("window.group_by",)),
    ("group-by-reserved", {"window.group_by": ["type"]}, ("window.group_by",)),
    # aggregates
    (
        "aggregate-unknown",
        {"window.aggregates": {"m": "median(value)"}},
        ("window.aggregates.m", "median"),
    ),
    ("aggregate-typo", {"window.aggregates": {"s": "summ(value)"}}, ("window.aggregates.s",)),
    ("aggregate-no-column", {"window.aggregates": {"s": "sum()"}}, ("window.aggregates.s",)),
    ("aggregate-star", {"window.aggregates": {"s": "avg(*)"}}, ("window.aggregates.s",)),
    ("aggregate-two-columns", {"window.aggregates": {"s": "sum(a, b)"}}, ("window.aggregates.s",)),
    (
        "aggregate-expression",
        {"window.aggregates": {"s": "sum(value * )"}},
        ("window.aggregates.s",),
    ),
    ("aggregate-nested", {"window.aggregates": {"s": "sum(max(value))"}}, ("window.aggregates.s",)),
    ("aggregate-not-text", {"window.aggregates": {"s": 5}}, ("window.aggregates.s",)),
    ("aggregates-a-list", {"window.aggregates": ["count(*)"]}, ("window.aggregates",)),
    (
        "aggregate-bad-name",
        {"window.aggregates": {"total sum": "sum(value)"}},
        ("window.aggregates.total sum",),
    ),
    (
        "aggregate-clashes",
        {"window.aggregates": {"device": "count(*)"}},
        ("window.aggregates.device",),
    ),
    # source
    ("path-missing", {"source.path": DELETE}, ("source.path", "required")),
    ("path-empty", {"source.path": ""}, ("source.path",)),
    ("path-not-text", {"source.path": 5}, ("source.path",)),
    ("path-with-colon", {"source.path": "events:1.jsonl"}, ("source.path", "':'")),
    ("path-with-pattern", {"source.path": "events/*.jsonl"}, ("source.path", "'*'")),
    ("path-with-nul", {"source.path": "events\x00.jsonl"}, ("source.path",)),
    ("format-unknown", {"source.format": "json"}, ("source.format", "jsonl")),
    ("format-capitalised", {"source.format": "CSV"}, ("source.format",)),
    ("column-with-space", {"source.timestamp_by": "event time"}, ("source.timestamp_by",)),
    ("column-not-text", {"source.partition": 3}, ("source.partition",)),
    ("column-a-list", {"source.partition": ["device"]}, ("source.partition",)),
    ("over-a-list-of-numbers", {"source.over": [1, 2]}, ("source.over[0]", "column name")),
    ("partitions-text", {"source.partitions": "4"}, ("source.partitions",)),
    ("partitions-float", {"source.partitions": 4.0}, ("source.partitions",)),
    ("partitions-without-partition", {"source.partition": DELETE}, ("source.partitions",)),
    ("source-not-a-table", {"source": "events.jsonl"}, ("source",)),
    ("source-missing", {"source": DELETE}, ("source", "required")),
    # ordering
    ("action-unknown", {"ordering.action": "ignore"}, ("ordering.action", "adjust")),
    (
        "on-out-of-order-unknown",
        {"ordering.on_out_of_order": "keep"},
        ("ordering.on_out_of_order",),
    ),
    ("partitioned-text", {"ordering.partitioned": "true"}, ("ordering.partitioned",)),
    (
        "partitioned-without-partition",
        {"ordering.partitioned": True, "source.partition": DELETE, "source.partitions": DELETE},
        ("ordering.partitioned", "source.partition"),
    ),
    ("ordering-not-a-table", {"ordering": ["adjust"]}, ("ordering",)),
    # event lifetimes
    ("duration-zero", {"source.duration": "0s"}, ("source.duration", "greater than zero")),
    ("duration-not-a-duration", {"source.duration": "soon"}, ("source.duration", "soon")),
    (
        "duration-with-session-window",
        {
            "source.duration": "5s",
            "window.type": "session",
            "window.size": DELETE,
            "window.gap": "10s",
        },
        ("window.type", "source.duration"),
    ),
    # output
    ("output-format-unknown", {"output.format": "csv"}, ("output.format",)),
    ("output-path-not-text", {"output.path": ["out"]}, ("output.path",)),
    ("output-path-with-braces", {"output.checkpoint": "ck/{x}"}, ("output.checkpoint", "'{'")),
    ("output-not-a-table", {"output": "out/"}, ("output",)),
    (
        "flush-on-stop-not-a-boolean",
        {"output.flush_on_stop": "yes"},
        ("output.flush_on_stop", "'yes'"),
    ),
]

#: Whole job files that are not valid TOML (or not a job at all): (id, text, words).
FILES: list[tuple[str, str | bytes, tuple[str, ...]]] = [
    ("toml-syntax", "[source]\npath = events.jsonl\n", ("TOML", "line 2")),
    ("toml-unclosed-string", '[source]\npath = "events.jsonl\n', ("TOML",)),
    ("toml-duplicate-key", '[source]\npath = "a"\npath = "b"\n', ("TOML",)),
    ("toml-duplicate-table", '[source]\npath = "a"\n[source]\nformat = "csv"\n', ("TOML",)),
    ("not-utf8", b'[source]\npath = "\xff"\n', ("TOML",)),
    ("empty", "", ("source", "required")),
    ("array-of-tables", '[[source]]\npath = "a"\n', ("source",)),
]

#: Mistakes only ``sparktide run`` can see (``simulate`` runs these jobs).
RUN_ONLY: list[tuple[str, dict[str, Any], list[str], tuple[str, ...]]] = [
    ("no-output-path", {"output.path": DELETE}, [], ("output.path", "required")),
    ("no-checkpoint", {"output.checkpoint": DELETE}, [], ("output.checkpoint", "required")),
    ("trigger-unit", {}, ["--trigger", "5 sec"], ("--trigger", "5 sec")),
    ("trigger-zero", {}, ["--trigger", "0s"], ("--trigger",)),
    ("max-files-zero", {}, ["--max-files-per-trigger", "0"], ("--max-files-per-trigger",)),
]


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    """Starting a Spark session fails the test: ``run`` must stop before it."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("sparktide run started Spark for a job it should reject")

    import sparktide.spark.run

    monkeypatch.setattr(sparktide.spark.run, "local_session", refuse)


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "events.jsonl").write_text(
        '{"event_time": "2026-03-01T12:00:00Z", "arrival_time": "2026-03-01T12:00:01Z", '
        '"partition": 0, "device": "d1", "value": 1}\n',
        encoding="utf-8",
    )
    return tmp_path


def _cli(capsys, command: str, job: Path, *options: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main([command, str(job), *options], stdout=out)
    return code, out.getvalue()


def _check(capsys, command: str, job: Path, words: tuple[str, ...], *options: str) -> None:
    code, out = _cli(capsys, command, job, *options)
    assert (code, out) == (2, "")
    assert_one_error_line(capsys, *words)


@pytest.mark.parametrize("command", ["simulate", "run"])
@pytest.mark.parametrize(
    ("changes", "words"), [pytest.param(c, w, id=name) for name, c, w in MISTAKES]
)
def test_job_file_mistakes(tmp_path, capsys, command, changes, words):
    job = write_job(_folder(tmp_path), mutate(BASE_JOB, changes))
    _check(capsys, command, job, words)


@pytest.mark.parametrize("command", ["simulate", "run"])
@pytest.mark.parametrize(
    ("changes", "key"), [pytest.param(c, k, id=name) for name, c, k in CONFIG_ERRORS]
)
def test_the_older_catalogue_also_stops_run(tmp_path, capsys, command, changes, key):
    job = write_job(_folder(tmp_path), mutate(BASE_JOB, changes))
    _check(capsys, command, job, (key,))


@pytest.mark.parametrize("command", ["simulate", "run"])
@pytest.mark.parametrize(("text", "words"), [pytest.param(t, w, id=n) for n, t, w in FILES])
def test_bad_job_files(tmp_path, capsys, command, text, words):
    job = tmp_path / "job.toml"
    if isinstance(text, bytes):
        job.write_bytes(text)
    else:
        job.write_text(text, encoding="utf-8")
    _check(capsys, command, job, words)


@pytest.mark.parametrize("command", ["simulate", "run"])
def test_job_file_that_does_not_exist(tmp_path, capsys, command):
    _check(capsys, command, tmp_path / "nope.toml", ("nope.toml", "cannot read"))


@pytest.mark.parametrize("command", ["simulate", "run"])
def test_job_file_that_is_a_folder(tmp_path, capsys, command):
    _check(capsys, command, tmp_path, ("cannot read",))


@pytest.mark.parametrize("command", ["simulate", "run"])
def test_input_path_that_does_not_exist(tmp_path, capsys, command):
    job = write_job(tmp_path, mutate(BASE_JOB, {"source.path": "nowhere/"}))
    _check(capsys, command, job, ("source.path", "nowhere"))


def test_run_needs_a_directory_to_watch(tmp_path, capsys):
    """simulate reads a single input file; run watches a directory, and says so before
    Spark starts (not a Spark trace from inside the query)."""
    (tmp_path / "events.jsonl").write_text("")
    job = write_job(tmp_path, mutate(BASE_JOB, {"source.path": "events.jsonl"}))
    _check(capsys, "run", job, ("source.path", "events.jsonl", "is a file", "directory"))
    code, _ = _cli(capsys, "simulate", job)
    assert code == 0


@pytest.mark.parametrize(
    ("changes", "options", "words"),
    [pytest.param(c, o, w, id=name) for name, c, o, w in RUN_ONLY],
)
def test_mistakes_only_run_can_see(tmp_path, capsys, changes, options, words):
    job = write_job(_folder(tmp_path), mutate(BASE_JOB, changes))
    _check(capsys, "run", job, words, *options)
    code, out = _cli(capsys, "simulate", job)  # the reference engine runs the same job
    assert code == 0 and out
    assert capsys.readouterr().err == ""


def test_the_base_job_is_valid_for_both_commands(tmp_path, capsys):
    """The catalogue's base job passes every check: ``run`` gets as far as starting Spark
    (which the guard refuses), ``simulate`` runs it."""
    (tmp_path / "in").mkdir()
    _folder(tmp_path / "in")
    job = write_job(tmp_path, mutate(BASE_JOB, {"source.path": "in"}))  # run watches it
    code, out = _cli(capsys, "simulate", job)
    assert code == 0 and out
    with pytest.raises(AssertionError, match="started Spark"):
        _cli(capsys, "run", job, "--once", "--trigger", "10 seconds")


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({**_HOPPING, "window.hop": "2h"}, id="hop-larger-than-size"),
        pytest.param({"window.size": "5M"}, id="unit-in-capitals"),
        pytest.param({"window.aggregates": {"n": "COUNT( * )"}}, id="aggregate-in-capitals"),
        pytest.param({"output.path": "out dir/it's #1 (x)"}, id="odd-but-literal-path"),
    ],
)
def test_accepted_on_purpose(tmp_path, capsys, changes):
    """Not mistakes: a hop larger than the size leaves gaps (semantics §6, counted as
    ``in_no_window``); units and function names are case-insensitive; any path without
    pattern characters is taken literally."""
    job = write_job(_folder(tmp_path), mutate(BASE_JOB, changes))
    code, out = _cli(capsys, "simulate", job)
    assert code == 0 and out
    assert capsys.readouterr().err == ""
