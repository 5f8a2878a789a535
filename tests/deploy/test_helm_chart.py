"""The Helm chart: lint, render with Helm's engine, validate against Kubernetes, wire the services.

No cluster here: `helm lint` and the render (`helm install --dry-run=client`) run in Helm's Go
library (helm-python-sdk), and every rendered object is validated against the Kubernetes OpenAPI
schemas (kubernetes-validate, strict) of the oldest supported and a current Kubernetes version.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from streamjoin.settings import load_settings

from .alert_rules import RULES_FILE
from .chart import (
    CHART_DIR,
    IN_CLUSTER,
    KUBERNETES_VERSIONS,
    MISSING_DEPENDENCIES,
    PRODUCTION,
    Rendered,
    env_of,
    lint,
    load_values_file,
    render,
    validate,
)
from .commands import check_cli
from .dashboards import DASHBOARD_DIR

# Every optional part switched on, with inline secrets (the paths production does not take).
EVERYTHING = {
    "kafka": {
        "tls": {"enabled": True, "existingSecret": "kafka-tls", "certKey": "tls.crt", "keyKey": "tls.key"},
        "sasl": {"enabled": True, "mechanism": "PLAIN", "username": "sj", "password": "secret"},
    },
    "redis": {"password": "secret", "username": "sj", "tls": {"enabled": True, "existingSecret": "redis-ca"}},
    "auth": {"token": "a-token"},
    "api": {"service": {"type": "LoadBalancer"}},
    "joiner": {"autoscaling": {"enabled": True, "consumerLag": {"enabled": True}}},
    "archiver": {"archiveUrl": "s3://bucket/prefix", "s3CredentialsSecret": "s3"},
    "topics": {"catalog": {"topics": [{"name": "in.a", "role": "input", "partitions": 3}]}},
    "metrics": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
        "alerts": {"prometheusRule": True, "labels": {"release": "prom"}, "expectedWorkers": 4},
    },
    "image": {"digest": "sha256:" + "a" * 64},
    "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/sj"}},
}
VALUE_SETS = {"default": {}, "production": PRODUCTION, "everything": EVERYTHING, "in-cluster": IN_CLUSTER}


@pytest.fixture(scope="module", params=sorted(VALUE_SETS))
def rendered(request: pytest.FixtureRequest) -> tuple[str, Rendered]:
    return request.param, render(VALUE_SETS[request.param])


def problems(messages: list[dict[str, Any]]) -> list[str]:
    """Lint messages that are warnings or errors, except the unvendored optional dependencies."""
    return [
        f"{m['path']}: {m['error']}"
        for m in messages
        if m["severity"] >= 2 and MISSING_DEPENDENCIES not in m["error"]
    ]


@pytest.mark.parametrize("values", ["default", "production"])
@pytest.mark.parametrize("kube_version", [f"v{v}.0" for v in KUBERNETES_VERSIONS])
def test_chart_lints_clean(values: str, kube_version: str) -> None:
    messages = lint(VALUE_SETS[values], kube_version=kube_version)
    assert not problems(messages), problems(messages)


def test_lint_reports_real_errors() -> None:
    """The lint is real: a template error and a schema violation both come back as errors."""
    messages = lint({"joiner": {"replicas": "many"}})
    assert any(m["severity"] == 3 for m in messages), messages


def test_lint_needs_no_dependency_download() -> None:
    """The in-cluster Kafka and Redis charts are optional: lint only warns that they are not vendored."""
    messages = lint()
    assert next(m for m in messages if MISSING_DEPENDENCIES in m["error"])["severity"] == 2


@pytest.mark.parametrize("kubernetes_version", KUBERNETES_VERSIONS)
def test_rendered_manifests_are_valid_kubernetes(
    rendered: tuple[str, Rendered], kubernetes_version: str
) -> None:
    name, manifests = rendered
    errors = []
    for obj in manifests.objects:
        if obj["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # CRDs: checked by test_service_monitors_select_real_ports and the alert tests
        try:
            validate(obj, kubernetes_version)
        except Exception as exc:
            errors.append(f"{obj['kind']}/{obj['metadata']['name']}: {exc}")
    assert not errors, f"{name} values, Kubernetes {kubernetes_version}:\n" + "\n".join(errors)


def test_validation_catches_a_bad_manifest() -> None:
    """The validation is real: a misspelt field of a Deployment fails it."""
    deployment = render().get("Deployment", "sj-streamjoin-api")
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(Exception, match="imagePullPolicyy"):
        validate(deployment, KUBERNETES_VERSIONS[-1])


def test_every_workload_has_probes_resources_and_security(rendered: tuple[str, Rendered]) -> None:
    _, manifests = rendered
    for obj, container in manifests.containers():
        where = f"{obj['kind']}/{obj['metadata']['name']}/{container['name']}"
        assert container["resources"]["requests"] and container["resources"]["limits"], where
        assert container["securityContext"]["allowPrivilegeEscalation"] is False, where
        if obj["kind"] == "Deployment":
            assert "readinessProbe" in container and "livenessProbe" in container, where


def test_readiness_probes_hit_real_endpoints() -> None:
    """The control plane serves the probe paths; the joiner's probes use its readiness server's paths."""
    from streamjoin.api import create_app, load_api_settings

    routes = set(create_app(load_api_settings()).openapi()["paths"])
    manifests = render()
    api = manifests.get("Deployment", "sj-streamjoin-api")["spec"]["template"]["spec"]["containers"][0]
    for probe in ("readinessProbe", "livenessProbe"):
        assert api[probe]["httpGet"]["path"] in routes, (probe, sorted(routes))
    joiner = manifests.get("Deployment", "sj-streamjoin-joiner")["spec"]["template"]["spec"]["containers"][0]
    assert joiner["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert joiner["livenessProbe"]["httpGet"]["path"] == "/livez"
    port = joiner["args"][joiner["args"].index("--ready-port") + 1]
    assert [p["containerPort"] for p in joiner["ports"]] == [int(port)]
    assert joiner["args"][joiner["args"].index("--ready-host") + 1] == "0.0.0.0"


def test_the_workers_outlast_a_broker_failover() -> None:
    """On a replicated cluster the workers' records wait longer than a failover (docs/deploy.md)."""
    joiner = render().get("Deployment", "sj-streamjoin-joiner")["spec"]["template"]["spec"]["containers"][0]
    assert int(joiner["args"][joiner["args"].index("--session-timeout-ms") + 1]) == 30_000
    joiner = render({"joiner": {"sessionTimeoutMs": 45000}}).get("Deployment", "sj-streamjoin-joiner")
    args = joiner["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--session-timeout-ms") + 1] == "45000"


