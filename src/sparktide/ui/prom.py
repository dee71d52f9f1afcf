"""``/metrics``: the newest metrics record in Prometheus' text format (``prometheus_client``).

A custom collector reads :attr:`LiveState.latest` on every scrape: the counters are the
record's cumulative counters (since the job's checkpoint began), the gauges its
watermarks, clocks and state sizes. Instants and durations are exposed in seconds, as
Prometheus names them (``_seconds``): the record's microseconds divided by 10⁶ at the
edge. A watermark still at −∞ (the record's null) is left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from sparktide.time import parse_instant
from sparktide.ui.state import LiveState

__all__ = ["COUNTERS", "STATE_SIZES", "MetricsCollector", "registry_of"]

#: The record's plain counters exposed, with their help text.
COUNTERS = {
    "input": "input records read, malformed ones included",
    "admitted": "events the ordering policy let through that found a window or were released",
    "late": "input events later than late_arrival",
    "early": "input events earlier than early_arrival",
    "out_of_order": "events more than out_of_order behind their timeline's newest",
    "adjusted": "admitted events whose timestamp the policy moved",
}
#: The record's counters by reason.
BY_REASON = {
    "dropped": "events dropped, by reason",
    "dead_lettered": "records sent to the dead-letter output, by reason",
}
#: Job-level counters of results.
RESULTS = {
    "windows_emitted": "window results written",
    "released": "events released in timestamp order (jobs without a window)",
}
#: The state gauges of a record (``kind`` label of ``sparktide_state_size``).
STATE_SIZES = ("open_windows", "held", "window_rows", "substream_keys", "open_edges")


def _seconds(text: str | None) -> float | None:
    """An ISO instant of a record as Unix seconds."""
    return None if text is None else parse_instant(text) / 1_000_000


def _counters(
    prefix: str, labels: list[str], rows: list[tuple[list[str], dict[str, Any]]]
) -> Iterator[Metric]:
    """The counter families of ``rows`` (label values, record or partition entry)."""
    for name, text in COUNTERS.items():
        family = CounterMetricFamily(f"{prefix}{name}", text, labels=labels)
        for values, entry in rows:
            family.add_metric(values, entry.get(name, 0))
        yield family
    for name, text in BY_REASON.items():
        family = CounterMetricFamily(f"{prefix}{name}", text, labels=[*labels, "reason"])
        for values, entry in rows:
            for reason, count in sorted((entry.get(name) or {}).items()):
                family.add_metric([*values, reason], count)
        yield family


def _gauges(job: str, record: dict[str, Any]) -> Iterator[Metric]:
    """The job's gauges: batch, times, watermark delay, state sizes."""
    batch = GaugeMetricFamily("sparktide_batch", "the newest micro-batch id", labels=["job"])
    if record.get("batch") is not None:
        batch.add_metric([job], record["batch"])
    yield batch
    for name, text in (
        ("processing_time", "the newest record's processing time"),
        ("watermark", "the job watermark"),
        ("output_watermark", "the watermark windows pass downstream"),
    ):
        family = GaugeMetricFamily(f"sparktide_{name}_seconds", text, labels=["job"])
        value = _seconds(record.get(name))
        if value is not None:
            family.add_metric([job], value)
        yield family
    delay = GaugeMetricFamily(
        "sparktide_watermark_delay_seconds", "processing time - watermark", labels=["job"]
    )
    if record.get("watermark_delay_us") is not None:
        delay.add_metric([job], record["watermark_delay_us"] / 1_000_000)
    yield delay
    windows = GaugeMetricFamily("sparktide_open_windows", "windows open", labels=["job"])
    if record.get("open_windows") is not None:
        windows.add_metric([job], record["open_windows"])
    yield windows
    sizes = GaugeMetricFamily(
        "sparktide_state_size", "the state's size after the batch, by kind", labels=["job", "kind"]
    )
    for kind in STATE_SIZES:
        if record.get(kind) is not None:
            sizes.add_metric([job, kind], record[kind])
    yield sizes


def _partition_gauges(job: str, record: dict[str, Any]) -> Iterator[Metric]:
    """Each partition's watermark and arrival clock."""
    labels = ["job", "partition"]
    for name, field, text in (
        ("watermark", "watermark", "the partition's watermark"),
        ("arrival_clock", "arrival_clock", "the partition's arrival clock"),
    ):
        family = GaugeMetricFamily(f"sparktide_partition_{name}_seconds", text, labels=labels)
        for entry in record.get("partitions", []):
            value = _seconds(entry.get(field))
            if value is not None:
                family.add_metric([job, str(entry["partition"])], value)
        yield family


class MetricsCollector(Collector):
    """The newest record of a :class:`LiveState` as Prometheus metrics, labelled by
    ``job`` (and ``partition``)."""

    def __init__(self, state: LiveState) -> None:
        self.state = state

    def describe(self) -> list[Metric]:
        """Nothing to describe ahead (the families depend on the records)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The families of the newest record (none before the first)."""
        record, job = self.state.latest, self.state.job
        if record is None:
            return
        yield from _counters("sparktide_", ["job"], [([job], record)])
        for name, text in RESULTS.items():
            family = CounterMetricFamily(f"sparktide_{name}", text, labels=["job"])
            family.add_metric([job], record.get(name, 0))
            yield family
        parts = [([job, str(p["partition"])], p) for p in record.get("partitions", [])]
        yield from _counters("sparktide_partition_", ["job", "partition"], parts)
        yield from _gauges(job, record)
        yield from _partition_gauges(job, record)


def registry_of(state: LiveState) -> CollectorRegistry:
    """A registry of its own holding the collector of ``state`` (nothing else: not the
    process's default registry)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MetricsCollector(state))
    return registry
