"""Per-input ordering policy and punctuation (semantics §7.8): ``[inputs.<name>.ordering]``
and ``[inputs.<name>.punctuation]`` override the job-wide ``[ordering]`` and
``[punctuation]`` for one input of a union or a join.

StreamInsight binds CTI generation and the violation policy per input stream (each
adapter's or query binding's ``AdvanceTimeSettings``); the job-wide tables are the
default every input starts from. Some settings cannot differ between inputs and stay
job-wide (:data:`JOB_WIDE_ORDERING`, :data:`JOB_WIDE_PUNCTUATION`).
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sparktide.errors import ConfigError
from sparktide.job.ordering import Ordering
from sparktide.job.punctuation import Punctuation

if TYPE_CHECKING:
    from sparktide.job.model import Job

__all__ = [
    "INPUT_ORDERING_KEYS",
    "INPUT_PUNCTUATION_KEYS",
    "JOB_WIDE_ORDERING",
    "JOB_WIDE_PUNCTUATION",
    "InputPolicy",
    "input_policies",
    "overrides",
]

#: The ``[ordering]`` keys an input may set for itself.
INPUT_ORDERING_KEYS = ("early_arrival", "late_arrival", "out_of_order", "action", "on_out_of_order")
#: The ``[punctuation]`` keys an input may set for itself (CTI generation).
INPUT_PUNCTUATION_KEYS = ("every_events", "every", "delay")
#: Job-wide ``[ordering]`` keys, and why.
JOB_WIDE_ORDERING = {
    "partitioned": "which watermark governs the results is the job's (set it in [ordering])",
}
#: Job-wide ``[punctuation]`` keys, and why.
JOB_WIDE_PUNCTUATION = {
    "column": "the rows that are CTIs are marked the same way in every input "
    "(set it in [punctuation])",
    "value": "the rows that are CTIs are marked the same way in every input "
    "(set it in [punctuation])",
    "watermark": "whether CTIs alone move the watermarks is the job's, so that a union's or "
    "a join's release follows one rule (set it in [punctuation])",
}


def overrides(value: Any, key: str) -> tuple[tuple[str, Any], ...]:
    """An input's override table (a dict, or already ``(key, value)`` pairs) as pairs.

    Raises
    ------
    ConfigError
        Naming ``key`` when ``value`` is not a table.
    """
    if value is None:
        return ()
    if isinstance(value, dict):
        return tuple(value.items())
    if isinstance(value, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        return value
    raise ConfigError(key, f"must be a table of settings, got {value!r}")


class InputPolicy:
    """One input's resolved settings: the job-wide tables with its overrides applied.

    Attributes
    ----------
    ordering
        The input's ordering policy.
    punctuation
        The input's punctuation (``None`` when the job has none).
    """

    __slots__ = ("ordering", "punctuation")

    def __init__(self, ordering: Ordering, punctuation: Punctuation | None) -> None:
        self.ordering = ordering
        self.punctuation = punctuation

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, InputPolicy)
            and self.ordering == other.ordering
            and self.punctuation == other.punctuation
        )

    def __hash__(self) -> int:
        return hash((self.ordering, self.punctuation))


def _unknown(key: str, allowed: tuple[str, ...]) -> str:
    """The message for an unknown key, with the closest known key as a hint."""
    hint = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
    return "unknown key" + (f" (did you mean {hint[0]!r}?)" if hint else "")


def _rekey(exc: ConfigError, table: str, prefix: str) -> ConfigError:
    """``exc`` naming ``<prefix>.<key>`` instead of ``<table>.<key>``."""
    key = exc.key
    if key == table or key.startswith(table + "."):
        key = prefix + key[len(table) :]
    return ConfigError(key, exc.message)


def _input_ordering(job: Job, name: str, pairs: tuple[tuple[str, Any], ...]) -> Ordering:
    prefix = f"inputs.{name}.ordering"
    for key, _ in pairs:
        if key in JOB_WIDE_ORDERING:
            raise ConfigError(f"{prefix}.{key}", "is job-wide: " + JOB_WIDE_ORDERING[key])
        if key not in INPUT_ORDERING_KEYS:
            raise ConfigError(f"{prefix}.{key}", _unknown(key, INPUT_ORDERING_KEYS))
    try:
        ordering = replace(job.ordering, **dict(pairs))
    except ConfigError as exc:
        raise _rekey(exc, "ordering", prefix) from None
    accepts = ordering.out_of_order_action == "accept"
    if accepts != (job.ordering.out_of_order_action == "accept"):
        raise ConfigError(
            f"{prefix}.on_out_of_order",
            "'accept' is job-wide: it keeps events below the watermark for the windows' "
            "allowed lateness to judge, which every input's events meet in the same windows "
            "(set it in [ordering] or in no input)",
        )
    return ordering


def _input_punctuation(
    job: Job, name: str, pairs: tuple[tuple[str, Any], ...]
) -> Punctuation | None:
    prefix = f"inputs.{name}.punctuation"
    if not pairs:
        return job.punctuation
    for key, _ in pairs:
        if key in JOB_WIDE_PUNCTUATION:
            raise ConfigError(f"{prefix}.{key}", "is job-wide: " + JOB_WIDE_PUNCTUATION[key])
        if key not in INPUT_PUNCTUATION_KEYS:
            raise ConfigError(f"{prefix}.{key}", _unknown(key, INPUT_PUNCTUATION_KEYS))
    base = job.punctuation
    if base is None:
        raise ConfigError(
            prefix,
            "needs the job-wide [punctuation] table: whether CTIs alone move the watermarks "
            "and which rows are CTIs are the job's; this table overrides its every_events, "
            "every and delay",
        )
    given = dict(pairs)
    settings: dict[str, Any] = {
        "column": base.column,
        "value": base.value,
        "watermark": base.watermark,
        "every_events": base.every_events,
        "every": base.every,
        "delay": base.delay if base.generated else None,
    }
    if "every" in given or "every_events" in given:  # (the two are alternatives)
        settings["every"] = settings["every_events"] = None
    settings.update(given)
    if settings["every"] is None and settings["every_events"] is None:
        settings["delay"] = given.get("delay")
    try:
        return Punctuation(**settings)
    except ConfigError as exc:
        raise _rekey(exc, "punctuation", prefix) from None


def input_policies(job: Job) -> dict[str, InputPolicy]:
    """Every input's resolved ordering and punctuation, by input name (``{"": ...}`` for a
    job with one ``[source]``).

    Raises
    ------
    ConfigError
        Naming ``inputs.<name>.ordering.<key>`` or ``inputs.<name>.punctuation.<key>``: a
        key that is job-wide or unknown, a bad value, ``accept`` set or unset for one
        input, punctuation without the job-wide table, or per-input settings with
        substreams (``over``, whose timelines are keys shared by every input).
    """
    if not job.inputs:
        source = job.source
        for table in ("ordering", "punctuation"):
            if getattr(source, table):
                raise ConfigError(
                    f"source.{table}",
                    f"per-input settings belong to [inputs.<name>.{table}]; a job with one "
                    f"[source] sets [{table}]",
                )
        return {"": InputPolicy(job.ordering, job.punctuation)}
    out: dict[str, InputPolicy] = {}
    for name, source in job.inputs:
        ordering_pairs = overrides(source.ordering, f"inputs.{name}.ordering")
        punctuation_pairs = overrides(source.punctuation, f"inputs.{name}.punctuation")
        if (ordering_pairs or punctuation_pairs) and source.over is not None:
            table = "ordering" if ordering_pairs else "punctuation"
            raise ConfigError(
                f"inputs.{name}.{table}",
                "substreams (over) have one timeline per key, shared by every input: their "
                f"watermarks follow the job-wide [{table}]",
            )
        out[name] = InputPolicy(
            _input_ordering(job, name, ordering_pairs),
            _input_punctuation(job, name, punctuation_pairs),
        )
    return out
