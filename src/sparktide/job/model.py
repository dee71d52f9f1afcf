"""The whole job (semantics §10): its tables, and what the engines ask of them.

A job is four tables: ``[source]``, ``[ordering]``, ``[window]`` (optional) and
``[output]``, and optionally ``[punctuation]``, ``[join]``, ``[filter]``, ``[select]``
``[analytic.<name>]``, ``[apply]`` and ``[match]``.
Each is a frozen dataclass that validates itself on construction, so the Python API, the
TOML file and the command line build the very same objects; the rules between tables
are :mod:`sparktide.job.rules`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparktide.expr import Expr
from sparktide.job import rules
from sparktide.job.aggregates import NUMERIC_FUNCTIONS
from sparktide.job.analytic import Analytic, check_analytics
from sparktide.job.apply import Apply, check_apply
from sparktide.job.expressions import Filter, Projection, check_missing_tests
from sparktide.job.join import Join
from sparktide.job.match import Match, check_match
from sparktide.job.ordering import Ordering
from sparktide.job.output import Output
from sparktide.job.perinput import InputPolicy, input_policies
from sparktide.job.punctuation import Punctuation
from sparktide.job.source import Reference, Source, union_partition
from sparktide.job.tables import job_tables
from sparktide.job.values import OWN_EVENT_FIELDS, OWN_WINDOW_FIELDS, own_names
from sparktide.job.window import Window

__all__ = ["Job"]


@dataclass(frozen=True)
class Job:
    """A whole job: source, ordering policy, optional window, output, and optionally a
    filter (``[filter]``) and the output columns (``[select]``).

    Cross-table rules are checked here: ``partitioned`` needs a partition column and
    excludes substreams; with substreams every window grouping includes the key;
    ``[select]`` reads the window's result in a windowed job, a join's match
    (``<input>.<field>``, ``timestamp``) in a job with ``[join]``. ``select_star``
    (``"*" = "*"`` in ``[select]``) is how many ``[select]`` columns precede the
    record's own fields in a job without a window or a join (``SELECT *, expr AS c``);
    in a job with ``[join]``, ``"*" = "<input>"`` puts that input's fields there
    (``SELECT s.*, r.Model``), and ``select_star_input`` names it.
    """

    source: Source
    ordering: Ordering = field(default_factory=Ordering)
    window: Window | None = None
    output: Output = field(default_factory=Output)
    punctuation: Punctuation | None = None
    inputs: tuple[tuple[str, Source], ...] = ()
    join: Join | None = None
    filter: Filter | None = None
    select: tuple[Projection, ...] = ()
    select_star: int | None = None
    select_star_input: str | None = None
    references: tuple[tuple[str, Reference], ...] = ()
    analytics: tuple[Analytic, ...] = ()
    apply: Apply | None = None
    match: Match | None = None
    _policies: dict[str, InputPolicy] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        rules.check_inputs(self)
        rules.check_join(self)
        rules.check_input_filters(self)
        rules.check_punctuation(self)
        object.__setattr__(self, "_policies", input_policies(self))
        rules.check_select(self)
        rules.check_timelines(self)
        check_analytics(self)
        check_apply(self)
        check_match(self)
        check_missing_tests(self)

    @property
    def input_conditions(self) -> dict[str, Expr]:
        """Each input's ``where`` (semantics §11.20), parsed, by input name: the inputs
        of a union or a join that have one, or ``""`` for ``[source] where``."""
        inputs = self.inputs or (("", self.source),)
        return {n: s.condition for n, s in inputs if s.condition is not None}

    @staticmethod
    def where_key(name: str) -> str:
        """The job-file key of input ``name``'s ``where`` (``""``: ``[source]``'s)."""
        return f"inputs.{name}.where" if name else "source.where"

    @property
    def declared_partitions(self) -> list[Any]:
        """Partition ids that exist before they deliver (``source.partitions``); in a union
        ``<input>/<id>``."""
        out: list[Any] = []
        for name, source in self.inputs or (("", self.source),):
            if source.partitions is not None:
                out += [union_partition(name, i) if name else i for i in range(source.partitions)]
        return out

    @property
    def input_sources(self) -> tuple[tuple[str | None, Source], ...]:
        """``(name, source)`` of every input: ``((None, source),)`` for one plain source."""
        return self.inputs or ((None, self.source),)

    @property
    def policies(self) -> dict[str, InputPolicy]:
        """Every input's ordering and punctuation, the job-wide tables with the input's
        overrides (``[inputs.<name>.ordering]``, semantics §7.8), by input name; ``""``
        for a job with one ``[source]``."""
        return self._policies

    def policy_of(self, name: str | None) -> InputPolicy:
        """The settings of input ``name`` (``None`` or ``""``: a job with one ``[source]``)."""
        return self._policies[name or ""]

    @property
    def per_input(self) -> bool:
        """Whether the inputs' ordering or punctuation differ (semantics §7.8)."""
        return len(set(self._policies.values())) > 1

    @property
    def imports(self) -> dict[str, str]:
        """``{importing input: exporting input}`` of a union (``import_ctis``)."""
        return {n: s.import_ctis for n, s in self.inputs if s.import_ctis is not None}

    @property
    def edges(self) -> bool:
        """True when the events are edge events (``source.edge``, semantics §7)."""
        return self.source.edge is not None

    @property
    def window_fields(self) -> dict[str, str]:
        """The names ``window_start``, ``window_end`` and ``emitted_at`` take in the
        window records written: their own unless a column of the record (a ``[select]``
        column; without ``[select]``, a group-by column or an aggregate) has it (then
        ``sparktide_window_start`` ..., semantics §10.3)."""
        assert self.window is not None
        taken = [p.name for p in self.select] if self.select else self.window.user_columns
        return own_names(OWN_WINDOW_FIELDS, taken)

    @property
    def event_fields(self) -> dict[str, str]:
        """The names ``timestamp`` and ``end_timestamp`` take in event records (a
        released event's or a join's match's): their own unless a ``[select]`` column
        has it (then ``sparktide_timestamp``, semantics §10.3); with ``[match]``, a
        measure."""
        taken = [p.name for p in self.select]
        taken += list(self.match.measures) if self.match is not None and not self.select else []
        return own_names(OWN_EVENT_FIELDS, taken)

    @property
    def numeric_columns(self) -> frozenset[str]:
        """Columns that must hold numbers or null: the inputs of ``sum``, ``avg``,
        ``stdev``, ``stdevp``, ``var`` and ``varp``, and the order column of a percentile."""
        if self.window is None:
            return frozenset()
        return frozenset(
            a.value_column
            for a in self.window.aggregates
            if a.value_column is not None
            and (a.function in NUMERIC_FUNCTIONS or a.function.startswith("percentile_"))
        )

    @property
    def windows_matches(self) -> bool:
        """True for a window over the matches of a join of two streams: each match the
        join releases is one event of the window (semantics §7.11)."""
        return (
            self.join is not None
            and not self.references_joined
            and self.window is not None
            and not self.joins_windows
        )

    @property
    def joins_windows(self) -> bool:
        """True for a join of an input with the records of the job's window (``[window]
        name``, the join's ``right``): the window reads the other inputs' events, and
        the join's matches are written (semantics §7.12)."""
        return (
            self.join is not None
            and self.window is not None
            and self.window.name is not None
            and self.join.right == self.window.name
        )

    @property
    def references_joined(self) -> bool:
        """True for a join with reference data (``[join] right`` a table, semantics
        §11.8); a join of two streams may meet tables too (``[[join.then]]``, §11.26)."""
        return self.join is not None and self.join.right in dict(self.references)

    @property
    def window_meets_table(self) -> bool:
        """True for a window whose records meet reference data (``[join] left`` the
        window's ``name``, ``right`` a table): Stream Analytics' JOIN of a windowed step
        with reference data (semantics §13.5)."""
        return (
            self.references_joined
            and self.window is not None
            and self.join is not None
            and self.window.name == self.join.left
        )

    @property
    def looks_up_in_window(self) -> bool:
        """True for a window over a join with reference data: each admitted event becomes
        one event per table row it meets, before ``[filter]`` and the window (semantics
        §11.23)."""
        return self.references_joined and self.window is not None and not self.window_meets_table

    @property
    def expands_events(self) -> bool:
        """True when an admitted event may become several (or no) events before
        ``[filter]``: ``[apply]`` (semantics §11.18), or a window over a join with
        reference data (§11.23)."""
        return self.apply is not None or self.looks_up_in_window

    @property
    def event_time_mode(self) -> bool:
        """True when events carry their own time (``timestamp_by``)."""
        return self.source.timestamp_by is not None

    @classmethod
    def from_dict(cls, data: dict[str, Any], base_dir: Path | str | None = None) -> Job:
        """Build a job from the parsed TOML tables; relative paths resolve against ``base_dir``."""
        job = cls(**job_tables(data, base_dir))
        # (of the job as written: the engines' views of one input keep its window)
        rules.check_event_input(job)
        return job
