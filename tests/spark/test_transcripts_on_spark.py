"""The transcripts of semantics §7 (tests/transcripts/*.toml) on the Spark engine.

Each transcript's input is written as one JSONL file per input (a union: one folder per
input; reference tables as the reference runner writes them) and run by ``run_job`` as
one micro-batch, flushed as ``[run] flush`` says. What the Spark engine writes is held to
the hand-computed ``[expect]`` sections it has: windows, released events and dead letters
(their order aside: Spark's output directories have none) and the metrics counters.
Decisions are ``simulate --explain``'s and are not checked here; processing-time fields
(``emitted_at``, a dead letter's ``seq`` and the metrics' clocks) depend on how input is
cut into micro-batches and are left out. Transcripts driven by ``[run] tick`` (time that
advances while the input is silent) run batch by batch, one per observation instant,
with their processing-time fields checked too (``TICKED``); tests/spark/test_silence.py
runs the same rule as a continuous query.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sparktide.core.records import jsonable
from sparktide.spark import run_job
from tests.spark.streams import clock, read_output
from tests.test_transcripts import (
    TRANSCRIPTS,
    _is_table_list,
    build_job,
    list_mismatches,
    load,
    normalise,
    record_mismatches,
)

#: semantics §7 (issue 7): punctuation, interval and edge events, several inputs, the hold;
#: the analytic columns of semantics §11.19 (the aggregates too); a query of several steps
#: as one job (§13).
SPEC7 = (
    "expression_functions_cast",
    "expression_records_arrays",
    "apply_array_elements",
    "apply_record_properties",
    "window_ordered_aggregates",
    "names_user_window_columns",
    "names_user_event_columns",
    "analytic_lag_isfirst_last",
    "analytic_aggregates",
    "analytic_aggregates_ties_across_batches",
    "cti_both",
    "cti_commits_at_once",
    "cti_commits_strictly_before",
    "cti_explicit",
    "cti_generated_ahead_drop",
    "cti_generated_every_events",
    "cti_generated_every_period",
    "cti_generated_start_edges",
    "cti_generated_negative_delay",
    "cti_interval_tumbling",
    "cti_substreams",
    "cti_time_shift",
    "edge_events_tumbling",
    "event_lifetime_tumbling",
    "interval_hopping_end",
    "interval_release",
    "join_toll_booth",
    "multistep_composed_steps",
    "reference_data_lookup",
    "union_import_ctis",
    "union_merged",
    "union_per_input_policy",
    "window_hopping_hold",
    "output_start_time",
    "system_timestamp_filter",
)

#: Session and sliding windows (semantics §6.2, §6.3), the windows computed from their rows.
ROW_WINDOWS = (
    "window_before_1970_session",
    "window_session_accept",
    "window_session_cut_after_close",
    "window_session_max_duration",
    "window_session_merge",
    "window_sliding",
    "window_sliding_accept",
)

#: Transcripts run a micro-batch per input row: imported CTIs are taken at every
#: observation instant, which for simulate is every record and for Spark every batch.
#: The analytic aggregates' ties meet across batches only so (a kept event and a released
#: one at one timestamp).
PER_ROW = {"union_import_ctis", "analytic_aggregates_ties_across_batches"}

#: Fields that depend on where micro-batches are cut or on the processing-time clock,
#: or that only simulate writes.
BATCH_FIELDS = {"emitted_at", "seq", "processing_time", "type", "watermark_delay_us"}


def write_input(data: dict[str, Any], folder: Path, *, per_row: bool) -> dict[str, Any]:
    """Write the transcript's rows under ``folder`` — one file per input, or with
    ``per_row`` one file per row in every input (empty where another input has the row,
    so that the k-th micro-batch reads the k-th row); the job tables reading them."""
    tables = json.loads(json.dumps(jsonable(data["job"])))
    rows = data["run"]["input"]
    references = data["run"].get("reference", {})
    names = list(tables["inputs"]) if "inputs" in tables else [None]
    for name in names:
        path = folder / "in" / (name or "")
        path.mkdir(parents=True, exist_ok=True)
        if name in references:
            files = [[json.dumps(jsonable(r)) for r in references[name]]]
        else:
            mine = [_line(r) if _input(r) == name else None for r in rows]
            files = (
                [[] if line is None else [line] for line in mine]
                if per_row
                else [[line for line in mine if line is not None]]
            )
        for i, lines in enumerate(files):
            file = path / f"part-{i:03d}.jsonl"
            file.write_text("".join(f"{line}\n" for line in lines))
            os.utime(file, (1_700_000_000 + i, 1_700_000_000 + i))  # (read in this order)
        if name is None:
            tables["source"]["path"] = str(path)
        else:
            tables["inputs"][name]["path"] = str(path)
    tables["output"] = {
        "path": str(folder / "out" / "results"),
        **{n: str(folder / "out" / n) for n in ("dead_letter", "metrics", "checkpoint")},
    }
    return tables


def _input(row: Any) -> str | None:
    return row.get("_input") if isinstance(row, dict) else None


def _line(row: Any) -> str:
    if isinstance(row, str):
        return row
    return json.dumps(jsonable({k: v for k, v in row.items() if k != "_input"}))


def _drop_batch_fields(records: list[Any]) -> list[Any]:
    return [
        {k: v for k, v in r.items() if k not in BATCH_FIELDS} if isinstance(r, dict) else r
        for r in records
    ]


def _in_order(expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``got`` sorted as ``expected`` is (by the fields expected names), so that an
    output without order is compared record by record."""
    names = sorted({k for record in expected for k in record})

    def key(record: dict[str, Any]) -> str:
        return json.dumps([record.get(n) for n in names], default=str)

    position = {key(record): i for i, record in enumerate(expected)}
    return sorted(got, key=lambda r: (position.get(key(r), len(expected)), key(r)))


