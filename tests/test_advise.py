"""``sparktide advise``: figures checked against streams whose lateness is known by
construction (the expected numbers are derived here by hand, not by running the code)."""

from __future__ import annotations

import io
import json
import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jobfiles import write_job
from sparktide.advise import disorder, parse_target, percentile, sample_records
from sparktide.cli import main
from sparktide.errors import ConfigError
from sparktide.job import Job, Ordering
from sparktide.time import SECOND, format_instant, parse_instant

T0 = parse_instant("2026-03-01T12:00:00Z")
N = 2_000
#: Event i happens at T0 + i s and arrives 3 s later, except every 100th (i % 100 == 50),
#: which arrives 40.5 s later (the half second keeps arrival times distinct).
REGULAR = 3 * SECOND
LATE = 40 * SECOND + SECOND // 2


def known_stream(folder: Path) -> Path:
    rows = []
    for i in range(N):
        event = T0 + i * SECOND
        arrival = event + (LATE if i % 100 == 50 else REGULAR)
        rows.append((arrival, {"i": i, "t": format_instant(event), "a": format_instant(arrival)}))
    rows.sort(key=lambda row: row[0])  # the log is in arrival order
    text = "\n".join(json.dumps(row) for _, row in rows) + "\n"
    (folder / "events.jsonl").write_text(text, encoding="utf-8")
    job = {
        "source": {"path": "events.jsonl", "timestamp_by": "t", "arrival_time": "a"},
        "ordering": {"late_arrival": "5s", "out_of_order": "0s", "early_arrival": "5m"},
    }
    return write_job(folder, job)


