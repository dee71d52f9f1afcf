"""The Spark engine's inputs: every parser, and the vouching contract they share.

Read this first. Input reaches the engine as *lines* and leaves this package as *typed
columns*; in between sit one exact parser and several fast ones, held to one contract.

Lines
-----
Every source is first made into lines with the same columns: ``file`` (the file's name),
``line`` (1-based: the line's number, or a Parquet row's), ``raw`` (the line's text
stripped of :data:`~.contract.WHITE_SPACE`; blank lines are dropped), ``mtime`` (the
file's modification time in microseconds, or a broker record's timestamp: the arrival
time of records without an arrival field) and ``pre_error`` (a dead letter decided before
parsing, or null). JSON-lines and CSV text is split as the reference reader splits it
(:mod:`.textfiles`; the CSV reader, ``csv_rows``, makes each CSV row a JSON-object line);
a Parquet row becomes the JSON object the reference reader makes of it (:mod:`.parquet`);
a broker's records become lines in ``broker_lines``.

The exact parser
----------------
:func:`~.sqlparse.parse_lines`, the *SQL route*, turns any lines into the typed columns
the engine reads: ``error`` (the record's dead-letter reason, null when it is well
formed), ``m`` (the record as a ``variant``), ``t`` and ``a`` (event and arrival time,
microseconds), ``pid`` (partition id as text), ``key`` (substream key as canonical JSON
text) and, when the job has them, ``cti`` (an explicit CTI row), ``e`` (an interval's
end), ``edge`` and ``eid`` (an edge event's kind and id). It is the reference reader
(:func:`sparktide.reader.parse_fields`, ``_jsonl_rows``) in SQL: the same checks in the
same order, the same messages word for word, so a malformed record gets the same dead
letter from both engines. It is exact for every input, and it is the only parser that
judges a record: every dead letter's reason comes from it, but for the few facts it
cannot see, which reach it in ``pre_error`` (below).

Vouching
--------
The other parsers are accelerators. For a row it reads, an accelerator may *vouch*: set
``fast`` (:data:`~.contract.VOUCHED`) and give the row's values in the columns of
:data:`~.contract.VOUCHED_COLUMNS` (``_kt``, ``_ka``, ``_kpid``, ``_kkey``, ``_kmj``).
The SQL route then evaluates none of its checks for that row and takes those values as
they are. So an accelerator must guarantee, for every row it vouches for:

* **the SQL route would accept the row**, with no dead letter: a parser that cannot
  prove it does not vouch, and hands the row to the SQL route unchanged (its ``raw``
  text intact, ``fast`` false), which then decides it. When in doubt, do not vouch: the
  answer never depends on an accelerator, which only decides which route a row takes;
* **the values are the SQL route's own**, to the microsecond and the character:

  - times are ISO-8601 strings *with* a zone (:data:`sparktide.time.INSTANT_PATTERN`);
    a time without a zone or not a real date is the SQL route's to dead-letter, and so
    is an instant outside years 1-9999 once taken to UTC (:data:`~.contract.FIRST_INSTANT`
    to :data:`~.contract.LAST_INSTANT`: Spark reads year 0, Python's datetime does not).
    The Arrow kernel vouches only for canonical strings of years 1001-9998, whose offset
    cannot leave that range (:mod:`.arrowtimes`); the typed Parquet route only for
    zone-aware timestamps inside it;
  - the partition id is the text of an integer of at most 64 bits or a string, digit
    strings within 64 bits read as integers (``"007"`` is partition ``7``:
    :func:`~.sqlvalues.partition_id`); accelerators leave digit strings of 19 digits
    or more to the SQL route, and vouch for text only when it is valid UTF-8;
  - the substream key is the JSON text of one value; accelerators vouch only for
    integers, booleans and printable-ASCII strings without quote or backslash
    (:data:`~.contract.PLAIN_TEXT`), whose JSON text is the value in quotes;
  - numbers: an integer of more than 38 digits, a float beyond range, ``NaN`` or an
    infinity is out of range for both engines, a dead letter; a ``sum`` / ``avg``
    column must hold a number or null. Accelerators leave every row that may hold such a
    number, and every number column of another type, to the SQL route;
  - ``_kmj`` is a JSON object of the fields later steps read (group-by and aggregate
    columns, what ``[filter]`` and ``[select]`` read:
    :func:`~.arrowvalues.carried_fields`), every value with its JSON type and token,
    from which the SQL route makes ``m``;
* **facts the SQL route cannot see travel in** ``pre_error``: bytes that were not UTF-8
  before a decode made them U+FFFD (``line N: invalid UTF-8``), a CSV line's own
  verdicts, a file that cannot be read as Parquet. These are the only dead letters
  written outside the SQL route, with the reference reader's messages.

Jobs with explicit CTI rows, interval events or edge events are never vouched for: their
rows all take the SQL route. Time shifting is applied by the SQL route to every row,
vouched for or not. A vouched row's ``raw`` may be null when the job has windows (no
later step reads it); a typed Parquet row's full text then stays in
:data:`~.contract.FULL_TEXT`, read for dead letters only.

The parsers
-----------
* :mod:`.sqlparse` — the SQL route (:func:`~.sqlparse.parse_lines`), the exact parser
  for every format, with :mod:`.sqlchecks` (the record's field checks and their
  messages) and :mod:`.sqlvalues` (one value read as the reference reads it: instants,
  partition ids, shown text).
* :mod:`.textfiles` — whole JSON-lines and CSV files into numbered, stripped lines.
* :mod:`.arrowjson` — the Arrow kernel for JSON lines (:func:`~.arrowjson.parse_files`,
  :func:`~.arrowjson.vouch`): whole files parsed by Arrow in one ``mapInArrow``; it
  vouches for plain lines (:mod:`.plainlines`) whose fields have canonical forms
  (:mod:`.arrowvalues`, :mod:`.arrowtimes`), with :mod:`.arrays` for Arrow arrays.
* :mod:`.parquet` — Parquet files as JSON-object lines, each file with its own schema
  (:func:`~.parquet.parquet_rows`), and :mod:`.parquettyped`: the typed route, which
  vouches in SQL for rows whose typed columns say what their JSON would.
* Outside this package: the CSV reader (``csv_rows``) splits CSV rows by regular
  expressions, and the one-pass plan's kernel reads Parquet files by path with pyarrow
  under the typed route's rules (it abandons its plan, rather than hand a row back, when
  a rule fails) and vouches for JSON lines with :func:`~.arrowjson.vouch`.

:mod:`.parquet` and :mod:`.parquettyped` build the one-pass kernel's typed inputs, so they
import it: import them by their own path (they are not re-exported here, which keeps
the one-pass kernel free to import this package).
"""

