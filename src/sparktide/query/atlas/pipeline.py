"""One pipeline → one job: its stages read in order and its job's tables assembled.

A pipeline starts with ``$source`` and may end with ``$emit`` or ``$merge``; between
them, ``$match`` and the document stages (``$project``, ``$addFields``/``$set``,
``$unset``) anywhere, one window stage, and ``$lookup`` with its ``$unwind`` before any
window. The document's :class:`~sparktide.query.atlas.shape.Shape` carries what each
stage computed to the stages that read it. Each stage's reader
(:mod:`~sparktide.query.atlas.endpoints`, :mod:`~sparktide.query.atlas.match`,
:mod:`~sparktide.query.atlas.window`, :mod:`~sparktide.query.atlas.shape`,
:mod:`~sparktide.query.atlas.lookup`) adds its notes; every other stage is refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from sparktide import expr as E
from sparktide.errors import ConfigError, QueryError
from sparktide.job.window import group_by_names
from sparktide.query.ast import Pos
from sparktide.query.atlas.documents import Documents
from sparktide.query.atlas.endpoints import Endpoints
from sparktide.query.atlas.lookup import Lookup, LookupStage, qualified
from sparktide.query.atlas.match import MatchStage
from sparktide.query.atlas.operators import Operators
from sparktide.query.atlas.shape import Shape, ShapeStage
from sparktide.query.atlas.window import WindowStage
from sparktide.query.bind import Bindings
from sparktide.query.jobs import StatementJob, Translation, build_job
from sparktide.query.located import Node
from sparktide.query.refusal import Refuse, is_column_name

__all__ = ["ATLAS_ORDERING", "Pipeline"]

#: The ordering an Atlas pipeline gets unless its job file says otherwise: no arrival-time
#: checks, the watermark is the newest event time, events behind it go to their windows.
ATLAS_ORDERING = {
    "early_arrival": "none",
    "late_arrival": "none",
    "out_of_order": "0s",
    "on_out_of_order": "accept",
}
_WINDOW_STAGES = {"$tumblingWindow": "tumbling", "$hoppingWindow": "hopping"}
#: The window's name when a $lookup after it meets its records (semantics §13.5)
WINDOW_NAME = "window"
_SINKS = ("$emit", "$merge")
_SHAPE_STAGES = ("$project", "$addFields", "$set", "$unset")
_KNOWN_STAGES = (
    "$cachedLookup",
    "$externalFunction",
    "$group",
    "$https",
    "$redact",
    "$replaceRoot",
    "$replaceWith",
    "$sessionWindow",
    "$sort",
    "$validate",
)


@dataclass
class _Stages:
    """What the stages after ``$source`` say."""

    window_pos: Pos  # where a rule of the job model the pipeline breaks is refused
    sink: tuple[str | None, Pos]  # the sink's name (None: no sink) and place
    window: dict[str, Any] | None = None
    matches: list[E.Expr] = field(default_factory=list)
    having: list[E.Expr] = field(default_factory=list)  # $match after the window
    select: dict[str, str] | None = None  # the written document, when a stage reshaped it
    lookup: Lookup | None = None
    more: list[Lookup] = field(default_factory=list)  # later $lookups, each with $unwind
    #: a $lookup after the window: its records meet the table (semantics §13.5)
    window_lookup: Lookup | None = None
    #: $match after that $lookup's $unwind: [join] where over each record and its row
    table_where: list[E.Expr] = field(default_factory=list)

    @property
    def latest(self) -> Lookup | None:
        """The last ``$lookup`` read (the one an ``$unwind`` must follow)."""
        if self.window_lookup is not None:
            return self.window_lookup
        return self.more[-1] if self.more else self.lookup

    #: $match between $lookup and the window, read over each match once the window
    #: stage comes (semantics §11.23): the documents and where they were written
    after_lookup: list[tuple[Node, Pos]] = field(default_factory=list)
    #: the same read over the documents $unwind writes (each match and its row), or why
    #: not: with no window after them, they are [join] where
    lookup_where: list[E.Expr | QueryError] = field(default_factory=list)


class Pipeline(Documents):
    """Translates the pipeline ``root`` (named ``source`` in messages)."""

    def __init__(self, root: Node, bindings: Bindings, source: str) -> None:
        super().__init__(Refuse(source))
        self.root = root
        self.bindings = bindings
        self.source = source
        self.notes: list[str] = []
        self.endpoints = Endpoints(self.refuse, bindings, self.notes)
        self.operators = Operators(self.refuse, Shape())
        self.windows = WindowStage(self.refuse, self.notes, self.operators)
        self.matches = MatchStage(self.refuse, self.operators)
        self.shapes = ShapeStage(self.refuse, self.operators)
        self.lookups = LookupStage(self.refuse, bindings)

    def run(self) -> Translation:
        """The pipeline's translation: one job."""
        stages, options = self.stages()
        first_name, first = self.stage_name(stages[0])
        if first_name != "$source":
            raise self.refuse(stages[0].pos, f"a pipeline starts with $source, not {first_name}")
        source_table = self.endpoints.source_stage(first)
        read = self.read(stages)
        output_table = self.endpoints.output(read.sink)
        if options is not None:
            self.endpoints.dead_letter_queue(options, output_table)
        data: dict[str, Any] = {
            "source": source_table,
            # (a window over the matches keeps Atlas' ordering: semantics §11.23)
            "ordering": self.ordering(joins=read.lookup is not None and read.window is None),
            "output": output_table,
        }
        if read.lookup is not None:
            self.join(read.lookup, data, windowed=read.window is not None, more=read.more)
            if read.window is None and read.lookup_where:
                self.lookup_where(read.lookup, read.lookup_where, data)  # type: ignore[arg-type]
        self.filter(read.matches, data)
        self.window(read.window, read.having, data)
        if read.window_lookup is not None:
            self.window_join(read, data)
        if read.select is not None:
            data["select"] = read.select
            self.notes.append(
                "$project, $addFields/$set and $unset: the document written is [select] "
                "(a field missing from the input is written as null; Atlas leaves it out; "
                "_id only when $project names it)"
            )
        job = build_job(data, self.bindings.base_dir, self.refuse, read.window_pos)
        start = stages[0].pos
        statement = StatementJob(job, tuple(self.notes), read.sink[0], start.line, start.column)
        return Translation((statement,), self.source)

    def stages(self) -> tuple[list[Node], Node | None]:
        """The stages, and the processor's ``options`` if the root is a processor document."""
        root = self.root
        options = None
        if isinstance(root.value, dict):
            self.keys(root, ("name", "pipeline", "options"), "the processor")
            if "pipeline" not in root.value:
                raise self.refuse(root.pos, "the processor document needs a pipeline list")
            options = root.value.get("options")
            root = root.value["pipeline"]
        if not isinstance(root.value, list) or not root.value:
            raise self.refuse(root.pos, "a pipeline is a non-empty list of stages")
        return root.value, options

    def read(self, stages: list[Node]) -> _Stages:
        """Read the stages after ``$source``: the sink last, one window, ``$lookup`` with
        its ``$unwind`` before any window; every other stage refused."""
        read = _Stages(window_pos=stages[0].pos, sink=(None, stages[-1].pos))
        self.operators.shape = Shape()
        for index, stage in enumerate(stages[1:], start=1):
            name, body = self.stage_name(stage)
            pos = stage.keys[name]
            lookup = read.latest
            if lookup is not None and not lookup.unwound and name != "$unwind":
                raise self.refuse(
                    pos,
                    f"$lookup (at {lookup.pos.line}:{lookup.pos.column}) needs $unwind of "
                    f'"${lookup.name}" right after it: sparktide writes one record per '
                    "matching row (Atlas' as is an array)",
                )
            if name in _SINKS:
                if index != len(stages) - 1:
                    raise self.refuse(pos, f"{name} must be the last stage")
                read.sink = (self.endpoints.sink_stage(name, body), pos)
            elif name in _WINDOW_STAGES:
                self.window_stage(read, name, body, pos)
            elif name == "$match" and lookup is not None and read.window is None:
                read.after_lookup.append((body, pos))  # (read over each match: window_stage)
                try:  # (or, with no window after it, over the documents $unwind writes)
                    read.lookup_where.append(self.matches.match(body))
                except QueryError as error:
                    read.lookup_where.append(error)
            elif name == "$match":
                condition = self.matches.match(body)
                if read.window_lookup is not None:  # (over each record and its row)
                    read.table_where.append(condition)
                else:
                    (read.matches if read.window is None else read.having).append(condition)
            elif name in _SHAPE_STAGES:
                self.operators.shape = self.shapes.stage(name, body, self.operators.shape, pos)
            elif name in ("$lookup", "$unwind"):
                self.lookup_stage(read, name, body, pos)
            elif name == "$source":
                raise self.refuse(pos, "a second $source: a job reads one input")
            elif name in _KNOWN_STAGES:
                raise self.refuse(pos, f"the stage {name} is not supported yet")
            else:
                raise self.refuse(pos, f"unknown stage {name}")
        pending = read.latest
        if pending is not None and not pending.unwound:
            raise self.refuse(
                pending.pos, f'$lookup needs $unwind of "${pending.name}" right after it'
            )
        for condition in read.lookup_where:
            if isinstance(condition, QueryError):
                raise condition
        read.select = self.operators.shape.select(self.refuse)
        return read

    def window_stage(self, read: _Stages, name: str, body: Node, pos: Pos) -> None:
        """Read the window stage ``name``: the document after it is the window's record."""
        if read.window is not None:
            raise self.refuse(pos, "a second window stage: a job has one window")
        if read.lookup is not None:  # (each match, the row under the table's name: §11.23)
            assert read.lookup.before is not None
            if self.operators.shape is not read.lookup.joined:
                raise self.refuse(
                    pos,
                    "a window after $lookup reads the documents $unwind writes: a stage "
                    "that reshapes them between is not supported yet (compute the fields "
                    "before $lookup, or in the window's accumulators)",
                )
            self.operators.shape = dataclasses.replace(
                read.lookup.before,
                table=read.lookup.name,
                row=True,
                members=tuple(m.name for m in read.more),
            )
            read.matches += [self.matches.match(body) for body, _ in read.after_lookup]
            read.after_lookup.clear()
            read.lookup_where.clear()
        read.window = self.windows.window_stage(_WINDOW_STAGES[name], name, body)
        read.window_pos = pos
        self.operators.shape = Shape.of_window(
            group_by_names(read.window["group_by"]),
            list(read.window["aggregates"]),
            self.windows.single_id,
        )

    def lookup_stage(self, read: _Stages, name: str, body: Node, pos: Pos) -> None:
        """Read ``$lookup`` (before any window, once) or the ``$unwind`` after it."""
        if name == "$unwind":
            lookup = read.latest
            if lookup is None or lookup.unwound:
                raise self.refuse(
                    pos, "the stage $unwind is not supported yet (only right after $lookup)"
                )
            self.lookups.unwind(body, lookup)
            if lookup is read.window_lookup:  # (the window's records meet it: §13.5)
                self.operators.shape = self.window_joined(lookup, pos)
                return
            if lookup is not read.lookup:  # (a later table: a member of the first's row)
                shape = self.operators.shape
                members = (*shape.members, lookup.name)
                joined = dataclasses.replace(shape, members=members)
                self.operators.shape = read.lookup.joined = joined  # type: ignore[union-attr]
                return
            shape = self.operators.shape
            stream = self.endpoints.source_name
            if not is_column_name(stream) or stream == lookup.name:
                stream = "stream" if lookup.name != "stream" else "events"
            lookup.stream, lookup.before = stream, shape
            joined = Shape(
                {k: qualified(v, stream) for k, v in shape.fields.items()},
                shape.closed,
                dict(shape.removed),
                shape.changed or pos,  # a join's own record nests both inputs
                "the documents of the $lookup",
            )
            joined.stream, joined.table = stream, lookup.name
            self.operators.shape = lookup.joined = joined
            return
        if read.window is not None:  # (the window's records meet the table: §13.5)
            if read.window_lookup is not None or read.lookup is not None:
                raise self.refuse(
                    pos,
                    "$lookup after the window is supported once, in a pipeline without "
                    "$lookup before it",
                )
            read.window_lookup = self.lookups.window_lookup(body, pos, self.operators.shape)
            return
        if read.lookup is not None:  # (a later table: [[join.then]], semantics §11.8)
            later = self.lookups.lookup(body, pos, self.operators.shape, read.lookup)
            if later.name in (read.lookup.name, *(m.name for m in read.more)):
                raise self.refuse(pos, f"a second $lookup as {later.name!r}: name it otherwise")
            read.more.append(later)
            return
        read.lookup = self.lookups.lookup(body, pos, self.operators.shape)

    def window_joined(self, lookup: Lookup, pos: Pos) -> Shape:
        """The document after ``$unwind`` of a ``$lookup`` after the window: the
        window's fields, read as ``<window>.<field>``, and the table's as
        ``<as>.<field>``; written only as a later ``$project`` names them."""
        shape = self.operators.shape
        name = WINDOW_NAME if lookup.name != WINDOW_NAME else f"{WINDOW_NAME}s"
        lookup.stream = name
        joined = Shape(
            {k: qualified(v, name) for k, v in shape.fields.items()},
            True,
            dict(shape.removed),
            None,
            "the window's records and the rows of the $lookup",
        )
        joined.aliases = {k: qualified(v, name) for k, v in shape.aliases.items()}
        joined.stream, joined.table = name, lookup.name
        return joined

    def window_join(self, read: _Stages, data: dict[str, Any]) -> None:
        """``[inputs]`` (the stream and the table), the window's ``name`` and the
        ``[join]`` of its records with the table (semantics §13.5)."""
        lookup = read.window_lookup
        assert lookup is not None and "window" in data
        stream = self.endpoints.source_name
        if not is_column_name(stream) or stream in (lookup.name, lookup.stream):
            stream = "stream"
        data["inputs"] = {stream: data.pop("source"), lookup.name: lookup.table}
        data["window"]["name"] = lookup.stream
        data["join"] = {"left": lookup.stream, "right": lookup.name, "on": [lookup.on]}
        if lookup.left:
            data["join"]["type"] = "left"
        if read.table_where:
            data["join"]["where"] = E.to_text(E.conjunction(read.table_where))
        self.notes.append(
            f"$lookup after the window: each record the window writes meets the rows of "
            f"{lookup.endpoint} ([join] left = {lookup.stream!r}, the window's name; "
            "semantics §13.5), once per row"
            + (" (once with the row null if none)" if lookup.left else " (not if none)")
            + "; $match after it is [join] where"
        )

    def lookup_where(self, lookup: Lookup, matches: list[E.Expr], data: dict[str, Any]) -> None:
        """``[join] where``: the ``$match`` stages after a ``$lookup`` and its ``$unwind``
        with no window after them, over each document ``$unwind`` writes (the event's
        fields and the row's, ``$<as>.<field>``)."""
        data["join"]["where"] = E.to_text(E.conjunction(matches))
        self.notes.append(
            f"$match after $lookup and $unwind is [join] where: each event meets the rows "
            f"of {lookup.endpoint} first, then a record that fails it is not written "
            "(an event that meets no row under preserveNullAndEmptyArrays has the row's "
            "fields null there)"
        )

    def filter(self, matches: list[E.Expr], data: dict[str, Any]) -> None:
        """``[filter] where``: the ``$match`` conditions joined by AND."""
        if not matches:
            return
        data["filter"] = {"where": E.to_text(E.conjunction(matches))}
        self.notes.append(
            "$match is [filter] where: it applies after the ordering policy; an event that "
            "fails it is counted as dropped (filtered); a field holding an array matches "
            "nothing (Atlas matches its elements)"
        )

    def window(
        self, window: dict[str, Any] | None, having: list[E.Expr], data: dict[str, Any]
    ) -> None:
        """``[window]`` with the job file's ``[window]`` keys (which must agree), and
        ``having``: the ``$match`` stages after the window joined by AND."""
        if window is None:
            self.notes.append(
                "no window: the job releases every event in timestamp order (Atlas emits "
                "them in arrival order)"
            )
            return
        for key, value in self.bindings.window.items():
            if key in window and window[key] != value:
                raise ConfigError(
                    f"window.{key}", f"is {value!r} but the pipeline says {window[key]!r}"
                )
            window[key] = value
        if having:
            window["having"] = E.to_text(E.conjunction(having))
            self.notes.append(
                "$match after the window is [window] having: a window record that fails it "
                "is not written (counted in windows_filtered)"
            )
        data["window"] = window

    def later_table(self, lookup: Lookup, stream: str, data: dict[str, Any]) -> dict[str, Any]:
        """The ``[[join.then]]`` of a later ``$lookup`` (its table added to the inputs),
        with its note."""
        data["inputs"][lookup.name] = lookup.table
        left = lookup.keyed_by or stream
        entry: dict[str, Any] = {"left": left, "right": lookup.name, "on": [lookup.on]}
        if lookup.left:
            entry["type"] = "left"
        first = data["join"]["right"]
        self.notes.append(
            f"the $lookup of {lookup.endpoint} is [[join.then]]: its rows meet "
            + ("each event by its own fields" if lookup.keyed_by is None else f"{first}'s rows")
            + f", the row met the member {lookup.name} of {first}'s row (${lookup.name}.x is "
            f"GetRecordPropertyValue({first}.{lookup.name}, 'x'))"
        )
        return entry

    def join(
        self, lookup: Lookup, data: dict[str, Any], *, windowed: bool, more: list[Lookup] = ()
    ) -> None:
        """``[inputs]`` (the stream and the tables) and ``[join]`` of a ``$lookup`` and
        the later ones (``windowed``: a window stage after them reads each match)."""
        stream = lookup.stream
        data["inputs"] = {stream: data.pop("source"), lookup.name: lookup.table}
        data["join"] = {"left": stream, "right": lookup.name, "on": [lookup.on]}
        on = lookup.on if isinstance(lookup.on, str) else " = ".join(lookup.on)
        inner = any(m.keyed_by is not None and not m.left for m in more)  # (as SQL's chain)
        if lookup.left and not inner:
            data["join"]["type"] = "left"
        if more:
            data["join"]["then"] = [self.later_table(m, stream, data) for m in more]
        if windowed:
            self.notes.append(
                f"$lookup and $unwind before the window are [join] with the reference data "
                f"{lookup.endpoint} (input {lookup.name}, read whole when the run starts) "
                f"and the window reads each match: an event meets its rows with equal "
                f"{on} right after its ordering policy and becomes one event per row, "
                f"the row under {lookup.name} (${lookup.name}.x is GetRecordPropertyValue("
                f"{lookup.name}, 'x'))"
                + (
                    ", or one event with it null when it meets none"
                    if lookup.left
                    else "; an event that meets no row is dropped (no_match)"
                )
            )
            return
        self.notes.append(
            f"$lookup and $unwind are [join] with the reference data {lookup.endpoint} "
            f"(input {lookup.name}, read whole when the run starts): each event meets its "
            f"rows with equal {on} and is written once per row, in the table's order"
            + (
                ", or once with the table's fields null when it meets none"
                if lookup.left
                else "; an event that meets no row is not written"
            )
            + "; an event behind the watermark takes the watermark's time (on_out_of_order "
            '= "adjust"; Atlas writes it as it comes)'
        )

    def ordering(self, joins: bool = False) -> dict[str, Any]:
        """:data:`ATLAS_ORDERING`, with the job file's ``[ordering]`` over it (which must
        keep ``on_out_of_order = "accept"``; ``"adjust"`` in a pipeline with
        ``$lookup``: a join cannot take events behind its watermark)."""
        ordering = dict(ATLAS_ORDERING)
        given = dict(self.bindings.ordering)
        action = given.get("on_out_of_order")
        if joins:
            ordering["on_out_of_order"] = "adjust"
            if action == "accept":
                raise ConfigError(
                    "ordering.on_out_of_order",
                    "is 'accept', but a pipeline with $lookup is a join, which cannot take "
                    "events behind its watermark; remove the key",
                )
        elif action is not None and action != "accept":
            raise ConfigError(
                "ordering.on_out_of_order",
                f"is {action!r}, but Atlas pipelines keep events behind the watermark for "
                'their windows ("accept"); remove the key',
            )
        ordering.update(given)
        return ordering
