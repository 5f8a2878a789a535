"""Test support shipped with the package: the brute-force oracle of docs/queries.md, "The result set".

The joiner, replay and back-fill tests, and users testing their own queries, compare what an
engine produced with `expected_results`.
"""

from streamjoin.testing.oracle import (
    EntryLike,
    Event,
    ResultKey,
    expected_results,
    late_events,
    replay_events,
    result_key,
    watermarks,
)

__all__ = [
    "EntryLike",
    "Event",
    "ResultKey",
    "expected_results",
    "late_events",
    "replay_events",
    "result_key",
    "watermarks",
]
