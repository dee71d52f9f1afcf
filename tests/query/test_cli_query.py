"""``sparktide translate`` and ``--query`` on ``simulate`` and ``run`` (no Spark started)."""

from __future__ import annotations

import io
import json
import tomllib
from pathlib import Path

import pytest

from sparktide.cli import main
from sparktide.job import Job, load_job
from sparktide.query import translate_file

CORPUS = Path(__file__).parent / "corpus"
TOLLS = CORPUS / "asa_toll_tumbling"


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, stdout=out)
    return code, out.getvalue()


def test_translate_prints_a_job_file_that_loads_back(tmp_path: Path) -> None:
    code, text = run(["translate", str(TOLLS / "query.asaql"), "--job", str(TOLLS / "job.toml")])
    assert code == 0
    assert text.startswith("# translated from query.asaql by sparktide translate\n")
    assert "window_end" in text  # the note on System.Timestamp()
    path = tmp_path / "job.toml"
    path.write_text(text)
    assert load_job(path) == translate_file(TOLLS / "query.asaql", TOLLS / "job.toml").job


def test_translate_without_a_job_file_uses_the_names_as_folders() -> None:
    code, text = run(["translate", str(CORPUS / "atlas_hopping_yaml" / "pipeline.yaml")])
    assert code == 0
    job = Job.from_dict(tomllib.loads(text))
    assert (job.source.path, job.output.path, job.output.dead_letter) == (
        "readings",
        "hop_results",
        "dlq.hops",
    )
    assert job.ordering.on_out_of_order == "accept"


def test_simulate_with_query_runs_the_translated_job() -> None:
    code, text = run(
        [
            "simulate",
            str(TOLLS / "job.toml"),
            "--query",
            str(TOLLS / "query.asaql"),
            "--format",
            "jsonl",
        ]
    )
    assert code == 0
    windows = [r for r in map(json.loads, text.splitlines()) if r["type"] == "window"]
    assert [(w["TollId"], w["Count"]) for w in windows] == [
        (1, 3),
        (2, 1),
        (1, 1),
        (2, 1),
        (3, 1),
        (2, 1),
    ]


def test_refusals_exit_2_with_the_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = tmp_path / "q.asaql"
    query.write_text("SELECT *\nFROM TollEntry\nWHERE CAST(Toll AS float) = 1\n")
    for argv in (
        ["translate", str(query)],
        ["simulate", str(TOLLS / "job.toml"), "--query", str(query)],
        ["run", str(TOLLS / "job.toml"), "--query", str(query), "--once"],
    ):
        code, _ = run(argv)
        assert code == 2
        err = capsys.readouterr().err
        assert err.startswith("sparktide: error: q.asaql:3:7: CAST in WHERE is not supported yet")


def test_run_with_query_builds_the_job_and_goes_on_to_the_run_checks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _ = run(
        ["run", str(TOLLS / "job.toml"), "--query", str(TOLLS / "query.asaql"), "--flush"]
    )
    assert code == 2
    assert "--flush: only applies to a --once run" in capsys.readouterr().err


def test_a_query_job_file_alone_says_it_needs_query(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run(["simulate", str(TOLLS / "job.toml")])
    assert code == 2
    assert "inputs: binds the names of a query: run it with --query FILE" in capsys.readouterr().err


def test_unreadable_query_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run(["translate", str(tmp_path / "missing.asaql")])
    assert code == 2
    assert "--query: cannot read" in capsys.readouterr().err
