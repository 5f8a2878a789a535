"""The Redis keys of one operator's state, hash-tagged by (query, partition) for Redis Cluster.

>>> k = StateKeys("streamjoin:", "flows", 3)
>>> k.meta
'streamjoin:state:{flows:3}:meta'
>>> k.outbox("results")
'streamjoin:state:{flows:3}:outbox:results'
>>> print(StateKeys.query_pattern("streamjoin:", "fl*ws"))
streamjoin:state:{fl\\*ws:*
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["StateKeys"]

_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


@dataclass(frozen=True, slots=True)
class StateKeys:
    """Every key of the state of `query`'s `partition` (all in one Redis Cluster slot)."""

    prefix: str
    query: str
    partition: int

    @property
    def _base(self) -> str:
        return f"{self.prefix}state:{{{self.query}:{self.partition}}}:"

    @property
    def meta(self) -> str:
        """Return the hash of scalars: epoch, owner, batch, offsets, engine scalars, outbox counters."""
        return self._base + "meta"

    @property
    def records(self) -> str:
        """Return the hash `input:offset` -> packed entry (timestamp, size, filter, seq, raw record)."""
        return self._base + "rec"

    @property
    def seqs(self) -> str:
        """Return the hash `input:offset` -> release seq of entries released after their own batch."""
        return self._base + "seq"

    def outbox(self, name: str) -> str:
        """Return the list of committed, not yet trimmed output records of outbox `name`."""
        return self._base + f"outbox:{name}"

    def hll(self, input_index: int, slice_number: int) -> str:
        """Return the HyperLogLog of join-key values of one input over one slice of time."""
        return self._base + f"hll:{input_index}:{slice_number}"

    @staticmethod
    def query_pattern(prefix: str, query: str) -> str:
        """Return a SCAN pattern matching every state key of every partition of `query`."""
        escaped = _GLOB_SPECIAL.sub(r"\\\1", query)
        return f"{prefix}state:{{{escaped}:*"

    @staticmethod
    def belongs(prefix: str, query: str, key: str) -> bool:
        """Return True if `key` is a state key of `query` (not of a query whose name extends it)."""
        head = f"{prefix}state:{{{query}:"
        if not key.startswith(head):
            return False
        partition, sep, _ = key[len(head) :].partition("}:")
        return bool(sep) and partition.isdigit()
