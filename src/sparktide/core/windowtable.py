"""A window's records meeting reference data (semantics §13.5): Stream Analytics' JOIN
of a windowed step with a table (``WITH a AS (SELECT DeviceId, AVG(Temp) AS t ... GROUP
BY DeviceId, TumblingWindow(minute, 1)) SELECT ... FROM a JOIN Limits l ON a.DeviceId =
l.DeviceId WHERE a.t > l.Max``).

Each record that passes ``having`` meets the table's rows with equal ``on`` values (its
columns and the table's), one record per row in the table's order (``type = "left"``: a
record that meets none once, the row null); ``[join] where`` then filters, and
``[select]`` reads ``<window>.<column>`` and ``<table>.<field>``.
"""

from __future__ import annotations

from typing import Any

from sparktide.core.join import join_where_met
from sparktide.core.lookup import ReferenceTable
from sparktide.core.outputs import project
from sparktide.core.records import jsonable
from sparktide.job import Job
from sparktide.time import parse_instant

__all__ = ["WindowTable"]


class WindowTable:
    """The table a job's window records meet (the table is read now).

    Parameters
    ----------
    job
        The job: its ``[window]`` (named as ``[join] left``), ``[join]`` and table.
    """

    def __init__(self, job: Job) -> None:
        assert job.window is not None and job.join is not None
        self.job = job
        self.join = job.join
        self.table = ReferenceTable(job)

    def windows_met(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """The records a window's ``record`` (after ``having``) is written as: one per
        row it meets that ``[join] where`` keeps."""
        job, join = self.job, self.join
        assert job.window is not None
        own = job.window.own_fields
        end = parse_instant(record[own["window_end"]])
        fields = {k: v for k, v in record.items() if k not in ("type", own["emitted_at"])}
        out = []
        for row in self.table.rows_met(fields, end):
            if join_where_met(join, fields, row, end):
                out.append(self._written(record, fields, row))
        return out

    def _written(
        self, record: dict[str, Any], fields: dict[str, Any], row: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The record written: the window's, the row under the table's name; or
        ``[select]``'s columns between the window's bounds and ``emitted_at``."""
        job, join = self.job, self.join
        assert job.window is not None
        own, written = job.window.own_fields, job.window_fields
        emitted = record.get(own["emitted_at"])
        if not job.select:
            kept = {k: v for k, v in record.items() if k != own["emitted_at"]}
            return {**kept, join.right: jsonable(row), own["emitted_at"]: emitted}

        def lookup(key: str) -> Any:
            side, name = key.split(".", 1)
            return fields.get(name) if side == join.left else (row or {}).get(name)

        return {
            "type": "window",
            written["window_start"]: record[own["window_start"]],
            written["window_end"]: record[own["window_end"]],
            **project(job, lookup),
            written["emitted_at"]: emitted,
        }
