"""Where each rule of the semantics is written, in every representation.

The reference engine (:mod:`sparktide.core`) states each rule once, in Python, on one
event at a time. The Spark engine needs the same rule in other forms: Spark SQL over a
whole batch (the general plan), Arrow / numpy inside one task (the one-pass plan,
:mod:`sparktide.spark.onepass`), and a numba loop for the recurrences that have no
closed form (:mod:`sparktide.spark.ctiscan`). A change to a rule must change every copy,
so this module lists them: one :class:`RuleCopies` per rule, each copy as
``"module:qualified.name"``. Every copy carries the rule's name (``early_verdict`` in
:mod:`sparktide.core.policy`, :mod:`sparktide.spark.policy` and
:mod:`sparktide.spark.onepass.policy`), so a grep for the name finds them all.

``tests/test_rules.py`` checks that every name here exists, that each copy carries its
rule's name (but the few in :data:`SHARED`), and that the table in
``docs/design.md`` (*One definition per rule*) is :func:`rule_table` to the letter; the
differential tests (``tests/spark/test_differential.py``) hold the copies to the same
answers.

This module imports nothing: it is data, readable without Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RULES", "SHARED", "RuleCopies", "rule_table"]


@dataclass(frozen=True)
class RuleCopies:
    """One rule of ``docs/semantics.md`` and its home in each representation.

    Attributes
    ----------
    name
        The rule's function name, the same in every representation (a copy's name is
        ``name`` or starts with it, so a grep for ``name`` finds every copy), but for
        the copies in :data:`SHARED`.
    rule
        The rule, as the table shows it.
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

    name: str
    rule: str
    section: str
    python: tuple[str, ...]
    sql: tuple[str, ...] = ()
    arrow: tuple[str, ...] = ()
    numba: tuple[str, ...] = ()

    def copies(self) -> tuple[str, ...]:
        """Every copy's dotted name, all representations together."""
        return self.python + self.sql + self.arrow + self.numba


#: Copies that hold several rules at once, so carry none of their names: why.
SHARED = {
    "sparktide.spark.ctiscan:scan_table": (
        "one numba pass per timeline computes the out-of-order verdict, the newest "
        "timestamp and the generated CTIs together (the recurrence has no closed form)"
    ),
}

