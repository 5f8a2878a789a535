"""The steps `streamjoin dev up` runs once the stack is up, in order.

Each step does one thing to the running stack and returns a one-line outcome; it may add where
something runs to `DevContext.where` (shown in the summary table). `streamjoin.dev.up.default_steps()`
puts them in order with the demo's: start the joiner, start the control plane, register the demo
query, produce the demo workload, show the joined results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from streamjoin.dev.checks import broker_round_trip, redis_round_trip
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.topics import TopicCatalog, create_topics

__all__ = [
    "HEALTH_TOPIC",
    "BrokerRoundTripStep",
    "CreateTopicsStep",
    "DevContext",
    "DevStep",
    "RedisRoundTripStep",
    "StepFailedError",
]

HEALTH_TOPIC = "streamjoin.health"


class StepFailedError(RuntimeError):
    """A step could not do its job; the message says why."""


@dataclass
class DevContext:
    """What the steps share: the running stack, the topic catalog, and the summary they build."""

    stack: EmbeddedStack
    catalog: TopicCatalog
    where: list[tuple[str, str]] = field(default_factory=list)
    """(what, where) rows added to the summary table, e.g. ("Metrics", "http://127.0.0.1:9100")."""


class DevStep(Protocol):
    """One step of `streamjoin dev up`."""

    @property
    def title(self) -> str:
        """What the step does, in the imperative ("create the topics")."""
        ...

    def run(self, context: DevContext) -> str:
        """Do the step; return a one-line outcome. Raise `StepFailedError` when it fails."""
        ...


class CreateTopicsStep:
    """Create every declared topic (idempotent); fail on any topic not as declared."""

    title = "create the declared topics"

    def run(self, context: DevContext) -> str:
        results = create_topics(context.stack.bootstrap, context.catalog)
        bad = [r for r in results if not r.ok]
        if bad:
            raise StepFailedError("; ".join(f"{r.spec.name}: {r.outcome} {r.message}".strip() for r in bad))
        created = sum(r.outcome == "created" for r in results)
        return f"{len(results)} topics ({created} created, {len(results) - created} already there)"


class BrokerRoundTripStep:
    """Produce one record to the health topic and consume it back."""

    title = "round-trip a record through the broker"

    def run(self, context: DevContext) -> str:
        trip = broker_round_trip(context.stack.bootstrap, HEALTH_TOPIC)
        return f"{trip.topic}[{trip.partition}]@{trip.offset} in {trip.latency_ms} ms"


class RedisRoundTripStep:
    """Write a key to Redis, read it back and delete it."""

    title = "round-trip a value through Redis"

    def run(self, context: DevContext) -> str:
        trip = redis_round_trip(context.stack.redis_url)
        return f"SET, GET and DEL in {trip.latency_ms} ms"
