"""Records typed for the parquet and delta outputs and the callback (docs/outputs.md,
*Parquet and Delta*): the types a JSON value takes, and a column keeping its first type
from batch to batch. Pure Arrow: no Spark session."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparktide.errors import RunError
from sparktide.spark.outputs.sinks import delta_version
from sparktide.spark.outputs.typed import (
    TIME_TYPE,
    dead_letter_schema,
    load_pinned,
    pin,
    records_table,
    save_pinned,
)
from sparktide.time import parse_instant


def _lines(*records: str) -> pa.Array:
    return pa.array([r + "\n" for r in records])


def test_times_are_utc_microseconds_with_or_without_a_fraction():
    table = records_table(
        _lines(
            '{"g": "a", "window_start": "2026-03-01T12:00:00Z", "n": 1}',
            '{"g": "b", "window_start": "2026-03-01T12:00:00.000005Z", "n": 2}',
        )
    )
    assert table.column_names == ["g", "window_start", "n"]  # (the record's order)
    assert table.schema.field("window_start").type == TIME_TYPE
    got = table.column("window_start").cast(pa.int64()).to_pylist()
    assert got == [
        parse_instant("2026-03-01T12:00:00Z"),
        parse_instant("2026-03-01T12:00:00.000005Z"),
    ]
    assert table.schema.field("n").type == pa.int64()


def test_text_that_looks_like_a_time_stays_text():
    table = records_table(
        _lines('{"t": "2026-03-01T12:00:00Z", "timestamp": "2026-03-01T12:00:00Z", "x": 1.5}')
    )
    assert table.column("t").to_pylist() == ["2026-03-01T12:00:00Z"]
    assert table.schema.field("timestamp").type == TIME_TYPE
    assert table.schema.field("x").type == pa.float64()


def test_objects_and_arrays_are_structs_and_lists_and_an_all_null_column_waits():
    table = records_table(
        _lines('{"p": {"a": 1}, "l": [1, 2], "z": null}', '{"p": {"a": 2}, "l": []}')
    )
    assert pa.types.is_struct(table.schema.field("p").type)
    assert table.schema.field("l").type == pa.list_(pa.int64())
    assert "z" not in table.column_names


def test_a_column_keeps_its_first_type_and_new_columns_are_added():
    _, pinned = pin(records_table(_lines('{"g": "a", "total": 2.5}')), None, "output.path")
    assert pinned.field("total").type == pa.float64()
    later, pinned2 = pin(
        records_table(_lines('{"g": "b", "total": 3, "extra": true}')), pinned, "x"
    )
    assert later.schema.field("total").type == pa.float64()  # (an integer widened)
    assert later.column("total").to_pylist() == [3.0]
    assert pinned2.names == ["g", "total", "extra"]
    none, _ = pin(records_table(_lines('{"g": "c"}')), pinned2, "x")
    assert none.column("total").to_pylist() == [None] and none.schema == pinned2


def test_a_fraction_in_an_integer_column_fails_naming_the_column():
    _, pinned = pin(records_table(_lines('{"total": 3}')), None, "output.path")
    with pytest.raises(RunError, match=r"output\.path: column 'total' was first written as int64"):
        pin(records_table(_lines('{"total": 2.5}')), pinned, "output.path")
    # an integral float fits
    fits, _ = pin(records_table(_lines('{"total": 4.0}')), pinned, "output.path")
    assert fits.column("total").to_pylist() == [4]


def test_two_json_types_in_one_batch_fail_naming_the_output():
    with pytest.raises(RunError, match=r"output\.dead_letter: the batch's records cannot be typed"):
        records_table(_lines('{"x": "a"}', '{"x": 1}'), "output.dead_letter")


def test_pinned_schemas_are_kept_whole(tmp_path):
    assert load_pinned(tmp_path, "results") is None
    schema = pa.schema([("g", pa.string()), ("window_start", TIME_TYPE)])
    save_pinned(tmp_path, "results", schema)
    assert load_pinned(tmp_path, "results") == schema
    assert not [p for p in (tmp_path / "schemas").iterdir() if p.name.startswith(".")]


def test_dead_letters_have_a_fixed_schema_and_delta_versions_never_repeat():
    assert dead_letter_schema(False).names == ["file", "line", "reason", "record", "error"]
    assert dead_letter_schema(True).field("window_end").type == TIME_TYPE
    versions = [delta_version(b, f) for b in range(4) for f in (False, True)]
    assert versions == sorted(set(versions)) == list(range(8))


def test_ordered_aggregates_are_lists_and_structs():
    """``collecttop``'s ranked records, ``topone()``'s record and ``collect``'s values with a
    null are typed as a list of structs, a struct and a list (semantics §6.12)."""
    table = records_table(
        _lines(
            '{"top": {"id": 4, "v": 0.99}, "top2": [{"rank": 1, "value": "D"}, '
            '{"rank": 1, "value": "A"}], "vals": [0.98, null], "sd": null}',
            '{"top": {"id": 7, "v": 5.5}, "top2": [{"rank": 1, "value": "G"}], '
            '"vals": [5.5], "sd": 0.25}',
        )
    )
    schema = table.schema
    assert schema.field("top").type == pa.struct([("id", pa.int64()), ("v", pa.float64())])
    assert schema.field("top2").type == pa.list_(
        pa.struct([("rank", pa.int64()), ("value", pa.string())])
    )
    assert schema.field("vals").type == pa.list_(pa.float64())
    assert table.column("top2").to_pylist()[0] == [
        {"rank": 1, "value": "D"},
        {"rank": 1, "value": "A"},
    ]
    assert table.column("vals").to_pylist() == [[0.98, None], [5.5]]
    assert table.column("sd").to_pylist() == [None, 0.25]
