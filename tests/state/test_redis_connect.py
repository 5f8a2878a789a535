"""Choosing a single Redis or a Redis Cluster from the URL or the setting, and the cluster's key slots."""

from __future__ import annotations

import inspect

import pytest
from pydantic import ValidationError
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from streamjoin.registry.keys import RegistryKeys
from streamjoin.settings import Settings
from streamjoin.state.redis.connect import connect, plain_url


def test_the_url_or_the_setting_selects_a_cluster() -> None:
    assert isinstance(connect("redis+cluster://127.0.0.1:7000"), RedisCluster)
    assert isinstance(connect("redis://127.0.0.1:7000/0", cluster=True), RedisCluster)
    assert isinstance(connect("redis://127.0.0.1:6379/0"), Redis)
    with pytest.raises(ValueError, match="unix"):
        connect("unix:///tmp/redis.sock", cluster=True)


def test_a_cluster_url_keeps_its_credentials_and_names_every_node() -> None:
    assert plain_url("redis+cluster://u:pw@a:1,b:2/0") == ("redis://u:pw@a:1", ["a:1", "b:2"])
    with pytest.raises(ValueError, match="no Redis node"):
        plain_url("redis+cluster://")


def test_settings_accept_cluster_urls_and_refuse_others() -> None:
    s = Settings(redis_url="rediss+cluster://h:1,h:2", redis_commit_replicas=1)
    assert s.redis_commit_replicas == 1 and not s.redis_cluster
    with pytest.raises(ValidationError):
        Settings(redis_url="http://h:1")
    with pytest.raises(ValidationError):
        Settings(redis_commit_replicas=-1)


def test_every_registry_key_shares_one_slot_on_a_cluster() -> None:
    keys = RegistryKeys("streamjoin:", slot_tag="registry")
    names: list[str] = []
    for name, member in inspect.getmembers(RegistryKeys):
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            names.append(getattr(keys, name))
        elif inspect.isfunction(member):
            arity = len(inspect.signature(member).parameters) - 1
            names.append(getattr(keys, name)(*(["flows", 3][:arity])))
    assert len(names) >= 12
    assert {key_slot(n.encode()) for n in names} == {key_slot(b"registry")}
    assert all(n.startswith("streamjoin:{registry}:") for n in names)
