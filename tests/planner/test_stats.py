"""Live statistics: StreamStats, the decayed rate, HyperLogLog, edge selectivity and the collector."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from streamjoin.planner.collector import SlidingDistinct, StatsCollector
from streamjoin.planner.stats import EdgeSelectivity, ExponentialRate, HyperLogLog, StreamStats

from .golab import query_of


def test_stream_stats_validation_and_records() -> None:
    assert StreamStats("a", 2, 50).records == 100
    assert StreamStats("a", 2, rows=7).records == 7
    for bad in (
        dict(rate=-1, window=1),
        dict(rate=1),
        dict(rate=1, window=1, rows=3),
        dict(rate=1, window=0),
        dict(rate=1, window=1, distinct=0.5),
        dict(rate=1, window=1, buckets=0),
        dict(rate=math.nan, window=1),
    ):
        with pytest.raises(ValueError):
            StreamStats("a", **bad)


@pytest.mark.parametrize("n", [10_000, 30_000, 100_000])
@pytest.mark.parametrize("kind", ["str", "int", "float"])
def test_hyperloglog_within_three_percent(n: int, kind: str) -> None:
    makers: dict[str, Callable[[int], object]] = {
        "str": lambda i: f"key-{i}",
        "int": lambda i: i * 7919,
        "float": lambda i: i + 0.5,
    }
    make = makers[kind]
    hll = HyperLogLog()  # p = 14, as Redis
    for i in range(n):
        hll.add(make(i))
        hll.add(make(i // 2))  # duplicates do not count
    assert hll.count() == pytest.approx(n, rel=0.03)


def test_hyperloglog_small_counts_numbers_and_merge() -> None:
    hll = HyperLogLog()
    for v in [1, 1.0, True, 2, "2", None, 3]:
        hll.add(v)
    assert round(hll.count()) == 5  # 1 == 1.0 == True, as they would join
    a, b = HyperLogLog(), HyperLogLog()
    for i in range(5000):
        a.add(i)
        b.add(i + 2500)
    a.merge(b)
    assert a.count() == pytest.approx(7500, rel=0.03)
    with pytest.raises(ValueError):
        a.merge(HyperLogLog(10))


def test_decayed_rate_is_unbiased_and_tracks_a_step() -> None:
    rnd = random.Random(1)
    rate = ExponentialRate(half_life=50)
    t = 0.0
    while t < 500:
        t += rnd.expovariate(10)  # 10 per unit
        rate.observe(t)
    assert rate.rate() == pytest.approx(10, rel=0.15)
    step_at = t
    while t < step_at + 50:
        t += rnd.expovariate(100)  # 100 per unit from now on
        rate.observe(t)
    assert rate.rate() == pytest.approx(55, rel=0.2)  # one half-life: half way
    while t < step_at + 500:
        t += rnd.expovariate(100)
        rate.observe(t)
    assert rate.rate() == pytest.approx(100, rel=0.1)
    assert rate.rate(now=t + 50) == pytest.approx(50, rel=0.1)  # nothing arrives: it decays


def test_decayed_rate_early_estimate_and_disorder() -> None:
    rate = ExponentialRate(half_life=1000)
    assert rate.rate() == 0
    for ts in range(0, 11):
        rate.observe(float(ts))
    assert rate.rate() == pytest.approx(1.0, rel=0.01)  # unbiased long before the half-life
    late = ExponentialRate(half_life=1000)
    for ts in [0, 1, 2, 4, 3, 5, 6, 7, 8, 9, 10]:
        late.observe(float(ts))
    assert late.rate() == pytest.approx(rate.rate(), rel=1e-3)


def test_edge_selectivity() -> None:
    edge = EdgeSelectivity()
    assert edge.selectivity is None
    edge.record(100, 10)
    edge.record(100, 30)
    assert edge.selectivity == pytest.approx(0.2)
    decayed = EdgeSelectivity(decay=0.0001)
    decayed.record(100, 90)
    decayed.record(100, 10)
    assert decayed.selectivity == pytest.approx(0.1, abs=0.01)
    with pytest.raises(ValueError):
        edge.record(1, 2)


def test_sliding_distinct_forgets_old_values() -> None:
    d = SlidingDistinct(span=100, slices=4)
    for ts in range(100):
        d.add(ts % 50, ts)  # 50 values
    assert d.count(99) == pytest.approx(50, abs=2)
    for ts in range(100, 300):
        d.add(1000 + ts % 10, ts)  # 10 new values only
    assert d.count(299) == pytest.approx(10, abs=1)


def test_collector_summarises_a_query() -> None:
    query = query_of(["a", "b"], [100.0, 100.0])
    col = StatsCollector(query, half_life=100)
    rnd = random.Random(3)
    for i in range(4000):
        ts = i * 0.1  # 10 records per unit, alternating
        stream = "a" if i % 5 else "b"
        col.observe(stream, {"k": rnd.randrange(40 if stream == "a" else 8), "ts": ts}, ts)
    stats = col.snapshot()
    assert stats["a"].rate == pytest.approx(8, rel=0.05)
    assert stats["b"].rate == pytest.approx(2, rel=0.05)
    assert stats["a"].window == 100 and stats["a"].records == pytest.approx(800, rel=0.05)
    assert round(stats["a"].distinct) == 40 and round(stats["b"].distinct) == 8


def test_observing_in_batches_counts_what_observing_one_by_one_counts() -> None:
    """The joiner counts each input's records of a batch at once (`observe_many`): same rates,
    same distinct values, with disorder, slice boundaries, a missing field and an unhashable value."""
    query = query_of(["a", "b"], [100.0, 100.0])
    one, many = StatsCollector(query, half_life=100), StatsCollector(query, half_life=100)
    rnd = random.Random(5)
    records: list[tuple[str, dict[str, object], float]] = []
    for i in range(6000):
        ts = i * 0.5 + (rnd.choice([0.0, 0.0, 0.0, -1.2]) if i < 2000 else 0.0)  # early disorder
        stream = "a" if i % 3 else "b"
        key: object = rnd.randrange(3000 if stream == "a" else 30)
        record = {"k": [1, 2] if i == 4321 else key, "ts": ts} if i % 97 else {"ts": ts}
        records.append((stream, record, ts))
    at = 0
    while at < len(records):  # the same records, one by one and in batches, compared after each
        size = rnd.choice([1, 7, 150, 800])
        for stream, record, ts in records[at : at + size]:
            one.observe(stream, record, ts)
        for stream in ("a", "b"):
            chunk = [(r, ts) for s, r, ts in records[at : at + size] if s == stream]
            many.observe_many(stream, [r for r, _ in chunk], [ts for _, ts in chunk])
        at += size
        assert many.newest == one.newest
        assert many.rates() == pytest.approx(one.rates(), rel=1e-9)
        got, want = many.snapshot(), one.snapshot()
        for stream in ("a", "b"):  # distinct values over the horizon (800: the last 8 slices)
            assert got[stream].distinct == want[stream].distinct


def test_decayed_rate_in_batches_equals_one_by_one() -> None:
    one, many = ExponentialRate(half_life=20), ExponentialRate(half_life=20)
    stamps = [5.0, 5.0, 6.0, 4.0, 9.0, 9.0, 30.0, 12.0, 31.0]
    for ts in stamps:
        one.observe(ts)
    many.observe_many(stamps[:2])
    many.observe_many([])
    many.observe_many(stamps[2:])
    assert many.rate() == pytest.approx(one.rate(), rel=1e-12)
    assert many.rate(now=50.0) == pytest.approx(one.rate(now=50.0), rel=1e-12)
