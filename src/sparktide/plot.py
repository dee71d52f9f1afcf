"""Charts of a reference run's decisions: ``sparktide explain JOB.toml --plot chart.png``.

The chart follows the watermark illustrations of the Azure Stream Analytics
documentation: arrival time across (or processing time, ``x="processing"``), event time
up. Every well-formed input record is a point at (arrival time, event time), coloured by
its verdict; an adjusted event has an arrow from its event time up to its new system
timestamp. Each timeline's watermark (one per partition, or per substream key; the
busiest ones when there are many) is a step line traced from the engine after every
observation instant, so idle estimates and timers show; a merged job with several
partitions also gets its job watermark (the minimum). Windows are light horizontal bands
(they are intervals of system time): the window grid for tumbling and hopping windows,
the emitted windows' bounds for the others.

Above :data:`LAG_PANEL_MIN` events a second panel shows the same points and lines as
their distance from the time across (event time − arrival time, symmetric-log seconds):
at 20,000 events the first panel is a diagonal, the second shows the jitter, the late
backlogs and each watermark's lag.

Times stay integer microseconds until the very edge, where instants become matplotlib
dates. matplotlib is imported lazily: importing this module costs nothing.
"""

from __future__ import annotations

import html
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sparktide.core.engine import ReferenceEngine, Result
from sparktide.core.instants import NEG_INF, POS_INF
from sparktide.core.records import InputRecord
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.time import SECOND, format_duration, format_instant, parse_instant

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "CHART_SUFFIXES",
    "VERDICTS",
    "X_AXES",
    "ChartData",
    "check_chart_path",
    "draw_chart",
    "explain_run",
    "policy_text",
    "save_chart",
]

#: File types ``--plot`` writes, by suffix.
CHART_SUFFIXES = (".png", ".svg", ".pdf", ".html")
#: What the horizontal axis can show.
X_AXES = ("arrival", "processing")

VERDICTS = ("accepted", "adjusted", "dropped", "dead_lettered")
_VERDICT_CODE = {name: code for code, name in enumerate(VERDICTS)}
_COLOUR = {
    "accepted": "#2ca02c",
    "adjusted": "#ff7f0e",
    "dropped": "#d62728",
    "dead_lettered": "#9467bd",
}
_MARKER = {"accepted": "o", "adjusted": "o", "dropped": "X", "dead_lettered": "D"}
#: Watermark line colours: none of them is a verdict colour.
_LINE_COLOURS = (
    "#1f3a93",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#000000",
    "#6b8e23",
)
#: Above this many adjusted events, arrows become a collection of plain segments.
ARROW_LIMIT = 500
#: Above this many events a second panel shows event time − arrival time (symlog).
LAG_PANEL_MIN = 200
#: Up to this many events, each point is labelled with its ``seq``.
LABEL_LIMIT = 40
#: At most this many window bands are drawn (a finer grid is left out and said so).
BAND_LIMIT = 300
#: Points beyond the chart's natural range are pinned to its edge when they are few.
_CLIP_MAX_SHARE = 0.01
_CLIP_MIN_COUNT = 5
_MISSING = np.iinfo(np.int64).min


@dataclass(frozen=True)
class ChartData:
    """The decisions of a run as integer-microsecond arrays, in input order.

    Attributes
    ----------
    x
        Arrival time (or processing time) of each drawn event.
    event_time
        Its event time.
    timestamp
        Its system timestamp; ``_MISSING`` (int64 minimum) when it was not admitted.
    watermark
        Its timeline's watermark just before it; ``_MISSING`` for minus infinity.
    verdict
        Index into :data:`VERDICTS`.
    timeline
        Index into ``timelines``.
    seq
        The record's input position.
    order
        Positions of the events in the order the engine judged them
        (processing time, arrival time, seq).
    timelines
        Timeline keys of the drawn events (partition ids, or substream key values).
    malformed
        Input records not drawn (malformed: they have no times).
    series
        The watermark lines drawn: ``(timeline key, x, watermark)`` for the busiest
        timelines, as step functions (each value holds until the next x).
    job_series
        The merged job watermark (minimum over partitions) as ``(x, watermark)``, for a
        merged job with more than one partition; else ``None``.
    timeline_count
        How many timelines the job had (declared partitions included).
    substreams
        True when the timelines are substream keys (``source.over``).
    """

    x: np.ndarray
    event_time: np.ndarray
    timestamp: np.ndarray
    watermark: np.ndarray
    verdict: np.ndarray
    timeline: np.ndarray
    seq: np.ndarray
    order: np.ndarray
    timelines: list[Any]
    malformed: int
    series: list[tuple[Any, np.ndarray, np.ndarray]]
    job_series: tuple[np.ndarray, np.ndarray] | None
    timeline_count: int
    substreams: bool

    @property
    def size(self) -> int:
        """How many events are drawn."""
        return int(self.x.size)

    def counts(self) -> dict[str, int]:
        """Events per verdict, every verdict listed."""
        found = np.bincount(self.verdict, minlength=len(VERDICTS))
        return {name: int(found[i]) for i, name in enumerate(VERDICTS)}


