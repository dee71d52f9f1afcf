"""The ``sparktide`` command line: ``simulate``, ``explain`` and ``advise`` (reference
engine), ``run`` (Spark), ``translate`` (queries and pipelines as job files) and ``demo``.

Exit codes: 0 success, 1 a run stopped on a fault outside sparktide (an output or the
checkpoint cannot be written), 2 bad configuration or unreadable input (one line on
stderr, no traceback).

:mod:`~sparktide.cli.app` holds the parser and :func:`main`; each command has its
module (:mod:`~sparktide.cli.simulate`, :mod:`~sparktide.cli.explain`,
:mod:`~sparktide.cli.advise`, :mod:`~sparktide.cli.run`,
:mod:`~sparktide.cli.translate`, :mod:`~sparktide.cli.demo`), and
:mod:`~sparktide.cli.options` what they share.
"""

from sparktide.cli.app import main

__all__ = ["main"]
