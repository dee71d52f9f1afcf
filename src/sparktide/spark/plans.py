"""Which plan a batch takes, and why: the one place that decides, as data.

A :class:`BatchPlan` is built from the job and the few facts of the batch known before
it runs (a flush, files by name). It can be printed and tested without a session. Two
routes judge a batch, with the same answers:

``one_pass``
    Each task parses, judges and folds its own partitions into window partials in one
    ``mapInArrow`` (:mod:`sparktide.spark.onepass`); nothing but partials leaves it. A
    windowless job's tasks release their events and write their records instead
    (:mod:`sparktide.spark.onepass.release`).
``general``
    Spark SQL parses and judges the batch (:mod:`sparktide.spark.judging`), then
    assigns and folds windows, releases or joins.

A batch planned ``one_pass`` may still be re-planned ``general`` once its tasks ran (a
line the kernel could not vouch for, too much for one task...): :meth:`BatchPlan.fall_back`
records the reason. Where windows merge (driver or Spark) is decided after the tasks
ran, from the number of partials: :meth:`BatchPlan.merge_windows`. Who writes a batch's
records and state tables (the driver or Spark's writer) is decided once it is judged,
from its input and state rows: :func:`writes_on`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from sparktide.job import Job, Ordering, Punctuation
from sparktide.spark.onepass import fusable
from sparktide.spark.timelines import Timeline

__all__ = [
    "DRIVER_WINDOW_ROWS",
    "DRIVER_WRITE_ROWS",
    "MAX_SKIPPED_BATCHES",
    "UNVOUCHED_MEMORY",
    "BatchPlan",
    "OnePassOutcome",
    "estimates_first",
    "plan_batch",
    "remember_one_pass",
    "scans_ctis",
    "skips_one_pass",
    "windows_on",
    "writes_on",
]

#: The one-pass plan folds a batch's partials into the open windows on the driver while
#: the two together are at most this many rows (about 100 bytes each in Arrow); beyond,
#: in Spark, with a shuffle. Substreams take the one-pass plan only while their keys'
#: state is at most this many rows (the task reads it, and the driver computes the next).
DRIVER_WINDOW_ROWS = 2_000_000
#: A batch collects its records and state tables and writes them from the driver while
#: its input and the state it starts from, with each event counted once per window it
#: may open, are at most this many rows; beyond, Spark's writer writes them.
DRIVER_WRITE_ROWS = 100_000
#: The state's memory (in the clock state, so a restarted run decides as the run did) of
#: one-pass batches declined because a line the kernel could not vouch for was an event
#: (nested or escaped values: ``docs/design.md``, *One pass per task*): how many in a row,
#: and how many batches are still to take the general route without trying.
UNVOUCHED_MEMORY = "one_pass_unvouched"
#: After ``n`` such declines in a row the next ``2**(n-1)`` batches skip the attempt, up to
#: this many: a stream of such events does not pay for two routes each batch, and one
#: that turns plain again takes the one-pass plan within this many batches.
MAX_SKIPPED_BATCHES = 32


@dataclass(frozen=True)
class BatchPlan:
    """How one batch runs.

    Attributes
    ----------
    route
        ``one_pass``, ``general`` or ``flush`` (what the metrics record's ``plan`` says).
    estimates_first
        The general route learns which partitions deliver (and takes the idle
        estimates) before judging, because the policy reads other partitions' clocks.
    scans_ctis
        Generated CTIs run as one compiled pass per timeline (:mod:`.ctiscan`).
    windows_on
        Where the partials merge into the open windows: ``driver``, ``spark``, or
        ``None`` when not decided yet (or no tumbling/hopping windows).
    reasons
        Why, in the order the decisions were taken.
    no_task
        A batch known to bring no input (a flush, or a run's batch holding only the
        ticker's row) of a job whose batches take the one-pass plan: it hands on what
        one pass over no input gives (no partials, no summary) without running a task
        or building the general plan (:func:`sparktide.spark.taskpass.no_input`).
    skipped
        The job's batches take the one-pass plan, but this one takes the general route
        without trying it: the batches before were declined for events the kernel
        cannot vouch for (:func:`skips_one_pass`).
    """

    route: str
    estimates_first: bool
    scans_ctis: bool
    windows_on: str | None = None
    reasons: tuple[str, ...] = ()
    no_task: bool = False
    skipped: bool = False

    @property
    def one_pass(self) -> bool:
        """Whether the batch is judged in one pass per task."""
        return self.route == "one_pass"

    def fall_back(self, reason: str) -> BatchPlan:
        """The general plan, after the one-pass plan declined the batch for ``reason``."""
        return dataclasses.replace(
            self, route="general", reasons=(*self.reasons, f"one pass declined: {reason}")
        )

    def merge_windows(self, on: str, reason: str) -> BatchPlan:
        """The plan with its windows merged ``on`` the driver or in Spark."""
        return dataclasses.replace(self, windows_on=on, reasons=(*self.reasons, reason))

    def __str__(self) -> str:
        flags = [self.route]
        flags += ["estimates first"] if self.estimates_first else []
        flags += ["CTI scan"] if self.scans_ctis else []
        flags += [f"windows on {self.windows_on}"] if self.windows_on else []
        flags += ["no task"] if self.no_task else []
        flags += ["one pass skipped"] if self.skipped else []
        return f"{', '.join(flags)} ({'; '.join(self.reasons)})"


def plan_batch(
    job: Job,
    *,
    flush: bool = False,
    silent: bool = False,
    starts: bool = False,
    skip: bool = False,
) -> BatchPlan:
    """The plan of a batch of ``job`` before it runs (a ``flush`` judges nothing, nor
    does a ``silent`` batch, which brings only the ticker's row; ``starts``: the run has
    an output start time, semantics §12: only the general plan skips events before its
    read point and cuts results before it; ``skip``: the batches before were declined
    for events the kernel cannot vouch for, :func:`skips_one_pass`)."""
    estimates = estimates_first(job)
    common = {"estimates_first": estimates, "scans_ctis": scans_ctis(job)}
    if flush:
        if plan_batch(job, starts=starts).one_pass:
            why = "a flush: no input, and one pass over none runs no task"
            return BatchPlan("flush", **common, reasons=(why,), no_task=True)
        return BatchPlan("flush", **common, reasons=("a flush: no input",))
    if silent:  # (the route its batches take, as the metrics record says)
        plan = plan_batch(job, starts=starts)
        if plan.one_pass:
            why = "no input (the ticker's row only): one pass over none runs no task"
            return dataclasses.replace(plan, reasons=(*plan.reasons, why), no_task=True)
        why = "no input (the ticker's row only): the judged rows are none"
        return dataclasses.replace(plan, reasons=(*plan.reasons, why))
    timeline = Timeline.of(job)
    if estimates and not timeline.by_key:
        why = "the policy reads other partitions' clocks"
        return BatchPlan("general", **common, reasons=(why,))
    if job.apply is not None:  # (docs/design.md: the kernel judges and folds each row once)
        why = "[apply]: the general plan expands each admitted event (semantics §11.18)"
        return BatchPlan("general", **common, reasons=(why,))
    if job.looks_up_in_window:
        why = "a window over a join with reference data: the general plan meets the table"
        return BatchPlan("general", **common, reasons=(why,))
    if job.window is not None and any(a.distinct is not None for a in job.window.aggregates):
        why = (
            "an aggregate over (distinct ...): the one-pass kernel folds numbers, not the "
            "sets of distinct combinations its partials keep (semantics §13.4)"
        )
        return BatchPlan("general", **common, reasons=(why,))
    if not fusable(job):
        return BatchPlan("general", **common, reasons=("the one-pass kernel cannot run the job",))
    if starts:
        why = "an output start time: the general plan skips and cuts (semantics §12)"
        return BatchPlan("general", **common, reasons=(why,))
    why = "substreams: tasks learn who delivers" if timeline.by_key else "each row its own clock"
    if skip:
        skipped = "one pass skipped: the batches before held events the kernel cannot vouch for"
        return BatchPlan("general", **common, reasons=(why, skipped), skipped=True)
    return BatchPlan("one_pass", **common, reasons=(why,))


def skips_one_pass(clock: dict[str, Any]) -> bool:
    """Whether the batch starting from ``clock`` takes the general route without trying
    the one-pass plan (:data:`UNVOUCHED_MEMORY`)."""
    return bool(clock.get(UNVOUCHED_MEMORY, (0, 0))[1])


#: What became of a batch planned ``one_pass`` (:func:`remember_one_pass`).
OnePassOutcome = Literal["ran", "unvouched", "declined", "skipped"]


def remember_one_pass(clock: dict[str, Any], outcome: OnePassOutcome) -> None:
    """Record in ``clock`` (the state the batch commits) what became of a batch planned
    ``one_pass``: ``ran``, ``unvouched`` (declined for an event the kernel could not
    vouch for), ``declined`` (for another reason) or ``skipped``."""
    declines, to_skip = clock.get(UNVOUCHED_MEMORY, (0, 0))
    if outcome == "unvouched":
        declines += 1
        to_skip = min(2 ** (declines - 1), MAX_SKIPPED_BATCHES)
    elif outcome == "skipped":
        to_skip -= 1
    elif outcome == "ran":
        declines, to_skip = 0, 0
    if declines or to_skip:
        clock[UNVOUCHED_MEMORY] = [declines, to_skip]
    else:
        clock.pop(UNVOUCHED_MEMORY, None)


def estimates_first(job: Job) -> bool:
    """Whether a batch must learn which partitions deliver before it is judged.

    A row is judged against its own partition's clock, which an idle estimate never
    touches (only partitions that deliver nothing get one), and a partition seen for
    the first time starts at minus infinity, which the policy's ``greatest`` treats as
    it treats a missing value. Two cases read other partitions' clocks and so need
    the estimates first: substreams (the input's arrival clock is the maximum over
    partitions) and merged jobs whose within-batch watermark is the minimum over
    partitions (``accept``, or no out-of-order bound); imports read other partitions
    too. Everywhere else one pass (parse, judge, count) saves persisting the parsed
    batch and a Spark job."""
    timeline = Timeline.of(job)
    if timeline.by_key or job.imports:
        return True
    punctuation = job.punctuation
    only_cti = punctuation is not None and punctuation.watermark == "cti"
    no_bound = only_cti or any(p.ordering.out_of_order is None for p in job.policies.values())
    return timeline.job_watermark and (job.ordering.out_of_order_action == "accept" or no_bound)


def scans_ctis(job: Job) -> bool:
    """Whether ``job``'s generated CTIs run as one compiled pass per timeline
    (:mod:`sparktide.spark.ctiscan`) rather than in closed form: a negative delay that
    decides which events move the newest timestamp — below ``-1us`` with out-of-order
    events dropped or dead-lettered, or under ``adjust`` with CTIs every period or with
    interval events (``docs/design.md``, *CTIs and interval events*). Inputs with their
    own settings (semantics §7.8): when any input's CTIs need the pass, or any input's
    the unrolled form (:func:`~sparktide.spark.punctuation.generated_ctis_ahead`, one
    form for a whole batch), every timeline takes the pass with its input's parameters."""
    policies = job.policies.values()
    if any(_scans(job, p.ordering, p.punctuation) for p in policies):
        return True
    return job.per_input and any(_ahead(p.ordering, p.punctuation) for p in policies)


def _generation_ahead(punctuation: Punctuation | None) -> int | None:
    """How far above the newest timestamp generated CTIs are (``None``: none generated)."""
    if punctuation is None or not punctuation.generated:
        return None
    return -(punctuation.delay or 0)  # type: ignore[operator]


def _scans(job: Job, ordering: Ordering, punctuation: Punctuation | None) -> bool:
    """Whether CTIs generated under ``ordering`` and ``punctuation`` need the pass."""
    ahead = _generation_ahead(punctuation)
    if ahead is None:
        return False
    action = ordering.out_of_order_action
    if action in ("drop", "dead_letter"):
        return ahead > 1
    return (
        action == "adjust" and ahead > 0 and (punctuation.every is not None or job.source.intervals)  # type: ignore[union-attr]
    )


def _ahead(ordering: Ordering, punctuation: Punctuation | None) -> bool:
    """Whether generated CTIs take the unrolled form (a negative delay under ``adjust``)."""
    ahead = _generation_ahead(punctuation)
    return ahead is not None and ahead > 0 and ordering.out_of_order_action == "adjust"


def windows_on(job: Job, *, flushing: bool, keys_on_driver: bool, rows: int) -> tuple[str, str]:
    """Where a one-pass batch's partials merge into the open windows, and why:
    ``driver`` for few enough ``rows`` (partials and open windows together) of windows
    whose closing reads only the scopes' watermarks, else ``spark``. ``keys_on_driver``:
    substreams whose keys' state the driver computed (or not substreams)."""
    window = job.window
    assert window is not None
    if flushing or job.edges:
        return "spark", "windows merge in Spark: a flush or edge events"
    if not keys_on_driver:
        return "spark", "windows merge in Spark: the keys' state is in Spark"
    if window.type not in ("tumbling", "hopping") or window.having is not None or job.select:
        return "spark", "windows merge in Spark: their records need Spark SQL"
    if rows > DRIVER_WINDOW_ROWS:
        return "spark", f"windows merge in Spark: {rows} rows"
    return "driver", f"windows merge on the driver: {rows} rows"


def writes_on(job: Job, *, input_rows: int, state_rows: int) -> tuple[str, str]:
    """Where a batch writes its records and state tables, and why: ``driver`` (collected
    as Arrow, one file each) or ``spark`` (Spark's writer).

    A Spark write of a few rows costs a job and its commit protocol, several times what
    collecting them costs, and a micro-batch writes up to six tables. ``input_rows``:
    the batch's input records; ``state_rows``: the rows of the state it starts from.
    The estimate of what the batch writes counts an event once per window it may fall
    in (hopping: ``size / hop``; sliding: twice, as it enters and as it leaves)."""
    window = job.window
    per_event = 1
    if window is not None and window.type == "hopping" and window.hop:
        per_event = -(-int(window.size) // int(window.hop))
    elif window is not None and window.type == "sliding":
        per_event = 2
    rows = input_rows * per_event + state_rows
    if rows > DRIVER_WRITE_ROWS:
        return "spark", f"records and state written by Spark: up to {rows} rows"
    return "driver", f"records and state written from the driver: up to {rows} rows"
