"""Where each rule of the semantics is written, in every representation.

The reference engine (:mod:`sparktide.core`) states each rule once, in Python, on one
event at a time. The Spark engine needs the same rule in other forms: Spark SQL over a
whole batch (the general plan), Arrow / numpy inside one task (the one-pass plan,
:mod:`sparktide.spark.onepass`), and a numba loop for the recurrences that have no
closed form (:mod:`sparktide.spark.ctiscan`). A change to a rule must change every copy,
so this module lists them: one :class:`RuleCopies` per rule, each copy as
``"module:qualified.name"``.

``tests/test_rules.py`` checks that every name here exists and that the table in
``docs/design.md`` (*One definition per rule*) is :func:`rule_table` to the letter; the
differential tests (``tests/spark/test_differential.py``) hold the copies to the same
answers.

This module imports nothing: it is data, readable without Spark.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RULES", "RuleCopies", "rule_table"]


@dataclass(frozen=True)
class RuleCopies:
    """One rule of ``docs/semantics.md`` and its home in each representation.

    Attributes
    ----------
    rule
        The rule's name, as the table shows it.
    section
        Its section of ``docs/semantics.md`` (e.g. ``"§3.2"``).
    python
        The reference engine's copy (``sparktide.core``): the definition.
    sql
        The Spark engine's general plan (Spark SQL, or Python on the driver over a
        batch's few clock values).
    arrow
        The one-pass plan's task kernel (Arrow / numpy).
    numba
        The compiled sequential pass, where the rule has one.
    """

    rule: str
    section: str
    python: tuple[str, ...]
    sql: tuple[str, ...] = ()
    arrow: tuple[str, ...] = ()
    numba: tuple[str, ...] = ()

    def copies(self) -> tuple[str, ...]:
        """Every copy's dotted name, all representations together."""
        return self.python + self.sql + self.arrow + self.numba


_CORE = "sparktide.core"
_SPARK = "sparktide.spark"
_ONEPASS = "sparktide.spark.onepass"
_SCAN = "sparktide.spark.ctiscan:scan_table"

#: Every rule with copies in more than one representation, in the order of the semantics.
RULES: tuple[RuleCopies, ...] = (
    RuleCopies(
        "early verdict",
        "§3.2",
        python=(f"{_CORE}.policy:OrderingPolicy.judge",),
        sql=(f"{_SPARK}.policy:early_and_late",),
        arrow=(f"{_ONEPASS}.policy:arrival_verdicts",),
    ),
    RuleCopies(
        "late verdict and its adjusted timestamp",
        "§3.3",
        python=(f"{_CORE}.policy:OrderingPolicy.judge",),
        sql=(f"{_SPARK}.policy:early_and_late",),
        arrow=(f"{_ONEPASS}.policy:arrival_verdicts", f"{_ONEPASS}.policy:late_adjusted"),
    ),
    RuleCopies(
        "out-of-order verdict",
        "§3.4",
        python=(f"{_CORE}.policy:OrderingPolicy.judge",),
        sql=(f"{_SPARK}.policy:out_of_order",),
        arrow=(f"{_ONEPASS}.policy:out_of_order_verdicts",),
        numba=(_SCAN,),
    ),
    RuleCopies(
        "newest timestamp of a timeline",
        "§3.5",
        python=(f"{_CORE}.watermark:Timeline.admit",),
        sql=(f"{_SPARK}.policy:running_newest",),
        arrow=(f"{_ONEPASS}.policy:offered_newest", f"{_ONEPASS}.policy:running_max_before"),
        numba=(_SCAN,),
    ),
    RuleCopies(
        "watermark of a timeline",
        "§4.1",
        python=(f"{_CORE}.watermark:Timeline.refresh",),
        sql=(f"{_SPARK}.policy:watermark_before", f"{_SPARK}.clocks:PartitionClock.refreshed"),
        arrow=(f"{_ONEPASS}.policy:arrival_watermark", f"{_ONEPASS}.policy:timeline_watermark"),
    ),
    RuleCopies(
        "idle estimate",
        "§4.3",
        python=(f"{_CORE}.watermark:PartitionClock.estimate",),
        sql=(f"{_SPARK}.clocks:PartitionClock.idle_arrival", f"{_SPARK}.clocks:estimate_idle"),
        arrow=(f"{_ONEPASS}.clocks:input_clock",),
    ),
    RuleCopies(
        "which watermark governs (merged, partitioned, substreams)",
        "§4.5",
        python=(f"{_CORE}.clocks:Clocks.governing_watermark",),
        sql=(f"{_SPARK}.policy:governing_watermark", f"{_SPARK}.clocks:substream_floor"),
    ),
    RuleCopies(
        "window assignment: tumbling, hopping, snapshot",
        "§6.1, §6.4",
        python=(f"{_CORE}.windows.spec:grid_starts", f"{_CORE}.windows.spec:WindowSpec.starts_of"),
        sql=(f"{_SPARK}.windows.assign:assign_windows",),
        arrow=(f"{_ONEPASS}.windows:assign_windows",),
    ),
    RuleCopies(
        "window assignment: sliding",
        "§6.2",
        python=(f"{_CORE}.windows.sliding:SlidingGroup.insert",),
        sql=(f"{_SPARK}.windows.rows:sliding_windows",),
    ),
    RuleCopies(
        "window assignment: session",
        "§6.3",
        python=(f"{_CORE}.windows.session:SessionGroup.sessions",),
        sql=(f"{_SPARK}.windows.rows:session_windows",),
    ),
    RuleCopies(
        "window assignment: edge events",
        "§7.6",
        python=(f"{_CORE}.windows.spec:WindowSpec.edge_starts",),
        sql=(f"{_SPARK}.edges:edge_starts",),
    ),
    RuleCopies(
        "window closing (due watermark)",
        "§6.7",
        python=(f"{_CORE}.windows.spec:WindowSpec.due",),
        sql=(f"{_SPARK}.windows.assign:due",),
    ),
    RuleCopies(
        "CTI generation",
        "§7.3",
        python=(f"{_CORE}.punctuation:CtiGenerator.after_event",),
        sql=(f"{_SPARK}.punctuation:generated_ctis", f"{_SPARK}.punctuation:generated_ahead"),
        numba=(f"{_SPARK}.punctuation:generated_scan", _SCAN),
    ),
)


def _cell(names: tuple[str, ...]) -> str:
    return "<br>".join(f"`{name}`" for name in names) or "—"


def rule_table() -> str:
    """The Markdown table ``docs/design.md`` shows (*One definition per rule*)."""
    lines = [
        "| rule ([semantics.md](semantics.md)) | Python reference | Spark SQL "
        "| Arrow / numpy | numba |",
        "|---|---|---|---|---|",
    ]
    for rule in RULES:
        cells = (rule.python, rule.sql, rule.arrow, rule.numba)
        lines.append(
            f"| {rule.rule} ({rule.section}) | " + " | ".join(_cell(c) for c in cells) + " |"
        )
    return "\n".join(lines)
