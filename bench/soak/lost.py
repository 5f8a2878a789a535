"""Which results a run lost and which dead letters are missing: where and when, to find the cause.

A lost result is named by its components (topic:partition:offset of each input); the ledger gives
each component's timestamp and key. The workload's timestamps follow the producer's clock from
`CLOCK_START_MS` (`bench/soak/workload.py`), so a timestamp is also the second of the run the record
was produced in, on the same scale as the fault log's `at_s`. The operator that had to join a result
is the one of the join key's partition (the re-keyed inputs' partition: `partition_for`).

    lost = lost_results(expected.results, got, ledger, topics, partitions=6)
    lost["by_operator"], lost["by_component"], lost["by_10_s"], lost["examples"]
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from bench.soak.workload import CLOCK_START_MS, STREAMS, Ledger

from streamjoin.query.partitioning import partition_for

__all__ = ["lost_results", "missing_letter_times", "run_second"]

EXAMPLES = 10
"""How many lost results the report lists in full."""


def run_second(ts: int) -> float:
    """Return the second of the run a workload timestamp (ms) belongs to."""
    return round((ts - CLOCK_START_MS) / 1000, 1)


def lost_results(
    want: Counter[str], got: Counter[str], ledger: Ledger, topics: Mapping[str, str], partitions: int
) -> dict[str, Any]:
    """Return where and when the results of `want` missing from `got` were due: how many per
    operator partition, per input component (`stream[source partition]`), per 10 s of the run (of
    the newest component's production), the first and last such second, and a few in full."""
    lost = want - got
    if not lost:
        return {"count": 0}
    stream_of = {topic: s for s, topic in enumerate(topics[name] for name in STREAMS)}
    wanted: set[tuple[int, int, int]] = set()
    parsed: list[tuple[str, int, list[tuple[int, int, int]]]] = []
    for rid, n in lost.items():
        parts = []
        for component in rid.split("|"):
            topic, p, off = component.rsplit(":", 2)
            parts.append((stream_of[topic], int(p), int(off)))
        wanted.update(parts)
        parsed.append((rid, n, parts))
    found = _lookup(ledger, wanted)
    by_operator: Counter[int] = Counter()
    by_component: Counter[str] = Counter()
    by_10_s: Counter[int] = Counter()
    seconds: list[float] = []
    examples: list[dict[str, Any]] = []
    for rid, n, parts in sorted(parsed, key=lambda item: max(found[c][0] for c in item[2])):
        newest = run_second(max(found[c][0] for c in parts))
        key = found[parts[0]][1]
        operator = partition_for(key, partitions)
        by_operator[operator] += n
        for s, p, _ in parts:
            by_component[f"{STREAMS[s]}[{p}]"] += n
        by_10_s[int(newest // 10) * 10] += n
        seconds.append(newest)
        if len(examples) < EXAMPLES:
            examples.append({
                "id": rid, "operator": operator, "key": key,
                "components_s": [run_second(found[c][0]) for c in parts],
            })  # fmt: skip
    return {
        "count": sum(lost.values()),
        "first_s": min(seconds),
        "last_s": max(seconds),
        "by_operator": dict(sorted(by_operator.items())),
        "by_component": dict(by_component.most_common(12)),
        "by_10_s": dict(sorted(by_10_s.items())),
        "examples": examples,
    }


def _lookup(ledger: Ledger, wanted: set[tuple[int, int, int]]) -> dict[tuple[int, int, int], tuple[int, int]]:
    """Return (timestamp, key) of each wanted (stream, partition, offset) of the ledger's valid records."""
    found: dict[tuple[int, int, int], tuple[int, int]] = {}
    rows = zip(ledger.stream, ledger.partition, ledger.offset, ledger.ts, ledger.key, strict=True)
    for s, p, off, ts, k in rows:
        if (s, p, off) in wanted:
            found[s, p, off] = (ts, k)
    return found


def missing_letter_times(
    ledger: Ledger, missing: Iterable[tuple[int, int, int]]
) -> dict[tuple[int, int, int], float]:
    """Return the second of the run each poison record (stream, partition, offset) was produced in,
    read from the valid record produced just before it on its topic-partition (poison records have
    no timestamp of their own in the ledger)."""
    missing = list(missing)
    if not missing:
        return {}
    offsets: dict[tuple[int, int], list[int]] = {}
    stamps: dict[tuple[int, int], list[int]] = {}
    for s, p, off, ts in zip(ledger.stream, ledger.partition, ledger.offset, ledger.ts, strict=True):
        offsets.setdefault((s, p), []).append(off)  # ascending: the ledger is in production order
        stamps.setdefault((s, p), []).append(ts)
    out: dict[tuple[int, int, int], float] = {}
    for s, p, off in missing:
        at = max(bisect_left(offsets.get((s, p), []), off) - 1, 0)
        if stamps.get((s, p)):
            out[s, p, off] = run_second(stamps[s, p][at])
    return out
