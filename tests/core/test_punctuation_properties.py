"""Properties of CTIs and interval events in the reference engine (semantics §7, issue 7).

Generated streams: 1–3 partitions or substreams over 1–4 keys, events with disorder,
explicit CTI rows (some with a key, some without, some behind), generated CTIs (every N
events or every period, delays from −1 s to 5 s), ``watermark = "cti"`` or ``"both"``,
every out-of-order action, point or interval events, no window or a tumbling window.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from sparktide.core.engine import Result, simulate
from sparktide.core.release import release_ready
from sparktide.job import Aggregate, Job, Join, Ordering, Punctuation, Source, Window
from sparktide.reader import parse_fields
from sparktide.time import SECOND, format_instant, parse_instant

BASE = parse_instant("2026-03-01T09:00:00Z")
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def iso(instant: int) -> str:
    text = format_instant(instant)
    assert text is not None
    return text


@st.composite
def scenarios(draw: Any) -> tuple[Job, list[dict[str, Any]]]:
    substreams = draw(st.booleans())
    intervals = draw(st.booleans())
    explicit = draw(st.booleans())
    generated = draw(st.sampled_from([None, "events", "period"]))
    if not explicit and generated is None:
        generated = "events"
    punctuation = Punctuation(
        column="kind" if explicit else None,
        value="cti" if explicit else None,
        every_events=draw(st.integers(1, 4)) if generated == "events" else None,
        every=draw(st.sampled_from([SECOND, 5 * SECOND])) if generated == "period" else None,
        delay=draw(st.sampled_from([-SECOND, -1, 0, 2 * SECOND, 5 * SECOND]))
        if generated
        else None,
        watermark=draw(st.sampled_from(["cti", "both"])),
    )
    ordering = Ordering(
        early_arrival=draw(st.sampled_from([None, 30 * SECOND])),
        late_arrival=draw(st.sampled_from([None, 5 * SECOND])),
        out_of_order=draw(st.sampled_from([None, 0, 2 * SECOND])),
        action=draw(st.sampled_from(["adjust", "drop"])),
        on_out_of_order=draw(st.sampled_from([None, "dead_letter", "accept"])),
        partitioned=not substreams and draw(st.booleans()),
    )
    window = None
    if draw(st.booleans()):
        group_by = ("device",) if substreams else ("p",) if ordering.partitioned else ()
        window = Window(
            type="tumbling",
            size=draw(st.sampled_from([2 * SECOND, 10 * SECOND])),
            group_by=group_by,
            aggregates=(Aggregate("n", "count"),),
        )
    source = Source(
        path="-",
        timestamp_by="t",
        arrival_time="a",
        partition="p",
        over="device" if substreams else None,
        end_time="e" if intervals else None,
    )
    job = Job(source=source, ordering=ordering, window=window, punctuation=punctuation)
    partitions = draw(st.integers(1, 3))
    keys = draw(st.integers(1, 4))
    rows: list[dict[str, Any]] = []
    arrival = BASE
    for n in range(draw(st.integers(1, 40))):
        arrival += draw(st.sampled_from([0, 1, 300_000, SECOND, 3 * SECOND]))
        row: dict[str, Any] = {
            "id": n,
            "p": draw(st.integers(0, partitions - 1)),
            "a": iso(arrival),
        }
        if substreams:
            row["device"] = f"d{draw(st.integers(0, keys - 1))}"
        t = arrival + draw(st.sampled_from([0, -SECOND, -4 * SECOND, -20 * SECOND, SECOND, -1]))
        row["t"] = iso(t)
        if explicit and draw(st.integers(0, 4)) == 0:
            row["kind"] = "cti"
            if substreams and draw(st.booleans()):
                del row["device"]
        elif intervals:
            row["e"] = iso(t + draw(st.sampled_from([1, SECOND, 3 * SECOND, 12 * SECOND])))
        rows.append(row)
    return job, rows


def run(job: Job, rows: list[dict[str, Any]]) -> Result:
    records = [
        parse_fields(seq, dict(row), job.source, punctuation=job.punctuation)
        for seq, row in enumerate(rows)
    ]
    for record in records:
        assert not record.malformed, record.error
    return simulate(job, records)


def timeline(decision: dict[str, Any], job: Job) -> Any:
    return decision["key"] if job.source.over else decision["partition"]


@SETTINGS
@given(scenarios())
def test_every_record_is_accounted_for_once(scenario: tuple[Job, list[dict[str, Any]]]) -> None:
    job, rows = scenario
    result = run(job, rows)
    metrics = result.metrics
    ctis = sum(1 for row in rows if row.get("kind") == "cti")
    assert metrics["punctuations"] == ctis
    assert metrics["input"] == len(rows) - ctis
    outcomes = (
        metrics["admitted"]
        + sum(metrics["dropped"].values())
        + sum(metrics["dead_lettered"].values())
    )
    assert outcomes == metrics["input"]
    verdicts = [d["verdict"] for d in result.decisions]
    assert verdicts.count("punctuation") == ctis


@SETTINGS
@given(scenarios())
def test_watermarks_never_go_back(scenario: tuple[Job, list[dict[str, Any]]]) -> None:
    job, rows = scenario
    result = run(job, rows)
    last: dict[Any, str] = {}
    for decision in result.decisions:
        if decision["verdict"] == "punctuation" and job.source.over and decision["key"] is None:
            continue  # a keyless CTI's watermark is the substreams' floor
        scope = timeline(decision, job)
        mark = decision["watermark"]
        if mark is None:
            assert scope not in last, decision
            continue
        if scope in last:
            assert parse_instant(mark) >= parse_instant(last[scope]), decision
        last[scope] = mark


@SETTINGS
@given(scenarios())
def test_adjust_never_starts_before_the_cti(scenario: tuple[Job, list[dict[str, Any]]]) -> None:
    job, rows = scenario
    result = run(job, rows)
    accept = job.ordering.out_of_order_action == "accept"
    for decision in result.decisions:
        if decision["verdict"] not in ("accepted", "adjusted"):
            continue
        note(str(decision))
        start = parse_instant(decision["timestamp"])
        if not accept:
            if decision["cti"] is not None:
                assert start >= parse_instant(decision["cti"])
            if decision["watermark"] is not None:
                assert start >= parse_instant(decision["watermark"])
        if job.source.end_time is not None:
            assert parse_instant(decision["end_time"]) > start


@SETTINGS
@given(scenarios())
def test_generated_ctis_follow_the_count(scenario: tuple[Job, list[dict[str, Any]]]) -> None:
    job, rows = scenario
    punctuation = job.punctuation
    assert punctuation is not None
    result = run(job, rows)
    if punctuation.every_events is None:
        return
    # A CTI after every N-th event of a timeline, once the timeline admitted an event.
    events: dict[Any, int] = defaultdict(int)
    admitted: dict[Any, bool] = defaultdict(bool)
    expected = 0
    for decision in result.decisions:
        if decision["verdict"] == "punctuation":
            continue
        scope = timeline(decision, job)
        events[scope] += 1
        # (an event found late for its windows was admitted by the policy first)
        admitted[scope] |= (
            decision["timestamp"] is not None or "window_closed" in decision["reasons"]
        )
        if events[scope] % punctuation.every_events == 0 and admitted[scope]:
            expected += 1
    assert result.metrics["ctis_generated"] == expected


@st.composite
def unions(draw: Any) -> tuple[Job, list[tuple[str, dict[str, Any]]]]:
    """2–3 inputs of 2 declared partitions each, with their own lags and CTIs; merged, no
    window."""
    names = ["a", "b", "c"][: draw(st.integers(2, 3))]
    explicit = draw(st.booleans())
    inputs = tuple(
        # declared partitions: one first seen late would start behind the job (jobfile.md)
        (name, Source(path="-", timestamp_by="t", arrival_time="a", partition="p", partitions=2))
        for name in names
    )
    job = Job(
        source=inputs[0][1],
        inputs=inputs,
        ordering=Ordering(
            early_arrival=None,
            late_arrival=draw(st.sampled_from([None, 5 * SECOND])),
            out_of_order=draw(st.sampled_from([0, 2 * SECOND])),
            action=draw(st.sampled_from(["adjust", "drop"])),
        ),
        punctuation=Punctuation(column="kind", value="cti", watermark="both") if explicit else None,
    )
    rows = []
    arrival = BASE
    for n in range(draw(st.integers(1, 40))):
        arrival += draw(st.sampled_from([0, 1, SECOND, 3 * SECOND]))
        name = draw(st.sampled_from(names))
        lag = draw(st.sampled_from([0, SECOND, 4 * SECOND, 30 * SECOND]))
        row: dict[str, Any] = {"id": n, "p": draw(st.integers(0, 1)), "a": iso(arrival)}
        row["t"] = iso(arrival - lag)
        if explicit and draw(st.integers(0, 5)) == 0:
            row["kind"] = "cti"
        rows.append((name, row))
    return job, rows


def union_records(job: Job, rows: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The records of ``rows`` read by their inputs' sources (rows of inputs the job does
    not have are left out), partitions named ``<input>/<id>`` as a union names them."""
    sources = dict(job.inputs)
    records = []
    for name, row in rows:
        if name in sources:
            record = parse_fields(
                len(records), dict(row), sources[name], punctuation=job.punctuation
            )
            record.partition = f"{name}/{record.partition}"
            records.append(record)
    return records


