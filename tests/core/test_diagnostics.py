"""Diagnostics (semantics §8) from the reference engine: late input and partitions holding the
job watermark back."""

from __future__ import annotations

from typing import Any

import pytest

from sparktide.core.diagnostics import PartitionView, not_progressing
from sparktide.core.engine import simulate
from sparktide.core.records import InputRecord
from sparktide.job import Job, Ordering, Source
from sparktide.time import SECOND, format_instant, parse_instant

T0 = parse_instant("2026-03-01T09:00:00Z")


def _records(rows: list[tuple[int, int, int, int]]) -> list[InputRecord]:
    """(partition, event s, arrival s, processing s) after T0 → records in input order."""
    return [
        InputRecord(
            seq,
            {"n": seq},
            partition=p,
            event_time=T0 + e * SECOND,
            arrival_time=T0 + a * SECOND,
            processing_time=T0 + pt * SECOND,
            file="in.jsonl",
            line=seq + 1,
        )
        for seq, (p, e, a, pt) in enumerate(rows)
    ]


def _job(**ordering: Any) -> Job:
    return Job(
        Source(path="-", timestamp_by="t", partition="p"),
        Ordering(**{"late_arrival": "5s", "out_of_order": "1s", **ordering}),
    )


def _kinds(diagnostics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in diagnostics}


def test_late_input_counts_and_names_the_first_late_event():
    rows = [(0, 0, 0, 0), (0, 10, 10, 10), (0, 2, 20, 20), (0, 21, 21, 21), (0, 1, 30, 30)]
    late = _kinds(simulate(_job(), _records(rows)).metrics["diagnostics"])["late_input"]
    assert late["count"] == 2
    assert late["processing_from"] == format_instant(T0 + 20 * SECOND)
    assert late["processing_to"] == format_instant(T0 + 30 * SECOND)
    example = late["example"]
    assert (example["line"], example["partition"]) == (3, 0)
    assert example["event_time"] == format_instant(T0 + 2 * SECOND)
    assert example["arrival_time"] == format_instant(T0 + 20 * SECOND)
    assert example["lateness_us"] == 18 * SECOND
    assert "2 late input events" in late["message"] and "18s late" in late["message"]


def test_nothing_late_no_late_diagnostic():
    rows = [(0, 0, 0, 0), (0, 10, 12, 12)]
    assert "late_input" not in _kinds(simulate(_job(), _records(rows)).metrics["diagnostics"])


def _idle_partition_rows(last: int) -> list[tuple[int, int, int, int]]:
    """Partition 1 delivers once at 0 s; partition 0 keeps going until ``last`` s."""
    return [(1, 0, 0, 0), *((0, s, s, s) for s in range(0, last + 1, 2))]


def test_partition_not_progressing_is_named_with_advice():
    result = simulate(_job(), _records(_idle_partition_rows(20)), flush=False)
    stuck = _kinds(result.metrics["diagnostics"])["partition_not_progressing"]
    assert stuck["partition"] == 1
    assert stuck["idle_us"] == 20 * SECOND
    assert stuck["last_delivery"] == format_instant(T0)
    assert stuck["watermark"] == result.metrics["watermark"]  # it is the job watermark
    assert "partition 1 has delivered nothing for 20s" in stuck["message"]
    assert "send data to it" in stuck["message"]
    assert "ordering.partitioned = true" in stuck["message"]


def test_idle_for_less_than_late_arrival_is_not_reported():
    result = simulate(_job(late_arrival="30s"), _records(_idle_partition_rows(20)), flush=False)
    assert "partition_not_progressing" not in _kinds(result.metrics["diagnostics"])


@pytest.mark.parametrize("ordering", [{"partitioned": True}, {"late_arrival": None}])
def test_not_reported_without_a_merged_watermark_or_a_late_bound(ordering):
    result = simulate(_job(**ordering), _records(_idle_partition_rows(20)), flush=False)
    assert "partition_not_progressing" not in _kinds(result.metrics["diagnostics"])


