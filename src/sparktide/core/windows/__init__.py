"""Windows in the reference engine (semantics §6): tumbling, hopping, sliding, session, snapshot.

Every window belongs to a *scope* (the job, a partition, or a substream) and a group
(the ``group_by`` values). A window with end ``e`` closes when the scope's watermark
``W`` satisfies ``W − allowed_lateness ≥ e`` for ``[start, end)`` windows and ``> e`` for
``(start, end]`` windows; on integer microseconds both are ``W ≥ due`` with
``due = e + allowed_lateness`` (plus one microsecond for ``(start, end]``).

The package, one module per idea:

- :mod:`~sparktide.core.windows.spec`: the window in microseconds and its arithmetic
  (where windows start, end and close; :func:`grid_starts`);
- :mod:`~sparktide.core.windows.groups`: what every kind of window group does;
- :mod:`~sparktide.core.windows.grid`: tumbling, hopping and snapshot windows;
- :mod:`~sparktide.core.windows.sliding`: sliding windows;
- :mod:`~sparktide.core.windows.session`: session windows;
- :mod:`~sparktide.core.windows.edges`: edge events in windows;
- :mod:`~sparktide.core.windows.timers`: idle timeouts;
- :mod:`~sparktide.core.windows.sink`: :class:`WindowOperator`, the window sink.
"""

from sparktide.core.windows.groups import GAP
from sparktide.core.windows.sink import WindowOperator
from sparktide.core.windows.spec import grid_starts

__all__ = ["GAP", "WindowOperator", "grid_starts"]
