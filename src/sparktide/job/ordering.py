"""``[ordering]``: the event-ordering policy's settings (semantics §3)."""

from __future__ import annotations

from dataclasses import dataclass

from sparktide.errors import ConfigError
from sparktide.job.values import check_choice, normalise_duration
from sparktide.time import MINUTE, SECOND

__all__ = ["ACTIONS", "OUT_OF_ORDER_ACTIONS", "Ordering"]

ACTIONS = ("adjust", "drop")
OUT_OF_ORDER_ACTIONS = ("adjust", "drop", "dead_letter", "accept")


@dataclass(frozen=True)
class Ordering:
    """The event-ordering policy (semantics §3).

    Parameters
    ----------
    early_arrival
        Events more than this *after* their arrival time are dropped (``None``: no check).
    late_arrival
        Events more than this *before* their arrival time are late (``None``: no check).
    out_of_order
        How far behind its timeline's newest timestamp an event may be (``None``: no check).
    action
        ``adjust`` or ``drop``: what happens to late and out-of-order events.
    on_out_of_order
        Override for out-of-order events: ``adjust``, ``drop``, ``dead_letter`` or ``accept``.
    partitioned
        Each partition's results follow its own watermark instead of the merged one.
    """

    early_arrival: int | str | None = 5 * MINUTE
    late_arrival: int | str | None = 5 * SECOND
    out_of_order: int | str | None = 0
    action: str = "adjust"
    on_out_of_order: str | None = None
    partitioned: bool = False

    def __post_init__(self) -> None:
        for name in ("early_arrival", "late_arrival", "out_of_order"):
            normalise_duration(self, name, f"ordering.{name}", allow_none=True)
        check_choice(self.action, ACTIONS, "ordering.action")
        if self.on_out_of_order is not None:
            check_choice(self.on_out_of_order, OUT_OF_ORDER_ACTIONS, "ordering.on_out_of_order")
        if not isinstance(self.partitioned, bool):
            raise ConfigError(
                "ordering.partitioned", f"must be true or false, got {self.partitioned!r}"
            )

    @property
    def out_of_order_action(self) -> str:
        """The action for out-of-order events: ``on_out_of_order`` if set, else ``action``."""
        return self.on_out_of_order or self.action
