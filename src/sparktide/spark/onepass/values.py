"""The values a task folds: group-by texts and each aggregate's per-row inputs.

Every row reaches the fold as the general plan would see it: a group-by value as the
JSON text the general plan writes (:func:`group_text`), an aggregate's input as
``{"count"}`` (``count``) or as an exact integer and a float with their flags
(``{"integer", "is_integer", "double", "is_double"}``: ``sum`` / ``avg``), so that
integers sum exactly as in Spark's decimal route.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.spark.inputs.arrays import filled
from sparktide.spark.inputs.arrowvalues import field_column, printable, raw_token
from sparktide.spark.onepass.signals import Abort

__all__ = [
    "aggregate_inputs",
    "all_true",
    "field_text",
    "group_text",
    "integers",
    "typed_inputs",
]

_INTEGER_TOKEN = "^-?[0-9]+$"
#: The tokens of a column Arrow reads as floats whose JSON text the general plan writes
#: as they are (``sparktide.spark.aggregates.json_text``): an integer (a variant's
#: ``BIGINT``), a decimal without trailing zeros (a variant's decimal), or an integral
#: float of up to seven digits and ``.0`` (``3.0``), which it writes as Java writes the
#: double.
_FLOAT_AS_WRITTEN = "|".join(
    [
        r"^-?[1-9][0-9]{0,17}$|^0$",
        r"^-?(0|[1-9][0-9]{0,17})\.[0-9]{0,17}[1-9]$",
        r"^-?[1-9][0-9]{0,6}\.0$|^0\.0$",
    ]
)


def all_true(mask: pa.Array) -> bool:
    """Whether every value of ``mask`` is true (nulls count as true)."""
    return bool(pc.all(pc.fill_null(mask, True)).as_py())


def integers(array: pa.Array) -> np.ndarray:
    """An integer column (times, counts) as ``int64`` (a null: :class:`Abort`)."""
    if array.null_count:  # (a vouched line always has its times)
        raise Abort("a null where an integer must be")
    return array.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def group_text(column: pa.Array) -> pa.Array:
    """A group-by value's JSON text as the general plan writes it (``g<i>``): strings of
    printable ASCII (vouched lines hold no backslash, hence no quote), integers and
    booleans as written, ``null`` when missing. A float leaves to the general plan (its
    text depends on how it was written)."""
    n = len(column)
    if pa.types.is_null(column.type):
        return pa.repeat(pa.scalar("null"), n)
    if pa.types.is_string(column.type):
        if not printable(column).all():
            raise Abort("a group-by text is not printable")
        text = pc.binary_join_element_wise('"', column, '"', "")
    elif pa.types.is_integer(column.type) or pa.types.is_boolean(column.type):
        text = pc.cast(column, pa.string())
    else:
        raise Abort("a group-by value is neither text, integer nor boolean")
    return pc.fill_null(text, "null")


def field_text(column: pa.Array, token: pa.Array | None, lines: pa.Array, name: str) -> pa.Array:
    """Field ``name``'s JSON text as the general plan writes a released event's field
    (``coalesce(json_text(...), 'null')``): a string, integer or boolean as
    :func:`group_text` writes it, ``null`` when missing; a float as written when its
    token is :data:`_FLOAT_AS_WRITTEN` (``token``: the column's raw tokens when the parse
    found them already, else read from ``lines``). Any other value leaves the batch to
    the general plan."""
    if not pa.types.is_floating(column.type):
        return group_text(column)
    raw = token if token is not None else raw_token(lines, name)
    valid = pc.is_valid(column)
    fits = pc.match_substring_regex(pc.fill_null(raw, ""), _FLOAT_AS_WRITTEN)
    if not all_true(pc.or_(pc.invert(valid), fits)):
        raise Abort("a float is not written as the general plan writes it")
    return pc.if_else(valid, raw, pa.scalar("null"))


def aggregate_inputs(
    function: str,
    column: str | None,
    table: pa.Table,
    lines: pa.Array,
    token: pa.Array | None = None,
) -> dict[str, np.ndarray]:
    """An aggregate's per-row inputs: ``count`` (counted) for ``count``; for
    ``sum``/``avg`` the exact integer (``integer``, with ``is_integer``), the float
    (``double``, with ``is_double``) (``token``: the column's raw tokens when the parse
    found them already)."""
    n = table.num_rows
    if column is None:
        return {"count": np.ones(n, dtype=np.int64)}
    values = field_column(table, column)
    present = np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), dtype=bool)
    if function == "count":
        return {"count": present.astype(np.int64)}
    if pa.types.is_null(values.type):
        isint = np.zeros(n, dtype=bool)
        ints = np.zeros(n, dtype=np.int64)
        floats = np.zeros(n, dtype=np.float64)
    elif pa.types.is_integer(values.type):
        isint = present
        ints = pc.fill_null(values, 0).to_numpy().astype(np.int64)
        floats = np.zeros(n, dtype=np.float64)
    elif pa.types.is_floating(values.type):
        # a column Arrow reads as floats may hold integer tokens: those sum exactly
        token = pc.fill_null(token if token is not None else raw_token(lines, column), "")
        isint = present & np.asarray(
            pc.match_substring_regex(token, _INTEGER_TOKEN).to_numpy(zero_copy_only=False),
            dtype=bool,
        )
        whole = pc.if_else(pa.array(isint), token, pa.scalar("0"))
        ints = pc.cast(whole, pa.int64()).to_numpy()
        floats = pc.fill_null(values, 0.0).to_numpy().astype(np.float64)
    else:  # (the Arrow JSON kernel vouches only for numbers here)
        raise Abort("an aggregate's input is not a number")
    isfloat = present & ~isint
    return {
        "integer": np.where(isint, ints, 0),
        "is_integer": isint,
        "double": np.where(isfloat, floats, 0.0),
        "is_double": isfloat,
    }


def typed_inputs(
    function: str, column: str | None, batch: pa.RecordBatch, k: int
) -> dict[str, np.ndarray]:
    """:func:`aggregate_inputs` of aggregate ``k`` from the typed columns Spark made
    (:func:`~sparktide.spark.onepass.plan.typed_columns`)."""
    if column is None:
        return {"count": np.ones(batch.num_rows, dtype=np.int64)}
    if function == "count":
        return {"count": integers(batch.column(f"_kn{k}"))}
    whole, real = batch.column(f"_ki{k}"), batch.column(f"_kd{k}")
    return {
        "integer": pc.fill_null(whole, 0).to_numpy().astype(np.int64),
        "is_integer": filled(pc.is_valid(whole)),
        "double": pc.fill_null(real, 0.0).to_numpy().astype(np.float64),
        "is_double": filled(pc.is_valid(real)),
    }
