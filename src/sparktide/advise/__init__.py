"""``sparktide advise``: measure an input's lateness and disorder, price candidate
ordering policies on it, and recommend one.

Three measurements of a sample of the job's real input (read by the reference engine's
reader):

1. **Lateness** = arrival time − event time, per partition and overall. Negative
   lateness is an *early* event (event time ahead of its arrival).
2. **Disorder**: for each event, how far its event time is behind the newest event time
   seen before it on its timeline (partition, or substream key), in the order the
   engine judges events (processing time, arrival time, seq); 0 when in order. Events
   the job's ``early_arrival`` drops are left out: they never move a timeline.
3. **Candidates**: for every pair of ``late_arrival`` (L) and ``out_of_order`` (O) in
   :data:`LATE_ARRIVAL_GRID` × :data:`OUT_OF_ORDER_GRID` plus the job's own values, the
   job (its window removed) is run through the reference engine over the sample, and
   the verdicts are counted: events **affected** are those adjusted, dropped as late or
   out of order, or dead-lettered as out of order (early events do not depend on L and
   O and are reported apart). The **output delay** of an event is its *hold time*: the
   processing time at which ordered output released it minus the processing time at
   which the engine saw it. Events still held when the sample ends are not counted in
   the delay figures (they are reported as ``held``).

The recommendation is the candidate with the smallest p99 hold time (then mean hold
time, then the smaller ``max(L, O)``, L, O) whose affected share is at most the target.

Percentiles are nearest-rank: the smallest sample value with at least that share of the
values at or below it, so they are always sample values, in integer microseconds.

The package, in the order advice is made: :mod:`~sparktide.advise.sample` (the sample),
:mod:`~sparktide.advise.measure` (lateness and disorder),
:mod:`~sparktide.advise.candidates` (pricing each setting, the choice),
:mod:`~sparktide.advise.advice` (the advice assembled, its records), and
:mod:`~sparktide.advise.shares` (percentiles and shares).
"""

from sparktide.advise.advice import Advice, advise
from sparktide.advise.candidates import LATE_ARRIVAL_GRID, OUT_OF_ORDER_GRID, Candidate, evaluate
from sparktide.advise.measure import Distribution, disorder
from sparktide.advise.sample import sample_records
from sparktide.advise.shares import PERCENTILES, parse_target, percentile

__all__ = [
    "LATE_ARRIVAL_GRID",
    "OUT_OF_ORDER_GRID",
    "PERCENTILES",
    "Advice",
    "Candidate",
    "Distribution",
    "advise",
    "disorder",
    "evaluate",
    "parse_target",
    "percentile",
    "sample_records",
]
