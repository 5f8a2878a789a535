"""docker-compose.yml: valid against the Compose Specification, pinned images, real commands, start order.

There is no Docker engine here, so the file is checked for everything that does not need one: the
Compose Specification's JSON schema (the copy `check-jsonschema` ships), image pins, that every
`streamjoin` command is one the CLI accepts (the same argument vectors the live dashboard test runs),
health checks, and a start order that works from nothing.
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from importlib import metadata
from typing import Any

import jsonschema
import pytest
import yaml

from .alert_rules import RULES_FILE
from .commands import PRODUCT_IMAGE, check_cli, compose_argv
from .dashboards import REPO_ROOT

# An exact version tag (1.2.3, v2.53.4, 7.4.2-bookworm), optionally with a digest, or a digest alone.
PINNED = re.compile(r"^[a-z0-9./_-]+(:v?\d+\.\d+\.\d+[A-Za-z0-9._-]*)?(@sha256:[a-f0-9]{64})?$")

# The sub-commands a deployment must run, each exactly once among the compose services.
REQUIRED_COMMANDS = {("topics", "create"), ("api",), ("joiner",), ("archiver",)}


def compose_schema() -> dict[str, Any]:
    """Return the Compose Specification's JSON schema (draft-07) as vendored by check-jsonschema."""
    dist = metadata.distribution("check-jsonschema")
    for file in dist.files or ():
        if file.name == "compose-spec.json":
            schema: dict[str, Any] = json.loads(file.read_text())
            return schema
    raise AssertionError("check-jsonschema ships no compose-spec.json")


def is_pinned(image: str) -> bool:
    """Return whether `image` names an exact version (or a digest), not a moving tag.

    >>> [is_pinned(i) for i in ("redis:7.4.2-bookworm", "redis:7", "redis:latest", "redis")]
    [True, False, False, False]
    """
    return bool(PINNED.match(image)) and (":" in image.rsplit("/", 1)[-1] or "@sha256:" in image)


def test_compose_file_is_valid_against_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = compose_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    errors = sorted(
        jsonschema.Draft7Validator(schema).iter_errors(compose), key=lambda e: list(e.absolute_path)
    )
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def test_the_schema_rejects_a_broken_compose_file(compose: dict[str, Any]) -> None:
    """The validation is real: a misspelt key and a wrong type are both caught."""
    validator = jsonschema.Draft7Validator(compose_schema())
    broken = json.loads(json.dumps(compose))
    broken["services"]["api"]["healthcheck"]["intervall"] = "5s"
    broken["services"]["joiner"]["depends_on"] = "redis"
    messages = [e.message for e in validator.iter_errors(broken)]
    assert any("intervall" in m for m in messages), messages
    assert any("'redis' is not valid" in m for m in messages), messages


def test_every_image_is_pinned(compose: dict[str, Any]) -> None:
    unpinned = {
        name: service.get("image")
        for name, service in compose["services"].items()
        if not is_pinned(str(service.get("image", "")))
    }
    assert not unpinned, f"images not pinned to an exact version or digest: {unpinned}"


def test_the_product_image_is_this_version(compose: dict[str, Any]) -> None:
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    built = {
        name: service["image"]
        for name, service in compose["services"].items()
        if str(service.get("image", "")).startswith(f"{PRODUCT_IMAGE}:")
    }
    assert built, "no service runs the product image"
    assert set(built.values()) == {f"{PRODUCT_IMAGE}:{version}"}, built
    for name in built:
        assert compose["services"][name].get("build", {}).get("dockerfile") == "Dockerfile", name


def product_services(compose: dict[str, Any]) -> list[str]:
    return sorted(
        name
        for name, service in compose["services"].items()
        if str(service.get("image", "")).startswith(f"{PRODUCT_IMAGE}:")
    )


def test_the_services_run_every_streamjoin_command(compose: dict[str, Any]) -> None:
    commands = [
        tuple(a for a in compose_argv(s, compose)[1:] if not a.startswith("-"))
        for s in product_services(compose)
    ]
    found = {c[:2] if c[:2] in REQUIRED_COMMANDS else c[:1] for c in commands}
    assert found == REQUIRED_COMMANDS, commands


@pytest.mark.parametrize("service", ["topics", "api", "joiner", "archiver"])
def test_each_command_is_accepted_by_the_cli(compose: dict[str, Any], service: str) -> None:
    argv = compose_argv(service, compose)
    assert argv[0] == "streamjoin", argv
    result = check_cli(argv)
    assert result.returncode == 0, f"`{' '.join(argv)} --help` failed:\n{result.stdout}\n{result.stderr}"
    assert "Usage:" in result.stdout


def test_configuration_is_only_the_streamjoin_contract(compose: dict[str, Any]) -> None:
    """Product services get the STREAMJOIN_* variables (README.md), pointing at compose services."""
    for name in product_services(compose):
        env = compose["services"][name]["environment"]
        assert all(key.startswith("STREAMJOIN_") for key in env), (name, env)
        assert env["STREAMJOIN_KAFKA_BOOTSTRAP"] == "kafka:9092"
        # the URL carries the (required) password from the environment: compare it interpolated
        assert interpolate(env["STREAMJOIN_REDIS_URL"], SECRETS).startswith("redis://:pw@redis:6379/")
        assert "STREAMJOIN_API_TOKEN" in env