#: Each rule (``name: rule (section)``), then its copies, one line a representation: the
#: representation (a field of :class:`RuleCopies`) and the names below ``sparktide.``.
_COPIES = """
early_verdict: early verdict (§3.2)
    python core.policy:early_verdict
    sql    spark.policy:early_verdict
    arrow  spark.onepass.policy:early_verdict
late_verdict: late verdict (§3.3)
    python core.policy:late_verdict
    sql    spark.policy:late_verdict
    arrow  spark.onepass.policy:late_verdict
late_adjusted: a late event's adjusted timestamp (§3.3)
    python core.policy:late_adjusted
    sql    spark.policy:late_adjusted
    arrow  spark.onepass.policy:late_adjusted
out_of_order_verdict: out-of-order verdict (§3.4)
    python core.policy:out_of_order_verdict
    sql    spark.policy:out_of_order_verdict
    arrow  spark.onepass.policy:out_of_order_verdict
    numba  spark.ctiscan:scan_table
newest_timestamp: newest timestamp of a timeline (§3.5)
    python core.watermark:newest_timestamp
    sql    spark.policy:newest_timestamp
    arrow  spark.onepass.policy:newest_timestamp
    numba  spark.ctiscan:scan_table
timeline_watermark: watermark of a timeline (§4.1)
    python core.watermark:timeline_watermark
    sql    spark.policy:timeline_watermark_floor spark.policy:timeline_watermark
    sql    spark.clocks:PartitionClock.timeline_watermark
    arrow  spark.onepass.policy:timeline_watermark_floor spark.onepass.policy:timeline_watermark
    arrow  spark.onepass.release:timeline_watermark_after
idle_estimate: idle estimate (§4.3)
    python core.watermark:idle_estimate
    sql    spark.clocks:PartitionClock.idle_estimate spark.clocks:idle_estimates
governing_watermark: which watermark governs (merged, partitioned, substreams) (§4.5)
    python core.clocks:Clocks.governing_watermark
    sql    spark.policy:governing_watermark spark.clocks:governing_watermark_floor
release_ready: ordered release: t ≤ W, or t < W where CTIs make it (§4.8, §7.1)
    python core.release:release_ready
    sql    spark.scopes:release_ready
    arrow  spark.onepass.release:release_ready
assign_windows: window assignment: tumbling, hopping, snapshot (§6.1, §6.4)
    python core.windows.spec:assign_windows
    sql    spark.windows.assign:assign_windows
    arrow  spark.onepass.windows:assign_windows
sliding_windows: window assignment: sliding (§6.2)
    python core.windows.sliding:sliding_windows
    sql    spark.windows.rows:sliding_windows
    numba  spark.windows.latescan:sliding_windows_scan
session_windows: window assignment: session (§6.3)
    python core.windows.session:session_windows
    sql    spark.windows.rows:session_windows
    numba  spark.windows.latescan:session_windows_scan
edge_starts: window assignment: edge events (§7.6)
    python core.windows.spec:edge_starts
    sql    spark.edges:edge_starts
group: an event's group: its grouping columns' values, computed ones evaluated (§6.13)
    python core.windows.groups:group_key
    sql    spark.aggregates:group_inputs
    arrow  spark.onepass.values:group_text
window_due: window closing (due watermark) (§6.7)
    python core.windows.spec:window_due
    sql    spark.windows.assign:window_due
generated_ctis: CTI generation (§7.3)
    python core.punctuation:generated_ctis
    sql    spark.punctuation:generated_ctis spark.punctuation:generated_ctis_ahead
    numba  spark.punctuation:generated_ctis_scan spark.ctiscan:scan_table
column_present: an input record holds a value in a column the job names (§8.4)
    python core.namedcolumns:ColumnPresence.column_present
    sql    spark.judging:column_present
    arrow  spark.onepass.tally:column_present_counts
datediff_calendar: DATEDIFF in years, quarters, months and weeks (§11.7)
    python expr.functions:datediff_calendar
    sql    spark.exprfunctions:datediff_calendar
cast: CAST and TRY_CAST (§11.12)
    python expr.casts:cast
    sql    spark.exprfunctions:cast_value
type_name: GetType: the name of a value's type (§11.12)
    python expr.casts:type_name
    sql    spark.exprfunctions:type_name
parseint: PARSEINT: JavaScript's parseInt of a text (§11.11, §11.24)
    python expr.functions:parseint
    sql    spark.exprfunctions:parseint
record_access: GetRecordPropertyValue, GetArrayElement, GetArrayLength (§11.14)
    python expr.records:record_access
    sql    spark.exprrecords:record_access_variant spark.exprrecords:record_access_length
cast_failure: a CAST that fails over a record makes it malformed (§11.13)
    python reader.fields:cast_failure_check
    sql    spark.projections:cast_failures
distinct_combinations: an aggregate over distinct (columns, timestamp) combinations (§6.12)
    python core.aggregates:distinct_combinations_add core.aggregates:distinct_combinations_value
    sql    spark.aggregates:distinct_combinations_plan
input_where: an input's own where, after its policy, reading System.Timestamp() (§11.20)
    python core.event_step:EventStep.input_where_stops
    sql    spark.projections:input_where_verdict
per_input_column: a [select] column computed per input: the event's own input's (§11.21)
    python core.outputs:per_input_column
    sql    spark.perinput:per_input_column_text
event_input: System.Input(), the union input an event comes from (§11.22)
    python core.outputs:event_input_fields
    sql    spark.projections:event_input_value
join_condition: the rest of a JOIN's ON, its WHERE over the pair: a pair matches where true (§11.8)
    python core.join:join_condition_met
    sql    spark.outputs.matches:join_condition
join_where: a JOIN with reference data: its WHERE over what it writes, no row read as null (§11.8)
    python core.join:join_where_met
    sql    spark.outputs.matches:join_where
rows_met: the table rows an event meets; in a window over the join, one event each (§11.23)
    python core.lookup:ReferenceTable.rows_met
    sql    spark.lookup:rows_met
event_tables_met: further tables an event meets by its own fields, a member of its rows (§11.8)
    python core.lookup:event_tables_met
    sql    spark.lookup:event_tables_met_rows
tables_met: a join of two streams: the rows each match meets, a record per combination (§11.26)
    python core.jointables:tables_met
    sql    spark.outputs.jointables:tables_met
windows_met: a window's records meet reference data, one per row met (§13.5)
    python core.windowtable:WindowTable.windows_met
    sql    spark.outputs.windowtable:windows_met
unmatched_left: a left join's left event no match reached, written alone at its latest time (§7.9)
    python core.join:TemporalJoin.unmatched_left
    sql    spark.outputs.join:unmatched_left
match_record: a window over a join: the record it reads of a match (§7.11)
    python core.joinwindow:match_record
    sql    spark.windows.matches:match_record
match_place: a window over a join: a match's place among its window's events (§7.11)
    python core.joinwindow:match_place
    sql    spark.windows.matches:match_place
window_event: a join of a window's records: a record as an event at the window's end (§7.12)
    python core.windowjoin:window_event
    sql    spark.outputs.join:window_event_rows
computed_time: a computed event time (timestamp_by an expression), judged as a time column's (§1.4)
    python reader.fields:computed_time
    sql    spark.inputs.sqlchecks:computed_time_checks
computed_key: a computed substream key (over an expression), judged as a key column's (§1.4)
    python reader.fields:computed_key
    sql    spark.inputs.sqlchecks:computed_key_checks
analytic_value: analytic columns: LAG, LAST, ISFIRST (§11.19)
    python core.analytic:analytic_value
    sql    spark.analytic_rules:analytic_value
    arrow  spark.onepass.release:analytic_value
analytic_expired: analytic columns: a kept event the watermark left behind (§11.19)
    python core.analytic:analytic_expired
    sql    spark.analytic_rules:analytic_expired
    arrow  spark.onepass.release:analytic_expired
analytic_aggregate: analytic columns: SUM, COUNT, AVG, MIN, MAX over LIMIT DURATION (§11.19)
    python core.analytic:analytic_aggregate
    sql    spark.analytic_aggregates:analytic_aggregate_columns
before_start_verdict: output start: an event that arrived before the read point is skipped (§12.2)
    python core.policy:before_start_verdict
    sql    spark.policy:before_start_verdict
written_from_start: output start: a result is written from the start time on (§12.3)
    python core.release:written_from_start
    sql    spark.scopes:written_from_start
order_rank: ordered aggregates: order keys, null first, ties in window order (§6.12)
    python core.ordered:order_rank
    sql    spark.ordered:order_rank
percentile_cont: PERCENTILE_CONT: interpolated at p·(n−1) (§6.12)
    python core.ordered:percentile_cont
    sql    spark.ordered:percentile_cont_plan
percentile_disc: PERCENTILE_DISC: the ceil(p·n)-th value (§6.12)
    python core.ordered:percentile_disc
    sql    spark.ordered:percentile_disc_plan
spread: STDEV, STDEVP, VAR, VARP: two-pass over the sorted values (§6.12)
    python core.ordered:spread
    sql    spark.ordered:spread_plan
match_at: row patterns: the preferred match from a start, or undecided (§11.25)
    python core.patterns:match_at
    numba  spark.matchloop:match_at_compiled
window_closed: row patterns: no row will join a start's window (§11.25)
    python core.patterns:window_closed
    numba  spark.matchloop:window_closed_compiled
measure_value: row patterns: a match's measures (§11.25)
    python core.matching:measure_value
    numba  spark.matchloop:measure_values
"""


