"""Fixtures of the joiner tests: a fresh query (topics, registry prefix, consumer group) per test."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class QuerySetup:
    """Names unique to one test: topics per stream, output topic, registry prefix, group, query."""

    topics: dict[str, str]
    output: str
    prefix: str
    group: str
    name: str
    partitions: int


@pytest.fixture
def query_setup(make_topic: Callable[..., str]) -> Callable[[int], QuerySetup]:
    """Return a factory of `QuerySetup`s with `partitions` partitions per topic."""

    def make(partitions: int = 4) -> QuerySetup:
        u = uuid.uuid4().hex[:8]
        topics = {s: make_topic(f"in.{s}", partitions=partitions) for s in "abc"}
        output = make_topic("out", partitions=partitions)
        return QuerySetup(topics, output, f"t{u}:", f"joiner-{u}", f"q{u}", partitions)

    return make
