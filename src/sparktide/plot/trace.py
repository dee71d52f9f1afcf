"""Running a job for a chart: the decisions, and the watermark lines of its busiest
timelines, traced from the engine after every observation instant."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from sparktide.core.engine import ReferenceEngine, Result
from sparktide.core.instants import NEG_INF, POS_INF
from sparktide.core.records import InputRecord
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.plot.data import MISSING, ChartData, chart_data

__all__ = ["X_AXES", "explain_run"]

#: What the horizontal axis can show.
X_AXES = ("arrival", "processing")


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
    across = np.maximum.accumulate(data["x"][index])
    before = data["watermark"][index]
    after = before.copy()
    if out_of_order is not None:
        newest = np.maximum.accumulate(data["timestamp"][index])  # MISSING never wins
        raised = np.where(newest != MISSING, newest - out_of_order, MISSING)
        after = np.maximum(after, raised)
    after = np.maximum.accumulate(after)  # the watermark never decreases
    xs = np.stack([across, across], axis=1).ravel()
    ys = np.stack([before, after], axis=1).ravel()
    keep = ys != MISSING
    return xs[keep], ys[keep]


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
    data = chart_data(job, records, result, time_across=x)
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
