"""The Arrow fast path for JSON lines gives exactly the SQL route's columns.

Every line below is parsed twice: by :func:`parse_files` (the kernel vouches for the
lines it can, the SQL route takes the rest) and by the SQL route alone; errors, times,
partition ids, keys and the values windows read must be identical, line by line. The
SQL route itself is checked against the reference reader by the differential tests.
"""

from __future__ import annotations

import functools
import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from sparktide.job import Job
from sparktide.spark.inputs import arrowjson, arrowtimes, plainlines
from sparktide.spark.inputs.arrowvalues import kernel_plan
from sparktide.spark.inputs.contract import WHITE_SPACE
from sparktide.spark.inputs.sqlparse import parse_lines
from sparktide.spark.inputs.textfiles import split_lines


def _line(**fields: object) -> str:
    base = {
        "t": "2026-03-01T09:00:05Z",
        "a": "2026-03-01T09:00:06.5Z",
        "p": 1,
        "dev": "d1",
        "v": 1.5,
    }
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}, ensure_ascii=False)


def _number(name: str, token: str) -> str:
    """A line whose field ``name`` is the number ``token``, as written."""
    return _line(**{name: "@"}).replace('"@"', token)


TIMES = [
    "2026-03-01T09:00:05.123456Z",
    "2026-03-01T09:00:05.1Z",
    "2026-03-01T09:00:05+05:30",
    "2026-03-01T09:00:05.25-11:45",
    "2026-03-01T09:00:05.1234567Z",  # too many digits
    "2026-03-01T09:00:05",  # no zone
    "2026-02-30T09:00:05Z",  # no such day
    "2026-03-01T24:00:00Z",
    "2026-03-01T09:00:60Z",
    "0999-03-01T09:00:05Z",
    "9999-12-31T23:59:59-01:00",  # beyond year 9999 in UTC
    "2026-03-01 09:00:05Z",
    "2026-03-01T09:00:05z",
    "٢٠٢٦-03-01T09:00:05Z",  # non-ASCII digits
    "",
]
VALUES = [0, -0, 7, "007", "-3", "12345678901234567890", 1.5, 1e3, True, False, None, "é", "x y"]

PLAIN = [
    *(_line(t=t) for t in TIMES),
    *(_line(a=t) for t in TIMES[:4]),
    *(_line(p=p) for p in VALUES),
    *(_line(dev=k) for k in VALUES),
    *(_line(v=v) for v in VALUES),
    _line(t=...),
    _line(p=...),
    _line(dev=...),
    _line(v=...),
    _line(t=5),
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1, "dev": "d", "v": 1.50}',
    '{"t":"2026-03-01T09:00:05Z","a":"2026-03-01T09:00:06Z","p":2,"dev":"d","v":2E-3 }',
    '{ "t" : "2026-03-01T09:00:05Z" , "a" : "2026-03-01T09:00:06Z" , "p" : 1 , "dev" : 3 }',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1, "p": 2, "dev": "d"}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1, "x": 1, "x": 1}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1, "v": NaN}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1, "v": Infinity}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1, "note": "a:b,c}"}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1, "dev": "q\\"d"}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1, "n": {"x": 1, "x": 2}}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1, "l": [1, 2]}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1} trailing',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1}{"p": 2}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 01}',
    '{"t": "2026-03-01T09:00:05Z", "a": "2026-03-01T09:00:06Z", "p": 1,}',
    "{'t': '2026-03-01T09:00:05Z'}",
    "[1, 2]",
    '"text"',
    "not json at all",
    "{}",
]
#: Numbers beyond a double, or an integer beyond 38 digits, read or not: out of range.
RANGES = [
    *(
        _number(name, token)
        for name, token in [
            ("v", "1e400"),
            ("v", "-1E+400"),
            ("x", "1e400"),
            ("v", "1" * 39),
            ("x", "-" + "9" * 40),
            ("v", "1e-400"),
            ("v", "1" * 38),
        ]
    ),
    _line(code="7" * 45),
]
#: Lines that all look plain from their bytes alone (no brackets, backslashes, NaN or
#: extra braces): numbers near and beyond the ranges, times of several widths.
NUMBERS = [
    *(_line(id=i) for i in range(20)),
    *(_number("v", v) for v in ["1e-400", "1e-100", "1.5E+005", "1e300", "-1e300", "1" * 38]),
    *(_number("v", v) for v in ["1" * 39, "-" + "3" * 39, "1" * 39 + ".5"]),
    _line(code="1" * 40),
    _number("x", "9" * 39),
    _number("x", "1e-300"),
    *(_line(t=t) for t in TIMES[:4]),
    _line(t="2026-03-01T09:00:05.120Z"),
    _line(t="2026-02-29T09:00:05.120Z"),  # (not a leap year: the width of the others)
]


