"""``sparktide run``'s progress: the status text and plain log lines off a terminal."""

from __future__ import annotations

import io
import logging

from sparktide.progress import RunProgress, status_text

METRICS = {
    "type": "metrics",
    "batch": 3,
    "input": 12000,
    "dead_lettered": {"malformed": 2, "window_closed": 1},
    "windows_emitted": 45,
    "watermark": "2026-03-01T09:00:10Z",
    "watermark_delay_us": 3_250_000,
    "flushed": False,
}


def test_status_text_names_what_an_operator_watches():
    text = status_text(METRICS, 1500.0)
    for part in (
        "batch 3",
        "12,000 events",
        "1,500 events/s",
        "watermark 2026-03-01T09:00:10Z",
        "delay 3s250ms",
        "45 windows",
        "3 dead letters",
    ):
        assert part in text
    assert "events/s" not in status_text(METRICS, None)
    assert "delay -" in status_text({**METRICS, "watermark_delay_us": None}, None)


def test_plain_log_lines_off_a_terminal_with_diagnostics_between():
    out = io.StringIO()
    ticks = iter([10.0, 12.0, 13.0])
    with RunProgress(out, clock=lambda: next(ticks)) as progress:
        progress({**METRICS, "batch": 0, "input": 1000})
        logging.getLogger("sparktide").warning("batch 1: 2 late input events")
        progress({**METRICS, "batch": 1, "input": 5000})
        progress({**METRICS, "batch": 1, "input": 5000, "flushed": True})
    lines = out.getvalue().splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("sparktide: batch 0 · 1,000 events · watermark")
    assert lines[1] == "sparktide: batch 1: 2 late input events"
    assert "2,000 events/s" in lines[2]  # 4,000 more events in 2 s
    assert lines[3].startswith("sparktide: batch 1 (flush)") and "events/s" not in lines[3]
    # the handler is gone afterwards
    logging.getLogger("sparktide").warning("not shown")
    assert len(out.getvalue().splitlines()) == 4


def test_a_quiet_run_logs_a_line_a_minute_off_a_terminal():
    """Batches that change nothing (a silent input has one every trigger) are not each
    a line; one a minute says the run is alive."""
    out = io.StringIO()
    ticks = iter([10.0, 11.0, 12.0, 71.0, 72.0])
    with RunProgress(out, clock=lambda: next(ticks)) as progress:
        progress({**METRICS, "batch": 0, "input": 1000})
        progress({**METRICS, "batch": 1, "input": 1000})  # nothing new: no line
        progress({**METRICS, "batch": 2, "input": 1000})
        progress({**METRICS, "batch": 3, "input": 1000})  # a minute on: a line
        progress({**METRICS, "batch": 4, "input": 1000, "windows_emitted": 3})
    lines = out.getvalue().splitlines()
    assert [line.split(" · ")[0] for line in lines] == [
        "sparktide: batch 0",
        "sparktide: batch 3",
        "sparktide: batch 4",
    ]
