"""Following a metrics directory: ``sparktide ui METRICS_DIR`` for a stopped job, or one
that another process runs (the directory grows)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from sparktide.errors import InputError
from sparktide.ui.state import LiveState

__all__ = ["MetricsFollower", "record_order"]


def record_order(name: str) -> tuple[int, int] | None:
    """Where a metrics file comes in a run: ``batch=<id>.jsonl`` at ``(id, 0)``, its
    flush ``flush=<id>.jsonl`` after it; ``None`` for any other name."""
    stem, _, suffix = name.partition(".")
    kind, _, number = stem.partition("=")
    if suffix != "jsonl" or kind not in ("batch", "flush") or not number.isdigit():
        return None
    return int(number), int(kind == "flush")


class MetricsFollower:
    """Feeds a :class:`LiveState` with the records of a metrics directory, in batch
    order: those there now (:meth:`poll`), then, from :meth:`start`, each new one.

    Parameters
    ----------
    directory
        The metrics directory (``[output] metrics``, or ``<checkpoint>/sparktide/metrics``).
    state
        What to feed.
    every
        Seconds between two looks at the directory.

    Raises
    ------
    InputError
        If the directory does not exist.
    """

    def __init__(self, directory: str, state: LiveState, *, every: float = 0.2) -> None:
        self.directory = Path(directory.removeprefix("file:"))
        if not self.directory.is_dir():
            raise InputError(f"metrics directory: no such directory: {directory!r}")
        self.state = state
        self.every = every
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> int:
        """Feed the records written since the last look; return how many.

        A replayed batch rewrites its file with the same record: it is fed once."""
        names = []
        for path in self.directory.iterdir():
            order = record_order(path.name)
            if order is not None and path.name not in self._seen:
                names.append((order, path))
        for _, path in sorted(names):
            text = path.read_text().strip()
            if not text:
                continue
            self._seen.add(path.name)
            self.state(json.loads(text.splitlines()[-1]))
        return len(names)

    def start(self) -> MetricsFollower:
        """Look at the directory every ``every`` seconds, in a thread, until :meth:`stop`."""
        self.poll()
        self._thread = threading.Thread(target=self._run, name="sparktide-ui-follow", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.poll()

    def stop(self) -> None:
        """Stop following."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
