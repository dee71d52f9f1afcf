"""Reading a job's input files into :class:`~sparktide.core.records.InputRecord` objects.

Used by ``simulate``. Files of a directory are read in name order (hidden files and
those starting with ``_`` are skipped, as Spark does); a record's position in that
order is its ``seq``. A record that cannot be parsed becomes a malformed record with
an error message instead of stopping the run. Blank lines are not records.

The package, in the order a record is read:

* :mod:`~sparktide.reader.files`: which files, in what order; records numbered;
  reference data;
* :mod:`~sparktide.reader.jsonl`, :mod:`~sparktide.reader.csv`,
  :mod:`~sparktide.reader.parquet`: one file's rows, by format;
* :mod:`~sparktide.reader.fields`: one row's fields checked into a record;
* :mod:`~sparktide.reader.contract`: the limits, patterns and messages the Spark
  engine's parsers share.
"""

from sparktide.reader.contract import (
    CSV_FIELD,
    CSV_QUOTED,
    INT64_RANGE,
    MAX_INTEGER_DIGITS,
    MAX_LINE_CHARS,
    NUMBER_CANDIDATE,
    UNREADABLE_PARQUET,
    shown_number,
    shown_text,
)
from sparktide.reader.csv import csv_cells
from sparktide.reader.fields import parse_fields
from sparktide.reader.files import (
    file_arrival_time,
    input_files,
    iter_job_records,
    iter_records,
    job_records,
    read_records,
    read_reference,
)

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