@SETTINGS
@given(unions())
def test_a_union_releases_in_order_up_to_the_slowest_input(
    scenario: tuple[Job, list[tuple[str, dict[str, Any]]]],
) -> None:
    job, rows = scenario
    records = union_records(job, rows)
    result = simulate(job, records, flush=False)
    # output never goes back in time
    stamps = [parse_instant(e["timestamp"]) for e in result.events]
    assert stamps == sorted(stamps)
    # nothing is released beyond the minimum of the inputs' watermarks
    metrics = result.metrics
    marks = [p["watermark"] for p in metrics["partitions"]]
    if stamps:
        assert None not in marks
        assert stamps[-1] <= min(parse_instant(m) for m in marks)
    assert metrics["input"] + metrics["punctuations"] == len(rows)


def expected_matches(
    result: Result,
    records: list[Any],
    sides: tuple[str, str],
    key: str,
    between: tuple[int, int],
) -> list[tuple[int, Any, Any]]:
    """Every pair of admitted events a join must find: ``(timestamp, left id, right id)``,
    sorted — the same ``key``, ``right − left`` within ``between`` (semantics §7)."""
    admitted = {d["seq"]: parse_instant(d["timestamp"]) for d in result.decisions if d["timestamp"]}
    left, right = sides
    return sorted(
        (max(admitted[a.seq], admitted[b.seq]), a.fields["id"], b.fields["id"])
        for a in records
        for b in records
        if a.seq in admitted
        and b.seq in admitted
        and str(a.partition).startswith(f"{left}/")
        and str(b.partition).startswith(f"{right}/")
        and a.fields[key] == b.fields[key]
        and between[0] <= admitted[b.seq] - admitted[a.seq] <= between[1]
    )


