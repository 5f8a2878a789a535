"""Apache Kafka's node set-up: its storage is formatted whatever the random cluster id looks like.

Starting, SIGKILLing and restarting nodes, alone and as a 3-node cluster, is proven under load by
the broker-crash scenarios of `tests/faults/test_scenarios.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamjoin.dev import kafka_broker
from streamjoin.dev.kafka_broker import KafkaBroker, kafka_available

_WHY_NO_KAFKA = kafka_available()


@pytest.mark.skipif(_WHY_NO_KAFKA is not None, reason=f"no Apache Kafka: {_WHY_NO_KAFKA}")
def test_a_cluster_id_starting_with_a_dash_is_formatted(tmp_path: Path) -> None:
    # One random id in 64 starts with "-", which the storage tool once read as an option (and failed).
    cluster_id = "-" + kafka_broker._new_cluster_id()[1:]
    broker = KafkaBroker()
    node = broker.prepare(tmp_path)
    broker.configure(node.voter, replication=1, cluster_id=cluster_id)
    meta = (tmp_path / "kafka-1" / "data" / "meta.properties").read_text()
    assert f"cluster.id={cluster_id}\n" in meta