def _parse(text: str) -> tuple[RuleCopies, ...]:
    """The rules of :data:`_COPIES`, in their order."""
    rules: list[dict[str, Any]] = []
    for line in text.strip().splitlines():
        if not line.startswith(" "):
            name, title = line.split(": ", 1)
            rule, section = title.removesuffix(")").rsplit(" (", 1)
            rules.append({"name": name, "rule": rule, "section": section})
            continue
        kind, *names = line.split()
        rules[-1][kind] = rules[-1].get(kind, ()) + tuple(f"sparktide.{n}" for n in names)
    return tuple(RuleCopies(**fields) for fields in rules)


#: Every rule with copies in more than one representation, in the order of the semantics.
RULES: tuple[RuleCopies, ...] = _parse(_COPIES)


def _cell(names: tuple[str, ...]) -> str:
    return "<br>".join(f"`{name}`" for name in names) or "—"


def rule_table() -> str:
    """The Markdown table ``docs/design.md`` shows (*One definition per rule*), with a
    note for each copy that holds several rules (:data:`SHARED`)."""
    lines = [
        "| rule ([semantics.md](semantics.md)) | name | Python reference | Spark SQL "
        "| Arrow / numpy | numba |",
        "|---|---|---|---|---|---|",
    ]
    for rule in RULES:
        cells = (rule.python, rule.sql, rule.arrow, rule.numba)
        lines.append(
            f"| {rule.rule} ({rule.section}) | `{rule.name}` | "
            + " | ".join(_cell(c) for c in cells)
            + " |"
        )
    lines.append("")
    lines.extend(f"`{name}`: {why}." for name, why in SHARED.items())
    return "\n".join(lines)
