"""Reading a job's input files into :class:`~sparktide.core.records.InputRecord` objects.

Used by ``simulate``. Files of a directory are read in name order (hidden files and
those starting with ``_`` are skipped, as Spark does); a record's position in that
order is its ``seq``. A record that cannot be parsed becomes a malformed record with
an error message instead of stopping the run. Blank lines are not records.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from sparktide.core.records import InputRecord
from sparktide.errors import InputError
from sparktide.job import Job, Punctuation, Reference, Source, union_partition
from sparktide.time import MILLISECOND, from_datetime, instant_or_problem

__all__ = [
    "CSV_FIELD",
    "CSV_QUOTED",
    "INT64_RANGE",
    "MAX_INTEGER_DIGITS",
    "MAX_LINE_CHARS",
    "NUMBER_CANDIDATE",
    "UNREADABLE_PARQUET",
    "csv_cells",
    "file_arrival_time",
    "input_files",
    "iter_job_records",
    "iter_records",
    "job_records",
    "parse_fields",
    "read_records",
    "read_reference",
    "shown_number",
    "shown_text",
]


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


def read_records(
    source: Source,
    *,
    numeric: frozenset[str] = frozenset(),
    punctuation: Punctuation | None = None,
) -> list[InputRecord]:
    """Read every record of ``source``, numbering them from 0 across files.

    ``numeric`` names columns that must hold numbers or null (``sum``/``avg`` inputs).

    Raises
    ------
    InputError
        If the path is missing or a file cannot be opened at all.
    """
    return list(iter_records(source, numeric=numeric, punctuation=punctuation))


def job_records(job: Job) -> list[InputRecord]:
    """Every input record of ``job``, numbered from 0 across its inputs
    (:func:`iter_job_records`)."""
    return list(iter_job_records(job))


def iter_job_records(job: Job) -> Iterator[InputRecord]:
    """The input records of ``job`` one at a time, numbered from 0 across its inputs.

    A union's inputs (``[inputs.<name>]``) are read in the order of their names; each
    record's partition and file are then ``<input>/<partition>`` and ``<input>/<file>``,
    so partitions of different inputs are different timelines (SPEC §7: a union waits
    for the slowest of its inputs), every record names where it came from, and ties in
    arrival time go by that file name (SPEC §2), as on Spark.
    """
    seq = 0
    for name, source in sorted(job.input_sources, key=lambda item: item[0] or ""):
        for record in iter_records(
            source, numeric=job.numeric_columns, punctuation=job.punctuation
        ):
            record.seq = seq
            seq += 1
            if name is not None:
                record.file = f"{name}/{record.file}"
                if not record.malformed:
                    record.partition = union_partition(name, record.partition)
            yield record


def iter_records(
    source: Source,
    *,
    numeric: frozenset[str] = frozenset(),
    punctuation: Punctuation | None = None,
) -> Iterator[InputRecord]:
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
                        seq,
                        fields,
                        source,
                        default_arrival=mtime,
                        raw=raw,
                        numeric=numeric,
                        punctuation=punctuation,
                    )
                record.file, record.line = file.name, line
                seq += 1
                yield record
        except OSError as exc:
            raise InputError(f"cannot read input file {str(file)!r}: {exc.strerror}") from None


def read_reference(name: str, reference: Reference) -> list[dict[str, Any]]:
    """The rows of reference data ``[inputs.<name>]`` (:class:`~sparktide.job.Reference`),
    in file and line order, typed as the reader types any record's fields.

    Both engines read the table through this function (Spark on its driver), so they
    see the same values.

    Raises
    ------
    InputError
        If the path is missing, a file cannot be read, or a row is malformed (reference
        data stops the job before it starts rather than joining half a table).
    """
    rows: list[dict[str, Any]] = []
    try:
        files = input_files(reference.as_source)
    except InputError as exc:
        raise InputError(str(exc).replace("source.path", f"inputs.{name}.path", 1)) from None
    for file in files:
        try:
            for _, fields, _, error in _rows(file, reference.format):
                if error is not None:  # (the error names the line, as for any input)
                    raise InputError(f"inputs.{name}: reference data {str(file)!r}: {error}")
                rows.append(fields)
        except OSError as exc:
            raise InputError(
                f"inputs.{name}: cannot read reference data {str(file)!r}: {exc.strerror}"
            ) from None
    return rows


Row = tuple[int, dict[str, Any], str | None, str | None]  # line, fields, raw, error


def _rows(file: Path, fmt: str) -> Iterator[Row]:
    if fmt == "jsonl":
        yield from _jsonl_rows(file)
    elif fmt == "csv":
        yield from _csv_rows(file)
    else:
        yield from _parquet_rows(file)


#: The longest line (JSONL) or row (CSV) read, in characters: a longer one is malformed
#: (``line N: too long``), so one runaway line cannot exhaust memory in either engine.
MAX_LINE_CHARS = 1 << 20
#: Integers of more digits than this (Spark's exact decimal range) are out of range.
MAX_INTEGER_DIGITS = 38
#: Where a JSON line may hold an out-of-range number: a run of more than 38 digits, or an
#: exponent of three digits or more (both engines look closer only at such lines).
NUMBER_CANDIDATE = r"[0-9]{39}|[0-9.][eE][+-]?[0-9]{3}"
#: One CSV field after the comma that precedes it (the line gets a leading comma, so every
#: match is non-empty): a quoted field (``""`` is a quote; text after the closing quote
#: belongs to the field; an unclosed quote runs to the end of the line), else plain text
#: up to the next comma. Python's ``re`` and Java's regex read it alike (possessive
#: quantifiers, no backtracking); the Spark engine splits rows with the same pattern.
CSV_FIELD = r',("(?:[^"]++|"")*+(?:"[^,]*+)?|[^,]*+)'
#: A quoted CSV field: its body (``""`` still doubled) and what follows the closing quote.
CSV_QUOTED = r'"((?:[^"]++|"")*+)(?:"(.*))?'
#: The message for a Parquet file that cannot be read at all (both engines).
UNREADABLE_PARQUET = "cannot read the file as Parquet (not a Parquet file, or damaged)"

_NUMBER_CANDIDATE = re.compile(NUMBER_CANDIDATE)
_CSV_FIELD = re.compile(CSV_FIELD)
_CSV_QUOTED = re.compile(CSV_QUOTED, re.DOTALL)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_UNPRINTABLE = re.compile(r"[^ -~]")


def _too_long(number: int, length: int) -> str:
    return f"line {number}: too long ({length} characters, the limit is {MAX_LINE_CHARS})"


def shown_number(token: str) -> str:
    """A number token as error messages show it: at most 40 characters."""
    return token if len(token) <= 40 else token[:40] + "..."


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
            if len(text) > MAX_LINE_CHARS:
                yield number, {}, text, _too_long(number, len(text))
                continue
            try:
                value = _DECODER.decode(text)
                if "\\u" in text and _SURROGATE_ESCAPE.search(text):
                    # a lone surrogate (``"\ud800"``) decodes but is not text: not JSON
                    json.dumps(value, ensure_ascii=False).encode("utf-8")
            except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
                yield number, {}, text, f"line {number}: not valid JSON"
                continue
            except UnicodeEncodeError:
                yield number, {}, text, f"line {number}: not valid JSON"
                continue
            if _NUMBER_CANDIDATE.search(text):
                token = _out_of_range_number(text)
                if token is not None:
                    message = f"line {number}: number {shown_number(token)} is out of range"
                    yield number, {}, text, message
                    continue
            if not isinstance(value, dict):
                yield number, {}, text, f"line {number}: expected a JSON object"
                continue
            yield number, value, text, None


def _out_of_range_number(text: str) -> str | None:
    """The first number of the (valid JSON) ``text`` that no engine can hold exactly: an
    integer of more than 38 digits, or a number beyond the range of a double."""
    found: list[str] = []

    def integer(token: str) -> int:
        if len(token.lstrip("-")) > MAX_INTEGER_DIGITS:
            found.append(token)
            return 0
        return int(token)

    def number(token: str) -> float:
        value = float(token)
        if math.isinf(value):
            found.append(token)
        return value

    decoder = json.JSONDecoder(
        object_pairs_hook=_no_duplicates,
        parse_constant=_no_constant,
        parse_int=integer,
        parse_float=number,
    )
    decoder.decode(text)
    return found[0] if found else None


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
    """CSV cells: empty is null, then an integer of at most 38 digits, then a finite
    float, else the text (``1e400`` stays text: no engine holds it as a number)."""
    if value == "":
        return None
    if _INTEGER.fullmatch(value) and len(value.lstrip("-")) <= MAX_INTEGER_DIGITS:
        return int(value)
    if _FLOAT.fullmatch(value):
        number = float(value)
        if not math.isinf(number):
            return number
    return value


def csv_cells(line: str) -> list[str]:
    """The cells of one CSV line (see :data:`CSV_FIELD`), unquoted."""
    cells = []
    for match in _CSV_FIELD.finditer("," + line):
        cell = match.group(1)
        if cell.startswith('"'):
            quoted = _CSV_QUOTED.fullmatch(cell)
            assert quoted is not None  # CSV_FIELD only matches such fields
            cell = quoted.group(1).replace('""', '"') + (quoted.group(2) or "")
        cells.append(cell)
    return cells


def _csv_rows(file: Path) -> Iterator[Row]:
    r"""Rows of a CSV file: the first line names the columns; lines end at ``\n`` (a
    trailing ``\r`` is dropped); lines of ASCII white space only are not rows."""
    lines = [line.removesuffix(b"\r") for line in file.read_bytes().split(b"\n")]
    if not lines or lines == [b""]:
        return
    header_bytes = lines[0]
    try:
        header: list[str] | None = csv_cells(header_bytes.decode("utf-8"))
    except UnicodeDecodeError:
        header = None
    duplicate = None
    if header is not None:
        seen: set[str] = set()
        for name in header:
            if name in seen:
                duplicate = name
                break
            seen.add(name)
    for number, data in enumerate(lines[1:], start=2):
        if not data.strip():
            continue
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError:
            yield number, {}, data.decode("utf-8", "replace"), f"line {number}: invalid UTF-8"
            continue
        if len(line) > MAX_LINE_CHARS:
            yield number, {}, line, _too_long(number, len(line))
            continue
        if header is None:
            yield number, {}, line, f"line {number}: the header (line 1) is not valid UTF-8"
            continue
        if duplicate is not None:
            message = f"line {number}: the header names column '{shown_text(duplicate)}' twice"
            yield number, {}, line, message
            continue
        cells = csv_cells(line)
        if len(cells) != len(header):
            yield (
                number,
                {},
                line,
                f"line {number}: expected {len(header)} columns, got {len(cells)}",
            )
            continue
        values = {name: _infer(cell) for name, cell in zip(header, cells, strict=True)}
        yield number, values, line, None


def _parquet_rows(file: Path) -> Iterator[Row]:
    """Rows of a Parquet file, each read with the file's own schema. Non-finite floats
    become the text ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON has no such numbers;
    the Spark engine reads them so)."""
    import pyarrow.parquet as pq

    if file.stat().st_size == 0:  # an empty file holds no rows (Spark does not list it)
        return
    try:
        table = pq.read_table(file)
    except Exception:  # pyarrow raises several kinds for a bad file
        yield 1, {}, None, UNREADABLE_PARQUET
        return
    floats = _has_floats(table.schema.types)
    for number, row in enumerate(table.to_pylist(), start=1):
        yield number, (_finite(row) if floats else row), None, None


def _has_floats(types: Any) -> bool:
    import pyarrow as pa

    for kind in types:
        if pa.types.is_floating(kind):
            return True
        if pa.types.is_struct(kind) and _has_floats([f.type for f in kind]):
            return True
        if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _has_floats(
            [kind.value_type]
        ):
            return True
        if pa.types.is_map(kind) and _has_floats([kind.key_type, kind.item_type]):
            return True
    return False


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def shown_text(text: str) -> str:
    """A text value as error messages show it (both engines alike): every character
    outside printable ASCII as ``?``, at most 60 characters."""
    text = _UNPRINTABLE.sub("?", text)
    return text if len(text) <= 60 else text[:60] + "..."


def _time(fields: dict[str, Any], column: str, what: str) -> int:
    if column not in fields or fields[column] is None:
        raise ValueError(f"missing {what} column {column!r}")
    value = fields[column]
    if isinstance(value, datetime):  # Parquet: judged by its ISO text, as Spark does
        if value.tzinfo is not None:
            return from_datetime(value)
        value = value.isoformat()
    if not isinstance(value, str):
        raise ValueError(f"column {column!r}: expected an ISO-8601 time string")
    instant = instant_or_problem(value)
    if isinstance(instant, str):
        raise ValueError(f"column {column!r}: time '{shown_text(value)}' {instant}")
    return instant


#: The range of a signed 64-bit integer: partition ids must fit in it.
INT64_RANGE = (-(2**63), 2**63 - 1)


def _fits_int64(text: str) -> bool:
    """Whether the integer text (``-?[0-9]+``) fits in a signed 64-bit integer."""
    if len(text.lstrip("-").lstrip("0")) > 19:
        return False
    return INT64_RANGE[0] <= int(text) <= INT64_RANGE[1]


def _int64_or_text(value: Any) -> bool:
    """Whether ``value`` is a string or an integer of at most 64 bits (not a boolean)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return INT64_RANGE[0] <= value <= INT64_RANGE[1]
    return isinstance(value, str)