@SETTINGS
@given(unions(), st.sampled_from([(0, 0), (-2 * SECOND, 5 * SECOND), (SECOND, 30 * SECOND)]))
def test_a_join_never_goes_back_in_time_and_finds_every_pair_once(
    scenario: tuple[Job, list[tuple[str, dict[str, Any]]]], between: tuple[int, int]
) -> None:
    union, rows = scenario
    left, right = (name for name, _ in union.inputs[:2])
    job = Job(
        source=union.source,
        inputs=union.inputs[:2],
        ordering=union.ordering,
        punctuation=union.punctuation,
        join=Join(left, right, ("p",), between),
    )
    records = union_records(job, rows)
    result = simulate(job, records)
    stamps = [parse_instant(e["timestamp"]) for e in result.events]
    assert stamps == sorted(stamps)
    # every pair of admitted events that matches is released once (flush releases all)
    expected = expected_matches(result, records, (left, right), "p", between)
    got = sorted(
        (parse_instant(e["timestamp"]), e[left]["id"], e[right]["id"]) for e in result.events
    )
    assert got == expected


@st.composite
def imported_joins(draw: Any) -> tuple[Job, list[tuple[str, dict[str, Any]]]]:
    """A fast input (2 declared partitions, frequent events) joined with a slow one (one
    partition, a few events, then silence) that imports the fast input's CTIs."""
    fast = Source(path="-", timestamp_by="t", arrival_time="a", partition="p", partitions=2)
    slow = Source(
        path="-", timestamp_by="t", arrival_time="a", partition="p", partitions=1,
        import_ctis="fast",
    )  # fmt: skip
    explicit = draw(st.booleans())
    job = Job(
        source=fast,
        inputs=(("fast", fast), ("slow", slow)),
        ordering=Ordering(
            early_arrival=None,
            late_arrival=None,
            out_of_order=draw(st.sampled_from([0, 2 * SECOND])),
            action=draw(st.sampled_from(["adjust", "drop"])),
        ),
        punctuation=Punctuation(column="kind", value="cti", watermark="both") if explicit else None,
        join=Join("fast", "slow", ("k",), draw(st.sampled_from([(-5 * SECOND, 5 * SECOND)]))),
    )
    rows: list[tuple[str, dict[str, Any]]] = []
    arrival = BASE
    slow_events = draw(st.integers(0, 4))
    for n in range(draw(st.integers(1, 40))):
        arrival += draw(st.sampled_from([0, 1, SECOND, 3 * SECOND]))
        name = "slow" if n < slow_events else "fast"
        lag = draw(st.sampled_from([0, SECOND, 4 * SECOND]))
        row: dict[str, Any] = {"id": n, "k": draw(st.integers(0, 1)), "a": iso(arrival)}
        row["p"] = 0 if name == "slow" else draw(st.integers(0, 1))
        row["t"] = iso(arrival - lag)
        if explicit and name == "fast" and draw(st.integers(0, 5)) == 0:
            row["kind"] = "cti"
        rows.append((name, row))
    return job, rows


