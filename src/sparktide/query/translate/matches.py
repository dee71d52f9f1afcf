"""What a job writes over a JOIN: its ``[join]`` table, the notes on it, and the
``[select]`` of the matches.

A JOIN of two streams writes each match at the later of the two timestamps; a JOIN with
reference data writes each event once per row it meets (``type = "left"``: an event that
meets none, once, with the table null). ``SELECT a.k, b.t AS t, DATEDIFF(minute, a.t,
b.t) AS d`` over the matches becomes ``[select]`` (``a.k`` is ``<input>.k``).
"""

from __future__ import annotations

from typing import Any

from sparktide import expr as E
from sparktide.query.ast import Call, Column, Select
from sparktide.query.exprs import convert
from sparktide.query.refusal import check_column
from sparktide.query.translate.context import (
    Context,
    inside,
    is_timestamp,
    source_names,
    unsupported_call,
)
from sparktide.query.translate.fields import Fields
from sparktide.query.translate.plans import JoinPlan, Plan
from sparktide.time import format_duration

__all__ = ["Matches"]


def _on_list(on: tuple[str | tuple[str, str], ...]) -> list[str | list[str]]:
    """``[join] on`` as the job file writes it (a pair as a list)."""
    return [e if isinstance(e, str) else list(e) for e in on]


def _on_text(on: tuple[str | tuple[str, str], ...]) -> str:
    """``[join] on`` as a note says it: ``k, DeviceId = Id``."""
    return ", ".join(e if isinstance(e, str) else f"{e[0]} = {e[1]}" for e in on)


def _meets(entry: dict[str, Any]) -> str:
    """How a ``[[join.then]]`` entry's rows are met, for its note: its ``on`` columns and
    its condition."""
    on = _on_text(tuple(map(_pair, entry["on"])))
    text = f"with equal {on} ({entry['left']}'s and {entry['right']}'s)"
    return text + (f" and where {entry['condition']} is true" if "condition" in entry else "")


def _pair(entry: str | list[str]) -> str | tuple[str, str]:
    """An ``on`` entry as the job file writes it (a pair as a list) as a plan holds it."""
    return entry if isinstance(entry, str) else (entry[0], entry[1])


