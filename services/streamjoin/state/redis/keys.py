"""The Redis keys of the state of one partition: each query's operator state and the shared window
tables of the topics it reads, all hash-tagged by partition so that one Lua script may touch them in
Redis Cluster (a batch commits a query's delta and its share of the tables together).

>>> k = StateKeys("streamjoin:", "flows", 3)
>>> k.meta
'streamjoin:{3}:state:flows:meta'
>>> k.outbox("results")
'streamjoin:{3}:state:flows:outbox:results'
>>> k.epochs
'streamjoin:{3}:epochs'
>>> k.table("clicks"), k.table_counts("clicks")
('streamjoin:{3}:table:clicks', 'streamjoin:{3}:table:clicks:counts')
>>> print(StateKeys.query_pattern("streamjoin:", "fl*ws"))
streamjoin:{*}:state:fl\\*ws:*
>>> StateKeys.partition_of("streamjoin:", "flows", "streamjoin:{3}:state:flows:outbox:dead")
3
>>> StateKeys.partition_of("streamjoin:", "flows", "streamjoin:{3}:state:flows:x:meta") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["StateKeys"]

_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")
# What follows `state:<query>:` in a key of that query; nothing else, so that the keys of a query
# whose name extends another's ("flows:x") never pass for the shorter one's.
_SUFFIX = re.compile(r"(?:meta|rec|seq|outbox:(?:results|dead))")


@dataclass(frozen=True, slots=True)
class StateKeys:
    """Every key of the state of `query`'s `partition`, and of the window tables it shares."""

    prefix: str
    query: str
    partition: int

    @property
    def _base(self) -> str:
        return f"{self.prefix}{{{self.partition}}}:state:{self.query}:"

    @property
    def meta(self) -> str:
        """Return the hash of scalars: epoch, owner, batch, offsets, engine scalars, outbox counters."""
        return self._base + "meta"

    @property
    def records(self) -> str:
        """Return the hash `input:offset` -> entry header (timestamp, size, filter, seq) of the query's
        window and reorder-buffer entries; the record bytes are in the shared table (`table`)."""
        return self._base + "rec"

    @property
    def seqs(self) -> str:
        """Return the hash `input:offset` -> release seq of entries released after their own batch."""
        return self._base + "seq"

    def outbox(self, name: str) -> str:
        """Return the list of committed, not yet trimmed output records of outbox `name`."""
        return self._base + f"outbox:{name}"

    @property
    def epochs(self) -> str:
        """Return the counter every owner epoch of this partition is drawn from (all queries share it,
        and it outlives them: an epoch is never handed out twice)."""
        return f"{self.prefix}{{{self.partition}}}:epochs"

    def table(self, topic: str) -> str:
        """Return the window table of `topic` on this partition, shared by every query reading it:
        offset -> record bytes, one copy however many entries hold the record."""
        return f"{self.prefix}{{{self.partition}}}:table:{topic}"

    def table_counts(self, topic: str) -> str:
        """Return offset -> how many entries hold the record, for records held more than once (a
        record of the table without a count has one holder)."""
        return f"{self.prefix}{{{self.partition}}}:table:{topic}:counts"

    @staticmethod
    def query_pattern(prefix: str, query: str) -> str:
        """Return a SCAN pattern matching every state key of every partition of `query` (and maybe
        keys of queries whose names extend it: check with `partition_of`)."""
        escaped = _GLOB_SPECIAL.sub(r"\\\1", query)
        return f"{prefix}{{*}}:state:{escaped}:*"

    @staticmethod
    def partition_of(prefix: str, query: str, key: str) -> int | None:
        """Return the partition of `key` if it is a state key of `query`, else None."""
        if not key.startswith(prefix + "{"):
            return None
        partition, sep, rest = key[len(prefix) + 1 :].partition("}:state:")
        head = query + ":"
        if not sep or not partition.isdigit() or not rest.startswith(head):
            return None
        return int(partition) if _SUFFIX.fullmatch(rest[len(head) :]) else None
