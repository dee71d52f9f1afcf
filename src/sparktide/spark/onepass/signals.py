"""How a task says it cannot finish the one pass: the engine then decides what to do.

Both are exceptions caught by :func:`~sparktide.spark.onepass.kernel.fused_kernel`, which
turns each into a single row of its own kind; nothing else in the kernel catches them.
"""

from __future__ import annotations

from sparktide.errors import SparktideError

__all__ = ["Abort", "Unreadable"]


class Abort(SparktideError):
    """This task's lines cannot be judged here (the engine runs the general plan).

    Parameters
    ----------
    reason
        What the task met, in a few words (for whoever debugs the fallback: the
        engine sees only that the task gave up).
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Unreadable(SparktideError):
    """A JSONL file the task cannot read by its path (the engine sends its text)."""
