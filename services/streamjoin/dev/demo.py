"""The demo of `streamjoin dev up`: start the product, register a 3-way join, feed it, show results.

The demo query joins orders, payments and shipments of one order id: a payment within 60 s of its
order that covers the order's total, and the latest shipment of that order. Records are produced
with the order id as key, so the three topics are co-partitioned and each joiner partition sees
every record of its orders; the streams declare `"key": "order_id"`, so the joiner reads them
directly instead of re-keying them (docs/partitioning.md).
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

import httpx

from streamjoin.dev.broker import TANSU_FETCH_WAIT_MS
from streamjoin.dev.services import EmbeddedApi, EmbeddedJoiner
from streamjoin.dev.steps import DevContext, StepFailedError
from streamjoin.kafka import KafkaClients, new_producer

__all__ = [
    "DEMO_QUERY",
    "DEMO_STREAMS",
    "ProduceDemoWorkloadStep",
    "RegisterDemoQueryStep",
    "ShowResultsStep",
    "StartControlPlaneStep",
    "StartJoinerStep",
]

DEMO_STREAMS: tuple[dict[str, Any], ...] = (  # keyed by order_id: the producer's record key
    {"name": "orders", "topic": "demo.orders", "timestamp": "ts", "key": "order_id"},
    {"name": "payments", "topic": "demo.payments", "timestamp": "ts", "key": "order_id"},
    {"name": "shipments", "topic": "demo.shipments", "timestamp": "ts", "key": "order_id"},
)

DEMO_QUERY: dict[str, Any] = {
    "name": "fulfilled",
    "inputs": [
        {"stream": "orders", "topic": "demo.orders", "timestamp": "ts", "window": {"range": 60_000}},
        {"stream": "payments", "topic": "demo.payments", "timestamp": "ts", "window": {"range": 60_000}},
        {
            "stream": "shipments",
            "topic": "demo.shipments",
            "timestamp": "ts",
            "window": {"rows": 1, "partition_by": "order_id"},
        },
    ],
    "where": [
        ["orders.order_id", "=", "payments.order_id"],
        ["payments.order_id", "=", "shipments.order_id"],
        ["payments.amount", ">=", "orders.total"],
    ],
    "output": {"topic": "demo.fulfilled"},
    "start": "earliest",
}


def _api(context: DevContext) -> EmbeddedApi:
    for service in context.stack.services:
        if isinstance(service, EmbeddedApi):
            return service
    raise StepFailedError("the control plane is not running")


def _client(api: EmbeddedApi) -> httpx.Client:
    return httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {api.token}"}, timeout=30)


class StartControlPlaneStep:
    """Start `streamjoin api` and wait until it is ready."""

    title = "start the control plane"

    def run(self, context: DevContext) -> str:
        api = EmbeddedApi(context.stack.settings().as_env())
        context.stack.add(api)
        return f"{api.url} (token printed below)"


class StartJoinerStep:
    """Start one `streamjoin joiner` worker and wait until it is ready."""

    title = "start a joiner worker"

    def run(self, context: DevContext) -> str:
        tansu = context.stack.broker_kind == "tansu"  # it sleeps a fetch's wait out
        joiner = EmbeddedJoiner(
            context.stack.settings().as_env(), fetch_wait_ms=TANSU_FETCH_WAIT_MS if tansu else None
        )
        context.stack.add(joiner)
        return f"worker {joiner.worker_id} ready"


class RegisterDemoQueryStep:
    """Register the demo streams and query over REST and wait until the query runs."""

    title = "register the demo query over REST"

    def run(self, context: DevContext) -> str:
        with _client(_api(context)) as client:
            for stream in DEMO_STREAMS:
                response = client.post("/v1/streams", json=stream)
                if response.status_code not in (201, 409):
                    raise StepFailedError(f"POST /v1/streams {stream['name']}: {response.text}")
            response = client.post("/v1/queries", json=DEMO_QUERY)
            if response.status_code not in (201, 409):
                raise StepFailedError(f"POST /v1/queries: {response.status_code} {response.text}")
            deadline = time.monotonic() + 60
            status = "?"
            while time.monotonic() < deadline:
                status = client.get(f"/v1/queries/{DEMO_QUERY['name']}").json().get("status", "?")
                if status == "running":
                    return f"query {DEMO_QUERY['name']!r} is running"
                time.sleep(0.25)
        raise StepFailedError(f"query {DEMO_QUERY['name']!r} did not start running (status {status})")


class ProduceDemoWorkloadStep:
    """Produce orders, payments and shipments, keyed by order id, over a minute of event time."""

    title = "produce the demo workload"

    def __init__(self, orders: int = 2000, seed: int = 7) -> None:
        self.orders = orders
        self.seed = seed

    def run(self, context: DevContext) -> str:
        rng = random.Random(self.seed)
        # Connect as every service of the stack does: its settings' security (TLS, SASL) included.
        kafka = KafkaClients.from_settings(context.stack.settings())
        producer = new_producer({"bootstrap.servers": kafka.bootstrap, **kafka.librdkafka, "linger.ms": 5})
        start = int(time.time() * 1000)
        sent = 0
        for i in range(self.orders):
            order_id = f"o-{i:05d}"
            ts = start + i * 30
            total = rng.randint(10, 500)
            records = [("demo.orders", {"order_id": order_id, "ts": ts, "total": total})]
            if rng.random() < 0.9:
                amount = total if rng.random() < 0.8 else total - rng.randint(1, 9)
                records.append(
                    (
                        "demo.payments",
                        {"order_id": order_id, "ts": ts + rng.randint(0, 20_000), "amount": amount},
                    )
                )
            if rng.random() < 0.85:
                records.append(
                    (
                        "demo.shipments",
                        {
                            "order_id": order_id,
                            "ts": ts + rng.randint(0, 30_000),
                            "carrier": rng.choice("ABC"),
                        },
                    )
                )
            for topic, record in records:
                producer.produce(topic, key=order_id.encode(), value=json.dumps(record).encode())
                sent += 1
            producer.poll(0)
        if producer.flush(30) != 0:
            raise StepFailedError("the broker did not acknowledge every demo record")
        return f"{sent} records for {self.orders} orders"


class ShowResultsStep:
    """Read the first joined results from the results endpoint and print them."""

    title = "read joined results"

    def __init__(self, show: int = 5, timeout_ms: int = 60_000) -> None:
        self.show = show
        self.timeout_ms = timeout_ms

    def run(self, context: DevContext) -> str:
        api = _api(context)
        params: dict[str, str | int] = {
            "format": "ndjson",
            "from": "earliest",
            "limit": self.show,
            "timeout_ms": self.timeout_ms,
        }
        with _client(api) as client:
            response = client.get(
                f"/v1/queries/{DEMO_QUERY['name']}/results",
                params=params,
                timeout=self.timeout_ms / 1000 + 30,
            )
        lines = [line for line in response.text.splitlines() if line.strip()]
        if not lines:
            raise StepFailedError(f"no joined result within {self.timeout_ms} ms ({response.status_code})")
        for line in lines:
            result = json.loads(line)
            tuples = result.get("tuples", {})
            order = tuples.get("orders", {})
            payment = tuples.get("payments", {})
            shipment = tuples.get("shipments", {})
            print(
                f"    {order.get('order_id')}: total {order.get('total')}, paid {payment.get('amount')}, "
                f"shipped by {shipment.get('carrier')} (ts {result.get('ts')})"
            )
        context.where.append(("Joined results", f"{api.url}/v1/queries/{DEMO_QUERY['name']}/results"))
        return f"{len(lines)} results shown (topic demo.fulfilled)"
