"""The counters of a reference run: per partition, summed for the job (semantics §8)."""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["VERDICT_COUNTERS", "Counts", "summary"]

#: The counters of the ordering policy's verdicts, first in the ``metrics`` record.
VERDICT_COUNTERS = ("input", "admitted", "early", "late", "out_of_order", "adjusted")


class Counts:
    """Counters per partition; the job's totals are their sums.

    Attributes
    ----------
    by_partition
        The counters of each partition that counted anything.
    malformed
        Malformed records (they belong to no partition).
    """

    def __init__(self) -> None:
        self.by_partition: dict[Any, Counter[str]] = {}
        self.malformed = 0

    def add(self, partition: Any, name: str, amount: int = 1) -> None:
        """Count ``amount`` more of ``name`` for ``partition``."""
        counter = self.by_partition.get(partition)
        if counter is None:
            counter = self.by_partition[partition] = Counter()
        counter[name] += amount

    def total(self) -> Counter[str]:
        """The job's totals: the sums over partitions."""
        out: Counter[str] = Counter()
        for counter in self.by_partition.values():
            out.update(counter)
        return out


def summary(counter: Counter[str]) -> dict[str, Any]:
    """The counts of a ``metrics`` record (the job's, or one partition's) from ``counter``."""
    dropped = {k.split(".", 1)[1]: v for k, v in counter.items() if k.startswith("dropped.")}
    dead = {k.split(".", 1)[1]: v for k, v in counter.items() if k.startswith("dead_lettered.")}
    return {
        **{name: counter[name] for name in VERDICT_COUNTERS},
        "dropped": dict(sorted(dropped.items())),
        "dead_lettered": dict(sorted(dead.items())),
        "punctuations": counter["punctuations"],
        "ctis_generated": counter["ctis_generated"],
    }