from sparktide.spark.inputs.arrays import filled, masked, string_bytes
from sparktide.spark.inputs.arrowjson import Vouched, parse_files, vouch, vouch_lines
from sparktide.spark.inputs.arrowvalues import (
    TOKEN,
    KernelPlan,
    carried_fields,
    field_column,
    kernel_plan,
    key_texts,
    partition_ids,
    printable,
    raw_token,
)
from sparktide.spark.inputs.contract import (
    FIRST_INSTANT,
    FULL_TEXT,
    LAST_INSTANT,
    PLAIN_TEXT,
    VOUCHED,
    VOUCHED_COLUMNS,
    WHITE_SPACE,
)
from sparktide.spark.inputs.sqlparse import parse_lines
from sparktide.spark.inputs.sqlvalues import (
    instant_of,
    java_pattern,
    partition_id,
    shown_text,
    value_json,
)
from sparktide.spark.inputs.textfiles import (
    glob_escape,
    json_texts,
    lines_of,
    split_lines,
    whole_texts,
)

__all__ = [
    "FIRST_INSTANT",
    "FULL_TEXT",
    "LAST_INSTANT",
    "PLAIN_TEXT",
    "TOKEN",
    "VOUCHED",
    "VOUCHED_COLUMNS",
    "WHITE_SPACE",
    "KernelPlan",
    "Vouched",
    "carried_fields",
    "field_column",
    "filled",
    "glob_escape",
    "instant_of",
    "java_pattern",
    "json_texts",
    "kernel_plan",
    "key_texts",
    "lines_of",
    "masked",
    "parse_files",
    "parse_lines",
    "partition_id",
    "partition_ids",
    "printable",
    "raw_token",
    "shown_text",
    "split_lines",
    "string_bytes",
    "value_json",
    "vouch",
    "vouch_lines",
    "whole_texts",
]
