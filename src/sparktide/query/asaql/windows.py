"""The windows of ``GROUP BY`` and Stream Analytics' time units.

Windows are recognised while parsing, in both of Stream Analytics' forms
(``TumblingWindow(minute, 5)`` and ``TumblingWindow(Duration(minute, 5), Offset(second,
1))``), with all its time units (``day``/``dd``/``d``, ``hour``/``hh``,
``minute``/``mi``/``n``, ``second``/``ss``/``s``, ``millisecond``/``ms``,
``microsecond``/``mcs``), and checked: argument counts, whole microseconds, positive
sizes, at most 7 days.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sparktide.query.asaql.positions import position
from sparktide.query.ast import Call, Column, Expr, Literal, Operation, WindowSpec
from sparktide.query.refusal import Refuse
from sparktide.time import DAY, HOUR, MILLISECOND, MINUTE, SECOND

__all__ = ["MAX_WINDOW", "TIME_UNITS", "WINDOW_FUNCTIONS", "WindowReader"]

#: Stream Analytics' time units and their abbreviations, in microseconds.
TIME_UNITS: dict[str, int] = {
    "day": DAY,
    "dd": DAY,
    "d": DAY,
    "hour": HOUR,
    "hh": HOUR,
    "minute": MINUTE,
    "mi": MINUTE,
    "n": MINUTE,
    "second": SECOND,
    "ss": SECOND,
    "s": SECOND,
    "millisecond": MILLISECOND,
    "ms": MILLISECOND,
    "microsecond": 1,
    "mcs": 1,
}
_UNIT_LIST = (
    "day (dd, d), hour (hh), minute (mi, n), second (ss, s), millisecond (ms), microsecond (mcs)"
)
#: Window function names (lower case), with their short aliases.
WINDOW_FUNCTIONS: dict[str, str] = {
    "tumblingwindow": "tumbling",
    "tumbling": "tumbling",
    "hoppingwindow": "hopping",
    "hopping": "hopping",
    "slidingwindow": "sliding",
    "sliding": "sliding",
    "sessionwindow": "session",
    "session": "session",
    "snapshotwindow": "snapshot",
}
#: Stream Analytics' longest window.
MAX_WINDOW = 7 * DAY


class WindowReader:
    """Recognises and checks the window functions of GROUP BY, refusing with ``refuse``."""

    def __init__(self, refuse: Refuse) -> None:
        self.refuse = refuse

    def window(self, expr: Expr, over: tuple[Column, ...]) -> WindowSpec | None:
        """The window ``expr`` of GROUP BY is (``over``: its ``OVER (PARTITION BY ...)``
        columns), or ``None`` if it is not a window function."""
        if isinstance(expr, Call) and expr.function == "system.timestamp" and not expr.args:
            return WindowSpec("snapshot", expr.pos)
        if isinstance(expr, Column) and expr.name.lower() == "system.timestamp":
            return WindowSpec("snapshot", expr.pos)
        if not isinstance(expr, Call):
            return None
        if expr.function == "windows":
            raise self.refuse(
                expr.pos,
                "Windows(...) is not supported yet: a job has one window; write a statement "
                "per window (each its own GROUP BY ..., TumblingWindow(...) and INTO)",
            )
        kind = WINDOW_FUNCTIONS.get(expr.function)
        if kind is None:
            return None
        if expr.star or expr.distinct:
            raise self.refuse(expr.pos, f"{expr.text[:-2]}(...) takes a time unit and sizes")
        if over and kind != "session":
            raise self.refuse(over[0].pos, "OVER (PARTITION BY ...) applies to SessionWindow only")
        name = ".".join(expr.name)
        args = list(expr.args)
        if kind == "snapshot":
            if args:
                raise self.refuse(expr.pos, f"{name}() takes no arguments")
            return WindowSpec("snapshot", expr.pos)
        wrapped = bool(args) and isinstance(args[0], Call)
        if wrapped:
            return self.wrapped(kind, name, expr, args, over)
        return self.short(kind, name, expr, args, over)

    def short(
        self, kind: str, name: str, expr: Call, args: list[Expr], over: tuple[Column, ...]
    ) -> WindowSpec:
        """The short form: ``TumblingWindow(minute, 5[, offset])`` ..."""
        shapes = {
            "tumbling": ("timeunit, windowsize[, offsetsize]", 2, 3),
            "hopping": ("timeunit, windowsize, hopsize[, offsetsize]", 3, 4),
            "sliding": ("timeunit, windowsize", 2, 2),
            "session": ("timeunit, timeoutsize, maxdurationsize", 3, 3),
        }
        usage, least, most = shapes[kind]
        if not least <= len(args) <= most:
            raise self.refuse(
                expr.pos, f"{name}({usage}) takes {_count(least, most)}, got {len(args)}"
            )
        unit = self.unit(args[0])
        sizes = [self.amount(a, unit, signed=(i == least)) for i, a in enumerate(args[1:], start=1)]
        offset = sizes[least - 1] if len(args) > least else None
        if kind == "tumbling":
            return self.checked(WindowSpec(kind, expr.pos, size=sizes[0], offset=offset))
        if kind == "hopping":
            return self.checked(
                WindowSpec(kind, expr.pos, size=sizes[0], hop=sizes[1], offset=offset)
            )
        if kind == "sliding":
            return self.checked(WindowSpec(kind, expr.pos, size=sizes[0]))
        return self.checked(
            WindowSpec(kind, expr.pos, timeout=sizes[0], max_duration=sizes[1], partition_by=over)
        )

    def wrapped(
        self, kind: str, name: str, expr: Call, args: list[Expr], over: tuple[Column, ...]
    ) -> WindowSpec:
        """The wrapped form: ``TumblingWindow(Duration(minute, 5), Offset(second, 1))`` ..."""
        expected = {
            "tumbling": (("duration",), ("offset",)),
            "hopping": (("duration", "hop"), ("offset",)),
            "sliding": (("duration",), ()),
            "session": (("timeout", "maxduration"), ()),
        }[kind]
        required, optional = expected
        names = [*required, *optional]
        values: dict[str, int] = {}
        for index, arg in enumerate(args):
            if not isinstance(arg, Call) or arg.function not in names:
                wanted = ", ".join(
                    n.capitalize() if n != "maxduration" else "MaxDuration" for n in names
                )
                raise self.refuse(
                    position(arg), f"{name}(...) takes {wanted}(timeunit, size) arguments here"
                )
            if arg.function in values or names.index(arg.function) < index:
                raise self.refuse(arg.pos, f"{arg.text[:-2]}(...) is out of place in {name}(...)")
            if len(arg.args) != 2 or arg.star or arg.distinct:
                raise self.refuse(arg.pos, f"{arg.text[:-2]}(timeunit, size) takes 2 arguments")
            unit = self.unit(arg.args[0])
            values[arg.function] = self.amount(arg.args[1], unit, signed=arg.function == "offset")
        for needed in required:
            if needed not in values:
                raise self.refuse(
                    expr.pos, f"{name}(...) needs {needed.capitalize()}(timeunit, size)"
                )
        spec = WindowSpec(
            kind,
            expr.pos,
            size=values.get("duration"),
            hop=values.get("hop"),
            offset=values.get("offset"),
            timeout=values.get("timeout"),
            max_duration=values.get("maxduration"),
            partition_by=over if kind == "session" else (),
        )
        return self.checked(spec)

    def checked(self, spec: WindowSpec) -> WindowSpec:
        """``spec``, unless one of its durations is longer than Stream Analytics allows."""
        for value in (spec.size, spec.hop, spec.timeout, spec.max_duration):
            if value is not None and value > MAX_WINDOW:
                raise self.refuse(spec.pos, "Stream Analytics windows last at most 7 days")
        return spec

    def unit(self, expr: Expr) -> int:
        """The time unit ``expr`` names, in microseconds."""
        if isinstance(expr, Column) and len(expr.parts) == 1:
            unit = TIME_UNITS.get(expr.parts[0].lower())
            if unit is not None:
                return unit
        shown = expr.name if isinstance(expr, Column) else "this"
        raise self.refuse(position(expr), f"unknown time unit {shown!r}; use {_UNIT_LIST}")

    def amount(self, expr: Expr, unit: int, *, signed: bool) -> int:
        """A size in ``unit`` s, in microseconds (``signed``: an offset, which may be
        negative)."""
        negative = False
        node = expr
        if isinstance(node, Operation) and node.kind == "sign" and not signed:
            raise self.refuse(position(expr), "a window size must be greater than zero")
        if isinstance(node, Operation) and node.kind == "sign":
            negative = node.operator == "-"
            node = node.operands[0]
        if (
            not isinstance(node, Literal)
            or isinstance(node.value, (bool, str))
            or node.value is None
        ):
            raise self.refuse(position(expr), "expected a number (a size in the time unit)")
        try:
            micros = Decimal(node.value) * unit
        except InvalidOperation:  # pragma: no cover - the grammar only lets numbers through
            raise self.refuse(position(expr), "expected a number") from None
        if micros != micros.to_integral_value():
            raise self.refuse(position(expr), f"{node.value} is not a whole number of microseconds")
        value = int(micros)
        if not signed and value <= 0:
            raise self.refuse(position(expr), "a window size must be greater than zero")
        return -value if negative else value


def _count(least: int, most: int) -> str:
    return f"{least} arguments" if least == most else f"{least} or {most} arguments"
