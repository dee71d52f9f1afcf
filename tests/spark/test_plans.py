"""Which plan a batch takes, decided as data (``sparktide.spark.plans``): built from the
job without a Spark session or a batch, printable, with the reasons."""

from __future__ import annotations

import pytest

from sparktide.spark import plans
from sparktide.spark.onepass import fusable
from sparktide.spark.plans import BatchPlan, plan_batch, windows_on, writes_on
from tests.spark.streams import job_for

WINDOW = {
    "type": "tumbling",
    "size": "30s",
    "group_by": ["device"],
    "aggregates": {"n": "count(*)"},
}
BOUNDS = {"late_arrival": "15s", "out_of_order": "5s"}


def test_a_windowed_job_on_partition_clocks_takes_one_pass(tmp_path):
    job = job_for(
        tmp_path, {"source": {"partition": "partition"}, "ordering": BOUNDS, "window": WINDOW}
    )
    plan = plan_batch(job)
    assert plan == BatchPlan("one_pass", False, False, reasons=("each row its own clock",))
    assert plan.one_pass
    assert str(plan) == "one_pass (each row its own clock)"


def test_merged_partitions_under_accept_need_the_estimates_first(tmp_path):
    ordering = {**BOUNDS, "on_out_of_order": "accept"}
    job = job_for(
        tmp_path, {"source": {"partition": "partition"}, "ordering": ordering, "window": WINDOW}
    )
    plan = plan_batch(job)
    assert plan.route == "general" and plan.estimates_first
    assert plan.reasons == ("the policy reads other partitions' clocks",)
    assert str(plan).startswith("general, estimates first (")


def test_partitioned_accept_judges_rows_against_their_own_clock(tmp_path):
    ordering = {**BOUNDS, "on_out_of_order": "accept", "partitioned": True}
    job = job_for(tmp_path, {"source": {"partition": "partition"}, "ordering": ordering})
    plan = plan_batch(job)
    assert not plan.estimates_first
    assert plan.route == "general"  # (no window: nothing for the one-pass kernel to fold)
    assert plan.reasons == ("the one-pass kernel cannot run the job",)


def test_substreams_learn_who_delivers_in_their_tasks(tmp_path):
    source = {"partition": "partition", "over": "device"}
    job = job_for(tmp_path, {"source": source, "ordering": BOUNDS, "window": WINDOW})
    plan = plan_batch(job)
    assert plan.route == "one_pass" and plan.estimates_first
    assert plan.reasons == ("substreams: tasks learn who delivers",)


def test_a_flush_and_a_fallback_say_why(tmp_path):
    job = job_for(
        tmp_path, {"source": {"partition": "partition"}, "ordering": BOUNDS, "window": WINDOW}
    )
    assert plan_batch(job, flush=True).route == "flush"
    fallen = plan_batch(job).fall_back("the kernel gave up")
    assert fallen.route == "general" and not fallen.one_pass
    assert fallen.reasons[-1] == "one pass declined: the kernel gave up"
    merged = fallen.merge_windows("driver", "few rows")
    assert merged.windows_on == "driver" and "windows on driver" in str(merged)


def test_an_aggregate_over_distinct_combinations_takes_the_general_plan(tmp_path):
    """The kernel folds numbers; the sets of combinations are open-window partials that
    the general plan merges and commits with its state (semantics §13.4)."""
    aggregates = {"mean": "avg(value) over (distinct value, System.Timestamp())"}
    window = {**WINDOW, "aggregates": aggregates}
    job = job_for(
        tmp_path, {"source": {"partition": "partition"}, "ordering": BOUNDS, "window": window}
    )
    assert not fusable(job)
    plan = plan_batch(job)
    assert plan.route == "general" and not plan.one_pass
    assert plan.reasons[0].startswith("an aggregate over (distinct ...): the one-pass kernel")


def test_a_flush_after_one_pass_batches_runs_no_task(tmp_path):
    one_pass = {"source": {"partition": "partition"}, "ordering": BOUNDS, "window": WINDOW}
    plan = plan_batch(job_for(tmp_path, one_pass), flush=True)
    assert plan.route == "flush" and plan.no_task and not plan.one_pass
    assert str(plan) == "flush, no task (a flush: no input, and one pass over none runs no task)"
    general = {**one_pass, "filter": {"where": "value > 0"}}
    plan = plan_batch(job_for(tmp_path, general), flush=True)
    assert plan.route == "flush" and not plan.no_task
    assert plan.reasons == ("a flush: no input",)