def test_a_declared_partition_that_never_delivered_counts_from_the_start():
    job = Job(
        Source(path="-", timestamp_by="t", partition="p", partitions=2),
        Ordering(late_arrival="5s", out_of_order="1s"),
    )
    rows = [(0, s, s, s) for s in range(0, 21, 2)]
    result = simulate(job, _records(rows), flush=False)
    stuck = _kinds(result.metrics["diagnostics"])["partition_not_progressing"]
    # never seen: estimated NEVER_SEEN_LAG (5 s) behind processing time, so its watermark
    # is 20 - 5 - L = 10 s while partition 0's is 20 - O = 19 s
    assert stuck["partition"] == 1 and stuck["last_delivery"] is None
    assert stuck["watermark"] == format_instant(T0 + 10 * SECOND)
    assert stuck["idle_us"] == 20 * SECOND
    assert "since the job started 20s ago" in stuck["message"]


def test_not_progressing_rules():
    s = SECOND
    views = [PartitionView("a", 10 * s, 0), PartitionView("b", 50 * s, 90 * s)]
    (stuck,) = not_progressing(views, now=100 * s, started=0, late_arrival=5 * s)
    assert stuck["partition"] == "a" and stuck["idle_us"] == 100 * s
    # idle for exactly L is not "longer than L"
    assert not not_progressing(views, now=100 * s, started=0, late_arrival=100 * s)
    # all partitions level: nobody holds anyone back
    level = [PartitionView("a", 10 * s, 0), PartitionView("b", 10 * s, 0)]
    assert not not_progressing(level, now=100 * s, started=0, late_arrival=5 * s)
    # never delivered: counted from the job's start
    never = [PartitionView("a", 10 * s, None), PartitionView("b", 50 * s, 90 * s)]
    (stuck,) = not_progressing(never, now=100 * s, started=40 * s, late_arrival=5 * s)
    assert stuck["idle_us"] == 60 * s and stuck["last_delivery"] is None
    # the only partition is reported on its silence alone (Stream Analytics raises
    # InputPartitionNotProgressing for a one-partition input too): nobody is ahead
    (alone,) = not_progressing(views[:1], now=100 * s, started=0, late_arrival=5 * s)
    assert alone["partition"] == "a" and alone["idle_us"] == 100 * s
    assert alone["ahead"] is None and alone["watermark"] == format_instant(10 * s)
    assert not not_progressing(views[:1], now=5 * s, started=0, late_arrival=5 * s)


def test_a_join_is_not_advised_to_partition():
    """A join refuses ordering.partitioned: its diagnostic must not suggest it."""
    s = SECOND
    views = [PartitionView("left/0", 10 * s, 0), PartitionView("right/0", 50 * s, 90 * s)]
    (merged,) = not_progressing(views, now=100 * s, started=0, late_arrival=5 * s)
    assert "ordering.partitioned = true" in merged["message"]
    (joined,) = not_progressing(
        views, now=100 * s, started=0, late_arrival=5 * s, can_partition=False
    )
    assert "partitioned" not in joined["message"]
    assert joined["message"].endswith(
        "(a join follows the lowest watermark of all its inputs' partitions)"
    )


def test_a_silent_single_partition_input_is_diagnosed():
    """Semantics §8.4: one partition, silent past late_arrival (simulate --until)."""
    job = Job(Source(path="-", timestamp_by="t"), Ordering(late_arrival="5s"))
    rows = [(0, s, s, s) for s in range(0, 11, 2)]
    until = T0 + 30 * SECOND
    result = simulate(job, _records(rows), flush=False, until=until)
    (stuck,) = [d for d in result.metrics["diagnostics"] if d["kind"] != "late_input"]
    assert stuck["kind"] == "partition_not_progressing" and stuck["partition"] == 0
    assert stuck["idle_us"] == 20 * SECOND and stuck["ahead"] is None
    assert stuck["last_delivery"] == format_instant(T0 + 10 * SECOND)
    assert stuck["watermark"] == result.metrics["watermark"]
    assert "the input's only partition, has delivered nothing for 20s" in stuck["message"]
    assert "partitioned" not in stuck["message"]
    # silent for no longer than late_arrival: nothing
    quiet = simulate(job, _records(rows), flush=False, until=T0 + 15 * SECOND)
    assert not quiet.metrics["diagnostics"]


