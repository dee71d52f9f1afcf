"""The document a pipeline's stages see, and the stages that reshape it: ``$project``,
``$addFields`` / ``$set`` and ``$unset``.

A :class:`Shape` maps each field a later stage may read to its expression: before the
window, the input's fields (open: any field) with what ``$addFields`` computed over
them; after the window, the window record's grouping fields and accumulators (closed:
only those). A later stage reads a computed field as its expression, so the stages
before the window fold into the window's ``$group`` and ``[filter]``, and the stages
after it into ``[window] having`` and ``[select]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktide import expr as E
from sparktide.query.ast import Pos
from sparktide.query.atlas.documents import Documents
from sparktide.query.located import Node
from sparktide.query.refusal import Refuse, check_column
from sparktide.query.translate.context import inside

__all__ = ["Shape", "ShapeStage"]


@dataclass
class Shape:
    """The fields of the document at one place of the pipeline.

    ``fields`` are the known fields and their expressions, in order; an open shape also
    holds every other field of the input (but not those in ``removed``). ``changed`` is
    the place of the first stage that made the document differ from the one the job
    writes by itself.
    """

    fields: dict[str, E.Expr] = field(default_factory=dict)
    closed: bool = False
    removed: dict[str, Pos] = field(default_factory=dict)
    changed: Pos | None = None
    what: str = "the input's documents"
    aliases: dict[str, E.Expr] = field(default_factory=dict)  # read, not written
    stream: str | None = None  # after a $lookup: the stream's input name in the job
    table: str | None = None  # ... and the table's (its ``as``)
    #: a window after the $lookup reads each match: the table's fields are the row's,
    #: under the table's name (semantics §11.23), the stream's the event's own
    row: bool = False
    #: later $lookups' names: members of the table's row (semantics §11.8, *Further tables*)
    members: tuple[str, ...] = ()

    @classmethod
    def of_window(cls, group_by: list[str], aggregates: list[str], single: bool) -> Shape:
        """The window records: grouping fields and accumulators; ``$_id`` (``single``:
        ``_id`` was one field) or ``$_id.f`` read the grouping fields."""
        names = [*group_by, *aggregates]
        shape = cls({n: E.Ref(n) for n in names}, closed=True, what="the window's records")
        if single:
            shape.aliases["_id"] = E.Ref(group_by[0])
        else:
            shape.aliases.update({f"_id.{g}": E.Ref(g) for g in group_by})
        return shape

    def resolve(self, name: str, pos: Pos, refuse: Refuse) -> E.Expr:
        """The expression of the field ``name`` (refused if the document lacks it)."""
        if name in self.aliases and name not in self.fields:
            return self.aliases[name]
        if self.table is not None and name.split(".")[0] in (self.table, *self.members):
            return self.looked_up(name, pos, refuse)
        if "." in name:  # (a value inside a field: Atlas' dot notation)
            head, *rest = name.split(".")
            return inside(self.resolve(head, pos, refuse), rest)
        if name in self.fields:
            return self.fields[name]
        if name in self.removed:
            where = self.removed[name]
            raise refuse(
                pos, f"${name} was removed at {where.line}:{where.column}: it is always missing"
            )
        if self.closed:
            known = ", ".join(self.fields) or "none"
            raise refuse(pos, f"${name} is not a field of {self.what} (fields: {known})")
        return E.Ref(check_column(name, pos, refuse, "field"), self.stream)

    def looked_up(self, name: str, pos: Pos, refuse: Refuse) -> E.Expr:
        """``$info.model`` of the looked-up table ``info``, or ``$site.region`` of a later
        ``$lookup`` ``site``: the field of the table's row, or of the row that is its
        member ``site``."""
        assert self.table is not None
        table, _, column = name.partition(".")
        if not column:
            raise refuse(pos, f"${name}: the whole looked-up document: name its fields")
        if "." in column:  # (a value inside the row's field)
            column, *rest = column.split(".")
            return inside(self.looked_up(f"{table}.{column}", pos, refuse), rest)
        column = check_column(column, pos, refuse, "field")
        record = E.Ref(self.table)
        if table == self.table:  # (a window reads the row each match holds: §11.23)
            if self.row:
                return E.Func("GETRECORDPROPERTYVALUE", (record, E.Lit(column)))
            return E.Ref(column, self.table)
        if self.row:
            return E.Func("GETRECORDPROPERTYVALUE", (record, E.Lit(f"{table}.{column}")))
        return E.Func("GETRECORDPROPERTYVALUE", (E.Ref(table, self.table), E.Lit(column)))

    def select(self, refuse: Refuse) -> dict[str, str] | None:
        """``[select]`` writing this document, or None when the job's own record is it."""
        if self.changed is None:
            return None
        if not self.closed:
            raise refuse(
                self.changed,
                f"this stage keeps every other field of {self.what}: a job names the "
                "columns it writes; list them in a $project (or reshape before a window)",
            )
        return {name: E.to_text(value) for name, value in self.fields.items()}


