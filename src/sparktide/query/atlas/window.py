"""``$tumblingWindow`` and ``$hoppingWindow`` → the job's ``[window]``.

Atlas windows are ``[start, end)`` (``boundary = "start"``) and keep events behind the
watermark for their windows to decide: ``allowedLateness`` (3 seconds unless given)
keeps each window open. The window's pipeline is one ``$group``: its ``_id`` the
grouping fields, its accumulators (``$sum``, ``$avg``, ``$min``, ``$max``, ``$count``,
``$push``, ``$first``, ``$last``, ``$top`` ...) the aggregates, each of a field or an
expression (:mod:`~sparktide.query.atlas.operators`; a field an earlier stage computed
is its expression, while grouping and sorting take the input's columns).
"""

from __future__ import annotations

from typing import Any

from sparktide import expr as E
from sparktide.job.window import group_by_names
from sparktide.query.atlas.documents import TIME_UNITS, Documents
from sparktide.query.atlas.operators import Operators
from sparktide.query.located import Node
from sparktide.query.refusal import Refuse, check_column
from sparktide.time import SECOND, format_duration

__all__ = ["DEFAULT_ALLOWED_LATENESS", "WindowStage"]

#: Atlas' default allowedLateness.
DEFAULT_ALLOWED_LATENESS = 3 * SECOND
#: Accumulators and the sparktide functions they become.
_ACCUMULATORS = {
    "$sum": "sum",
    "$avg": "avg",
    "$min": "min",
    "$max": "max",
    "$push": "collect_list",
    "$first": "first",
    "$last": "last",
}


#: ``$top``, ``$bottom``, ``$topN``, ``$bottomN`` and the sparktide functions they become.
_RANKED = {"$top": "topone", "$bottom": "bottomone", "$topN": "topn", "$bottomN": "bottomn"}


