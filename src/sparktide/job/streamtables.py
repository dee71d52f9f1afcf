"""Reference data met by a join of two streams (``[[join.then]]`` whose ``left`` is one of
the two streams; semantics §11.26): what the job model accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktide.errors import ConfigError
from sparktide.expr import ref_nodes

if TYPE_CHECKING:
    from sparktide.job.join import Join
    from sparktide.job.model import Job

__all__ = ["check_stream_tables"]


def check_stream_tables(job: Job, join: Join) -> None:
    """Refuse ``[[join.then]]`` entries of a join of two streams that do not each meet
    one more table by the fields of one of the two streams, every table once, each
    ``condition`` reading its own table's fields; and what such a join cannot do yet
    (a window over its matches or joined with them).

    Raises
    ------
    ConfigError
        Naming the entry's key (``join.then[0].left``) or the unjoined table.
    """
    tables = [name for name, _ in job.references]
    held: list[str] = []
    for step in join.then:
        if step.left not in (join.left, join.right):
            raise ConfigError(
                f"{step.key}.left",
                f"must be one of the joined streams ({join.left} or {join.right}), whose "
                f"fields meet the table: got {step.left!r} (a table met by another "
                "table's rows is not joined to a join of two streams yet)",
            )
        if step.right not in tables or step.right in held:
            unused = [t for t in tables if t not in held]
            raise ConfigError(
                f"{step.key}.right",
                f"must be reference data not joined yet ({', '.join(unused) or 'none left'}), "
                f"got {step.right!r}",
            )
        held.append(step.right)
        expr = step.condition_expression
        for ref in ref_nodes(expr) if expr is not None else ():
            if ref.input != step.right:
                raise ConfigError(
                    f"{step.key}.condition",
                    f"{ref.key!r}: reads the table's own fields as {step.right}.<field> "
                    "(a condition over the match and the row is join.where)",
                )
    unjoined = [t for t in tables if t not in held]
    if unjoined:
        raise ConfigError(
            f"inputs.{unjoined[0]}.reference",
            f"reference data is joined: add a [[join.then]] with right = {unjoined[0]!r} and "
            f"left = {join.left!r} or {join.right!r} (the stream whose fields meet it)",
        )
    if job.window is not None:
        raise ConfigError(
            "window",
            "a window over a join of two streams that meets reference data is not "
            "supported yet ([[join.then]]): aggregate the join's matches without tables",
        )
