"""The routes' dependencies, as `Annotated` aliases: settings, the registry, the services."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from streamjoin.api.config import ApiSettings
from streamjoin.api.restore import RegistryGuard
from streamjoin.api.services import (
    ControlService,
    HealthService,
    PlanService,
    QueryService,
    ResultService,
    StreamService,
)
from streamjoin.api.services.limits import RegistrationLimits
from streamjoin.backfill.jobs import BackfillJobs
from streamjoin.registry import RegistryStore
from streamjoin.schema_registry import registry_at

__all__ = [
    "BackfillJobsDep",
    "ControlServiceDep",
    "GuardDep",
    "HealthServiceDep",
    "PlanServiceDep",
    "QueryServiceDep",
    "ResultServiceDep",
    "SettingsDep",
    "StoreDep",
    "StreamServiceDep",
]


def get_settings(request: Request) -> ApiSettings:
    """Return the settings the app was created with."""
    settings: ApiSettings = request.app.state.settings
    return settings


def get_store(request: Request) -> RegistryStore:
    """Return the registry store opened at start-up."""
    store: RegistryStore = request.app.state.store
    return store


SettingsDep = Annotated[ApiSettings, Depends(get_settings)]
StoreDep = Annotated[RegistryStore, Depends(get_store)]


def get_backfill_jobs(request: Request) -> BackfillJobs:
    """Return the back-fill job runner built at start-up."""
    jobs: BackfillJobs = request.app.state.backfill_jobs
    return jobs


BackfillJobsDep = Annotated[BackfillJobs, Depends(get_backfill_jobs)]


def get_stream_service(store: StoreDep) -> StreamService:
    """Return the stream service."""
    return StreamService(store)


def get_query_service(store: StoreDep, settings: SettingsDep) -> QueryService:
    """Return the query service, checking registrations against the settings' limits."""
    return QueryService(store, RegistrationLimits.of(settings), registry_at(settings.schema_registry_url))


def get_plan_service(store: StoreDep) -> PlanService:
    """Return the plan service."""
    return PlanService(store)


def get_control_service(
    store: StoreDep, queries: Annotated[QueryService, Depends(get_query_service)]
) -> ControlService:
    """Return the Control-Table service."""
    return ControlService(store, queries)


def get_kafka_options(request: Request) -> dict[str, Any]:
    """Return the Kafka clients' security options built at start-up (`client_security.aiokafka_options`)."""
    options: dict[str, Any] = request.app.state.kafka_options
    return options


KafkaOptionsDep = Annotated[dict[str, Any], Depends(get_kafka_options)]


def get_result_service(settings: SettingsDep, kafka_options: KafkaOptionsDep) -> ResultService:
    """Return the result-stream service."""
    return ResultService(
        settings.kafka_bootstrap,
        kafka_options=kafka_options,
        listed_ends_exact=settings.kafka_listed_ends_exact,
    )


def get_guard(request: Request) -> RegistryGuard:
    """Return the guard that restores the registry from its log (built at start-up)."""
    guard: RegistryGuard = request.app.state.registry_guard
    return guard


GuardDep = Annotated[RegistryGuard, Depends(get_guard)]


def get_health_service(
    store: StoreDep, settings: SettingsDep, kafka_options: KafkaOptionsDep, guard: GuardDep
) -> HealthService:
    """Return the readiness checks."""
    return HealthService(
        store,
        settings.kafka_bootstrap,
        settings.api_ready_timeout_ms,
        kafka_options=kafka_options,
        refused=guard.refused,
    )


StreamServiceDep = Annotated[StreamService, Depends(get_stream_service)]
QueryServiceDep = Annotated[QueryService, Depends(get_query_service)]
PlanServiceDep = Annotated[PlanService, Depends(get_plan_service)]
ControlServiceDep = Annotated[ControlService, Depends(get_control_service)]
ResultServiceDep = Annotated[ResultService, Depends(get_result_service)]
HealthServiceDep = Annotated[HealthService, Depends(get_health_service)]