def _instant(text: str | None, cache: dict[str, int]) -> int:
    if text is None:
        return _MISSING
    value = cache.get(text)
    if value is None:
        value = cache[text] = parse_instant(text)
    return value


def _sort_key(key: Any) -> tuple[int, Any]:
    if isinstance(key, int) and not isinstance(key, bool):
        return (0, key)
    return (1, str(key))


def _busiest(job: Job, records: list[InputRecord], limit: int) -> tuple[list[Any], int]:
    """The ``limit`` timelines with the most events (declared partitions count, with 0),
    in key order; and how many timelines there are."""
    substreams = job.source.over is not None
    counts: Counter[Any] = Counter()
    if not substreams and job.source.partitions is not None:
        counts.update({pid: 0 for pid in range(job.source.partitions)})
    for record in records:
        if not record.malformed:
            counts[record.key if substreams else record.partition] += 1
    ranked = sorted(counts, key=lambda k: (-counts[k], _sort_key(k)))
    return sorted(ranked[:limit], key=_sort_key), len(counts)


class _Tracer(ReferenceEngine):
    """The reference engine, noting chosen timelines' watermarks after every observation
    instant (processing time): idle estimates and timers included, which the decisions
    alone cannot show. It only reads the engine's state."""

    def __init__(self, job: Job, keys: list[Any]) -> None:
        super().__init__(job, explain=True)
        self.traced = keys
        self.traces: dict[Any, list[tuple[int, int]]] = {key: [] for key in keys}
        self.merged = not self.substreams and not self.partitioned
        self.job_trace: list[tuple[int, int]] = []

    def observe(self, now: int, records: list[InputRecord]) -> None:
        """One observation instant of the engine, then a note of the watermarks."""
        super().observe(now, records)
        floor = self._floor() if self.substreams else NEG_INF
        for key in self.traced:
            timeline = self.timelines.get(key)
            if timeline is not None:
                self.traces[key].append((now, max(timeline.watermark, floor)))
        if self.merged:
            self.job_trace.append((now, self.job_watermark))


