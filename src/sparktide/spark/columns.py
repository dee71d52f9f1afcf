"""A glossary of the Spark engine's internal column names.

The short names come from the specification's notation (semantics §3–7) and reach state
files and kernels, so they stay as they are; each has a descriptive constant here that
says what it holds. The Spark SQL and the one-pass kernels take their column names from
here (``f"CASE WHEN {IS_LATE} THEN ..."``), so a grep for a constant finds every reader.

This module imports nothing: every module of :mod:`sparktide.spark` may import it.
"""

from __future__ import annotations

__all__ = [
    "ADMITTED_KINDS",
    "ARRIVAL_CLOCK_AT_START",
    "ARRIVAL_FLOOR",
    "ARRIVAL_ORDER",
    "ARRIVAL_ORDER_SQL",
    "ARRIVAL_TIME",
    "CLAMPED_TIME",
    "CLOSED_WINDOW_END",
    "CLOSED_WINDOW_START",
    "CTI_INSTANT",
    "EDGE",
    "EDGE_COVERED",
    "EDGE_ENDED",
    "EDGE_FROM_STATE",
    "EDGE_GOVERNING_AT_END",
    "EDGE_ID",
    "EDGE_OPENED_BY",
    "EDGE_OPENING",
    "EDGE_OPEN_BEFORE",
    "EDGE_TAKING_PART",
    "EDGE_TIMELINE",
    "END_TIME",
    "ERROR",
    "EVENTS_AT_START",
    "EVENT_TIME",
    "EXPLICIT_CTIS_BEFORE",
    "FILE",
    "GENERATED_CTIS_BEFORE",
    "GENERATES_CTI",
    "GOVERNING_WATERMARK",
    "IS_BEFORE_START",
    "IS_CTI",
    "IS_EARLY",
    "IS_LATE",
    "IS_OUT_OF_ORDER",
    "KERNEL_ABORT",
    "KERNEL_KEY",
    "KERNEL_LINE",
    "KERNEL_PARTIAL",
    "KERNEL_SUMMARY",
    "KERNEL_TASK",
    "KEYLESS_CTIS_BEFORE",
    "KEY_EVENTS",
    "KEY_LAST",
    "KEY_NEWEST",
    "KEY_WATERMARK",
    "LINE",
    "NEWEST_AT_START",
    "NEWEST_BEFORE",
    "NEWEST_VALUE",
    "OPEN_WINDOW_STARTS",
    "PARTITION",
    "RAW",
    "REASON",
    "RECORD",
    "RELEASE_ORDER",
    "SCOPE",
    "SCOPE_WATERMARK_END",
    "SUBSTREAM_KEY",
    "SYSTEM_TIME",
    "VERDICT",
    "WATERMARK_AFTER",
    "WATERMARK_AT_START",
    "WATERMARK_BEFORE",
    "WINDOW_STARTS",
]

# ---------------------------------------------------------------- parsed rows
FILE = "file"  # the input file the row came from (arrival order's second key)
LINE = "line"  # the row's line number in its file (arrival order's third key)
RAW = "raw"  # the line's text (a record's JSON text)
RECORD = "m"  # the record as a variant (kept for malformed records only)
ERROR = "error"  # why the line is malformed; NULL for a well-formed record
EVENT_TIME = "t"  # event timestamp: the record's time (shifted), semantics §2
ARRIVAL_TIME = "a"  # arrival time (arrival order's first key)
PARTITION = "pid"  # partition id (``<input>/<partition>`` in a union)
SUBSTREAM_KEY = "key"  # substream key (``over``), semantics §7
IS_CTI = "cti"  # the row is an explicit CTI (punctuation), not an event
END_TIME = "e"  # an interval event's end time, semantics §7

#: The order a timeline's rows are judged in: arrival time, then file and line.
ARRIVAL_ORDER = (ARRIVAL_TIME, FILE, LINE)
#: :data:`ARRIVAL_ORDER` as SQL text (``ORDER BY`` a window's rows).
ARRIVAL_ORDER_SQL = ", ".join(ARRIVAL_ORDER)

# ---------------------------------------------------------------- timeline clocks
ARRIVAL_CLOCK_AT_START = "A0"  # the timeline's arrival clock at the batch start
WATERMARK_AT_START = "W0"  # the timeline's watermark at the batch start
NEWEST_AT_START = "newest0"  # the timeline's newest timestamp at the batch start
EVENTS_AT_START = "n0"  # events judged on the timeline before the batch
# (the ``keys`` state table: each substream key's clocks after a batch)
KEY_NEWEST = "k_newest"  # the key's newest timestamp
KEY_WATERMARK = "k_watermark"  # the key's watermark
KEY_LAST = "k_last"  # the arrival time of the key's last event
KEY_EVENTS = "k_events"  # events judged on the key (generated CTIs count them)