@pytest.mark.parametrize("name", SPEC7 + ROW_WINDOWS)
def test_transcript_on_spark(spark, tmp_path: Path, name: str) -> None:
    data = load(TRANSCRIPTS / f"{name}.toml")
    assert not {"until", "tick"} & set(data["run"]), "processing-time runs are simulate's"
    per_row = name in PER_ROW
    job = build_job(write_input(data, tmp_path, per_row=per_row))
    metrics = run_job(
        job,
        once=True,
        flush=data["run"].get("flush", True),
        spark=spark,
        max_files_per_trigger=1 if per_row else None,
        clock=clock,
        publish=False,
        output_start_time=data["run"].get("output_start_time"),
    )
    assert metrics is not None
    expect = normalise(data["expect"])
    windowed = job.window is not None and not job.joins_windows  # (§7.12 writes matches)
    outputs = {
        "windows": read_output(job.output.path) if windowed else [],
        "events": read_output(job.output.path) if not windowed else [],
        "dead_letters": read_output(job.output.dead_letter),
    }
    problems = []
    for section, got in outputs.items():
        if section not in expect:
            continue
        want = _drop_batch_fields(expect[section])
        problems += list_mismatches(want, _in_order(want, got), section)
    if "metrics" in expect:
        counters = {
            k: v
            for k, v in expect["metrics"].items()
            if k not in BATCH_FIELDS and not _is_table_list(v) and k not in ("watermark",)
        }
        _row_windows_gauge(name, job, counters, metrics)
        problems += record_mismatches(counters, metrics, "metrics")
    assert not problems, f"{name}: " + "\n".join(problems)


def _row_windows_gauge(name: str, job: Any, counters: dict[str, Any], metrics: Any) -> None:
    """Spark keeps session and sliding windows' rows, not the windows: its gauge is
    ``window_rows`` where simulate counts ``open_windows``; no open window is no row
    kept."""
    if job.window is not None and job.window.type in ("session", "sliding"):
        if counters.pop("open_windows", None) == 0:
            assert metrics["window_rows"] == 0, f"{name}: rows kept with no open window"


