"""The job file: typed, frozen, validated configuration objects.

A job is four tables (semantics §10): ``[source]``, ``[ordering]``, ``[window]`` (optional)
and ``[output]``. Each is a frozen dataclass that validates itself on construction, so the
Python API, the TOML file and the command line build the very same objects. Durations may
be given as strings (``"5s"``) or integer microseconds; they are stored as ``int``
microseconds (``None`` for a disabled check).

The package, one module per idea:

- :mod:`~sparktide.job.values`: durations, column names, paths and choices, checked;
- :mod:`~sparktide.job.source`: ``[source]``, ``[inputs.<name>]`` and reference data;
- :mod:`~sparktide.job.ordering`: ``[ordering]``, the ordering policy's settings;
- :mod:`~sparktide.job.punctuation`: ``[punctuation]``, explicit and generated CTIs;
- :mod:`~sparktide.job.window`: ``[window]`` and its aggregates;
- :mod:`~sparktide.job.join`: ``[join]``;
- :mod:`~sparktide.job.expressions`: ``[filter]``, ``[select]`` and the names they read;
- :mod:`~sparktide.job.analytic`: ``[analytic.<name>]``, the analytic columns (``LAG``,
  ``LAST``, ``ISFIRST`` and the aggregates' analytic forms);
- :mod:`~sparktide.job.output`: ``[output]``;
- :mod:`~sparktide.job.model`: the whole :class:`Job`, and :mod:`~sparktide.job.rules`,
  the rules between its tables;
- :mod:`~sparktide.job.tables` and :mod:`~sparktide.job.files`: building a job from the
  TOML tables, and reading a job file.
"""

from sparktide.job.analytic import (
    ANALYTIC_AGGREGATES,
    ANALYTIC_FUNCTIONS,
    Analytic,
    analytic_fields,
    analytic_levels,
    analytic_reads,
)
from sparktide.job.apply import Apply
from sparktide.job.expressions import Filter, Projection, expression_fields, record_casts
from sparktide.job.files import load_job
from sparktide.job.files import read_toml as _read_toml  # noqa: F401 (sparktide.query.bind)
from sparktide.job.join import Join, TableJoin
from sparktide.job.match import Match, Measure
from sparktide.job.model import Job
from sparktide.job.ordering import Ordering
from sparktide.job.output import Output
from sparktide.job.punctuation import Punctuation
from sparktide.job.source import Reference, Source, input_of, union_partition
from sparktide.job.tables import reference_input
from sparktide.job.values import RESERVED_EVENT_COLUMNS as RESERVED_EVENT_COLUMNS
from sparktide.job.values import RESERVED_WINDOW_COLUMNS as RESERVED_WINDOW_COLUMNS
from sparktide.job.window import AGGREGATE_FUNCTIONS, Aggregate, Window

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "ANALYTIC_AGGREGATES",
    "ANALYTIC_FUNCTIONS",
    "Aggregate",
    "Analytic",
    "Apply",
    "Filter",
    "Job",
    "Join",
    "Match",
    "Measure",
    "Ordering",
    "Output",
    "Projection",
    "Punctuation",
    "Reference",
    "Source",
    "TableJoin",
    "Window",
    "analytic_fields",
    "analytic_levels",
    "analytic_reads",
    "expression_fields",
    "input_of",
    "load_job",
    "record_casts",
    "reference_input",
    "union_partition",
]
