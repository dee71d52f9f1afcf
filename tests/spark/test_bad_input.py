"""The bad-input catalogue on Spark: the same dead letters, windows and counters as the
reference engine (``emitted_at`` aside), for JSON lines, CSV and Parquet files mixing
every kind of malformed record with good ones (``tests/badinput.py``); and text from job
files and from the data that would be dangerous as SQL stays text.

One Spark job per input format, all files in one micro-batch, plus one small job for
the injection strings.
"""

from __future__ import annotations

import glob
import json
import tempfile
import uuid
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from sparktide.job import Job
from sparktide.spark import run_job
from sparktide.spark.sql import sql_string
from tests import badinput
from tests.badinput import assert_accounted
from tests.spark.streams import clock, file_batches, read_output, reference, strip
from tests.spark.test_differential import _close, assert_same_counters

WRITERS = {
    "jsonl": badinput.jsonl_files,
    "csv": badinput.csv_files,
    "parquet": badinput.parquet_files,
}
OUTPUT = {
    "path": "out/results",
    "dead_letter": "out/dead_letter",
    "metrics": "out/metrics",
    "checkpoint": "out/checkpoint",
}


def _compare(job: Job, metrics: dict, *, flush: bool = True) -> None:
    """The Spark run's records and counters against the reference engine's."""
    expected = reference(job, file_batches(job.output.checkpoint), flush=flush)
    assert_accounted(metrics)
    assert_same_counters(metrics, expected.metrics)
    want_dead = {(d["file"], d["line"]): strip(d, "type", "seq") for d in expected.dead_letters}
    got_dead = {(d["file"], d["line"]): d for d in read_output(job.output.dead_letter)}
    assert got_dead.keys() == want_dead.keys()
    different = {  # compared as JSON text: 3 == 3.0 in Python, not in the records
        k: (got_dead[k], want_dead[k])
        for k in want_dead
        if json.dumps(got_dead[k], sort_keys=True) != json.dumps(want_dead[k], sort_keys=True)
    }
    assert not different
    want = sorted((strip(w, "type", "emitted_at") for w in expected.windows), key=_window_key)
    got = sorted((strip(w, "emitted_at") for w in read_output(job.output.path)), key=_window_key)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert _close(g, w), (g, w)


def _window_key(window: dict) -> str:
    return json.dumps([window.get(k) for k in sorted(window) if k not in ("n", "total", "hi")])


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_spark_dead_letters_the_catalogue_as_the_reference_does(spark, tmp_path, fmt):
    expected = WRITERS[fmt](tmp_path / "in")
    job = badinput.job_for(tmp_path, fmt, **OUTPUT)
    # the windows' end (a flush, one more pass) is checked for JSON lines; the catalogue
    # stops no windows from closing in the others (none closes before the flush)
    flush = fmt == "jsonl"
    metrics = run_job(job, once=True, flush=flush, spark=spark, clock=clock, publish=False)
    assert metrics is not None
    _compare(job, metrics, flush=flush)
    letters = {(d["file"], d["line"]): d for d in read_output(job.output.dead_letter)}
    for file, entries in expected.items():  # the catalogue's own errors, not just equality
        for n, name, error in entries:
            if error is None:
                assert (file, n) not in letters, name
            else:
                letter = letters[(file, n)]
                assert (letter["reason"], letter["error"]) == ("malformed", error.format(n=n))


#: Strings that would do harm as SQL text; ``{probe}`` is the prefix of a file that
#: exists afterwards only if one of them ran (``reflect`` creates a temporary file).
INJECTIONS = [
    "`",
    "'",
    '"',
    "\\",
    "'; DROP TABLE x; --",
    "x') , reflect('java.lang.Runtime','getRuntime')",
    "java_method('java.lang.System', 'exit', 1)",
    "') OR reflect('java.io.File', 'createTempFile', '{probe}', '.txt') IS NOT NULL OR ('",
    "x` , reflect('java.io.File', 'createTempFile', '{probe}', '.txt') AS `y",
    "line\nbreak",
    "${spark.app.name}",
    "${system:user.home}",
    "${env:HOME}",
    "/* comment */",
    "-- comment",
    "\u0000",
    "é\u2028😀",
]


