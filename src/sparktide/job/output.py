"""``[output]``: where the results, dead letters, metrics and checkpoints go."""

from __future__ import annotations

from dataclasses import dataclass

from sparktide.job.values import check_choice, check_path

__all__ = ["OUTPUT_FORMATS", "Output"]

OUTPUT_FORMATS = ("jsonl", "parquet")


@dataclass(frozen=True)
class Output:
    """Where results go (``run``); ``simulate`` prints instead.

    Parameters
    ----------
    path
        Directory for window (or ordered event) records.
    format
        ``jsonl`` or ``parquet``.
    dead_letter
        Directory for dead letters.
    metrics
        Directory for metrics.
    checkpoint
        Spark checkpoint directory.
    """

    path: str | None = None
    format: str = "jsonl"
    dead_letter: str | None = None
    metrics: str | None = None
    checkpoint: str | None = None

    def __post_init__(self) -> None:
        for name in ("path", "dead_letter", "metrics", "checkpoint"):
            check_path(getattr(self, name), f"output.{name}", optional=True)
        check_choice(self.format, OUTPUT_FORMATS, "output.format")
