"""The Helm chart's values: schema and template errors, the production example, Redis's password.

Rendered offline with Helm's own engine (see `chart.py`); no cluster.
"""

from __future__ import annotations

import re
from typing import Any

import helm_python as helm
import pytest

from .chart import IN_CLUSTER, PRODUCTION, Rendered, env_of, lint, load_values_file, merge, render

BAD_VALUES = [
    ("negative replicas", {"joiner": {"replicas": -1}}, r"at '/joiner/replicas': minimum: got -1, want 0"),
    (
        "production without a token secret",
        {"production": True},
        r"at '/auth/existingSecret': minLength: got 0",
    ),
    (
        "production without a registry key secret",
        {"production": True, "auth": {"existingSecret": "t"}},
        r"at '/registryKey/existingSecret': minLength: got 0",
    ),
    (
        "production with an inline token",
        {"production": True, "auth": {"existingSecret": "t", "token": "x"}},
        r"at '/auth/token': maxLength",
    ),
    (
        "bootstrap without a port",
        {"kafka": {"bootstrap": "kafka"}},
        r"at '/kafka/bootstrap': 'kafka' does not match",
    ),
    ("redis URL with a password", {"redis": {"url": "redis://:pw@r:6379/0"}}, r"at '/redis/url'"),
    ("a misspelt key", {"joiner": {"replica": 3}}, r"additional properties 'replica' not allowed"),
    ("a moving digest", {"image": {"digest": "latest"}}, r"at '/image/digest'"),
    ("SASL without a user", {"kafka": {"sasl": {"username": ""}}}, r"at '/kafka/sasl/username': minLength"),
    ("unknown SASL mechanism", {"kafka": {"sasl": {"mechanism": "MD5"}}}, r"at '/kafka/sasl/mechanism'"),
    (
        "a topic without partitions",
        {"topics": {"catalog": {"topics": [{"name": "a", "role": "input"}]}}},
        "partitions",
    ),
    ("archive size", {"archiver": {"persistence": {"size": "lots"}}}, r"at '/archiver/persistence/size'"),
]


@pytest.mark.parametrize(("case", "values", "message"), BAD_VALUES, ids=[c[0] for c in BAD_VALUES])
def test_schema_rejects_bad_values_with_a_clear_message(
    case: str, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(helm.HelmValuesError) as caught:
        render(values)
    assert re.search(message, str(caught.value)), f"{case}: {caught.value}"
    assert any(re.search(message, m["error"]) for m in lint(values) if m["severity"] == 3)


def test_template_checks_what_the_schema_cannot() -> None:
    with pytest.raises(helm.HelmRenderError, match=r"minReplicas \(5\) is greater than .*maxReplicas \(2\)"):
        render({"joiner": {"autoscaling": {"enabled": True, "minReplicas": 5, "maxReplicas": 2}}})
    with pytest.raises(helm.HelmRenderError, match=r"kafka\.bootstrap is empty"):
        render({"kafka": {"bootstrap": ""}})
    with pytest.raises(helm.HelmRenderError, match=r"api\.metricsPort must differ from api\.port"):
        render({"api": {"port": 9464}})


def test_production_example_is_complete() -> None:
    """values-production.yaml sets every production concern docs/deploy.md lists."""
    values = merge(load_values_file("values.yaml"), PRODUCTION)
    assert values["production"] is True and values["auth"]["existingSecret"]
    assert values["registryKey"]["existingSecret"]
    assert values["kafka"]["tls"]["enabled"] and values["kafka"]["sasl"]["existingSecret"]
    assert values["redis"]["url"].startswith("rediss://") and values["redis"]["existingSecret"]
    assert values["joiner"]["autoscaling"]["enabled"] and values["metrics"]["serviceMonitor"]["enabled"]


def _redis_secret_refs(manifests: Rendered) -> set[tuple[str, str]]:
    """Return the (Secret, key) every product container reads Redis's password from."""
    refs = set()
    for obj, container in manifests.containers():
        env = env_of(container)
        if "STREAMJOIN_REDIS_URL" not in env:
            continue
        assert "$(STREAMJOIN_REDIS_PASSWORD)@" in env["STREAMJOIN_REDIS_URL"], (obj["metadata"]["name"], env)
        ref = env["STREAMJOIN_REDIS_PASSWORD"]["secretKeyRef"]
        refs.add((ref["name"], ref["key"]))
    return refs


@pytest.mark.parametrize(
    ("values", "secret"),
    [
        ({}, ("redis", "redis-password")),  # the default: a Bitnami release "redis" (auth on)
        ({"redis": {"password": "pw"}}, ("sj-streamjoin-redis", "redis-password")),
        ({"redis": {"existingSecret": "mine", "existingSecretPasswordKey": "pw"}}, ("mine", "pw")),
        (IN_CLUSTER, ("sj-redis", "redis-password")),  # the Bitnami chart's generated Secret
    ],
)
def test_redis_always_has_a_password(values: dict[str, Any], secret: tuple[str, str]) -> None:
    assert _redis_secret_refs(render(values)) == {secret}


def test_a_redis_without_a_password_is_refused() -> None:
    with pytest.raises(helm.HelmRenderError, match="Redis needs a password"):
        render({"redis": {"existingSecret": ""}})
    values = load_values_file("values.yaml")
    assert values["redisInCluster"]["auth"]["enabled"] is True