@pytest.fixture(scope="module")
def files(spark, tmp_path_factory):
    directory = tmp_path_factory.mktemp("arrowparse")
    good = "\n".join(_line(id=i) for i in range(300))
    (directory / "a-plain.jsonl").write_text(good + "\n")
    (directory / "b-mixed.jsonl").write_text("\n".join(PLAIN + RANGES) + "\n\n   \n")
    (directory / "c-crlf.jsonl").write_bytes(("\r\n".join(PLAIN[:20]) + "\r\n").encode())
    (directory / "d-utf8.jsonl").write_bytes(
        _line().encode() + b"\n" + b'{"t": "\xff", "p": 1}\n' + _line(dev="\ufffd").encode()
    )
    (directory / "e-empty.jsonl").write_text("")
    (directory / "h-numbers.jsonl").write_text("\n  \n".join(NUMBERS) + "\n")
    # each line alone in a file too: Arrow then reads it without other lines' types
    for i, line in enumerate(PLAIN + RANGES):
        (directory / f"g-{i:03d}.jsonl").write_text(line + "\n")
    # bad lines spread through a long file: the kernel must isolate them
    long = [_line(id=i) for i in range(1000)]
    for i in range(0, 1000, 97):
        long[i] = PLAIN[i % len(PLAIN)]
    (directory / "f-long.jsonl").write_text("\n".join(long))
    return (
        spark.read.format("text")
        .option("wholetext", "true")
        .load(str(directory))
        .select(
            F.regexp_extract(F.col("_metadata.file_path"), r"[^/]*$", 0).alias("file"),
            F.col("value").alias("text"),
            F.expr("unix_micros(_metadata.file_modification_time)").alias("mtime"),
        )
    )


def _job(tmp_path, **source) -> Job:
    return Job.from_dict(
        {
            "source": {
                "format": "jsonl",
                "path": str(tmp_path),
                "timestamp_by": "t",
                "arrival_time": "a",
                "partition": "p",
                **source,
            },
            "window": {
                "type": "tumbling",
                "size": "1m",
                "group_by": ["dev"] if "over" in source else [],
                "aggregates": {"n": "count(*)", "total": "sum(v)", "top": "max(dev)"},
            },
            "output": {"path": str(tmp_path / "out"), "checkpoint": str(tmp_path / "ck")},
        }
    )


def _rows(frame) -> dict:
    columns = ["error", "t", "a", "pid", "key"]
    # a JSON null and a missing field read the same everywhere (SQL NULL or a VOID variant)
    values = [
        F.expr(
            f"CASE WHEN error IS NULL THEN nullif(to_json(variant_get(m, '$.{name}')), 'null') END"
        )
        for name in ("dev", "v")
    ]
    rows = frame.select("file", "line", *columns, *values).collect()
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


