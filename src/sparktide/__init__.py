"""sparktide: the event-time model of Stream Analytics and StreamInsight on Spark.

Throughout the code, "semantics §N" cites section N of ``docs/semantics.md``, the
specification both engines follow; ``sparktide.rules`` lists where each of its rules
is written in each representation.
"""
