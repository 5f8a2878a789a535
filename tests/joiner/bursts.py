"""Bursts as an unkeyed producer writes them: records of a few streams in timestamp order, each to
a random partition (items for `harness.produce`)."""

from __future__ import annotations

import random
from typing import Any

__all__ = ["unkeyed_burst"]


def unkeyed_burst(
    rng: random.Random, start: int, n: int, partitions: int, streams: str = "abc"
) -> list[tuple[str, int, dict[str, Any]]]:
    """Return `n` records of `streams` in timestamp order from `start` (0-4 ms apart, keys 0-15),
    each to a random partition."""
    clock, items = start, []
    for i in range(n):
        clock += rng.randint(0, 4)
        items.append(
            (rng.choice(streams), rng.randrange(partitions), {"ts": clock, "k": rng.randrange(16), "n": i})
        )
    return items