@pytest.mark.parametrize("over", [None, "dev"])
def test_fast_path_matches_sql_route(spark, files, tmp_path, over):
    job = _job(tmp_path, **({"over": over} if over else {}))
    fast = _rows(arrowjson.parse_files(files, job))
    slow = _rows(parse_lines(split_lines(files), job))
    assert fast.keys() == slow.keys()
    differences = {k: (fast[k], slow[k]) for k in fast if fast[k] != slow[k]}
    assert not differences
    # the kernel really took most lines: all of a-plain and most of f-long
    kernel = functools.partial(arrowjson.file_kernel, kernel_plan(job))
    vouched = (
        files.mapInArrow(kernel, arrowjson.KERNEL_OUTPUT)
        .filter("fast")
        .groupBy("file")
        .count()
        .collect()
    )
    counts = {row["file"]: row["count"] for row in vouched}
    assert counts["a-plain.jsonl"] == 300
    assert counts["f-long.jsonl"] >= 800
    assert counts["d-utf8.jsonl"] == 1  # lines with bad bytes (or U+FFFD) take the SQL route
    # all but the integers that may be beyond 38 digits (or sum exactly beyond 18), and
    # the day that is not
    assert counts["h-numbers.jsonl"] == len(NUMBERS) - 6
    alone = sum(count for file, count in counts.items() if file.startswith("g-"))
    assert alone >= 30  # the canonical forms among the tricky lines
    errors = sum(1 for value in fast.values() if value[0] is not None)
    assert errors >= 40  # the bad lines above really are bad


def _time_text(parts: tuple) -> str:
    year, month, day, hour, minute, second, fraction, zone, damage = parts
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    text += ("." + fraction if fraction else "") + zone
    if damage is not None:  # one character replaced: a layout that is not canonical
        at, char = damage
        at %= len(text)
        text = text[:at] + char + text[at + 1 :]
    return text


_TIME_PARTS = st.tuples(
    st.sampled_from([999, 1000, 1001, 1600, 1900, 1969, 1970, 2000, 2024, 2026, 9998, 9999]),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 24),
    st.integers(0, 60),
    st.integers(0, 60),
    st.text("0123456789", max_size=7),
    st.sampled_from(["Z", "z", "+05:30", "-11:45", "+23:59", "-24:00", "+00:60", "+0530", ""]),
    st.none() | st.tuples(st.integers(0, 40), st.sampled_from("x9-:T .Z+٢")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.none() | _TIME_PARTS.map(_time_text) | st.text(max_size=30), max_size=40))
def test_times_read_from_their_bytes_are_those_of_the_regular_expression(texts):
    """The kernel reads most time strings from their bytes, by width and layout; the
    instants and the strings it vouches for are exactly those of the regular expression
    and Arrow's cast (``_micros_general``), sliced arrays and missing values included."""
    column = pa.array(["pad", *texts], pa.string()).slice(1)
    micros, good = arrowtimes.time_micros(column)
    expected, canonical = arrowtimes.time_micros_by_pattern(column)
    assert good.tolist() == canonical.tolist()
    assert micros.equals(expected)


_LINE_PIECES = st.sampled_from(
    [
        '"a":1',
        '"b":"x y"',
        ",",
        " ",
        "{",
        "}",
        "[",
        "]",
        "\\",
        "NaN",
        "Na",
        "Infinity",
        "\ufffd",
        "é",
        '"c":{"d":2}',
        "1e400",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(_LINE_PIECES, max_size=8), st.sampled_from(["", " ", "\t"])),
        max_size=12,
    ),
    st.booleans(),
)
def test_lines_judged_plain_from_their_bytes_are_those_of_the_regular_expressions(lines, braces):
    """Whether a line is plain, decided for a whole file from its bytes, is what the two
    regular expressions decide line by line (blank lines and spaces around them too)."""
    texts = [
        pad + ("{" if braces else "") + "".join(parts) + ("}" if braces else "") + pad
        for parts, pad in lines
    ]
    data = "\n".join(texts).encode()
    pieces = pc.split_pattern(pa.array([data.decode()]), "\n").flatten()
    stripped = pc.utf8_trim(pieces, WHITE_SPACE)
    raw = pc.filter(stripped, pc.not_equal(pc.utf8_length(stripped), 0))
    expected = pc.and_(
        pc.match_substring_regex(raw, plainlines.PLAIN_LINE),
        pc.invert(pc.match_substring_regex(raw, plainlines.NOT_PLAIN)),
    )
    assert plainlines.plain_lines(raw, data).to_pylist() == expected.to_pylist()
    assert plainlines.plain_lines(raw).to_pylist() == expected.to_pylist()
