"""Reading input files into InputRecords (semantics §1, §2, §8): nothing is lost silently."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparktide.core.records import InputRecord
from sparktide.errors import InputError
from sparktide.job import Source
from sparktide.reader import input_files, parse_fields, read_records
from sparktide.time import MILLISECOND, SECOND, parse_instant

T0 = parse_instant("2026-03-01T12:00:00Z")
#: A modification time with sub-millisecond digits (ns since the epoch).
MTIME_NS = 1_772_366_400_123_456_789
MTIME_US = 1_772_366_400_123_000


def iso(offset_s: float) -> str:
    """T0 + offset seconds as ISO text."""
    value = datetime(2026, 3, 1, 12, tzinfo=UTC) + timedelta(seconds=offset_s)
    return value.isoformat().replace("+00:00", "Z")


def good(offset_s: int, **extra: object) -> str:
    row = {"event_time": iso(offset_s), "arrival_time": iso(offset_s + 1), "value": offset_s}
    row.update(extra)
    return json.dumps(row)


def write_lines(path: Path, lines: list[str | bytes], mtime_ns: int = MTIME_NS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join((x if isinstance(x, bytes) else x.encode("utf-8")) + b"\n" for x in lines)
    path.write_bytes(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def source(path: Path, **kwargs: object) -> Source:
    kwargs.setdefault("timestamp_by", "event_time")
    kwargs.setdefault("arrival_time", "arrival_time")
    return Source(path=str(path), **kwargs)


def check_good(record: InputRecord, seq: int, offset_s: int) -> None:
    assert not record.malformed, record.error
    assert record.error is None
    assert record.seq == seq
    assert record.event_time == T0 + offset_s * SECOND
    assert record.arrival_time == T0 + (offset_s + 1) * SECOND
    assert record.processing_time == record.arrival_time
    assert record.partition == 0
    assert record.key is None
    for value in (record.event_time, record.arrival_time, record.processing_time):
        assert type(value) is int


# ---------------------------------------------------------------------------- jsonl


def test_good_jsonl(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [good(0), good(5, device="d1"), good(3)])
    records = read_records(source(path))
    assert [r.seq for r in records] == [0, 1, 2]
    for seq, (record, offset) in enumerate(zip(records, (0, 5, 3), strict=True)):
        check_good(record, seq, offset)
    assert records[1].fields == {
        "event_time": iso(5),
        "arrival_time": iso(6),
        "value": 5,
        "device": "d1",
    }
    assert records[1].raw == good(5, device="d1")


NO_ZONE = json.dumps({"event_time": "2026-03-01T12:00:00", "arrival_time": iso(1)})

#: (id, line, source options, a word the error must contain)
MALFORMED = [
    ("not-json", "hello world", {}, "JSON"),
    ("truncated-json", '{"event_time": "2026-03-01T12:00:00Z", "arr', {}, "JSON"),
    ("json-array", "[1, 2, 3]", {}, "object"),
    ("json-string", '"2026-03-01T12:00:00Z"', {}, "object"),
    ("json-number", "42", {}, "object"),
    ("json-null", "null", {}, "object"),
    ("json-duplicate-key", '{"event_time": "2026-03-01T12:00:00Z", "event_time": "x"}', {}, ""),
    ("json-nan", '{"event_time": "2026-03-01T12:00:00Z", "value": NaN}', {}, ""),
    ("json-infinity", '{"event_time": "2026-03-01T12:00:00Z", "value": -Infinity}', {}, ""),
    ("json-trailing-garbage", '{"event_time": "2026-03-01T12:00:00Z"} x', {}, "JSON"),
    ("json-deeply-nested", "[" * 100_000 + "]" * 100_000, {}, ""),
    ("missing-timestamp", json.dumps({"arrival_time": iso(1)}), {}, "event_time"),
    ("null-timestamp", json.dumps({"event_time": None, "arrival_time": iso(1)}), {}, "event_time"),
    (
        "numeric-timestamp",
        json.dumps({"event_time": 1772366400, "arrival_time": iso(1)}),
        {},
        "event_time",
    ),
    ("timestamp-without-zone", NO_ZONE, {}, "zone"),
    (
        "unparsable-timestamp",
        json.dumps({"event_time": "yesterday", "arrival_time": iso(1)}),
        {},
        "event_time",
    ),
    (
        "timestamp-too-precise",
        json.dumps({"event_time": "2026-03-01T12:00:00.1234567Z", "arrival_time": iso(1)}),
        {},
        "event_time",
    ),
    ("missing-arrival", json.dumps({"event_time": iso(0)}), {}, "arrival_time"),
    (
        "bad-arrival",
        json.dumps({"event_time": iso(0), "arrival_time": "soon"}),
        {},
        "arrival_time",
    ),
    ("missing-partition", good(0), {"partition": "partition"}, "partition"),
    ("null-partition", good(0, partition=None), {"partition": "partition"}, "partition"),
    ("float-partition", good(0, partition=1.5), {"partition": "partition"}, "partition"),
    ("missing-substream-key", good(0), {"over": "device"}, "device"),
    ("null-substream-key", good(0, device=None), {"over": "device"}, "device"),
    (
        "missing-processing-time",
        good(0),
        {"processing_time": "seen_at"},
        "seen_at",
    ),
]


@pytest.mark.parametrize(
    ("line", "options", "word"),
    [pytest.param(line, options, word, id=name) for name, line, options, word in MALFORMED],
)
def test_malformed_jsonl_becomes_a_malformed_record(tmp_path, line, options, word):
    extra = {"partition": 2, "device": "d1", "seen_at": iso(2)}
    lines = [good(0, **extra), line, good(7, **extra)]
    path = write_lines(tmp_path / "in.jsonl", lines)
    records = read_records(source(path, **options))
    assert [r.seq for r in records] == [0, 1, 2]
    bad = records[1]
    assert bad.malformed
    assert isinstance(bad.error, str) and bad.error
    assert word in bad.error
    assert bad.raw == line
    assert bad.seq == 1
    assert bad.original() is not None
    for record, offset in ((records[0], 0), (records[2], 7)):
        assert not record.malformed, record.error
        assert record.event_time == T0 + offset * SECOND


def test_invalid_utf8_becomes_a_malformed_record(tmp_path):
    line = b'{"event_time": "2026-03-01T12:00:00Z", "arrival_time": "\xff\xfe"}'
    path = write_lines(tmp_path / "in.jsonl", [good(0), line, good(7)])
    records = read_records(source(path))
    assert len(records) == 3
    bad = records[1]
    assert bad.malformed
    assert "UTF-8" in bad.error
    assert bad.seq == 1
    assert bad.raw is not None and "event_time" in bad.raw
    json.dumps(bad.original())  # a dead letter can always carry it
    check_good(records[2], 2, 7)


def test_every_malformed_kind_in_one_file(tmp_path):
    lines: list[str | bytes] = []
    for _, line, options, _ in MALFORMED:
        if not options:
            lines.append(line)
    lines.append(b"\xff\xfe garbage")
    lines.append(good(9))
    path = write_lines(tmp_path / "in.jsonl", lines)
    records = read_records(source(path))
    assert [r.seq for r in records] == list(range(len(lines)))
    assert all(r.malformed for r in records[:-1])
    check_good(records[-1], len(lines) - 1, 9)


def test_blank_lines_are_not_records(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", ["", good(0), "   ", "\t", "", good(1), ""])
    records = read_records(source(path))
    assert [r.seq for r in records] == [0, 1]
    check_good(records[0], 0, 0)
    check_good(records[1], 1, 1)


def test_records_carry_file_and_physical_line(tmp_path):
    folder = tmp_path / "events"
    write_lines(folder / "a.jsonl", ["", good(0), "   ", "not json", good(2)])
    write_lines(folder / "b.jsonl", [good(3)])
    records = read_records(source(folder))
    assert [(r.seq, r.file, r.line) for r in records] == [
        (0, "a.jsonl", 2),
        (1, "a.jsonl", 4),
        (2, "a.jsonl", 5),
        (3, "b.jsonl", 1),
    ]
    assert "line 4" in records[1].error


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(f"{good(0)}\r\n\r\n{good(1)}\r\n".encode())
    records = read_records(source(path))
    assert len(records) == 2
    check_good(records[1], 1, 1)


def test_empty_file_has_no_records(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [])
    assert read_records(source(path)) == []


def test_arrival_is_the_file_mtime_at_millisecond_precision(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [json.dumps({"event_time": iso(0)})])
    (record,) = read_records(source(path, arrival_time=None))
    assert not record.malformed, record.error
    assert record.arrival_time == MTIME_US
    assert record.arrival_time % MILLISECOND == 0
    assert record.processing_time == MTIME_US
    assert record.event_time == T0


def test_arrival_time_mode_uses_the_mtime_as_the_timestamp(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", ['{"value": 1}', '{"value": 2}'])
    records = read_records(Source(path=str(path)))
    assert [r.event_time for r in records] == [MTIME_US, MTIME_US]
    assert [r.arrival_time for r in records] == [MTIME_US, MTIME_US]


def test_arrival_before_1970_from_mtime(tmp_path):
    mtime_ns = -1_500_000_000  # 1969-12-31T23:59:58.5Z
    path = write_lines(tmp_path / "in.jsonl", ['{"value": 1}'], mtime_ns=mtime_ns)
    (record,) = read_records(Source(path=str(path)))
    assert record.arrival_time == -1_500_000


def test_processing_time_column(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [good(0, seen_at=iso(30))])
    (record,) = read_records(source(path, processing_time="seen_at"))
    assert record.processing_time == T0 + 30 * SECOND


def test_partition_and_key_columns(tmp_path):
    lines = [good(0, partition=3, device="d1"), good(1, partition="2", device=7)]
    path = write_lines(tmp_path / "in.jsonl", lines)
    records = read_records(source(path, partition="partition", over="device"))
    assert [(r.partition, r.key) for r in records] == [(3, "d1"), (2, 7)]


def test_numeric_columns_must_hold_numbers(tmp_path):
    lines = [good(0, value=1.5), good(1, value=None), good(2, value="3"), good(3, value=True)]
    path = write_lines(tmp_path / "in.jsonl", lines)
    records = read_records(source(path), numeric=frozenset({"value"}))
    assert [r.malformed for r in records] == [False, False, True, True]
    assert "value" in records[2].error


def test_edge_kind_and_id(tmp_path):
    lines = [
        good(0, kind="start", eid="a"),
        good(1, kind="end", eid=7),
        good(2, kind="middle", eid="a"),
        good(3, kind="start"),
        good(4, kind="end", eid=2.5),
        good(5, kind="start", eid=True),
        good(6, kind="start", eid=2**63),
    ]
    path = write_lines(tmp_path / "in.jsonl", lines)
    records = read_records(source(path, edge="kind", edge_id="eid"))
    assert [(r.edge, r.edge_id) for r in records[:2]] == [("start", "a"), ("end", 7)]
    assert [r.error for r in records[2:]] == [
        'column \'kind\' must be "start" or "end" (an edge event)',
        "missing edge id column 'eid'",
        *["edge id column 'eid' must be a string or an integer of at most 64 bits"] * 3,
    ]


def test_parse_fields_directly():
    src = Source(path="-", timestamp_by="t")
    record = parse_fields(4, {"t": iso(0)}, src, default_arrival=T0 + SECOND, raw="x")
    assert (record.seq, record.event_time, record.arrival_time) == (4, T0, T0 + SECOND)
    assert record.raw == "x"
    missing = parse_fields(5, {"t": iso(0)}, src)
    assert missing.malformed and missing.seq == 5


# ---------------------------------------------------------------------------- directories


def test_directory_files_in_name_order_skipping_hidden_and_underscore(tmp_path):
    folder = tmp_path / "events"
    write_lines(folder / "b.jsonl", [good(10), good(11)])
    write_lines(folder / "a.jsonl", [good(0), "not json", good(2)])
    write_lines(folder / "c.jsonl", [good(20)])
    write_lines(folder / ".hidden.jsonl", [good(90)])
    write_lines(folder / "_SUCCESS", ["garbage"])
    write_lines(folder / "_temporary.jsonl", [good(91)])
    write_lines(folder / "sub" / "d.jsonl", [good(92)])
    src = source(folder)
    assert [p.name for p in input_files(src)] == ["a.jsonl", "b.jsonl", "c.jsonl"]
    records = read_records(src)
    assert [r.seq for r in records] == list(range(6))
    assert records[1].malformed
    offsets = [0, None, 2, 10, 11, 20]
    for record, offset in zip(records, offsets, strict=True):
        if offset is not None:
            check_good(record, record.seq, offset)


def test_directory_name_order_is_by_name_not_by_mtime(tmp_path):
    folder = tmp_path / "events"
    write_lines(folder / "part-10.jsonl", [good(10)], mtime_ns=MTIME_NS)
    write_lines(folder / "part-02.jsonl", [good(2)], mtime_ns=MTIME_NS + 10**12)
    records = read_records(source(folder))
    assert [r.event_time for r in records] == [T0 + 2 * SECOND, T0 + 10 * SECOND]


def test_directory_mtime_per_file(tmp_path):
    folder = tmp_path / "events"
    write_lines(folder / "a.jsonl", ['{"v": 1}'], mtime_ns=2_000_000_000_000_000_000)
    write_lines(folder / "b.jsonl", ['{"v": 2}'], mtime_ns=1_000_000_000_000_000_000)
    records = read_records(Source(path=str(folder)))
    assert [r.arrival_time for r in records] == [2 * 10**15, 10**15]


def test_empty_directory(tmp_path):
    (tmp_path / "events").mkdir()
    assert read_records(source(tmp_path / "events")) == []


def test_missing_path_is_an_input_error_naming_source_path(tmp_path):
    src = source(tmp_path / "nowhere.jsonl")
    with pytest.raises(InputError) as info:
        read_records(src)
    assert "source.path" in str(info.value)
    assert "nowhere.jsonl" in str(info.value)
    with pytest.raises(InputError):
        input_files(src)


# ---------------------------------------------------------------------------- csv


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(MTIME_NS, MTIME_NS))
    return path


def test_csv_header_and_type_inference(tmp_path):
    text = (
        "event_time,arrival_time,count,ratio,device,note\n"
        f"{iso(0)},{iso(1)},5,2.5,d1,\n"
        f"{iso(2)},{iso(3)},-7,1e3,d2,hello world\n"
        f'{iso(4)},{iso(5)},0,0.0,"d,3",""\n'
    )
    path = write_csv(tmp_path / "in.csv", text)
    records = read_records(source(path, format="csv"))
    assert [r.seq for r in records] == [0, 1, 2]
    check_good(records[0], 0, 0)
    check_good(records[2], 2, 4)
    assert records[0].fields == {
        "event_time": iso(0),
        "arrival_time": iso(1),
        "count": 5,
        "ratio": 2.5,
        "device": "d1",
        "note": None,
    }
    assert type(records[0].fields["count"]) is int
    assert type(records[0].fields["ratio"]) is float
    assert records[1].fields["count"] == -7
    assert records[1].fields["ratio"] == 1000.0
    assert records[1].fields["note"] == "hello world"
    assert records[2].fields["device"] == "d,3"
    assert records[2].fields["note"] is None


def test_csv_wrong_column_count_is_malformed(tmp_path):
    text = (
        "event_time,arrival_time,value\n"
        f"{iso(0)},{iso(1)},1\n"
        f"{iso(2)},{iso(3)}\n"
        f"{iso(4)},{iso(5)},1,extra\n"
        "\n"
        f"{iso(6)},{iso(7)},3\n"
    )
    path = write_csv(tmp_path / "in.csv", text)
    records = read_records(source(path, format="csv"))
    assert [r.seq for r in records] == [0, 1, 2, 3]
    assert [r.malformed for r in records] == [False, True, True, False]
    assert records[1].raw == f"{iso(2)},{iso(3)}"
    assert records[2].raw == f"{iso(4)},{iso(5)},1,extra"
    assert "column" in records[1].error
    assert [r.line for r in records] == [2, 3, 4, 6]
    assert {r.file for r in records} == {"in.csv"}
    check_good(records[3], 3, 6)


def test_csv_bad_timestamp_is_malformed(tmp_path):
    text = f"event_time,arrival_time\n2026-03-01T12:00:00,{iso(1)}\n{iso(2)},{iso(3)}\n"
    records = read_records(source(write_csv(tmp_path / "in.csv", text), format="csv"))
    assert records[0].malformed and "zone" in records[0].error
    check_good(records[1], 1, 2)


def test_csv_header_only_and_empty(tmp_path):
    header = write_csv(tmp_path / "a.csv", "event_time,arrival_time\n")
    empty = write_csv(tmp_path / "b.csv", "")
    assert read_records(source(header, format="csv")) == []
    assert read_records(source(empty, format="csv")) == []


def test_csv_directory_seq_continues(tmp_path):
    folder = tmp_path / "csv"
    folder.mkdir()
    write_csv(folder / "1.csv", f"event_time,arrival_time\n{iso(0)},{iso(1)}\n")
    write_csv(folder / "2.csv", f"event_time,arrival_time\n{iso(5)},{iso(6)}\n")
    records = read_records(source(folder, format="csv"))
    check_good(records[0], 0, 0)
    check_good(records[1], 1, 5)


# ---------------------------------------------------------------------------- parquet


def write_parquet(path: Path, table: pa.Table) -> Path:
    pq.write_table(table, path)
    os.utime(path, ns=(MTIME_NS, MTIME_NS))
    return path


@pytest.mark.parametrize("unit", ["ms", "us", "ns"])
@pytest.mark.parametrize("tz", ["UTC", "+01:00", "America/New_York"])
def test_parquet_tz_aware_timestamps(tmp_path, unit, tz):
    zone = timezone(timedelta(hours=1))
    event = [datetime(2026, 3, 1, 13, tzinfo=zone), datetime(2026, 3, 1, 13, 0, 5, tzinfo=zone)]
    table = pa.table(
        {
            "event_time": pa.array(event, type=pa.timestamp(unit, tz=tz)),
            "arrival_time": pa.array(
                [e + timedelta(seconds=1) for e in event], type=pa.timestamp(unit, tz=tz)
            ),
            "device": ["d1", "d2"],
            "value": [1.5, None],
        }
    )
    path = write_parquet(tmp_path / "in.parquet", table)
    records = read_records(source(path, format="parquet"))
    check_good(records[0], 0, 0)
    check_good(records[1], 1, 5)
    assert records[0].fields["device"] == "d1"
    assert records[1].fields["value"] is None


def test_parquet_microseconds_kept(tmp_path):
    instant = datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    table = pa.table({"t": pa.array([instant], type=pa.timestamp("us", tz="UTC"))})
    path = write_parquet(tmp_path / "in.parquet", table)
    (record,) = read_records(Source(path=str(path), format="parquet", timestamp_by="t"))
    assert record.event_time == -1
    assert record.arrival_time == MTIME_US


def test_parquet_naive_timestamp_is_malformed(tmp_path):
    table = pa.table(
        {
            "event_time": pa.array([datetime(2026, 3, 1, 12)], type=pa.timestamp("us")),
            "arrival_time": pa.array([datetime(2026, 3, 1, 12, 0, 1)], type=pa.timestamp("us")),
        }
    )
    path = write_parquet(tmp_path / "in.parquet", table)
    (record,) = read_records(source(path, format="parquet"))
    assert record.malformed
    assert "zone" in record.error
    assert record.seq == 0


def test_parquet_string_timestamps(tmp_path):
    table = pa.table({"event_time": [iso(0), "nope"], "arrival_time": [iso(1), iso(1)]})
    path = write_parquet(tmp_path / "in.parquet", table)
    records = read_records(source(path, format="parquet"))
    check_good(records[0], 0, 0)
    assert records[1].malformed


def test_parquet_unreadable_file_is_malformed_not_fatal(tmp_path):
    folder = tmp_path / "pq"
    folder.mkdir()
    (folder / "a.parquet").write_bytes(b"this is not parquet")
    table = pa.table({"event_time": [iso(0)], "arrival_time": [iso(1)]})
    write_parquet(folder / "b.parquet", table)
    records = read_records(source(folder, format="parquet"))
    assert records[0].malformed
    check_good(records[1], 1, 0)
