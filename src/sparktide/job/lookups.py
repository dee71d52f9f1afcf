"""What the job model accepts of reference data (semantics §11.8): a stream met by a
table (:func:`check_lookup`), a join of two streams meeting tables (:func:`check_stream_tables`,
§11.26), and a window's records meeting one (:func:`check_window_table`, §13.5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktide.errors import ConfigError
from sparktide.expr import ref_nodes
from sparktide.job.join import check_table_joins, claim_table

if TYPE_CHECKING:
    from sparktide.job.join import Join
    from sparktide.job.model import Job

__all__ = ["check_lookup", "check_stream_tables", "check_window_table"]


def check_lookup(job: Job, join: Join) -> None:
    """A join with reference data: one stream input (``left``) and one table (``right``)."""
    names = [name for name, _ in job.inputs]
    tables = [name for name, _ in job.references]
    if names != [join.left] or join.right not in tables:
        raise ConfigError(
            "join",
            f"a join with reference data reads one stream and one table: the job must have "
            f"[inputs.{join.left}] and [inputs.{join.right}] with reference = true, got "
            f"streams {names} and reference data {tables}",
        )
    check_table_joins(join, tables)
    if join.where is not None:  # (a further table's row is a member of join.right's)
        for ref in ref_nodes(join.where_expression):  # type: ignore[arg-type]
            if ref.input in join.stream_tables:
                raise ConfigError(
                    "join.where",
                    f"{ref.key!r}: a table an event meets by its own fields is a member "
                    f"of {join.right}'s row here: read it as "
                    f"GETRECORDPROPERTYVALUE({join.right}.{ref.input}, {ref.name!r})",
                )
    if join.between is not None:
        raise ConfigError(
            "join.between",
            f"{join.right!r} is reference data, which has no time: leave between out",
        )
    if job.window is not None and join.where is not None:
        raise ConfigError(
            "join.where",
            "filters the records a join with reference data releases; with a [window] the "
            "events meet the table before [filter], which reads each match: write the "
            "condition in [filter] where (the row's fields as GetRecordPropertyValue("
            f"{join.right}, 'field'))",
        )
    if job.source.intervals:
        raise ConfigError(
            "join", "joins point events (no source.end_time or source.duration) for now"
        )


def check_stream_tables(job: Job, join: Join) -> None:
    """Refuse ``[[join.then]]`` entries of a join of two streams that do not each meet
    one more table by the fields of one of the two streams or of an earlier entry's
    table, every table once, each ``condition`` reading its own table's fields; and
    what such a join cannot do yet (a join of a window's records).

    Raises
    ------
    ConfigError
        Naming the entry's key (``join.then[0].left``) or the unjoined table.
    """
    tables = [name for name, _ in job.references]
    held: list[str] = []
    for step in join.then:
        if step.left not in (join.left, join.right, *held):
            raise ConfigError(
                f"{step.key}.left",
                f"must be one of the joined streams ({join.left} or {join.right}) or a "
                f"table met before it ({', '.join(held) or 'none yet'}), whose fields meet "
                f"the table: got {step.left!r}",
            )
        claim_table(step, tables, held)
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
            f"left = {join.left!r} or {join.right!r} (the stream whose fields meet it) or a "
            "table met before it",
        )
    if job.joins_windows:
        raise ConfigError(
            "join.then",
            "a join of an input with a window's records meets no reference data yet "
            "(a window over a join's matches does, semantics §11.26)",
        )


def check_window_table(job: Job) -> None:
    """A window whose records meet reference data (``[join] left`` the window's name,
    semantics §13.5): one table, met by the window's result columns (``on``'s left
    names), without a time bound; ``condition``, ``where`` and ``[select]`` read
    ``<window>.<column>`` and ``<table>.<field>``. Not yet: further tables, a join of
    the window's records with a stream."""
    join, window = job.join, job.window
    assert join is not None and window is not None
    tables = [name for name, _ in job.references]
    if tables != [join.right]:
        raise ConfigError(
            "join",
            f"a window's records meet one table ({join.right}) for now, got reference data "
            f"{tables}",
        )
    for key, value, why in (
        ("join.between", join.between, "a table has no time"),
        ("join.then", join.then, "further tables are not met by a window's records yet"),
    ):
        if value:
            raise ConfigError(key, f"not with a window's records meeting a table: {why}")
    columns = window.result_columns
    for column in join.left_on:
        if column not in columns:
            raise ConfigError(
                "join.on",
                f"{column!r} is not a column of the window {join.left}'s records "
                f"({', '.join(columns)})",
            )
    reads = [("join.where", join.where_expression)] if join.where is not None else []
    if join.condition is not None:
        reads.append(("join.condition", join.condition_expression))
    reads += [(f"select.{p.name}", p.parsed) for p in job.select]
    for key, expr in reads:
        for ref in ref_nodes(expr):  # type: ignore[arg-type]
            if ref.input == join.left and ref.name not in columns:
                raise ConfigError(
                    key,
                    f"{ref.key!r}: {ref.name!r} is not a column of the window {join.left}'s "
                    f"records ({', '.join(columns)})",
                )
            if ref.input not in (join.left, join.right):
                raise ConfigError(
                    key,
                    f"{ref.key!r}: read the window's columns as {join.left}.<column> and the "
                    f"table's fields as {join.right}.<field>",
                )
