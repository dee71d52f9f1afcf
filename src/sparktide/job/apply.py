"""``[apply]``: each event becomes one event per element of an array, or per property
of a record, that an expression of its fields finds (Stream Analytics' ``CROSS APPLY``
and ``OUTER APPLY`` of ``GetArrayElements(...)`` and ``GetRecordProperties(...)``,
semantics §11.18).

The rule itself (what an event becomes) is :mod:`sparktide.core.apply`; this module is
the table and the rules that tie it to the rest of the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparktide.errors import ConfigError
from sparktide.expr import (
    EVENT_INPUT,
    SYSTEM_TIMESTAMP,
    Expr,
    casts,
    parse_expression,
    ref_nodes,
)
from sparktide.job.expressions import parse_text, record_casts
from sparktide.job.values import check_column

if TYPE_CHECKING:
    from sparktide.job.model import Job

__all__ = ["APPLY_FUNCTIONS", "APPLY_MEMBERS", "Apply", "check_apply"]

#: The two expansions, and the two members of the record each expanded event carries.
APPLY_MEMBERS = {
    "elements": ("ArrayIndex", "ArrayValue"),
    "properties": ("PropertyName", "PropertyValue"),
}
APPLY_FUNCTIONS = tuple(APPLY_MEMBERS)


@dataclass(frozen=True)
class Apply:
    """What each admitted event is expanded into (``[apply]``).

    Parameters
    ----------
    function
        ``"elements"``: one event per element of the array ``value`` finds, carrying
        ``{"ArrayIndex": i, "ArrayValue": v}`` (``i`` from 0); ``"properties"``: one
        event per property of the record it finds, carrying
        ``{"PropertyName": k, "PropertyValue": v}``.
    value
        An expression over the record's fields (:mod:`sparktide.expr`), such as
        ``"Readings"`` or ``"GetRecordPropertyValue(Reading, 'Samples')"``.
    name
        The field of each expanded event that holds that record (the query's
        ``AS a``); the expressions read it as ``GetRecordPropertyValue(a, 'ArrayValue')``.
    outer
        ``OUTER APPLY``: an event with nothing to expand stays one event, whose ``name``
        holds null (by default, ``CROSS APPLY``, it is dropped: ``no_elements``).
    """

    function: str
    value: str
    name: str
    outer: bool = False

    def __post_init__(self) -> None:
        if self.function not in APPLY_FUNCTIONS:
            raise ConfigError(
                "apply.function",
                f"must be one of {', '.join(APPLY_FUNCTIONS)} (GetArrayElements, "
                f"GetRecordProperties), got {self.function!r}",
            )
        expr = parse_text(self.value, "apply.value")
        for ref in ref_nodes(expr):  # (System.Input(): a union's, semantics §11.22)
            if ref == SYSTEM_TIMESTAMP or (ref.input is not None and ref != EVENT_INPUT):
                raise ConfigError(
                    "apply.value",
                    f"reads the record's own fields: {ref.key!r} is not one of them",
                )
        if casts(expr):
            raise ConfigError(
                "apply.value", "a CAST that can fail is not supported here: use TRY_CAST"
            )
        check_column(self.name, "apply.name", optional=False)
        if not isinstance(self.outer, bool):
            raise ConfigError("apply.outer", f"must be true or false, got {self.outer!r}")

    @property
    def expression(self) -> Expr:
        """The parsed ``value``."""
        return parse_expression(self.value, "apply.value")

    @property
    def members(self) -> tuple[str, str]:
        """The names of the two members of the record ``name`` holds."""
        return APPLY_MEMBERS[self.function]


def check_apply(job: Job) -> None:
    """``[apply]`` expands the events of one stream before its filter, select or window:
    not with a join, edge events or analytic columns; no ``CAST`` that can fail in
    ``[filter]`` or ``[select]`` (it would make a record malformed after its policy);
    without a window, ``[select]`` names the output columns (no ``*``)."""
    apply = job.apply
    if apply is None:
        return
    if not isinstance(apply, Apply):
        raise ConfigError("apply", f"expected an Apply, got {apply!r}")
    if job.join is not None:
        raise ConfigError("apply", "is not supported with a [join] yet")
    if job.edges:
        raise ConfigError("apply", "is not supported with edge events (source.edge) yet")
    if job.analytics:
        raise ConfigError("apply", "is not supported with analytic columns ([analytic]) yet")
    if record_casts(job):
        raise ConfigError(
            "apply",
            "a CAST that can fail in [filter], [select] or an aggregate is not supported "
            "with [apply]: use TRY_CAST",
        )
    if job.window is None and not job.select:
        raise ConfigError(
            "select",
            "is required with [apply] and no [window]: name the output columns (the "
            f"element is GetRecordPropertyValue({apply.name}, '{apply.members[1]}'))",
        )
    if job.select_star is not None:
        raise ConfigError('select."*"', "the record's fields are not written with [apply] yet")
    for _, source in job.input_sources:
        for column in (source.timestamp_by, source.partition, source.over, source.arrival_time):
            if column == apply.name:
                raise ConfigError(
                    "apply.name", f"{apply.name!r} is a column the source reads: name another"
                )
