"""The service layer: every route reaches Redis and Kafka only through these classes."""

from streamjoin.api.services.control import ControlService
from streamjoin.api.services.health import HealthService
from streamjoin.api.services.observe import Observation, QueryObservation, observe
from streamjoin.api.services.plans import PlanService
from streamjoin.api.services.queries import QueryService
from streamjoin.api.services.results import ResultEvent, ResultService
from streamjoin.api.services.streams import StreamService

__all__ = [
    "ControlService",
    "HealthService",
    "Observation",
    "PlanService",
    "QueryObservation",
    "QueryService",
    "ResultEvent",
    "ResultService",
    "StreamService",
    "observe",
]
