"""The product's only gate to Kafka: every aiokafka and confluent-kafka call goes through here.

An import-linter contract (pyproject.toml) lets no other streamjoin module import `aiokafka` or
`confluent_kafka`; the rest of the code uses the typed functions and Protocols below. Readers are
aiokafka consumers (`new_consumer`, `reader`), writers confluent-kafka producers (`new_producer`),
topic administration and ACLs confluent-kafka's admin client (`Admin`, `AclGrant`), a keyed
(compacted) log `KeyedLog`.
"""

from streamjoin.kafka import no_autocreate as _no_autocreate  # noqa: F401  # before any client
from streamjoin.kafka.acls import AclGrant, streamjoin_acls
from streamjoin.kafka.admin import (
    Admin,
    BrokerUnreachableError,
    Created,
    CreateOutcome,
    NewTopicRequest,
    PartitionReplicas,
)
from streamjoin.kafka.connection import KafkaClients
from streamjoin.kafka.consumer import (
    DEFAULT_FETCH_WAIT_MS,
    Consumer,
    end_offsets,
    new_consumer,
    partition_counts,
    partitions_of,
    reader,
    start_consumer,
    start_offsets,
    stop_without_leaving_group,
)
from streamjoin.kafka.log import KeyedLog, LogAppendError, LogRecord
from streamjoin.kafka.producer import DeliveryCallback, Producer, new_producer, topic_partition_count
from streamjoin.kafka.structs import (
    ConsumedRecord,
    ConsumerError,
    DeliveredMessage,
    DeliveryError,
    OffsetAndTimestamp,
    ProducerError,
    TopicPartition,
)

__all__ = [
    "DEFAULT_FETCH_WAIT_MS",
    "AclGrant",
    "Admin",
    "BrokerUnreachableError",
    "ConsumedRecord",
    "Consumer",
    "ConsumerError",
    "CreateOutcome",
    "Created",
    "DeliveredMessage",
    "DeliveryCallback",
    "DeliveryError",
    "KafkaClients",
    "KeyedLog",
    "LogAppendError",
    "LogRecord",
    "NewTopicRequest",
    "OffsetAndTimestamp",
    "PartitionReplicas",
    "Producer",
    "ProducerError",
    "TopicPartition",
    "end_offsets",
    "new_consumer",
    "partitions_of",
    "new_producer",
    "partition_counts",
    "reader",
    "start_consumer",
    "start_offsets",
    "stop_without_leaving_group",
    "streamjoin_acls",
    "topic_partition_count",
]
