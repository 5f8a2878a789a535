"""Workloads of the back-fill tests: events per partition, written straight into an archive, and the oracle.

Keys decide partitions (`k % partitions`) and the queries declare `"key": "k"`, so the live joiner
reads every input directly and the oracle computed per partition is the live result set. With
`spread=True` records go to random partitions (an unkeyed producer), each stream may have its own
partition count, and queries declare no key: the plan re-keys every input (docs/partitioning.md).
Timestamps grow per partition with small steps, so windows overlap plenty; a few malformed records
are mixed in (they must neither join nor occupy a rows window).
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamjoin.archiver import ArchiveLayout, ArchiveWriter, PartitionBuffer
from streamjoin.engine import Entry, ResultFormatter
from streamjoin.query import QueryDef, parse_query
from streamjoin.testing import Event, expected_results

__all__ = [
    "KAFKA_MINUTE",
    "KAFKA_TS_BASE",
    "WINDOWS",
    "Oracle",
    "Workload",
    "kafka_timed",
    "make_query",
    "make_workload",
    "oracle_ids",
]

KAFKA_TS_BASE = 1_714_571_000_000
"""Kafka timestamp of record timestamp 0 (so the archive spans a few hour directories)."""
KAFKA_MINUTE = 60_000
"""Kafka milliseconds per time unit of the workload."""

WINDOWS: dict[str, dict[str, dict[str, Any]]] = {
    "range": {"a": {"range": 60}, "b": {"range": 25}, "c": {"range": 40}},
    "rows": {"a": {"range": 60}, "b": {"rows": 4}, "c": {"range": 40}},
    "partitioned": {"a": {"rows": 6, "partition_by": "g"}, "b": {"rows": 3}, "c": {"range": 40}},
}


def make_query(
    name: str, kind: str, topics: Mapping[str, str], *, kafka_ts: bool = False, keyed: bool = True,
    where: Sequence[Sequence[str]] = (("a.k", "=", "b.k"), ("b.k", "=", "c.k"), ("a.v", ">=", "c.v")),
) -> QueryDef:  # fmt: skip
    """Return the 3-way equi-join on `k` (with a theta predicate) with the windows of `kind`.

    With `kafka_ts` the inputs are timed by the Kafka timestamp (a minute per time unit of the
    workload), and range windows are scaled to match. `keyed`: the inputs declare `"key": "k"` (as
    `make_workload` places records unless `spread`). `where`: another join graph.
    """
    scale = KAFKA_MINUTE if kafka_ts else 1
    windows = {s: ({"range": w["range"] * scale} if "range" in w else w) for s, w in WINDOWS[kind].items()}
    return parse_query(
        {
            "name": name,
            "inputs": [
                {"stream": s, "topic": topics[s], "timestamp": None if kafka_ts else "ts", "window": w}
                | ({"key": "k"} if keyed else {})
                for s, w in windows.items()
            ],
            "where": [list(p) for p in where],
            "output": {"topic": f"{name}.out"},
        }
    )


@dataclass
class Workload:
    """The events of every stream, as archived (offsets per topic partition), plus malformed values."""

    topics: dict[str, str]
    partitions: int
    events: list[Event] = field(default_factory=list)
    raw: list[tuple[str, int, int, int, bytes]] = field(default_factory=list)
    """(stream, partition, offset, kafka_ts, value) of every archived record, malformed ones included."""

    def write_archive(self, url: str, *, files_per_partition: int = 3) -> ArchiveLayout:
        """Write every record into an archive at `url` (several files per partition)."""
        layout = ArchiveLayout(url)
        writer = ArchiveWriter(layout)
        by_tp: dict[tuple[str, int], list[tuple[int, int, bytes]]] = {}
        for stream, p, offset, kts, value in self.raw:
            by_tp.setdefault((self.topics[stream], p), []).append((offset, kts, value))
        for (topic, p), records in by_tp.items():
            chunk = max(1, len(records) // files_per_partition + 1)
            for i in range(0, len(records), chunk):
                buffer = PartitionBuffer(topic, p)
                for offset, kts, value in records[i : i + chunk]:
                    buffer.append(offset, kts, None, value)
                writer.flush(buffer)
        return layout


def make_workload(
    topics: Mapping[str, str], *, partitions: int = 2, records: int = 900, keys: int = 12, seed: int = 1,
    malformed: int = 10, spread: bool = False, counts: Mapping[str, int] | None = None,
) -> Workload:  # fmt: skip
    """Return a workload of `records` records over streams a, b, c (plus `malformed` broken ones).

    `spread`: each record goes to a random partition of its stream's topic (`counts[stream]`
    partitions, default `partitions`), not to `k % partitions`.
    """
    rng = random.Random(seed)
    w = Workload(dict(topics), partitions)
    sizes = {s: (counts or {}).get(s, partitions) for s in "abc"}
    clock = dict.fromkeys(range(max(sizes.values())), 0)
    offsets: Counter[tuple[str, int]] = Counter()
    broken = set(rng.sample(range(records), malformed))
    for i in range(records):
        stream = rng.choice("abc")
        k = rng.randrange(keys)
        p = rng.randrange(sizes[stream]) if spread else k % partitions
        clock[p] += rng.randint(0, 2)
        ts = clock[p]
        offset = offsets[(stream, p)]
        offsets[(stream, p)] += 1
        kts = KAFKA_TS_BASE + ts * KAFKA_MINUTE  # a minute per time unit: the archive spans many hours
        if i in broken:  # no join field, or not an object: dead letters for the live joiner
            value = json.dumps({"ts": ts, "v": 1}).encode() if i % 2 else b"[1, 2]"
            w.raw.append((stream, p, offset, kts, value))
            continue
        record = {"ts": ts, "k": k, "v": rng.randint(0, 9), "g": rng.randrange(3), "n": i}
        w.events.append(Event(stream, p, offset, ts, record))
        w.raw.append((stream, p, offset, kts, json.dumps(record).encode()))
    return w


def kafka_timed(w: Workload) -> list[Event]:
    """Return the events with the Kafka timestamp as their timestamp (for `timestamp: null` queries)."""
    return [
        Event(e.stream, e.partition, e.offset, KAFKA_TS_BASE + e.ts * KAFKA_MINUTE, e.record)
        for e in w.events
    ]


class Oracle:
    """The oracle's results of one query over a workload (per partition), with their `t_max`."""

    def __init__(self, query: QueryDef, events: Sequence[Event]) -> None:
        formatter = ResultFormatter(query)
        names = query.stream_names
        ts_of = {(e.stream, e.partition, e.offset): e.ts for e in events}
        self.results: list[tuple[str, float]] = []
        for p in sorted({e.partition for e in events}):
            part = [e for e in events if e.partition == p]
            for key, count in expected_results(query, part, partitions={(s, p) for s in names}).items():
                t_max = max(ts_of[(s, pp, o)] for s, (pp, o) in zip(names, key, strict=True))
                rid = formatter.result_id([Entry(i, pp, o, 0, {}) for i, (pp, o) in enumerate(key)])
                self.results.extend([(rid, t_max)] * count)

    def ids(self, start: float = -math.inf, end: float = math.inf) -> Counter[str]:
        """Return the ids of the results with `t_max` in `[start, end)`."""
        return Counter(rid for rid, t_max in self.results if start <= t_max < end)


def oracle_ids(query: QueryDef, events: Sequence[Event], start: float, end: float) -> Counter[str]:
    """Return the ids of the oracle's results with `t_max` in `[start, end)`, computed per partition."""
    return Oracle(query, events).ids(start, end)