def _window_job(**tables: Any) -> Job:
    from sparktide.job import Window
    from sparktide.job.window import Aggregate

    window = Window(
        type="tumbling",
        size="1m",
        group_by=("devce",),
        aggregates=(Aggregate("avg_t", "avg", "temprature"), Aggregate("n", "count")),
    )
    return Job(Source(path="-", timestamp_by="t", partition="p"), window=window, **tables)


def _rows(*fields: dict[str, Any]) -> list[InputRecord]:
    from sparktide.reader.fields import parse_fields

    base = {"p": 0, "t": "2026-03-01T09:00:01Z"}
    return [
        parse_fields(seq, {**base, **f}, Source(path="-", timestamp_by="t", partition="p"))
        for seq, f in enumerate(fields)
    ]


def test_named_columns_name_every_role_once():
    from sparktide.core.namedcolumns import named_columns
    from sparktide.job import Filter, Projection

    job = Job(
        Source(path="-", timestamp_by="t", arrival_time="a", partition="p", over="k"),
        filter=Filter("speed > 50 AND k <> 'x'"),
        select=(Projection("s2", "speed * 2"), Projection("lane", "lane")),
    )
    assert [(n.column, n.roles) for n in named_columns(job)] == [
        ("t", ("source.timestamp_by",)),
        ("a", ("source.arrival_time",)),
        ("p", ("source.partition",)),
        ("k", ("source.over", "filter.where")),
        ("speed", ("filter.where", "select.s2")),
        ("lane", ("select.lane",)),
    ]
    windowed = named_columns(_window_job())
    assert [n.column for n in windowed] == ["t", "p", "devce", "temprature"]
    assert windowed[3].roles == ("window.aggregates.avg_t = avg(temprature)",)


def test_analytic_columns_are_computed_and_their_inputs_named():
    """An analytic column's name, read by the filter and [select], is no input field;
    the fields it reads are (semantics §8.4)."""
    from sparktide.core.namedcolumns import named_columns
    from sparktide.job import Analytic, Filter, Projection

    prev = Analytic("prev", "lag", value="speed", partition_by=("devce",), limit_duration="1m")
    job = Job(
        Source(path="-", timestamp_by="t"),
        filter=Filter("prev IS NULL OR prev < speed"),
        select=(Projection("prev", "prev"), Projection("rise", "speed - prev")),
        analytics=(prev,),
    )
    assert [(n.column, n.roles) for n in named_columns(job)] == [
        ("t", ("source.timestamp_by",)),
        ("devce", ("analytic.prev",)),
        ("speed", ("analytic.prev", "filter.where", "select.rise")),
    ]
    rows = _rows({"device": "a", "speed": 1}, {"device": "a", "speed": 2})
    diagnostics = simulate(job, rows, explain=False).metrics["diagnostics"]
    (missing,) = [d for d in diagnostics if d["kind"] == "missing_column"]
    assert missing["message"] == (
        "column 'devce' (analytic.prev) holds a value in none of the 2 input records: "
        "the analytic column reads it as null; check its spelling against the input"
    )


def test_a_column_no_record_holds_is_a_missing_column():
    """Semantics §8.4: held by none of the input records (absent or null); a malformed
    record counts by its fields; one record holding it is enough."""
    job = _window_job()
    rows = _rows({"device": "a", "temperature": 1}, {"devce": None, "temperature": 2})
    rows.append(InputRecord(9, None, raw="{not json", error="not JSON"))
    diagnostics = simulate(job, rows, explain=False).metrics["diagnostics"]
    missing = [d for d in diagnostics if d["kind"] == "missing_column"]
    assert [(d["column"], d["count"]) for d in missing] == [("devce", 3), ("temprature", 3)]
    assert missing[0]["message"] == (
        "column 'devce' (window.group_by) holds a value in none of the 3 input records: "
        "every window's group value is null; check its spelling against the input"
    )
    held = _rows({"devce": "a"}, {"temprature": 1.5})
    kinds = [d["kind"] for d in simulate(job, held, explain=False).metrics["diagnostics"]]
    assert "missing_column" not in kinds
    # no input, no diagnostic
    assert not simulate(job, [], explain=False).metrics["diagnostics"]


