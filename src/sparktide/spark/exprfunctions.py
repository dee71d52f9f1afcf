"""Scalar functions and casts of job-file expressions in Spark SQL: the rules of
:mod:`sparktide.expr.functions` and :mod:`sparktide.expr.casts`, kind by kind, with
Spark SQL functions only (no Python per row) and nothing that can raise under ANSI mode
(``try_*`` functions, guarded ``CASE`` branches, integer arithmetic for dates)."""

from __future__ import annotations

from sparktide.expr import nodes
from sparktide.expr.functions import (
    JS_SPACE,
    MONTH_NAMES,
    RADIX_DIGITS,
    WEEKDAY_NAMES,
    patindex_regex,
)
from sparktide.spark.exprvalues import Value, finite, is_other, number, text_of
from sparktide.spark.inputs.contract import INSTANT_RANGE
from sparktide.spark.inputs.sqlvalues import instant_of, shown_text
from sparktide.spark.sql import sql_string
from sparktide.time import DAY, HOUR, MINUTE, SECOND

__all__ = [
    "MAKE_TIMES",
    "TIME_ARGUMENT",
    "cast_value",
    "composite_failure",
    "datediff_calendar",
    "floor_div",
    "scalar",
    "type_name",
]

#: The argument of each date function that is a time (read as an instant first).
TIME_ARGUMENT = {
    "DATEADD": 1,
    "DATEPART": 0,
    "DATENAME": 0,
    "DAY": 0,
    "MONTH": 0,
    "YEAR": 0,
    "GETTYPE": 0,  # (a text that reads as a time is a datetime)
}
_BIG = "4503599627370496D"  # 2^52: every double at least this large is an integer
_INT_MIN = "-9223372036854775808"


def floor_div(sql: str, unit: int) -> str:
    """``floor(sql / unit)`` of a ``BIGINT`` in integers (``div`` truncates towards zero;
    taking the non-negative remainder off first makes it a floor)."""
    if unit == 1:
        return sql
    u = f"CAST({unit} AS BIGINT)"
    return f"(({sql} - pmod({sql}, {u})) div {u})"


def _date(instant: str) -> str:
    return f"date_from_unix_date(CAST({floor_div(instant, DAY)} AS INT))"


def _bigint(sql: str) -> str:
    return f"CAST({sql} AS BIGINT)"


# ---------------------------------------------------------------------- casts
def cast_value(value: Value, type_: str) -> tuple[Value, str]:
    """``TRY_CAST(value AS type_)``, and SQL of the message of a ``CAST`` that fails
    (``NULL`` when it does not), as :func:`sparktide.expr.casts.cast` words it."""
    i, d, s, b = value.i, value.d, value.s, value.b
    trimmed = f"trim({s})" if s else None
    if type_ == "bigint":
        cases = []
        if b:
            cases.append(f"WHEN {b} IS NOT NULL THEN CASE WHEN {b} THEN 1 ELSE 0 END")
        if i:
            cases.append(f"WHEN {i} IS NOT NULL THEN {i}")
        if d:
            cases.append(f"WHEN {d} IS NOT NULL THEN try_cast({d} AS BIGINT)")
        if s:
            pattern = sql_string(r"^ *[+-]?[0-9]+ *\z")
            cases.append(f"WHEN {s} RLIKE {pattern} THEN try_cast({trimmed} AS BIGINT)")
        made = Value(i=_bigint(f"CASE {' '.join(cases)} END") if cases else None)
    elif type_ == "float":
        cases = []
        if b:
            cases.append(f"WHEN {b} IS NOT NULL THEN CASE WHEN {b} THEN 1.0D ELSE 0.0D END")
        num = number(value)
        if num:
            cases.append(f"WHEN {num} IS NOT NULL THEN {num}")
        if s:
            pattern = sql_string(r"^ *[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)? *\z")
            cases.append(
                f"WHEN {s} RLIKE {pattern} THEN {finite(f'try_cast({trimmed} AS DOUBLE)')}"
            )
        made = Value(d=f"CAST(CASE {' '.join(cases)} END AS DOUBLE)" if cases else None)
    elif type_ == "nvarchar(max)":
        made = Value(s=text_of(value))
    elif type_ == "datetime":  # the instant: the caller writes it as text (iso)
        made = Value(i=instant_of(s) if s else None)
    else:
        assert type_ == "bit"
        cases = []
        if b:
            cases.append(f"WHEN {b} IS NOT NULL THEN {b}")
        if i:
            cases.append(f"WHEN {i} IS NOT NULL THEN {i} <> 0")
        if d:
            cases.append(f"WHEN {d} IS NOT NULL THEN {d} <> 0")
        if s:
            cases.append(f"WHEN lower({trimmed}) IN ('true', '1') THEN true")
            cases.append(f"WHEN lower({trimmed}) IN ('false', '0') THEN false")
        made = Value(b=f"CAST(CASE {' '.join(cases)} END AS BOOLEAN)" if cases else None)
    return made, _failure(value, made, type_)


