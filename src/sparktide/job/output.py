"""``[output]``: where the results, dead letters, metrics and checkpoints go."""

from __future__ import annotations

from dataclasses import dataclass

from sparktide.errors import ConfigError
from sparktide.job.values import check_choice, check_path

__all__ = ["OUTPUT_FORMATS", "Output"]

OUTPUT_FORMATS = ("jsonl", "parquet", "delta")


@dataclass(frozen=True)
class Output:
    """Where results go (``run``); ``simulate`` prints instead.

    Parameters
    ----------
    path
        Directory for window (or ordered event) records.
    format
        ``jsonl``, ``parquet`` or ``delta`` (docs/outputs.md).
    dead_letter
        Directory for dead letters.
    metrics
        Directory for metrics.
    checkpoint
        Spark checkpoint directory.
    flush_on_stop
        Whether a run that stops (Ctrl-C, SIGTERM, ``query.stop()``, the end of a
        ``--once`` run) closes every window and releases every held event, as
        StreamInsight's ``advanceToInfinityOnShutdown`` does (semantics §6.11); without
        it they stay in the checkpoint for the next run.
    """

    path: str | None = None
    format: str = "jsonl"
    dead_letter: str | None = None
    metrics: str | None = None
    checkpoint: str | None = None
    flush_on_stop: bool = False

    def __post_init__(self) -> None:
        for name in ("path", "dead_letter", "metrics", "checkpoint"):
            check_path(getattr(self, name), f"output.{name}", optional=True)
        check_choice(self.format, OUTPUT_FORMATS, "output.format")
        if not isinstance(self.flush_on_stop, bool):
            raise ConfigError(
                "output.flush_on_stop", f"expected true or false, got {self.flush_on_stop!r}"
            )
