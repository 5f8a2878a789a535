"""The Redis key layout of the registry (docs/registry.md), in one place.

>>> keys = RegistryKeys()
>>> keys.stats("flows", 3)
'streamjoin:stats:flows:3'
>>> keys.control("flows")
'streamjoin:control:flows'
>>> RegistryKeys(slot_tag="registry").stats("flows", 3)
'streamjoin:{registry}:stats:flows:3'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_PREFIX", "RegistryKeys"]

DEFAULT_PREFIX = "streamjoin:"


@dataclass(frozen=True, slots=True)
class RegistryKeys:
    """Build every registry key from one prefix (tests use a unique prefix per test).

    On a Redis Cluster (`slot_tag`), every key also carries the hash tag `{slot_tag}` right after the
    prefix, so all registry keys share one slot: its WATCH/MULTI transactions and the writer lock
    touch one node.
    """

    prefix: str = DEFAULT_PREFIX
    slot_tag: str = ""

    @property
    def _p(self) -> str:
        return f"{self.prefix}{{{self.slot_tag}}}:" if self.slot_tag else self.prefix

    @property
    def streams(self) -> str:
        """Return the hash of registered streams, name to JSON."""
        return f"{self._p}streams"

    @property
    def queries(self) -> str:
        """Return the hash of registered queries, name to JSON."""
        return f"{self._p}queries"

    @property
    def version(self) -> str:
        """Return the registry version counter."""
        return f"{self._p}version"

    @property
    def epoch(self) -> str:
        """Return the registry's epoch: set when it is created or restored, absent in a Redis that lost it."""
        return f"{self._p}epoch"

    @property
    def writer(self) -> str:
        """Return the lock that orders the control plane's logged writes (docs/registry.md, "Durability")."""
        return f"{self._p}writer"

    @property
    def changes(self) -> str:
        """Return the pub/sub channel announcing a new version."""
        return f"{self._p}changes"

    @property
    def workers(self) -> str:
        """Return the sorted set of worker ids scored by heartbeat expiry (unix ms)."""
        return f"{self._p}workers"

    def control(self, query: str) -> str:
        """Return the hash of a query's writable Control-Table attributes."""
        return f"{self._p}control:{query}"

    def replan(self, query: str) -> str:
        """Return the string holding a pending re-plan request id."""
        return f"{self._p}replan:{query}"

    def plan(self, query: str) -> str:
        """Return the hash of the plan a joiner chose for a query."""
        return f"{self._p}plan:{query}"

    def stats(self, query: str, partition: int) -> str:
        """Return the hash of one partition's statistics of a query."""
        return f"{self._p}stats:{query}:{partition}"

    def stats_index(self, query: str) -> str:
        """Return the set of partitions that have published statistics for a query."""
        return f"{self._p}stats:{query}"

    def status(self, query: str) -> str:
        """Return the hash partition to status of a query."""
        return f"{self._p}status:{query}"

    def worker(self, worker: str) -> str:
        """Return a worker's heartbeat string (with a TTL)."""
        return f"{self._p}workers:{worker}"
