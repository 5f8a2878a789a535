"""The chart's NetworkPolicies: each streamjoin pod admits only what it needs, and each policy selects
exactly the pods it is written for (rendered by Helm's engine, validated against Kubernetes)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from .chart import IN_CLUSTER, KUBERNETES_VERSIONS, PRODUCTION, Rendered, render, validate

PROMETHEUS = [
    {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
]


def _pods(manifests: Rendered) -> Iterator[tuple[str, dict[str, str], dict[str, Any]]]:
    """Yield (workload name, pod labels, pod spec) for every pod template and Pod the chart renders."""
    for obj in manifests.objects:
        if obj["kind"] == "Pod":
            yield obj["metadata"]["name"], obj["metadata"].get("labels", {}), obj["spec"]
        elif obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            template = obj["spec"]["template"]
            yield obj["metadata"]["name"], template["metadata"].get("labels", {}), template["spec"]


def _selected(manifests: Rendered, policy: Mapping[str, Any]) -> set[str]:
    """Return the workloads whose pods the policy's podSelector matches."""
    wanted = policy["spec"]["podSelector"]["matchLabels"].items()
    return {name for name, labels, _ in _pods(manifests) if wanted <= labels.items()}


def _policies(manifests: Rendered) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"].removeprefix("sj-streamjoin-"): p for p in manifests.of_kind("NetworkPolicy")
    }


def _egress_ports(policy: Mapping[str, Any]) -> set[int]:
    return {port["port"] for rule in policy["spec"]["egress"] for port in rule["ports"]}


@pytest.mark.parametrize(
    ("values", "selects"),
    [
        (
            {},
            {
                "api": {"sj-streamjoin-api"},
                "joiner": {"sj-streamjoin-joiner"},
                "archiver": {"sj-streamjoin-archiver"},
                "topics": {"sj-streamjoin-topics"},
                "test": {"sj-streamjoin-test-query"},
            },
        ),
        (
            {"redisCluster": {"enabled": True}, "archiver": {"enabled": False}, "tests": {"enabled": False}},
            {
                "api": {"sj-streamjoin-api"},
                "joiner": {"sj-streamjoin-joiner"},
                "topics": {"sj-streamjoin-topics"},
                "redis-cluster": {"sj-streamjoin-redis-cluster"},
                "redis-cluster-create": {"sj-streamjoin-redis-cluster-create-1"},
            },
        ),
    ],
    ids=["default", "redis-cluster"],
)
def test_every_pod_has_a_policy_that_selects_it_alone(
    values: dict[str, Any], selects: dict[str, set[str]]
) -> None:
    manifests = render(values)
    policies = _policies(manifests)
    assert {name: _selected(manifests, p) for name, p in policies.items()} == selects
    covered = set().union(*selects.values())
    assert {name for name, _, _ in _pods(manifests)} == covered  # no streamjoin pod is left open
    for policy in policies.values():
        assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
        for version in KUBERNETES_VERSIONS:
            validate(policy, version)


def test_the_api_port_is_open_and_the_metrics_port_only_to_prometheus() -> None:
    manifests = render()
    api = _policies(manifests)["api"]
    http, metrics = api["spec"]["ingress"]
    assert http == {"ports": [{"port": "http", "protocol": "TCP"}]}  # no `from`: any client
    assert metrics == {"ports": [{"port": "metrics", "protocol": "TCP"}], "from": PROMETHEUS}
    (container,) = manifests.get("Deployment", "sj-streamjoin-api")["spec"]["template"]["spec"]["containers"]
    assert {p["name"] for p in container["ports"]} == {"http", "metrics"}
    archiver = _policies(manifests)["archiver"]
    assert archiver["spec"]["ingress"] == [
        {"ports": [{"port": "metrics", "protocol": "TCP"}], "from": PROMETHEUS}
    ]


def test_joiners_only_reach_dns_kafka_and_redis() -> None:
    joiner = _policies(render())["joiner"]
    assert joiner["spec"]["ingress"] == []  # nothing in (the kubelet's probes are always admitted)
    assert all(rule.get("ports") for rule in joiner["spec"]["egress"])  # no rule opens every port
    assert _egress_ports(joiner) == {53, 9092, 6379}
    # the ports follow the configuration: PRODUCTION's brokers on 9093, its Redis (TLS) on 6380
    production = _policies(render(PRODUCTION))
    assert _egress_ports(production["joiner"]) == {53, 9093, 6380}
    assert 443 in _egress_ports(production["archiver"])  # its archive is on S3
    assert 443 not in _egress_ports(_policies(render())["archiver"])  # a volume: no HTTPS needed
    assert _egress_ports(_policies(render(IN_CLUSTER))["joiner"]) == {53, 9092, 6379}


def test_peers_and_extra_egress_come_from_values() -> None:
    kafka = [{"ipBlock": {"cidr": "10.1.0.0/16"}}]
    extra = [{"to": [{"ipBlock": {"cidr": "10.2.0.0/16"}}], "ports": [{"port": 8081, "protocol": "TCP"}]}]
    ingress = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}]
    values = {
        "networkPolicy": {
            "api": {"from": ingress},
            "kafka": {"to": kafka, "ports": [9092, 9094]},
            "extraEgress": extra,
        }
    }
    policies = _policies(render(values))
    api_in = policies["api"]["spec"]["ingress"][0]["from"]
    assert api_in[0] == ingress[0]
    assert api_in[1] == {
        "podSelector": {"matchLabels": policies["test"]["spec"]["podSelector"]["matchLabels"]}
    }
    kafka_rule = [r for r in policies["joiner"]["spec"]["egress"] if r.get("to") == kafka]
    assert [p["port"] for p in kafka_rule[0]["ports"]] == [9092, 9094]
    assert extra[0] in policies["joiner"]["spec"]["egress"]
    for policy in policies.values():
        for version in KUBERNETES_VERSIONS:
            validate(policy, version)


def test_the_policies_can_be_switched_off() -> None:
    assert render({"networkPolicy": {"enabled": False}}).of_kind("NetworkPolicy") == []
