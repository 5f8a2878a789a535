"""Which operator partition the live joiner gives each archived record: the grouping. No Spark here.

The live joiner runs one operator per partition number `q` of a query's partitioning plan
(`streamjoin.query.partitioning`). A directly read input reaches operator `q` from partition `q` of
its topic; a re-keyed input reaches it through partition `q` of its internal topic, where the
repartitioner put the record at `partition_for(record[attribute], N)` (0 in a one-partition plan;
a record that is not a JSON object, lacks the attribute, or whose value has no JSON key at
`source partition % N`, where the operator refuses it). `Router` gives the same answer for an
archived record, so the back-fill groups exactly the records each live operator sees.

The plan needs each input topic's partition count; the archive holds no topic metadata, so
`archive_partition_counts` takes one more than the highest partition number with archived files
(a trailing partition with no archived record at all is not seen: pass the counts explicitly then).

>>> from streamjoin.query.parse import parse_query
>>> from streamjoin.query.partitioning import partition_for, plan_partitioning
>>> q = parse_query({"name": "q", "output": {"topic": "o"},
...     "inputs": [{"stream": "a", "timestamp": "ts", "window": {"range": 5}},
...                {"stream": "b", "timestamp": "ts", "window": {"range": 5}}],
...     "where": [["a.k", "=", "b.k"]]})
>>> router = Router(plan_partitioning(q, {"a": 3, "b": 4}))
>>> router.partitions, router.rekeyed
(4, True)
>>> router.partition(0, b'{"k": 7, "ts": 1}', 2) == partition_for(7, 4)
True
>>> router.partition(0, b'{"k": 7.0}', 0) == router.partition(1, b'{"k": 7}', 1)
True
>>> router.partition(0, b"not json", 2), router.partition(1, b'{"ts": 1}', 3)
(2, 3)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from streamjoin.archiver.layout import ArchiveFile
from streamjoin.query.partitioning import PartitioningPlan, load_json, route

__all__ = ["Router", "archive_partition_counts", "rekeyed_partition"]


def archive_partition_counts(files: Mapping[str, Iterable[ArchiveFile]]) -> dict[str, int]:
    """Return each topic's partition count as the archive shows it (1 for a topic with no files).

    >>> archive_partition_counts({"t": [], "u": [ArchiveFile("u", 2, "2024-05-01T00", 0, 9)]})
    {'t': 1, 'u': 3}
    """
    return {topic: 1 + max((f.partition for f in fs), default=0) for topic, fs in files.items()}


def rekeyed_partition(raw: bytes | None, attribute: str | None, partitions: int, source: int) -> int:
    """Return the internal partition the repartitioner writes a record of source partition `source`
    to (`streamjoin.query.partitioning.route`, the joiner's rule)."""
    return route(load_json(raw), attribute, partitions, source)[0]


class Router:
    """The operator partition of each archived record of a query, by its partitioning plan."""

    def __init__(self, plan: PartitioningPlan) -> None:
        self.plan = plan
        self.partitions = plan.partitions
        """N: the operator partitions (the groups of the back-fill, before time buckets)."""
        self._routes = plan.routes
        self.rekeyed = bool(plan.rekeyed)
        """True when some input is re-keyed (records are then grouped by their value)."""

    def is_rekeyed(self, index: int) -> bool:
        """Return True when input `index` (query input order) is re-keyed."""
        return self._routes[index].rekeyed

    def partition(self, index: int, raw: bytes | None, source: int) -> int:
        """Return the operator partition of a record of input `index` from source partition `source`."""
        route = self._routes[index]
        if not route.rekeyed:
            return source
        return rekeyed_partition(raw, route.attribute, self.partitions, source)

    def partitions_of(self, index: int, raws: Sequence[bytes | None], sources: Sequence[int]) -> list[int]:
        """Return `partition` of each record of a batch of input `index`."""
        route = self._routes[index]
        if not route.rekeyed:
            return [int(s) for s in sources]
        attribute, n = route.attribute, self.partitions
        return [rekeyed_partition(r, attribute, n, int(s)) for r, s in zip(raws, sources, strict=True)]
