"""The outputs of a query's statements: each statement's ``INTO``, bound by the job file,
and distinct from every other statement's.

``INTO TollCounts`` reads the job file's ``[outputs.TollCounts]`` (a plain job file's
``[output]``, whatever the name). Each statement is a job with an output of its own: two
statements may not write to the same output, nor share a folder (outputs, dead letters,
metrics, checkpoint).
"""

from __future__ import annotations

from typing import Any

from sparktide.errors import ConfigError
from sparktide.job import Job
from sparktide.query.ast import Query, Select
from sparktide.query.bind import Bindings
from sparktide.query.refusal import Refuse

__all__ = ["OutputClaims", "output_table"]


def output_table(select: Select, bindings: Bindings, refuse: Refuse) -> tuple[str, dict[str, Any]]:
    """The job-file key and table of the output ``select`` writes to (``INTO``)."""
    found = bindings.output_table(select.into)
    if found is None:
        names = ", ".join(bindings.output_names())
        if select.into is None:
            raise refuse(
                select.pos,
                f"this SELECT has no INTO and the job file binds several outputs ({names})",
            )
        assert select.into_pos is not None
        raise refuse(
            select.into_pos,
            f"no output named {select.into!r} in the job file (outputs bound: {names}); "
            f"add an [outputs.{select.into}] table",
        )
    output_key = found[0]
    if not bindings.has_job_file:  # (each name its placeholder folder)
        output_key = f"output.{(select.into or '').casefold()}"
    return output_key, found[1]


class OutputClaims:
    """The outputs and folders the statements of ``query`` have claimed so far."""

    def __init__(self, query: Query) -> None:
        self.query = query
        self.refuse = Refuse(query.source)
        self.keys: dict[str, int] = {}
        self.folders: dict[str, tuple[int, str]] = {}

    def claim(self, index: int, output_key: str, job: Job) -> None:
        """Claim statement ``index``'s output (bound at ``output_key``) and its folders.

        Raises
        ------
        QueryError
            If an earlier statement writes to the same output.
        ConfigError
            If an earlier statement's job uses one of the folders.
        """
        select = self.query.statements[index].selects[0]
        earlier = self.keys.get(output_key)
        if earlier is not None:
            first = self.query.statements[earlier].selects[0].pos
            target = f"INTO {select.into}" if select.into else "this SELECT (no INTO)"
            raise self.refuse(
                select.into_pos or select.pos,
                f"{target} writes to the output of the statement at {first}: each statement "
                "is a job with an output of its own; bind another output, or UNION the two "
                "SELECTs",
            )
        self.keys[output_key] = index
        for key in ("path", "dead_letter", "metrics", "checkpoint"):
            folder = getattr(job.output, key)
            if folder is None:
                continue
            where = f"{output_key}.{key}"
            if folder in self.folders and self.folders[folder][0] != index:
                raise ConfigError(
                    where,
                    f"is also {self.folders[folder][1]}: each statement's job needs folders of "
                    "its own (outputs, dead letters, metrics, checkpoint)",
                )
            self.folders.setdefault(folder, (index, where))