def _failure(value: Value, made: Value, type_: str) -> str:
    """SQL of why ``value`` did not convert to ``type_`` (``made`` its try-conversion)."""
    converted = " AND ".join(f"{sql} IS NULL" for sql in made.parts().values()) or "true"
    prefix = f"CAST to {type_}: "
    whys = []
    if value.s:
        whys.append(
            f"WHEN {value.s} IS NOT NULL THEN concat({sql_string(prefix + chr(39))}, "
            f"{shown_text(value.s)}, {sql_string(chr(39) + ' is not a ' + type_)})"
        )
    if value.d and type_ == "bigint":
        whys.append(f"WHEN {value.d} IS NOT NULL THEN '{prefix}a float beyond the range of bigint'")
    for kind, name in (("i", "an integer"), ("d", "a float"), ("b", "a boolean")):
        if getattr(value, kind):
            whys.append(
                f"WHEN {getattr(value, kind)} IS NOT NULL THEN '{prefix}{name} is not a {type_}'"
            )
    whys.append(f"ELSE '{prefix}an array or object is not a {type_}'")
    return f"CASE WHEN ({value.null}) OR NOT ({converted}) THEN NULL {' '.join(whys)} END"


def composite_failure(value: Value, made: str | None, type_: str) -> str:
    """SQL of why ``value`` is no object (``type_`` ``record``) or array (``array``):
    ``made`` is SQL of the variant when it is one; as
    :func:`sparktide.expr.casts.cast` words it."""
    prefix = f"CAST to {type_}: "
    wanted = nodes.COMPOSITE_TYPES[type_]
    whys = []
    if value.s:
        whys.append(
            f"WHEN {value.s} IS NOT NULL THEN concat({sql_string(prefix + chr(39))}, "
            f"{shown_text(value.s)}, {sql_string(chr(39) + ' is not ' + wanted)})"
        )
    for kind, name in (("i", "an integer"), ("d", "a float"), ("b", "a boolean")):
        if getattr(value, kind):
            whys.append(
                f"WHEN {getattr(value, kind)} IS NOT NULL THEN '{prefix}{name} is not {wanted}'"
            )
    if value.v:
        whys.append(
            f"WHEN schema_of_variant({value.v}) LIKE 'ARRAY%' THEN "
            f"'{prefix}an array is not {wanted}'"
        )
    whys.append(f"ELSE '{prefix}a record is not {wanted}'")
    done = f"({value.null})" + (f" OR {made} IS NOT NULL" if made else "")
    return f"CASE WHEN {done} THEN NULL {' '.join(whys)} END"


# ------------------------------------------------------------------ functions
def _math(name: str, x: Value) -> Value:
    i, d = x.i, x.d
    if name == "ABS":
        return Value(
            i=f"CASE WHEN {i} <> {_INT_MIN} THEN abs({i}) END" if i else None,
            d=f"abs({d})" if d else None,
        )
    if name in ("CEILING", "FLOOR"):
        fn = "ceil" if name == "CEILING" else "floor"
        return Value(
            i=i,
            d=f"CASE WHEN abs({d}) >= {_BIG} THEN {d} ELSE CAST({fn}({d}) AS DOUBLE) END"
            if d
            else None,
        )
    if name == "SIGN":
        return Value(
            i=f"CAST(sign({i}) AS BIGINT)" if i else None,
            d=f"CASE WHEN {d} > 0 THEN 1.0D WHEN {d} < 0 THEN -1.0D WHEN {d} = 0 THEN 0.0D END"
            if d
            else None,
        )
    num = number(x)
    if not num:
        return Value()
    sql = {
        "SQRT": f"sqrt({num})",
        "SQUARE": f"({num} * {num})",
        "EXP": f"exp({num})",
    }[name]
    return Value(d=finite(sql))


