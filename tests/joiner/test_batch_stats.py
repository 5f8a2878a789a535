"""A batch's records reach the planner's statistics: the builder counts each input's records at once."""

from __future__ import annotations

import json

import pytest

from streamjoin.planner.collector import StatsCollector

from .test_batch_limits import NOW_MS, QUERY, Feed


def test_every_decoded_record_is_counted_for_the_planner() -> None:
    feed = Feed()
    sent: list[tuple[str, dict[str, int], float]] = []
    for batch in range(3):
        records = []
        for i in range(40):
            stream = "ab"[i % 2]
            record = {"ts": NOW_MS + batch * 40 + i, "k": (batch * 40 + i) % 13}
            records.append((stream, json.dumps(record).encode()))
            sent.append((stream, record, float(record["ts"])))
        records.append(("a", b"not json"))  # a dead letter: not counted
        feed.send(NOW_MS / 1000, *records)
    one_by_one = StatsCollector(QUERY)
    for stream, record, ts in sent:
        one_by_one.observe(stream, record, ts)
    collector = feed.operator.collector
    assert collector is not None
    got, want = collector.snapshot(), one_by_one.snapshot()
    for stream in "ab":
        assert got[stream].rate == pytest.approx(want[stream].rate, rel=1e-9) and want[stream].rate > 0
        assert got[stream].distinct == want[stream].distinct == pytest.approx(13, abs=0.5)
