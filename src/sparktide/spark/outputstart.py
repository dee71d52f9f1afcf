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
from sparktide.job.start import LAST_STOPPED, NOW, output_start_option, read_point
from sparktide.time import format_instant

if TYPE_CHECKING:
    from sparktide.spark.engine import SparkEngine

__all__ = ["begin_output"]

#: The checkpoint's record of the run's output start: ``{"option": ..., "start": µs}``.
NOTE = "output_start"
KEY = "output_start_time"


def begin_output(engine: SparkEngine, option: str | int | None) -> None:
    """Settle the run's output start time (module docstring) and set the engine's
    ``context.output_start`` and ``context.read_point``.

    Raises
    ------
    ConfigError
        Naming ``output_start_time``: a value that is no time, ``last-stopped`` without a
        previous run, or a value other than the checkpoint's own on a checkpoint with
        progress.
    """
    option = output_start_option(option, KEY)
    store = engine.store
    recorded = store.read_note(NOTE)
    progress = store.latest() is not None
    given = None if option is None else _text(option)
    if option == LAST_STOPPED:
        if not progress:
            raise ConfigError(
                KEY,
                f"'last-stopped' needs a previous run, and checkpoint "
                f"{engine.job.output.checkpoint} has none: give a time or 'now'",
            )
    elif option is not None and (recorded is None or recorded["option"] != given):
        if progress:
            was = f"started with {recorded['option']!r}" if recorded else "started without one"
            raise ConfigError(
                KEY,
                f"{given!r} contradicts checkpoint {engine.job.output.checkpoint}, {was}: "
                "resume it with 'last-stopped' (or the same value), or start a new checkpoint",
            )
        start = engine.batch_time(0) if option == NOW else option
        recorded = {"option": given, "start": start}
        store.write_note(NOTE, recorded)
    if recorded is not None:
        start = int(recorded["start"])
        engine.context.output_start = start
        engine.context.read_point = read_point(engine.job, start)


def _text(option: Any) -> str:
    """The option as the checkpoint records it: ``now``, or the instant's text."""
    return option if isinstance(option, str) else str(format_instant(option))
