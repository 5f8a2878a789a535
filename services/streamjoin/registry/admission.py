"""Admission of new queries: the deployment's cap and the backlog of queries no worker laid out yet.

Checked by `CatalogOps.create_query` under the same WATCH as the write (the registry's query hash is
watched, so two registrations that both saw room cannot both commit), so concurrent registrations,
from one control plane or several replicas, never pass a limit. A refusal raises before the log is
appended to or anything is written.

A query is *pending* while no worker reported a status for it (no `streamjoin:status:{query}`
hash): no worker has laid it out (topics, partitioning plan) yet, or no worker runs at all. A query
whose layout found a problem reports it as its status, so it no longer counts.

>>> Admission(max_queries=2).refusal(registered=2, pending=0)
QueryCapError('2 queries are registered; the limit is 2')
>>> Admission(max_pending=3).refusal(registered=10, pending=3)
PendingBacklogError('3 registered queries are not laid out by a worker yet; the limit is 3')
>>> Admission(max_queries=5, max_pending=3).refusal(registered=4, pending=2) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

from streamjoin.registry.errors import RegistryError

__all__ = ["Admission", "AdmissionError", "PendingBacklogError", "QueryCapError"]


class AdmissionError(RegistryError):
    """A registration refused by an admission limit; nothing was written."""

    def __init__(self, message: str, *, count: int, limit: int) -> None:
        super().__init__(message)
        self.count = count
        self.limit = limit


class QueryCapError(AdmissionError):
    """The deployment already holds its most queries."""


class PendingBacklogError(AdmissionError):
    """Too many registered queries wait for a worker to lay them out; retry later."""


@dataclass(frozen=True, slots=True)
class Admission:
    """The limits a new query is admitted under (None: no limit)."""

    max_queries: int | None = None
    max_pending: int | None = None

    def refusal(self, *, registered: int, pending: int) -> AdmissionError | None:
        """Return why one more query is refused beside `registered` queries (`pending` of them not
        laid out yet), or None."""
        if self.max_queries is not None and registered >= self.max_queries:
            return QueryCapError(
                f"{registered} queries are registered; the limit is {self.max_queries}",
                count=registered,
                limit=self.max_queries,
            )
        if self.max_pending is not None and pending >= self.max_pending:
            return PendingBacklogError(
                f"{pending} registered queries are not laid out by a worker yet; "
                f"the limit is {self.max_pending}",
                count=pending,
                limit=self.max_pending,
            )
        return None
