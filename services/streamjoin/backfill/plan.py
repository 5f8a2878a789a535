"""What a back-fill reads and how it splits the work: pure, no Spark (docs/backfill.md).

Range convention: a back-fill over `[start, end)` computes exactly the results whose `t_max` (the
output record's `ts`) lies in `[start, end)`, in the query's timestamp unit. Consecutive ranges
therefore partition the results: back-filling [a, b) and then [b, c) gives each result once.

Which records it reads, per input:
- range window `T`: records with `start - T <= ts < end`: a component of a result with
  `t_max >= start` is at most `T` older than it;
- rows window `N`: records with `start <= ts < end`, plus the last `N` records before `start` of every
  (topic partition, `partition_by` value) group: a record that is not among those is pushed out of
  its window by `N` newer records before any `t_max >= start`.

How it splits the work (the unit the live joiner uses is one operator partition `p`: partition `p`
of every input read directly, or of the internal topics re-keyed inputs go through (`routing.py`);
its engine sees those records only, so the back-fill does the same and equals it):
- `partition`: one group per operator partition, all of its time range. Always correct; used whenever
  a rows window is present, since a count window's content depends on everything before.
- `partition-time`: range windows only. Each partition's range is cut into buckets of width `B`;
  bucket `k` is fed the records of `[start + kB - T_j, start + (k+1)B)` and keeps only the results
  whose `t_max` falls inside it, so every result is computed in exactly one bucket. The overlap costs
  `T_j / B` extra reads, which `B >= 4 * max T` keeps under 25 %.

>>> from streamjoin.query import parse_query
>>> q = parse_query({"name": "q", "output": {"topic": "o"},
...     "inputs": [{"stream": "a", "timestamp": "ts", "window": {"range": 100}},
...                {"stream": "b", "timestamp": "ts", "window": {"range": 50}}],
...     "where": [["a.k", "=", "b.k"]]})
>>> plan = plan_backfill(q, 1000, 5000, target_groups=8, partitions=2)
>>> plan.strategy, plan.buckets, plan.bucket_width
('partition-time', 4, 1000.0)
>>> [f.lower for f in plan.feeds]
[900.0, 950.0]
>>> plan.bucket_span(0, 2950.0)  # an `a` record at 2950 can be in results of buckets 1 and 2
(1, 2)
>>> plan.owns(plan.group_id(1, 2), 3999.0), plan.owns(plan.group_id(1, 2), 4000.0)
(True, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeAlias

from streamjoin.query.bounds import effective_window
from streamjoin.query.model import QueryDef, RangeWindow

__all__ = ["BackfillPlan", "InputFeed", "Strategy", "parse_time", "plan_backfill"]

Strategy: TypeAlias = Literal["partition", "partition-time"]


@dataclass(frozen=True, slots=True)
class InputFeed:
    """What one input contributes: its records with `lower <= ts < end`, plus any rows history."""

    index: int
    stream: str
    topic: str
    timestamp: str | None
    """The timestamp field, or None for the Kafka timestamp."""
    lower: float
    reach: float
    """How far after a record its results can end: `T` of a range window (0 for rows windows)."""
    rows: int | None = None
    """For a rows window: how many records before `start` to read per group."""
    partition_by: str | None = None


@dataclass(frozen=True, slots=True)
class BackfillPlan:
    """The back-fill of one query over `[start, end)`: what to read and how to split it."""

    query: QueryDef
    start: float
    end: float
    strategy: Strategy
    feeds: tuple[InputFeed, ...]
    buckets: int = 1
    bucket_width: float = math.inf
    rows_lookback: float | None = None
    """An optional bound on how far before `start` rows windows are looked for (None: no bound)."""

    def group_id(self, partition: int, bucket: int) -> int:
        """Return the id of the group of (partition number, time bucket)."""
        return partition * self.buckets + bucket

    def group_of(self, group_id: int) -> tuple[int, int]:
        """Return the (partition number, time bucket) of a group id."""
        return divmod(group_id, self.buckets)

    def bucket_of(self, ts: float) -> int:
        """Return the bucket whose results a `t_max` of `ts` belongs to."""
        if self.buckets == 1:
            return 0
        return min(self.buckets - 1, max(0, math.floor((ts - self.start) / self.bucket_width)))

    def bucket_span(self, input_index: int, ts: float) -> tuple[int, int]:
        """Return the first and last bucket a record of `input_index` at `ts` must be fed to."""
        if self.buckets == 1:
            return 0, 0
        reach = self.feeds[input_index].reach
        return self.bucket_of(ts), self.bucket_of(ts + reach)

    def owns(self, group_id: int, t_max: float) -> bool:
        """Return True when a result with this `t_max` is computed by group `group_id`."""
        if not self.start <= t_max < self.end:
            return False
        return self.buckets == 1 or self.bucket_of(t_max) == group_id % self.buckets

    @property
    def topics(self) -> tuple[str, ...]:
        """Return the distinct topics the back-fill reads."""
        return tuple(dict.fromkeys(f.topic for f in self.feeds))


def plan_backfill(
    query: QueryDef,
    start: float,
    end: float,
    *,
    target_groups: int = 16,
    partitions: int = 1,
    rows_lookback: float | None = None,
    strategy: Strategy | None = None,
) -> BackfillPlan:
    """Plan the back-fill of `query` over `[start, end)`.

    Args:
        query: the validated query.
        start: first `t_max` included (query timestamp unit).
        end: first `t_max` excluded.
        target_groups: how many groups to aim for (a few per core): range-only queries cut each
            partition's range into about `target_groups / partitions` time buckets.
        partitions: how many operator partitions the query runs on (N of its partitioning plan).
        rows_lookback: optional bound on the rows-window history read before `start`.
        strategy: force a strategy; "partition-time" is refused when a rows window is present.
    """
    start, end = float(start), float(end)
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        raise ValueError(f"the range [{start}, {end}) is empty or not finite")
    # An input without a window of its own is bounded in time by its `within` pairs: a range window.
    range_only = all(isinstance(effective_window(query, i.stream), RangeWindow) for i in query.inputs)
    if strategy == "partition-time" and not range_only:
        raise ValueError("time buckets need range windows only: a rows window depends on all its history")
    if strategy == "partition-time" and query.shedding is not None:
        raise ValueError("time buckets cannot shed: what a shedding policy keeps depends on all history")
    cuttable = range_only and query.shedding is None
    chosen: Strategy = strategy or ("partition-time" if cuttable else "partition")
    feeds: list[InputFeed] = []
    for index, inp in enumerate(query.inputs):
        window = effective_window(query, inp.stream)
        if isinstance(window, RangeWindow):
            feed = InputFeed(index, inp.stream, inp.topic, inp.timestamp, start - window.range, window.range)
        else:
            feed = InputFeed(
                index, inp.stream, inp.topic, inp.timestamp, start, 0.0, window.rows, window.partition_by
            )
        feeds.append(feed)
    buckets, width = 1, math.inf
    if chosen == "partition-time":
        largest = max(f.reach for f in feeds)
        per_partition = max(1, math.ceil(target_groups / max(1, partitions)))
        width = float(max(math.ceil((end - start) / per_partition), math.ceil(4 * largest), 1))
        buckets = max(1, math.ceil((end - start) / width))
    return BackfillPlan(query, start, end, chosen, tuple(feeds), buckets, width, rows_lookback)


def parse_time(text: str) -> float:
    """Return a range bound: a number as is, or an ISO-8601 time as milliseconds since the epoch.

    >>> parse_time("1714571000000"), parse_time("2024-05-01T13:43:20Z")
    (1714571000000.0, 1714571000000.0)
    """
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is neither a number nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return float(round(moment.timestamp() * 1000))
