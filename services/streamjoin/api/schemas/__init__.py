"""Request and response bodies of the REST API, named by role (`QueryCreate`, `QueryPublic`, ...)."""

from streamjoin.api.schemas.common import ErrorPublic
from streamjoin.api.schemas.control import ControlTable, ControlUpdate, EntityKind
from streamjoin.api.schemas.health import Health, Readiness, ReadinessCheck
from streamjoin.api.schemas.plans import PlanPublic, ReplanPublic
from streamjoin.api.schemas.queries import (
    ControlsPublic,
    ExpirationSpec,
    InputSpec,
    ModeSpec,
    OutputSpec,
    PartitionStatusPublic,
    QueryCreate,
    QueryPublic,
    QueryUpdate,
    QueryValidation,
    StatusReasonPublic,
    WindowSpec,
)
from streamjoin.api.schemas.streams import StreamCreate, StreamPublic

__all__ = [
    "ControlTable",
    "ControlUpdate",
    "ControlsPublic",
    "EntityKind",
    "ErrorPublic",
    "Health",
    "InputSpec",
    "ExpirationSpec",
    "ModeSpec",
    "OutputSpec",
    "PartitionStatusPublic",
    "StatusReasonPublic",
    "PlanPublic",
    "QueryCreate",
    "QueryPublic",
    "QueryUpdate",
    "QueryValidation",
    "Readiness",
    "ReadinessCheck",
    "ReplanPublic",
    "StreamCreate",
    "StreamPublic",
    "WindowSpec",
]