def advise(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["advise", *argv], stdout=out)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The advice on the known stream, at target 2 % (one engine run per candidate)."""
    folder = tmp_path_factory.mktemp("known")
    job = known_stream(folder)
    code, text = advise([str(job), "--format", "json", "--target-adjusted", "2%"])
    assert code == 0
    return {"job": job, "advice": json.loads(text)}


def candidate(advice: dict[str, Any], late: str, ooo: str) -> dict[str, Any]:
    (found,) = [
        c for c in advice["candidates"] if c["late_arrival"] == late and c["out_of_order"] == ooo
    ]
    return found


def test_lateness_percentiles(known):
    (overall, partition) = known["advice"]["lateness"]
    assert overall["scope"] == "all" and partition["partition"] == 0
    for row in (overall, partition):
        assert row["events"] == N
        assert row["early"] == 0
        # 1,980 values of 3 s, then 20 of 40.5 s: nearest rank ceil(q·2000).
        assert row["p50_us"] == row["p90_us"] == row["p99_us"] == REGULAR  # rank 1980
        assert row["p99.9_us"] == LATE  # rank 1998
        assert row["max_us"] == LATE


def test_disorder_percentiles(known):
    """A 40.5 s late event i arrives after regular event i + 37 (arrived at i + 40 s):
    it is 37 s behind. Every other event is in order."""
    overall = known["advice"]["disorder"][0]
    assert overall["timelines"] == "partitions"
    assert overall["events"] == N
    assert overall["disordered"] == N // 100
    assert overall["p50_us"] == overall["p99_us"] == 0
    assert overall["p99.9_us"] == overall["max_us"] == 37 * SECOND


def test_candidate_costs(known):
    advice = known["advice"]
    # 5 variations of L (7 grid values, the current 5s among them) × 6 of O.
    assert len(advice["candidates"]) == 7 * 6
    # L = 5 s, O = 0: the 20 late events are late (40.5 s > 5 s) and, at arrival − 5 s,
    # still behind the newest event (i + 37 s): adjusted once each. 1 %.
    current = candidate(advice, "5s", "0s")
    assert current["current"] is True
    assert (current["late"], current["out_of_order_events"], current["adjusted"]) == (20, 20, 20)
    assert current["affected"] == 20 and current["affected_share"] == 0.01
    # Every event is released as soon as it is admitted: W = newest − 0.
    assert current["hold_p99_us"] == 0 and current["hold_mean_us"] == 0
    assert current["held"] == 0
    # L = 1 s: every event (3 s late) is late and adjusted.
    assert candidate(advice, "1s", "0s")["affected"] == N
    assert candidate(advice, "0s", "1m")["affected"] == N
    # L = 1 min, O = 1 min: nothing is late (40.5 s < 1 min) and the late events are not
    # out of order (W = A − 1 min is 19.5 s below them). Most events wait until the
    # arrival clock is 60 s past them, 57 s after they arrived.
    wide = candidate(advice, "1m", "1m")
    assert wide["affected"] == 0
    assert wide["hold_p50_us"] == 57 * SECOND
    assert candidate(advice, "5m", "1m")["affected"] == 0
    # O = 30 s < 37 s: the late events are out of order.
    assert candidate(advice, "1m", "30s")["affected"] == 20


def test_recommendation_at_two_percent(known):
    """Within 2 %, L = 5 s and O = 0 releases every event at once; every other setting
    within target with a zero delay is wider."""
    recommendation = known["advice"]["recommendation"]
    assert recommendation["found"] is True
    assert (recommendation["late_arrival"], recommendation["out_of_order"]) == ("5s", "0s")
    assert recommendation["affected_share"] == 0.01
    ordering = tomllib.loads(recommendation["toml"])["ordering"]
    assert ordering == {
        "early_arrival": "5m",
        "late_arrival": "5s",
        "out_of_order": "0s",
        "action": "adjust",
    }
    Ordering(**ordering)  # pastes into a valid job


def test_recommendation_at_the_default_target(known):
    """0.1 % of 2,000 is 2 events: the 20 late ones must be neither late nor out of order,
    which only L ≥ 1 min with O = 1 min achieves; L = 1 min holds events 57 s, L = 5 min
    holds them until the newest event is 60 s past them."""
    code, text = advise([str(known["job"]), "--format", "jsonl"])
    assert code == 0
    records = [json.loads(line) for line in text.splitlines()]
    assert records[0]["type"] == "sample" and records[0]["records"] == N
    assert {r["type"] for r in records} == {
        "sample",
        "lateness",
        "disorder",
        "candidate",
        "recommendation",
    }
    recommendation = records[-1]
    assert recommendation["type"] == "recommendation"
    assert recommendation["target"] == "0.1%"
    assert (recommendation["late_arrival"], recommendation["out_of_order"]) == ("1m", "1m")


def test_no_candidate_meets_a_zero_target_below_what_the_grid_can_do(tmp_path):
    """Events 10 minutes behind their partition: no O in the grid (≤ 1 min) tolerates
    them, so at 0 % nothing qualifies and the closest setting is named."""
    rows = []
    for i in range(200):
        event = T0 + i * SECOND
        arrival = event + SECOND
        if i == 150:
            event -= 600 * SECOND
        rows.append({"t": format_instant(event), "a": format_instant(arrival)})
    (tmp_path / "events.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    job = write_job(
        tmp_path,
        {"source": {"path": "events.jsonl", "timestamp_by": "t", "arrival_time": "a"}},
    )
    code, text = advise([str(job), "--format", "json", "--target-adjusted", "0"])
    assert code == 0
    recommendation = json.loads(text)["recommendation"]
    assert recommendation["found"] is False
    assert recommendation["closest"]["affected_share"] == 1 / 200
    code, table = advise([str(job), "--format", "table", "--target-adjusted", "0"])
    assert code == 0
    assert "No candidate adjusts or drops at most 0% of the events" in table


def test_early_events_and_partitions(tmp_path):
    """Partition 1 has one event 2 s ahead of its arrival among 10: 10 % early; with
    E = 1 s it is dropped under every candidate and not counted as affected."""
    rows = []
    for partition in (0, 1):
        for i in range(10):
            event = T0 + i * SECOND
            arrival = event + SECOND
            if partition == 1 and i == 4:
                event = arrival + 2 * SECOND
            rows.append({"p": partition, "t": format_instant(event), "a": format_instant(arrival)})
    (tmp_path / "events.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    job = write_job(
        tmp_path,
        {
            "source": {
                "path": "events.jsonl",
                "timestamp_by": "t",
                "arrival_time": "a",
                "partition": "p",
            },
            "ordering": {"early_arrival": "1s"},
        },
    )
    code, text = advise([str(job), "--format", "json"])
    assert code == 0
    advice = json.loads(text)
    overall, p0, p1 = advice["lateness"]
    assert (overall["early"], p0["early"], p1["early"]) == (1, 0, 1)
    assert p1["early_share"] == 0.1
    assert p1["p50_us"] == SECOND  # nine of 1 s
    all_partitions = advice["disorder"][0]
    assert all_partitions["events"] == 19  # the early event moves nothing: left out
    assert all_partitions["max_us"] == 0
    loose = candidate(advice, "5s", "1m")
    assert loose["early"] == 1 and loose["dropped"] == {"early": 1}
    assert loose["affected"] == 0


def test_substream_keys(tmp_path):
    """Two keys on one partition: key b's events are 2 s behind key a's, so per
    partition b is disordered, per key nobody is."""
    rows = []
    for i in range(50):
        for key, lag in (("a", 0), ("b", 2 * SECOND)):
            event = T0 + i * SECOND - lag
            rows.append(
                {"k": key, "t": format_instant(event), "a": format_instant(T0 + i * SECOND)}
            )
    (tmp_path / "events.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    job = write_job(
        tmp_path,
        {
            "source": {
                "path": "events.jsonl",
                "timestamp_by": "t",
                "arrival_time": "a",
                "over": "k",
            }
        },
    )
    code, text = advise([str(job), "--format", "json", "--top-keys", "1"])
    assert code == 0
    rows_out = json.loads(text)["disorder"]
    labels = [(r["scope"], r.get("timelines"), r.get("partition"), r.get("key")) for r in rows_out]
    assert labels == [
        ("all", "partitions", None, None),
        ("partition", None, 0, None),
        ("all", "keys", None, None),
        ("key", None, None, "a"),
    ]
    assert rows_out[1]["disordered"] == 50 and rows_out[1]["max_us"] == 2 * SECOND
    assert rows_out[2]["disordered"] == 0
    assert json.loads(text)["sample"]["keys"] == 2


def test_table_output(known):
    code, text = advise([str(known["job"]), "--format", "table", "--target-adjusted", "2%"])
    assert code == 0
    for words in ("Lateness", "Disorder", "Candidates", "recommended", "current", "[ordering]"):
        assert words in text
    snippet = text[text.index("[ordering]") :]
    assert tomllib.loads(snippet)["ordering"]["late_arrival"] == "5s"


def test_sample_takes_the_earliest_records_across_files(tmp_path):
    """Two partition files: a sample of 4 is the 4 earliest by processing time across
    both, not the first file's."""
    folder = tmp_path / "events"
    folder.mkdir()
    for partition in (0, 1):
        rows = [
            {
                "p": partition,
                "t": format_instant(T0 + i * SECOND),
                "a": format_instant(T0 + i * SECOND + partition),
            }
            for i in range(5)
        ]
        text = "\n".join(map(json.dumps, rows)) + "\nnot json\n"
        (folder / f"part-{partition}.jsonl").write_text(text)
    data = {"source": {"path": str(folder), "timestamp_by": "t", "arrival_time": "a"}}
    records, malformed = sample_records(Job.from_dict(data), 4)
    assert malformed == 2
    assert [(r.fields["p"], r.seq) for r in records] == [(0, 0), (0, 1), (1, 6), (1, 7)]


