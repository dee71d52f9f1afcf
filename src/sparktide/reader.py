"""Reading a job's input files into :class:`~sparktide.core.records.InputRecord` objects.

Used by ``simulate``. Files of a directory are read in name order (hidden files and
those starting with ``_`` are skipped, as Spark does); a record's position in that
order is its ``seq``. A record that cannot be parsed becomes a malformed record with
an error message instead of stopping the run. Blank lines are not records.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from sparktide.core.records import InputRecord
from sparktide.errors import InputError, TimeFormatError
from sparktide.job import Source
from sparktide.time import MILLISECOND, from_datetime, parse_instant

__all__ = ["file_arrival_time", "input_files", "iter_records", "parse_fields", "read_records"]


def input_files(source: Source) -> list[Path]:
    """The files a source reads, in the order their records are numbered.

    Raises
    ------
    InputError
        If the path does not exist or cannot be listed.
    """
    path = Path(source.path)
    if not path.exists():
        raise InputError(f"source.path: no such file or directory: {str(path)!r}")
    if path.is_file():
        return [path]
    try:
        entries = sorted(path.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        raise InputError(f"source.path: cannot list {str(path)!r}: {exc.strerror}") from None
    return [p for p in entries if p.is_file() and not p.name.startswith((".", "_"))]


def file_arrival_time(path: Path) -> int:
    """A file's modification time in microseconds, at Spark's millisecond precision."""
    return os.stat(path).st_mtime_ns // 1_000_000 * MILLISECOND


def read_records(source: Source, *, numeric: frozenset[str] = frozenset()) -> list[InputRecord]:
    """Read every record of ``source``, numbering them from 0 across files.

    ``numeric`` names columns that must hold numbers or null (``sum``/``avg`` inputs).

    Raises
    ------
    InputError
        If the path is missing or a file cannot be opened at all.
    """
    return list(iter_records(source, numeric=numeric))


def iter_records(source: Source, *, numeric: frozenset[str] = frozenset()) -> Iterator[InputRecord]:
    """The records of ``source`` one at a time, as :func:`read_records` reads them.

    Raises
    ------
    InputError
        If the path is missing or a file cannot be opened at all.
    """
    seq = 0
    for file in input_files(source):
        try:
            mtime = file_arrival_time(file)
            for line, fields, raw, error in _rows(file, source.format):
                if error is not None:
                    record = InputRecord(seq, None, raw=raw, error=error)
                else:
                    record = parse_fields(
                        seq, fields, source, default_arrival=mtime, raw=raw, numeric=numeric
                    )
                record.file, record.line = file.name, line
                seq += 1
                yield record
        except OSError as exc:
            raise InputError(f"cannot read input file {str(file)!r}: {exc.strerror}") from None


Row = tuple[int, dict[str, Any], str | None, str | None]  # line, fields, raw, error


def _rows(file: Path, fmt: str) -> Iterator[Row]:
    if fmt == "jsonl":
        yield from _jsonl_rows(file)
    elif fmt == "csv":
        yield from _csv_rows(file)
    else:
        yield from _parquet_rows(file)


def _jsonl_rows(file: Path) -> Iterator[Row]:
    with open(file, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            stripped = line.strip()
            if not stripped:
                continue
            try:
                text = stripped.decode("utf-8")
            except UnicodeDecodeError:
                raw = stripped.decode("utf-8", "replace")
                yield number, {}, raw, f"line {number}: invalid UTF-8"
                continue
            try:
                value = _DECODER.decode(text)
            except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
                yield number, {}, text, f"line {number}: not valid JSON"
                continue
            if not isinstance(value, dict):
                yield number, {}, text, f"line {number}: expected a JSON object"
                continue
            yield number, value, text, None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate key")
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_INTEGER = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?")
#: Strict JSON, as Spark's ``parse_json`` reads it: no duplicate keys, no NaN/Infinity.
_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


def _infer(value: str) -> Any:
    """CSV cells: empty is null, then int, then float, else the text."""
    if value == "":
        return None
    if _INTEGER.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    return value


def _csv_rows(file: Path) -> Iterator[Row]:
    data = file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield 1, {}, data.decode("utf-8", "replace"), f"invalid UTF-8 in CSV file ({exc.reason})"
        return
    lines = text.splitlines()
    if not lines:
        return
    header = next(csv.reader([lines[0]]))
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = next(csv.reader(io.StringIO(line)), [])
        if len(cells) != len(header):
            yield (
                number,
                {},
                line,
                (f"line {number}: expected {len(header)} columns, got {len(cells)}"),
            )
            continue
        values = {name: _infer(cell) for name, cell in zip(header, cells, strict=True)}
        yield number, values, line, None


def _parquet_rows(file: Path) -> Iterator[Row]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(file)
    except Exception as exc:  # pyarrow raises several kinds for a bad file
        yield 1, {}, str(file), f"cannot read parquet file: {exc}"
        return
    for number, row in enumerate(table.to_pylist(), start=1):
        yield number, row, None, None


def _time(fields: dict[str, Any], column: str, what: str) -> int:
    if column not in fields or fields[column] is None:
        raise ValueError(f"missing {what} column {column!r}")
    value = fields[column]
    try:
        if isinstance(value, str):
            return parse_instant(value)
        if isinstance(value, datetime):
            return from_datetime(value)
    except TimeFormatError as exc:
        raise ValueError(f"column {column!r}: {exc}") from None
    raise ValueError(f"column {column!r}: expected an ISO-8601 time string")


def _partition(fields: dict[str, Any], column: str) -> Any:
    value = fields.get(column)
    if value is None:
        raise ValueError(f"missing partition column {column!r}")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"partition column {column!r} must be an integer or a string")
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    return value


def _key(fields: dict[str, Any], column: str) -> Any:
    value = fields.get(column)
    if value is None:
        raise ValueError(f"missing substream key column {column!r}")
    if isinstance(value, (dict, list)):
        raise ValueError(f"substream key column {column!r} must be a single value")
    return value


def parse_fields(
    seq: int,
    fields: dict[str, Any],
    source: Source,
    *,
    default_arrival: int | None = None,
    raw: str | None = None,
    numeric: frozenset[str] = frozenset(),
) -> InputRecord:
    """Turn one row's fields into an :class:`InputRecord` (malformed if anything is wrong).

    Parameters
    ----------
    seq
        The record's input position.
    fields
        Column name → value.
    source
        Says which columns carry time, partition and key.
    default_arrival
        Arrival time when the source has no ``arrival_time`` column (the file's
        modification time).
    raw
        The raw text, kept for dead letters.
    numeric
        Columns that must hold a number or null.

    The checks run in a fixed order (arrival time, timestamp, processing time,
    partition, key, numeric columns by name); the first failure is the error.
    """
    try:
        if source.arrival_time is not None:
            arrival = _time(fields, source.arrival_time, "arrival time")
        elif default_arrival is not None:
            arrival = default_arrival
        else:
            raise ValueError("no arrival time: set source.arrival_time")
        event_time = (
            _time(fields, source.timestamp_by, "timestamp")
            if source.timestamp_by is not None
            else arrival
        )
        processing = (
            _time(fields, source.processing_time, "processing time")
            if source.processing_time is not None
            else arrival
        )
        partition = _partition(fields, source.partition) if source.partition is not None else 0
        key = _key(fields, source.over) if source.over is not None else None
        for column in sorted(numeric):
            value = fields.get(column)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                raise ValueError(f"column {column!r} must be a number")
    except ValueError as exc:
        return InputRecord(seq, fields, raw=raw, error=str(exc))
    return InputRecord(
        seq,
        fields,
        partition=partition,
        key=key,
        event_time=event_time,
        arrival_time=arrival,
        processing_time=processing,
        raw=raw,
    )