@SETTINGS
@given(imported_joins())
def test_an_imported_cti_join_never_waits_for_the_slow_stream(
    scenario: tuple[Job, list[tuple[str, dict[str, Any]]]],
) -> None:
    """The slow input takes the fast one's watermark at every observation instant, so
    every match up to the fast input's watermark is released without the slow input
    sending anything more (one more observation instant after the last record)."""
    job, rows = scenario
    records = union_records(job, rows)
    last = max(parse_instant(row["a"]) for _, row in rows)
    result = simulate(job, records, flush=False, until=last + 1)
    marks = {p["partition"]: p["watermark"] for p in result.metrics["partitions"]}
    fast_marks = [marks.get(f"fast/{i}") for i in range(2)]
    if None in fast_marks:
        return  # the fast input has no watermark yet: nothing can be promised
    fast_watermark = min(parse_instant(m) for m in fast_marks)  # type: ignore[arg-type]
    assert parse_instant(result.metrics["watermark"]) >= fast_watermark
    matches = expected_matches(result, records, ("fast", "slow"), "k", (-5 * SECOND, 5 * SECOND))
    strict = job.punctuation is not None  # CTIs commit what lies strictly before them
    expected = [
        match for match in matches if release_ready(match[0], fast_watermark, strict=strict)
    ]
    got = sorted(
        (parse_instant(e["timestamp"]), e["fast"]["id"], e["slow"]["id"]) for e in result.events
    )
    assert got == expected