def test_percentile_is_nearest_rank():
    values = np.arange(1, 11, dtype=np.int64)  # 1..10
    assert percentile(values, 1, 2) == 5
    assert percentile(values, 9, 10) == 9
    assert percentile(values, 99, 100) == 10
    assert percentile(np.array([7], dtype=np.int64), 1, 2) == 7


def test_disorder_function():
    times = np.array([10, 5, 12, 11, 3, 20], dtype=np.int64)
    timeline = np.array([0, 0, 0, 0, 1, 1], dtype=np.int64)
    order = np.arange(6)
    assert disorder(times, timeline, order).tolist() == [0, 5, 0, 1, 0, 0]
    reversed_order = np.array([5, 4, 3, 2, 1, 0])  # judged back to front
    assert disorder(times, timeline, reversed_order).tolist() == [2, 7, 0, 0, 17, 0]
    counted = np.array([True, True, False, True, True, True])  # 12 moves nothing,
    assert disorder(times, timeline, order, counted).tolist() == [0, 5, 0, 0, 0, 0]  # so 11 is fine


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.1%", Fraction(1, 1000)), ("2%", Fraction(1, 50)), ("0.5", Fraction(1, 200)), ("0", 0)],
)
def test_parse_target(text, expected):
    assert parse_target(text) == expected


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--sample", "0"], ["--sample"]),
        (["--sample", "lots"], ["--sample", "lots"]),
        (["--target-adjusted", "150%"], ["--target-adjusted", "150%"]),
        (["--target-adjusted", "a bit"], ["--target-adjusted", "a bit"]),
        (["--top-keys", "0"], ["--top-keys"]),
    ],
)
def test_bad_options_exit_2_with_one_line(tmp_path, capsys, argv, words):
    job = known_stream(tmp_path)
    code, text = advise([str(job), *argv])
    assert code == 2
    assert text == ""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparktide: error:"), err
    for word in words:
        assert word in lines[0]


def test_arrival_time_mode_is_refused(tmp_path, capsys):
    (tmp_path / "events.jsonl").write_text(json.dumps({"a": "2026-03-01T12:00:00Z"}) + "\n")
    job = write_job(tmp_path, {"source": {"path": "events.jsonl", "arrival_time": "a"}})
    assert advise([str(job)])[0] == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "source.timestamp_by" in err[0]


def test_parse_target_error_is_a_config_error():
    with pytest.raises(ConfigError, match="--target-adjusted"):
        parse_target("-1%")
