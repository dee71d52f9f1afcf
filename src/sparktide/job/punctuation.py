"""``[punctuation]``: explicit and generated CTIs (semantics §7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparktide.errors import ConfigError
from sparktide.job.values import (
    check_choice,
    check_column,
    normalise_duration,
    normalise_signed_duration,
    set_field,
)

__all__ = ["PUNCTUATION_WATERMARKS", "Punctuation"]

#: What moves the watermarks of a job with punctuation (``[punctuation] watermark``).
PUNCTUATION_WATERMARKS = ("cti", "both")


@dataclass(frozen=True)
class Punctuation:
    """CTIs (current time increments): explicit watermarks (semantics §7).

    Parameters
    ----------
    column, value
        Explicit CTIs: an input row whose ``column`` holds ``value`` (a string, an integer
        or a boolean, compared with its JSON type) is a CTI at its ``timestamp_by`` time,
        not an event. It punctuates its partition's timeline; with substreams, the
        substream named by its ``over`` value, or every substream when it has none.
    every_events
        Generated CTIs: after every N events of a timeline (whatever their verdict).
    every
        Generated CTIs: whenever a timeline's newest timestamp enters a new period of this
        length (aligned to the epoch).
    delay
        A generated CTI is at the timeline's newest timestamp minus ``delay``; negative
        delays are allowed (``"-1us"`` makes every event final at once).
    watermark
        ``cti``: only CTIs move the watermarks (StreamInsight); ``both``: CTIs raise the
        heuristic watermark of semantics §4.
    """

    column: str | None = None
    value: str | int | bool | None = None
    every_events: int | None = None
    every: int | str | None = None
    delay: int | str | None = None
    watermark: str = "cti"

    def __post_init__(self) -> None:
        check_column(self.column, "punctuation.column")
        if (self.column is None) != (self.value is None):
            missing = "value" if self.value is None else "column"
            raise ConfigError(
                f"punctuation.{missing}",
                "is required: explicit CTIs are the rows whose column holds the value",
            )
        if self.value is not None and (
            isinstance(self.value, float) or not isinstance(self.value, (str, int))
        ):
            raise ConfigError(
                "punctuation.value",
                f"must be a string, an integer or true/false, got {self.value!r}",
            )
        if self.every_events is not None:
            if isinstance(self.every_events, bool) or not isinstance(self.every_events, int):
                raise ConfigError(
                    "punctuation.every_events", f"must be an integer, got {self.every_events!r}"
                )
            if self.every_events < 1:
                raise ConfigError(
                    "punctuation.every_events", f"must be at least 1, got {self.every_events}"
                )
        normalise_duration(self, "every", "punctuation.every", allow_none=True)
        if self.every == 0:
            raise ConfigError("punctuation.every", "must be greater than zero")
        if self.every is not None and self.every_events is not None:
            raise ConfigError(
                "punctuation.every",
                "generate CTIs either every N events (every_events) or every period of "
                "application time (every), not both",
            )
        if self.delay is not None:
            if not self.generated:
                raise ConfigError(
                    "punctuation.delay", "applies to generated CTIs: set every_events or every"
                )
            normalise_signed_duration(self, "delay", "punctuation.delay")
        elif self.generated:
            set_field(self, "delay", 0)
        check_choice(self.watermark, PUNCTUATION_WATERMARKS, "punctuation.watermark")
        if self.column is None and not self.generated:
            raise ConfigError(
                "punctuation",
                "names no CTIs: set column and value (explicit CTIs), or every_events or "
                "every (generated CTIs)",
            )

    @property
    def explicit(self) -> bool:
        """Whether input rows can be CTIs."""
        return self.column is not None

    @property
    def generated(self) -> bool:
        """Whether CTIs are generated from the events."""
        return self.every_events is not None or self.every is not None

    def is_cti(self, fields: dict[str, Any]) -> bool:
        """Whether the row ``fields`` is an explicit CTI (its value has the same JSON type)."""
        if self.column is None:
            return False
        found = fields.get(self.column)
        return type(found) is type(self.value) and found == self.value
