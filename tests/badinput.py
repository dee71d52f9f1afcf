"""The bad-input catalogue (semantics §8): malformed records of every kind, mixed with good
ones, in JSON lines, CSV and Parquet files.

Each entry names a bad record and the exact ``error`` its dead letter must carry
(``{n}`` stands for its line number), or ``None`` for an odd record that is fine and
must be admitted. ``tests/test_bad_input.py`` checks the reference engine against the
catalogue; ``tests/spark/test_bad_input.py`` checks that the Spark engine writes the very
same dead letters, windows and counters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sparktide.job import Job

T = "2026-03-01T09:00:05Z"
A = "2026-03-01T09:00:06Z"
_BAD_TIME = "column 't': time '{}' is not a valid date-time"
_NOT_ISO = "column 't': time '{}' is not an ISO-8601 date-time with a zone (YYYY-MM-DDThh:mm:ssZ)"
_P_TYPE = "partition column 'p' must be an integer of at most 64 bits or a string"
NOT_JSON = "line {n}: not valid JSON"


def assert_accounted(metrics: dict[str, Any]) -> None:
    """semantics §8: input = admitted + dropped + dead-lettered, by reason; per partition too."""
    assert metrics["input"] == (
        metrics["admitted"]
        + sum(metrics["dropped"].values())
        + sum(metrics["dead_lettered"].values())
    )
    for partition in metrics["partitions"]:
        assert partition["input"] == (
            partition["admitted"]
            + sum(partition["dropped"].values())
            + sum(partition["dead_lettered"].values())
        )


def job_tables(fmt: str) -> dict[str, Any]:
    """The job every catalogue runs: event time ``t``, arrival ``a``, partition ``p``,
    substreams by ``dev``, a tumbling minute with a numeric aggregate (``sum(v)``). The
    policy admits every good record (nothing is early, late or out of order enough)."""
    return {
        "source": {
            "format": fmt,
            "path": "in",
            "timestamp_by": "t",
            "arrival_time": "a",
            "partition": "p",
            "over": "dev",
        },
        "ordering": {"early_arrival": "none", "late_arrival": "none", "out_of_order": "none"},
        "window": {
            "type": "tumbling",
            "size": "1m",
            "group_by": ["dev"],
            "aggregates": {"n": "count(*)", "total": "sum(v)", "hi": "max(v)", "ids": "count(id)"},
        },
    }


def job_for(directory: Path, fmt: str, **output: str) -> Job:
    """The catalogue job reading ``directory/in``."""
    tables = job_tables(fmt)
    if output:
        tables["output"] = output
    return Job.from_dict(tables, base_dir=directory)


def record(**fields: Any) -> dict[str, Any]:
    """A good record, with ``fields`` changed (``...`` removes one)."""
    base: dict[str, Any] = {"id": 0, "t": T, "a": A, "p": 1, "dev": "d1", "v": 1.5}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not ...}


def line(**fields: Any) -> bytes:
    """A JSON line of :func:`record` (non-ASCII text written as it is)."""
    return json.dumps(record(**fields), ensure_ascii=False).encode("utf-8")


def good_line(i: int) -> bytes:
    """The ``i``-th good line: one per second, in one of two partitions and devices."""
    second = i % 600
    return line(
        id=1000 + i,
        t=f"2026-03-01T09:{second // 60:02d}:{second % 60:02d}Z",
        a=f"2026-03-01T09:{second // 60:02d}:{second % 60:02d}.5Z",
        p=i % 2,
        dev=f"d{i % 2}",
        v=i % 7,
    )


Case = tuple[str, bytes, str | None]

#: (name, JSON line, error or None). Every line is followed by a good one in the file.
JSONL: list[Case] = [
    # not JSON, or not one JSON object
    ("truncated", b'{"t": "2026-03-01T09:00:05Z", "a": "2026-03-0', NOT_JSON),
    ("truncated-after-a-value", b'{"t": "2026-03-01T09:00:05Z", "p": 1', NOT_JSON),
    ("array", b"[" + line() + b"]", "line {n}: expected a JSON object"),
    ("string", b'"text"', "line {n}: expected a JSON object"),
    ("number", b"42", "line {n}: expected a JSON object"),
    ("null", b"null", "line {n}: expected a JSON object"),
    ("true", b"true", "line {n}: expected a JSON object"),
    ("empty-object", b"{}", "missing arrival time column 'a'"),
    ("duplicate-key", line()[:-1] + b', "p": 2}', NOT_JSON),
    ("nan", line()[:-1] + b', "x": NaN}', NOT_JSON),
    ("infinity", line()[:-1] + b', "x": -Infinity}', NOT_JSON),
    ("trailing-text", line() + b" x", NOT_JSON),
    ("two-objects", line() + line(), NOT_JSON),
    ("comma-then-value", line() + b", 1", NOT_JSON),
    ("bracket-then-object", line() + b'] {"x": 1}', NOT_JSON),
    ("nbsp-after", line() + "\u00a0".encode(), NOT_JSON),
    ("single-quotes", b"{'t': '2026-03-01T09:00:05Z'}", NOT_JSON),
    ("trailing-comma", line()[:-1] + b",}", NOT_JSON),
    ("leading-zero", line()[:-1] + b', "x": 01}', NOT_JSON),
    ("control-character", line(dev="d").replace(b'"d"', b'"d\x01"'), NOT_JSON),
    ("tab-in-string", line(dev="d").replace(b'"d"', b'"d\t1"'), NOT_JSON),
    ("nul-in-string", line(dev="d").replace(b'"d"', b'"d\x001"'), NOT_JSON),
    ("form-feed-between-tokens", b'{"t":\x0c"2026-03-01T09:00:05Z"}', NOT_JSON),
    ("lone-surrogate-escape", line(dev="d").replace(b'"d"', b'"\\ud800"'), NOT_JSON),
    ("deep-array", b"[" * 5000 + b"]" * 5000, NOT_JSON),
    ("deep-value", line()[:-1] + b', "x": ' + b"[" * 3000 + b"]" * 3000 + b"}", NOT_JSON),
    ("byte-order-mark", b"\xef\xbb\xbf" + line(), NOT_JSON),
    # not UTF-8
    (
        "invalid-utf8",
        b'{"t": "2026-03-01T09:00:05Z", "a": "\xff\xfe", "p": 1}',
        "line {n}: invalid UTF-8",
    ),
    ("utf8-surrogate", line(dev="d").replace(b'"d"', b'"\xed\xa0\x80"'), "line {n}: invalid UTF-8"),
    ("overlong-utf8", line(dev="d").replace(b'"d"', b'"\xc0\xaf"'), "line {n}: invalid UTF-8"),
    ("cut-utf8", line(dev="d").replace(b'"d"', b'"\xe2\x82"'), "line {n}: invalid UTF-8"),
    # too long: 10 MB
    (
        "ten-megabytes",
        line(pad="x" * (10 << 20)),
        f"line {{n}}: too long ({len(line(pad='x' * (10 << 20)))} characters, "
        "the limit is 1048576)",
    ),
    # numbers no engine holds
    (
        "integer-of-40-digits",
        line(v=int("1" * 40)),
        "line {n}: number 1111111111111111111111111111111111111111 is out of range",
    ),
    ("float-overflow", line()[:-1] + b', "x": -1e400}', "line {n}: number -1e400 is out of range"),
    # the timestamp: missing, null, wrong type, no zone, impossible
    ("t-missing", line(t=...), "missing timestamp column 't'"),
    ("t-null", line(t=None), "missing timestamp column 't'"),
    ("t-number", line(t=1772355605), "column 't': expected an ISO-8601 time string"),
    # the dead letter keeps the record's values as they were: 3.0 stays a float
    (
        "t-number-integral-floats",
        line(t=1.0, x=3.0),
        "column 't': expected an ISO-8601 time string",
    ),
    ("t-float", line(t=1772355605.5), "column 't': expected an ISO-8601 time string"),
    ("t-object", line(t={"utc": T}), "column 't': expected an ISO-8601 time string"),
    ("t-array", line(t=[T]), "column 't': expected an ISO-8601 time string"),
    ("t-boolean", line(t=True), "column 't': expected an ISO-8601 time string"),
    (
        "t-no-zone",
        line(t="2026-03-01T09:00:05"),
        "column 't': time '2026-03-01T09:00:05' has no time zone (add 'Z' or an offset)",
    ),
    ("t-space", line(t="2026-03-01 09:00:05Z"), _NOT_ISO.format("2026-03-01 09:00:05Z")),
    ("t-empty", line(t=""), _NOT_ISO.format("")),
    ("t-lowercase-z", line(t="2026-03-01T09:00:05z"), _NOT_ISO.format("2026-03-01T09:00:05z")),
    (
        "t-7-digit-fraction",
        line(t="2026-03-01T09:00:05.1234567Z"),
        _NOT_ISO.format("2026-03-01T09:00:05.1234567Z"),
    ),
    ("t-arabic-digits", line(t="٢٠٢٦-03-01T09:00:05Z"), _NOT_ISO.format("????-03-01T09:00:05Z")),
    ("t-trailing-newline", line(t=T + "\n"), _NOT_ISO.format(T + "?")),
    ("t-line-separator", line(t=T + "\u2028"), _NOT_ISO.format(T + "?")),
    ("t-with-quote", line(t="it's"), _NOT_ISO.format("it's")),
    ("t-long-text", line(t="x" * 100), _NOT_ISO.format("x" * 60 + "...")),
    ("t-year-0", line(t="0000-03-01T09:00:05Z"), _BAD_TIME.format("0000-03-01T09:00:05Z")),
    ("t-year-10000", line(t="10000-03-01T09:00:05Z"), _NOT_ISO.format("10000-03-01T09:00:05Z")),
    ("t-month-13", line(t="2026-13-01T09:00:05Z"), _BAD_TIME.format("2026-13-01T09:00:05Z")),
    ("t-february-30", line(t="2026-02-30T09:00:05Z"), _BAD_TIME.format("2026-02-30T09:00:05Z")),
    ("t-april-31", line(t="2026-04-31T09:00:05Z"), _BAD_TIME.format("2026-04-31T09:00:05Z")),
    ("t-hour-25", line(t="2026-03-01T25:00:05Z"), _BAD_TIME.format("2026-03-01T25:00:05Z")),
    ("t-hour-24", line(t="2026-03-01T24:00:00Z"), _BAD_TIME.format("2026-03-01T24:00:00Z")),
    ("t-minute-60", line(t="2026-03-01T09:60:05Z"), _BAD_TIME.format("2026-03-01T09:60:05Z")),
    ("t-leap-second", line(t="2026-03-01T09:00:60Z"), _BAD_TIME.format("2026-03-01T09:00:60Z")),
    (
        "t-offset-24h",
        line(t="2026-03-01T09:00:05+24:00"),
        _BAD_TIME.format("2026-03-01T09:00:05+24:00"),
    ),
    (
        "t-offset-over-18h",
        line(t="2026-03-01T09:00:05-18:01"),
        _BAD_TIME.format("2026-03-01T09:00:05-18:01"),
    ),
    (
        "t-offset-60-minutes",
        line(t="2026-03-01T09:00:05+00:60"),
        _BAD_TIME.format("2026-03-01T09:00:05+00:60"),
    ),
    (
        "t-after-9999-in-utc",
        line(t="9999-12-31T23:59:59-01:00"),
        _BAD_TIME.format("9999-12-31T23:59:59-01:00"),
    ),
    (
        "t-before-year-1-in-utc",
        line(t="0001-01-01T00:00:00+01:00"),
        _BAD_TIME.format("0001-01-01T00:00:00+01:00"),
    ),
    # the arrival time
    ("a-missing", line(a=...), "missing arrival time column 'a'"),
    ("a-number", line(a=5), "column 'a': expected an ISO-8601 time string"),
    # the partition: missing, null, of a wrong type, beyond 64 bits
    ("p-missing", line(p=...), "missing partition column 'p'"),
    ("p-null", line(p=None), "missing partition column 'p'"),
    ("p-float", line(p=1.5), _P_TYPE),
    ("p-float-integral", line(p=2.0), _P_TYPE),
    ("p-exponent", line()[:-1].replace(b'"p": 1', b'"p": 1e2') + b"}", _P_TYPE),
    ("p-boolean", line(p=True), _P_TYPE),
    ("p-object", line(p={"id": 1}), _P_TYPE),
    ("p-array", line(p=[1]), _P_TYPE),
    ("p-beyond-64-bits", line(p=2**63), _P_TYPE),
    # the substream key
    ("dev-missing", line(dev=...), "missing substream key column 'dev'"),
    ("dev-null", line(dev=None), "missing substream key column 'dev'"),
    ("dev-object", line(dev={"x": 1}), "substream key column 'dev' must be a single value"),
    ("dev-array", line(dev=["d1"]), "substream key column 'dev' must be a single value"),
    # the numeric aggregate column (sum)
    ("v-string", line(v="12"), "column 'v' must be a number"),
    ("v-boolean", line(v=True), "column 'v' must be a number"),
    ("v-object", line(v={"x": 1}), "column 'v' must be a number"),
    ("v-array", line(v=[1]), "column 'v' must be a number"),
    # odd but good: admitted
    ("ok-literal-replacement-character", line(dev="\ufffd"), None),
    ("ok-escaped-surrogate-pair", line(dev="d").replace(b'"d"', b'"\\ud83d\\ude00"'), None),
    ("ok-line-separator-in-key", line(dev="d\u2028x"), None),
    ("ok-quotes-in-key", line(dev='it\'s "x" `y` ${env:HOME}'), None),
    ("ok-offset-18h", line(t="2026-03-01T09:00:05+18:00"), None),
    ("ok-offset-minus-zero", line(t="2026-03-01T09:00:05-00:00"), None),
    ("ok-v-null", line(v=None), None),
    ("ok-v-missing", line(v=...), None),
    ("ok-v-beyond-64-bits", line(v=2**64), None),
    ("ok-v-near-max-double-1", line(v=1.7e308), None),
    ("ok-v-near-max-double-2", line(v=1.7e308), None),
    ("ok-p-string", line(p="seven"), None),
    ("ok-p-digit-string", line(p="007"), None),
    ("ok-p-long-digit-string", line(p="1" * 30), None),
    ("ok-p-digits-and-newline", line(p="1\n"), None),
    ("ok-digits-in-a-string", line(note="1" * 45 + "e+1000"), None),
    ("ok-nested", line(extra={"a": [1, {"b": None}], "s": 'x\\y"z'}), None),
    ("ok-small-float", line()[:-1] + b', "x": 1e-400}', None),
    ("ok-spaces", b"  \t" + line().replace(b": ", b" :  ") + b" \x0b\x0c ", None),
]


def jsonl_files(directory: Path) -> dict[str, list[tuple[int, str, str | None]]]:
    """Write the JSON-lines catalogue into ``directory``; return, per file, the bad (and
    odd) lines as (line number, name, error template)."""
    directory.mkdir(parents=True, exist_ok=True)
    lines: list[bytes] = []
    expected = []
    for i, (name, bad, error) in enumerate(JSONL):
        lines.append(good_line(i))
        lines.append(bad)
        expected.append((len(lines), name, error))
    lines += [b"", b"   ", b"\t"]  # blank lines are not records
    lines.append(good_line(len(JSONL)))
    (directory / "a-catalogue.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (directory / "b-empty.jsonl").write_bytes(b"")
    (directory / "c-blank.jsonl").write_bytes(b"\n \n\r\n")
    crlf = b"\r\n".join([good_line(1), line(t="nope"), good_line(3)])  # no final newline
    (directory / "d-crlf.jsonl").write_bytes(crlf)
    odd_name = "e odd name #1 100% é+.jsonl"
    (directory / odd_name).write_bytes(good_line(4) + b"\n" + line(a=None) + b"\n")
    return {
        "a-catalogue.jsonl": expected,
        "d-crlf.jsonl": [(2, "crlf", _NOT_ISO.format("nope"))],
        odd_name: [(2, "odd-file-name", "missing arrival time column 'a'")],
    }


def _csv_row(i: int, **cells: str) -> str:
    values = {
        "id": str(i),
        "t": f"2026-03-01T09:00:{i % 60:02d}Z",
        "a": f"2026-03-01T09:00:{i % 60:02d}.5Z",
        "p": str(i % 2),
        "dev": f"d{i % 2}",
        "v": str(i % 7),
    }
    values.update(cells)
    return ",".join(values.values())


CSV_HEADER = "id,t,a,p,dev,v"

#: (name, CSV row, error or None). Every row is followed by a good one in the file.
CSV: list[tuple[str, str | bytes, str | None]] = [
    (
        "missing-columns",
        "1,2026-03-01T09:00:05Z,2026-03-01T09:00:06Z",
        "line {n}: expected 6 columns, got 3",
    ),
    ("extra-columns", _csv_row(1) + ",extra", "line {n}: expected 6 columns, got 7"),
    ("unclosed-quote", _csv_row(1, dev='"d,1'), "line {n}: expected 6 columns, got 5"),
    ("only-commas", ",,,,,", "missing arrival time column 'a'"),
    ("t-bad", _csv_row(1, t="yesterday"), _NOT_ISO.format("yesterday")),
    ("t-empty", _csv_row(1, t=""), "missing timestamp column 't'"),
    (
        "t-no-zone",
        _csv_row(1, t="2026-03-01T09:00:05"),
        "column 't': time '2026-03-01T09:00:05' has no time zone (add 'Z' or an offset)",
    ),
    ("t-month-13", _csv_row(1, t="2026-13-01T09:00:05Z"), _BAD_TIME.format("2026-13-01T09:00:05Z")),
    ("p-float", _csv_row(1, p="1.5"), _P_TYPE),
    ("p-beyond-38-digits", _csv_row(1, p="1" * 40), _P_TYPE),
    ("v-text", _csv_row(1, v="abc"), "column 'v' must be a number"),
    ("v-nan", _csv_row(1, v="nan"), "column 'v' must be a number"),
    ("v-float-overflow", _csv_row(1, v="1e400"), "column 'v' must be a number"),
    ("v-5000-digits", _csv_row(1, v="1" * 5000), "column 'v' must be a number"),
    ("invalid-utf8", _csv_row(1).encode() + b"\xff", "line {n}: invalid UTF-8"),
    (
        "ten-megabytes",
        _csv_row(1, dev="x" * (10 << 20)),
        f"line {{n}}: too long ({len(_csv_row(1, dev='x' * (10 << 20)))} characters, "
        "the limit is 1048576)",
    ),
    ("ok-quoted-comma", _csv_row(1, dev='"d,1"'), None),
    ("ok-doubled-quote", _csv_row(1, dev='"d""1"'), None),
    ("ok-quote-inside", _csv_row(1, dev='d"1'), None),
    ("ok-text-after-quote", _csv_row(1, dev='"d"x"y'), None),
    ("ok-carriage-return-inside", _csv_row(1, dev="d\r1"), None),
    ("ok-line-separator-inside", _csv_row(1, dev="d\u20281"), None),
    ("ok-form-feed-inside", _csv_row(1, dev="d\x0c1"), None),
    ("ok-nul-inside", _csv_row(1, dev="d\x001"), None),
    ("ok-integer-then-cr", _csv_row(1, p="1\r"), None),
    ("ok-v-40-digits", _csv_row(1, v="1" * 40), None),
    ("ok-v-38-digits", _csv_row(1, v="9" * 38), None),
    ("ok-v-minus-zero", _csv_row(1, v="-0"), None),
    ("ok-v-trailing-dot", _csv_row(1, v="1."), None),
    ("ok-v-exponent", _csv_row(1, v="2E-3"), None),
    ("ok-p-digits", _csv_row(1, p="007"), None),
    ("ok-unclosed-quote-last", _csv_row(1, v='"1.5'), None),
]


def csv_files(directory: Path) -> dict[str, list[tuple[int, str, str | None]]]:
    """Write the CSV catalogue into ``directory``; return the expected bad rows per file."""
    directory.mkdir(parents=True, exist_ok=True)
    rows: list[bytes] = [CSV_HEADER.encode()]
    expected = []
    for i, (name, bad, error) in enumerate(CSV):
        rows.append(_csv_row(100 + i).encode())
        rows.append(bad if isinstance(bad, bytes) else bad.encode("utf-8"))
        expected.append((len(rows), name, error))
    rows += [b"", b"  ", b"\t", _csv_row(200).encode()]
    (directory / "a-catalogue.csv").write_bytes(b"\n".join(rows) + b"\n")
    (directory / "b-empty.csv").write_bytes(b"")
    (directory / "c-header-only.csv").write_bytes(CSV_HEADER.encode() + b"\n")
    header = b"id,t,a,p,dev,\xffv\n"
    (directory / "d-header-not-utf8.csv").write_bytes(header + _csv_row(3).encode() + b"\n")
    twice = "id,t,a,p,dev,t\n" + _csv_row(4) + "\n"
    (directory / "e-header-twice.csv").write_text(twice, encoding="utf-8")
    crlf = "\r\n".join([CSV_HEADER, _csv_row(5), _csv_row(6, t="x")])  # no final newline
    (directory / "f-crlf.csv").write_text(crlf, encoding="utf-8")
    return {
        "a-catalogue.csv": expected,
        "d-header-not-utf8.csv": [
            (2, "header-not-utf8", "line {n}: the header (line 1) is not valid UTF-8")
        ],
        "e-header-twice.csv": [
            (2, "header-names-a-column-twice", "line {n}: the header names column 't' twice")
        ],
        "f-crlf.csv": [(3, "crlf", _NOT_ISO.format("x"))],
    }


def _table(**columns: Any) -> pa.Table:
    base: dict[str, Any] = {
        "id": [1, 2],
        "t": ["2026-03-01T09:00:05Z", "2026-03-01T09:00:15Z"],
        "a": ["2026-03-01T09:00:06Z", "2026-03-01T09:00:16Z"],
        "p": [1, 0],
        "dev": ["d1", "d0"],
        "v": [1.5, 2.0],
    }
    base.update(columns)
    return pa.table({k: v for k, v in base.items() if v is not ...})


_AWARE = [
    datetime(2026, 3, 1, 9, 0, 5, tzinfo=UTC),
    datetime(2026, 3, 1, 9, 0, 15, 250000, tzinfo=UTC),
]
_NAIVE = [d.replace(tzinfo=None) for d in _AWARE]
_PLUS_ONE = timezone(timedelta(hours=1))
_UNREADABLE = "cannot read the file as Parquet (not a Parquet file, or damaged)"

#: (file name, table or raw bytes, errors of its rows in order: None for a good row).
PARQUET: list[tuple[str, Callable[[], pa.Table] | bytes, list[str | None]]] = [
    ("a-good.parquet", lambda: _table(), [None, None]),
    (
        "b-t-as-integer.parquet",
        lambda: _table(t=[1772355605, 1772355615]),
        ["column 't': expected an ISO-8601 time string"] * 2,
    ),
    ("c-extra-column.parquet", lambda: _table(extra=["x", "y"]), [None, None]),
    ("d-no-arrival-column.parquet", lambda: _table(a=...), ["missing arrival time column 'a'"] * 2),
    (
        "e-v-as-text.parquet",
        lambda: _table(v=["1.5", "x"]),
        ["column 'v' must be a number"] * 2,
    ),
    (
        "f-dev-as-struct.parquet",
        lambda: _table(dev=[{"x": 1}, {"x": 2}]),
        ["substream key column 'dev' must be a single value"] * 2,
    ),
    (
        "g-zone-aware-timestamps.parquet",
        lambda: _table(t=pa.array(_AWARE, pa.timestamp("us", tz="UTC"))),
        [None, None],
    ),
    (
        "h-zone-less-timestamps.parquet",
        lambda: _table(t=pa.array(_NAIVE, pa.timestamp("us"))),
        [
            "column 't': time '2026-03-01T09:00:05' has no time zone (add 'Z' or an offset)",
            "column 't': time '2026-03-01T09:00:15.250000' has no time zone (add 'Z' or an offset)",
        ],
    ),
    ("i-p-as-text.parquet", lambda: _table(p=["7", "x"]), [None, None]),
    (
        "j-null-timestamp.parquet",
        lambda: _table(t=[None, "2026-03-01T09:00:15Z"]),
        ["missing timestamp column 't'", None],
    ),
    ("k-no-rows.parquet", lambda: _table().slice(0, 0), []),
    ("l-not-parquet.parquet", b"this is not parquet", [_UNREADABLE]),
    ("m-zero-bytes.parquet", b"", []),
    ("n-v-as-integer.parquet", lambda: _table(v=[3, 4]), [None, None]),
    (
        "o-milliseconds-at-plus-one.parquet",
        lambda: _table(
            t=pa.array(
                [datetime(2026, 3, 1, 10, 0, 5, tzinfo=_PLUS_ONE)] * 2,
                pa.timestamp("ms", tz="+01:00"),
            )
        ),
        [None, None],
    ),
    (
        "p-v-not-finite.parquet",
        lambda: _table(v=[math.nan, math.inf]),
        ["column 'v' must be a number"] * 2,
    ),
    (
        "q-odd column names.parquet",
        lambda: _table(**{"a.b": [1, 2], "${env:HOME}": ["x", "y"]}),
        [None, None],
    ),
    # both times as zone-aware timestamps: the Spark engine's typed route takes what it
    # can vouch for and leaves the rest to the JSON route
    ("r-typed-times.parquet", lambda: _typed(), [None, None]),
    (
        "s-typed-v-not-finite.parquet",
        lambda: _typed(v=[math.nan, -math.inf]),
        ["column 'v' must be a number"] * 2,
    ),
    (
        "t-typed-null-arrival.parquet",
        lambda: _typed(a=pa.array([None, _AWARE[1]], pa.timestamp("us", tz="UTC"))),
        ["missing arrival time column 'a'", None],
    ),
    (
        "u-typed-odd-keys.parquet",
        lambda: _typed(dev=['say "hi"', "back\\slash é"], p=["007", "x"]),
        [None, None],
    ),
    (
        "v-typed-p-as-float.parquet",
        lambda: _typed(p=[1.5, 2.0]),
        ["partition column 'p' must be an integer of at most 64 bits or a string"] * 2,
    ),
    ("w-typed-dev-as-bool.parquet", lambda: _typed(dev=[True, False], v=[3, None]), [None, None]),
]


def _typed(**columns: Any) -> pa.Table:
    """:func:`_table` with both times as UTC timestamps (microseconds)."""
    stamps = pa.timestamp("us", tz="UTC")
    arrivals = [d + timedelta(seconds=1) for d in _AWARE]
    return _table(**{"t": pa.array(_AWARE, stamps), "a": pa.array(arrivals, stamps), **columns})


def parquet_files(directory: Path) -> dict[str, list[tuple[int, str, str | None]]]:
    """Write the Parquet catalogue into ``directory``; return the expected rows per file."""
    directory.mkdir(parents=True, exist_ok=True)
    expected = {}
    for name, content, errors in PARQUET:
        if isinstance(content, bytes):
            (directory / name).write_bytes(content)
        else:
            pq.write_table(content(), directory / name)
        expected[name] = [(i + 1, name, error) for i, error in enumerate(errors)]
    return expected