class ShapeStage(Documents):
    """Reads ``$project``, ``$addFields``/``$set`` and ``$unset`` (``operators``
    reads their expressions over the shape the pipeline holds)."""

    def __init__(self, refuse: Refuse, operators: object) -> None:
        super().__init__(refuse)
        self.operators = operators

    def stage(self, name: str, body: Node, shape: Shape, pos: Pos) -> Shape:
        """The shape after the stage ``name``."""
        out = Shape(dict(shape.fields), shape.closed, dict(shape.removed), shape.changed)
        out.what, out.aliases = shape.what, dict(shape.aliases)
        out.stream, out.table = shape.stream, shape.table
        if out.changed is None:
            out.changed = pos
        if name == "$unset":
            items = body.value if isinstance(body.value, list) else [body]
            for item in items:
                self.remove(out, self.string(item, "$unset"), item.pos)
            return out
        doc = self.mapping(body, name)
        if not doc:
            raise self.refuse(body.pos, f"{name} needs at least one field")
        if name in ("$addFields", "$set"):
            for key, value in doc.items():
                self.name(key, body.keys[key])
                out.fields[key] = self.operators.expression(value)  # type: ignore[attr-defined]
                out.removed.pop(key, None)
            return out
        return self.project(body, shape, out)

    def project(self, body: Node, shape: Shape, out: Shape) -> Shape:
        """``$project``: inclusion (``f: 1``, computed ``f: expr``) or exclusion (``f: 0``)."""
        doc = self.mapping(body, "$project")
        kinds = {key: self.kind(value) for key, value in doc.items()}
        excluded = [k for k, v in kinds.items() if v == "exclude" and k != "_id"]
        kept = [k for k, v in kinds.items() if v != "exclude"]
        if excluded and kept:
            key = (excluded if kinds[next(iter(doc))] != "exclude" else kept)[0]
            raise self.refuse(
                body.keys[key], f"$project mixes inclusion and exclusion ({key}), as Atlas refuses"
            )
        if not kept:
            for key in doc:
                if key != "_id":
                    self.remove(out, key, body.keys[key])
            return out
        fields: dict[str, E.Expr] = {}
        for key in kept:
            self.name(key, body.keys[key])
            value = doc[key]
            if kinds[key] == "include":
                fields[key] = shape.resolve(key, body.keys[key], self.refuse)
            else:
                fields[key] = self.operators.expression(value)  # type: ignore[attr-defined]
        out.fields, out.closed, out.removed = fields, True, {}
        return out

    def kind(self, node: Node) -> str:
        """``include`` (``1``, ``true``), ``exclude`` (``0``, ``false``) or ``compute``."""
        value = node.value
        if isinstance(value, bool):
            return "include" if value else "exclude"
        if isinstance(value, (int, float)):
            return "exclude" if value == 0 else "include"
        return "compute"

    def name(self, key: str, pos: Pos) -> None:
        """Refuse a field name that is not a column name (or a nested path)."""
        if "." in key:
            raise self.refuse(pos, f"{key}: nested fields are not supported yet")
        check_column(key, pos, self.refuse, "field")

    def remove(self, shape: Shape, key: str, pos: Pos) -> None:
        """Remove the field ``key`` from ``shape``."""
        self.name(key, pos)
        shape.fields.pop(key, None)
        if not shape.closed:
            shape.removed[key] = pos