#: Transcripts observed at ticks (``[run] tick``, ``until``): time advances while the
#: input is silent (semantics §2.5). On Spark each observation instant is a micro-batch,
#: with the rows seen then, or none (a continuous run's batch on its trigger).
TICKED = (
    "silent_input_ticks",
    "silent_single_partition",
    "window_session_idle_timeout",
    "window_sliding_idle_timeout",
)


@pytest.mark.parametrize("name", TICKED)
def test_ticked_transcript_on_spark(spark, tmp_path: Path, name: str) -> None:
    from sparktide.core.instants import observation_instants
    from sparktide.spark import SparkEngine
    from sparktide.time import parse_duration, parse_instant

    data = load(TRANSCRIPTS / f"{name}.toml")
    run = data["run"]
    job = build_job(write_input(data, tmp_path, per_row=False))
    seen = [parse_instant(row[job.source.arrival_time]) for row in run["input"]]
    instants = observation_instants(
        set(seen), until=parse_instant(run["until"]), tick=parse_duration(run["tick"])
    )
    engine = SparkEngine(spark, job)
    for batch_id, now in enumerate(instants):
        lines = [
            ("part-000.jsonl", line, _line(row), 0)
            for line, (row, at) in enumerate(zip(run["input"], seen, strict=True), start=1)
            if at == now
        ]
        frame = spark.createDataFrame(lines, "file string, line bigint, raw string, mtime bigint")
        metrics = engine.process(frame, batch_id, now, silent=not lines)
    expect = normalise(data["expect"])
    got = read_output(job.output.path)
    want = [{k: v for k, v in w.items() if k != "type"} for w in expect["windows"]]
    problems = list_mismatches(want, _in_order(want, got), "windows")  # emitted_at too
    counters = {k: v for k, v in expect["metrics"].items() if not _is_table_list(v)}
    _row_windows_gauge(name, job, counters, metrics)
    problems += record_mismatches(counters, metrics, "metrics")
    if "diagnostics" in expect["metrics"]:  # the last batch's (semantics §8.4)
        # (Spark names partitions by their text, as test_differential compares them)
        want = [{**d, "partition": str(d["partition"])} for d in expect["metrics"]["diagnostics"]]
        problems += list_mismatches(want, metrics["diagnostics"], "metrics.diagnostics")
    assert not problems, f"{name}: " + "\n".join(problems)


#: Transcripts whose diagnostics are one interval's: every record seen at one
#: processing time, ``flush = false``. On Spark they are one micro-batch, whose metrics
#: record (diagnostics included: ``missing_column``, ``all_dead_lettered``) is checked.
DIAGNOSED = ("missing_columns", "missing_time_column", "missing_join_key")


@pytest.mark.parametrize("name", DIAGNOSED)
def test_diagnosed_transcript_on_spark(spark, tmp_path: Path, name: str) -> None:
    data = load(TRANSCRIPTS / f"{name}.toml")
    assert data["run"]["flush"] is False and not {"until", "tick"} & set(data["run"])
    job = build_job(write_input(data, tmp_path, per_row=False))
    metrics = run_job(job, once=True, flush=False, spark=spark, clock=clock, publish=False)
    assert metrics is not None and metrics["batch"] == 0
    expect = normalise(data["expect"])
    counters = {
        k: v
        for k, v in expect["metrics"].items()
        if k not in BATCH_FIELDS and not _is_table_list(v)
    }
    problems = record_mismatches(counters, metrics, "metrics")
    problems += list_mismatches(
        expect["metrics"]["diagnostics"], metrics["diagnostics"], "metrics.diagnostics"
    )
    for section in ("windows", "events"):
        if section in expect:
            problems += list_mismatches(expect[section], read_output(job.output.path), section)
    assert not problems, f"{name}: " + "\n".join(problems)
