"""The output start time of a Spark run (semantics §12.4): settled when the run starts,
kept in the checkpoint, so that a restarted run cuts and skips exactly as the first did.

What the option means with the checkpoint it meets:

- a new checkpoint (no batch committed): a time starts the output there; ``now`` starts
  it at the run's first batch, whose processing time is chosen now and journaled like
  every batch's; ``last-stopped`` is refused (there is no previous run);
- a checkpoint with progress: ``last-stopped`` resumes it (the checkpoint's exactly-once
  restart continues the output where it stopped, nothing missing, nothing twice); the
  option the checkpoint was started with (the same text) resumes it too; no option
  resumes it with whatever it was started with; any other value is refused — a
  checkpoint holds one run's state, and a new start needs a new checkpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.job.start import LAST_STOPPED, NOW, output_start_option, read_point
from sparktide.spark.state import StateStore
from sparktide.time import format_instant

if TYPE_CHECKING:
    from sparktide.spark.engine import SparkEngine

__all__ = ["begin_output", "check_output_start"]

#: The checkpoint's record of the run's output start: ``{"option": ..., "start": µs}``.
NOTE = "output_start"
KEY = "output_start_time"


def check_output_start(job: Job, option: str | int | None, key: str = KEY) -> None:
    """Refuse, before any Spark session starts, an output start ``option`` that
    :func:`begin_output` would refuse (errors name ``key``)."""
    assert job.output.checkpoint is not None
    _settled(job, StateStore(None, job.output.checkpoint), option, key)  # type: ignore[arg-type]


def begin_output(engine: SparkEngine, option: str | int | None) -> None:
    """Settle the run's output start time (module docstring), record it in the
    checkpoint, and set the engine's ``context.output_start`` and ``context.read_point``.

    Raises
    ------
    ConfigError
        Naming ``output_start_time``: a value that is no time, ``last-stopped`` without a
        previous run, or a value other than the checkpoint's own on a checkpoint with
        progress.
    """
    store = engine.store
    recorded, fresh = _settled(engine.job, store, option, KEY)
    if fresh is not None:  # (a new start: "now" is the first batch's processing time)
        start = engine.batch_time(0) if fresh == NOW else fresh
        recorded = {"option": _text(fresh), "start": start}
        store.write_note(NOTE, recorded)
    if recorded is not None:
        start = int(recorded["start"])
        engine.context.output_start = start
        engine.context.read_point = read_point(engine.job, start)


def _settled(
    job: Job, store: StateStore, option: str | int | None, key: str
) -> tuple[dict[str, Any] | None, str | int | None]:
    """The checkpoint's recorded start that the run keeps, and the option when it starts
    afresh (else ``None``)."""
    option = output_start_option(option, key)
    recorded = store.read_note(NOTE)
    progress = store.latest() is not None
    if option == LAST_STOPPED:
        if not progress:
            raise ConfigError(
                key,
                f"'last-stopped' needs a previous run, and checkpoint {job.output.checkpoint} "
                "has none: give a time or 'now'",
            )
        return recorded, None
    if option is None or (recorded is not None and recorded["option"] == _text(option)):
        return recorded, None
    if progress:
        was = f"started with {recorded['option']!r}" if recorded else "started without one"
        raise ConfigError(
            key,
            f"{_text(option)!r} contradicts checkpoint {job.output.checkpoint}, {was}: resume "
            "it with 'last-stopped' (or the same value), or start a new checkpoint",
        )
    return None, option


def _text(option: Any) -> str:
    """The option as the checkpoint records it: ``now``, or the instant's text."""
    return option if isinstance(option, str) else str(format_instant(option))
