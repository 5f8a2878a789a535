"""No metadata request of streamjoin's aiokafka clients asks the broker to create a topic.

aiokafka sends every metadata request with `allow_auto_topic_creation=True` (Metadata v4 and
later), so a broker configured to auto-create topics (the embedded one is; Kafka's default is too)
creates any topic a consumer, a group subscription or a metadata refresh merely names: a missing
input topic was created with the broker's default partition count instead of being reported, and a
deleted internal topic came back as soon as a lagging worker asked for it. Importing this module
(`streamjoin.kafka` does) makes aiokafka's clients, Faust's included, ask without creating: a
missing topic is then reported missing, by the embedded broker and by Kafka whatever its
`auto.create.topics.enable`. Brokers older than Metadata v4 (Kafka 0.11) cannot be asked that way.

It also restores what aiokafka's bootstrap means to ask: `MetadataRequest([])`, every topic in
Metadata v0, which aiokafka sent before it negotiated versions per connection, but no topic at all
in v1 and later, which it sends now. A consumer then started knowing no topic, and
`partitions_for_topic` answered None for topics that exist (the control plane's results, the
registry's log and the archiver read them that way) until its first periodic refresh, minutes later.
"""

from __future__ import annotations

import aiokafka.client
from aiokafka.protocol.metadata import MetadataRequest

__all__ = ["NoAutoCreateMetadataRequest"]


class NoAutoCreateMetadataRequest(MetadataRequest):  # type: ignore[misc]
    """aiokafka's `MetadataRequest` with `allow_auto_topic_creation` False unless said otherwise."""

    def __init__(
        self, topics: list[str] | None = None, allow_auto_topic_creation: bool | None = None
    ) -> None:
        """Ask for `topics` (None, and the bootstrap's `[]`: every topic) without creating them."""
        every = topics is None or len(topics) == 0
        create = False if allow_auto_topic_creation is None else allow_auto_topic_creation
        super().__init__(None if every else topics, create)


# aiokafka's client builds its metadata requests from this module-level name (_metadata_update).
aiokafka.client.MetadataRequest = NoAutoCreateMetadataRequest