class WindowStage(Documents):
    """Reads a pipeline's window stage, noting what a reader of the job should know."""

    def __init__(self, refuse: Refuse, notes: list[str], operators: Operators) -> None:
        super().__init__(refuse)
        self.notes = notes
        self.operators = operators
        self.single_id = False  # whether the last $group's _id was one "$field"

    def plain(self, node: Node, what: str) -> str:
        """The column of the field path ``node``, refused when an earlier stage computed
        or removed the field (grouping and sorting take the input's columns)."""
        column = self.field_path(node, what)
        if "." in column:
            raise self.refuse(
                node.pos, f"{what}: ${column}, a value inside a field, is not supported yet"
            )
        resolved = self.operators.shape.resolve(column, node.pos, self.refuse)
        if resolved != E.Ref(column):
            raise self.refuse(
                node.pos,
                f"{what}: ${column} is computed by an earlier stage: grouping, sorting and "
                "ranking by a computed field is not supported yet",
            )
        return column

    def field_name(self, node: Node, what: str) -> str:
        """A ``"$field"`` path, or after ``$lookup`` ``"$as.field"``: a field of the row
        each match holds (semantics §11.23), which the shape reads."""
        shape, value = self.operators.shape, node.value
        tables = (shape.table, *shape.members) if shape.table is not None else ()
        if isinstance(value, str) and any(value.startswith(f"${t}.") for t in tables):
            return value[1:]
        return self.field_path(node, what)

    def argument(self, node: Node, what: str) -> str:
        """An accumulator's argument: a field path (through the document's shape) or an
        expression, as the job's expression text."""
        if isinstance(node.value, dict):
            return E.to_text(self.operators.expression(node))
        column = self.field_name(node, what)
        return E.to_text(self.operators.shape.resolve(column, node.pos, self.refuse))

    def window_stage(self, kind: str, name: str, node: Node) -> dict[str, Any]:
        """The ``[window]`` of a ``$tumblingWindow`` or ``$hoppingWindow`` stage (``[start,
        end)``, ``allowedLateness`` 3 seconds unless given)."""
        doc = self.mapping(node, name)
        allowed = ["interval", "pipeline", "offset", "idleTimeout", "allowedLateness", "boundary"]
        if kind == "hopping":
            allowed.insert(1, "hopSize")
        self.keys(node, tuple(allowed), name)
        for needed in ("interval", "pipeline", *(("hopSize",) if kind == "hopping" else ())):
            if needed not in doc:
                raise self.refuse(node.pos, f"{name} needs {needed}")
        if "boundary" in doc and doc["boundary"].value != "eventTime":
            raise self.refuse(
                doc["boundary"].pos,
                f"boundary {doc['boundary'].value!r} is not supported yet: sparktide windows "
                'are on event time ("eventTime")',
            )
        size = self.duration(doc["interval"], "interval")
        window: dict[str, Any] = {"type": kind, "size": format_duration(size), "boundary": "start"}
        period = size
        if kind == "hopping":
            period = self.duration(doc["hopSize"], "hopSize")
            window["hop"] = format_duration(period)
        if "offset" in doc:
            window["offset"] = format_duration(self.offset(doc["offset"]) % period)
        lateness = DEFAULT_ALLOWED_LATENESS
        if "allowedLateness" in doc:
            lateness = self.duration(doc["allowedLateness"], "allowedLateness", zero=True)
        window["allowed_lateness"] = format_duration(lateness)
        if "idleTimeout" in doc:
            idle = self.duration(doc["idleTimeout"], "idleTimeout", zero=True)
            if idle:
                window["idle_timeout"] = format_duration(idle)
        group_by, aggregates = self.inner_pipeline(doc["pipeline"], name)
        window["group_by"] = group_by
        window["aggregates"] = aggregates
        return window

    def offset(self, node: Node) -> int:
        """``{offsetFromUtc, unit}`` → microseconds (may be negative)."""
        doc = self.mapping(node, "offset")
        self.keys(node, ("offsetFromUtc", "unit"), "offset")
        if "offsetFromUtc" not in doc or "unit" not in doc:
            raise self.refuse(node.pos, "offset needs offsetFromUtc and unit")
        amount, unit = doc["offsetFromUtc"], doc["unit"]
        if isinstance(amount.value, bool) or not isinstance(amount.value, int):
            raise self.refuse(amount.pos, "offset.offsetFromUtc must be an integer")
        factor = TIME_UNITS.get(unit.value) if isinstance(unit.value, str) else None
        if factor is None:
            raise self.refuse(
                unit.pos, f"offset.unit must be one of {', '.join(TIME_UNITS)}, got {unit.value!r}"
            )
        return amount.value * factor

    def inner_pipeline(self, node: Node, window: str) -> tuple[list[str], dict[str, str]]:
        """The grouping fields and aggregates of a window's pipeline: one ``$group``."""
        if not isinstance(node.value, list) or not node.value:
            raise self.refuse(node.pos, f"{window}.pipeline must be a non-empty list of stages")
        group: Node | None = None
        for stage in node.value:
            name, body = self.stage_name(stage)
            pos = stage.keys[name]
            if name != "$group":
                raise self.refuse(
                    pos,
                    f"{name} inside {window} is not supported yet: the window's pipeline is "
                    "one $group",
                )
            if group is not None:
                raise self.refuse(pos, f"a second $group inside {window}")
            group = body
        assert group is not None
        return self.group(group)

    def group(self, node: Node) -> tuple[list[str | dict[str, str]], dict[str, str]]:
        """The grouping fields (``_id``) and aggregates of a ``$group``: a field's name,
        or a computed grouping column ``{name: expression}`` (semantics §6.13)."""
        doc = self.mapping(node, "$group")
        if "_id" not in doc:
            raise self.refuse(node.pos, "$group needs _id")
        group_by = self.group_id(doc["_id"])
        names = group_by_names(group_by)
        aggregates: dict[str, str] = {}
        for name, spec in doc.items():
            if name == "_id":
                continue
            pos = node.keys[name]
            check_column(name, pos, self.refuse, "output field")
            if name in names:
                raise self.refuse(pos, f"{name} is also a grouping field")
            aggregates[name] = self.accumulator(name, spec)
        return group_by, aggregates

    def group_id(self, node: Node) -> list[str | dict[str, str]]:
        """The grouping fields of ``_id``: none, ``"$field"``, an expression (grouped by
        as ``_id``), or ``{name: "$field" or expression, ...}``: a field grouped by under
        its own name is a column of the input, anything else a computed column."""
        self.single_id = isinstance(node.value, str) or (
            isinstance(node.value, dict) and any(k.startswith("$") for k in node.value)
        )
        if node.value is None:
            return []
        if self.single_id:
            key = self.grouping(node, "_id", "_id")
            if isinstance(key, str):
                self.notes.append(f'_id: "${key}" is the column {key} of the window records')
            else:
                self.notes.append("_id: an expression, the column _id of the window records")
            return [key]
        if isinstance(node.value, dict):
            keys = [self.grouping(value, name, f"_id.{name}") for name, value in node.value.items()]
            self.notes.append(
                f"_id {{{', '.join(group_by_names(keys))}}}: the window records carry each "
                "as a column"
            )
            return keys
        raise self.refuse(node.pos, '_id must be null, "$field", an expression or {name: ...}')

    def grouping(self, node: Node, name: str, what: str) -> str | dict[str, str]:
        """One grouping field of ``_id`` named ``name``: the input's column when ``node``
        is ``"$name"`` of an input field, else ``{name: expression}``."""
        if isinstance(node.value, str):
            column = self.field_name(node, what)
            resolved = self.operators.shape.resolve(column, node.pos, self.refuse)
            if resolved == E.Ref(column) and (column == name or what == "_id"):
                return column
            check_column(name, node.pos, self.refuse, "grouping field")
            return {name: E.to_text(resolved)}
        if isinstance(node.value, dict):
            check_column(name, node.pos, self.refuse, "grouping field")
            return {name: E.to_text(self.operators.expression(node))}
        raise self.refuse(node.pos, f'{what} must be "$field" or an expression')

    def accumulator(self, name: str, node: Node) -> str:
        """The sparktide aggregate of the accumulator ``{$op: ...}`` of output ``name``."""
        doc = self.mapping(node, f"the accumulator {name}")
        if len(doc) != 1:
            raise self.refuse(node.pos, f"the accumulator {name} needs exactly one operator")
        ((op, arg),) = doc.items()
        pos = node.keys[op]
        if op == "$count":
            if arg.value != {}:
                raise self.refuse(arg.pos, "$count takes {}")
            return "count(*)"
        if op == "$sum" and isinstance(arg.value, int) and not isinstance(arg.value, bool):
            if arg.value != 1:
                raise self.refuse(
                    arg.pos, f"$sum: {arg.value} is not supported yet; $sum: 1 counts documents"
                )
            return "count(*)"
        if op in _RANKED:
            return self.ranked(op, arg)
        function = _ACCUMULATORS.get(op)
        if function is None:
            raise self.refuse(pos, f"the accumulator {op} is not supported yet")
        column = self.argument(arg, op)
        if function in ("first", "last", "collect_list"):
            self.notes.append(
                f"{name}: {op} takes the window's documents in timestamp order (ties in arrival "
                "order); Atlas takes them in arrival order: the same when events arrive in order"
                + ("; null values are left out" if function == "collect_list" else "")
            )
        return f"{function}({column})"

    def ranked(self, op: str, node: Node) -> str:
        """``{$top: {sortBy: {f: 1|-1, ...}, output: "$field" | "$$ROOT"}}`` (and
        ``$bottom``; ``$topN`` / ``$bottomN`` with ``n``) → ``topone(field) over (order
        by f asc, ...)`` and the like."""
        function = _RANKED[op]
        counted = op.endswith("N")
        doc = self.mapping(node, op)
        needed = ("n", "sortBy", "output") if counted else ("sortBy", "output")
        self.keys(node, needed, op)
        for key in needed:
            if key not in doc:
                raise self.refuse(node.pos, f"{op} needs {key}")
        sort = self.mapping(doc["sortBy"], f"{op}.sortBy")
        if not sort:
            raise self.refuse(doc["sortBy"].pos, f"{op}.sortBy names no field")
        keys = []
        for name, direction in sort.items():
            place = doc["sortBy"].keys[name]
            # (a value inside a field, "reading.speed", sorts by the path: semantics §6.12)
            head = name.split(".")[0]
            for part in name.split("."):
                check_column(part, place, self.refuse, "field")
            if self.operators.shape.resolve(head, place, self.refuse) != E.Ref(head):
                raise self.refuse(
                    place,
                    f"{op}.sortBy: {head} is computed by an earlier stage: sorting by "
                    "a computed field is not supported yet",
                )
            if direction.value not in (1, -1) or isinstance(direction.value, bool):
                raise self.refuse(direction.pos, f"{op}.sortBy.{name} must be 1 or -1")
            keys.append(f"{name} {'asc' if direction.value == 1 else 'desc'}")
        output = doc["output"]
        value = "" if output.value == "$$ROOT" else self.plain(output, f"{op}.output")
        count = ""
        if counted:
            n = doc["n"].value
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise self.refuse(doc["n"].pos, f"{op}.n must be a positive integer")
            count = f"{n}, " if value else str(n)
        self.notes.append(
            f"{op}: ties in sortBy are in timestamp order (then arrival order); null and "
            "missing values sort first, numbers before text before anything else"
        )
        return f"{function}({count}{value}) over (order by {', '.join(keys)})"
