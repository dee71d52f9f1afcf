"""The advice: measurements and candidates assembled, the recommendation, its records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sparktide.advise.candidates import (
    LATE_ARRIVAL_GRID,
    OUT_OF_ORDER_GRID,
    Candidate,
    price_candidates,
    recommend,
)
from sparktide.advise.measure import Distribution, measure
from sparktide.advise.shares import percent_text
from sparktide.core.records import InputRecord
from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.time import format_duration, format_instant

__all__ = ["Advice", "advise"]


@dataclass(frozen=True)
class Advice:
    """Everything ``sparktide advise`` reports.

    Attributes
    ----------
    job
        The job advised on.
    sample
        Facts about the sample: records, malformed records in the input, the arrival
        span, partitions and keys.
    lateness, disorder
        Distributions: overall first, then per partition (and per key for disorder).
    candidates
        Every candidate setting, in grid order.
    target
        The largest affected share allowed.
    recommended
        The recommended candidate, or ``None`` when none meets the target.
    """

    job: Job
    sample: dict[str, Any]
    lateness: list[Distribution]
    disorder: list[Distribution]
    candidates: list[Candidate]
    target: Fraction
    recommended: Candidate | None

    @property
    def closest(self) -> Candidate | None:
        """When nothing meets the target: the candidate with the smallest affected share."""
        if not self.candidates:
            return None
        return min(self.candidates, key=lambda c: (c.share, c.rank()))

    def snippet(self) -> str | None:
        """The recommended ``[ordering]`` table as TOML to paste, or ``None``."""
        chosen = self.recommended
        if chosen is None:
            return None
        ordering = self.job.ordering
        lines = [
            "[ordering]",
            f'early_arrival = "{format_duration(ordering.early_arrival)}"',  # type: ignore[arg-type]
            f'late_arrival = "{format_duration(chosen.late_arrival)}"',
            f'out_of_order = "{format_duration(chosen.out_of_order)}"',
            f'action = "{ordering.action}"',
        ]
        if ordering.on_out_of_order is not None:
            lines.append(f'on_out_of_order = "{ordering.on_out_of_order}"')
        if ordering.partitioned:
            lines.append("partitioned = true")
        return "\n".join(lines) + "\n"

    def recommendation(self) -> dict[str, Any]:
        """The ``recommendation`` record."""
        chosen = self.recommended
        out: dict[str, Any] = {
            "type": "recommendation",
            "target_share": float(self.target),
            "target": percent_text(self.target),
            "found": chosen is not None,
        }
        if chosen is not None:
            out["late_arrival"] = format_duration(chosen.late_arrival)
            out["out_of_order"] = format_duration(chosen.out_of_order)
            out["affected_share"] = float(chosen.share)
            out["hold_p99_us"] = chosen.hold.get("p99")
            out["toml"] = self.snippet()
        elif self.closest is not None:
            closest = self.closest
            out["closest"] = {
                "late_arrival": format_duration(closest.late_arrival),
                "out_of_order": format_duration(closest.out_of_order),
                "affected_share": float(closest.share),
            }
        return out

    def records(self) -> list[dict[str, Any]]:
        """Every record, for ``--format jsonl``: sample, lateness, disorder, candidates,
        recommendation."""
        out: list[dict[str, Any]] = [{"type": "sample", **self.sample}]
        out += [d.as_dict("lateness") for d in self.lateness]
        out += [d.as_dict("disorder") for d in self.disorder]
        out += [c.as_dict() for c in self.candidates]
        out.append(self.recommendation())
        return out

    def as_dict(self) -> dict[str, Any]:
        """One JSON object, for ``--format json``."""
        return {
            "sample": self.sample,
            "lateness": [d.as_dict("lateness") for d in self.lateness],
            "disorder": [d.as_dict("disorder") for d in self.disorder],
            "candidates": [c.as_dict() for c in self.candidates],
            "recommendation": self.recommendation(),
        }


def _well_formed(job: Job, records: list[InputRecord]) -> list[InputRecord]:
    """The records to advise on.

    Raises
    ------
    ConfigError
        If the job runs in arrival-time mode, or no record is well-formed.
    """
    if not job.event_time_mode:
        raise ConfigError(
            "source.timestamp_by",
            "advise needs event times; the job runs in arrival-time mode "
            "(without timestamp_by nothing is ever late or out of order)",
        )
    good = [r for r in records if not r.malformed]
    if not good:
        raise ConfigError("source.path", "the input has no well-formed record to advise on")
    return good


def advise(
    job: Job,
    records: list[InputRecord],
    *,
    target: Fraction = Fraction(1, 1000),
    top_keys: int = 10,
    malformed: int = 0,
    late_grid: tuple[int, ...] = LATE_ARRIVAL_GRID,
    out_of_order_grid: tuple[int, ...] = OUT_OF_ORDER_GRID,
    progress: Callable[[int, int], None] | None = None,
) -> Advice:
    """Measure ``records`` and price every candidate ordering setting on them.

    Parameters
    ----------
    job
        The job (its ``[ordering]`` gives the current values and the other settings).
    records
        Well-formed input records (see :func:`sample_records`).
    target
        Largest affected share allowed for the recommendation (a fraction: 0.001 = 0.1 %).
    top_keys
        With substreams, report disorder for this many of the busiest keys.
    malformed
        Malformed records in the input (reported only).
    late_grid, out_of_order_grid
        Candidate values; the job's own values are added.
    progress
        Called with (candidates done, candidates in all) after each engine run.

    Raises
    ------
    ConfigError
        If the job runs in arrival-time mode (no ``timestamp_by``: nothing to measure),
        or the sample holds no well-formed record.
    """
    good = _well_formed(job, records)
    found = measure(job, good, top_keys)
    candidates = price_candidates(job, good, late_grid, out_of_order_grid, progress)
    sample = {
        "records": len(good),
        "malformed_in_input": malformed,
        "first_arrival": format_instant(found.first_arrival),
        "last_arrival": format_instant(found.last_arrival),
        "partitions": found.partitions,
        "keys": found.keys,
    }
    return Advice(
        job,
        sample,
        found.lateness,
        found.disorder,
        candidates,
        target,
        recommend(candidates, target),
    )
