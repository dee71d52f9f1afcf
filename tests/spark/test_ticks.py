"""The ticker's bookkeeping (no Spark session): which checkpoints may carry it, and
which micro-batches bring nothing but its row (read from Spark's offsets log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktide.spark.ticks import only_ticks, ticks_fit

META = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}})
TICK = '{"offset":%d,"timestamp":%d}'


def _offsets(checkpoint: Path, batch: int, *sources: str) -> None:
    folder = checkpoint / "spark" / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(batch)).write_text("\n".join(["v1", META, *sources]))


def test_a_new_checkpoint_or_one_with_the_ticker_carries_it(tmp_path):
    assert ticks_fit(str(tmp_path / "new"))
    _offsets(tmp_path / "ticking", 0, '{"logOffset":0}', TICK % (1, 1000))
    assert ticks_fit(str(tmp_path / "ticking"))
    _offsets(tmp_path / "unset", 0, '{"logOffset":0}', "-")
    assert ticks_fit(str(tmp_path / "unset"))


def test_a_checkpoint_from_before_the_ticker_runs_without_it(tmp_path, caplog):
    _offsets(tmp_path, 0, '{"logOffset":0}')
    _offsets(tmp_path, 1, '{"logOffset":1}')
    assert not ticks_fit(f"file:{tmp_path}")
    assert "written without the ticker" in caplog.text


@pytest.mark.parametrize(
    ("previous", "current", "expected"),
    [
        (None, ['{"logOffset":0}', TICK % (1, 1000)], False),  # the first batch's files
        (None, ["-", TICK % (1, 1000)], True),  # a fresh checkpoint, no file yet
        (['{"logOffset":0}', TICK % (1, 1000)], ['{"logOffset":0}', TICK % (2, 2000)], True),
        (['{"logOffset":0}', TICK % (1, 1000)], ['{"logOffset":1}', TICK % (2, 2000)], False),
        (  # a union: one input moved
            ['{"logOffset":3}', '{"logOffset":0}', TICK % (1, 1000)],
            ['{"logOffset":3}', '{"logOffset":1}', TICK % (2, 2000)],
            False,
        ),
    ],
)
def test_a_batch_of_ticks_only(tmp_path, previous, current, expected):
    if previous is not None:
        _offsets(tmp_path, 4, *previous)
    _offsets(tmp_path, 5, *current)
    assert only_ticks(str(tmp_path), 5) is expected
    assert only_ticks(str(tmp_path), 6) is False  # (no entry: not a batch of ticks)