def test_sql_string_keeps_any_text(spark):
    """Every injection string, written by ``sql_string`` into an expression, reads back as
    itself: no quote ends the literal, no ``${...}`` is substituted."""
    probe = f"sparktide-probe-{uuid.uuid4().hex}"
    texts = [s.replace("{probe}", probe) for s in INJECTIONS]
    row = spark.range(1).select(*(F.expr(sql_string(s)) for s in texts)).collect()[0]
    assert list(row) == texts
    assert not glob.glob(f"{tempfile.gettempdir()}/{probe}*")


def test_injection_strings_in_the_data_and_odd_names_in_the_job_stay_text(spark, tmp_path):
    probe = f"sparktide-probe-{uuid.uuid4().hex}"
    # the payload is live: run as SQL, it creates the probe file (then removed)
    created = spark.sql(
        f"SELECT reflect('java.io.File', 'createTempFile', '{probe}-control', '.txt')"
    ).collect()[0][0]
    assert Path(created).exists()
    Path(created).unlink()
    folder = tmp_path / "in"
    folder.mkdir()
    rows = []
    for i, text in enumerate(INJECTIONS):
        value = text.replace("{probe}", probe)
        second = 5 + 2 * i
        rows.append(
            {
                "t--x": f"2026-03-01T09:00:{second:02d}Z",
                "a-": f"2026-03-01T09:00:{second + 1:02d}Z",
                "p_-": value,  # partition ids reach the engine's SQL as data
                "_": value,
                "v--1": i,
            }
        )
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    lines.append(json.dumps({"t--x": "${spark.app.name}", "a-": "x", "p_-": "'"}))
    (folder / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    odd = "out/it's $HOME #1 %2 ~ (x) -- ; DROP"
    job = Job.from_dict(
        {
            "source": {
                "path": "in",
                "timestamp_by": "t--x",
                "arrival_time": "a-",
                "partition": "p_-",
            },
            "ordering": {"late_arrival": "1m", "out_of_order": "1m", "partitioned": True},
            "window": {
                "type": "tumbling",
                "size": "1m",
                "group_by": ["p_-"],
                "aggregates": {"n--": "count(*)", "s-": "sum(v--1)", "m": "max(_)"},
            },
            "output": {
                "path": f"{odd}/results",
                "dead_letter": f"{odd}/dead_letter",
                "metrics": f"{odd}/metrics",
                "checkpoint": f"{odd}/checkpoint",
            },
        },
        base_dir=tmp_path,
    )
    metrics = run_job(job, once=True, flush=True, spark=spark, clock=clock, publish=False)
    assert metrics is not None
    expected = reference(job, file_batches(job.output.checkpoint))
    assert_same_counters(metrics, expected.metrics)
    want = sorted(
        json.dumps(strip(w, "type", "emitted_at"), sort_keys=True) for w in expected.windows
    )
    got = sorted(
        json.dumps(strip(w, "emitted_at"), sort_keys=True) for w in read_output(job.output.path)
    )
    assert got == want
    partitions = {w["p_-"] for w in read_output(job.output.path)}
    assert partitions == {text.replace("{probe}", probe) for text in INJECTIONS}
    (letter,) = read_output(job.output.dead_letter)
    assert (
        letter["error"]
        == "column 'a-': time 'x' is not an ISO-8601 date-time with a zone (YYYY-MM-DDThh:mm:ssZ)"
    )
    assert (tmp_path / "out" / "it's $HOME #1 %2 ~ (x) -- ; DROP" / "results").is_dir()
    assert not glob.glob(f"{tempfile.gettempdir()}/{probe}*")
