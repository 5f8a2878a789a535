"""Lint and render the Helm chart with Helm's own Go library, and validate the manifests.

`helm-python-sdk` binds Helm's Go SDK (v4) through a C ABI: `lint` is `helm lint`, and
`Chart.render` is the template engine `helm template` / `helm install --dry-run=client` use
(Sprig functions, `.Files`, `.Capabilities`, values.schema.json validation), offline. The rendered
manifests are validated against the Kubernetes OpenAPI schemas of `kubernetes-validate`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import yaml

from .dashboards import REPO_ROOT

__all__ = [
    "CHART_DIR",
    "IN_CLUSTER",
    "KUBERNETES_VERSIONS",
    "MISSING_DEPENDENCIES",
    "PRODUCTION",
    "RELEASE",
    "Rendered",
    "env_of",
    "lint",
    "load_values_file",
    "merge",
    "render",
    "validate",
]

CHART_DIR = REPO_ROOT / "helm" / "streamjoin"
RELEASE = "sj"
NAMESPACE = "streams"
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and a current one.
KUBERNETES_VERSIONS = ("1.27", "1.34")
# Lint's one expected warning: the optional in-cluster Kafka and Redis charts are not vendored.
MISSING_DEPENDENCIES = "chart directory is missing these dependencies"


def load_values_file(name: str) -> dict[str, Any]:
    """Return a values file of the chart directory."""
    values: dict[str, Any] = yaml.safe_load((CHART_DIR / name).read_text())
    return values


# The production example of docs/deploy.md, and the in-cluster Kafka and Redis switched on.
PRODUCTION = load_values_file("values-production.yaml")
IN_CLUSTER = {"kafkaInCluster": {"enabled": True}, "redisInCluster": {"enabled": True}}


def env_of(container: Mapping[str, Any]) -> dict[str, Any]:
    """Return a container's environment, name to value (or its `valueFrom`)."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return `base` deep-merged with `override` (Helm's precedence)."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def lint(values: Mapping[str, Any] | None = None, *, kube_version: str | None = None) -> list[dict[str, Any]]:
    """Run `helm lint` on the chart; return its messages (severity 1 info, 2 warning, 3 error)."""
    report = helm.lint(
        CHART_DIR, dict(values) if values else None, namespace=NAMESPACE, kube_version=kube_version
    )
    messages: list[dict[str, Any]] = list(report["messages"])
    messages.extend({"severity": 3, "path": "", "error": e} for e in report["errors"])
    return messages


class Rendered:
    """The manifests of one render: by template path, and as Kubernetes objects."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = dict(files)
        self.objects: list[dict[str, Any]] = []
        for path, text in sorted(self.files.items()):
            if not path.endswith((".yaml", ".yml")):
                continue
            for doc in yaml.safe_load_all(text):
                if doc:
                    doc.setdefault("metadata", {}).setdefault("annotations", {})
                    self.objects.append(doc)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """Return the objects of one kind."""
        return [o for o in self.objects if o["kind"] == kind]

    def get(self, kind: str, name: str) -> dict[str, Any]:
        """Return the object of this kind and name."""
        for obj in self.of_kind(kind):
            if obj["metadata"]["name"] == name:
                return obj
        raise KeyError(f"no {kind} {name} in {[(o['kind'], o['metadata']['name']) for o in self.objects]}")

    def containers(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Yield (object, container) for every container of every workload (and init containers)."""
        for obj in self.objects:
            spec = obj.get("spec", {})
            pod = spec if obj["kind"] == "Pod" else spec.get("template", {}).get("spec")
            if not pod:
                continue
            for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
                yield obj, container


def render(values: Mapping[str, Any] | None = None, *, chart: Path = CHART_DIR) -> Rendered:
    """Render the chart as `helm install --dry-run=client` would (release `sj` in `streams`)."""
    with helm.Chart.load(chart) as loaded:
        files = loaded.render(
            dict(values) if values else None, name=RELEASE, namespace=NAMESPACE, is_install=True
        )
    return Rendered(files)


def validate(obj: Mapping[str, Any], kubernetes_version: str) -> None:
    """Validate one object against the Kubernetes schema of that version (strict: no unknown fields)."""
    kubernetes_validate.validate(dict(obj), kubernetes_version, strict=True)
