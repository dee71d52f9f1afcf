"""Properties of edge events in the reference engine (semantics §7, issue 7).

Generated streams of start and end edges over a few ids (so ids are reused, repeated
while open, ended twice or never), with disorder, explicit CTIs, 1–3 partitions or
substreams, tumbling or hopping windows (either boundary, with allowed lateness).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from sparktide.core.windows import grid_starts
from sparktide.job import Aggregate, Job, Ordering, Punctuation, Source, Window
from sparktide.time import SECOND, parse_instant
from tests.core.test_punctuation_properties import BASE, SETTINGS, iso, run


@st.composite
def scenarios(draw: Any, *, accept: bool = True) -> tuple[Job, list[dict[str, Any]]]:
    substreams = draw(st.booleans())
    ordering = Ordering(
        early_arrival=None,
        late_arrival=draw(st.sampled_from([None, 5 * SECOND])),
        out_of_order=draw(st.sampled_from([None, 0, 2 * SECOND])),
        action=draw(st.sampled_from(["adjust", "drop"])),
        on_out_of_order=draw(
            st.sampled_from([None, "dead_letter", "accept"] if accept else [None, "dead_letter"])
        ),
        partitioned=not substreams and draw(st.booleans()),
    )
    size = draw(st.sampled_from([2 * SECOND, 6 * SECOND]))
    window = Window(
        type="hopping",
        size=size,
        hop=draw(st.sampled_from([size, size // 2, size * 2])),
        boundary=draw(st.sampled_from(["start", "end"])),
        allowed_lateness=draw(st.sampled_from([0, SECOND])),
        group_by=("device",) if substreams else ("p",) if ordering.partitioned else (),
        aggregates=(Aggregate("n", "count"), Aggregate("ids", "collect_list", "id")),
    )
    source = Source(
        path="-",
        timestamp_by="t",
        arrival_time="a",
        partition="p",
        partitions=3,  # (a partition seen late could start below the job watermark)
        over="device" if substreams else None,
        edge="kind",
        edge_id="eid",
    )
    punctuation = Punctuation(column="kind", value="cti", watermark="both")
    job = Job(source=source, ordering=ordering, window=window, punctuation=punctuation)
    partitions = 3 if substreams else draw(st.sampled_from([1, 3, 3]))  # of 3 declared
    rows: list[dict[str, Any]] = []
    arrival = BASE
    for n in range(draw(st.integers(1, 40))):
        arrival += draw(st.sampled_from([0, 1, 300_000, SECOND, 3 * SECOND]))
        row: dict[str, Any] = {"id": n, "p": draw(st.integers(0, partitions - 1))}
        row["a"] = iso(arrival)
        if substreams:
            row["device"] = f"d{draw(st.integers(0, 2))}"
        t = arrival + draw(st.sampled_from([0, -SECOND, -4 * SECOND, -20 * SECOND, SECOND, -1]))
        row["t"] = iso(t)
        row["kind"] = draw(st.sampled_from(["start", "start", "end", "end", "cti"]))
        row["eid"] = draw(st.integers(0, 3))
        rows.append(row)
    return job, rows


def _instant(text: str | None) -> int | None:
    return parse_instant(text) if text else None


@SETTINGS
@given(scenarios())
def test_every_edge_is_accounted_for_once(scenario: tuple[Job, list[dict[str, Any]]]) -> None:
    job, rows = scenario
    result = run(job, rows)
    metrics = result.metrics
    ctis = sum(1 for row in rows if row["kind"] == "cti")
    assert metrics["input"] == len(rows) - ctis
    outcomes = (
        metrics["admitted"]
        + sum(metrics["dropped"].values())
        + sum(metrics["dead_lettered"].values())
    )
    assert outcomes == metrics["input"]
    assert metrics["open_edges"] == 0  # the flush ends every open edge
    lettered = sorted(d["seq"] for d in result.dead_letters)
    assert lettered == sorted(d["seq"] for d in result.decisions if d["verdict"] == "dead_lettered")


@SETTINGS
@given(scenarios(accept=False))
def test_an_edge_is_in_exactly_the_windows_it_overlaps(
    scenario: tuple[Job, list[dict[str, Any]]],
) -> None:
    """Without ``accept`` an end is never below the windows that closed while its event
    was open, so the windows an event ends up in are exactly those sharing an instant
    with ``[start, end)`` — the end its end edge gave (after adjust), or the last
    watermark of its scope for an event the flush found open."""
    job, rows = scenario
    window = job.window
    assert window is not None
    result = run(job, rows)
    note(f"windows: {result.windows}")
    timeline_of = (lambda d: d["key"]) if job.source.over else (lambda d: d["partition"])
    open_events: dict[tuple[Any, Any], dict[str, Any]] = {}
    spans: list[tuple[dict[str, Any], int | None]] = []  # (start decision, end)
    for decision in result.decisions:
        if decision["verdict"] not in ("accepted", "adjusted", "dropped") or "edge" not in decision:
            continue
        pair = (timeline_of(decision), decision["edge_id"])
        if decision["edge"] == "start" and decision["verdict"] != "dropped":
            assert pair not in open_events  # else it would be a duplicate_edge
            open_events[pair] = decision
        elif decision["edge"] == "end" and "empty_edge" in decision["reasons"]:
            spans.append((open_events.pop(pair), None))
        elif decision["edge"] == "end" and decision["verdict"] != "dropped":
            spans.append((open_events.pop(pair), parse_instant(decision["timestamp"])))
    if job.source.over:  # (a substream's last watermark is not in the metrics)
        never_ended: list[tuple[dict[str, Any], int | None]] = []
    elif job.ordering.partitioned:
        marks = {p["partition"]: p["watermark"] for p in result.metrics["partitions"]}
        never_ended = [(d, _instant(marks.get(d["partition"]))) for d in open_events.values()]
    else:
        mark = _instant(result.metrics["watermark"])
        never_ended = [(d, mark) for d in open_events.values()]
    shift = 1 if window.boundary == "end" else 0
    expected: dict[int, set[int]] = {}
    for start, end in spans + never_ended:
        s = parse_instant(start["timestamp"])
        starts: set[int] = set()
        if end is not None and end > s:
            low, high = s - shift, end - 1 - shift
            starts = set(grid_starts(high, window.size, window.period, window.offset, low))  # type: ignore[arg-type]
        expected[start["seq"]] = starts
    found: dict[int, list[int]] = {seq: [] for seq in expected}
    emitted = set()
    for record in result.windows:
        window_key = (record.get("p"), record.get("device"), record["window_start"])
        assert window_key not in emitted  # each window closes once
        emitted.add(window_key)
        assert len(record["ids"]) == len(set(record["ids"])) == record["n"]  # each once
        for ident in record["ids"]:
            if ident in found:
                found[ident].append(parse_instant(record["window_start"]))
    assert {seq: sorted(starts) for seq, starts in found.items()} == {
        seq: sorted(starts) for seq, starts in expected.items()
    }
