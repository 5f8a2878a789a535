"""The Faust app of a joiner worker: group membership, co-partitioned assignment and rebalancing only.

Faust's stream layer runs at about 9k records/s against the embedded broker (architecture.md), so the
join does not read through it. Faust subscribes to every input topic (one agent per topic, whose body
never receives anything), its `PartitionAssignor` assigns partition p of every co-partitioned topic
to the same worker, and its rebalance signals tell the worker which (query, partition) operators to
run. The consumer below never resumes fetching: the operators read their partitions with their own
aiokafka consumers from the offsets committed in Redis (docs/joiner.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import faust
from faust.transport.conductor import Conductor
from faust.transport.drivers.aiokafka import Consumer as AIOKafkaConsumer

__all__ = ["AssignmentOnlyConsumer", "FastResubscribeConductor", "add_input_topics", "make_app"]


class AssignmentOnlyConsumer(AIOKafkaConsumer):
    """A Faust consumer that joins the group and takes assignments but never fetches records."""

    def resume_partitions(self, tps: Iterable[Any]) -> None:
        """Keep every partition paused: the operators read them with their own consumers."""
        self.pause_partitions(tps)

    def verify_event_path(self, now: float, tp: Any) -> None:
        """Skip Faust's "stream has not started processing" check: no Faust stream reads these."""


class FastResubscribeConductor(Conductor):
    """Resubscribe one second after a topic is added (Faust waits 45 s by default)."""

    _resubscribe_sleep_lock_seconds: float = 1.0


async def _discard(stream: Any) -> None:
    """Agent body: the partitions are paused, so nothing arrives; anything that does is ignored."""
    async for _ in stream:
        pass


def make_app(
    app_id: str,
    bootstrap: str,
    *,
    session_timeout_ms: int = 10_000,
    heartbeat_interval_ms: int = 2_000,
) -> faust.App:
    """Build the Faust app of a joiner group.

    Args:
        app_id: the consumer group (every worker of one deployment uses the same id).
        bootstrap: the broker's `host:port[,host:port]`.
        session_timeout_ms: how long a silent worker keeps its partitions before a rebalance.
        heartbeat_interval_ms: group heartbeat period.
    """
    app = faust.App(
        app_id,
        broker=[f"kafka://{server}" for server in bootstrap.split(",")],
        web_enabled=False,
        store="memory://",
        autodiscover=False,
        topic_allow_declare=False,
        topic_disable_leader=True,
        broker_session_timeout=session_timeout_ms / 1000,
        broker_heartbeat_interval=heartbeat_interval_ms / 1000,
        broker_rebalance_timeout=max(60.0, session_timeout_ms / 1000),
        consumer_auto_offset_reset="latest",
    )
    # Per-app overrides of the transport's class attributes (`Transport.create_consumer` and
    # `create_conductor` instantiate `self.Consumer` / `self.Conductor`), other apps untouched.
    vars(app.transport).update(Consumer=AssignmentOnlyConsumer, Conductor=FastResubscribeConductor)
    return app


def add_input_topics(app: faust.App, topics: Iterable[str], known: set[str]) -> list[Any]:
    """Subscribe to `topics` not in `known` (updated): one agent per topic; return the new agents.

    Agents created before the app starts are started by it; the caller starts the others.
    """
    agents = []
    for name in sorted(set(topics) - known):
        known.add(name)
        topic = app.topic(name, value_serializer="raw", key_serializer="raw")
        agents.append(app.agent(topic, name=f"streamjoin.input.{name}")(_discard))
    return agents
