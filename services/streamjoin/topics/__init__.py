"""The topics streamjoin uses: the declaration (`catalog`) and its creation on a broker (`admin`)."""

from streamjoin.topics.admin import BrokerUnreachableError, TopicResult, broker_topics, create_topics
from streamjoin.topics.catalog import SLOTS_TOPIC, CatalogError, TopicCatalog, TopicSpec, load_catalog

__all__ = [
    "SLOTS_TOPIC",
    "BrokerUnreachableError",
    "CatalogError",
    "TopicCatalog",
    "TopicResult",
    "TopicSpec",
    "broker_topics",
    "create_topics",
    "load_catalog",
]
