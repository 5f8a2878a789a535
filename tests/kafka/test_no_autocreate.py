"""streamjoin's aiokafka clients never ask a broker to create the topics they name."""

from __future__ import annotations

import aiokafka.client
from aiokafka.protocol.metadata import MetadataRequest_v5

import streamjoin.kafka  # noqa: F401  # installs the request class
from streamjoin.kafka.no_autocreate import NoAutoCreateMetadataRequest


def test_metadata_requests_do_not_allow_auto_creation() -> None:
    assert aiokafka.client.MetadataRequest is NoAutoCreateMetadataRequest
    built = aiokafka.client.MetadataRequest(["t"]).build(MetadataRequest_v5)
    assert built.topics == ["t"] and built.allow_auto_topic_creation is False
    assert NoAutoCreateMetadataRequest(None, True).build(MetadataRequest_v5).allow_auto_topic_creation is True
