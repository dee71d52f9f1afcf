"""``sparktide explain``: decisions as a table or JSON lines, and ``--plot`` charts."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jobfiles import write_job
from sparktide.cli import main
from sparktide.job import Job, Ordering, Source
from sparktide.plot import draw_chart, explain_run
from sparktide.reader import read_records
from sparktide.time import SECOND, format_instant, parse_instant
from tests.test_cli import assert_one_error_line

#: semantics §5: (event time, arrival time), 09:00:ss on 2026-03-01.
SPEC5 = [
    ("09:00:05", "09:00:06"),
    ("09:00:40", "09:00:10"),
    ("09:00:12", "09:00:20"),
    ("09:00:00", "09:00:45"),
    ("09:02:00", "09:00:50"),
    ("09:00:41", "09:00:51"),
]
SPEC5_JOB = {
    "source": {"path": "events.jsonl", "timestamp_by": "event_time", "arrival_time": "arrival"},
    "ordering": {
        "late_arrival": "20s",
        "out_of_order": "10s",
        "early_arrival": "1m",
        "action": "adjust",
    },
}


def t(clock: str) -> str:
    return f"2026-03-01T{clock}Z"


def write_lines(folder: Path, lines: list[str], name: str = "events.jsonl") -> None:
    (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def spec5(tmp_path: Path) -> Path:
    lines = [
        json.dumps({"id": n, "event_time": t(e), "arrival": t(a)})
        for n, (e, a) in enumerate(SPEC5, start=1)
    ]
    write_lines(tmp_path, lines)
    return write_job(tmp_path, SPEC5_JOB)


def explain(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["explain", *argv], stdout=out)
    return code, out.getvalue()


def ink(path: Path) -> tuple[int, int, float]:
    """Width, height and the share of pixels that are not (almost) white."""
    from matplotlib import image

    pixels = image.imread(str(path))
    height, width = pixels.shape[:2]
    coloured = (pixels[:, :, :3] < 0.94).any(axis=2)
    return width, height, float(coloured.mean())


# ---------------------------------------------------------------------------- without --plot


def test_explain_prints_one_decision_per_input_record(spec5, tmp_path):
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    write_lines(tmp_path, [*lines[:2], "not json", *lines[2:]])
    code, text = explain([str(spec5), "--format", "jsonl"])
    assert code == 0
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["type"] for r in records] == ["decision"] * 7
    assert [r["seq"] for r in records] == list(range(7))
    assert [r["verdict"] for r in records] == [
        "accepted",
        "accepted",
        "dead_lettered",
        "adjusted",
        "adjusted",
        "dropped",
        "accepted",
    ]
    # The same decisions as simulate --explain.
    out = io.StringIO()
    main(["simulate", str(spec5), "--explain", "--format", "jsonl"], stdout=out)
    simulated = [json.loads(line) for line in out.getvalue().splitlines()]
    assert records == [r for r in simulated if r["type"] == "decision"]


def test_explain_table(spec5):
    code, text = explain([str(spec5), "--format", "table"])
    assert code == 0
    assert "Decisions" in text
    assert "6 records: 3 accepted, 2 adjusted, 1 dropped" in text


# ---------------------------------------------------------------------------- charts


def test_plot_png_of_the_worked_example(spec5, tmp_path):
    chart = tmp_path / "chart.png"
    code, text = explain([str(spec5), "--plot", str(chart)])
    assert code == 0
    assert text == f"sparktide: wrote {chart}: 6 events (3 accepted, 2 adjusted, 1 dropped)\n"
    assert chart.stat().st_size > 20_000
    width, height, share = ink(chart)
    assert width >= 1000 and height >= 600
    assert share > 0.02


def test_plot_html_is_one_page_with_an_inline_svg(spec5, tmp_path):
    page = tmp_path / "chart.html"
    code, _ = explain([str(spec5), "--plot", str(page)])
    assert code == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert text.count("<svg") == 1 and "</svg>" in text
    assert "data-points='6'" in text
    assert "6 events drawn" in text
    assert "<script" not in text and "<?xml" not in text


def test_plot_with_decisions_on_stdout(spec5, tmp_path, capsys):
    chart = tmp_path / "chart.svg"
    code, text = explain([str(spec5), "--plot", str(chart), "--format", "jsonl"])
    assert code == 0
    assert len(text.splitlines()) == 6
    assert all(json.loads(line)["type"] == "decision" for line in text.splitlines())
    assert "wrote" in capsys.readouterr().err
    assert chart.read_text(encoding="utf-8").count("<svg") == 1


def test_watermark_line_of_the_worked_example(spec5):
    """The traced watermark after each observation instant, by hand from semantics §5:
    W = max(newest − 10 s, arrival clock − 20 s)."""
    job = Job(
        Source(
            path=str(spec5.parent / "events.jsonl"),
            timestamp_by="event_time",
            arrival_time="arrival",
        ),
        Ordering(late_arrival="20s", out_of_order="10s", early_arrival="1m"),
    )
    records = read_records(job.source)
    result, data = explain_run(job, records)
    assert len(result.decisions) == 6
    ((key, xs, ys),) = data.series
    assert key == 0
    # After each arrival: 08:59:55 (00:05 − 10 s), 09:00:30 (00:40 − 10 s), then 00:30
    # at 00:20, 00:45 (00:45 − 20 s = 00:25 is lower) and 00:50 (00:50 − 20 s), and
    # 09:00:31 at 00:51 (00:41 − 10 s = 00:51 − 20 s). The line keeps the changes.
    steps = [(format_instant(int(x)), format_instant(int(y))) for x, y in zip(xs, ys, strict=True)]
    assert steps == [
        (t("09:00:06"), t("08:59:55")),
        (t("09:00:10"), t("09:00:30")),
        (t("09:00:51"), t("09:00:31")),
    ]
    assert data.job_series is None  # one partition: no separate job line
    assert data.counts() == {"accepted": 3, "adjusted": 2, "dropped": 1, "dead_lettered": 0}


def stream(folder: Path, events: int, *, partitions: int, keys: int, seed: int = 3) -> None:
    """A disorderly stream: jitter, 3 % retried, 0.1 % early; one file per partition."""
    rng = random.Random(seed)
    base = parse_instant("2026-03-01T12:00:00Z")
    files: dict[int, list[tuple[int, str]]] = {p: [] for p in range(partitions)}
    for i in range(events):
        event = base + i * 50_000 + rng.randrange(100_000)
        arrival = event + rng.randrange(50_000, 2 * SECOND)
        if rng.random() < 0.03:
            arrival += rng.randrange(3 * SECOND, 15 * SECOND)
        if rng.random() < 0.001:
            event += 10 * 60 * SECOND
        key = rng.randrange(keys)
        row = {
            "device": f"d{key}",
            "partition": key % partitions,
            "event_time": format_instant(event),
            "arrival_time": format_instant(arrival),
            "value": i,
        }
        files[key % partitions].append((arrival, json.dumps(row)))
    (folder / "events").mkdir()
    for partition, rows in files.items():
        write_lines(folder / "events", [line for _, line in sorted(rows)], f"p{partition}.jsonl")


def stream_job(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "source": {
            "path": "events/",
            "timestamp_by": "event_time",
            "arrival_time": "arrival_time",
            "partition": "partition",
        },
        "ordering": {"late_arrival": "5s", "out_of_order": "1s"},
    }
    for table, values in extra.items():
        data.setdefault(table, {}).update(values)
    return data


def test_plot_of_20000_events_on_four_partitions(tmp_path):
    stream(tmp_path, 20_000, partitions=4, keys=40)
    job = write_job(tmp_path, stream_job(window={"type": "tumbling", "size": "1m"}))
    chart = tmp_path / "chart.png"
    code, text = explain([str(job), "--plot", str(chart)])
    assert code == 0
    assert ": 20000 events (" in text
    width, height, share = ink(chart)
    assert width >= 1000 and height >= 1000  # two panels
    assert share > 0.05
    page = tmp_path / "chart.html"
    assert explain([str(job), "--plot", str(page)])[0] == 0
    html = page.read_text(encoding="utf-8")
    assert "data-points='20000'" in html
    assert page.stat().st_size < 3_000_000  # the scatter is rasterised


def test_many_substreams_draw_the_busiest_watermarks(tmp_path):
    stream(tmp_path, 3_000, partitions=2, keys=30)
    data = stream_job(source={"over": "device"})
    write_job(tmp_path, data)
    job = Job.from_dict(data, base_dir=tmp_path)
    records = read_records(job.source)
    result, chart = explain_run(job, records, max_timelines=5)
    assert chart.timeline_count == 30
    assert len(chart.series) == 5
    counts: dict[str, int] = {}
    for record in records:
        counts[record.key] = counts.get(record.key, 0) + 1
    busiest = sorted(counts, key=lambda k: (-counts[k], k))[:5]
    assert sorted(key for key, _, _ in chart.series) == sorted(busiest)
    figure = draw_chart(job, chart, result, title="keys")
    title = figure.axes[0].get_title(loc="left")
    assert "30 substreams" in title
    assert "watermarks of the 5 busiest of 30 substreams drawn" in title


@pytest.mark.parametrize(
    "window",
    [
        {"type": "hopping", "size": "10s", "hop": "5s"},
        {"type": "hopping", "size": "2s", "hop": "5s"},
        {"type": "session", "gap": "1s"},
        {"type": "sliding", "size": "2s"},
        {"type": "snapshot"},
    ],
    ids=lambda w: w["type"] + ("-gaps" if w.get("size") == "2s" and "hop" in w else ""),
)
def test_plot_with_other_windows(tmp_path, window):
    stream(tmp_path, 300, partitions=2, keys=4)
    job = write_job(tmp_path, stream_job(window=window))
    chart = tmp_path / "chart.png"
    assert explain([str(job), "--plot", str(chart)])[0] == 0
    assert ink(chart)[2] > 0.02


def test_processing_time_across(tmp_path):
    rows = []
    for i in range(30):
        event = parse_instant("2026-03-01T12:00:00Z") + i * SECOND
        rows.append(
            json.dumps(
                {
                    "event_time": format_instant(event),
                    "arrival_time": format_instant(event + SECOND),
                    "seen": format_instant(event + 3 * SECOND + (i % 3) * SECOND),
                }
            )
        )
    write_lines(tmp_path, rows)
    data = {
        "source": {
            "path": "events.jsonl",
            "timestamp_by": "event_time",
            "arrival_time": "arrival_time",
            "processing_time": "seen",
        }
    }
    job_file = write_job(tmp_path, data)
    for axis in ("processing", "arrival"):
        chart = tmp_path / f"{axis}.png"
        assert explain([str(job_file), "--plot", str(chart), "--x", axis])[0] == 0
        assert ink(chart)[2] > 0.02
    job = Job.from_dict(data, base_dir=tmp_path)
    _, chart_data = explain_run(job, read_records(job.source), x="processing")
    ((_, xs, _),) = chart_data.series
    assert np.all(np.diff(xs) > 0)  # one point per observation instant


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--plot", "chart.jpg"], ["--plot", "chart.jpg", ".png"]),
        (["--plot", "no/such/folder/chart.png"], ["--plot", "no such directory"]),
        (["--x", "sideways"], ["--x", "sideways"]),
        (["--max-timelines", "0"], ["--max-timelines"]),
        (["--max-timelines", "many"], ["--max-timelines", "many"]),
    ],
)
def test_bad_options_exit_2_with_one_line(spec5, capsys, argv, words):
    code, text = explain([str(spec5), *argv])
    assert code == 2
    assert text == ""
    assert_one_error_line(capsys, *words)


def test_bad_job_exits_2_with_one_line(tmp_path, capsys):
    job = write_job(tmp_path, {"source": {"path": "nowhere.jsonl", "timestamp_by": "t"}})
    code, _ = explain([str(job), "--plot", str(tmp_path / "chart.png")])
    assert code == 2
    assert_one_error_line(capsys, "source.path")
    assert not (tmp_path / "chart.png").exists()


def test_cti_rows_are_decisions_but_not_chart_events(tmp_path):
    """Punctuation (semantics §7): a CTI row gets a ``punctuation`` decision with its time as
    ``cti``, every event the CTI it was judged against; charts draw the events only."""
    lines = [
        {"id": 1, "t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z"},
        {"kind": "cti", "t": "2026-03-01T09:00:10Z", "a": "2026-03-01T09:00:07Z"},
        {"id": 2, "t": "2026-03-01T09:00:08Z", "a": "2026-03-01T09:00:08Z"},
    ]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    job = write_job(
        tmp_path,
        {
            "source": {"path": "events.jsonl", "timestamp_by": "t", "arrival_time": "a"},
            "ordering": {"late_arrival": "none"},
            "punctuation": {"column": "kind", "value": "cti"},
        },
    )
    code, text = explain([str(job), "--format", "jsonl"])
    assert code == 0
    decisions = [json.loads(line) for line in text.splitlines()]
    assert [d["verdict"] for d in decisions] == ["accepted", "punctuation", "adjusted"]
    assert [d["cti"] for d in decisions] == [None, *["2026-03-01T09:00:10Z"] * 2]
    assert decisions[2]["timestamp"] == "2026-03-01T09:00:10Z"
    code, text = explain([str(job), "--format", "table"])
    assert code == 0 and "cti" in text
    assert "3 records: 1 accepted, 1 adjusted, 1 punctuation" in text
    chart = tmp_path / "chart.png"
    code, text = explain([str(job), "--plot", str(chart)])
    assert code == 0
    assert text == f"sparktide: wrote {chart}: 2 events (1 accepted, 1 adjusted)\n"
