"""Reading a pipeline's documents: mappings, keys, strings, field paths, durations,
stage names and endpoints, each refused with its place when it is not what Atlas takes.
"""

from __future__ import annotations

from sparktide.query.located import Node
from sparktide.query.refusal import Refuse, check_column
from sparktide.time import DAY, HOUR, MILLISECOND, MINUTE, SECOND

__all__ = ["TIME_UNITS", "Documents"]

#: Atlas' time units, in microseconds.
TIME_UNITS = {"ms": MILLISECOND, "second": SECOND, "minute": MINUTE, "hour": HOUR, "day": DAY}


class Documents:
    """Reads the documents of one pipeline, refusing with ``refuse``; the stages' readers
    build on it."""

    def __init__(self, refuse: Refuse) -> None:
        self.refuse = refuse

    def mapping(self, node: Node, what: str) -> dict[str, Node]:
        """The document ``node`` holds (``what``: its name in messages)."""
        if not isinstance(node.value, dict):
            raise self.refuse(node.pos, f"{what} must be a document ({{...}})")
        return node.value

    def keys(self, node: Node, allowed: tuple[str, ...], what: str, refused: str = "") -> None:
        """Refuse a key of ``node`` outside ``allowed`` (``refused``: why, in messages)."""
        for key, pos in node.keys.items():
            if key not in allowed:
                hint = f" (known: {', '.join(allowed)})"
                raise self.refuse(pos, f"{key} in {what} is not supported yet{refused}{hint}")

    def string(self, node: Node, what: str) -> str:
        """The non-empty string ``node`` holds."""
        if not isinstance(node.value, str) or not node.value:
            raise self.refuse(node.pos, f"{what} must be a non-empty string")
        return node.value

    def field_path(self, node: Node, what: str) -> str:
        """A ``"$field"`` path → the column ``field``, or ``"$a.b"`` → ``a.b``: the value
        ``b`` inside the field ``a`` (which :meth:`Shape.resolve` reads)."""
        value = node.value
        if not isinstance(value, str) or not value.startswith("$") or value.startswith("$$"):
            raise self.refuse(
                node.pos, f'{what} must be a field path such as "$value", got {value!r}'
            )
        parts = value[1:].split(".")
        return ".".join(check_column(part, node.pos, self.refuse, "field") for part in parts)

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

    def stage_name(self, stage: Node) -> tuple[str, Node]:
        """The ``$stage`` name of a stage document, and its body."""
        doc = self.mapping(stage, "a stage")
        if len(doc) != 1:
            raise self.refuse(stage.pos, "a stage is a document with one $stage key")
        ((name, body),) = doc.items()
        if not name.startswith("$"):
            raise self.refuse(stage.keys[name], f"{name!r} is not a stage name ($source, ...)")
        return name, body

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
