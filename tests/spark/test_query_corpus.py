"""The query corpus on Spark: each Stream Analytics query and Atlas pipeline of
``tests/query/corpus``, translated, runs through ``sparktide run`` and gives the reference
engine's records (observed at the same micro-batch times), and the records worked out
by hand in the case's ``expected.toml`` wherever processing time cannot change them.
A query of several statements runs one job per statement, one after the other."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparktide.job import Job
from sparktide.query import translate_file
from sparktide.spark import run_job
from tests.query.test_corpus import CASES, compare, expectations, query_file
from tests.spark.streams import clock, file_batches, read_output, reference, strip
from tests.spark.test_differential import _close, _key


def on_spark(job: Job, folder: Path) -> Job:
    """``job`` reading a copy of its input files under ``folder/in`` (a union's or a join's
    input ``<name>`` in ``in/<name>``, as Spark's file-source log names it; reference data
    ``<name>`` in ``ref/<name>``) and writing under ``folder/out``."""

    def copy(path: str, into: Path) -> str:
        into.mkdir(parents=True)
        shutil.copy(Path(path), into / Path(path).name)
        return str(into)

    if job.inputs:
        inputs = tuple(
            (name, dataclasses.replace(source, path=copy(source.path, folder / "in" / name)))
            for name, source in job.inputs
        )
        references = tuple(
            (name, dataclasses.replace(table, path=copy(table.path, folder / "ref" / name)))
            for name, table in job.references
        )
        job = dataclasses.replace(job, source=inputs[0][1], inputs=inputs, references=references)
    else:
        source = dataclasses.replace(job.source, path=copy(job.source.path, folder / "in"))
        job = dataclasses.replace(job, source=source)
    out = folder / "out"
    return dataclasses.replace(
        job,
        output=dataclasses.replace(
            job.output,
            path=str(out / "results"),
            dead_letter=str(out / "dead_letter"),
            metrics=str(out / "metrics"),
            checkpoint=str(out / "checkpoint"),
        ),
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_case_on_spark(spark, tmp_path: Path, case: Path) -> None:
    translation = translate_file(query_file(case), case / "job.toml")
    hands = expectations(case)
    for number, (statement, hand) in enumerate(
        zip(translation.statements, hands, strict=True), start=1
    ):
        job = on_spark(statement.job, tmp_path / f"statement{number}")
        metrics = run_job(job, once=True, flush=True, spark=spark, clock=clock, publish=False)
        assert metrics is not None
        expected = reference(job, file_batches(job.output.checkpoint))
        got = read_output(job.output.path)
        windowed = job.window is not None and not job.joins_windows  # (§7.12: matches)
        if windowed:
            got = [strip(w, "emitted_at") for w in got]
            want = [strip(w, "type", "emitted_at") for w in expected.windows]
            assert len(got) == len(want) > 0
            for g, w in zip(sorted(got, key=_key), sorted(want, key=_key), strict=True):
                assert _close(g, w), (g, w)
        else:  # released events: one merged release order (matches: as decided, §11.25)
            want = [strip(e, "type") for e in expected.events]
            assert len(got) == len(want) > 0
            if job.match is not None:
                assert _close(sorted(got, key=_key), sorted(want, key=_key)), (got, want)
            else:
                assert _close(got, want), (got, want)
        dead = sorted(read_output(job.output.dead_letter), key=lambda d: (d["file"], d["line"]))
        want_dead = sorted(
            (strip(d, "type", "seq") for d in expected.dead_letters),
            key=lambda d: (d["file"], d["line"]),
        )
        assert _close(dead, want_dead)
        if job.window is None or job.window.idle_timeout is None:
            # without idle timeouts the processing times do not matter: the hand-worked
            # records hold
            worked = {
                # (Spark's dead letters name the file and line, not the input position)
                section: [strip(record, "emitted_at", "seq") for record in records]
                for section, records in hand.items()
                if section in ("windows", "events", "dead_letters")
            }
            # (Spark's windows equal these as a multiset, asserted above; here in the
            # reference engine's emission order, which the hand-worked lists follow)
            result = SimpleNamespace(
                windows=want if windowed else [],
                events=got if not windowed else [],
                dead_letters=dead,
                metrics={},
            )
            problems = compare(worked, result)
            assert not problems, (number, problems)
