"""Process-level tuning for join-heavy processes (the joiner, replay, back-fill executors)."""

from __future__ import annotations

import gc

__all__ = ["tune_gc"]


def tune_gc(threshold: int = 100_000) -> None:
    """Make the cyclic garbage collector run less often.

    A multi-way join allocates one tuple per result and keeps thousands of window entries alive, so
    CPython's default generation-0 threshold (700 allocations) runs a collection every few records:
    measured on Golab's Table 5 workload it halves the engine's throughput. Results hold no cycles, so
    collecting less often only delays freeing the rare cyclic garbage. Generation 1 is collected after
    1,000 young collections instead of 50: every window entry survives its first collection, so a
    generation-1 pass re-examines the whole young window for nothing (measured: 6% of the joiner's
    batch path, `bench/joiner_batch.py`).
    """
    gc.set_threshold(threshold, 1000, 1000)
