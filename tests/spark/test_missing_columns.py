"""``missing_column`` on Spark (semantics §8.4): a column the job names that no input
record of a micro-batch holds is a diagnostic of that batch, as ``simulate`` reports it
for the same records — on the one-pass plan and on the general plan."""

from __future__ import annotations

import json
from pathlib import Path

from sparktide.core.engine import simulate
from sparktide.job import Job
from sparktide.reader import job_records
from sparktide.time import SECOND, format_instant
from tests.spark.streams import BASE, clock, file_batches, job_for, metrics_of_once_run


def _write(directory: Path) -> None:
    """Two files, one micro-batch each, partitions 0 and 1 in both. ``temperature``,
    ``device`` and ``speed`` in every record; ``w`` only in the second file's; the first
    file also holds a line that is not JSON (a malformed record without fields)."""
    directory.mkdir(parents=True)
    for n in range(2):
        lines = []
        for i in range(6):
            a = BASE + (n * 6 + i) * SECOND
            row = {"p": i % 2, "t": format_instant(a), "a": format_instant(a)}
            row |= {"device": f"d{i % 3}", "temperature": 20 + i, "speed": i}
            if n == 1:
                row["w"] = i
            lines.append(json.dumps(row))
        if n == 0:
            lines.insert(3, "{not json")
        (directory / f"part-{n}.jsonl").write_text("\n".join(lines) + "\n")


def _missing(diagnostics: list[dict]) -> list[dict]:
    return [d for d in diagnostics if d["kind"] == "missing_column"]


def _run(spark, tmp_path: Path, tables: dict) -> tuple[Job, list[dict]]:
    _write(tmp_path / "in")
    job = job_for(tmp_path, tables)
    records = metrics_of_once_run(spark, job)
    return job, records


def _reference_batch(job: Job, batch: int) -> list[dict]:
    """``simulate``'s ``missing_column`` diagnostics over micro-batch ``batch``'s records
    alone (its interval is the whole run)."""
    batches = file_batches(job.output.checkpoint)
    records = [r for r in job_records(job) if batches[r.file] == batch]
    for record in records:
        record.processing_time = clock(batch)
    return _missing(simulate(job, records, flush=False, explain=False).metrics["diagnostics"])


_WINDOW = {
    "type": "tumbling",
    "size": "10s",
    "group_by": ["devce"],
    "aggregates": {"avg_t": "avg(temprature)", "n": "count(*)", "sw": "sum(w)"},
}


def _check(job: Job, records: list[dict], want: list[list[tuple[str, str]]]) -> None:
    assert [r["batch"] for r in records] == list(range(len(want)))
    for record, columns in zip(records, want, strict=True):
        got = _missing(record["diagnostics"])
        assert [(d["column"], d["role"]) for d in got] == columns
        assert all(d["count"] == record["this_batch"]["input"] for d in got)
        assert got == _reference_batch(job, record["batch"])


def test_misspelled_aggregate_and_group_columns_on_the_one_pass_plan(spark, tmp_path):
    """``avg(temprature)`` and ``group_by = ["devce"]`` (the issue's typos): each batch
    says so; ``sum(w)`` only in the batch without ``w``. The one-pass tasks count the
    vouched rows, the SQL route the line that is not JSON."""
    job, records = _run(spark, tmp_path, {"source": {"partition": "p"}, "window": _WINDOW})
    assert [r["plan"] for r in records] == ["one_pass", "one_pass"]
    assert [r["this_batch"]["input"] for r in records] == [7, 6]
    avg = ("temprature", "window.aggregates.avg_t = avg(temprature)")
    group = ("devce", "window.group_by")
    _check(job, records, [[group, avg, ("w", "window.aggregates.sw = sum(w)")], [group, avg]])
    message = _missing(records[1]["diagnostics"])[1]["message"]
    assert message.startswith("column 'temprature' (window.aggregates.avg_t = avg(temprature))")
    assert "none of the 6 input records" in message


def test_misspelled_columns_on_the_general_plan(spark, tmp_path):
    """The same job with a filter over a misspelled field takes the general plan."""
    tables = {"source": {"partition": "p"}, "window": _WINDOW, "filter": {"where": "spede >= 0"}}
    job, records = _run(spark, tmp_path, tables)
    assert [r["plan"] for r in records] == ["general", "general"]
    avg = ("temprature", "window.aggregates.avg_t = avg(temprature)")
    group, where = ("devce", "window.group_by"), ("spede", "filter.where")
    sw = ("w", "window.aggregates.sw = sum(w)")
    _check(job, records, [[group, avg, sw, where], [group, avg, where]])


def test_misspelled_time_column(spark, tmp_path):
    """``timestamp_by = "event_tme"``: every record is malformed (``all_dead_lettered``)
    and the column is named (``missing_column``), batch by batch."""
    job, records = _run(
        spark, tmp_path, {"source": {"partition": "p", "timestamp_by": "event_tme"}}
    )
    _check(job, records, [[("event_tme", "source.timestamp_by")]] * 2)
    kinds = [[d["kind"] for d in r["diagnostics"]] for r in records]
    assert kinds == [["all_dead_lettered", "missing_column"]] * 2
