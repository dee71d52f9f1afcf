"""sparktide's checkpointed state: what is kept, and what is forgotten."""

from __future__ import annotations

from sparktide.spark.state import StateStore


def test_old_states_and_journal_entries_are_pruned(spark, tmp_path):
    store = StateStore(spark, str(tmp_path / "checkpoint"))
    for batch in range(151):
        store.processing_time(batch, 1_000 + batch)
        store.begin(batch)
        store.commit(batch, {"batch": batch})
    assert store._committed() == [148, 149, 150]  # the newest three states
    journal = store.journal()
    # the last 100 batches' processing times and the current one; none older
    assert sorted(journal) == list(range(50, 151))
    assert journal[150] == 1_150
    # a replayed batch still finds its time
    assert store.processing_time(150, 99) == 1_150
