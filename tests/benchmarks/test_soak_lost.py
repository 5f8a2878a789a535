"""The soak's diagnosis of lost results and missing dead letters: where and when they were due."""

from __future__ import annotations

from collections import Counter

from bench.soak.lost import lost_results, missing_letter_times
from bench.soak.workload import CLOCK_START_MS, Ledger

from streamjoin.query.partitioning import partition_for

TOPICS = {"a": "ta", "b": "tb", "c": "tc"}


def _ledger() -> Ledger:
    ledger = Ledger(partitions=6)
    for s in range(3):  # one record of each stream at 12.5 s with key 7, one at 30 s with key 8
        ledger.add_valid(s, 1, CLOCK_START_MS + 12_500, 7, 1)
        ledger.add_valid(s, 2, CLOCK_START_MS + 30_000 + s, 8, 1)
    ledger.poison.append((2, 2, ledger.take_offset(2, 2), "ts-ahead"))
    return ledger


def test_lost_results_are_placed_by_operator_component_and_time() -> None:
    early, late = "ta:1:0|tb:1:0|tc:1:0", "ta:2:0|tb:2:0|tc:2:0"
    want = Counter({early: 1, late: 1})
    lost = lost_results(want, Counter({early: 1}), _ledger(), TOPICS, partitions=6)
    assert lost["count"] == 1
    assert (lost["first_s"], lost["last_s"]) == (30.0, 30.0)
    assert lost["by_operator"] == {partition_for(8, 6): 1}
    assert lost["by_component"] == {"a[2]": 1, "b[2]": 1, "c[2]": 1}
    assert lost["by_10_s"] == {30: 1}
    assert lost["examples"][0]["components_s"] == [30.0, 30.0, 30.0]
    assert lost_results(want, want, _ledger(), TOPICS, partitions=6) == {"count": 0}


def test_a_missing_dead_letter_is_timed_by_the_record_before_it() -> None:
    assert missing_letter_times(_ledger(), [(2, 2, 1)]) == {(2, 2, 1): 30.0}
