"""Registration limits: inputs per query, queries per deployment, and a state-size budget.

Checked when a query is registered or replaced, before anything is written; a query that would
pass a limit is refused with a 4xx that names the limit and its setting (the number of queries and
the pending backlog again in the registry's atomic write, `streamjoin.registry.Admission`, so
concurrent registrations cannot pass them either):

- more inputs than `STREAMJOIN_API_MAX_QUERY_INPUTS` (default 16): 422, field `inputs`;
- more queries than `STREAMJOIN_API_MAX_QUERIES` (default 100, for the whole deployment): 409;
- more registered queries that no worker has laid out yet than `STREAMJOIN_API_MAX_PENDING_QUERIES`
  (default 20): 429 "too many pending registrations" with `Retry-After`
  (`STREAMJOIN_API_PENDING_RETRY_AFTER_S`, default 5 s), so a flood is admitted at the rate the
  workers create topics and start operators rather than queued without bound;
- an estimated state larger than `STREAMJOIN_API_STATE_BUDGET_BYTES` (default 1 GiB): 422, field
  `inputs`, with the estimate per input.

The state estimate is what the windows hold at the expected rates: for each input, the records its
window holds (a time window: the stream's `expected_rate` in records per second times the window's
span, timestamps taken as milliseconds; a row window: its `rows`; an input bounded only by `within`
pairs: the query's largest bound) times the stream's `record_bytes`. Streams registered without
them count with `STREAMJOIN_API_DEFAULT_STREAM_RATE` (100 records/s) and
`STREAMJOIN_API_DEFAULT_RECORD_BYTES` (1,024 bytes).

>>> from streamjoin.query import parse_query
>>> q = parse_query({"name": "q", "inputs": [
...     {"stream": "a", "topic": "a", "timestamp": "ts", "window": {"range": 60_000}},
...     {"stream": "b", "topic": "b", "timestamp": "ts", "window": {"rows": 10}}],
...     "where": [["a.k", "=", "b.k"]], "output": {"topic": "o"}})
>>> [(e.stream, e.records, e.bytes) for e in state_estimate(q, {}, RegistrationLimits())]
[('a', 6000.0, 6144000.0), ('b', 10.0, 10240.0)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamjoin.api.errors import ApiError
from streamjoin.query import QueryDef, RangeWindow, RowsWindow
from streamjoin.registry import Admission, AdmissionError, PendingBacklogError, StreamRecord

if TYPE_CHECKING:
    from streamjoin.api.config import ApiSettings

__all__ = ["InputEstimate", "RegistrationLimits", "admission_refusal", "check_limits", "state_estimate"]


@dataclass(frozen=True, slots=True)
class RegistrationLimits:
    """The limits a registration is checked against (from `ApiSettings`)."""

    max_query_inputs: int = 16
    max_queries: int = 100
    state_budget_bytes: int = 1 << 30
    default_stream_rate: float = 100.0
    default_record_bytes: int = 1024
    max_pending_queries: int = 20
    pending_retry_after_s: int = 5

    @property
    def admission(self) -> Admission:
        """Return the limits the registry checks atomically with a registration's write."""
        return Admission(max_queries=self.max_queries, max_pending=self.max_pending_queries)

    @classmethod
    def of(cls, settings: ApiSettings) -> RegistrationLimits:
        """Return the limits `settings` configure (`STREAMJOIN_API_MAX_QUERY_INPUTS`, ...)."""
        return cls(
            max_query_inputs=settings.api_max_query_inputs,
            max_queries=settings.api_max_queries,
            state_budget_bytes=settings.api_state_budget_bytes,
            default_stream_rate=settings.api_default_stream_rate,
            default_record_bytes=settings.api_default_record_bytes,
            max_pending_queries=settings.api_max_pending_queries,
            pending_retry_after_s=settings.api_pending_retry_after_s,
        )


@dataclass(frozen=True, slots=True)
class InputEstimate:
    """The state one input's window is expected to hold."""

    stream: str
    records: float
    bytes: float


def state_estimate(
    query: QueryDef, streams: Mapping[str, StreamRecord], limits: RegistrationLimits
) -> list[InputEstimate]:
    """Return the expected state of each input of `query` (see the module docstring)."""
    widest = max([query.largest_window, *(pair.bound for pair in query.within)])
    out = []
    for item in query.inputs:
        stream = streams.get(item.stream)
        rate = _or(stream.expected_rate if stream else None, limits.default_stream_rate)
        size = _or(stream.record_bytes if stream else None, float(limits.default_record_bytes))
        window = item.window
        if isinstance(window, RowsWindow):
            records = float(window.rows)
        else:
            span_ms = window.range if isinstance(window, RangeWindow) else widest
            records = rate * span_ms / 1000
        out.append(InputEstimate(item.stream, records, records * size))
    return out


def check_limits(
    query: QueryDef,
    streams: Mapping[str, StreamRecord],
    queries: Sequence[str],
    limits: RegistrationLimits,
) -> None:
    """Raise `ApiError` if registering `query` (beside the registered `queries`) passes a limit."""
    if len(query.inputs) > limits.max_query_inputs:
        raise ApiError(
            422,
            "limit_exceeded",
            f"the query has {len(query.inputs)} inputs; the limit is {limits.max_query_inputs} "
            "(max_query_inputs, STREAMJOIN_API_MAX_QUERY_INPUTS)",
            field="inputs",
        )
    if query.name not in queries and len(queries) >= limits.max_queries:
        raise _cap(len(queries), limits.max_queries)
    estimate = state_estimate(query, streams, limits)
    total = sum(e.bytes for e in estimate)
    if total > limits.state_budget_bytes:
        parts = ", ".join(f"{e.stream}: {e.records:.6g} records, {e.bytes:.6g} B" for e in estimate)
        raise ApiError(
            422,
            "limit_exceeded",
            f"the estimated state is {total:.6g} bytes ({parts}); the budget is "
            f"{limits.state_budget_bytes} bytes (state_budget_bytes, STREAMJOIN_API_STATE_BUDGET_BYTES)",
            field="inputs",
        )


def admission_refusal(exc: AdmissionError, limits: RegistrationLimits) -> ApiError:
    """Return the answer to a registration the registry refused under `limits.admission`."""
    if isinstance(exc, PendingBacklogError):
        return ApiError(
            429,
            "too_many_pending",
            f"too many pending registrations: {exc.count} registered queries are not laid out by a "
            f"worker yet; the limit is {exc.limit} "
            "(max_pending_queries, STREAMJOIN_API_MAX_PENDING_QUERIES). "
            f"Retry after {limits.pending_retry_after_s} s.",
            retry_after_s=limits.pending_retry_after_s,
        )
    return _cap(exc.count, exc.limit)


def _cap(registered: int, limit: int) -> ApiError:
    return ApiError(
        409,
        "limit_exceeded",
        f"{registered} queries are registered; the limit is {limit} "
        "(max_queries, STREAMJOIN_API_MAX_QUERIES)",
    )


def _or(value: float | None, default: float) -> float:
    return default if value is None else float(value)
