"""The ordered and statistical aggregates (semantics §6.12): ``topone``, ``collecttop``,
``topn``, ``percentile_cont``, ``percentile_disc``, ``stdev``, ``stdevp``, ``var``, ``varp``.

These are the definitions; the Spark engine restates them in SQL
(:mod:`sparktide.spark.ordered`) with the same double operations in the same order,
so the two engines' values are equal bit for bit:

- an order key is ``(class, number, text)``: null (or missing) first, as Stream Analytics
  treats null as the smallest value, then numbers by their double, then text by code
  point, then anything else (all equal); rows with equal keys keep window order
  ``(timestamp, arrival, seq)``, whatever the direction;
- a sum of doubles is a left fold over the values sorted ascending;
- variance is the two-pass formula: the mean, then the sum of squared differences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "order_rank",
    "ordered_values",
    "percentile_cont",
    "percentile_disc",
    "ranked",
    "spread",
]

OrderRank = tuple[int, float, str]


def order_rank(value: Any) -> OrderRank:
    """The order key of one value: ``(class, number, text)``, null first."""
    if value is None:
        return (0, 0.0, "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (1, float(value), "")
    if isinstance(value, str):
        return (2, 0.0, value)
    return (3, 0.0, "")


def ordered_values(
    rows: Sequence[tuple[Any, tuple[OrderRank, ...], Any]], descending: Sequence[bool]
) -> list[tuple[tuple[OrderRank, ...], Any]]:
    """``rows`` — (window order, order keys, value) — in the aggregate's order: each
    key ascending or descending, ties in window order. Returns (keys, value) pairs."""
    items = sorted(rows, key=lambda row: row[0])
    for k in range(len(descending) - 1, -1, -1):  # stable sorts, last key first
        items.sort(key=lambda row, k=k: row[1][k], reverse=descending[k])
    return [(keys, value) for _, keys, value in items]


def ranked(items: list[tuple[tuple[OrderRank, ...], Any]], n: int) -> list[dict[str, Any]]:
    """``collecttop``'s records: the first ``n`` items as ``{"rank": r, "value": v}``,
    ``r`` one more than the number of items ordered strictly before (ties share a
    rank, as SQL's ``RANK``)."""
    out: list[dict[str, Any]] = []
    rank = 0
    for i, (keys, value) in enumerate(items[:n]):
        if i == 0 or keys != items[i - 1][0]:
            rank = i + 1
        out.append({"rank": rank, "value": value})
    return out


def _numbers(values: Sequence[Any]) -> list[Any]:
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _fold(values: Sequence[float]) -> float:
    total = 0.0
    for v in values:
        total = total + v
    return total


def spread(function: str, values: Sequence[Any]) -> float | None:
    """``stdev``, ``stdevp``, ``var`` or ``varp`` of the numbers among ``values``: null
    over none, and for the sample forms over one; null beyond a double's range."""
    xs = sorted(float(v) for v in _numbers(values))
    n = len(xs)
    sample = function in ("stdev", "var")
    if n == 0 or (sample and n == 1):
        return None
    mean = _fold(xs) / n
    squares = 0.0
    for x in xs:
        squares = squares + (x - mean) * (x - mean)
    variance = squares / (n - 1 if sample else n)
    result = math.sqrt(variance) if function in ("stdev", "stdevp") else variance
    return result if math.isfinite(result) else None


def percentile_cont(values: Sequence[Any], fraction: float, descending: bool) -> float | None:
    """The interpolated percentile of the numbers among ``values`` (null over none):
    at position ``p·(n−1)`` of the sorted values, ``(c − rn)·v[f] + (rn − f)·v[c]``
    between its floor ``f`` and ceiling ``c``."""
    xs = sorted((float(v) for v in _numbers(values)), reverse=descending)
    if not xs:
        return None
    rn = fraction * (len(xs) - 1)
    f, c = math.floor(rn), math.ceil(rn)
    if f == c:
        return xs[f]
    result = (c - rn) * xs[f] + (rn - f) * xs[c]
    return result if math.isfinite(result) else None


def percentile_disc(rows: Sequence[tuple[Any, Any]], fraction: float, descending: bool) -> Any:
    """The first value (in the order given) whose cumulative distribution reaches the
    fraction: the ``max(ceil(p·n), 1)``-th of the numbers among ``rows`` (window
    order, value), as written (an integer stays an integer)."""
    numbers = [(o, (order_rank(v),), v) for o, v in rows if _numbers([v])]
    if not numbers:
        return None
    items = ordered_values(numbers, (descending,))
    index = max(math.ceil(fraction * len(items)), 1)
    return items[index - 1][1]
