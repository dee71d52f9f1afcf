"""The demo's stream (``sparktide.demo``): files Spark reads in one order, every run."""

from __future__ import annotations

import itertools

from sparktide.demo import generate


def test_the_demo_files_are_read_in_partition_order(tmp_path):
    """Spark's file source takes new files oldest first, by modification time in
    milliseconds: files written within one millisecond would come in an order of the
    listing's own (it differed between two directories of one cluster demo, and so did
    the micro-batches). The demo's are a second apart, in partition order."""
    lines = generate(tmp_path)
    files = sorted(tmp_path.glob("partition-*.jsonl"))
    assert [f.name for f in files] == [f"partition-{p}.jsonl" for p in range(3)]
    stamps = [f.stat().st_mtime_ns for f in files]
    assert all(later - earlier >= 1_000_000_000 for earlier, later in itertools.pairwise(stamps))
    assert lines == sum(len(f.read_text().splitlines()) for f in files)
