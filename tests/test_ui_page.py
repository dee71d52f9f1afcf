"""The live page in headless Chromium (Debian's ``chromium``, driven by Playwright): it
loads with no console error, redraws its chart and tables after a new micro-batch (a
record appended to the followed metrics directory: no Spark), shows a ``<script>`` in a
value as text, and leaves a screenshot in ``tests/artifacts/``.

Without ``/usr/bin/chromium`` these tests fail, unless ``SPARKTIDE_ALLOW_NO_CHROMIUM=1``
says skipping is allowed (CI installs it: ``.ci/run``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparktide.ui import LiveState, MetricsFollower, UiServer
from tests.uirecords import INJECTED, record, write_dead_letters, write_record

CHROMIUM = os.environ.get("SPARKTIDE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"

if not Path(CHROMIUM).exists():
    if os.environ.get("SPARKTIDE_ALLOW_NO_CHROMIUM") == "1":
        pytest.skip(f"no {CHROMIUM} (SPARKTIDE_ALLOW_NO_CHROMIUM=1)", allow_module_level=True)
    raise RuntimeError(
        f"the live page's tests need Chromium at {CHROMIUM} (apt-get install -y chromium); "
        "set SPARKTIDE_ALLOW_NO_CHROMIUM=1 to skip them"
    )


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def followed(tmp_path: Path):
    """A served state following a metrics directory (two batches in it), its dead
    letters in ``tmp_path / "dead"``."""
    metrics, dead = tmp_path / "metrics", tmp_path / "dead"
    for batch in range(2):
        write_record(metrics, record(batch, late=batch))
    state = LiveState("checkpoints/telemetry", dead_letter=str(dead))
    follower = MetricsFollower(str(metrics), state, every=0.05).start()
    server = UiServer(state).start()
    yield server, metrics, dead
    follower.stop()
    server.stop()


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url)
    return page, problems


def test_the_page_redraws_after_each_micro_batch(browser, followed):
    server, metrics, _ = followed
    page, problems = _open(browser, server.url)
    page.wait_for_selector('#status[data-batch="1"]')
    assert page.locator("#job").text_content() == "checkpoints/telemetry"
    assert page.locator("#partitions tbody tr").count() == 2
    holding = page.locator("#partitions tbody tr.holding td").first.text_content()
    assert holding == "0"  # (partition 0's watermark is the job watermark)
    path = page.locator("#job-watermark").get_attribute("d")
    assert path.startswith("M") and "H" in path  # a step line through two batches
    assert page.locator("#chart path.partition-watermark").count() == 2
    assert page.locator("#chart path.arrival").count() == 2
    bars = page.locator("#verdicts rect.bar").count()
    assert bars >= 2 * 3  # two batches, admitted, dropped and dead-lettered each

    write_record(metrics, record(2, late=3))  # the next micro-batch
    page.wait_for_selector('#status[data-batch="2"]')
    assert page.locator("#job-watermark").get_attribute("d") != path
    assert page.locator("#verdicts rect.bar").count() > bars
    total_input = page.locator("#totals tr", has_text="input").first.text_content()
    assert total_input.endswith(str(record(2)["input"]))
    diagnostics = page.locator("#diagnostics li").all_text_contents()
    assert diagnostics[0] == "batch 2 · late_input: 6 late input events in batch 2"
    assert page.locator("#partitions tbody tr").first.locator("td").nth(3).text_content() == "30"

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui-page.png"), full_page=True)
    assert (ARTIFACTS / "ui-page.png").stat().st_size > 10_000

    server.state.end()  # the query stopped: the page says so and stops polling
    page.wait_for_selector("#status span.stopped")
    assert problems == []
    page.close()


def test_values_from_input_data_are_shown_as_text(browser, followed):
    server, metrics, dead = followed
    page, problems = _open(browser, server.url)
    page.wait_for_selector('#status[data-batch="1"]')
    bad = record(2, name=INJECTED)
    bad["diagnostics"] = [{"kind": "missing_column", "message": f"column {INJECTED!r} holds none"}]
    write_dead_letters(
        dead,
        2,
        [
            {
                "file": INJECTED,
                "line": 1,
                "reason": "malformed",
                "error": INJECTED,
                "record": INJECTED,
            }
        ],
    )
    write_record(metrics, bad)
    page.wait_for_selector('#status[data-batch="2"]')
    page.wait_for_timeout(200)  # (an injected handler would have run by now)
    assert page.evaluate("window.__injected") is None
    assert page.locator("#partitions tbody tr").first.locator("td").first.text_content() == INJECTED
    assert INJECTED in page.locator("#diagnostics li").first.text_content()
    cells = page.locator("#deadletters tbody tr").first.locator("td").all_text_contents()
    assert cells[1] == "malformed" and cells[3] == INJECTED and cells[4] == INJECTED
    assert page.locator("script").count() == 1 and page.locator("img").count() == 0
    assert problems == []
    page.close()