# ---------------------------------------------------------------- the policy
IS_BEFORE_START = "is_before_start"  # skipped: arrived before the read point (§12)
IS_EARLY = "is_early"  # early verdict: t − a > E
IS_LATE = "is_late"  # late verdict: a − t > L
IS_OUT_OF_ORDER = "is_ooo"  # out-of-order verdict: g < W
CLAMPED_TIME = "g"  # the event time clamped for lateness: a − L if late, else t
ARRIVAL_FLOOR = "floor_i"  # the watermark's arrival term: max(A0, a) − L
EXPLICIT_CTIS_BEFORE = "X"  # the largest explicit CTI of the timeline before the row
KEYLESS_CTIS_BEFORE = "Y"  # substreams: the largest CTI without a key before the row
NEWEST_VALUE = "h"  # the row's value for the timeline's newest timestamp (−∞: none)
NEWEST_BEFORE = "newest_x"  # the timeline's newest timestamp before the row
CTI_INSTANT = "cti_w"  # the CTI at this row: an explicit one's time, or generated
GENERATES_CTI = "gen"  # a generated CTI follows this event
GENERATED_CTIS_BEFORE = "C"  # the largest generated CTI of the timeline before the row
WATERMARK_BEFORE = "W"  # the timeline's watermark before the row
WATERMARK_AFTER = "W_after"  # merged: a partition's watermark just after the row
SYSTEM_TIME = "s"  # system timestamp: the event time after the policy
VERDICT = "verdict"  # accepted, adjusted, dropped, dead_lettered, malformed, punctuation
REASON = "reason"  # why dropped or dead-lettered: early, late, out_of_order...
SCOPE = "scope"  # the unit outputs are per: the key, the partition, or "" (the job)
GOVERNING_WATERMARK = "G"  # the watermark governing the row's scope within the batch
#: The order events are released in: system timestamp, then arrival order.
RELEASE_ORDER = (SYSTEM_TIME, *ARRIVAL_ORDER)

# ---------------------------------------------------------------- windows
WINDOW_STARTS = "starts"  # the starts of every window an admitted row belongs to
OPEN_WINDOW_STARTS = "open_starts"  # those the governing watermark has not closed
CLOSED_WINDOW_START = "closed_start"  # the last window of a row that came too late
CLOSED_WINDOW_END = "closed_stop"  # that window's end
SCOPE_WATERMARK_END = "governing"  # the scope's governing watermark at the batch end

# ---------------------------------------------------------------- edge events (semantics §7.6)
EDGE = "edge"  # an edge row's kind: "start" or "end" (NULL: not an edge)
EDGE_ID = "eid"  # the edge event's id (a start and its end share it)
EDGE_TIMELINE = "tl"  # the timeline an edge is paired on
EDGE_COVERED = "cov"  # the watermark up to which an open event joined closing windows
EDGE_GOVERNING_AT_END = "X"  # an ended event: the governing watermark when its end came
EDGE_FROM_STATE = "from_state"  # the row is an open event kept in state, not of the batch
EDGE_TAKING_PART = "k_eff"  # the kind of an edge that takes part (admitted, or in state)
EDGE_OPEN_BEFORE = "prev_open"  # the edge's id was open before the row
EDGE_OPENING = "opening"  # a start edge whose id was not open: it opens an event
EDGE_OPENED_BY = "o"  # an end edge: the open event it ends (a struct)
EDGE_ENDED = "ended"  # an end edge of the id follows
# (``g0``, ``g1``... hold the group-by values as JSON text; ``j0``... a join's keys)

# ---------------------------------------------------------------- one-pass kernel rows
# (the ``kind`` of a row the kernel reports; :mod:`sparktide.spark.onepass.schema` reads them)
KERNEL_PARTIAL = "p"  # a window partial (per scope, group and window of a task)
KERNEL_SUMMARY = "s"  # one per partition, the clocks' and counters' figures
KERNEL_TASK = "t"  # one per task, the lines it could not judge, partials written
KERNEL_LINE = "l"  # the lines a task could not vouch for
KERNEL_ABORT = "x"  # the task gave up, the batch takes the general plan
KERNEL_KEY = "k"  # substreams, one per key of the batch
KERNEL_KEPT = "e"  # analytic columns' kept events (a windowless job's tasks)

#: The verdicts of events that go on to windows, release or joins.
ADMITTED_KINDS = ("accepted", "adjusted")
