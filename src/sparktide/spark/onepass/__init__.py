"""One pass per task: parse, judge and pre-aggregate a micro-batch with no shuffle of events.

The general plan (``docs/design.md``, *One micro-batch*) parses the batch in one stage,
shuffles every event by timeline and judges each timeline in a second stage. When the
source's partitions are the timelines and every partition's events of the batch sit in
one Spark task — a file per partition, or keyed Kafka-like input — nothing needs to move:
each task can parse its lines, run the ordering policy per partition in arrival order
and fold the admitted events into window partials itself, writing only the partials (one
row per window and group, as a parquet file beside the checkpoint, which the driver reads
with pyarrow) and sending back one summary row per partition. Parquet files are read by
the task itself (pyarrow, by path) when every value is one Spark's typed route reads the
same way (:mod:`~sparktide.spark.onepass.parquetfiles`).

Whether a batch qualifies is known only after its lines are parsed, so the pass is
*optimistic*: :func:`fused_kernel` runs it per task over the lines it vouches for
(:mod:`sparktide.spark.inputs.arrowjson`) and writes the others out as they are; the engine
takes the result only when those others all turn out malformed in the SQL route (so
they were never events) and no partition appeared in two tasks; otherwise the batch
runs the general plan. Both plans compute the same answers
(``tests/spark/test_fused.py`` holds them to the reference engine), so the choice
changes the cost only.

The modules, in the order a task's data flows through them:

- :mod:`.plan`: which jobs qualify (:func:`fusable`), the plan every task receives.
- :mod:`.schema`: the rows the kernel answers with and the files it spills.
- :mod:`.kernel`: the ``mapInArrow`` body (:func:`fused_kernel`).
- :mod:`.jsonl`, :mod:`.parquetfiles`, :mod:`.lines`: reading the task's input, into
  :mod:`.collect` (its rows as columns) through :mod:`.values` (what is folded).
- :mod:`.clocks`: each timeline's clocks at the start of the batch.
- :mod:`.policy`: the ordering policy's verdicts and the watermark (numpy).
- :mod:`.windows`: window assignment and folding into partials.
- :mod:`.releaseplan`, :mod:`.release`: a windowless job's analytic columns instead —
  its events released in order, their columns and records (the driver's side:
  :mod:`sparktide.spark.outputs.released`).
- :mod:`.tally`: per partition and per key, what the driver learns of the timelines.
- :mod:`.judge`: the steps above for the task's pieces of timelines
  (:mod:`.parallel`).
- :mod:`.merge`: merging partials (in a task, and on the driver: :func:`merge_into`).
- :mod:`.signals`: how a task gives up.
"""

from sparktide.spark.onepass import schema
from sparktide.spark.onepass.clocks import input_clock
from sparktide.spark.onepass.kernel import fused_kernel
from sparktide.spark.onepass.merge import merge_into, merge_partials, telling_keys
from sparktide.spark.onepass.plan import (
    TYPED,
    TYPED_TEXT,
    FusedPlan,
    fusable,
    fused_plan,
    typed_columns,
)
from sparktide.spark.onepass.schema import *  # noqa: F403 (the names of ``schema.__all__``)

__all__ = [
    *schema.__all__,
    "TYPED",
    "TYPED_TEXT",
    "FusedPlan",
    "fusable",
    "fused_kernel",
    "fused_plan",
    "input_clock",
    "merge_into",
    "merge_partials",
    "telling_keys",
    "typed_columns",
]
