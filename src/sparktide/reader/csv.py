"""CSV files: the first line names the columns, each further line is a row.

Cells are split with :data:`~sparktide.reader.contract.CSV_FIELD` (the pattern the Spark
engine splits with) and typed by :func:`infer_cell`: empty is null, then an integer,
then a finite float, else the text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sparktide.reader.contract import (
    CSV_FIELD,
    CSV_QUOTED,
    INTEGER,
    MAX_INTEGER_DIGITS,
    MAX_LINE_CHARS,
    Row,
    shown_text,
    too_long,
)

__all__ = ["csv_cells", "csv_rows", "infer_cell"]

_CSV_FIELD = re.compile(CSV_FIELD)
_CSV_QUOTED = re.compile(CSV_QUOTED, re.DOTALL)
_FLOAT = re.compile(r"-?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?")


def infer_cell(value: str) -> Any:
    """CSV cells: empty is null, then an integer of at most 38 digits, then a finite
    float, else the text (``1e400`` stays text: no engine holds it as a number)."""
    if value == "":
        return None
    if INTEGER.fullmatch(value) and len(value.lstrip("-")) <= MAX_INTEGER_DIGITS:
        return int(value)
    if _FLOAT.fullmatch(value):
        number = float(value)
        if not math.isinf(number):
            return number
    return value


def csv_cells(line: str) -> list[str]:
    """The cells of one CSV line (see :data:`~sparktide.reader.contract.CSV_FIELD`),
    unquoted."""
    cells = []
    for match in _CSV_FIELD.finditer("," + line):
        cell = match.group(1)
        if cell.startswith('"'):
            quoted = _CSV_QUOTED.fullmatch(cell)
            assert quoted is not None  # CSV_FIELD only matches such fields
            cell = quoted.group(1).replace('""', '"') + (quoted.group(2) or "")
        cells.append(cell)
    return cells


def _header(first_line: bytes) -> tuple[list[str] | None, str | None]:
    """The column names of the header line (``None`` if it is not UTF-8), and the first
    name it holds twice (``None`` if none)."""
    try:
        header = csv_cells(first_line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, None
    seen: set[str] = set()
    for name in header:
        if name in seen:
            return header, name
        seen.add(name)
    return header, None


def csv_rows(file: Path) -> Iterator[Row]:
    r"""Rows of a CSV file: the first line names the columns; lines end at ``\n`` (a
    trailing ``\r`` is dropped); lines of ASCII white space only are not rows."""
    lines = [line.removesuffix(b"\r") for line in file.read_bytes().split(b"\n")]
    if not lines or lines == [b""]:
        return
    header, duplicate = _header(lines[0])
    for number, data in enumerate(lines[1:], start=2):
        if not data.strip():
            continue
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError:
            yield number, {}, data.decode("utf-8", "replace"), f"line {number}: invalid UTF-8"
            continue
        yield _row(number, line, header, duplicate)


def _row(number: int, line: str, header: list[str] | None, duplicate: str | None) -> Row:
    """Line ``number`` (UTF-8) as a row: its typed cells by column name, or why not."""
    if len(line) > MAX_LINE_CHARS:
        return number, {}, line, too_long(number, len(line))
    if header is None:
        return number, {}, line, f"line {number}: the header (line 1) is not valid UTF-8"
    if duplicate is not None:
        message = f"line {number}: the header names column '{shown_text(duplicate)}' twice"
        return number, {}, line, message
    cells = csv_cells(line)
    if len(cells) != len(header):
        return number, {}, line, f"line {number}: expected {len(header)} columns, got {len(cells)}"
    values = {name: infer_cell(cell) for name, cell in zip(header, cells, strict=True)}
    return number, values, line, None
