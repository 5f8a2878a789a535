"""The Faust app of a joiner worker: group membership, co-partitioned assignment and rebalancing only.

Faust's stream layer runs at about 9k records/s against the embedded broker (docs/joiner.md), so the
join does not read through it. Faust subscribes to one topic, the slots (one agent, whose body never
receives anything: `subscribe`), its `PartitionAssignor` deals the slots over the workers, and its
rebalance signals tell the worker which slots, so which (query, partition) operators, to run
(`worker.slots`). The consumer below never resumes fetching: the operators read their partitions
with their own aiokafka consumers from the offsets committed in Redis (docs/joiner.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import faust
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread
from faust.transport.drivers.aiokafka import Consumer as AIOKafkaConsumer

from streamjoin.joiner.group.watch import default_stall_bound_ms, watch_group
from streamjoin.kafka import KafkaClients, stop_without_leaving_group

__all__ = [
    "AssignmentOnlyConsumer",
    "StayingConsumerThread",
    "crashed_services",
    "make_app",
    "subscribe",
]


class StayingConsumerThread(AIOKafkaConsumerThread):
    """Faust's consumer thread, whose consumer stops without leaving the group (no LeaveGroup).

    The coordinator drops a stopped worker once its session times out, as it drops a crashed one;
    Kafka Streams' consumers stop the same way (`internal.leave.group.on.close=false`). Why: the
    embedded broker (tansu) never elects a leader again when the leader leaves while the group is
    forming, not even for members that join later (docs/reliability.md, "Fixed: a group wedged by
    its leader's clean stop"). The price: a stopped worker's partitions move one session timeout
    later than with a LeaveGroup.
    """

    async def on_thread_stop(self) -> None:
        """Stop the consumer as Faust does, minus the LeaveGroup."""
        stop_without_leaving_group(self._consumer)
        await super().on_thread_stop()


class AssignmentOnlyConsumer(AIOKafkaConsumer):
    """A Faust consumer that joins the group and takes assignments but never fetches records; it
    stops without leaving the group (`StayingConsumerThread`)."""

    def _new_consumer_thread(self) -> AIOKafkaConsumerThread:
        return StayingConsumerThread(self, loop=self.loop, beacon=self.beacon)

    def resume_partitions(self, tps: Iterable[Any]) -> None:
        """Keep every partition paused: the operators read them with their own consumers."""
        self.pause_partitions(tps)

    def verify_event_path(self, now: float, tp: Any) -> None:
        """Skip Faust's "stream has not started processing" check: no Faust stream reads these."""


async def _discard(stream: Any) -> None:
    """Agent body: the partitions are paused, so nothing arrives; anything that does is ignored."""
    async for _ in stream:
        pass


def make_app(
    app_id: str,
    kafka: KafkaClients,
    *,
    datadir: str,
    session_timeout_ms: int = 10_000,
    heartbeat_interval_ms: int = 2_000,
    group_stall_ms: int | None = None,
) -> faust.App:
    """Build the Faust app of a joiner group.

    Args:
        app_id: the consumer group (every worker of one deployment uses the same id).
        kafka: the brokers and the security options (TLS, SASL) of every client.
        datadir: Faust's data directory. It holds nothing here (tables live in memory, state in
            Redis), but Faust creates it, by default as `<app id>-data/` in the working directory.
        session_timeout_ms: how long a silent worker keeps its partitions before a rebalance.
        heartbeat_interval_ms: group heartbeat period.
        group_stall_ms: how long a rebalance may leave the worker without an assignment before it
            counts as stalled (`group.watch`); None: three session timeouts.
    """
    app = faust.App(
        app_id,
        broker=[f"kafka://{server}" for server in kafka.bootstrap.split(",")],
        broker_credentials=broker_credentials(kafka),
        web_enabled=False,
        store="memory://",
        datadir=datadir,
        autodiscover=False,
        topic_allow_declare=False,
        topic_disable_leader=True,
        broker_session_timeout=session_timeout_ms / 1000,
        broker_heartbeat_interval=heartbeat_interval_ms / 1000,
        broker_rebalance_timeout=max(60.0, session_timeout_ms / 1000),
        consumer_auto_offset_reset="latest",
    )
    # Per-app override of the transport's class attribute (`Transport.create_consumer` instantiates
    # `self.Consumer`), other apps untouched.
    vars(app.transport).update(Consumer=AssignmentOnlyConsumer)
    watch_group(app, stall_bound_ms=group_stall_ms or default_stall_bound_ms(session_timeout_ms))
    return app


def broker_credentials(kafka: KafkaClients) -> faust.types.auth.CredentialsT | None:
    """Return Faust's credentials for the aiokafka options of `kafka` (None for PLAINTEXT)."""
    options = kafka.aiokafka
    protocol = options.get("security_protocol", "PLAINTEXT")
    if protocol == "SSL":
        return faust.SSLCredentials(options["ssl_context"])
    if protocol.startswith("SASL"):
        return faust.SASLCredentials(
            username=options["sasl_plain_username"],
            password=options["sasl_plain_password"],
            mechanism=options["sasl_mechanism"],
            ssl_context=options.get("ssl_context"),
        )
    return None


def crashed_services(app: faust.App) -> list[str]:
    """Return "what: why" for each of the app's group-membership services that crashed.

    A crashed conductor or consumer never subscribes or heartbeats again, so the worker is not ready.
    """
    consumer = app.consumer
    services = [
        ("conductor", app.topics),
        ("consumer", consumer),
        ("consumer thread", getattr(consumer, "_thread", None)),
    ]
    return [
        f"{what}: {type(service.crash_reason).__name__}: {service.crash_reason}"
        for what, service in services
        if service is not None and service.crashed
    ]


def subscribe(app: faust.App, topic: str) -> None:
    """Subscribe the app, before it starts, to `topic`: one agent, started with the app."""
    channel = app.topic(topic, value_serializer="raw", key_serializer="raw")
    app.agent(channel, name=f"streamjoin.slots.{topic}")(_discard)
