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
from typing import Any

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


#: Each rule (``name (section)``), then its copies, one line a representation: the
#: representation (a field of :class:`RuleCopies`) and the names below ``sparktide.``.
_COPIES = """
early verdict (§3.2)
    python core.policy:OrderingPolicy.judge
    sql    spark.policy:early_and_late
    arrow  spark.onepass.policy:arrival_verdicts
late verdict and its adjusted timestamp (§3.3)
    python core.policy:OrderingPolicy.judge
    sql    spark.policy:early_and_late
    arrow  spark.onepass.policy:arrival_verdicts spark.onepass.policy:late_adjusted
out-of-order verdict (§3.4)
    python core.policy:OrderingPolicy.judge
    sql    spark.policy:out_of_order
    arrow  spark.onepass.policy:out_of_order_verdicts
    numba  spark.ctiscan:scan_table
newest timestamp of a timeline (§3.5)
    python core.watermark:Timeline.admit
    sql    spark.policy:running_newest
    arrow  spark.onepass.policy:offered_newest spark.onepass.policy:running_max_before
    numba  spark.ctiscan:scan_table
watermark of a timeline (§4.1)
    python core.watermark:Timeline.refresh
    sql    spark.policy:watermark_before spark.clocks:PartitionClock.refreshed
    arrow  spark.onepass.policy:arrival_watermark spark.onepass.policy:timeline_watermark
idle estimate (§4.3)
    python core.watermark:PartitionClock.estimate
    sql    spark.clocks:PartitionClock.idle_arrival spark.clocks:estimate_idle
    arrow  spark.onepass.clocks:input_clock
which watermark governs (merged, partitioned, substreams) (§4.5)
    python core.clocks:Clocks.governing_watermark
    sql    spark.policy:governing_watermark spark.clocks:substream_floor
window assignment: tumbling, hopping, snapshot (§6.1, §6.4)
    python core.windows.spec:grid_starts core.windows.spec:WindowSpec.starts_of
    sql    spark.windows.assign:assign_windows
    arrow  spark.onepass.windows:assign_windows
window assignment: sliding (§6.2)
    python core.windows.sliding:SlidingGroup.insert
    sql    spark.windows.rows:sliding_windows
window assignment: session (§6.3)
    python core.windows.session:SessionGroup.sessions
    sql    spark.windows.rows:session_windows
window assignment: edge events (§7.6)
    python core.windows.spec:WindowSpec.edge_starts
    sql    spark.edges:edge_starts
window closing (due watermark) (§6.7)
    python core.windows.spec:WindowSpec.due
    sql    spark.windows.assign:due
CTI generation (§7.3)
    python core.punctuation:CtiGenerator.after_event
    sql    spark.punctuation:generated_ctis spark.punctuation:generated_ahead
    numba  spark.punctuation:generated_scan spark.ctiscan:scan_table
"""


def _parse(text: str) -> tuple[RuleCopies, ...]:
    """The rules of :data:`_COPIES`, in their order."""
    rules: list[dict[str, Any]] = []
    for line in text.strip().splitlines():
        if not line.startswith(" "):
            name, section = line.removesuffix(")").rsplit(" (", 1)
            rules.append({"rule": name, "section": section})
            continue
        kind, *names = line.split()
        rules[-1][kind] = tuple(f"sparktide.{name}" for name in names)
    return tuple(RuleCopies(**fields) for fields in rules)


#: Every rule with copies in more than one representation, in the order of the semantics.
RULES: tuple[RuleCopies, ...] = _parse(_COPIES)


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