def _round(x: Value, length: int) -> Value:
    if length >= 0:
        i = x.i
    else:
        i = f"try_cast(round(CAST({x.i} AS DECIMAL(20,0)), {length}) AS BIGINT)" if x.i else None
    d = finite(f"round({x.d}, {length})") if x.d else None
    return Value(i=i, d=d)


def _strings(name: str, args: list[Value]) -> Value:
    s = [a.s for a in args]
    if not all(s):
        return Value()
    ready = " AND ".join(f"{x} IS NOT NULL" for x in s)
    if name == "LEN":
        return Value(i=_bigint(f"length(rtrim({s[0]}))"))
    if name in ("LOWER", "UPPER", "LTRIM", "RTRIM", "TRIM"):
        return Value(s=f"{name.lower()}({s[0]})")
    if name == "REPLACE":
        return Value(
            s=f"CASE WHEN {ready} THEN CASE WHEN {s[1]} = '' THEN {s[0]} "
            f"ELSE replace({s[0]}, {s[1]}, {s[2]}) END END"
        )
    raise AssertionError(name)


def _substring(text: Value, start: Value, length: Value) -> Value:
    s, st, ln = text.s, start.i, length.i
    if not (s and st and ln):
        return Value()
    first = f"least(greatest({st}, 1), 2147483647)"
    last = f"(CAST({st} AS DECIMAL(21,0)) + {ln} - 1)"
    count = f"CAST(least(greatest({last} - {first} + 1, 0), 2147483647) AS INT)"
    return Value(
        s=f"CASE WHEN {s} IS NOT NULL AND {st} IS NOT NULL AND {ln} >= 0 THEN "
        f"substr({s}, CAST({first} AS INT), {count}) END"
    )


def _charindex(find: Value, text: Value, start: str | None) -> Value:
    f, s = find.s, text.s
    if not (f and s and start):
        return Value()
    return Value(
        i=f"CASE WHEN {f} IS NOT NULL AND {s} IS NOT NULL AND {start} IS NOT NULL THEN "
        f"CAST(CASE WHEN {f} = '' OR {start} > length({s}) THEN 0 "
        f"ELSE locate({f}, {s}, CAST(greatest({start}, 1) AS INT)) END AS BIGINT) END"
    )


def parseint(text: Value, radix: int) -> Value:
    """JavaScript's ``parseInt`` of a text (:func:`sparktide.expr.functions.parseint`):
    the sign and the digits by one regular expression (the ``0x`` of radix 16 taken
    whole or not at all), their value by ``conv``; null past 63 bits."""
    s = text.s
    if not s:
        return Value()
    letters = RADIX_DIGITS[10:radix]
    digits = f"0-{min(radix, 10) - 1}" + (
        f"a-{letters[-1]}A-{letters[-1].upper()}" if letters else ""
    )
    space = "".join(f"\\x{{{ord(c):04x}}}" for c in JS_SPACE)
    prefix = "(?:0[xX])?+" if radix == 16 else ""
    regex = sql_string(f"^[{space}]*([+-]?){prefix}([{digits}]+)")
    sign = f"regexp_extract({s}, {regex}, 1)"
    found = f"regexp_extract({s}, {regex}, 2)"
    magnitude = f"try_cast(conv({found}, {radix}, 10) AS BIGINT)"
    return Value(
        i=f"CASE WHEN {found} <> '' THEN "
        f"CASE WHEN {sign} = '-' THEN -{magnitude} ELSE {magnitude} END END"
    )


def _concat(args: list[Value]) -> Value:
    others = " OR ".join(is_other(a) for a in args)
    texts = ", ".join(f"coalesce({text_of(a)}, '')" for a in args)
    return Value(s=f"CASE WHEN {others} THEN NULL ELSE concat({texts}) END")


def _days_from_civil(y: str, m: str, d: str) -> str:
    """Days since 1970-01-01 of a valid (year ≥ 1, month, day), in integers."""
    shifted = f"({y} - CASE WHEN {m} <= 2 THEN 1 ELSE 0 END)"
    era = f"({shifted} div 400)"
    yoe = f"({shifted} - {era} * 400)"
    doy = f"((153 * ({m} + CASE WHEN {m} > 2 THEN -3 ELSE 9 END) + 2) div 5 + {d} - 1)"
    doe = f"({yoe} * 365 + {yoe} div 4 - {yoe} div 100 + {doy})"
    return f"({era} * 146097 + {doe} - 719468)"