class Matches:
    """Writes a statement's JOIN into its job's tables and notes."""

    def __init__(self, context: Context, fields: Fields) -> None:
        self.refuse = context.refuse
        self.notes = context.notes
        self.fields = fields

    def stream_join(self, plan: Plan, data: dict[str, Any]) -> None:
        """Set ``data["join"]`` for a JOIN of two streams (``between`` its time bound) and
        note what a reader of the job should know."""
        join = plan.join
        assert join is not None and join.between is not None
        data["join"] = {
            "left": join.left.name,
            "right": join.right.name,
            "on": _on_list(join.on),
            "between": [format_duration(b) for b in join.between],
        }
        kind = "an inner join"
        if join.type == "left":
            data["join"]["type"] = "left"
            kind = "a left outer join"
        on = f" on {_on_text(join.on)}," if join.on else ","
        self.notes.append(
            f"JOIN is [join]: {kind} of {join.left.name} and {join.right.name}{on} "
            f"{join.right.name}'s timestamp minus {join.left.name}'s "
            f"within [{', '.join(format_duration(b) for b in join.between)}]"
            + (
                f"; an event of {join.left.name} that no event of {join.right.name} matched "
                f"is written once, {join.right.name} null, at its timestamp plus "
                f"{format_duration(join.between[1])} (the latest a match could have had)"
                if join.type == "left"
                else ""
            )
        )
        if join.then:  # (reference data each match meets: semantics §11.26)
            data["join"]["then"] = [dict(entry) for _, entry in join.then]
            self.stream_tables_note(join)
        if join.window is not None:  # (semantics §7.12)
            reading = join.window.source
            self.notes.append(
                f"{join.right.name} is the windowed step's [window] (name = "
                f'"{join.right.name}") over the events of {reading.name}'
                + (f" (a second reading of {reading.bound})" if reading.bound else "")
                + ": each window it closes joins as an event at the window's end (its "
                "System.Timestamp(), window_end), with its grouping columns and aggregates"
            )
        if join.left.bound is not None:  # (a self-join: docs/query.md, *Self-joins*)
            self.notes.append(
                f"a JOIN of {join.left.bound} with itself: the job reads {join.left.bound} "
                f"once per alias, as the inputs {join.left.name} and {join.right.name} (each "
                "its own WHERE terms; each counts its events and dead-letters its bad lines)"
            )
        self.join_condition(join, data["join"])
        self.join_where(join, data["join"])
        if plan.window is not None:
            self.notes.append(
                f"GROUP BY over the JOIN: each match is one event of the window at the later "
                f"of the two timestamps, released into its windows as the job watermark "
                f"reaches it; the window reads its fields as {join.left.name}.<field> and "
                f"{join.right.name}.<field> (semantics §7.11)"
            )
        elif plan.projection is None:
            self.notes.append(
                f"SELECT * over a JOIN: each match is an event record {{{join.left.name}: "
                f"{{...}}, {join.right.name}: {{...}}, timestamp}} at the later of the two "
                "timestamps, released in timestamp order (Stream Analytics itself refuses "
                "SELECT * in a JOIN)"
            )

    def lookup_join(self, plan: Plan, data: dict[str, Any]) -> None:
        """Set ``data["join"]`` for a JOIN with reference data (no ``between``; ``type =
        "left"`` for LEFT OUTER JOIN) and note what a reader of the job should know."""
        join = plan.join
        assert join is not None
        stream, table = join.left.name, join.right.name
        data["join"] = {"left": stream, "right": table, "on": _on_list(join.on)}
        if join.type == "left":
            data["join"]["type"] = "left"
        if join.then:
            data["join"]["then"] = [dict(entry) for _, entry in join.then]
        if plan.window is not None:
            self.window_note(plan)
        elif join.table_window is None:  # (a window's records: statement.table_window)
            self.release_note(plan)
        if join.then:
            self.tables_note(join)
        self.join_condition(join, data["join"])
        self.join_where(join, data["join"])
        if join.swapped:
            self.notes.append(
                f"{table} JOIN {stream}: the job joins the stream {stream} (left) with the "
                f"reference data {table} (right); an inner join is the same either way round "
                "(Stream Analytics' documentation puts reference data on the right)"
            )

    def stream_tables_note(self, join: JoinPlan) -> None:
        """The note on the JOINs of reference data after a JOIN of two streams."""
        tables = {entry["right"] for _, entry in join.then}
        for _, entry in join.then:
            right = entry["right"]
            who = "a match" if entry["left"] not in tables else f"a match's row of {entry['left']}"
            self.notes.append(
                f"JOIN {right} is [[join.then]]: {who} meets the rows of {right} "
                f"(read whole when the run starts) {_meets(entry)}, and is written once per "
                f"row met, the row read as {right}.<field>; "
                + (
                    f"{who} that meets none is written once, {right} null (LEFT OUTER JOIN)"
                    if entry.get("type") == "left"
                    else f"{who} that meets none is not written (an inner JOIN)"
                )
                + " (semantics §11.26)"
            )

    def tables_note(self, join: JoinPlan) -> None:
        """The note on the later JOINs of reference data (``[[join.then]]``)."""
        table = join.right.name
        for _, entry in join.then:
            right = entry["right"]
            self.notes.append(
                f"JOIN {right} is [[join.then]]: when the run reads the tables, each row of "
                f"{table} meets the rows of {right} {_meets(entry)}"
                + f", which becomes its member {right} ({table}.{right}; {right}'s x is "
                f"GetRecordPropertyValue({table}.{right}, 'x')), one row per row met; "
                + (
                    f"a row that meets none keeps {right} null (LEFT OUTER JOIN)"
                    if entry.get("type") == "left"
                    else "a row that meets none is dropped (an inner JOIN; the JOINs it "
                    "reads are then inner too)"
                )
            )

    def window_note(self, plan: Plan) -> None:
        """The note on a window over a JOIN with reference data (semantics §11.23)."""
        join = plan.join
        assert join is not None
        stream, table = join.left.name, join.right.name
        alias = join.right.alias or table
        self.notes.append(
            f"JOIN is [join] with reference data and GROUP BY its [window]: {table} "
            f"(reference = true in the job file) is a table read whole when the run starts; "
            f"each admitted event of {stream} meets its rows with equal "
            f"{_on_text(join.on)} right after its ordering policy and becomes one event per "
            f"such row, the row under the field {table} ({alias}.x is "
            f"GetRecordPropertyValue({table}, 'x')); WHERE, the aggregates and the grouping "
            "read those events"
            + (
                f'; LEFT OUTER JOIN (type = "left"): an event that meets no row is one event, '
                f"{table} null"
                if join.type == "left"
                else "; an event that meets no row is dropped (no_match)"
            )
        )

    def release_note(self, plan: Plan) -> None:
        """The notes on a JOIN with reference data whose matches are released."""
        join = plan.join
        assert join is not None
        stream, table = join.left.name, join.right.name
        self.notes.append(
            f"JOIN is [join] with reference data: {table} (reference = true in the job file) "
            f"is a table read whole when the run starts; each event of {stream}, released in "
            f"timestamp order, meets its rows with equal {_on_text(join.on)} and is written "
            "once per such row, in the table's order, at the event's timestamp"
            + (
                f'; LEFT OUTER JOIN (type = "left"): an event that meets no row is written '
                f"once, with {table} null"
                if join.type == "left"
                else "; an event that meets no row is not written"
            )
        )
        if plan.projection is None:
            self.notes.append(
                f"SELECT * over a JOIN: each match is an event record {{{stream}: {{...}}, "
                f"{table}: {{...}}, timestamp}} at the event's timestamp (Stream Analytics "
                "itself refuses SELECT * in a JOIN)"
            )

    def join_condition(self, join: JoinPlan, table: dict[str, Any]) -> None:
        """``table["condition"]``: the terms of ``ON`` besides the join columns and the
        time bound, over both inputs' fields, and those of the WHERE over the pair; both
        may read the match's time, ``System.Timestamp()`` (semantics §11.8). With its
        note."""
        if not join.condition and not join.where_pairs:
            return

        def leaf(node: Column | Call) -> E.Expr:
            return self.match_leaf(node, join)

        terms = [convert(term, leaf, self.refuse, "ON") for term in join.condition]
        terms += [convert(term, leaf, self.refuse, "WHERE") for term in join.where_pairs]
        table["condition"] = E.to_text(E.conjunction(terms))
        parts = [*(["the rest of ON"] if join.condition else []), "the WHERE over the pair"]
        what = " and ".join(parts if join.where_pairs else parts[:1])
        self.notes.append(
            f"{what} is [join] condition: a pair matches only where {table['condition']} is true"
        )

    def join_where(self, join: JoinPlan, table: dict[str, Any]) -> None:
        """``table["where"]``: under LEFT OUTER JOIN, the WHERE's terms over the right
        input's fields (with reference data: the table's; of two streams also those over
        both inputs or the match's time), over what the join writes (semantics §7.9,
        §11.8), with its note."""
        if not join.where_after:
            return
        terms = [
            convert(term, lambda n: self.match_leaf(n, join), self.refuse, "WHERE")
            for term in join.where_after
        ]
        table["where"] = E.to_text(E.conjunction(terms))
        if join.type != "left":  # (a JOIN of two streams' tables, semantics §11.26)
            self.notes.append(
                f"the WHERE over the tables' fields is [join] where: each match is written "
                f"once per row it met where {table['where']} is true"
            )
            return
        self.notes.append(
            f"the WHERE over the LEFT OUTER JOIN's {join.right.name} fields is [join] where: "
            f"what the join writes is kept only where {table['where']} is true, an event "
            f"that met {'no row' if join.reference else 'no match'} reading "
            f"{join.right.name}'s fields as null"
        )

    def join_projection(self, select: Select, join: JoinPlan) -> dict[str, str]:
        """``[select]`` of ``SELECT a.k, b.t AS t, DATEDIFF(minute, a.t, b.t) AS d`` over a
        JOIN's matches: ``a.k`` is ``<input>.k`` (the input's name, not its alias),
        ``System.Timestamp()`` the match's ``timestamp``, ``a.*`` the input's fields
        (``"*" = "<input>"``)."""
        return self.fields.event_columns(
            select, lambda n: self.match_leaf(n, join), sides=(join.left, join.right)
        )

    def match_leaf(self, node: Column | Call, join: JoinPlan) -> E.Expr:
        """A column of a JOIN's match: ``a.k`` (either input, by name or alias), or
        ``System.Timestamp()`` (the match's timestamp)."""
        if is_timestamp(node):  # (a window's records: its end, semantics §13.5)
            table_window = join.table_window is not None
            return E.Ref("window_end", join.left.name) if table_window else E.Ref("timestamp")
        if isinstance(node, Call):
            raise unsupported_call(
                node,
                self.refuse,
                "over a JOIN is not supported yet: aggregate the matches in a job of their own",
            )
        return self.match_column(node, join)

    def match_column(self, node: Column, join: JoinPlan) -> E.Expr:
        """``a.k``: the field ``k`` of the JOIN's input named (or aliased) ``a``."""
        left, right = join.left, join.right
        parts = node.parts
        if len(parts) == 1:
            if parts[0].casefold() in source_names(left) | source_names(right):
                raise self.refuse(
                    node.pos,
                    f"{node.name} names an input of the JOIN: outside ON a column is "
                    f"input.field ({node.name}.Time), the match's time System.Timestamp()",
                )
            raise self.refuse(
                node.pos,
                f"{node.name} over a JOIN: qualify it with its input "
                f"({left.alias or left.name}.{node.name} or "
                f"{right.alias or right.name}.{node.name}); sparktide does not know which "
                "input's events hold it",
            )
        qualifier = parts[0].casefold()
        tables = [t for t, _ in join.then if not join.reference]  # (§11.26)
        side = next(
            (s for s in (left, right, *tables) if qualifier in source_names(s)),
            None,
        )
        if side is None:
            raise self.refuse(node.pos, f"{parts[0]} names neither input of the JOIN")
        if len(parts) == 1:
            raise self.refuse(
                node.pos, f"{node.name} names reference data: read its columns ({node.name}.x)"
            )
        field = E.Ref(check_column(parts[1], node.pos, self.refuse), side.name)
        return inside(field, parts[2:])  # (a value inside the field: r.a.b)

    def select(self, plan: Plan, data: dict[str, Any]) -> None:
        """Set ``data["select"]`` for the column list over a JOIN's matches, with its note."""
        assert plan.join is not None and plan.projection is not None
        data["select"] = self.join_projection(plan.projection, plan.join)
        self.notes.append(
            "[select] reads each match: input.field is that input's field (by the "
            "input's name, not its alias), timestamp the match's time (System.Timestamp(), "
            + (
                f"the time of {plan.join.left.name}'s event"
                if plan.join.reference
                else "the later of the two"
            )
            + "); the job releases each match as an event with the SELECT's columns and "
            "timestamp, in timestamp order"
        )
