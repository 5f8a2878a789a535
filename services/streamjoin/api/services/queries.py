"""Register, replace, read, pause and delete queries; write their controls."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from streamjoin.api.errors import ApiError
from streamjoin.api.schemas import (
    ControlsPublic,
    ControlUpdate,
    PartitionStatusPublic,
    QueryCreate,
    QueryPublic,
    QueryUpdate,
    QueryValidation,
    StatusReasonPublic,
)
from streamjoin.api.services.compile import Compiled, compile_query
from streamjoin.api.services.limits import RegistrationLimits, admission_refusal, check_limits
from streamjoin.api.services.observe import status_reason
from streamjoin.api.services.output_schema import registry_schemas_of
from streamjoin.api.services.plans import partitioning_json
from streamjoin.query.cql import format_cql
from streamjoin.query.model import QueryDef
from streamjoin.registry import (
    AdmissionError,
    NotFoundError,
    QueryRecord,
    RegistrySnapshot,
    RegistryStore,
    StatusRecord,
    query_status,
)
from streamjoin.schema_registry import SchemaRegistry

__all__ = ["QueryService", "control_changes", "query_public"]


class QueryService:
    """Queries over the registry; every write is validated first and then written in one step."""

    def __init__(
        self,
        store: RegistryStore,
        limits: RegistrationLimits | None = None,
        schemas: SchemaRegistry | None = None,
    ) -> None:
        """Serve queries from `store`; registrations are checked against `limits` (default: defaults).

        `schemas`: the schema registry that gives the schema of an Avro stream registered without one.
        """
        self._store = store
        self._limits = limits or RegistrationLimits()
        self._schemas = schemas

    async def create(self, body: QueryCreate) -> QueryPublic:
        """Validate and register a query; raise `QueryError` (422), `AlreadyExistsError` (409), or
        `ApiError` for a limit (409 the cap, 429 the pending backlog: checked atomically with the write)."""
        snapshot = await self._store.snapshot()
        compiled = await self._compile(body, snapshot)
        at = round(time.time(), 3)
        record = QueryRecord.of(compiled.query, cql=compiled.cql, paused=body.paused, at=at)
        try:
            version = await self._store.create_query(
                record, streams=compiled.streams, admission=self._limits.admission
            )
        except AdmissionError as exc:
            raise admission_refusal(exc, self._limits) from None
        return query_public(record, [], version)

    async def validate(self, body: QueryCreate) -> QueryValidation:
        """Run registration's compile step on `body` and change nothing; raise `QueryError` (422)."""
        snapshot = await self._store.snapshot()
        compiled = await self._compile(body, snapshot)
        record = QueryRecord.of(compiled.query, cql=compiled.cql, paused=body.paused, at=0.0)
        public = query_public(record, [], snapshot.version)
        return QueryValidation(
            name=public.name,
            cql=public.cql,
            definition=public.definition,
            streams=sorted({s.name for s in compiled.streams}),
            exists=public.name in snapshot.queries,
        )

    async def replace(self, name: str, body: QueryUpdate) -> QueryPublic:
        """Replace a query's definition; raise `NotFoundError`, `QueryError` or `ApiError`."""
        if body.name is not None and body.name != name:
            raise ApiError(
                422, "invalid_query", f"the body names {body.name!r}, the path {name!r}", field="name"
            )
        snapshot = await self._store.snapshot()
        old = snapshot.queries.get(name)
        if old is None:
            raise NotFoundError("query", name)
        compiled = await self._compile(body, snapshot, name=name)
        _check_same_inputs(old, compiled.query)
        draft = QueryRecord(compiled.query, compiled.cql, old.controls, 0.0, round(time.time(), 3))
        record, version = await self._store.replace_query(
            draft, streams=compiled.streams, expected_revision=old.revision
        )
        return await self._public(record, version)

    async def _compile(
        self, body: QueryCreate, snapshot: RegistrySnapshot, *, name: str | None = None
    ) -> Compiled:
        """Registration's compile step: `body`'s query (named `name` if given) completed from the
        registry's streams and schemas, validated, and checked against the limits; raise
        `QueryError` (422) or `ApiError` for a limit."""
        raw = body.query_json() if name is None else {**body.query_json(), "name": name}
        found = await registry_schemas_of(raw, snapshot.streams, self._schemas)
        compiled = compile_query(raw, body.cql, snapshot.streams, body.sql, found)
        check_limits(compiled.query, snapshot.streams, list(snapshot.queries), self._limits)
        return compiled

    async def list(self) -> list[QueryPublic]:
        """Return every query with its status, by name."""
        snapshot = await self._store.snapshot()
        return [await self._public(q, snapshot.version) for q in snapshot.queries.values()]

    async def get(self, name: str) -> QueryPublic:
        """Return one query with its status; raise `NotFoundError`."""
        record = await self._record(name)
        return await self._public(record, await self._store.version())

    async def delete(self, name: str) -> None:
        """Remove a query and its runtime keys; raise `NotFoundError`."""
        await self._store.delete_query(name)

    async def set_paused(self, name: str, paused: bool) -> QueryPublic:
        """Pause or resume a query; raise `NotFoundError`."""
        return await self.update_controls(name, ControlUpdate(paused=paused))

    async def update_controls(self, name: str, body: ControlUpdate) -> QueryPublic:
        """Validate and write control attributes; raise `NotFoundError`, `QueryError` or `ApiError`."""
        record = await self._record(name)
        changes = control_changes(body)
        if not changes:
            return await self._public(record, await self._store.version())
        record.controls.with_changes(changes).apply(record.query)  # the query must stay valid under them
        controls, version = await self._store.set_controls(name, changes, expected_revision=record.revision)
        updated = record.with_controls(controls)
        return await self._public(updated, version)

    async def _public(self, record: QueryRecord, version: int) -> QueryPublic:
        """Return the public form of `record` with its published status and partitioning."""
        statuses = await self._store.read_status(record.name)
        return query_public(
            record, statuses, version, partitioning_json(await self._store.read_plan(record.name))
        )

    async def _record(self, name: str) -> QueryRecord:
        record = await self._store.get_query(name)
        if record is None:
            raise NotFoundError("query", name)
        return record