def _from_parts(args: list[Value]) -> Value:
    parts = [a.i for a in args]
    if not all(parts):
        return Value()
    y, m, d, *rest = parts
    leap = f"(pmod({y}, 4) = 0 AND (pmod({y}, 100) <> 0 OR pmod({y}, 400) = 0))"
    month_days = (
        f"CASE WHEN {m} = 2 THEN CASE WHEN {leap} THEN 29 ELSE 28 END "
        f"WHEN {m} IN (4, 6, 9, 11) THEN 30 ELSE 31 END"
    )
    checks = [f"{y} BETWEEN 1 AND 9999", f"{m} BETWEEN 1 AND 12", f"{d} >= 1"]
    instant = f"{_days_from_civil(y, m, d)} * {DAY}"  # type: ignore[arg-type]
    if rest:
        h, mi, sec, ms = rest
        checks += [
            f"{h} BETWEEN 0 AND 23",
            f"{mi} BETWEEN 0 AND 59",
            f"{sec} BETWEEN 0 AND 59",
            f"{ms} BETWEEN 0 AND 999",
        ]
        instant += f" + {h} * {HOUR} + {mi} * {MINUTE} + {sec} * {SECOND} + {ms} * 1000"
    valid = " AND ".join(checks)
    return Value(i=f"CASE WHEN {valid} THEN CASE WHEN {d} <= {month_days} THEN {instant} END END")


def _date_part(unit: str, t: str) -> str:
    """``DATEPART(unit, t)`` of the instant ``t`` (a ``BIGINT`` column), a ``BIGINT``."""
    date = _date(t)
    of_day = f"pmod({t}, {DAY})"
    sql = {
        "year": f"year({date})",
        "quarter": f"quarter({date})",
        "month": f"month({date})",
        "day": f"dayofmonth({date})",
        "dayofyear": f"dayofyear({date})",
        "weekday": f"dayofweek({date})",
        "week": f"((dayofyear({date}) + dayofweek(make_date(year({date}), 1, 1)) - 2) div 7 + 1)",
        "hour": f"({of_day} div {HOUR})",
        "minute": f"(pmod({t}, {HOUR}) div {MINUTE})",
        "second": f"(pmod({t}, {MINUTE}) div {SECOND})",
        "millisecond": f"(pmod({t}, {SECOND}) div 1000)",
        "microsecond": f"pmod({t}, {SECOND})",
    }[unit]
    return _bigint(sql)


def _dateadd(unit: str, n: Value, t: str) -> Value:
    if not n.i:
        return Value()
    if unit in nodes.DATEDIFF_UNITS or unit == "week":
        length = DAY * 7 if unit == "week" else nodes.DATEDIFF_UNITS[unit][1]
        moved = f"try_add({t}, try_multiply({n.i}, CAST({length} AS BIGINT)))"
    else:
        months = f"try_multiply({n.i}, {dict(year=12, quarter=3, month=1)[unit]})"
        shifted = f"add_months({_date(t)}, CAST({months} AS INT))"
        moved = (
            f"CASE WHEN abs({months}) <= 120000 THEN "
            f"CAST(unix_date({shifted}) AS BIGINT) * {DAY} + pmod({t}, {DAY}) END"
        )
    return Value(i=f"CASE WHEN ({moved}) {INSTANT_RANGE} THEN {moved} END")


def datediff_calendar(unit: str, start: str, end: str) -> str:
    """``DATEDIFF`` in a calendar unit of two instants (``BIGINT`` columns)."""
    if unit == "week":
        return (
            f"({floor_div(f'({floor_div(end, DAY)} + 4)', 7)} - "
            f"{floor_div(f'({floor_div(start, DAY)} + 4)', 7)})"
        )
    a, b = _date(start), _date(end)
    if unit == "year":
        return f"CAST(year({b}) - year({a}) AS BIGINT)"
    if unit == "quarter":
        return f"CAST((year({b}) * 4 + quarter({b})) - (year({a}) * 4 + quarter({a})) AS BIGINT)"
    return f"CAST((year({b}) * 12 + month({b})) - (year({a}) * 12 + month({a})) AS BIGINT)"


#: Functions whose :func:`scalar` value is an instant (``i``) the caller writes as text
#: (:func:`sparktide.spark.sql.iso`) once it is in a column of its own.
MAKE_TIMES = ("DATEADD", "DATEFROMPARTS", "DATETIMEFROMPARTS")