def test_the_archiver_serves_metrics_to_the_cluster() -> None:
    """Prometheus in another pod scrapes the archiver: /metrics on every interface, probed over HTTP."""
    archiver = render().get("Deployment", "sj-streamjoin-archiver")["spec"]["template"]["spec"]["containers"][
        0
    ]
    args = archiver["args"]
    assert args[args.index("--metrics-host") + 1] == "0.0.0.0"
    port = int(args[args.index("--metrics-port") + 1])
    assert [(p["name"], p["containerPort"]) for p in archiver["ports"]] == [("metrics", port)]
    for probe in ("readinessProbe", "livenessProbe"):
        assert archiver[probe]["httpGet"] == {"path": "/metrics", "port": "metrics"}, probe


def test_container_commands_are_real_streamjoin_commands(rendered: tuple[str, Rendered]) -> None:
    name, manifests = rendered
    for _obj, container in manifests.containers():
        argv = [*container.get("command", []), *container.get("args", [])]
        if argv[:1] == ["/bin/sh"]:  # the `helm test` pod's script: run for real by the live test
            continue
        result = check_cli(argv)
        assert result.returncode == 0, f"{name}: {argv} is not accepted by the CLI:\n{result.stderr}"


def test_configuration_reaches_every_service_through_streamjoin_variables() -> None:
    manifests = render(PRODUCTION)
    config = manifests.get("ConfigMap", "sj-streamjoin-config")["data"]
    assert config["STREAMJOIN_PRODUCTION"] == "true"
    assert config["STREAMJOIN_KAFKA_BOOTSTRAP"] == PRODUCTION["kafka"]["bootstrap"]
    assert config["STREAMJOIN_KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert config["STREAMJOIN_KAFKA_TLS_CA_FILE"] == "/etc/streamjoin/kafka-tls/ca.crt"
    for obj, container in manifests.containers():
        if obj["kind"] == "Job":
            continue
        env = env_of(container)
        names = [e["name"] for e in container["env"]]
        assert env["STREAMJOIN_REDIS_URL"] == "rediss://:$(STREAMJOIN_REDIS_PASSWORD)@redis.data.svc:6380/0"
        # $(VAR) expands only variables defined earlier in the list.
        assert names.index("STREAMJOIN_REDIS_PASSWORD") < names.index("STREAMJOIN_REDIS_URL")
        assert env["STREAMJOIN_REDIS_PASSWORD"]["secretKeyRef"]["name"] == "streamjoin-redis"
        assert env["STREAMJOIN_KAFKA_SASL_PASSWORD"]["secretKeyRef"]["name"] == "streamjoin-kafka"
    api = manifests.get("Deployment", "sj-streamjoin-api")["spec"]["template"]["spec"]["containers"][0]
    assert env_of(api)["STREAMJOIN_API_TOKEN"]["secretKeyRef"] == {
        "name": "streamjoin-api-token",
        "key": "api-token",
    }
    assert env_of(api)["STREAMJOIN_REGISTRY_KEY"]["secretKeyRef"] == {
        "name": "streamjoin-registry-key",
        "key": "registry-key",
    }
    assert not manifests.of_kind("Secret"), "production takes every secret from existing Secrets"


def test_a_generated_api_token_when_none_is_given() -> None:
    secret = render().get("Secret", "sj-streamjoin-api-token")
    assert len(secret["data"]["api-token"]) > 40
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_a_generated_registry_key_only_the_control_plane_reads() -> None:
    manifests = render()
    secret = manifests.get("Secret", "sj-streamjoin-registry-key")
    key = base64.b64decode(secret["data"]["registry-key"]).decode()
    assert len(key) == 64 and secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    load_settings(registry_key=key)  # a key the settings accept
    readers = {
        obj["metadata"]["name"]
        for obj, container in manifests.containers()
        if "STREAMJOIN_REGISTRY_KEY" in env_of(container)
    }
    assert readers == {"sj-streamjoin-api"}
    api = manifests.get("Deployment", "sj-streamjoin-api")["spec"]["template"]["spec"]["containers"][0]
    ref = env_of(api)["STREAMJOIN_REGISTRY_KEY"]["secretKeyRef"]
    assert ref == {"name": "sj-streamjoin-registry-key", "key": "registry-key"}


def test_topic_job_runs_before_the_services_with_its_own_settings() -> None:
    manifests = render(PRODUCTION)
    job = manifests.get("Job", "sj-streamjoin-topics")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["streamjoin", "topics", "create"]
    env = env_of(container)
    assert env["STREAMJOIN_KAFKA_BOOTSTRAP"] == PRODUCTION["kafka"]["bootstrap"]  # not from the ConfigMap
    assert env["STREAMJOIN_TOPICS_FILE"] == "/etc/streamjoin/topics/topics.json"
    catalog = manifests.get("ConfigMap", "sj-streamjoin-topics")
    assert catalog["metadata"]["annotations"]["helm.sh/hook-weight"] == "-10"
    assert json.loads(catalog["data"]["topics.json"]) == PRODUCTION["topics"]["catalog"]
    in_cluster = render(IN_CLUSTER).get("Job", "sj-streamjoin-topics")
    assert in_cluster["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"


def test_the_joiners_and_the_topic_job_use_one_slot_count() -> None:
    """The slots topic is created with as many partitions as the workers have slots (docs/joiner.md)."""
    for values, slots in (({}, "64"), ({"joiner": {"slots": 12}}, "12")):
        manifests = render(values)
        joiner, job = (
            manifests.get(kind, name)["spec"]["template"]["spec"]["containers"][0]
            for kind, name in (("Deployment", "sj-streamjoin-joiner"), ("Job", "sj-streamjoin-topics"))
        )
        assert env_of(joiner)["STREAMJOIN_JOINER_SLOTS"] == env_of(job)["STREAMJOIN_JOINER_SLOTS"] == slots
    with pytest.raises(Exception, match="slots"):
        render({"joiner": {"slots": 0}})


def test_joiners_autoscale_on_cpu_and_consumer_lag() -> None:
    manifests = render(PRODUCTION)
    assert "replicas" not in manifests.get("Deployment", "sj-streamjoin-joiner")["spec"]
    hpa = manifests.get("HorizontalPodAutoscaler", "sj-streamjoin-joiner")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 12)
    kinds = {m["type"]: m for m in hpa["spec"]["metrics"]}
    assert kinds["Resource"]["resource"]["target"]["averageUtilization"] == 70
    assert kinds["External"]["external"]["metric"]["name"] == "streamjoin_consumer_lag_records"
    assert manifests.get("PodDisruptionBudget", "sj-streamjoin-joiner")["spec"]["maxUnavailable"] == 1
    assert not render().of_kind("HorizontalPodAutoscaler")


def test_the_lag_metric_of_the_hpa_is_exported(exported_metrics: dict[str, str]) -> None:
    assert (
        load_values_file("values.yaml")["joiner"]["autoscaling"]["consumerLag"]["metricName"]
        in exported_metrics
    )


def test_service_monitors_select_real_ports() -> None:
    manifests = render(PRODUCTION)
    monitors = manifests.of_kind("ServiceMonitor")
    assert {m["metadata"]["name"] for m in monitors} == {"sj-streamjoin-api", "sj-streamjoin-archiver"}
    services = manifests.of_kind("Service")
    for monitor in monitors:
        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        selector = monitor["spec"]["selector"]["matchLabels"]
        (service,) = [s for s in services if selector.items() <= s["metadata"]["labels"].items()]
        ports = {p["name"] for p in service["spec"]["ports"]}
        for endpoint in monitor["spec"]["endpoints"]:
            assert endpoint["port"] in ports and endpoint["path"] == "/metrics"
    # the control plane is scraped on its metrics port, where /metrics needs no token (production)
    (api_monitor,) = [m for m in monitors if m["metadata"]["name"] == "sj-streamjoin-api"]
    assert [e["port"] for e in api_monitor["spec"]["endpoints"]] == ["metrics"]
    api = manifests.get("Deployment", "sj-streamjoin-api")["spec"]["template"]["spec"]["containers"][0]
    (metrics,) = [p for p in api["ports"] if p["name"] == "metrics"]
    assert env_of(api)["STREAMJOIN_METRICS_PORT"] == str(metrics["containerPort"])
    assert not render().of_kind("ServiceMonitor")


def test_chart_ships_the_deploy_dashboards_for_the_grafana_sidecar() -> None:
    configmaps = [
        c for c in render().of_kind("ConfigMap") if c["metadata"]["labels"].get("grafana_dashboard") == "1"
    ]
    shipped = {key: json.loads(value) for c in configmaps for key, value in c["data"].items()}
    on_disk = {p.name: json.loads(p.read_text()) for p in DASHBOARD_DIR.glob("*.json")}
    assert shipped == on_disk
    assert (CHART_DIR / "dashboards").resolve() == DASHBOARD_DIR.resolve()


def test_a_packaged_chart_carries_the_dashboards(tmp_path: Path) -> None:
    """Helm follows the dashboards/ link when it saves the chart, so the package works on its own."""
    with helm.Chart.load(CHART_DIR) as chart:
        archive = Path(chart.save(tmp_path))
    manifests = render(chart=archive)
    assert (
        len([c for c in manifests.of_kind("ConfigMap") if "grafana_dashboard" in c["metadata"]["labels"]])
        == 3
    )
    assert manifests.get("ConfigMap", "sj-streamjoin-alerts")["data"][
        RULES_FILE.name
    ] == RULES_FILE.read_text().rstrip("\n")


def test_helm_test_hook_runs_the_test_script() -> None:
    pod = render().get("Pod", "sj-streamjoin-test-query")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    container = pod["spec"]["containers"][0]
    assert container["command"][:2] == ["/bin/sh", "-c"]
    assert container["command"][2] == (CHART_DIR / "files" / "helm-test.sh").read_text()
    env = env_of(container)
    assert env["STREAMJOIN_API_URL"] == "http://sj-streamjoin-api:8080"
    assert env["STREAMJOIN_API_TOKEN"]["secretKeyRef"]["name"] == "sj-streamjoin-api-token"
