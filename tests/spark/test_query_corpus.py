"""The query corpus on Spark: each Stream Analytics query and Atlas pipeline of
``tests/query/corpus``, translated, runs through ``sparktide run`` and gives the reference
engine's records (observed at the same micro-batch times), and the records worked out
by hand in the case's ``expected.toml`` wherever processing time cannot change them."""

from __future__ import annotations

import dataclasses
import shutil
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparktide.query import translate_file
from sparktide.spark import run_job
from tests.query.test_corpus import CASES, compare, query_file
from tests.spark.streams import clock, file_batches, read_output, reference, strip
from tests.spark.test_differential import _close, _key


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_case_on_spark(spark, tmp_path: Path, case: Path) -> None:
    job = translate_file(query_file(case), case / "job.toml").job
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(Path(job.source.path), source / "input.jsonl")
    out = tmp_path / "out"
    job = dataclasses.replace(
        job,
        source=dataclasses.replace(job.source, path=str(source)),
        output=dataclasses.replace(
            job.output,
            path=str(out / "results"),
            dead_letter=str(out / "dead_letter"),
            metrics=str(out / "metrics"),
            checkpoint=str(out / "checkpoint"),
        ),
    )
    metrics = run_job(job, once=True, flush=True, spark=spark, clock=clock, publish=False)
    assert metrics is not None
    expected = reference(job, file_batches(job.output.checkpoint))
    got = [strip(w, "emitted_at") for w in read_output(job.output.path)]
    want = [strip(w, "type", "emitted_at") for w in expected.windows]
    assert len(got) == len(want) > 0
    for g, w in zip(sorted(got, key=_key), sorted(want, key=_key), strict=True):
        assert _close(g, w), (g, w)
    dead = sorted(read_output(job.output.dead_letter), key=lambda d: (d["file"], d["line"]))
    want_dead = sorted(
        (strip(d, "type", "seq") for d in expected.dead_letters),
        key=lambda d: (d["file"], d["line"]),
    )
    assert _close(dead, want_dead)
    if job.window is not None and job.window.idle_timeout is None:
        # without idle timeouts the processing times do not matter: the hand-worked
        # records hold
        hand = tomllib.loads((case / "expected.toml").read_text("utf-8"))["expect"]
        hand = {
            # (Spark's dead letters name the file and line, not the input position)
            section: [strip(record, "emitted_at", "seq") for record in records]
            for section, records in hand.items()
            if section in ("windows", "dead_letters")
        }
        # (Spark's records equal these as a multiset, asserted above; here in the
        # reference engine's emission order, which the hand-worked lists follow)
        result = SimpleNamespace(windows=want, dead_letters=dead, events=[], metrics={})
        problems = compare(hand, result)
        assert not problems, problems
