"""The result count of Kafka Streams' chained joins (`kstreams-chained`): the brute force of its own
semantics, as `engine_count` is of streamjoin's.

A left-deep chain of KStream-KStream joins: the first two inputs join within their pairwise windows;
every later input joins the result so far on its first equality, within
`[result ts - before_ms, result ts + after_ms]` (`joinplan.chain`), where the result's timestamp is
its youngest member's (what Kafka Streams gives a join result), and every other equality holds.
Unlike streamjoin's windows, an input joined later is not bounded by each older member's own
window: on equi3 a record of c may be up to 1 s after the youngest of a and b even when the oldest
is 1 s older still. The count assumes no record comes later than the join's grace period (the bench
gives Kafka Streams a grace of 10 s).

    python -m bench.peers.chained_count DIRECTORY [--limit N]
"""

from __future__ import annotations

import argparse
import bisect
import json
from collections import defaultdict
from pathlib import Path

from bench.peers.joinplan import chain, load, plan
from bench.peers.kafka_inputs import events

__all__ = ["chained_count", "main"]

Row = dict[str, int]


def chained_count(directory: Path, limit: int | None = None) -> int:
    """Return the chain's result count over the workload's first `limit` events (all if None)."""
    definition = load(directory)
    steps = plan(definition)
    rows: dict[str, list[Row]] = {s.stream: [] for s in steps}
    for stream, record in events(directory, limit):
        rows[stream].append(record)
    position = {s.stream: i for i, s in enumerate(steps)}
    partial: list[tuple[int, tuple[Row, ...]]] = [(r["ts"], (r,)) for r in rows[steps[0].stream]]
    total = 0
    for i, (step, joined) in enumerate(zip(steps[1:], chain(definition, steps), strict=True), start=2):
        old, old_field, new_field = step.equalities[0]
        index: dict[int, list[Row]] = defaultdict(list)
        for r in sorted(rows[step.stream], key=lambda r: r["ts"]):
            index[r[new_field]].append(r)
        times = {key: [r["ts"] for r in bucket] for key, bucket in index.items()}
        last = i == len(steps)
        grown: list[tuple[int, tuple[Row, ...]]] = []
        for youngest, members in partial:
            key = members[position[old]][old_field]
            if key not in index:
                continue
            low = bisect.bisect_left(times[key], youngest - joined.before_ms)
            high = bisect.bisect_right(times[key], youngest + joined.after_ms)
            for r in index[key][low:high]:
                if all(members[position[o]][of] == r[nf] for o, of, nf in step.equalities[1:]):
                    if last:
                        total += 1
                    else:
                        grown.append((max(youngest, r["ts"]), (*members, r)))
        partial = grown
    return total


def main() -> None:
    """Print {"results": N} for DIRECTORY's workload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    print(json.dumps({"results": chained_count(args.directory, args.limit)}))


if __name__ == "__main__":
    main()
