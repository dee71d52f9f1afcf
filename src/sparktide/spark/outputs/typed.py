"""A batch's records as a typed Arrow table, with one schema for the whole run.

The engine forms its records as JSON text (the ``jsonl`` output, the very text of the
reference engine: :mod:`sparktide.spark.outputs.records`). The typed outputs (``parquet``,
``delta``, the ``foreach_batch`` callback) parse that text on the driver with Arrow:
times as ``timestamp[us, UTC]``, JSON integers as ``int64``, other numbers as ``float64``,
strings, booleans, objects as structs and arrays as lists (docs/outputs.md).

A column keeps the type it was first written with (its *pinned* type, kept in the
checkpoint): a later batch's values are cast to it when that loses nothing (an integer
into a ``float64`` column, a null into anything), a new column is added, a column a batch
lacks is null. A value that does not fit (``2.5`` into a column pinned ``int64``) fails
the batch with :class:`~sparktide.errors.RunError` naming the column: a Parquet reader
cannot read one column with two types, nor a Delta table hold them.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from sparktide.errors import RunError

__all__ = [
    "DEAD_LETTERS",
    "RESULTS",
    "TIME_TYPE",
    "dead_letter_schema",
    "load_pinned",
    "pin",
    "records_table",
    "save_pinned",
]

RESULTS = "results"
DEAD_LETTERS = "dead_letters"
#: Every time of a typed output (Spark's ``TimestampType``).
TIME_TYPE = pa.timestamp("us", "UTC")
#: The time fields a record may hold, by its kind: windows, released events.
_TIME_FIELDS = ("window_start", "window_end", "emitted_at", "timestamp", "end_timestamp")


def dead_letter_schema(windowed: bool) -> pa.Schema:
    """The dead letters' schema (fixed: ``record`` is the input record's JSON text)."""
    fields = [
        ("file", pa.string()),
        ("line", pa.int64()),
        ("reason", pa.string()),
        ("record", pa.string()),
        ("error", pa.string()),
    ]
    if windowed:
        fields += [("window_start", TIME_TYPE), ("window_end", TIME_TYPE)]
    return pa.schema(fields)


def records_table(lines: pa.Array, where: str = "output.path") -> pa.Table:
    """The JSON records ``lines`` (one object each, with or without a final newline) as
    a table: the first record's field order, times (:data:`_TIME_FIELDS` the records
    hold) as :data:`TIME_TYPE`, other types inferred; an all-null column is left out
    (it has no type yet). ``where`` names the output in errors."""
    if len(lines) == 0:
        return pa.table({})
    data = _text(lines)
    first = lines[0].as_py()
    record = json.loads(first)
    order = list(record)
    # times as times; the other strings as strings (Arrow would read ISO-looking text as
    # a timestamp of the precision the first block shows: the text is the record's)
    explicit = pa.schema(
        [(name, TIME_TYPE) for name in _TIME_FIELDS if name in record]
        + [
            (n, pa.string())
            for n, v in record.items()
            if isinstance(v, str) and n not in _TIME_FIELDS
        ]
    )
    options = pj.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer")
    block = max(1 << 20, min(len(data) + 1, 1 << 28))
    try:
        table = pj.read_json(
            io.BytesIO(data), read_options=pj.ReadOptions(block_size=block), parse_options=options
        )
    except pa.ArrowInvalid as exc:
        raise RunError(
            f"{where}: the batch's records cannot be typed ({exc}): a field holds values of "
            'two JSON types in one batch. Make them one type, or write format = "jsonl"'
        ) from None
    names = order + [n for n in table.column_names if n not in order]
    table = table.select(names)
    return table.select([n for n in names if not pa.types.is_null(table.schema.field(n).type)])


def _text(lines: pa.Array) -> bytes:
    """The records ``lines`` as the bytes of a JSON-lines file (each line ended by a
    newline)."""
    if not pc.all(pc.ends_with(lines, "\n")).as_py():
        lines = pc.binary_join_element_wise(pc.utf8_rtrim(lines, characters="\n"), "\n", "")
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    width = 8 if pa.types.is_large_string(lines.type) else 4
    offsets = lines.buffers()[1]
    start = int.from_bytes(offsets[lines.offset * width : (lines.offset + 1) * width], "little")
    end_at = (lines.offset + len(lines)) * width
    end = int.from_bytes(offsets[end_at : end_at + width], "little")
    return lines.buffers()[2].to_pybytes()[start:end]


def pin(table: pa.Table, pinned: pa.Schema | None, where: str) -> tuple[pa.Table, pa.Schema]:
    """``table`` in the ``pinned`` schema (cast, null-filled), with its new columns
    after; and the schema pinned from now on. ``where`` names the output in errors."""
    pinned = pinned if pinned is not None else pa.schema([])
    columns, fields = [], []
    for field in pinned:
        if field.name in table.column_names:
            column = table.column(field.name)
            if column.type != field.type:
                column = _cast(column, field, where)
        else:
            column = pa.nulls(table.num_rows, field.type)
        columns.append(column)
        fields.append(field)
    for name in table.column_names:
        if pinned.get_field_index(name) < 0:
            columns.append(table.column(name))
            fields.append(table.schema.field(name).with_nullable(True))
    schema = pa.schema(fields)
    return pa.Table.from_arrays(columns, schema=schema), schema


def _cast(column: pa.ChunkedArray, field: pa.Field, where: str) -> pa.ChunkedArray:
    """``column`` as ``field``'s type, or a :class:`RunError` naming the column."""
    try:
        return pc.cast(column, field.type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise RunError(
            f"{where}: column {field.name!r} was first written as {field.type} and this "
            f"batch's values are {column.type} that do not fit it ({exc}). A typed output "
            "keeps each column's first type: make the values one JSON type (for example "
            'all floats, "21.0" not "21"), or write format = "jsonl"'
        ) from None


def _pinned_path(root: Path, kind: str) -> Path:
    return root / "schemas" / f"{kind}.arrow"


def load_pinned(root: Path, kind: str) -> pa.Schema | None:
    """The schema pinned for ``kind`` under ``root`` (the checkpoint's ``sparktide``
    directory), or None before any record."""
    path = _pinned_path(root, kind)
    if not path.exists():
        return None
    return pa.ipc.read_schema(pa.py_buffer(path.read_bytes()))


def save_pinned(root: Path, kind: str, schema: pa.Schema) -> None:
    """Keep ``schema`` as ``kind``'s pinned schema (written whole by a rename)."""
    path = _pinned_path(root, kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(schema.serialize().to_pybytes())
    os.replace(tmp, path)
