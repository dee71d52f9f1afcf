"""Tables for people: ``simulate``, ``explain`` and ``advise`` with ``--format table``.

:mod:`~sparktide.report.run` prints a run's records and decisions,
:mod:`~sparktide.report.advice` the advice; :mod:`~sparktide.report.console` holds what
they share.
"""

from sparktide.report.advice import print_advice
from sparktide.report.run import print_decisions, print_tables

__all__ = ["print_advice", "print_decisions", "print_tables"]
