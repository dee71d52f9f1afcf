"""The row-pattern matcher of ``[match]`` (semantics §11.25): one start row, the rows
after it, the pattern's program (:func:`sparktide.job.pattern.compile_pattern`).

:func:`match_at` is written for both engines: plain Python over sequences here, and
compiled by numba over numpy arrays in the Spark engine
(:mod:`sparktide.spark.matchloop`), so it uses only integers, indexing and loops.

It searches depth first, in the pattern's order of preference (greedy quantifiers,
alternatives left to right): the first path that reaches ``MATCH`` having read at least
one row is the match. A path that wants a row after the last one there is *while the
window is open* hits the end: more rows may still come, so neither that path's failure
nor a later path's success is known yet, and the start is undecided (``PENDING``) — the
engines try it again when rows arrive, and decide it once its window closes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MATCHED", "NO_MATCH", "PENDING", "match_at", "window_closed"]

NO_MATCH, MATCHED, PENDING = 0, 1, 2

_ROW, _SPLIT, _JUMP, _MATCH = 0, 1, 2, 3


def match_at(
    ops: Any,
    first: Any,
    second: Any,
    masks: Any,
    start: int,
    stop: int,
    closed: bool,
    assigned: Any,
    stack: Any,
    visited: Any,
    stamp: int,
) -> tuple[int, int]:
    """``(outcome, end)`` of the pattern from row ``start``: ``MATCHED`` (rows ``start``
    to ``end - 1``, each row's variable in ``assigned[row - start]``, ``-1`` for ``.``),
    ``NO_MATCH`` or ``PENDING`` (``end`` is then ``start``).

    ``masks[row]`` has bit ``v`` set when the row meets variable ``v``'s condition; the
    window is rows ``start`` to ``stop - 1`` (the rows within the limit duration of
    ``start``), and ``closed`` says no row will join it. ``assigned``, ``stack`` and
    ``visited`` are work space: at least ``stop - start``, ``2 * (len(ops) * (stop -
    start + 1) + 1)`` and ``len(ops) * (stop - start + 1)`` integers; ``visited`` holds
    no ``stamp`` (a number of this call's own) when called, so that callers reuse it
    without clearing it.

    A state (instruction, row) reached a second time is not searched again: the first
    time, everything after it was searched and failed (a success ends the search; no
    path returns to a state without reading a row, as no unbounded repeat can match
    nothing). So the search takes at most one step per state, where plain backtracking
    can take exponentially many (``(A+)+ B``)."""
    width = stop - start + 1
    stack[0], stack[1] = 0, start
    depth = 2
    hit_end = False
    while depth > 0:
        depth -= 2
        pc, row = stack[depth], stack[depth + 1]
        while True:
            cell = pc * width + row - start
            if visited[cell] == stamp:
                break  # (searched already, and failed)
            visited[cell] = stamp
            op = ops[pc]
            if op == _ROW:
                if row >= stop:
                    if not closed:
                        hit_end = True
                    break
                variable = first[pc]
                if variable >= 0 and (masks[row] >> variable) & 1 == 0:
                    break
                assigned[row - start] = variable
                row += 1
                pc += 1
            elif op == _SPLIT:
                if depth + 2 > len(stack):
                    return PENDING, start  # (beyond the work space: never for its size)
                stack[depth], stack[depth + 1] = second[pc], row
                depth += 2
                pc = first[pc]
            elif op == _JUMP:
                pc = first[pc]
            else:  # MATCH
                if row == start:
                    break  # (no row read: not a match; the next path is tried)
                if hit_end:
                    return PENDING, start
                return MATCHED, row
    if hit_end:
        return PENDING, start
    return NO_MATCH, start


def window_closed(final: bool, beyond: bool, watermark: int, last: int) -> bool:
    """Whether no row will join a start's window (its rows up to the instant ``last``,
    its time plus the limit duration): at the flush (``final``), once a later row lies
    beyond ``last`` (``beyond``: rows come in release order), or once the scope's
    ``watermark`` has passed ``last`` (every row released later is later still)."""
    return final or beyond or watermark > last