def test_a_silent_batch_keeps_its_route_and_runs_no_task(tmp_path):
    one_pass = {"source": {"partition": "partition"}, "ordering": BOUNDS, "window": WINDOW}
    plan = plan_batch(job_for(tmp_path, one_pass), silent=True)
    assert plan.route == "one_pass" and plan.no_task
    assert plan.reasons[-1] == "no input (the ticker's row only): one pass over none runs no task"
    general = {**one_pass, "filter": {"where": "value > 0"}}
    plan = plan_batch(job_for(tmp_path, general), silent=True)
    assert plan.route == "general" and not plan.no_task


def test_declines_for_unvouched_events_skip_the_next_attempts(tmp_path):
    job = job_for(
        tmp_path, {"source": {"partition": "partition"}, "ordering": BOUNDS, "window": WINDOW}
    )
    clock: dict = {}
    tried = []
    for _ in range(80):  # every attempt declined: skip 1, 2, 4 ... batches, then 32
        skip = plans.skips_one_pass(clock)
        plan = plan_batch(job, skip=skip)
        assert plan.skipped == skip and plan.one_pass != skip
        tried.append(plan.one_pass)
        plans.remember_one_pass(clock, "unvouched" if plan.one_pass else "skipped")
    attempts = [i for i, one_pass in enumerate(tried) if one_pass]
    assert attempts == [0, 2, 5, 10, 19, 36, 69]
    assert "one pass skipped" in str(plan_batch(job, skip=True))
    plans.remember_one_pass(clock, "declined")  # (another reason: no change)
    assert clock[plans.UNVOUCHED_MEMORY] == [7, 32 - (79 - 69)]
    plans.remember_one_pass(clock, "ran")
    assert clock == {} and not plans.skips_one_pass(clock)


def test_generated_ctis_ahead_of_the_newest_timestamp_are_scanned(tmp_path):
    punctuation = {"every": "10s", "delay": "-2s"}
    tables = {"source": {"partition": "partition"}, "ordering": BOUNDS, "punctuation": punctuation}
    plan = plan_batch(job_for(tmp_path, tables))
    assert plan.scans_ctis


@pytest.mark.parametrize(
    ("facts", "place"),
    [
        ({"flushing": False, "keys_on_driver": True, "rows": 10}, "driver"),
        ({"flushing": True, "keys_on_driver": True, "rows": 10}, "spark"),
        ({"flushing": False, "keys_on_driver": False, "rows": 10}, "spark"),
        (
            {"flushing": False, "keys_on_driver": True, "rows": plans.DRIVER_WINDOW_ROWS + 1},
            "spark",
        ),
    ],
)
def test_windows_merge_on_the_driver_while_few(tmp_path, facts, place):
    job = job_for(
        tmp_path, {"source": {"partition": "partition"}, "ordering": BOUNDS, "window": WINDOW}
    )
    on, reason = windows_on(job, **facts)
    assert on == place
    assert reason.startswith(
        f"windows merge {'on the driver' if place == 'driver' else 'in Spark'}"
    )


@pytest.mark.parametrize(
    ("window", "input_rows", "state_rows", "place"),
    [
        (WINDOW, 10, 20, "driver"),
        (WINDOW, 0, plans.DRIVER_WRITE_ROWS, "driver"),
        (WINDOW, 1, plans.DRIVER_WRITE_ROWS, "spark"),
        # an event may open size / hop = 4 hopping windows, and 2 sliding ones
        (
            {"type": "hopping", "size": "1m", "hop": "15s"},
            plans.DRIVER_WRITE_ROWS // 4,
            0,
            "driver",
        ),
        (
            {"type": "hopping", "size": "1m", "hop": "15s"},
            plans.DRIVER_WRITE_ROWS // 4 + 1,
            0,
            "spark",
        ),
        ({"type": "sliding", "size": "1m"}, plans.DRIVER_WRITE_ROWS // 2 + 1, 0, "spark"),
        (None, plans.DRIVER_WRITE_ROWS, 0, "driver"),
    ],
)
def test_a_batch_writes_from_the_driver_while_few(tmp_path, window, input_rows, state_rows, place):
    tables = {"source": {"partition": "partition"}, "ordering": BOUNDS}
    if window is not None:
        tables["window"] = {**window, "aggregates": {"n": "count(*)"}}
    on, reason = writes_on(job_for(tmp_path, tables), input_rows=input_rows, state_rows=state_rows)
    assert on == place
    assert reason.startswith(
        "records and state written " + ("from the driver" if place == "driver" else "by Spark")
    )
