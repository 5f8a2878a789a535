"""The registration checks of `POST /v1/streams` and `POST /v1/queries`, applied to restored entities.

A restore from the registry's log (docs/registry.md, "Authentication") takes only entities the
control plane would register now: `RegistrationCheck` runs each restored stream and query through
the same request schemas (`StreamCreate`, `QueryCreate`), the same stream checks (`check_stream`),
the same compile step (`compile_query`) and the same per-query limits (`check_limits`) as a
registration, and turns a refusal into the `ValueError` the registry's restore expects. The number
of queries is not checked: it limits new registrations, and a restore only brings back what was
registered.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError

from streamjoin.api.errors import ApiError, field_path
from streamjoin.api.schemas import QueryCreate, StreamCreate
from streamjoin.api.services.compile import compile_query
from streamjoin.api.services.limits import RegistrationLimits, check_limits
from streamjoin.api.services.streams import check_stream
from streamjoin.query import QueryError
from streamjoin.registry import QueryRecord, StreamRecord

__all__ = ["RegistrationCheck"]


class RegistrationCheck:
    """`streamjoin.registry.EntityCheck` with the control plane's own registration checks."""

    def __init__(self, limits: RegistrationLimits) -> None:
        """Check queries against `limits` (the settings' `RegistrationLimits.of(settings)`)."""
        self._limits = limits

    def stream(self, stream: StreamRecord) -> None:
        """Raise `ValueError` if `POST /v1/streams` would refuse `stream`."""
        body = {
            "name": stream.name,
            "topic": stream.topic,
            "timestamp": stream.timestamp,
            "key": stream.key,
            "schema": dict(stream.schema) if stream.schema is not None else None,
            "description": stream.description,
            "expected_rate": stream.expected_rate,
            "record_bytes": stream.record_bytes,
            "format": stream.format,
        }
        try:
            check_stream(StreamCreate.model_validate(body))
        except (ValidationError, ApiError) as exc:
            raise ValueError(_refusal(exc)) from None

    def query(self, query: QueryRecord, streams: Mapping[str, StreamRecord]) -> None:
        """Raise `ValueError` if `POST /v1/queries` would refuse `query` over the registered `streams`."""
        try:
            body = QueryCreate.model_validate(query.definition)
            compiled = compile_query(body.query_json(), None, streams)
            check_limits(compiled.query, streams, [query.name], self._limits)
            query.controls.apply(compiled.query)
        except (ValidationError, ApiError, QueryError) as exc:
            raise ValueError(_refusal(exc)) from None


def _refusal(exc: ValidationError | ApiError | QueryError) -> str:
    """Return what a registration's 4xx would have said."""
    if isinstance(exc, ValidationError):
        return "; ".join(f"{field_path(e['loc'])}: {e['msg']}" for e in exc.errors())
    if isinstance(exc, ApiError):
        return f"{exc.field}: {exc.detail}" if exc.field else exc.detail
    return str(exc)
