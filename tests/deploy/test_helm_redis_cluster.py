"""The chart's Redis Cluster: in the release (StatefulSet + create Job) or an external redis+cluster:// URL.

The render checks run offline (Helm's engine, Kubernetes schemas). The scripts the chart runs are
then run for real: six `redis-server` nodes started with the StatefulSet's own command, each in a
network namespace of its own (a "pod", all on port 6379), and the create Job's script forms the
cluster from them; the product's client then reaches it through the URL the chart gives it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from streamjoin.dev.netns import VirtualNetwork, netns_unavailable
from streamjoin.dev.process import ManagedProcess
from streamjoin.dev.resp import RespConnection
from streamjoin.state.redis.connect import connect

from .chart import KUBERNETES_VERSIONS, MISSING_DEPENDENCIES, env_of, lint, render, validate

IN_RELEASE = {"redisCluster": {"enabled": True}}
NAME = "sj-streamjoin-redis-cluster"
PASSWORD = "s3cretPassw0rd"


def _product_env(values: dict[str, Any]) -> dict[str, Any]:
    manifests = render(values)
    api = manifests.get("Deployment", "sj-streamjoin-api")["spec"]["template"]["spec"]["containers"][0]
    return env_of(api)


def _script(container: dict[str, Any]) -> str:
    command = container["command"]
    assert command[:2] == ["sh", "-c"], command
    return str(command[2])


@pytest.mark.parametrize("kube_version", [f"v{v}.0" for v in KUBERNETES_VERSIONS])
def test_the_in_release_cluster_lints_clean(kube_version: str) -> None:
    problems = [
        m for m in lint(IN_RELEASE, kube_version=kube_version)
        if m["severity"] >= 2 and MISSING_DEPENDENCIES not in m["error"]
    ]  # fmt: skip
    assert not problems, problems


@pytest.mark.parametrize("kubernetes_version", KUBERNETES_VERSIONS)
def test_the_in_release_cluster_is_valid_kubernetes(kubernetes_version: str) -> None:
    for obj in render(IN_RELEASE).objects:
        if not obj["apiVersion"].startswith("monitoring.coreos.com/"):
            validate(obj, kubernetes_version)


def test_the_in_release_cluster_is_a_statefulset_and_a_create_job() -> None:
    manifests = render({"redisCluster": {"enabled": True, "primaries": 4, "replicasPerPrimary": 1}})
    sts = manifests.get("StatefulSet", NAME)
    assert sts["spec"]["replicas"] == 8 and sts["spec"]["serviceName"] == f"{NAME}-headless"
    node = sts["spec"]["template"]["spec"]["containers"][0]
    server = _script(node)
    for flag in ("--cluster-enabled yes", "--appendonly yes", "--appendfsync always", '--save ""'):
        assert flag in server, flag
    assert "$REDIS_PASSWORD" not in server.split("exec", 1)[1]  # in a file, not on the command line (ps)
    assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    assert node["readinessProbe"] and node["livenessProbe"] and node["resources"]["limits"]
    assert node["securityContext"]["allowPrivilegeEscalation"] is False
    headless = manifests.get("Service", f"{NAME}-headless")
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"] is True
    job = manifests.get("Job", f"{NAME}-create-1")
    assert "helm.sh/hook" not in job["metadata"]["annotations"]  # `helm install --wait` needs it formed
    create = job["spec"]["template"]["spec"]["containers"][0]
    assert "redis-cli --cluster create" in _script(create)
    hosts = env_of(create)["REDIS_NODES"].split()
    assert hosts == [f"{NAME}-{i}.{NAME}-headless.streams.svc.cluster.local" for i in range(8)]
    assert manifests.get("PodDisruptionBudget", NAME)["spec"]["maxUnavailable"] == 1


def test_the_product_reaches_the_in_release_cluster() -> None:
    env = _product_env(IN_RELEASE)
    hosts = ",".join(f"{NAME}-{i}.{NAME}-headless.streams.svc.cluster.local:6379" for i in range(6))
    assert env["STREAMJOIN_REDIS_URL"] == f"redis+cluster://:$(STREAMJOIN_REDIS_PASSWORD)@{hosts}"
    assert env["STREAMJOIN_REDIS_PASSWORD"] == {"secretKeyRef": {"name": NAME, "key": "redis-password"}}
    assert env["STREAMJOIN_REDIS_COMMIT_REPLICAS"] == "1"
    secret = render(IN_RELEASE).get("Secret", NAME)
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    mine = _product_env(
        {"redisCluster": {"enabled": True, "existingSecret": "rc", "existingSecretPasswordKey": "pw"}}
    )
    assert mine["STREAMJOIN_REDIS_PASSWORD"] == {"secretKeyRef": {"name": "rc", "key": "pw"}}
    assert not [s for s in render({**IN_RELEASE, "redisCluster": {"enabled": True, "existingSecret": "rc"}})
                .of_kind("Secret") if s["metadata"]["name"] == NAME]  # fmt: skip


@pytest.mark.parametrize(
    ("values", "url"),
    [
        ({"redis": {"url": "redis+cluster://r-0:6379,r-1:6379"}}, "redis+cluster://:$(STREAMJOIN_REDIS_PASSWORD)@r-0:6379,r-1:6379"),
        ({"redis": {"url": "redis+cluster://r:6379", "tls": {"enabled": True}}}, "rediss+cluster://:$(STREAMJOIN_REDIS_PASSWORD)@r:6379"),
        ({"redis": {"url": "rediss+cluster://r:6379"}}, "rediss+cluster://:$(STREAMJOIN_REDIS_PASSWORD)@r:6379"),
    ],
)  # fmt: skip
def test_an_external_cluster_by_url(values: dict[str, Any], url: str) -> None:
    env = _product_env(values)
    assert env["STREAMJOIN_REDIS_URL"] == url
    assert not render(values).of_kind("StatefulSet")


def test_bad_cluster_values_are_refused() -> None:
    with pytest.raises(helm.HelmRenderError, match="exclusive"):
        render({"redisCluster": {"enabled": True}, "redisInCluster": {"enabled": True}})
    with pytest.raises(helm.HelmRenderError, match="plain TCP"):
        render({"redisCluster": {"enabled": True}, "redis": {"tls": {"enabled": True}}})
    with pytest.raises(helm.HelmValuesError, match="/redisCluster/primaries"):
        render({"redisCluster": {"enabled": True, "primaries": 2}})
    with pytest.raises(helm.HelmValuesError, match="/redis/url"):
        render({"redis": {"url": "redis+cluster://:pw@r:6379"}})


@pytest.fixture
def pods() -> Iterator[VirtualNetwork]:
    """Six network namespaces, one per Redis node; removed afterwards."""
    reason = netns_unavailable()
    if reason is not None:
        pytest.skip(f"network namespaces are needed to run six nodes on port 6379: {reason}")
    with VirtualNetwork([f"redis-{i}" for i in range(6)]) as network:
        network.start()
        yield network


def _pong(address: str) -> bool:
    with RespConnection(address, 6379, timeout_ms=500) as conn:
        conn.call("AUTH", PASSWORD)
        return conn.call("PING") == b"PONG"


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_the_chart_scripts_form_a_working_cluster(pods: VirtualNetwork, tmp_path: Path) -> None:
    manifests = render(IN_RELEASE)
    node = manifests.get("StatefulSet", NAME)["spec"]["template"]["spec"]["containers"][0]
    create = manifests.get("Job", f"{NAME}-create-1")["spec"]["template"]["spec"]["containers"][0]
    node_env = {k: v for k, v in env_of(node).items() if isinstance(v, str) and "$(" not in v}
    processes = []
    try:
        for i, host in enumerate(pods.hosts.values()):
            data, conf = tmp_path / f"data-{i}", tmp_path / f"conf-{i}"
            data.mkdir()
            conf.mkdir()
            env = {**os.environ, **node_env, "REDIS_PASSWORD": PASSWORD, "REDIS_DATA_DIR": str(data),
                   "REDIS_CONF_DIR": str(conf), "REDIS_ANNOUNCE_HOSTNAME": host.address}  # fmt: skip
            process = ManagedProcess(host.name, [*host.launcher, "sh", "-c", _script(node)],
                                     log_path=tmp_path / f"{host.name}.log", env=env)  # fmt: skip
            process.start()
            processes.append(process)
        for process, host in zip(processes, pods.hosts.values(), strict=True):
            process.wait_ready(lambda address=host.address: _pong(address), timeout_ms=30_000)
        job_env = {
            **os.environ,
            "REDIS_NODES": " ".join(h.address for h in pods.hosts.values()),
            "REDIS_REPLICAS_PER_PRIMARY": env_of(create)["REDIS_REPLICAS_PER_PRIMARY"],
            "REDISCLI_AUTH": PASSWORD,
        }
        first = subprocess.run(["sh", "-c", _script(create)], env=job_env, capture_output=True, text=True,
                               timeout=120, check=False)  # fmt: skip
        assert first.returncode == 0, first.stdout + first.stderr
        assert "cluster_state:ok" in first.stdout
        again = subprocess.run(["sh", "-c", _script(create)], env=job_env, capture_output=True, text=True,
                               timeout=60, check=False)  # fmt: skip
        assert again.returncode == 0 and "the cluster exists (6 nodes known)" in again.stdout, again.stdout
        # The product's URL, as the chart writes it, with the pods' names resolved to their addresses.
        url = _product_env(IN_RELEASE)["STREAMJOIN_REDIS_URL"].replace(
            "$(STREAMJOIN_REDIS_PASSWORD)", PASSWORD
        )
        for i, host in enumerate(pods.hosts.values()):
            url = url.replace(f"{NAME}-{i}.{NAME}-headless.streams.svc.cluster.local", host.address)
        replicated, primaries = asyncio.run(_use(url))
        assert replicated == 1 and primaries == 3
    finally:
        for process in processes:
            process.stop(timeout_ms=5_000)


async def _use(url: str) -> tuple[int, int]:
    """Write keys on every shard through the product's client and WAIT for a replica on one."""
    client = connect(url)
    try:
        for i in range(30):
            await client.set(f"k{{{i}}}", i)
        values = [int(await client.get(f"k{{{i}}}")) for i in range(30)]
        assert values == list(range(30))
        # A replica just joined still runs its first full sync: give it up to 30 s to acknowledge.
        replicated, deadline = 0, time.monotonic() + 30
        while replicated < 1 and time.monotonic() < deadline:
            await client.set("k{0}", 0)
            replicated = int(
                await client.execute_command("WAIT", 1, 1000, target_nodes=client.get_node_from_key("k{0}"))
            )
        primaries = len(client.get_primaries())
    finally:
        await client.aclose()
    return replicated, primaries
