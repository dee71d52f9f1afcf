"""Where a pipeline reads and writes: ``$source``, ``$emit``/``$merge`` and the
processor's dead-letter queue, bound by the job file.

Each names an endpoint (``topic``, else ``db.coll``, else ``connectionName``) that the
job file binds to files: ``$source`` to an input (``timeField`` its ``timestamp_by``),
the sink to an output, the dead-letter queue to an output whose ``path`` becomes the
job's ``dead_letter``.
"""

from __future__ import annotations

from typing import Any

from sparktide import expr as E
from sparktide.errors import ConfigError
from sparktide.query.ast import Pos
from sparktide.query.atlas.documents import Documents
from sparktide.query.bind import Bindings
from sparktide.query.located import Node
from sparktide.query.refusal import Refuse
from sparktide.query.translate.context import inside

__all__ = ["Endpoints"]


class Endpoints(Documents):
    """Binds a pipeline's source, sink and dead-letter queue to the job file's tables."""

    def __init__(self, refuse: Refuse, bindings: Bindings, notes: list[str]) -> None:
        super().__init__(refuse)
        self.bindings = bindings
        self.notes = notes
        self.source_name = ""  # the endpoint $source reads

    def source_stage(self, node: Node) -> dict[str, Any]:
        """The input table of ``$source``: the job file's, with ``timeField`` as
        ``timestamp_by``."""
        doc = self.mapping(node, "$source")
        self.keys(
            node,
            ("connectionName", "topic", "db", "coll", "timeField", "tsFieldName", "config"),
            "$source",
        )
        if "connectionName" not in doc:
            raise self.refuse(node.pos, "$source needs connectionName")
        name = self.endpoint(node, "$source")
        self.source_name = name
        if self.bindings.is_reference(name):
            raise self.refuse(
                node.pos,
                f"$source reads {name}, which the job file binds as reference data (reference "
                "= true): a pipeline's $source is a stream (a table is read by $lookup)",
            )
        try:
            prefix, table = self.bindings.require_input(name)
        except LookupError as exc:
            raise self.refuse(node.pos, str(exc)) from None
        if "timeField" in doc:
            column = self.time_field(doc["timeField"])
            given = table.get("timestamp_by")
            if given is not None and given != column:
                raise ConfigError(
                    f"{prefix}.timestamp_by",
                    f"is {given!r} but the pipeline's timeField says {column!r}; remove the key",
                )
            table["timestamp_by"] = column
        else:
            self.notes.append("no timeField: events are timed by their arrival (the broker's time)")
        if "tsFieldName" in doc:
            self.notes.append(
                f"tsFieldName {self.string(doc['tsFieldName'], 'tsFieldName')!r}: sparktide "
                "writes the system timestamp as timestamp (events) and window_end (windows)"
            )
        if "config" in doc:
            self.mapping(doc["config"], "$source.config")
            self.notes.append("$source.config (consumer settings) does not apply to files")
        return table

    def time_field(self, node: Node) -> str:
        """The column of ``timeField``: ``"$field"`` or ``{$dateFromString: {dateString:
        "$field"}}``; for a value inside a field (``"$meta.ts"``), the expression reading
        it (a computed time, semantics §1.4)."""
        column = self._time_path(node)
        if "." not in column:
            return column
        head, *rest = column.split(".")
        return E.to_text(inside(E.Ref(head), rest))

    def _time_path(self, node: Node) -> str:
        if isinstance(node.value, str):
            return self.field_path(node, "timeField")
        doc = self.mapping(node, "timeField")
        if list(doc) != ["$dateFromString"]:
            key = next(iter(node.keys.values()), node.pos)
            raise self.refuse(
                key,
                'timeField is supported as "$field" or {$dateFromString: {dateString: '
                '"$field"}} (ISO-8601 text with a zone)',
            )
        inner = doc["$dateFromString"]
        inner_doc = self.mapping(inner, "$dateFromString")
        self.keys(inner, ("dateString",), "$dateFromString", " (sparktide reads ISO-8601 only)")
        if "dateString" not in inner_doc:
            raise self.refuse(inner.pos, "$dateFromString needs dateString")
        return self.field_path(inner_doc["dateString"], "dateString")

    def sink_stage(self, name: str, node: Node) -> str:
        """The output name of ``$emit`` or ``$merge``."""
        doc = self.mapping(node, name)
        if name == "$merge":
            self.keys(node, ("into",), "$merge", " (sparktide appends records)")
            if "into" not in doc:
                raise self.refuse(node.pos, "$merge needs into")
            into = doc["into"]
            self.mapping(into, "$merge.into")
            self.keys(into, ("connectionName", "db", "coll"), "$merge.into")
            return self.endpoint(into, "$merge.into")
        self.keys(node, ("connectionName", "topic", "db", "coll"), "$emit")
        return self.endpoint(node, "$emit")

    def output(self, sink: tuple[str | None, Pos]) -> dict[str, Any]:
        """The job file's table of the sink ``(name, place)``."""
        name, pos = sink
        found = self.bindings.output_table(name)
        if found is None:
            names = ", ".join(self.bindings.output_names())
            raise self.refuse(
                pos,
                f"no output named {name!r} in the job file (outputs bound: {names}); "
                f'add an [outputs."{name}"] table',
            )
        return found[1]

    def dead_letter_queue(self, options: Node, output: dict[str, Any]) -> None:
        """Set ``output["dead_letter"]`` to the path of the processor's ``dlq``."""
        doc = self.mapping(options, "options")
        self.keys(options, ("dlq",), "options")
        if "dlq" not in doc:
            return
        dlq = doc["dlq"]
        self.mapping(dlq, "dlq")
        self.keys(dlq, ("connectionName", "db", "coll"), "dlq")
        name = self.endpoint(dlq, "dlq")
        found = self.bindings.outputs.get(name.casefold())
        if found is not None:
            path = found[1].get("path")
            if path is None:
                raise ConfigError(f"outputs.{found[0]}.path", "is required (the dead-letter queue)")
            given = output.get("dead_letter")
            if given is not None and given != path:
                raise ConfigError(
                    "output.dead_letter",
                    f"is {given!r} but the pipeline's dead-letter queue {name} is {path!r}",
                )
            output["dead_letter"] = path
        elif not self.bindings.has_job_file:
            output.setdefault("dead_letter", name)
        elif output.get("dead_letter") is None:
            raise self.refuse(
                dlq.pos,
                f"no output named {name!r} for the dead-letter queue; add an "
                f'[outputs."{name}"] table with its path',
            )
