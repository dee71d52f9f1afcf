"""Input files → records: which files a source reads, in what order, and the numbering.

Files of a directory are read in name order (hidden files and those starting with ``_``
are skipped, as Spark does); a record's position in that order is its ``seq``. A record
that cannot be parsed becomes a malformed record with an error message instead of
stopping the run. Blank lines are not records.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sparktide.core.records import InputRecord
from sparktide.errors import ConfigError, InputError
from sparktide.expr import Expr
from sparktide.job import Job, Punctuation, Reference, Source, record_casts, union_partition
from sparktide.reader.contract import Row
from sparktide.reader.csv import csv_rows
from sparktide.reader.fields import parse_fields
from sparktide.reader.jsonl import jsonl_rows
from sparktide.reader.parquet import parquet_rows
from sparktide.time import MILLISECOND

__all__ = [
    "file_arrival_time",
    "input_files",
    "iter_job_records",
    "iter_records",
    "job_records",
    "read_records",
    "read_reference",
]


def input_files(source: Source) -> list[Path]:
    """The files a source reads, in the order their records are numbered.

    Raises
    ------
    ConfigError
        If the source names no path, or is a stream only Spark reads.
    InputError
        If the path does not exist or cannot be listed.
    """
    if source.spark_stream:
        raise ConfigError(
            "source.format",
            f"{source.format!r} is a stream Spark reads: only `sparktide run` reads it "
            "(simulate, explain and advise read files: jsonl, csv or parquet)",
        )
    if source.path is None:
        raise ConfigError("source.path", "is required: simulate reads the job's records from it")
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
    so partitions of different inputs are different timelines (semantics §7: a union waits
    for the slowest of its inputs), every record names where it came from, and ties in
    arrival time go by that file name (semantics §2), as on Spark.
    """
    seq = 0
    for name, source in sorted(job.input_sources, key=lambda item: item[0] or ""):
        for record in iter_records(
            source,
            numeric=job.numeric_columns,
            punctuation=job.punctuation,
            checks=record_casts(job, name),
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
    checks: tuple[Expr, ...] = (),
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
                        checks=checks,
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


def _rows(file: Path, fmt: str) -> Iterator[Row]:
    if fmt == "jsonl":
        yield from jsonl_rows(file)
    elif fmt == "csv":
        yield from csv_rows(file)
    else:
        yield from parquet_rows(file)
