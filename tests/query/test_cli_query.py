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
    query.write_text("SELECT *\nFROM TollEntry\nWHERE CAST(Toll AS money) = 1\n")
    for argv in (
        ["translate", str(query)],
        ["simulate", str(TOLLS / "job.toml"), "--query", str(query)],
        ["run", str(TOLLS / "job.toml"), "--query", str(query), "--once"],
    ):
        code, _ = run(argv)
        assert code == 2
        err = capsys.readouterr().err
        assert err.startswith(
            "sparktide: error: q.asaql:3:7: CAST(... AS money) is not supported yet"
        )


def test_run_with_query_builds_the_job_and_goes_on_to_the_run_checks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _ = run(
        [
            "run",
            str(TOLLS / "job.toml"),
            "--query",
            str(TOLLS / "query.asaql"),
            "--max-files-per-trigger",
            "0",
        ]
    )
    assert code == 2
    assert "--max-files-per-trigger: must be at least 1" in capsys.readouterr().err


def test_a_query_job_file_alone_says_it_needs_query(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run(["simulate", str(TOLLS / "job.toml")])
    assert code == 2
    assert "inputs: binds the names of a query: run it with --query FILE" in capsys.readouterr().err


def test_unreadable_query_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run(["translate", str(tmp_path / "missing.asaql")])
    assert code == 2
    assert "--query: cannot read" in capsys.readouterr().err


_TWO_STATEMENTS = (
    "-- every entry, and the counts per booth\n"
    "SELECT * INTO AllEntries FROM TollEntry TIMESTAMP BY EntryTime;\n"
    "SELECT TollId, COUNT(*) AS Count\n"
    "INTO Counts\n"
    "FROM TollEntry TIMESTAMP BY EntryTime\n"
    "GROUP BY TumblingWindow(minute, 3), TollId\n"
)


def _two_statements(tmp_path: Path, checkpoints: bool = False) -> tuple[Path, Path]:
    query = tmp_path / "q.asaql"
    query.write_text(_TWO_STATEMENTS)
    job = tmp_path / "job.toml"
    extra = ['checkpoint = "cp-all/"\n', 'checkpoint = "cp-counts/"\n'] if checkpoints else ["", ""]
    job.write_text(
        f'[inputs.TollEntry]\npath = "{TOLLS / "input.jsonl"}"\narrival_time = "EnqueuedTime"\n'
        f'[outputs.AllEntries]\npath = "all/"\n{extra[0]}'
        f'[outputs.Counts]\npath = "counts/"\n{extra[1]}'
    )
    return query, job


def test_translate_prints_each_statement_s_job_labelled(tmp_path: Path) -> None:
    query, job = _two_statements(tmp_path)
    code, text = run(["translate", str(query), "--job", str(job)])
    assert code == 0
    assert text.startswith("# === ")
    blocks = ["# === " + b for b in text.removeprefix("# === ").split("\n# === ")]
    assert blocks[0].startswith("# === statement 1 of 2 (line 2): INTO AllEntries ===\n")
    assert blocks[1].startswith("# === statement 2 of 2 (line 3): INTO Counts ===\n")
    jobs = translate_file(query, job).jobs
    for block, expected in zip(blocks, jobs, strict=True):  # each block is a job file
        assert Job.from_dict(tomllib.loads(block)) == expected
    assert [j.window is None for j in jobs] == [True, False]


def test_simulate_runs_each_statement_after_its_statement_record(tmp_path: Path) -> None:
    query, job = _two_statements(tmp_path)
    code, text = run(["simulate", str(job), "--query", str(query), "--format", "jsonl"])
    assert code == 0
    records = [json.loads(line) for line in text.splitlines()]
    heads = [i for i, r in enumerate(records) if r["type"] == "statement"]
    assert [records[i] for i in heads] == [
        {"type": "statement", "statement": 1, "statements": 2, "line": 2, "output": "AllEntries"},
        {"type": "statement", "statement": 2, "statements": 2, "line": 3, "output": "Counts"},
    ]
    first, second = records[heads[0] + 1 : heads[1]], records[heads[1] + 1 :]
    inputs = (TOLLS / "input.jsonl").read_text().splitlines()
    assert [r["type"] for r in first] == ["event"] * len(inputs) + ["metrics"]
    counts = [(w["TollId"], w["Count"]) for w in second if w["type"] == "window"]
    assert counts == [(1, 3), (2, 1), (1, 1), (2, 1), (3, 1), (2, 1)]  # as the one-statement run
    code, table = run(["simulate", str(job), "--query", str(query), "--format", "table"])
    assert code == 0
    assert "statement 1 of 2 (line 2): INTO AllEntries" in table
    assert table.index("INTO AllEntries") < table.index("INTO Counts")


def test_run_runs_several_statements_only_once_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query, job = _two_statements(tmp_path)
    code, _ = run(["run", str(job), "--query", str(query)])
    assert code == 2
    assert "--query: the query has 2 statements, one job each: run them with --once" in (
        capsys.readouterr().err
    )
    # with --once, every job is checked before Spark starts: here the missing checkpoints
    code, _ = run(["run", str(job), "--query", str(query), "--once"])
    assert code == 2
    assert "output.checkpoint: is required to run on Spark" in capsys.readouterr().err


def test_run_checks_every_input_of_a_union_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = tmp_path / "q.asaql"
    query.write_text("SELECT * INTO o FROM a UNION SELECT * FROM b")
    job = tmp_path / "job.toml"
    job.write_text(
        f'[inputs.a]\npath = "{TOLLS}"\n[inputs.b]\npath = "missing/"\n'
        '[outputs.o]\npath = "o/"\ncheckpoint = "cp/"\n'
    )
    code, _ = run(["run", str(job), "--query", str(query), "--once"])
    assert code == 2
    assert "inputs.b.path: no such file or directory" in capsys.readouterr().err


def test_translate_prints_a_join_with_reference_data_that_loads_back(tmp_path: Path) -> None:
    case = CORPUS / "asa_reference_left_join"
    code, text = run(["translate", str(case / "query.asaql"), "--job", str(case / "job.toml")])
    assert code == 0
    assert "[inputs.Registration]\nreference = true\n" in text and 'type = "left"' in text
    path = tmp_path / "job.toml"
    path.write_text(text)
    assert load_job(path) == translate_file(case / "query.asaql", case / "job.toml").job


def test_run_checks_the_reference_data_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = tmp_path / "q.asaql"
    query.write_text("SELECT * INTO o FROM a JOIN r ON a.k = r.k")
    job = tmp_path / "job.toml"
    job.write_text(
        f'[inputs.a]\npath = "{TOLLS}"\n[inputs.r]\nreference = true\npath = "missing.csv"\n'
        'format = "csv"\n[outputs.o]\npath = "o/"\ncheckpoint = "cp/"\n'
    )
    code, _ = run(["run", str(job), "--query", str(query), "--once"])
    assert code == 2
    assert "inputs.r.path: no such file or directory" in capsys.readouterr().err
