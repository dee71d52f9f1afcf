"""What a front end makes of a query or pipeline: one job per statement.

A Stream Analytics query runs every ``SELECT ... INTO`` statement, each writing to its
own output: its :class:`Translation` holds one :class:`StatementJob` per statement, in
text order (an Atlas pipeline has one). :func:`build_job` turns the tables a front end
assembled into the :class:`~sparktide.job.Job`, refusing at the statement's place a rule
of the job model that the query breaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparktide.errors import ConfigError, QueryError
from sparktide.job import Job
from sparktide.query.ast import Pos

__all__ = ["StatementJob", "Translation", "build_job"]


@dataclass(frozen=True)
class StatementJob:
    """The job one statement of a query (or a whole pipeline) becomes.

    Attributes
    ----------
    job
        The job.
    notes
        What a reader of the job should know about the mapping (``System.Timestamp() AS
        WindowEnd`` is the window records' ``window_end`` ...), one sentence each.
    output
        The output the statement writes to, as the query names it (``INTO TollCounts``; a
        pipeline's sink), or ``None`` when it names none.
    line, column
        Where the statement starts in the text (1-based).
    """

    job: Job
    notes: tuple[str, ...] = ()
    output: str | None = None
    line: int = 1
    column: int = 1


@dataclass(frozen=True)
class Translation:
    """A translated query or pipeline: one job per statement.

    Stream Analytics runs every ``SELECT ... INTO`` statement of a query, each writing to
    its own output; the translation has one job per statement, in text order (a
    pipeline has one). ``sparktide translate`` prints them all, ``simulate --query`` and
    ``run --query --once`` run them one after the other.

    Attributes
    ----------
    statements
        The statements' jobs, in text order (at least one).
    source
        The name of the query or pipeline text.
    """

    statements: tuple[StatementJob, ...]
    source: str

    @property
    def jobs(self) -> tuple[Job, ...]:
        """Every statement's job, in text order."""
        return tuple(s.job for s in self.statements)

    @property
    def job(self) -> Job:
        """The job of a query with one statement.

        Raises
        ------
        QueryError
            At the second statement, when there are several: read :attr:`statements`.
        """
        return self._single().job

    @property
    def notes(self) -> tuple[str, ...]:
        """The notes of a query with one statement (see :attr:`job`)."""
        return self._single().notes

    def _single(self) -> StatementJob:
        if len(self.statements) != 1:
            second = self.statements[1]
            raise QueryError(
                self.source,
                second.line,
                second.column,
                f"the query has {len(self.statements)} statements, each a job of its own: "
                "take them from Translation.statements",
            )
        return self.statements[0]


def build_job(data: dict[str, Any], base_dir: Path | None, refuse: Any, at: Pos) -> Job:
    """The job of the tables ``data``; a rule of the job model broken by what the query
    says is refused at ``at`` (the job file's own mistakes are found earlier)."""
    try:
        return Job.from_dict(data, base_dir=base_dir)
    except ConfigError as exc:
        raise refuse(at, f"the job this becomes is not valid: {exc}") from None
