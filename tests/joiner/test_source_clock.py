"""A repartitioner's clock (`SourceClock`): valid records within the operators' bound move it, and
one taken over from a committed position bounds the first records it reads."""

from __future__ import annotations

from tests.joiner.test_batch_limits import QUERY

from streamjoin.joiner.repartition.source_clock import SourceClock

NOW_MS = 1_790_000_000_000
AHEAD = NOW_MS + 10**12  # a poison timestamp: 31 years ahead


def test_valid_records_move_the_clock_and_poison_does_not() -> None:
    clock = SourceClock(QUERY, "a", 3, max_future=1_000, now=0.0)
    for ts in (NOW_MS, NOW_MS + 5, NOW_MS + 3):
        clock.note({"ts": ts, "k": 1}, 0, now=0.0)
    clock.note({"ts": "x", "k": 1}, 0, now=0.0)
    clock.note({"ts": AHEAD, "k": 1}, 0, now=0.0)
    assert clock.maxts == NOW_MS + 5
    clock.note({"ts": NOW_MS + 3_000, "k": 1}, 0, now=2.5)  # 2.5 s of wall time: the bound grew
    assert clock.maxts == NOW_MS + 3_000


def test_a_resumed_clock_refuses_a_far_ahead_first_record() -> None:
    clock = SourceClock(QUERY, "a", 3, max_future=1_000, now=0.0)
    clock.resume(NOW_MS, now=10.0)
    clock.note({"ts": AHEAD, "k": 1}, 0, now=10.0)
    clock.note({"ts": AHEAD, "k": 1}, 0, now=10.0)
    assert clock.maxts == NOW_MS
    clock.note({"ts": NOW_MS + 20, "k": 1}, 0, now=10.0)
    assert clock.maxts == NOW_MS + 20
    fresh = SourceClock(QUERY, "a", 3, max_future=1_000, now=0.0)
    fresh.resume(None, now=0.0)  # nothing committed yet: the first record bounds nothing
    fresh.note({"ts": NOW_MS, "k": 1}, 0, now=0.0)
    assert fresh.maxts == NOW_MS
