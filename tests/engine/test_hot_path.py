"""The eager hot path under the joiner's arrival pattern: records of a fetch come grouped by topic.

Each batch adds stream a's records, then b's, then c's, so most records arrive out of timestamp order
and the reorder buffer must re-sort them; a few join keys make buckets long enough to change their
representation while they expire. Results are checked against the oracle under every mode, and the
release order against its definition (timestamp, then arrival).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from streamjoin.engine import MultiJoin
from streamjoin.query import parse_query
from streamjoin.testing import Event

from .harness import COMBINATIONS, check_all

_BATCH = 60


def _raw(n_streams: int, window: dict[str, Any]) -> dict[str, Any]:
    names = "abc"[:n_streams]
    return {
        "name": "q",
        "inputs": [{"stream": s, "timestamp": "ts", "window": window} for s in names],
        "where": [[f"{x}.k", "=", f"{y}.k"] for x, y in itertools.pairwise(names)],
        "output": {"topic": "o"},
    }


def _fetches(n: int, n_streams: int, per_ts: int, key: Callable[[int, int], int]) -> list[Event]:
    """Return n events of streams a b (c) in turn, `per_ts` per timestamp, grouped by stream per batch.

    Event i of a stream's offset `o` has join key `key(i, o)`.
    """
    names = "abc"[:n_streams]
    offsets = dict.fromkeys(names, 0)
    arrivals = []
    for i in range(n):
        stream = names[i % n_streams]
        ts = i // per_ts
        arrivals.append(Event(stream, 0, offsets[stream], ts, {"ts": ts, "k": key(i, offsets[stream])}))
        offsets[stream] += 1
    events: list[Event] = []
    for start in range(0, n, _BATCH):
        events += sorted(arrivals[start : start + _BATCH], key=lambda e: e.stream)
    return events


def test_long_buckets_expire_under_every_mode() -> None:
    # 2 keys, 150 ms windows, 1 record per stream per ms: about 75 entries per bucket.
    raw = _raw(2, {"range": 150})
    events = _fetches(800, 2, per_ts=2, key=lambda i, _: i // 2 % 2)
    advance_after = range(_BATCH - 1, len(events), _BATCH)
    check_all(raw, events, COMBINATIONS, focus="hot-path-long", advance_after=advance_after)


def test_equal_timestamps_grouped_by_stream_under_every_mode() -> None:
    # The joiner benchmark's shape: keys shared by 6 consecutive records, 10 records per ms.
    for window in ({"range": 3}, {"rows": 4}):
        raw = _raw(3, window)
        events = _fetches(300, 3, per_ts=10, key=lambda _, offset: offset // 2)
        advance_after = range(_BATCH - 1, len(events), _BATCH)
        check_all(raw, events, COMBINATIONS, focus="hot-path-ties", advance_after=advance_after)


def test_release_order_is_timestamp_then_arrival() -> None:
    query = parse_query(_raw(3, {"range": 5}))
    engine = MultiJoin(query, journal=True)
    events = _fetches(400, 3, per_ts=4, key=lambda i, _: i // 3 % 7)
    released = []
    for i, e in enumerate(events):
        assert engine.add(e.stream, dict(e.record), ts=e.ts, partition=0, offset=e.offset)
        if i % _BATCH == _BATCH - 1:
            engine.advance()
            assert engine.buffered == sum(1 for x in events[: i + 1] if x.ts > engine.watermark)
            released += engine.take_delta().released
    engine.finish()
    released += engine.take_delta().released
    names = query.stream_names
    got = [(names[r.input], r.offset) for r in released]
    assert got == [(e.stream, e.offset) for e in sorted(events, key=lambda e: e.ts)]
    assert [r.seq for r in released] == list(range(1, len(events) + 1))
