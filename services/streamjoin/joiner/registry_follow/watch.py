"""Turn the registry (docs/registry.md) into the queries a worker should run.

The registry lives in Redis (the control plane writes it through `RegistryStore`); a worker follows
`RegistryStore.watch()` (pub/sub plus a one-second poll of the version) and rebuilds its set of
`QuerySpec`s from each snapshot. The snapshot's `QueryRecord`s hold their parsed `QueryDef` (parsed
once per stored JSON, docs/registry.md "A query's trip"); nothing here parses or dumps a query
again. A query whose controls do not fit it (or that could not be read back) is reported and
skipped, never fatal.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from streamjoin.query import QueryDef, QueryError
from streamjoin.registry import QueryRecord, RegistrySnapshot

__all__ = ["QuerySpec", "specs_from_snapshot"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class QuerySpec:
    """A query as a worker runs it: the registered definition with its controls applied."""

    name: str
    query: QueryDef
    revision: int
    paused: bool
    fingerprint: str
    """The record's stored JSON and its controls but `paused`: a change of the definition, of the
    revision (a replaced query) or of a control that changes what runs means the operators must be
    rebuilt; pausing does not."""
    incarnation: str = ""
    """`<created_at>:<revision>` of the registry record: a query deleted and registered again under
    its name, or redefined, is another incarnation (its progress markers are not this one's)."""
    created_at: float = 0.0
    """When the query was registered (with `revision`, it tags the records of its internal topics)."""

    @classmethod
    def of(cls, record: QueryRecord) -> QuerySpec:
        """Return what runs of `record`; raise `QueryError` if its controls do not fit the query."""
        query = record.effective()
        incarnation = f"{record.created_at!r}:{record.revision}"
        return cls(
            record.name,
            query,
            record.revision,
            record.controls.paused,
            f"{record.to_json()}\n{replace(record.controls, paused=False)!r}",
            incarnation,
            record.created_at,
        )

    @property
    def topics(self) -> tuple[str, ...]:
        """Return the distinct input topics."""
        return tuple(dict.fromkeys(i.topic for i in self.query.inputs))


def specs_from_snapshot(snapshot: RegistrySnapshot) -> tuple[dict[str, QuerySpec], dict[str, str]]:
    """Return (runnable queries by name, problems by query name) of a registry snapshot."""
    specs: dict[str, QuerySpec] = {}
    problems: dict[str, str] = dict(snapshot.problems)
    for name, record in snapshot.queries.items():
        try:
            specs[name] = QuerySpec.of(record)
        except QueryError as exc:
            problems[name] = str(exc)
    for name, problem in sorted(problems.items()):
        _log.error("query %s cannot run: %s", name, problem)
    return specs, problems