def type_name(value: Value, instant: str | None) -> Value:
    """``GetType(value)``: the name of its type, as :func:`sparktide.expr.casts.type_name`
    gives it (``instant``: SQL of the instant its text reads as, null when none)."""
    cases = []
    if value.b:
        cases.append(f"WHEN {value.b} IS NOT NULL THEN 'bit'")
    if value.i:
        cases.append(f"WHEN {value.i} IS NOT NULL THEN 'bigint'")
    if value.d:
        cases.append(f"WHEN {value.d} IS NOT NULL THEN 'float'")
    if value.s:
        datetime = f"{instant} IS NOT NULL" if instant else "false"
        text = f"CASE WHEN {datetime} THEN 'datetime' ELSE 'nvarchar(max)' END"
        cases.append(f"WHEN {value.s} IS NOT NULL THEN {text}")
    if value.v:  # an array or object (its scalars are the kinds above)
        cases.append(f"WHEN schema_of_variant({value.v}) LIKE 'OBJECT%' THEN 'record'")
        cases.append(f"WHEN schema_of_variant({value.v}) LIKE 'ARRAY%' THEN 'array'")
    return Value(s=f"CASE {' '.join(cases)} END" if cases else None)


def scalar(func: nodes.Func, args: list[Value], instant: str | None) -> Value:
    """The value of ``func`` over ``args`` (``instant``: SQL of the instant of its time
    argument, :data:`TIME_ARGUMENT`, computed by the caller into a column); for
    :data:`MAKE_TIMES`, the instant of the time it makes."""
    name = func.name
    if name in ("ABS", "CEILING", "FLOOR", "SIGN", "SQRT", "SQUARE", "EXP"):
        return _math(name, args[0])
    if name == "ROUND":
        length = func.args[1]
        n = -length.operand.value if isinstance(length, nodes.Unary) else length.value  # type: ignore[union-attr]
        return _round(args[0], int(n))
    if name == "POWER":
        a, b = number(args[0]), number(args[1])
        return Value(d=finite(f"power({a}, {b})")) if a and b else Value()
    if name == "CONCAT":
        return _concat(args)
    if name == "PARSEINT":
        radix = func.args[1]
        assert isinstance(radix, nodes.Lit)
        return parseint(args[0], int(radix.value))
    if name in ("LEN", "LOWER", "UPPER", "LTRIM", "RTRIM", "TRIM", "REPLACE"):
        return _strings(name, args)
    if name == "SUBSTRING":
        return _substring(*args)
    if name == "CHARINDEX":
        start = args[2].i if len(args) > 2 else "CAST(1 AS BIGINT)"
        return _charindex(args[0], args[1], start)
    if name in ("PATINDEX", "REGEXMATCH"):
        text = args[1 if name == "PATINDEX" else 0].s
        if not text:
            return Value()
        pattern_node = func.args[0 if name == "PATINDEX" else 1]
        assert isinstance(pattern_node, nodes.Lit)
        if name == "PATINDEX":
            regex = patindex_regex(pattern_node.value, java=True)
        else:
            regex = "(?iu)" + pattern_node.value
        return Value(i=_bigint(f"regexp_instr({text}, {sql_string(regex)})"))
    if name in ("DATEFROMPARTS", "DATETIMEFROMPARTS"):
        return _from_parts(args)
    if name == "GETTYPE":
        return type_name(args[0], instant)
    if instant is None:
        return Value()
    if name == "DATEADD":
        return _dateadd(func.unit, args[0], instant)  # type: ignore[arg-type]
    if name in ("DAY", "MONTH", "YEAR"):
        return Value(i=_date_part(name.lower(), instant))
    part = _date_part(func.unit, instant)  # type: ignore[arg-type]
    if name == "DATEPART":
        return Value(i=part)
    date = _date(instant)
    if func.unit == "month":
        names = ", ".join(f"'{m}'" for m in MONTH_NAMES)
        return Value(
            s=f"CASE WHEN {instant} IS NOT NULL THEN element_at(array({names}), month({date})) END"
        )
    if func.unit == "weekday":
        names = ", ".join(f"'{w}'" for w in WEEKDAY_NAMES)
        return Value(
            s=f"CASE WHEN {instant} IS NOT NULL THEN "
            f"element_at(array({names}), dayofweek({date})) END"
        )
    return Value(s=f"CAST({part} AS STRING)")
