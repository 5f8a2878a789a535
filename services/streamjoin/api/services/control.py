"""Serve and write the Control Tables."""

from __future__ import annotations

from streamjoin.api.errors import ApiError
from streamjoin.api.schemas import ControlTable, ControlUpdate, EntityKind
from streamjoin.api.services.observe import observe, observe_query
from streamjoin.api.services.queries import QueryService
from streamjoin.api.services.tables import operator_table, query_table, topic_tables, window_tables
from streamjoin.registry import NotFoundError, RegistryStore

__all__ = ["ControlService"]

_ENTITY = {"queries": "query", "windows": "window", "operators": "operator", "topics": "topic"}


class ControlService:
    """Control Tables of queries, windows, join operators and topics."""

    def __init__(self, store: RegistryStore, queries: QueryService) -> None:
        """Serve Control Tables from `store`; write controls through `queries`."""
        self._store = store
        self._queries = queries

    async def tables(self, kind: EntityKind | None = None) -> list[ControlTable]:
        """Return every Control Table of `kind` (all kinds if None)."""
        observation = await observe(self._store)
        out: list[ControlTable] = []
        if kind in (None, "queries"):
            out += [query_table(qo) for qo in observation.queries.values()]
        if kind in (None, "windows"):
            out += [t for qo in observation.queries.values() for t in window_tables(qo)]
        if kind in (None, "operators"):
            out += [operator_table(qo) for qo in observation.queries.values()]
        if kind in (None, "topics"):
            out += topic_tables(observation)
        return out

    async def table(self, kind: EntityKind, name: str) -> ControlTable:
        """Return one Control Table; raise `ApiError` 404 if there is no such entity."""
        if kind in ("queries", "operators"):
            record = await self._store.get_query(name)
            if record is None:
                raise NotFoundError("query", name)
            qo = await observe_query(self._store, record)
            return query_table(qo) if kind == "queries" else operator_table(qo)
        for table in await self.tables(kind):
            if table.name == name:
                return table
        raise ApiError(404, f"{_ENTITY[kind]}_not_found", f"no {_ENTITY[kind]} named {name!r}")

    async def update_query(self, name: str, body: ControlUpdate) -> ControlTable:
        """Write a query's control attributes; return its Control Table afterwards."""
        await self._queries.update_controls(name, body)
        return await self.table("queries", name)
