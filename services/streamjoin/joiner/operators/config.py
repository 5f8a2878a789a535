"""The settings of a worker's operators (`OperatorConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from streamjoin.engine.ingest import DEFAULT_MAX_FUTURE
from streamjoin.joiner.batch.builder import DEFAULT_MAX_RECORD_BYTES
from streamjoin.kafka import DEFAULT_FETCH_WAIT_MS

__all__ = ["OperatorConfig"]


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """Tuning of every operator of a worker."""

    max_batch: int = 5_000
    poll_ms: int = 20
    fetch_wait_ms: int = DEFAULT_FETCH_WAIT_MS
    idle_timeout_ms: int | None = None
    """None: the default of docs/queries.md, 10x the largest window read as ms (10 s for rows windows)."""
    max_inflight: int = 32
    backoff_initial_ms: int = 100
    backoff_max_ms: int = 5_000
    stop_timeout_ms: int = 5_000
    max_future: float | None = DEFAULT_MAX_FUTURE
    """How far ahead of the newest timestamp its input has shown a record may be (query's unit);
    None: no bound."""
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    """The largest result or dead letter published; larger ones become references (batch.py)."""
    schema_registry_url: str | None = None
    """The schema registry of Avro inputs and outputs (docs/formats.md); None: none configured."""
