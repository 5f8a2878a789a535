"""The registry in Redis: streams, queries and controls (control plane) and runtime state (joiners)."""

from streamjoin.registry.errors import (
    AlreadyExistsError,
    ConcurrentChangeError,
    InUseError,
    NotFoundError,
    RegistryError,
)
from streamjoin.registry.histogram import DEFAULT_LATENCY_BOUNDS, LatencyHistogram, parse_histogram
from streamjoin.registry.keys import DEFAULT_PREFIX, RegistryKeys
from streamjoin.registry.query import CONTROL_ATTRIBUTES, QueryControls, QueryRecord
from streamjoin.registry.records import (
    QUERY_STATUSES,
    PartitionState,
    PlanRecord,
    QueryStatus,
    RegistrySnapshot,
    StatusRecord,
    StreamRecord,
    WorkerRecord,
    query_status,
)
from streamjoin.registry.runtime import OPERATOR_FIELD
from streamjoin.registry.stats import OperatorStats, PartitionStats, WindowStats
from streamjoin.registry.store import RegistryStore

__all__ = [
    "CONTROL_ATTRIBUTES",
    "DEFAULT_LATENCY_BOUNDS",
    "DEFAULT_PREFIX",
    "OPERATOR_FIELD",
    "AlreadyExistsError",
    "ConcurrentChangeError",
    "InUseError",
    "LatencyHistogram",
    "NotFoundError",
    "OperatorStats",
    "PartitionState",
    "QUERY_STATUSES",
    "PartitionStats",
    "PlanRecord",
    "QueryControls",
    "QueryRecord",
    "QueryStatus",
    "RegistryError",
    "RegistryKeys",
    "RegistrySnapshot",
    "RegistryStore",
    "StatusRecord",
    "StreamRecord",
    "WindowStats",
    "WorkerRecord",
    "parse_histogram",
    "query_status",
]