def _steps(points: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Watermark samples → the points where it changes (the step function is the same)."""
    table = np.array(points, dtype=np.int64).reshape(-1, 2)
    table = table[(table[:, 1] > NEG_INF // 2) & (table[:, 1] < POS_INF // 2)]
    changed = np.r_[True, table[1:, 1] != table[:-1, 1]] if table.size else np.empty(0, bool)
    return table[changed, 0].copy(), table[changed, 1].copy()


def explain_run(
    job: Job,
    records: list[InputRecord],
    *,
    x: str = "arrival",
    until: int | None = None,
    tick: int | None = None,
    flush: bool = True,
    max_timelines: int = 8,
) -> tuple[Result, ChartData]:
    """Run ``job`` through the reference engine with decisions, and collect the chart's data.

    Parameters
    ----------
    job
        The job.
    records
        Its input records, in input order (``records[i].seq == i``).
    x
        ``arrival`` or ``processing``: the time across the chart.
    until, tick, flush
        As for :func:`sparktide.core.engine.simulate`.
    max_timelines
        Trace the watermarks of at most this many timelines, the busiest.

    Returns
    -------
    tuple
        The run's :class:`~sparktide.core.engine.Result` (with decisions) and the
        :class:`ChartData`.

    Raises
    ------
    ConfigError
        If ``x`` is not one of :data:`X_AXES` or ``max_timelines`` is below 1.
    """
    if x not in X_AXES:
        raise ConfigError("--x", f"must be one of {', '.join(X_AXES)}; got {x!r}")
    if max_timelines < 1:
        raise ConfigError("--max-timelines", f"must be at least 1, got {max_timelines}")
    shown, count = _busiest(job, records, max_timelines)
    engine = _Tracer(job, shown)
    result = engine.run(records, until=until, tick=tick, flush=flush)
    # The traces are in processing time: exact when that is the time across. With a
    # processing-time column and arrival time across, the lines come from the decisions.
    traced = x == "processing" or job.source.processing_time is None
    data = _chart_data(job, records, result, x=x)
    series: list[tuple[Any, np.ndarray, np.ndarray]] = []
    for key in shown:
        if traced:
            xs, ys = _steps(engine.traces[key])
        else:
            xs, ys = _decision_steps(data, key, job.ordering.out_of_order)  # type: ignore[arg-type]
        series.append((key, xs, ys))
    job_series = None
    if traced and engine.merged and count > 1:
        job_series = _steps(engine.job_trace)
    return result, ChartData(
        **{**data, "series": series, "job_series": job_series, "timeline_count": count}
    )


def _chart_data(job: Job, records: list[InputRecord], result: Result, *, x: str) -> dict[str, Any]:
    """The drawn events as arrays, from the decisions of ``result``."""
    if len(result.decisions) != len(records):
        raise ValueError("the result must come from a run with explain=True over these records")
    substreams = job.source.over is not None
    cache: dict[str, int] = {}
    keys: dict[Any, int] = {}
    rows: list[tuple[int, int, int, int, int, int, int, int, int]] = []
    malformed = 0
    for decision in result.decisions:
        record = records[decision["seq"]]
        if record.malformed:
            malformed += 1
            continue
        if record.cti:  # not an event: its effect shows in the next events' watermarks
            continue
        key = record.key if substreams else record.partition
        index = keys.setdefault(key, len(keys))
        across = record.arrival_time if x == "arrival" else record.processing_time
        rows.append(
            (
                across,  # type: ignore[arg-type]
                record.event_time,  # type: ignore[arg-type]
                _instant(decision["timestamp"], cache),
                _instant(decision["watermark"], cache),
                _VERDICT_CODE[decision["verdict"]],
                index,
                record.processing_time,  # type: ignore[arg-type]
                record.arrival_time,  # type: ignore[arg-type]
                record.seq,
            )
        )
    table = np.array(rows, dtype=np.int64).reshape(-1, 9)
    return {
        "x": table[:, 0].copy(),
        "event_time": table[:, 1].copy(),
        "timestamp": table[:, 2].copy(),
        "watermark": table[:, 3].copy(),
        "verdict": table[:, 4].copy(),
        "timeline": table[:, 5].copy(),
        "seq": table[:, 8].copy(),
        "order": np.lexsort((table[:, 8], table[:, 7], table[:, 6])),
        "timelines": list(keys),
        "malformed": malformed,
        "substreams": substreams,
    }


def _decision_steps(
    data: dict[str, Any], key: Any, out_of_order: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """A timeline's watermark as its events saw it, from the decisions alone.

    Before each event the line is at the watermark the event saw; the admitted event
    may then raise the ``newest − O`` term, so the line steps up at the event's x.
    Between events (idle estimates) nothing is known: the line holds.
    """
    if key not in data["timelines"]:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    number = data["timelines"].index(key)
    order = data["order"]
    index = order[data["timeline"][order] == number]
    x = np.maximum.accumulate(data["x"][index])
    before = data["watermark"][index]
    after = before.copy()
    if out_of_order is not None:
        newest = np.maximum.accumulate(data["timestamp"][index])  # _MISSING never wins
        raised = np.where(newest != _MISSING, newest - out_of_order, _MISSING)
        after = np.maximum(after, raised)
    after = np.maximum.accumulate(after)  # the watermark never decreases
    xs = np.stack([x, x], axis=1).ravel()
    ys = np.stack([before, after], axis=1).ravel()
    keep = ys != _MISSING
    return xs[keep], ys[keep]


# ---------------------------------------------------------------------------- drawing


def _dates(values: np.ndarray) -> np.ndarray:
    """Integer microseconds → matplotlib date numbers (the one float conversion, at the edge)."""
    from matplotlib import dates as mdates

    return mdates.date2num(values.astype("datetime64[us]"))


def _y_range(data: ChartData, x_lo: int, x_hi: int) -> tuple[int, int]:
    """The natural event-time range: the x range, the system timestamps and watermarks."""
    parts = [np.array([x_lo, x_hi], np.int64)]
    for values in (data.timestamp, data.watermark):
        found = values[values != _MISSING]
        if found.size:
            parts.append(np.array([found.min(), found.max()], np.int64))
    lo = min(int(p.min()) for p in parts)
    hi = max(int(p.max()) for p in parts)
    if data.size:
        inside = (data.event_time >= lo) & (data.event_time <= hi)
        outside = data.size - int(inside.sum())
        if outside > max(_CLIP_MIN_COUNT, int(data.size * _CLIP_MAX_SHARE)):
            lo = min(lo, int(data.event_time.min()))
            hi = max(hi, int(data.event_time.max()))
    return lo, hi


def _pad(lo: int, hi: int) -> tuple[int, int]:
    span = hi - lo
    pad = max(span // 20, SECOND)
    return lo - pad, hi + pad


def _window_bands(job: Job, result: Result, lo: int, hi: int) -> tuple[list[tuple[int, int]], str]:
    """Bands (start, end) to shade, and a note when there were too many to draw."""
    window = job.window
    if window is None:
        return [], ""
    period = window.period
    if period is not None:
        size: int = window.size  # type: ignore[assignment]
        offset: int = window.offset  # type: ignore[assignment]
        first = (lo - offset - size) // period + 1
        last = (hi - offset) // period
        count = last - first + 1
        if count > BAND_LIMIT * (2 if window.type == "tumbling" else 1):
            return [], f"window grid too fine to draw ({count} windows)"
        bands = []
        if size == period:  # tumbling: every other window, so neighbours stay apart
            picked = [k for k in range(first, last + 1) if k % 2 == 0]
        elif size < period:  # hopping with gaps: every window
            picked = list(range(first, last + 1))
        else:  # overlapping hops: a subset of windows that do not overlap
            every = -(-size // period)
            picked = [k for k in range(first, last + 1) if k % every == 0]
        for k in picked:
            start = offset + k * period
            bands.append((start, start + size))
        return bands, ""
    cache: dict[str, int] = {}
    seen: dict[tuple[int, int], None] = {}
    for record in result.windows:
        start = _instant(record.get("window_start"), cache)
        end = _instant(record.get("window_end"), cache)
        if start != _MISSING and end != _MISSING and end >= lo and start <= hi:
            seen[(start, end)] = None
    if len(seen) > BAND_LIMIT:
        return [], f"{len(seen)} windows: too many to draw"
    return list(seen), ""


def _window_text(job: Job) -> str:
    window = job.window
    if window is None:
        return "no window: ordered release"
    bounds = "[start, end)" if window.boundary == "start" else "(start, end]"
    if window.type == "tumbling":
        text = f"tumbling {format_duration(window.size)}"  # type: ignore[arg-type]
    elif window.type == "hopping":
        text = f"hopping {format_duration(window.size)} every {format_duration(window.hop)}"  # type: ignore[arg-type]
    elif window.type == "sliding":
        text = f"sliding {format_duration(window.size)}"  # type: ignore[arg-type]
    elif window.type == "session":
        text = f"session gap {format_duration(window.gap)}"  # type: ignore[arg-type]
        if window.max_duration is not None:
            text += f" max {format_duration(window.max_duration)}"  # type: ignore[arg-type]
    else:
        text = "snapshot"
    if window.offset:
        text += f" offset {format_duration(window.offset)}"  # type: ignore[arg-type]
    if window.allowed_lateness:
        text += f", allowed lateness {format_duration(window.allowed_lateness)}"  # type: ignore[arg-type]
    return f"window: {text} {bounds}"


def policy_text(job: Job) -> str:
    """The ordering policy in one line: ``L=20s O=10s E=1m action=adjust``."""
    ordering = job.ordering
    text = (
        f"L={format_duration(ordering.late_arrival)} "  # type: ignore[arg-type]
        f"O={format_duration(ordering.out_of_order)} "  # type: ignore[arg-type]
        f"E={format_duration(ordering.early_arrival)} "  # type: ignore[arg-type]
        f"action={ordering.action}"
    )
    if ordering.on_out_of_order is not None and ordering.on_out_of_order != ordering.action:
        text += f" on_out_of_order={ordering.on_out_of_order}"
    if ordering.partitioned:
        text += " partitioned"
    if not job.event_time_mode:
        text += " (arrival-time mode)"
    return text


def _style(n: int) -> dict[str, Any]:
    """Marker size and transparency that keep 20 and 20,000 points readable."""
    if n <= 200:
        return {"s": 46.0, "alpha": 0.95, "lw": 1.2, "rasterized": False}
    if n <= 2_000:
        return {"s": 16.0, "alpha": 0.75, "lw": 0.8, "rasterized": False}
    return {"s": 5.0, "alpha": 0.45, "lw": 0.5, "rasterized": True}


def draw_chart(
    job: Job,
    data: ChartData,
    result: Result,
    *,
    title: str | None = None,
    x: str = "arrival",
) -> Figure:
    """Draw the chart of a run and return the matplotlib figure (not shown, not saved).

    Parameters
    ----------
    job
        The job that was run (its policy and window go into the title and the bands).
    data
        From :func:`explain_run`.
    result
        The run's result (emitted windows, for session, sliding and snapshot bands).
    title
        First line of the title (e.g. the job file's name).
    x
        ``arrival`` or ``processing``: the time across (as given to :func:`explain_run`).
    """
    from matplotlib import dates as mdates
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    n = data.size
    figure = Figure(figsize=(13, 7.2), dpi=110, layout="constrained")
    lag: Axes | None = None
    if n > LAG_PANEL_MIN:
        figure.set_size_inches(13, 10)
        ax, lag = figure.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    else:
        ax = figure.add_subplot()
    across = [data.x] + [xs for _, xs, _ in data.series if xs.size]
    if n:
        x_lo, x_hi = int(data.x.min()), max(int(a.max()) for a in across)
    else:
        x_lo = x_hi = 0
    x_lo, x_hi = _pad(x_lo, x_hi)
    y_lo, y_hi = _pad(*_y_range(data, x_lo, x_hi))
    style = _style(n)
    handles: list[Any] = []

    # Window bands, behind everything.
    bands, band_note = _window_bands(job, result, y_lo, y_hi)
    if bands:
        for start, end in bands:
            low, high = _dates(np.array([start, end], np.int64))
            if start == end:
                ax.axhline(low, color="#4a6fa5", alpha=0.25, lw=0.8, zorder=0)
            else:
                ax.axhspan(low, high, color="#4a6fa5", alpha=0.08, lw=0, zorder=0)
        handles.append(Patch(color="#4a6fa5", alpha=0.2, label=_window_text(job)[8:]))

    # Guides: event time = arrival time, and the late / early limits of the policy.
    if n and (x == "arrival" or job.source.processing_time is None):
        guide_x = _dates(np.array([x_lo, x_hi], np.int64))
        ordering = job.ordering
        guides = [(0, "event time = arrival time", "-")]
        if ordering.late_arrival is not None and job.event_time_mode:
            guides.append((-ordering.late_arrival, "arrival − L: below is late", "--"))  # type: ignore[operator]
        if ordering.early_arrival is not None and job.event_time_mode:
            guides.append((ordering.early_arrival, "arrival + E: above is early", ":"))  # type: ignore[arg-type]
        for shift, label, dash in guides:
            ys = _dates(np.array([x_lo + shift, x_hi + shift], np.int64))
            (line,) = ax.plot(guide_x, ys, color="#999999", lw=0.9, ls=dash, zorder=1, label=label)
            handles.append(line)

    # Watermark step lines, one per timeline (the busiest ones), and the job's.
    what = "substream" if data.substreams else "partition"
    width = 1.6 if n <= 2_000 else 1.1
    for number, (key, xs, ys) in enumerate(data.series):
        if xs.size == 0:
            continue
        single = len(data.series) == 1
        colour = "#000000" if single else _LINE_COLOURS[number % len(_LINE_COLOURS)]
        label = "watermark" if data.timeline_count == 1 else f"watermark, {what} {key}"
        handles.append(_step_line(ax, xs, ys, x_hi, colour=colour, lw=width, label=label))
    if data.job_series is not None and data.job_series[0].size:
        handles.append(
            _step_line(
                ax,
                *data.job_series,
                x_hi,
                colour="#000000",
                lw=width + 2.5,
                alpha=0.25,
                label="job watermark (minimum over partitions)",
            )
        )
    timeline_note = ""
    if len(data.series) < data.timeline_count:
        timeline_note = (
            f"watermarks of the {len(data.series)} busiest of {data.timeline_count} {what}s drawn"
        )

    # Events: clip the few far outliers (typically early events) to the chart's edge.
    xd = _dates(data.x) if n else np.empty(0)
    clipped_low = data.event_time < y_lo
    clipped_high = data.event_time > y_hi
    inset = (y_hi - y_lo) // 60  # pinned markers sit just inside the edge
    event_y = np.clip(data.event_time, y_lo + inset, y_hi - inset)
    yd = _dates(event_y) if n else np.empty(0)
    new_y = _dates(np.clip(data.timestamp, y_lo + inset, y_hi - inset)) if n else np.empty(0)
    _draw_events(ax, data, xd, yd, new_y, clipped_low, clipped_high, style)
    counts = data.counts()
    for name in VERDICTS:
        if not counts[name]:
            continue
        label = f"{name.replace('_', '-')} ({counts[name]})"
        if name == "adjusted":
            label += ": ○ event time → ● system timestamp"
        handles.append(
            Line2D(
                [],
                [],
                ls="none",
                marker=_MARKER[name],
                markersize=7,
                markerfacecolor="none" if name == "adjusted" else _COLOUR[name],
                markeredgecolor=_COLOUR[name],
                label=label,
            )
        )
    if 0 < n <= LABEL_LIMIT:  # few events: name each by its seq, as the decisions do
        for i in np.flatnonzero(~clipped_low & ~clipped_high):
            ax.annotate(
                str(int(data.seq[i])),
                xy=(xd[i], yd[i]),
                xytext=(-7, 0),
                textcoords="offset points",
                ha="right",
                va="center",
                fontsize=8,
                color="#444444",
            )
    off_chart = int(clipped_low.sum() + clipped_high.sum())
    if off_chart:
        handles.append(
            Line2D(
                [],
                [],
                ls="none",
                marker="^",
                markersize=7,
                color="#555555",
                label=f"{off_chart} off the chart, pinned to its edge (▲ above, ▼ below)",
            )
        )
        if off_chart <= _CLIP_MIN_COUNT:
            stacked = {True: 0, False: 0}  # one line of text under (over) the previous one
            for i in np.flatnonzero(clipped_low | clipped_high):
                high = bool(clipped_high[i])
                shift = 11 * stacked[high] * (-1 if high else 1)
                stacked[high] += 1
                named = f"{int(data.seq[i])}: " if n <= LABEL_LIMIT else ""
                ax.annotate(
                    f"{named}event time {format_instant(int(data.event_time[i]))}",
                    xy=(xd[i], yd[i]),
                    xytext=(-8, shift - 3 if high else shift + 3),
                    textcoords="offset points",
                    ha="right",
                    va="top" if clipped_high[i] else "bottom",
                    fontsize=8,
                    color=_COLOUR[VERDICTS[data.verdict[i]]],
                )

    if lag is not None:
        _draw_lag_panel(lag, job, data, style, x)

    if not n:
        ax.text(
            0.5,
            0.5,
            "no well-formed events to draw",
            transform=ax.transAxes,
            ha="center",
            va="center",
            color="#555555",
        )

    # Axes, dates, title, legend.
    ax.set_xlim(*_dates(np.array([x_lo, x_hi], np.int64)))
    ax.set_ylim(*_dates(np.array([y_lo, y_hi], np.int64)))
    for axis, offset in ((ax.xaxis, True), (ax.yaxis, False)):
        locator = mdates.AutoDateLocator(minticks=4, maxticks=10)
        axis.set_major_locator(locator)
        axis.set_major_formatter(_date_formatter(locator, offset))
    (lag or ax).set_xlabel(f"{x} time (UTC)")
    if lag is not None:
        ax.tick_params(labelbottom=True)
    ax.set_ylabel("event time / system timestamp (UTC)")
    ax.grid(True, color="#dddddd", lw=0.6, zorder=0)
    head = title or "sparktide explain"
    parts = [f"{n} event{'s' if n != 1 else ''}"]
    count = data.timeline_count
    parts.append(f"{count} {what}{'s' if count != 1 else ''}")
    if data.malformed:
        parts.append(f"{data.malformed} malformed not drawn")
    lines = [
        f"{head}: {', '.join(parts)}" + (" (labels: seq)" if 0 < n <= LABEL_LIMIT else ""),
        f"{policy_text(job)} · {_window_text(job)}",
    ]
    notes = [note for note in (timeline_note, band_note) if note]
    if notes:
        lines.append("; ".join(notes))
    ax.set_title("\n".join(lines), loc="left", fontsize=11)
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8.5,
        frameon=False,
        alignment="left",
    )
    return figure


def _draw_events(
    ax: Axes,
    data: ChartData,
    xd: np.ndarray,
    yd: np.ndarray,
    new_y: np.ndarray,
    clipped_low: np.ndarray,
    clipped_high: np.ndarray,
    style: dict[str, Any],
) -> None:
    """The events as points by verdict, adjusted ones with an arrow (or a plain segment
    when there are many) from their event time ``yd`` to their system timestamp ``new_y``.
    Points flagged ``clipped_low`` / ``clipped_high`` are drawn as ▼ / ▲."""
    from matplotlib.collections import LineCollection

    n = data.size
    adjusted = np.flatnonzero(data.verdict == _VERDICT_CODE["adjusted"])
    if adjusted.size:
        if adjusted.size <= ARROW_LIMIT:
            for i in adjusted:
                ax.annotate(
                    "",
                    xy=(xd[i], new_y[i]),
                    xytext=(xd[i], yd[i]),
                    arrowprops={
                        "arrowstyle": "-|>",
                        "color": _COLOUR["adjusted"],
                        "lw": 1.0 if n <= 200 else 0.6,
                        "alpha": 0.9,
                        "shrinkA": 3,
                        "shrinkB": 2,
                        "mutation_scale": 10 if n <= 200 else 6,
                    },
                    zorder=4,
                )
        else:
            starts = np.stack([xd[adjusted], yd[adjusted]], 1)
            ends = np.stack([xd[adjusted], new_y[adjusted]], 1)
            ax.add_collection(
                LineCollection(
                    np.stack([starts, ends], 1),
                    colors=_COLOUR["adjusted"],
                    linewidths=0.4,
                    alpha=0.35,
                    zorder=4,
                    rasterized=True,
                )
            )
        ax.scatter(
            xd[adjusted],
            new_y[adjusted],
            s=style["s"] * 0.6,
            marker="o",
            color=_COLOUR["adjusted"],
            linewidths=0,
            alpha=style["alpha"],
            zorder=5,
            rasterized=style["rasterized"],
        )
    for name in VERDICTS:
        picked = data.verdict == _VERDICT_CODE[name]
        for mask, marker in (
            (picked & ~clipped_low & ~clipped_high, _MARKER[name]),
            (picked & clipped_high, "^"),
            (picked & clipped_low, "v"),
        ):
            if not mask.any():
                continue
            hollow = name == "adjusted"
            rare = name in ("dropped", "dead_lettered")  # few and important: never tiny
            ax.scatter(
                xd[mask],
                yd[mask],
                s=max(style["s"], 18.0) if rare else style["s"],
                marker=marker,
                facecolors="none" if hollow else _COLOUR[name],
                edgecolors=_COLOUR[name],
                linewidths=style["lw"] if hollow or marker != "o" else 0,
                alpha=max(style["alpha"], 0.8) if rare else style["alpha"],
                zorder=7 if rare else 6,
                rasterized=style["rasterized"],
            )


#: Ticks of the lag panel, in seconds: 1 s, 10 s, 1 min, 10 min, 1 h, 1 d either side.
_LAG_TICKS = [sign * value for value in (86_400, 3_600, 600, 60, 10, 1) for sign in (-1, 1)] + [0]


def _sawtooth(xs: np.ndarray, ys: np.ndarray, x_end: int) -> tuple[np.ndarray, np.ndarray]:
    """A step function ``ys`` (each value holding until the next x) minus x itself, as
    line vertices: it falls at slope −1 between steps."""
    nxt = np.append(xs[1:], max(int(xs[-1]), x_end))
    return np.stack([xs, nxt], 1).ravel(), np.stack([ys - xs, ys - nxt], 1).ravel()


def _draw_lag_panel(ax: Axes, job: Job, data: ChartData, style: dict[str, Any], x: str) -> None:
    """The same events and watermarks, as their distance from the time across (seconds,
    symmetric-log): what a 20,000-event chart squeezes into one diagonal. The watermark
    lines stop at their last observation instant."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    def seconds(values: np.ndarray) -> np.ndarray:
        return values / SECOND  # durations become floats only here, to be drawn

    xd = _dates(data.x)
    lag_event = seconds(data.event_time - data.x)
    stamp = np.where(data.timestamp != _MISSING, data.timestamp, data.event_time)
    none = np.zeros(data.size, dtype=bool)
    _draw_events(ax, data, xd, lag_event, seconds(stamp - data.x), none, none, style)
    ordering = job.ordering
    ax.axhline(0, color="#999999", lw=0.9, zorder=1)
    if job.event_time_mode and ordering.late_arrival is not None:
        ax.axhline(-seconds(ordering.late_arrival), color="#999999", lw=0.9, ls="--", zorder=1)  # type: ignore[arg-type]
    if job.event_time_mode and ordering.early_arrival is not None:
        ax.axhline(seconds(ordering.early_arrival), color="#999999", lw=0.9, ls=":", zorder=1)  # type: ignore[arg-type]
    width = 1.1
    big = style["rasterized"]
    for number, (_, xs, ys) in enumerate(data.series):
        if xs.size:
            single = len(data.series) == 1
            colour = "#000000" if single else _LINE_COLOURS[number % len(_LINE_COLOURS)]
            lx, ly = _sawtooth(xs, ys, int(xs[-1]))
            ax.plot(_dates(lx), seconds(ly), color=colour, lw=width, zorder=3, rasterized=big)
    if data.job_series is not None and data.job_series[0].size:
        lx, ly = _sawtooth(*data.job_series, int(data.job_series[0][-1]))
        ax.plot(
            _dates(lx),
            seconds(ly),
            color="#000000",
            lw=width + 2.5,
            alpha=0.25,
            zorder=3,
            rasterized=big,
        )
    ax.set_yscale("symlog", linthresh=1.0)
    ax.yaxis.set_major_locator(FixedLocator(_LAG_TICKS))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(
        FuncFormatter(lambda value, _: format_duration(round(value * SECOND)))
    )
    ax.set_ylabel(f"event time − {x} time\n(symlog; below 0: behind)")
    ax.grid(True, color="#dddddd", lw=0.6, zorder=0)


def _step_line(
    ax: Axes,
    xs: np.ndarray,
    ys: np.ndarray,
    x_end: int,
    *,
    colour: str,
    lw: float,
    label: str,
    alpha: float = 1.0,
) -> Any:
    """A watermark as a step function: each value holds until the next x, the last one
    until ``x_end``."""
    if x_end > xs[-1]:
        xs = np.append(xs, x_end)
        ys = np.append(ys, ys[-1])
    (line,) = ax.plot(
        _dates(xs),
        _dates(ys),
        drawstyle="steps-post",
        color=colour,
        lw=lw,
        alpha=alpha,
        zorder=3,
        label=label,
        rasterized=xs.size > 2_000,
    )
    return line


def _date_formatter(locator: Any, show_offset: bool) -> Any:
    """Concise dates, but seconds as ``hh:mm:ss`` rather than a bare ``50``."""
    from matplotlib import dates as mdates

    formats = ["%Y", "%b", "%d", "%H:%M", "%H:%M", "%H:%M:%S.%f"]  # zeros are trimmed
    zero_formats = ["", "%Y", "%b", "%b-%d", "%H:%M", "%H:%M:%S.%f"]
    offset_formats = ["", "%Y", "%Y-%m", "%Y-%m-%d", "%Y-%m-%d", "%Y-%m-%d"]
    return mdates.ConciseDateFormatter(
        locator,
        formats=formats,
        zero_formats=zero_formats,
        offset_formats=offset_formats,
        show_offset=show_offset,
    )


def _html(figure: Figure, data: ChartData, title: str, job: Job) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", dpi=110)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML declaration and doctype
    counts = data.counts()
    rows = "".join(
        f"<tr><td>{name.replace('_', '-')}</td><td>{counts[name]}</td></tr>" for name in VERDICTS
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<title>{html.escape(title)}</title>\n"
        "<style>body{font-family:sans-serif;margin:1.5em}"
        "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left}"
        "svg{max-width:100%;height:auto}</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
        f"<p>{html.escape(policy_text(job))} · {html.escape(_window_text(job))}</p>\n"
        f"<figure id='chart' data-points='{data.size}' data-timelines='{data.timeline_count}'>\n"
        f"{svg}\n<figcaption>{data.size} events drawn"
        + (f"; {data.malformed} malformed records not drawn" if data.malformed else "")
        + "</figcaption>\n</figure>\n"
        f"<table><tr><th>verdict</th><th>events</th></tr>{rows}</table>\n"
        "<p>Made by <code>sparktide explain --plot</code>.</p>\n</body>\n</html>\n"
    )


def check_chart_path(path: str | Path) -> Path:
    """Check, before any work, that a chart can be written to ``path``.

    Raises
    ------
    ConfigError
        If the suffix is not one of :data:`CHART_SUFFIXES` or the folder does not exist.
    """
    target = Path(path)
    if target.suffix.lower() not in CHART_SUFFIXES:
        raise ConfigError(
            "--plot",
            f"cannot write {str(target)!r}: use a file name ending in " + ", ".join(CHART_SUFFIXES),
        )
    if not target.parent.resolve().is_dir():
        raise ConfigError("--plot", f"no such directory: {str(target.parent)!r}")
    return target


def save_chart(
    path: str | Path,
    job: Job,
    data: ChartData,
    result: Result,
    *,
    title: str | None = None,
    x: str = "arrival",
) -> Path:
    """Draw the chart and write it to ``path``; the suffix picks the format.

    ``.png``, ``.svg`` and ``.pdf`` are written by matplotlib; ``.html`` is a
    self-contained page with the chart as an inline SVG (no scripts, no other file).

    Raises
    ------
    ConfigError
        If the suffix is not one of :data:`CHART_SUFFIXES`, or the file cannot be written.
    """
    target = check_chart_path(path)
    suffix = target.suffix.lower()
    figure = draw_chart(job, data, result, title=title, x=x)
    try:
        if suffix == ".html":
            text = _html(figure, data, title or "sparktide explain", job)
            target.write_text(text, encoding="utf-8")
        else:
            figure.savefig(target, format=suffix[1:], dpi=110)
    except OSError as exc:
        raise ConfigError("--plot", f"cannot write {str(target)!r}: {exc.strerror}") from None
    return target