def test_a_misspelled_join_key_is_a_missing_column():
    """``join.on`` names a field neither input has: no event can match."""
    from tests.test_transcripts import TRANSCRIPTS, load, run_transcript

    data = load(TRANSCRIPTS / "join_toll_booth.toml")
    data["job"]["join"]["on"] = ["TollId", "Plat"]
    result = run_transcript(data)
    (missing,) = [d for d in result.metrics["diagnostics"] if d["kind"] == "missing_column"]
    assert (missing["column"], missing["role"], missing["count"]) == ("Plat", "join.on", 7)
    assert "no event can match" in missing["message"]


def test_a_misspelled_column_in_an_input_s_where_is_a_missing_column():
    """``[inputs.<name>] where`` (semantics §11.20) over a field no record holds: the
    input's where reads it as null (its events are filtered), not a malformed record."""
    from tests.test_transcripts import TRANSCRIPTS, load, run_transcript

    data = load(TRANSCRIPTS / "join_toll_booth.toml")
    name = data["job"]["join"]["left"]
    data["job"]["inputs"][name]["where"] = "Tol > 0"
    result = run_transcript(data)
    (missing,) = [d for d in result.metrics["diagnostics"] if d["kind"] == "missing_column"]
    assert (missing["column"], missing["role"]) == ("Tol", f"inputs.{name}.where")
    assert "the input's where reads it as null" in missing["message"]
    assert result.metrics["dropped"]["filtered"] > 0 and not result.events


def test_check_columns_refuses_a_schema_without_a_named_column():
    from sparktide.core.namedcolumns import check_columns
    from sparktide.errors import ConfigError

    job = _window_job()
    check_columns(job, ["t", "p", "devce", "temprature", "other"])
    with pytest.raises(ConfigError) as error:
        check_columns(job, ["t", "p", "device", "temperature"])
    assert error.value.key == "window.group_by"
    assert str(error.value) == (
        "window.group_by: column 'devce' is not in the input's schema (its columns: "
        "device, p, t, temperature)"
    )
    with pytest.raises(ConfigError, match=r"^window\.aggregates\.avg_t: column 'temprature'"):
        check_columns(job, ["t", "p", "devce"])
    check_columns(job, ["t", "devce", "temprature"], exempt=["p"])


def test_each_partition_is_held_to_its_own_inputs_late_arrival():
    """Semantics §7.8: with per-input tolerances a silent partition is reported once it
    has been quiet for longer than its own input's ``late_arrival``."""
    views = [
        PartitionView("north/0", 0, 0),  # silent since 0 s, holds the job back
        PartitionView("south/0", 0, 0),  # the same
        PartitionView("south/1", 50 * SECOND, 50 * SECOND),  # ahead
    ]
    bounds = {"north": 60 * SECOND, "south": 20 * SECOND}
    reported = not_progressing(
        views,
        now=30 * SECOND,
        started=0,
        late_arrival=lambda pid: bounds[pid.split("/")[0]],
    )
    assert [d["partition"] for d in reported] == ["south/0"]
    assert "longer than late_arrival 20s" in reported[0]["message"]
    # the only partition: reported on its own input's bound, never without one
    only = views[1:2]
    assert len(not_progressing(only, now=30 * SECOND, started=0, late_arrival=bounds.get)) == 0
    assert (
        len(not_progressing(only, now=30 * SECOND, started=0, late_arrival=lambda _: 20 * SECOND))
        == 1
    )
    assert not_progressing(only, now=30 * SECOND, started=0, late_arrival=lambda _: None) == []
