"""The Arrow fast path for JSON lines gives exactly the SQL route's columns.

Every line below is parsed twice: by :func:`parse_files` (the kernel vouches for the
lines it can, the SQL route takes the rest) and by the SQL route alone; errors, times,
partition ids, keys and the values windows read must be identical, line by line. The
SQL route itself is checked against the reference reader by the differential tests.
"""

from __future__ import annotations

import functools
import json

import pytest
from pyspark.sql import functions as F

from sparktide.job import Job
from sparktide.spark import arrowparse
from sparktide.spark.parse import parse_lines, split_lines


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


@pytest.fixture(scope="module")
def files(spark, tmp_path_factory):
    directory = tmp_path_factory.mktemp("arrowparse")
    good = "\n".join(_line(id=i) for i in range(300))
    (directory / "a-plain.jsonl").write_text(good + "\n")
    (directory / "b-mixed.jsonl").write_text("\n".join(PLAIN) + "\n\n   \n")
    (directory / "c-crlf.jsonl").write_bytes(("\r\n".join(PLAIN[:20]) + "\r\n").encode())
    (directory / "d-utf8.jsonl").write_bytes(
        _line().encode() + b"\n" + b'{"t": "\xff", "p": 1}\n' + _line(dev="\ufffd").encode()
    )
    (directory / "e-empty.jsonl").write_text("")
    # each line alone in a file too: Arrow then reads it without other lines' types
    for i, line in enumerate(PLAIN):
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
    fast = _rows(arrowparse.parse_files(files, job))
    slow = _rows(parse_lines(split_lines(files), job))
    assert fast.keys() == slow.keys()
    differences = {k: (fast[k], slow[k]) for k in fast if fast[k] != slow[k]}
    assert not differences
    # the kernel really took most lines: all of a-plain and most of f-long
    kernel = functools.partial(arrowparse._kernel, arrowparse.kernel_plan(job))
    vouched = (
        files.mapInArrow(kernel, arrowparse._OUT).filter("fast").groupBy("file").count().collect()
    )
    counts = {row["file"]: row["count"] for row in vouched}
    assert counts["a-plain.jsonl"] == 300
    assert counts["f-long.jsonl"] >= 800
    assert counts["d-utf8.jsonl"] == 1  # lines with bad bytes (or U+FFFD) take the SQL route
    alone = sum(count for file, count in counts.items() if file.startswith("g-"))
    assert alone >= 30  # the canonical forms among the tricky lines
    errors = sum(1 for value in fast.values() if value[0] is not None)
    assert errors >= 40  # the bad lines above really are bad
