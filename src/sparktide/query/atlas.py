"""Atlas Stream Processing pipelines → sparktide :class:`~sparktide.job.Job` (docs/query.md).

A pipeline is a JSON (or YAML) list of stages, or an object ``{"name": ...,
"pipeline": [...], "options": {"dlq": {...}}}`` holding the list and the processor's
dead-letter queue. Translated: ``$source`` (with ``timeField``), one
``$tumblingWindow`` or ``$hoppingWindow`` (``interval``, ``hopSize``, ``offset``,
``allowedLateness``, ``idleTimeout``, an inner ``$group`` with ``$sum``, ``$avg``,
``$min``, ``$max``, ``$count``, ``$push``, ``$first``, ``$last``), ``$emit``/``$merge``
and the dead-letter queue. Atlas windows are ``[start, end)`` and keep events behind
the watermark for their windows to decide (``on_out_of_order = "accept"``; the window's
``allowedLateness``, 3 seconds unless given, keeps it open). Every other stage or key is
refused with its line and column.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sparktide import expr as E
from sparktide.errors import ConfigError, QueryError
from sparktide.query.ast import Pos
from sparktide.query.bind import Bindings
from sparktide.query.located import Node
from sparktide.query.translate import StatementJob, Translation, build_job, check_column
from sparktide.time import DAY, HOUR, MILLISECOND, MINUTE, SECOND, format_duration

__all__ = ["ATLAS_ORDERING", "TIME_UNITS", "translate_pipeline"]

#: Atlas' time units, in microseconds.
TIME_UNITS = {"ms": MILLISECOND, "second": SECOND, "minute": MINUTE, "hour": HOUR, "day": DAY}
#: The ordering an Atlas pipeline gets unless its job file says otherwise: no arrival-time
#: checks, the watermark is the newest event time, events behind it go to their windows.
ATLAS_ORDERING = {
    "early_arrival": "none",
    "late_arrival": "none",
    "out_of_order": "0s",
    "on_out_of_order": "accept",
}
#: Atlas' default allowedLateness.
DEFAULT_ALLOWED_LATENESS = 3 * SECOND
_WINDOW_STAGES = {"$tumblingWindow": "tumbling", "$hoppingWindow": "hopping"}
_SINKS = ("$emit", "$merge")
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
_KNOWN_STAGES = (
    "$addFields",
    "$cachedLookup",
    "$externalFunction",
    "$group",
    "$https",
    "$lookup",
    "$project",
    "$redact",
    "$replaceRoot",
    "$replaceWith",
    "$sessionWindow",
    "$set",
    "$sort",
    "$unset",
    "$unwind",
    "$validate",
)


class _Pipeline:
    def __init__(self, root: Node, bindings: Bindings, source: str) -> None:
        self.root = root
        self.bindings = bindings
        self.source = source
        self.notes: list[str] = []

    # ---------------------------------------------------------------- helpers
    def refuse(self, pos: Pos, message: str) -> QueryError:
        return QueryError(self.source, pos.line, pos.column, message)

    def mapping(self, node: Node, what: str) -> dict[str, Node]:
        if not isinstance(node.value, dict):
            raise self.refuse(node.pos, f"{what} must be a document ({{...}})")
        return node.value

    def keys(self, node: Node, allowed: tuple[str, ...], what: str, refused: str = "") -> None:
        for key, pos in node.keys.items():
            if key not in allowed:
                hint = f" (known: {', '.join(allowed)})"
                raise self.refuse(pos, f"{key} in {what} is not supported yet{refused}{hint}")

    def string(self, node: Node, what: str) -> str:
        if not isinstance(node.value, str) or not node.value:
            raise self.refuse(node.pos, f"{what} must be a non-empty string")
        return node.value

    def field_path(self, node: Node, what: str) -> str:
        """A ``"$field"`` path → the column ``field``."""
        value = node.value
        if not isinstance(value, str) or not value.startswith("$") or value.startswith("$$"):
            raise self.refuse(
                node.pos, f'{what} must be a field path such as "$value", got {value!r}'
            )
        name = value[1:]
        if "." in name:
            raise self.refuse(
                node.pos, f"{value}: nested fields are not supported yet; flatten the input"
            )
        return check_column(name, node.pos, self.refuse, "field")

    def duration(self, node: Node, what: str, *, zero: bool = False) -> int:
        """``{size, unit}`` (or ``0`` where allowed) → microseconds."""
        if zero and node.value == 0 and not isinstance(node.value, bool):
            return 0
        doc = self.mapping(node, what)
        self.keys(node, ("size", "unit"), what)
        if "size" not in doc or "unit" not in doc:
            raise self.refuse(node.pos, f"{what} needs size and unit")
        size, unit = doc["size"], doc["unit"]
        if isinstance(size.value, bool) or not isinstance(size.value, int) or size.value <= 0:
            raise self.refuse(size.pos, f"{what}.size must be a positive integer")
        factor = TIME_UNITS.get(unit.value) if isinstance(unit.value, str) else None
        if factor is None:
            raise self.refuse(
                unit.pos, f"{what}.unit must be one of {', '.join(TIME_UNITS)}, got {unit.value!r}"
            )
        return size.value * factor

    # ----------------------------------------------------------------- stages
    def stages(self) -> tuple[list[Node], Node | None]:
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

    def stage_name(self, stage: Node) -> tuple[str, Node]:
        doc = self.mapping(stage, "a stage")
        if len(doc) != 1:
            raise self.refuse(stage.pos, "a stage is a document with one $stage key")
        ((name, body),) = doc.items()
        if not name.startswith("$"):
            raise self.refuse(stage.keys[name], f"{name!r} is not a stage name ($source, ...)")
        return name, body

    def run(self) -> Translation:
        stages, options = self.stages()
        first_name, first = self.stage_name(stages[0])
        if first_name != "$source":
            raise self.refuse(stages[0].pos, f"a pipeline starts with $source, not {first_name}")
        source_table = self.source_stage(first)
        window: dict[str, Any] | None = None
        window_pos = stages[0].pos
        sink: tuple[str | None, Pos] = (None, stages[-1].pos)
        matches: list[E.Expr] = []
        for index, stage in enumerate(stages[1:], start=1):
            name, body = self.stage_name(stage)
            pos = stage.keys[name]
            if name in _SINKS:
                if index != len(stages) - 1:
                    raise self.refuse(pos, f"{name} must be the last stage")
                sink = (self.sink_stage(name, body), pos)
            elif name in _WINDOW_STAGES:
                if window is not None:
                    raise self.refuse(pos, "a second window stage: a job has one window")
                window = self.window_stage(_WINDOW_STAGES[name], name, body)
                window_pos = pos
            elif name == "$match":
                if window is not None:
                    raise self.refuse(
                        pos, "$match after the window is not supported yet: it filters events"
                    )
                matches.append(self.match(body))
            elif name == "$source":
                raise self.refuse(pos, "a second $source: a job reads one input")
            elif name in _KNOWN_STAGES:
                raise self.refuse(pos, f"the stage {name} is not supported yet")
            else:
                raise self.refuse(pos, f"unknown stage {name}")
            if window is not None and name not in _WINDOW_STAGES and name not in _SINKS:
                raise self.refuse(pos, f"{name} after the window is not supported yet")
        output_table = self.output(sink)
        if options is not None:
            self.dead_letter_queue(options, output_table)
        data: dict[str, Any] = {
            "source": source_table,
            "ordering": self.ordering(),
            "output": output_table,
        }
        if matches:
            condition = matches[0]
            for more in matches[1:]:
                condition = E.Binary("AND", condition, more)
            data["filter"] = {"where": E.to_text(condition)}
            self.notes.append(
                "$match is [filter] where: it applies after the ordering policy; an event that "
                "fails it is counted as dropped (filtered); a field holding an array matches "
                "nothing (Atlas matches its elements)"
            )
        if window is not None:
            for key, value in self.bindings.window.items():
                if key in window and window[key] != value:
                    raise ConfigError(
                        f"window.{key}", f"is {value!r} but the pipeline says {window[key]!r}"
                    )
                window[key] = value
            data["window"] = window
        else:
            self.notes.append(
                "no window: the job releases every event in timestamp order (Atlas emits "
                "them in arrival order)"
            )
        job = build_job(data, self.bindings.base_dir, self.refuse, window_pos)
        start = stages[0].pos
        statement = StatementJob(job, tuple(self.notes), sink[0], start.line, start.column)
        return Translation((statement,), self.source)

    # ----------------------------------------------------------------- source
    def source_stage(self, node: Node) -> dict[str, Any]:
        doc = self.mapping(node, "$source")
        self.keys(
            node,
            ("connectionName", "topic", "db", "coll", "timeField", "tsFieldName", "config"),
            "$source",
        )
        if "connectionName" not in doc:
            raise self.refuse(node.pos, "$source needs connectionName")
        name = self.endpoint(node, "$source")
        if self.bindings.is_reference(name):
            raise self.refuse(
                node.pos,
                f"$source reads {name}, which the job file binds as reference data (reference "
                "= true): a pipeline's $source is a stream ($lookup, which reads a table, is "
                "not supported yet)",
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

    # ----------------------------------------------------------------- window
    def window_stage(self, kind: str, name: str, node: Node) -> dict[str, Any]:
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

    def group(self, node: Node) -> tuple[list[str], dict[str, str]]:
        doc = self.mapping(node, "$group")
        if "_id" not in doc:
            raise self.refuse(node.pos, "$group needs _id")
        group_by = self.group_id(doc["_id"])
        aggregates: dict[str, str] = {}
        for name, spec in doc.items():
            if name == "_id":
                continue
            pos = node.keys[name]
            check_column(name, pos, self.refuse, "output field")
            if name in group_by:
                raise self.refuse(pos, f"{name} is also a grouping field")
            aggregates[name] = self.accumulator(name, spec)
        return group_by, aggregates

    def group_id(self, node: Node) -> list[str]:
        if node.value is None:
            return []
        if isinstance(node.value, str):
            column = self.field_path(node, "_id")
            self.notes.append(f'_id: "${column}" is the column {column} of the window records')
            return [column]
        if isinstance(node.value, dict):
            columns = []
            for key, value in node.value.items():
                column = self.field_path(value, f"_id.{key}")
                if key != column:
                    raise self.refuse(
                        node.keys[key],
                        f'_id.{key}: "${column}": renaming a grouping field is not supported '
                        f'yet; write {column}: "${column}"',
                    )
                columns.append(column)
            self.notes.append(
                f"_id {{{', '.join(columns)}}}: the window records carry each as a column"
            )
            return columns
        raise self.refuse(node.pos, '_id must be null, "$field" or {name: "$name", ...}')

    def accumulator(self, name: str, node: Node) -> str:
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
        function = _ACCUMULATORS.get(op)
        if function is None:
            raise self.refuse(pos, f"the accumulator {op} is not supported yet")
        column = self.field_path(arg, op)
        if function in ("first", "last", "collect_list"):
            self.notes.append(
                f"{name}: {op} takes the window's documents in timestamp order (ties in arrival "
                "order); Atlas takes them in arrival order: the same when events arrive in order"
                + ("; null values are left out" if function == "collect_list" else "")
            )
        return f"{function}({column})"

    # ------------------------------------------------------------------ $match
    def match(self, node: Node) -> E.Expr:
        """A ``$match`` query document → a filter condition: equality, ``$eq $ne $gt $gte
        $lt $lte $in`` on top-level fields, ``$and``/``$or`` of such documents; several
        keys are joined by AND."""
        doc = self.mapping(node, "$match")
        if not doc:
            raise self.refuse(node.pos, "$match needs a condition")
        parts = []
        for key, value in doc.items():
            pos = node.keys[key]
            if key in ("$and", "$or"):
                if not isinstance(value.value, list) or not value.value:
                    raise self.refuse(value.pos, f"{key} takes a non-empty list of documents")
                items = [self.match(item) for item in value.value]
                combined = items[0]
                for item in items[1:]:
                    combined = E.Binary(key[1:].upper(), combined, item)
                parts.append(combined)
                continue
            if key.startswith("$"):
                raise self.refuse(pos, f"{key} in $match is not supported yet")
            if "." in key:
                raise self.refuse(
                    pos, f"{key}: nested fields are not supported yet; flatten the input"
                )
            field = E.Ref(check_column(key, pos, self.refuse, "field"))
            if isinstance(value.value, dict):
                operators = value.value
                if not operators or not all(k.startswith("$") for k in operators):
                    raise self.refuse(
                        value.pos, f"{key}: a document value is not supported yet (use $eq ...)"
                    )
                for op, operand in operators.items():
                    parts.append(self.comparison(field, op, operand, value.keys[op]))
            else:
                parts.append(self.comparison(field, "$eq", value, pos))
        result = parts[0]
        for part in parts[1:]:
            result = E.Binary("AND", result, part)
        return result

    _COMPARISONS: ClassVar[dict[str, str]] = {
        "$eq": "=",
        "$ne": "<>",
        "$gt": ">",
        "$gte": ">=",
        "$lt": "<",
        "$lte": "<=",
    }

    def comparison(self, field: E.Ref, op: str, operand: Node, pos: Pos) -> E.Expr:
        if op == "$in":
            if not isinstance(operand.value, list) or not operand.value:
                raise self.refuse(operand.pos, "$in takes a non-empty list of values")
            values = [self.literal(v) for v in operand.value]
            present = [v for v in values if v.value is not None]
            condition: E.Expr | None = E.In(field, tuple(present)) if present else None
            if len(present) < len(values):  # null in the list matches missing and null
                condition = (
                    E.IsNull(field)
                    if condition is None
                    else E.Binary("OR", condition, E.IsNull(field))
                )
            assert condition is not None
            return condition
        sql = self._COMPARISONS.get(op)
        if sql is None:
            raise self.refuse(pos, f"{op} in $match is not supported yet")
        value = self.literal(operand)
        if value.value is None:
            if op not in ("$eq", "$ne"):
                raise self.refuse(operand.pos, f"{op}: null is not supported yet")
            return E.IsNull(field, negated=op == "$ne")
        if op == "$ne":  # Atlas: also a missing field, null, or a value of another type
            return E.Binary(
                "OR", E.Binary("<>", field, value), E.IsNull(E.Binary("=", field, value))
            )
        return E.Binary(sql, field, value)

    def literal(self, node: Node) -> E.Lit:
        value = node.value
        if isinstance(value, (dict, list)):
            raise self.refuse(node.pos, "documents and arrays in $match are not supported yet")
        if isinstance(value, str) and value.startswith("$"):
            raise self.refuse(node.pos, f"{value}: comparing two fields is not supported yet")
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            raise self.refuse(node.pos, "the number is beyond the range of a double")
        return E.Lit(value)

    # ------------------------------------------------------------------ sinks
    def sink_stage(self, name: str, node: Node) -> str:
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

    def endpoint(self, node: Node, what: str) -> str:
        """The name a job file binds: ``topic``, else ``db.coll``, else ``connectionName``."""
        doc = self.mapping(node, what)
        if "connectionName" not in doc:
            raise self.refuse(node.pos, f"{what} needs connectionName")
        connection = self.string(doc["connectionName"], "connectionName")
        if "topic" in doc:
            return self.string(doc["topic"], "topic")
        if "coll" in doc:
            coll = self.string(doc["coll"], "coll")
            if "db" not in doc:
                raise self.refuse(node.pos, f"{what} names coll without db")
            return f"{self.string(doc['db'], 'db')}.{coll}"
        if "db" in doc:
            raise self.refuse(node.pos, f"{what} names db without coll")
        return connection

    def ordering(self) -> dict[str, Any]:
        ordering = dict(ATLAS_ORDERING)
        given = dict(self.bindings.ordering)
        action = given.get("on_out_of_order")
        if action is not None and action != "accept":
            raise ConfigError(
                "ordering.on_out_of_order",
                f"is {action!r}, but Atlas pipelines keep events behind the watermark for "
                'their windows ("accept"); remove the key',
            )
        ordering.update(given)
        return ordering


def translate_pipeline(root: Node, bindings: Bindings, source: str) -> Translation:
    """Translate an Atlas Stream Processing pipeline into a job.

    Parameters
    ----------
    root
        The parsed pipeline (:func:`sparktide.query.located.parse_json` or
        :func:`~sparktide.query.located.parse_yaml`).
    bindings
        The job file's bindings of input and output names.
    source
        The pipeline's name in messages (its file name).

    Raises
    ------
    QueryError
        For a stage or key the engines cannot run yet, naming it and its place.
    ConfigError
        When the job file contradicts the pipeline (naming the key).
    """
    return _Pipeline(root, bindings, source).run()