def _partition(fields: dict[str, Any], column: str) -> Any:
    value = fields.get(column)
    if value is None:
        raise ValueError(f"missing partition column {column!r}")
    if not _int64_or_text(value):
        raise ValueError(
            f"partition column {column!r} must be an integer of at most 64 bits or a string"
        )
    if isinstance(value, str) and _INTEGER.fullmatch(value) and _fits_int64(value):
        return int(value)  # digit strings name the same partition as the integer
    return value


def _key(fields: dict[str, Any], column: str) -> Any:
    value = fields.get(column)
    if value is None:
        raise ValueError(f"missing substream key column {column!r}")
    if isinstance(value, (dict, list)):
        raise ValueError(f"substream key column {column!r} must be a single value")
    return value


def _edge(fields: dict[str, Any], column: str, id_column: str) -> tuple[str, Any]:
    """An edge event's kind (``"start"`` or ``"end"``) and its id (SPEC §7)."""
    kind = fields.get(column)
    if kind not in ("start", "end") or not isinstance(kind, str):
        raise ValueError(f'column {column!r} must be "start" or "end" (an edge event)')
    value = fields.get(id_column)
    if value is None:
        raise ValueError(f"missing edge id column {id_column!r}")
    if not _int64_or_text(value):
        raise ValueError(
            f"edge id column {id_column!r} must be a string or an integer of at most 64 bits"
        )
    return kind, value


