"""Timeline modes: which unit owns a watermark (semantics §4, §7).

A job's events are judged on timelines. Three layouts exist, and each stage asks the
mode the same few questions (whose watermark governs, which column names a timeline,
whether partitions keep watermarks of their own): the answers live here, once.
"""

from __future__ import annotations

from enum import Enum

from sparktide.job import Job
from sparktide.spark.columns import (
    PARTITION,
)

__all__ = ["Timeline"]


class Timeline(Enum):
    """How a job's events are split into timelines.

    ``MERGED``: one timeline per partition, and one job watermark, the minimum over
    partitions, governs every output. ``PARTITIONED``: each partition's own watermark
    governs its outputs. ``SUBSTREAMS``: one timeline per substream key, with the whole
    input's arrival clock.
    """

    MERGED = "merged"
    PARTITIONED = "partitioned"
    SUBSTREAMS = "substreams"

    @classmethod
    def of(cls, job: Job) -> Timeline:
        """The mode of ``job``: substreams when the source names ``over``, partitioned
        when the ordering says so, merged otherwise."""
        if job.source.over is not None:
            return cls.SUBSTREAMS
        return cls.PARTITIONED if job.ordering.partitioned else cls.MERGED

    @property
    def by_key(self) -> bool:
        """Whether timelines are substream keys (their watermarks live in the keys'
        state, and the input's arrival clock is the maximum over partitions)."""
        return self is Timeline.SUBSTREAMS

    @property
    def partition_watermarks(self) -> bool:
        """Whether each partition keeps a watermark of its own in the clock state."""
        return self is not Timeline.SUBSTREAMS

    @property
    def job_watermark(self) -> bool:
        """Whether one job watermark (the minimum over partitions) governs outputs."""
        return self is Timeline.MERGED

    @property
    def column(self) -> str:
        """The column naming a row's timeline: the substream ``key`` or the ``pid``."""
        return "key" if self.by_key else PARTITION

    @property
    def windows_per_timeline(self) -> bool:
        """Whether open windows are kept per timeline (partition or key) rather than for
        the whole job (then one task's windows may meet another's)."""
        return self is not Timeline.MERGED