def _check_same_inputs(old: QueryRecord, new: QueryDef) -> None:
    """Refuse a redefinition that reads other inputs, or reads one keyed otherwise (409): delete and
    register the query again.

    As ksqlDB refuses a `CREATE OR REPLACE` that changes the sources: the state of the old inputs
    (windows, offsets) means nothing for new ones, and new inputs may have other partition counts.
    An input's `key` decides how it is partitioned (read directly or re-keyed), so what each operator
    partition holds: changing it is changing the input.
    """
    before = [(i.stream, i.topic) for i in old.query.inputs]
    after = [(i.stream, i.topic) for i in new.inputs]
    if sorted(before) != sorted(after):
        raise ApiError(
            409,
            "inputs_changed",
            f"query {old.name!r} reads {sorted(before)}; a replacement must read the same inputs "
            f"(it reads {sorted(after)}). Delete the query and register it again to change its inputs.",
            field="inputs",
        )
    keys = {i.stream: i.key for i in old.query.inputs}
    changed = [f"{i.stream}: {keys[i.stream]!r} -> {i.key!r}" for i in new.inputs if keys[i.stream] != i.key]
    if changed:
        raise ApiError(
            409,
            "inputs_changed",
            f"query {old.name!r}: a replacement changes the key of its inputs ({', '.join(changed)}), so how "
            "they are partitioned. Delete the query and register it again to change it.",
            field="inputs",
        )


def control_changes(body: ControlUpdate) -> dict[str, Any]:
    """Return the attributes a `ControlUpdate` sets, as JSON values; raise `ApiError` for a null."""
    changes: dict[str, Any] = {}
    for attribute in sorted(body.model_fields_set):
        value = getattr(body, attribute)
        if value is None:
            raise ApiError(422, "invalid_control", "must not be null", field=attribute)
        if attribute in ("evaluation", "expiration"):
            value = value.model_dump(exclude_none=True)
        changes[attribute] = value
    return changes


def query_public(
    record: QueryRecord,
    statuses: Sequence[StatusRecord],
    version: int,
    partitioning: dict[str, Any] | None = None,
) -> QueryPublic:
    """Return the public form of a query (`partitioning`: as a joiner published it, `partitioning_json`)."""
    definition = record.definition
    try:
        cql = record.cql if record.cql is not None else format_cql(definition)
    except (KeyError, TypeError, ValueError):
        cql = ""
    status = query_status(record.controls, statuses)
    reason = None if status in ("running", "paused") else status_reason(statuses)
    return QueryPublic(
        name=record.name,
        status=status,
        reason=StatusReasonPublic(error=reason.error, since=reason.since, partition=reason.partition)
        if reason is not None
        else None,
        source="cql" if record.cql is not None else "json",
        cql=cql,
        definition=definition,
        controls=ControlsPublic.of(record.controls),
        partitions=[
            PartitionStatusPublic(
                partition=s.partition,
                worker=s.worker,
                state=s.state,
                at=s.at,
                version=s.version,
                error=s.error,
                error_since=s.error_since,
            )
            for s in statuses
            if s.partition is not None  # the query's own status shows as its `reason`
        ],
        partitioning=partitioning,
        revision=record.revision,
        created_at=record.created_at,
        updated_at=record.updated_at,
        registry_version=version,
    )
