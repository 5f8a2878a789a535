"""The fallback broker keeps working: where Java is missing the stack runs Tansu, and a record
round-trips through it as through Apache Kafka."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamjoin.dev.checks import broker_round_trip
from streamjoin.dev.stack import BROKER_ENV, EmbeddedStack, choose_broker
from streamjoin.topics import create_topics, load_catalog

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_without_java_the_stack_chooses_tansu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(BROKER_ENV, raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    assert choose_broker() == "tansu"
    monkeypatch.setenv(BROKER_ENV, "kafka")
    assert choose_broker() == "kafka"  # asked for explicitly: the start then says what is missing


def test_an_unknown_broker_choice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BROKER_ENV, "redpanda")
    with pytest.raises(ValueError, match="kafka, tansu or auto"):
        choose_broker()


def test_a_record_round_trips_through_tansu(tmp_path: Path) -> None:
    with EmbeddedStack(workdir=tmp_path, broker="tansu") as stack:
        assert stack.broker_kind == "tansu"
        assert all(r.ok for r in create_topics(stack.bootstrap, load_catalog()))
        trip = broker_round_trip(stack.bootstrap, "streamjoin.health", timeout_ms=15_000)
        again = broker_round_trip(stack.bootstrap, "streamjoin.health", timeout_ms=15_000)
        assert (trip.topic, trip.partition) == ("streamjoin.health", 0)
        assert again.offset > trip.offset
