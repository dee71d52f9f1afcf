"""``GetMetadataPropertyValue(input, 'name')``: Stream Analytics' input metadata as the
fields that hold it in sparktide (``docs/semantics.md`` §11.15).

sparktide reads no broker metadata: what Stream Analytics takes from the event's
envelope, sparktide takes from the record, through the job file's keys that name those
fields. So the call is translated to the field itself (both engines then read it as
any field), and refused when the job names no field for it.
"""

from __future__ import annotations

from sparktide import expr as E
from sparktide.query.ast import Call, Column, FromSource, Literal
from sparktide.query.bind import Bindings
from sparktide.query.refusal import Refuse
from sparktide.query.translate.context import source_names

__all__ = ["METADATA_PROPERTIES", "metadata_field"]

#: The metadata names translated (Stream Analytics' spelling, matched in any case) →
#: the job-file key of the input table naming the field that holds the value.
METADATA_PROPERTIES = {
    "eventenqueuedutctime": ("EventEnqueuedUtcTime", "arrival_time"),
    "partitionid": ("PartitionId", "partition"),
}


def metadata_field(call: Call, source: FromSource, bindings: Bindings, refuse: Refuse) -> E.Expr:
    """The field ``GetMetadataPropertyValue(input, 'name')`` reads in ``source``'s
    records: the input's ``arrival_time`` for ``EventEnqueuedUtcTime`` (the arrival time,
    semantics §2), its ``partition`` (or the query's ``PARTITION BY`` column) for
    ``PartitionId``."""
    shown = "GetMetadataPropertyValue"
    if len(call.args) != 2 or call.star or call.distinct:
        raise refuse(call.pos, f"{shown}(input, 'property') takes an input and a property name")
    target, prop = call.args
    if not (isinstance(target, Column) and len(target.parts) == 1) or (
        target.parts[0].casefold() not in source_names(source)
    ):
        raise refuse(call.pos, f"{shown}'s first argument names the input ({source.name})")
    known = ", ".join(name for name, _ in METADATA_PROPERTIES.values())
    if not (isinstance(prop, Literal) and isinstance(prop.value, str)):
        raise refuse(call.pos, f"{shown}(input, 'property') takes a 'property' name: {known}")
    found = METADATA_PROPERTIES.get(prop.value.casefold())
    if found is None:
        raise refuse(
            call.pos,
            f"{shown}(..., {prop.value!r}) is not supported yet: sparktide reads {known} "
            "(from the fields the job file names)",
        )
    name, key = found
    table = bindings.input_table(source.input_name)
    column = table[1].get(key) if table is not None else None
    if column is None and key == "partition" and source.partition_by is not None:
        column = source.partition_by.parts[-1]
    if not isinstance(column, str):
        raise refuse(
            call.pos,
            f"{shown}(..., '{name}') reads the field the input's {key} key names, and the "
            f'job file names none: set {key} = "<field>" in the input\'s table',
        )
    return E.Ref(column)
