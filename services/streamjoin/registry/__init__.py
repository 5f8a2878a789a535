"""The registry in Redis, with its durable log on Kafka: streams, queries and controls (control plane)
and runtime state (joiners)."""

from streamjoin.registry.admission import Admission, AdmissionError, PendingBacklogError, QueryCapError
from streamjoin.registry.durable import DEFAULT_REGISTRY_TOPIC, KafkaRegistryLog, MemoryRegistryLog
from streamjoin.registry.errors import (
    AlreadyExistsError,
    ConcurrentChangeError,
    InUseError,
    NotFoundError,
    RegistryError,
    RegistryUnavailableError,
)
from streamjoin.registry.histogram import DEFAULT_LATENCY_BOUNDS, LatencyHistogram, parse_histogram
from streamjoin.registry.keys import DEFAULT_PREFIX, RegistryKeys
from streamjoin.registry.log import REFUSAL_REASONS, LogEntry, RefusalReason, RefusedEntry, RegistryLog
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
from streamjoin.registry.restore import EntityCheck, Restored
from streamjoin.registry.runtime import OPERATOR_FIELD
from streamjoin.registry.signing import LogSigner
from streamjoin.registry.stats import OperatorStats, PartitionStats, WindowStats
from streamjoin.registry.store import RegistryStore

__all__ = [
    "CONTROL_ATTRIBUTES",
    "DEFAULT_LATENCY_BOUNDS",
    "DEFAULT_PREFIX",
    "DEFAULT_REGISTRY_TOPIC",
    "OPERATOR_FIELD",
    "REFUSAL_REASONS",
    "Admission",
    "AdmissionError",
    "AlreadyExistsError",
    "ConcurrentChangeError",
    "EntityCheck",
    "InUseError",
    "KafkaRegistryLog",
    "LatencyHistogram",
    "LogEntry",
    "LogSigner",
    "MemoryRegistryLog",
    "NotFoundError",
    "OperatorStats",
    "PartitionState",
    "PendingBacklogError",
    "QUERY_STATUSES",
    "PartitionStats",
    "PlanRecord",
    "QueryCapError",
    "QueryControls",
    "QueryRecord",
    "QueryStatus",
    "RefusalReason",
    "RefusedEntry",
    "RegistryError",
    "RegistryKeys",
    "RegistryLog",
    "RegistrySnapshot",
    "RegistryStore",
    "RegistryUnavailableError",
    "Restored",
    "StatusRecord",
    "StreamRecord",
    "WindowStats",
    "WorkerRecord",
    "parse_histogram",
    "query_status",
]
