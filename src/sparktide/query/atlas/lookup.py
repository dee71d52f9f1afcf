"""``$lookup`` of reference data, with the ``$unwind`` of its ``as`` field → the job's
``[join]`` with a reference input (docs/jobfile.md "Reference data").

Atlas' ``$lookup`` is a left outer join of each document with the collection ``from``
(``localField`` = ``foreignField``), adding the array ``as`` of the matching documents;
``$unwind`` of ``as`` then writes one document per match (and, with
``preserveNullAndEmptyArrays``, a document without ``as`` when nothing matches). A
job's join with a reference input writes one record per matching row (``type =
"left"``: also one, with the table null, when none matches): the pair is that job
exactly, so ``$lookup`` is translated only with its ``$unwind``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from sparktide import expr as E
from sparktide.query.ast import Pos
from sparktide.query.atlas.documents import Documents
from sparktide.query.atlas.shape import Shape
from sparktide.query.bind import Bindings
from sparktide.query.located import Node
from sparktide.query.refusal import Refuse, check_column

__all__ = ["Lookup", "LookupStage", "qualified"]


@dataclass
class Lookup:
    """A ``$lookup`` read: the table's endpoint and job-file table, the join column (or
    the pair ``[localField, foreignField]``; with dots, a value inside a record), the
    ``as`` name (the table's input name in the job) and where it was written."""

    endpoint: str
    table: dict[str, Any]
    on: str | list[str]  # (a pair: localField, foreignField)
    name: str
    pos: Pos
    left: bool = False  # $unwind keeps documents that met no row
    unwound: bool = False
    stream: str = "stream"  # the stream's input name in the job (set by $unwind)
    #: the document before the $lookup: what a window after it reads (semantics §11.23)
    before: Shape | None = None
    joined: Shape | None = None  # the document right after its $unwind
    #: a later $lookup: the table whose row it meets (``None``: each event, by its fields)
    keyed_by: str | None = None


def qualified(expr: E.Expr, input_name: str) -> E.Expr:
    """``expr`` with every unqualified field read as a field of ``input_name``."""
    if isinstance(expr, E.Ref):
        return expr if expr.input is not None else E.Ref(expr.name, input_name)
    changes: dict[str, Any] = {}
    for item in dataclasses.fields(expr):  # type: ignore[arg-type]
        value = getattr(expr, item.name)
        new = _qualified_value(value, input_name)
        if new is not value:
            changes[item.name] = new
    return dataclasses.replace(expr, **changes) if changes else expr  # type: ignore[type-var]


def _qualified_value(value: Any, input_name: str) -> Any:
    if isinstance(value, tuple):
        return tuple(_qualified_value(v, input_name) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return qualified(value, input_name)  # type: ignore[arg-type]
    return value


class LookupStage(Documents):
    """Reads ``$lookup`` and the ``$unwind`` after it."""

    def __init__(self, refuse: Refuse, bindings: Bindings) -> None:
        super().__init__(refuse)
        self.bindings = bindings

    def lookup(self, node: Node, pos: Pos, shape: Shape, first: Lookup | None = None) -> Lookup:
        """The ``$lookup`` document ``node`` over the document ``shape``; after ``first``
        (a later ``$lookup``), ``localField`` is a field of ``first``'s row
        (``"info.site"``) or of the stream's document."""
        doc = self.mapping(node, "$lookup")
        self.keys(node, ("from", "localField", "foreignField", "as"), "$lookup")
        for key in ("from", "localField", "foreignField", "as"):
            if key not in doc:
                raise self.refuse(node.pos, f"$lookup needs {key}")
        source = doc["from"]
        self.mapping(source, "$lookup.from")
        self.keys(source, ("connectionName", "db", "coll"), "$lookup.from")
        endpoint = self.endpoint(source, "$lookup.from")
        found = self.bindings.input_table(endpoint)
        if found is None or not self.bindings.is_reference(endpoint):
            raise self.refuse(
                source.pos,
                f"$lookup reads {endpoint}: bind it in the job file as reference data "
                f'([inputs."{endpoint}"] reference = true, path, format)',
            )
        local = self.string(doc["localField"], "localField")
        foreign = self.string(doc["foreignField"], "foreignField")
        for name, value in (("localField", local), ("foreignField", foreign)):
            for part in value.split("."):  # (with dots: a value inside a record)
                check_column(part, doc[name].pos, self.refuse, name)
        keyed_by = None
        if first is not None and local.startswith(f"{first.name}."):
            keyed_by, local = first.name, local[len(first.name) + 1 :]
        else:
            top = local.split(".", 1)[0]
            before = shape if first is None else first.before
            assert before is not None
            if before.resolve(top, doc["localField"].pos, self.refuse) != E.Ref(top):
                raise self.refuse(
                    doc["localField"].pos, f"localField {local!r} is computed by an earlier stage"
                )
        name = check_column(self.string(doc["as"], "as"), doc["as"].pos, self.refuse, "as")
        on: str | list[str] = local if local == foreign else [local, foreign]
        return Lookup(endpoint, dict(found[1]), on, name, pos, keyed_by=keyed_by)

    def window_lookup(self, node: Node, pos: Pos, shape: Shape) -> Lookup:
        """A ``$lookup`` after the window: ``localField`` one of the window's fields
        (``_id``: its grouping field) over the window's records ``shape``."""
        doc = self.mapping(node, "$lookup")
        local = doc.get("localField")
        column = None
        if local is not None and isinstance(local.value, str):
            column = shape.resolve(local.value, local.pos, self.refuse)
            if not isinstance(column, E.Ref) or column.input is not None:
                raise self.refuse(local.pos, "localField after the window names one of its fields")
            node = dataclasses.replace(
                node, value={**doc, "localField": dataclasses.replace(local, value=column.name)}
            )
        return self.lookup(node, pos, Shape({column.name: column} if column else {}))

    def unwind(self, node: Node, lookup: Lookup) -> None:
        """``$unwind: "$as"`` (an inner join) or ``{path: "$as",
        preserveNullAndEmptyArrays: true}`` (a left join) of ``lookup``."""
        path = node
        if isinstance(node.value, dict):
            doc = self.mapping(node, "$unwind")
            self.keys(node, ("path", "preserveNullAndEmptyArrays"), "$unwind")
            if "path" not in doc:
                raise self.refuse(node.pos, "$unwind needs path")
            path = doc["path"]
            keep = doc.get("preserveNullAndEmptyArrays")
            if keep is not None:
                if not isinstance(keep.value, bool):
                    raise self.refuse(keep.pos, "preserveNullAndEmptyArrays must be a boolean")
                lookup.left = keep.value
        if path.value != f"${lookup.name}":
            raise self.refuse(
                path.pos,
                f"$unwind of {path.value!r} is not supported yet: only the $lookup's "
                f'"${lookup.name}"',
            )
        lookup.unwound = True
