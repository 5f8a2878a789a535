"""The topics streamjoin uses: the declaration (`catalog`) and its creation on a broker (`admin`)."""

from streamjoin.topics.admin import BrokerUnreachableError, TopicResult, broker_topics, create_topics
from streamjoin.topics.catalog import CatalogError, TopicCatalog, TopicSpec, load_catalog

__all__ = [
    "BrokerUnreachableError",
    "CatalogError",
    "TopicCatalog",
    "TopicResult",
    "TopicSpec",
    "broker_topics",
    "create_topics",
    "load_catalog",
]
