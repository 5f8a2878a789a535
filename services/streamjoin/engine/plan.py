"""The join plan the engine executes: a global order and, per origin stream, a local order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["JoinPlan"]


@dataclass(frozen=True, slots=True)
class JoinPlan:
    """Which order the multi-way join visits the windows in.

    `local_orders[s]` is the full order (every input exactly once) used when the new records come
    from stream `s`. Under eager evaluation it starts with `s` (Golab's Table 4); under GENERAL LAZY
    evaluation `s` may sit anywhere, so a batch of new records need not be the outer loop.
    """

    global_order: tuple[str, ...]
    local_orders: Mapping[str, tuple[str, ...]]
    estimated_cost: float | None = None
    reason: str = field(default="", compare=False)

    @classmethod
    def from_global(cls, order: Sequence[str], estimated_cost: float | None = None) -> JoinPlan:
        """Return the plan whose local order for origin s is s first, then `order` without s."""
        order = tuple(order)
        local = {s: (s, *(o for o in order if o != s)) for s in order}
        return cls(order, local, estimated_cost)

    def validate(self, streams: Sequence[str]) -> None:
        """Raise ValueError unless every order is a permutation of `streams`."""
        want = sorted(streams)
        if sorted(self.global_order) != want:
            raise ValueError(f"global order {self.global_order} is not a permutation of {want}")
        if sorted(self.local_orders) != want:
            raise ValueError(f"local orders cover {sorted(self.local_orders)}, not {want}")
        for origin, order in self.local_orders.items():
            if sorted(order) != want:
                raise ValueError(f"local order for {origin} {order} is not a permutation of {want}")
