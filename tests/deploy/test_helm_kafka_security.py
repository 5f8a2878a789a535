"""The chart's Kafka security: SASL/SCRAM by default with a generated password, reaching every service.

Rendered offline with Helm's own engine (see `chart.py`); the settings every product container ends
up with are loaded by the product's own `Settings`, as the service would at start-up.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import helm_python as helm
import pytest

from streamjoin.settings import Settings

from .chart import IN_CLUSTER, PRODUCTION, RELEASE, Rendered, load_values_file, merge, render

PRODUCT_IMAGE = re.compile(r"(^|/)streamjoin/streamjoin[:@]")
GENERATED = f"{RELEASE}-streamjoin-kafka-sasl"
# Production values whose only change is Kafka's security (the token comes from its Secret).
PRODUCTION_BASE = {
    "production": True,
    "auth": {"existingSecret": "streamjoin-api-token"},
    "registryKey": {"existingSecret": "streamjoin-registry-key"},
}


def _product_envs(manifests: Rendered) -> dict[str, dict[str, Any]]:
    """Every product container's environment as its process sees it: the ConfigMap it loads
    (`envFrom`) overlaid with its own `env` (a Secret's value stays a `secretKeyRef`)."""
    configmaps = {c["metadata"]["name"]: c.get("data", {}) for c in manifests.of_kind("ConfigMap")}
    envs: dict[str, dict[str, Any]] = {}
    for obj, container in manifests.containers():
        if not PRODUCT_IMAGE.search(container["image"]):
            continue
        env: dict[str, Any] = {}
        for source in container.get("envFrom", []):
            env.update(configmaps[source["configMapRef"]["name"]])
        for item in container.get("env", []):
            env[item["name"]] = item.get("value", item.get("valueFrom", {}).get("secretKeyRef"))
        envs[f"{obj['kind']}/{obj['metadata']['name']}"] = env
    return envs


def _settings(env: dict[str, Any]) -> Settings:
    """Load the settings a container's environment gives (Secrets' values stood in for)."""
    values = {
        name.removeprefix("STREAMJOIN_").lower(): "from-a-secret".ljust(64, "-")
        if isinstance(value, dict)
        else value
        for name, value in env.items()
        if name.startswith("STREAMJOIN_") and name != "STREAMJOIN_REDIS_PASSWORD"
    }
    values["redis_url"] = "redis://redis:6379/0"  # the chart splices the password in at run time
    return Settings.model_validate(values)


def _password_secret(manifests: Rendered, name: str) -> str:
    return base64.b64decode(manifests.get("Secret", name)["data"]["password"]).decode()


def test_sasl_scram_is_on_by_default_in_every_service() -> None:
    values = load_values_file("values.yaml")["kafka"]["sasl"]
    assert (
        values["enabled"] and values["mechanism"].startswith("SCRAM-") and values["username"] == "streamjoin"
    )
    assert values["password"] == "" and values["existingSecret"] == "", "no default secret in values"
    envs = _product_envs(render())
    assert {
        "Deployment/sj-streamjoin-api",
        "Deployment/sj-streamjoin-joiner",
        "Job/sj-streamjoin-topics",
    } <= set(envs)
    assert "Deployment/sj-streamjoin-archiver" in envs and "Pod/sj-streamjoin-test-query" in envs
    for where, env in envs.items():
        assert env["STREAMJOIN_KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT", where
        assert env["STREAMJOIN_KAFKA_SASL_MECHANISM"] == "SCRAM-SHA-512", where
        assert env["STREAMJOIN_KAFKA_SASL_USERNAME"] == "streamjoin", where
        assert env["STREAMJOIN_KAFKA_SASL_PASSWORD"] == {"name": GENERATED, "key": "password"}, where
        settings = _settings(env)
        assert settings.kafka_sasl_password is not None, where


def test_the_password_is_generated_into_a_kept_secret_before_the_topic_job() -> None:
    first, second = render(), render()
    password = _password_secret(first, GENERATED)
    assert re.fullmatch(r"[A-Za-z0-9]{40}", password)
    assert password != _password_secret(second, GENERATED), "generated per install, not a constant"
    annotations = first.get("Secret", GENERATED)["metadata"]["annotations"]
    assert annotations["helm.sh/resource-policy"] == "keep"
    job = first.get("Job", "sj-streamjoin-topics")["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == job["helm.sh/hook"]
    assert int(annotations["helm.sh/hook-weight"]) < int(job["helm.sh/hook-weight"])
    without_job = render({"topics": {"create": False}}).get("Secret", GENERATED)["metadata"]["annotations"]
    assert "helm.sh/hook" not in without_job and without_job["helm.sh/resource-policy"] == "keep"


@pytest.mark.parametrize(
    ("values", "secret"),
    [
        ({"kafka": {"sasl": {"password": "inline"}}}, (GENERATED, "password")),
        ({"kafka": {"sasl": {"existingSecret": "mine", "existingSecretPasswordKey": "pw"}}}, ("mine", "pw")),
        (IN_CLUSTER, ("sj-kafka-user-passwords", "client-passwords")),  # the Bitnami chart's Secret
    ],
    ids=["inline", "existing", "in-cluster"],
)
def test_the_password_comes_from_the_configured_secret(
    values: dict[str, Any], secret: tuple[str, str]
) -> None:
    manifests = render(values)
    refs = {
        tuple(env["STREAMJOIN_KAFKA_SASL_PASSWORD"].values()) for env in _product_envs(manifests).values()
    }
    assert refs == {secret}
    chart_secrets = {s["metadata"]["name"] for s in manifests.of_kind("Secret")}
    assert (GENERATED in chart_secrets) == (secret[0] == GENERATED)
    if secret[0] == GENERATED:
        assert _password_secret(manifests, GENERATED) == "inline"


def test_the_in_cluster_kafka_authenticates_the_streamjoin_user() -> None:
    bitnami = merge(load_values_file("values.yaml"), IN_CLUSTER)["kafkaInCluster"]
    assert bitnami["listeners"]["client"]["protocol"] == "SASL_PLAINTEXT"
    assert bitnami["sasl"]["client"]["users"] == ["streamjoin"]
    config = render(IN_CLUSTER).get("ConfigMap", "sj-streamjoin-config")["data"]
    assert config["STREAMJOIN_KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT"
    assert config["STREAMJOIN_KAFKA_SASL_USERNAME"] == "streamjoin"
    with pytest.raises(helm.HelmRenderError, match="exactly one user"):
        render(merge(IN_CLUSTER, {"kafkaInCluster": {"sasl": {"client": {"users": ["a", "b"]}}}}))


def test_production_refuses_plaintext_kafka_unless_allowed() -> None:
    plaintext = merge(PRODUCTION_BASE, {"kafka": {"sasl": {"enabled": False}}})
    with pytest.raises(
        helm.HelmRenderError, match=r"production: true refuses a plaintext.*kafka\.allowPlaintext"
    ):
        render(plaintext)
    allowed = render(merge(plaintext, {"kafka": {"allowPlaintext": True}}))
    for where, env in _product_envs(allowed).items():
        assert env["STREAMJOIN_KAFKA_SECURITY_PROTOCOL"] == "PLAINTEXT", where
        assert _settings(env).kafka_allow_plaintext, where  # the product accepts it in production
    secured = _product_envs(render(PRODUCTION_BASE))
    assert all(_settings(env).production for env in secured.values())


def test_production_takes_no_inline_kafka_password() -> None:
    with pytest.raises(helm.HelmValuesError, match=r"at '/kafka/sasl/password': maxLength"):
        render(merge(PRODUCTION_BASE, {"kafka": {"sasl": {"password": "inline"}}}))
    assert PRODUCTION["kafka"]["sasl"]["existingSecret"]
