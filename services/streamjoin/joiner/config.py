"""The settings of one joiner worker beyond the shared configuration contract (settings.py)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from streamjoin.joiner.operators.config import OperatorConfig

__all__ = ["WorkerConfig", "default_worker_id"]


def default_worker_id() -> str:
    """Return `host-pid`, unique among the workers of one machine."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """How a worker identifies itself, where it reports readiness, and how its operators run."""

    worker_id: str = field(default_factory=default_worker_id)
    group: str = "streamjoin-joiner"
    """The Faust app id (consumer group): every worker of one deployment shares it."""
    prefix: str = "streamjoin:"
    """Redis key prefix of the registry and the state."""
    ready_host: str = "127.0.0.1"
    ready_port: int | None = None
    """Port of `GET /readyz`; None: no HTTP endpoint (the heartbeat key still reports)."""
    session_timeout_ms: int = 10_000
    group_stall_ms: int | None = None
    """Exit (to rejoin) when a rebalance leaves the worker without assignment this long (`group.watch`;
    None: three session timeouts)."""
    heartbeat_ms: int = 1_000
    stats_interval_ms: int = 1_000
    replan_interval_ms: int = 5_000
    shutdown_timeout_ms: int = 8_000
    registry_lag_ms: int = 30_000
    """Not ready once the registry's latest version has gone unapplied this long (`registry_follow.lag`)."""
    layout_concurrency: int = 4
    """Queries laid out at once (topics created, `layouts`)."""
    slots: int = 64
    """S, the partitions of the slots topic the group assigns (`worker.slots`): every worker of one
    group must use the same, and at most S workers run operators."""
    operator: OperatorConfig = field(default_factory=OperatorConfig)