def parse_fields(
    seq: int,
    fields: dict[str, Any],
    source: Source,
    *,
    default_arrival: int | None = None,
    raw: str | None = None,
    numeric: frozenset[str] = frozenset(),
    punctuation: Punctuation | None = None,
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
    punctuation
        The job's CTI settings: a row marked as a CTI becomes a CTI record (its key may be
        missing: it then punctuates every substream; no end time or numeric check).

    The checks run in a fixed order (arrival time, timestamp, processing time,
    partition, key, edge kind and id, end time, numeric columns by name); the first
    failure is the error.
    """
    cti = punctuation is not None and punctuation.is_cti(fields)
    try:
        if source.arrival_time is not None:
            arrival = _time(fields, source.arrival_time, "arrival time")
        elif default_arrival is not None:
            arrival = default_arrival
        else:
            raise ValueError("no arrival time: set source.arrival_time")
        event_time = (
            _time(fields, source.timestamp_by, "timestamp") + source.shift  # type: ignore[operator]
            if source.timestamp_by is not None
            else arrival
        )
        processing = (
            _time(fields, source.processing_time, "processing time")
            if source.processing_time is not None
            else arrival
        )
        partition = _partition(fields, source.partition) if source.partition is not None else 0
        key = None
        if source.over is not None and not (cti and fields.get(source.over) is None):
            key = _key(fields, source.over)
        edge = edge_id = None
        if source.edge is not None and not cti:
            edge, edge_id = _edge(fields, source.edge, source.edge_id)  # type: ignore[arg-type]
        end_time = None
        if source.end_time is not None and not cti:
            end_time = _time(fields, source.end_time, "end time") + source.shift  # type: ignore[operator]
            if end_time <= event_time:
                raise ValueError(
                    f"column {source.end_time!r}: the end time must be after the start time"
                )
        for column in () if cti else sorted(numeric):
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
        end_time=end_time,
        cti=cti,
        edge=edge,
        edge_id=edge_id,
    )
