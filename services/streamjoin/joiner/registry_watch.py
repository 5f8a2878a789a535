"""Turn the registry (docs/registry.md) into the queries a worker should run.

The registry lives in Redis (the control plane writes it through `RegistryStore`); a worker follows
`RegistryStore.watch()` (pub/sub plus a one-second poll of the version) and rebuilds its set of
`QuerySpec`s from each snapshot. A query that fails to parse is reported and skipped, never fatal.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from streamjoin.query import QueryDef, QueryError, parse_query
from streamjoin.registry import RegistrySnapshot

__all__ = ["QuerySpec", "specs_from_snapshot"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class QuerySpec:
    """A query as a worker runs it: the definition with its controls applied."""

    name: str
    query: QueryDef
    revision: int
    paused: bool
    fingerprint: str
    """The effective definition as canonical JSON: a change means the operators must be rebuilt."""

    @property
    def topics(self) -> tuple[str, ...]:
        """Return the distinct input topics."""
        return tuple(dict.fromkeys(i.topic for i in self.query.inputs))


def specs_from_snapshot(snapshot: RegistrySnapshot) -> tuple[dict[str, QuerySpec], dict[str, str]]:
    """Return (runnable queries by name, problems by query name) of a registry snapshot."""
    specs: dict[str, QuerySpec] = {}
    problems: dict[str, str] = {}
    for name, record in snapshot.queries.items():
        definition = record.effective_definition()
        try:
            query = parse_query(definition)
        except QueryError as exc:
            problems[name] = str(exc)
            _log.error("query %s cannot run: %s", name, exc)
            continue
        specs[name] = QuerySpec(
            name=name,
            query=query,
            revision=record.revision,
            paused=record.controls.paused,
            fingerprint=json.dumps(definition, sort_keys=True, default=str),
        )
    return specs, problems