def test_the_archiver_serves_metrics_to_prometheus(compose: dict[str, Any]) -> None:
    """Prometheus (another container) scrapes archiver:9465: /metrics must listen on every interface."""
    argv = compose_argv("archiver", compose)
    assert argv[argv.index("--metrics-host") + 1] == "0.0.0.0", argv
    port = argv[argv.index("--metrics-port") + 1]
    prometheus = yaml.safe_load((REPO_ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    targets = [
        t for job in prometheus["scrape_configs"] for c in job.get("static_configs", []) for t in c["targets"]
    ]
    assert f"archiver:{port}" in targets, targets


def test_prometheus_scrapes_the_api_on_its_metrics_port(compose: dict[str, Any]) -> None:
    """The metrics port serves /metrics without a token (production reads need one); it is not published."""
    api = compose["services"]["api"]
    port = api["environment"]["STREAMJOIN_METRICS_PORT"]
    assert port != api["environment"]["STREAMJOIN_API_PORT"]
    assert not any(f":{port}" in published for published in api["ports"]), api["ports"]


def test_long_running_services_have_health_checks(compose: dict[str, Any]) -> None:
    missing = [
        name
        for name, service in compose["services"].items()
        if service.get("restart") != "no" and "healthcheck" not in service
    ]
    assert not missing, f"services without a health check: {missing}"


def test_start_order_works_from_nothing(compose: dict[str, Any]) -> None:
    """Dependencies exist, have no cycle, and wait for health (or for the topic job to finish)."""
    services = compose["services"]
    graph: dict[str, dict[str, str]] = {}
    for name, service in services.items():
        deps = service.get("depends_on", {})
        assert isinstance(deps, dict), f"{name}: depends_on must say which condition to wait for"
        graph[name] = {dep: spec["condition"] for dep, spec in deps.items()}
        for dep, condition in graph[name].items():
            assert dep in services, f"{name} depends on unknown {dep}"
            if condition == "service_healthy":
                assert "healthcheck" in services[dep], (
                    f"{name} waits for {dep} to be healthy, but it has no check"
                )
            elif condition == "service_completed_successfully":
                assert services[dep].get("restart") == "no", f"{dep} is a one-shot job and must not restart"
            else:
                pytest.fail(f"{name} starts as soon as {dep} starts ({condition}): wait for health instead")

    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"dependency cycle: {' -> '.join((*path, name))}"
        if name in order:
            return
        for dep in graph[name]:
            visit(dep, (*path, name))
        order.append(name)

    for name in graph:
        visit(name, ())
    # Topics exist before anything uses them; the broker is up before the topics are created.
    assert graph["topics"] == {"kafka": "service_healthy"}
    for user in ("api", "joiner", "archiver"):
        assert graph[user].get("topics") == "service_completed_successfully", user
    for user in ("api", "joiner"):
        assert graph[user].get("redis") == "service_healthy", user


def test_joiners_scale(compose: dict[str, Any]) -> None:
    """`docker compose up --scale joiner=N` needs no fixed container name or host port on the joiner."""
    joiner = compose["services"]["joiner"]
    assert "container_name" not in joiner and "ports" not in joiner
    assert joiner["deploy"]["replicas"] >= 1


def test_grafana_and_prometheus_mount_the_files_of_deploy(compose: dict[str, Any]) -> None:
    for name in ("grafana", "prometheus"):
        for volume in compose["services"][name]["volumes"]:
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (REPO_ROOT / source).exists(), f"{name} mounts missing {source}"
    grafana = compose["services"]["grafana"]
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    mounts = dict(v.split(":")[:2][::-1] for v in grafana["volumes"] if v.startswith("./"))
    directory, _, file = home.rpartition("/")
    assert (REPO_ROOT / mounts[directory] / file).is_file(), home


def test_prometheus_loads_the_alert_rules(compose: dict[str, Any]) -> None:
    """prometheus.yml's `rule_files`, resolved in the container, reach the mounted rules of deploy/."""
    prometheus = compose["services"]["prometheus"]
    mounts = {t: s for s, t in (v.split(":")[:2] for v in prometheus["volumes"] if v.startswith("./"))}
    config_path = next(a for a in prometheus["command"] if a.startswith("--config.file=")).split("=", 1)[1]
    config = yaml.safe_load((REPO_ROOT / mounts[config_path]).read_text())
    loaded = set()
    for pattern in config["rule_files"]:
        directory, _, glob = posixpath.join(posixpath.dirname(config_path), pattern).rpartition("/")
        loaded |= {p.resolve() for p in (REPO_ROOT / mounts[directory]).glob(glob)}
    assert loaded == {RULES_FILE.resolve()}


def test_dockerfile_pins_its_base_image_and_copies_what_exists() -> None:
    text = (REPO_ROOT / "Dockerfile").read_text()
    bases = re.findall(r"^ARG PYTHON_IMAGE=(\S+)", text, re.M)
    assert bases and all(is_pinned(b) for b in bases), bases
    for source in re.findall(r"^COPY (?!--from)(\S+(?: \S+)*) \S+$", text, re.M):
        for path in source.split():
            assert (REPO_ROOT / path).exists(), f"Dockerfile copies missing {path}"
    assert 'CMD ["streamjoin", "--help"]' in text


SECRETS = {
    "STREAMJOIN_API_TOKEN": "pw",
    "STREAMJOIN_KAFKA_SASL_PASSWORD": "pw",
    "STREAMJOIN_REGISTRY_KEY": "k" * 64,
    "REDIS_PASSWORD": "pw",
    "GRAFANA_ADMIN_PASSWORD": "pw",
}
"""Values for the variables the compose file requires (tests only)."""

_VARIABLE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def interpolate(text: str, env: dict[str, str]) -> str:
    """Interpolate `text` as Compose does: `${VAR}`, `${VAR:-default}`, `${VAR:?error}`, `$$`.

    >>> interpolate("${A:-x}/${B:?need B}/$$", {"B": "b"})
    'x/b/$'
    >>> interpolate("${B:?need B}", {})
    Traceback (most recent call last):
    ...
    KeyError: 'need B'
    """

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.groups()
        value = env.get(name)
        if (op in (":-", ":?") and not value) or (op in ("-", "?") and value is None):
            if op.endswith("?"):
                raise KeyError(arg)
            return arg
        return value or ""

    return _VARIABLE.sub(one, text)


def _published(compose: dict[str, Any]) -> dict[str, list[str]]:
    return {
        name: service.get("ports", [])
        for name, service in compose["services"].items()
        if service.get("ports")
    }


def test_published_ports_listen_on_loopback_by_default(compose: dict[str, Any]) -> None:
    published = _published(compose)
    assert set(published) == {"kafka", "api", "prometheus", "grafana"}, published
    for name, ports in published.items():
        for port in ports:
            assert interpolate(port, SECRETS).startswith("127.0.0.1:"), (name, port)
            assert interpolate(port, {**SECRETS, "STREAMJOIN_BIND": "0.0.0.0"}).startswith("0.0.0.0:")


def test_secrets_have_no_defaults(compose: dict[str, Any]) -> None:
    """Compose refuses to start until the API token, the Redis password and Grafana's are set."""
    text = _compose_text()
    assert "change-me" not in text and ":-admin" not in text
    with pytest.raises(KeyError):
        interpolate(text, {})
    for name in SECRETS:
        with pytest.raises(KeyError, match=name):
            interpolate(text, {k: v for k, v in SECRETS.items() if k != name})
    interpolate(text, SECRETS)  # and nothing else is required
    for name in product_services(compose):
        token = compose["services"][name]["environment"]["STREAMJOIN_API_TOKEN"]
        assert token.startswith("${STREAMJOIN_API_TOKEN:?"), (name, token)
    readers = [
        n
        for n in product_services(compose)
        if "STREAMJOIN_REGISTRY_KEY" in compose["services"][n]["environment"]
    ]
    assert readers == ["api"]  # only the control plane signs and reads the registry's log
    key = compose["services"]["api"]["environment"]["STREAMJOIN_REGISTRY_KEY"]
    assert key.startswith("${STREAMJOIN_REGISTRY_KEY:?"), key


def test_redis_requires_its_password(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    assert redis["environment"]["REDIS_PASSWORD"].startswith("${REDIS_PASSWORD:?")
    command = " ".join(redis["command"])
    assert '--requirepass "$$REDIS_PASSWORD"' in command, command
    assert "REDISCLI_AUTH" in " ".join(redis["healthcheck"]["test"])
    for name in product_services(compose):
        url = compose["services"][name]["environment"]["STREAMJOIN_REDIS_URL"]
        assert interpolate(url, SECRETS) == "redis://:pw@redis:6379/0", (name, url)


def test_prometheus_and_grafana_are_not_open(compose: dict[str, Any]) -> None:
    prometheus = compose["services"]["prometheus"]["command"]
    assert not any("enable-lifecycle" in arg or "enable-admin-api" in arg for arg in prometheus), prometheus
    grafana = compose["services"]["grafana"]["environment"]
    assert grafana["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert "GF_AUTH_ANONYMOUS_ORG_ROLE" not in grafana
    assert grafana["GF_SECURITY_ADMIN_PASSWORD"].startswith("${GRAFANA_ADMIN_PASSWORD:?")


def test_the_env_example_names_every_secret() -> None:
    example = (REPO_ROOT / "deploy" / "env.example").read_text()
    names = {
        line.split("=", 1)[0] for line in example.splitlines() if "=" in line and not line.startswith("#")
    }
    assert names == set(SECRETS)


def _compose_text() -> str:
    return (REPO_ROOT / "docker-compose.yml").read_text()
