"""The sample ``advise`` measures: the earliest well-formed records by processing time."""

from __future__ import annotations

import heapq
from typing import Any

from sparktide.core.records import InputRecord
from sparktide.job import Job

__all__ = ["sample_records"]


def sample_records(job: Job, size: int) -> tuple[list[InputRecord], int]:
    """The ``size`` earliest well-formed records of the job's input by processing time
    (processing time, arrival time, seq), and how many malformed records the input has.

    The whole input is read (one record at a time, with the reference engine's reader)
    so the sample is a contiguous stretch of time across every partition, not the first
    file's records. Records keep their input ``seq``.

    Raises
    ------
    InputError
        If the input cannot be read.
    """
    from sparktide.reader import iter_job_records

    malformed = 0

    def good() -> Any:
        nonlocal malformed
        for record in iter_job_records(job):
            if record.malformed:
                malformed += 1
            else:
                yield record

    chosen = heapq.nsmallest(size, good(), key=lambda r: (r.processing_time, r.arrival_time, r.seq))
    chosen.sort(key=lambda r: r.seq)
    return chosen, malformed
