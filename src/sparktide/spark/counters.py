"""Accounting (semantics §8): the counters every judged event moves, per partition.

A batch's summary has one row per partition, with one column per counter
(:func:`counter_column` names them); the clock state keeps the cumulative counts,
and the metrics record shows them grouped (:func:`grouped`).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from sparktide.spark.columns import (
    CTI_INSTANT,
    ERROR,
    IS_CTI,
    IS_EARLY,
    IS_LATE,
    IS_OUT_OF_ORDER,
    PARTITION,
    REASON,
    VERDICT,
    WINDOW_STARTS,
)
from sparktide.spark.onepass import COUNTED, counter_column

__all__ = ["COUNTERS", "add_counters", "counter_aggregates", "grouped", "summed"]

#: Every counter, in the order the metrics record lists them.
COUNTERS = (
    *COUNTED,  # (the one-pass kernel counts these; the rest are 0 there)
    "dropped.window_closed",
    "dropped.filtered",
    "dropped.empty_edge",
    "dropped.no_elements",
    "dropped.no_match",
    "dead_lettered.out_of_order",
    "dead_lettered.window_closed",
    "dead_lettered.unmatched_edge",
    "dead_lettered.duplicate_edge",
    "punctuations",
    "ctis_generated",
    "skipped_before_start",
)

#: ``(counter, condition on a judged row)``: what each counter counts.
#: SQL: the row is an admitted event.
_ADMITTED = f"{VERDICT} IN ('accepted', 'adjusted')"
_CONDITIONS = (
    ("input", f"{ERROR} IS NULL AND NOT {IS_CTI} AND {VERDICT} <> 'skipped'"),
    ("admitted", _ADMITTED),
    ("early", IS_EARLY),
    ("late", IS_LATE),
    ("out_of_order", IS_OUT_OF_ORDER),
    ("adjusted", f"{VERDICT} = 'adjusted'"),
    ("in_no_window", f"{_ADMITTED} AND size({WINDOW_STARTS}) = 0"),
    *(
        (f"dropped.{reason}", f"{VERDICT} = 'dropped' AND {REASON} = '{reason}'")
        for reason in (
            "early",
            "late",
            "out_of_order",
            "window_closed",
            "filtered",
            "empty_edge",
            "no_elements",
            "no_match",
        )
    ),
    *(
        (f"dead_lettered.{reason}", f"{VERDICT} = 'dead_lettered' AND {REASON} = '{reason}'")
        for reason in ("unmatched_edge", "duplicate_edge", "out_of_order", "window_closed")
    ),
    ("punctuations", IS_CTI),
    ("ctis_generated", f"NOT {IS_CTI} AND {CTI_INSTANT} IS NOT NULL"),
    ("skipped_before_start", f"{ERROR} IS NULL AND {VERDICT} = 'skipped'"),  # (§12)
)


def counter_aggregates() -> list[Column]:
    """The aggregates counting each counter over a partition's judged rows."""
    return [
        F.count(F.when(F.expr(condition), 1)).alias(counter_column(name))
        for name, condition in _CONDITIONS
    ]


def add_counters(counters: dict[str, dict[str, int]], summary: list[Any]) -> None:
    """Add a batch's per-partition counts (``summary``) to the cumulative ``counters``."""
    for row in summary:
        if row[PARTITION] is None:  # malformed rows only (counted apart)
            continue
        entry = counters.setdefault(row[PARTITION], {})
        for name in COUNTERS:
            entry[name] = entry.get(name, 0) + (row[counter_column(name)] or 0)


def summed(summary: list[Any]) -> dict[str, int]:
    """A batch's counters summed over its partitions."""
    totals: dict[str, int] = {}
    for row in summary:
        if row[PARTITION] is None:
            continue
        for name in COUNTERS:
            totals[name] = totals.get(name, 0) + (row[counter_column(name)] or 0)
    return totals


def grouped(counter: dict[str, int]) -> dict[str, Any]:
    """Counters as the metrics record shows them (drops and dead letters by reason)."""
    dropped = {k.split(".", 1)[1]: v for k, v in counter.items() if k.startswith("dropped.") and v}
    dead = {
        k.split(".", 1)[1]: v for k, v in counter.items() if k.startswith("dead_lettered.") and v
    }
    return {
        "input": counter.get("input", 0),
        "admitted": counter.get("admitted", 0),
        "early": counter.get("early", 0),
        "late": counter.get("late", 0),
        "out_of_order": counter.get("out_of_order", 0),
        "adjusted": counter.get("adjusted", 0),
        "dropped": dict(sorted(dropped.items())),
        "dead_lettered": dict(sorted(dead.items())),
        "punctuations": counter.get("punctuations", 0),
        "ctis_generated": counter.get("ctis_generated", 0),
    }
