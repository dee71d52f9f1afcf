"""JVM names remembered once found: the classes, packages and static methods PySpark uses.

PySpark reaches the JVM through py4j by name, on every call: ``F.col("x")`` looks up the
class ``functions`` and then its method ``col``, and turning a Python list into a Scala
sequence looks up ``PythonUtils``. Each lookup is a round trip to the JVM (for a member,
the JVM lists the class's methods), and py4j keeps none of them: building one
micro-batch's plans makes thousands (docs/design.md, "The test suite's Spark sessions").

:func:`remember_jvm_names` has py4j keep each class, package and static method it finds on
the object it found it on, so the next lookup of that name reads an attribute. What may
change is still asked each time: a static field's value, and a name not found.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from py4j import java_gateway

__all__ = ["remember_jvm_names"]

#: What a lookup may keep: names of the JVM's code, which do not change while it runs.
_KEPT = (java_gateway.JavaClass, java_gateway.JavaPackage, java_gateway.JavaMember)
#: The py4j types whose attributes are JVM names looked up by ``__getattr__``.
_OWNERS = (java_gateway.JVMView, java_gateway.JavaPackage, java_gateway.JavaClass)


def remember_jvm_names() -> None:
    """Make py4j keep the classes, packages and static methods it finds (idempotent).

    Applies to the whole Python process, every gateway included. What a name was found
    to be, it stays: a class found by its short name through a JVM view's imports, even
    if a later ``java_import`` would resolve the name differently; a package (py4j takes
    any name that is not a class for one), even if a jar added later has a class by
    that name."""
    for owner in _OWNERS:
        lookup = owner.__getattr__
        if not getattr(lookup, "_remembers", False):
            owner.__getattr__ = _remembering(lookup)  # type: ignore[method-assign]


def _remembering(lookup: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """``lookup`` that stores what it finds, when it is a name of code, on the instance
    (``__getattr__`` is only called for names the instance does not hold)."""

    def remembered(self: Any, name: str) -> Any:
        found = lookup(self, name)
        if isinstance(found, _KEPT):
            self.__dict__[name] = found
        return found

    remembered._remembers = True  # type: ignore[attr-defined]
    remembered.__wrapped__ = lookup  # type: ignore[attr-defined]
    return remembered
