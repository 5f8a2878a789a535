"""Apache Kafka itself for the embedded stack: KRaft nodes from the jars on Maven Central.

`KafkaBroker` is one node in combined mode (broker and controller in one JVM) on free loopback
ports, its log directory under the work dir: what the demo and the tests run by default. `kill()`
SIGKILLs it and `restart()` starts it again on the same ports and data, for the broker-crash tests.
`KafkaCluster` is three such nodes forming one KRaft quorum (replication factor 3, min.insync 2),
for the leader-failover tests. The jars come from `streamjoin.dev.jars` (the pom
`maven/kafka.pom.xml`); the settings that differ from Kafka's defaults are in `_DEV_CONFIG`, each
with its reason. `KafkaBroker(security=KafkaSecurity(...))` runs a node that requires SASL/SCRAM
logins and ACLs (`streamjoin.dev.kafka_security`); by default a node is PLAINTEXT and open.

>>> broker = KafkaBroker()
>>> broker.bootstrap is None
True
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from streamjoin.dev.jars import classpath, java_executable
from streamjoin.dev.kafka_security import KafkaSecurity
from streamjoin.dev.ports import LOOPBACK, free_port, port_accepts
from streamjoin.dev.process import ManagedProcess, ProcessService
from streamjoin.kafka import Admin

__all__ = ["KafkaBroker", "KafkaCluster", "kafka_available"]

_MAX_LONG = str(2**63 - 1)
# Where the embedded node differs from Kafka's defaults, and why.
_DEV_CONFIG: Mapping[str, str] = {
    # Topics are created from topics/topics.json before anything uses them, as in production.
    "auto.create.topics.enable": "false",
    # A test's group forms at once instead of after 3 s.
    "group.initial.rebalance.delay.ms": "0",
    # Internal topics sized for one laptop, not a data centre (50 partitions each by default).
    "offsets.topic.num.partitions": "8",
    "transaction.state.log.num.partitions": "4",
    # Workloads and tests use event times far from now (1970, or hours ahead): keep them as written.
    "log.message.timestamp.before.max.ms": _MAX_LONG,
    "log.message.timestamp.after.max.ms": _MAX_LONG,
    # Two cores shared with Redis and the workers.
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "log.cleaner.threads": "1",
}
_JVM_OPTIONS = (
    "-Xms256m",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-Djava.awt.headless=true",
    # Listen on 127.0.0.1 itself, not on an IPv6 socket mapping it.
    "-Djava.net.preferIPv4Stack=true",
)
_LOG4J = """Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
"""


def kafka_available() -> str | None:
    """Return why Apache Kafka cannot run here (no Java, no Maven and no cached jars), or None."""
    from streamjoin.dev.jars import JarsUnavailableError

    try:
        java_executable()
        classpath("kafka")
    except JarsUnavailableError as error:
        return str(error)
    return None


class _Node:
    """One KRaft node's identity: its id, ports, folder and the quorum it belongs to."""

    def __init__(self, node_id: int, host: str, folder: Path) -> None:
        self.node_id = node_id
        self.host = host
        self.folder = folder
        self.port = free_port()
        self.controller_port = free_port()

    @property
    def voter(self) -> str:
        return f"{self.node_id}@{self.host}:{self.controller_port}"

    def listeners(self, security: KafkaSecurity | None) -> dict[str, str]:
        if security is not None:
            return security.listener_properties(self.host, self.port, self.controller_port)
        return {
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        }

    def properties(
        self, voters: str, replication: int, extra: Mapping[str, str], security: KafkaSecurity | None
    ) -> str:
        config = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            **self.listeners(security),
            "log.dirs": str(self.folder / "data"),
            "offsets.topic.replication.factor": str(replication),
            "transaction.state.log.replication.factor": str(replication),
            "transaction.state.log.min.isr": str(min(replication, 2)),
            "share.coordinator.state.topic.replication.factor": str(replication),
            "share.coordinator.state.topic.min.isr": str(min(replication, 2)),
            "default.replication.factor": str(replication),
            "min.insync.replicas": str(min(replication, 2)),
            **_DEV_CONFIG,
            **extra,
        }
        return "".join(f"{key}={value}\n" for key, value in config.items())


class KafkaBroker(ProcessService):
    """One Apache Kafka KRaft node (broker and controller) on 127.0.0.1, its data under the work dir."""

    name = "broker"

    def __init__(
        self,
        *,
        ready_timeout_ms: int = 120_000,
        host: str = LOOPBACK,
        launcher: Sequence[str] = (),
        config: Mapping[str, str] | None = None,
        node_id: int = 1,
        security: KafkaSecurity | None = None,
    ) -> None:
        """Describe the node; nothing runs until `start`.

        Args:
            ready_timeout_ms: how long `start` waits for a metadata request to list a broker.
            host: the address it listens on and advertises (loopback unless another host is simulated).
            launcher: an argv prefix that runs it elsewhere, e.g. `ip netns exec NS` (see `dev.netns`).
            config: broker settings over the embedded defaults (e.g. SASL listeners).
            node_id: its KRaft node id (a cluster's nodes differ).
            security: SCRAM users and ACLs (`streamjoin.dev.kafka_security`); None: PLAINTEXT, open.
        """
        super().__init__(ready_timeout_ms=ready_timeout_ms)
        self._host = host
        self._launcher = tuple(launcher)
        self._config = dict(config or {})
        self._node_id = node_id
        self.security = security
        self._node: _Node | None = None
        self._argv: tuple[str, ...] = ()
        self._log_path: Path | None = None

    @property
    def bootstrap(self) -> str | None:
        """`HOST:PORT` once started."""
        return f"{self._host}:{self.port}" if self.port is not None else None

    def endpoints(self) -> Mapping[str, str]:
        """Where clients reach the broker."""
        return {"Kafka bootstrap": self.bootstrap} if self.bootstrap else {}

    @property
    def admin_config(self) -> dict[str, str]:
        """The security properties of a confluent-kafka client with every right (empty when open)."""
        return {} if self.security is None else self.security.librdkafka(self.security.admin.name)

    def start(self, workdir: Path) -> None:
        """Format a single-node quorum under `workdir` and start it; wait until it serves metadata."""
        node = self.prepare(workdir)
        self.configure(node.voter, replication=1, cluster_id=_new_cluster_id())
        self.launch()
        self.wait_ready()

    def prepare(self, workdir: Path) -> _Node:
        """Choose the node's ports and folder (a cluster collects every node's voter first)."""
        self._node = _Node(self._node_id, self._host, workdir / f"kafka-{self._node_id}")
        self._node.folder.mkdir(parents=True, exist_ok=True)
        self.port = self._node.port
        return self._node

    def configure(self, voters: str, *, replication: int, cluster_id: str) -> None:
        """Write server.properties and log4j2.yaml, and format the log directory for `cluster_id`."""
        node = self._require_node()
        properties = node.folder / "server.properties"
        properties.touch(mode=0o600)  # it holds the passwords of a secured node
        properties.write_text(node.properties(voters, replication, self._config, self.security))
        log4j = node.folder / "log4j2.yaml"
        log4j.write_text(_LOG4J)
        java = java_executable()
        jars = f"{classpath('kafka')}/*"
        base = (*self._launcher, java, *_JVM_OPTIONS, f"-Dlog4j2.configurationFile={log4j}", "-cp", jars)
        self._log_path = node.folder / "broker.log"
        formatter = ManagedProcess(
            "kafka-storage-format",
            [
                *base,
                # `--cluster-id=ID` in one argument: an id starting with "-" (1 in 64) is not an option
                *("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(properties)),
                *(self.security.format_arguments() if self.security is not None else ()),
            ],
            log_path=self._log_path,
            env=_jvm_env(),
        )
        formatter.start()
        code = formatter.wait_exit(timeout_ms=120_000)
        if code != 0:
            raise RuntimeError(f"formatting Kafka's storage failed ({code}):\n{formatter.log_tail()}")
        self._argv = (*base, "kafka.Kafka", str(properties))

    def launch(self) -> None:
        """Start the JVM on the configured ports and data (again after `kill`)."""
        if self._log_path is None:
            raise RuntimeError("the node is not configured")
        self._process = ManagedProcess(self.name, self._argv, log_path=self._log_path, env=_jvm_env())
        self._process.start()

    def wait_ready(self, *, brokers: int = 1) -> None:
        """Wait until a metadata request to this node lists at least `brokers` brokers."""
        if self._process is None:
            raise RuntimeError("the node is not launched")
        probe = MetadataProbe(
            self._require_node().port, self._host, client_config=self.admin_config, brokers=brokers
        )
        self.ready_ms = self._process.wait_ready(probe, timeout_ms=self._ready_timeout_ms)

    def kill(self) -> None:
        """SIGKILL the node, as a crash would (no SIGTERM first: no controlled shutdown, no flush);
        its data stays for `restart`."""
        process = self._process
        if process is not None and process.running and process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        if process is not None:
            process.stop(timeout_ms=2_000)  # reaps it

    def restart(self, *, brokers: int = 1) -> None:
        """Start the node again on its ports and data, and wait until it serves (its metadata lists
        at least `brokers` brokers)."""
        self.kill()
        self.launch()
        self.wait_ready(brokers=brokers)

    def _require_node(self) -> _Node:
        if self._node is None:
            raise RuntimeError("the node is not prepared")
        return self._node


class KafkaCluster:
    """Three KRaft nodes on loopback forming one cluster: replication factor 3, min.insync.replicas 2."""

    name = "kafka-cluster"

    def __init__(self, size: int = 3, *, ready_timeout_ms: int = 90_000) -> None:
        """Describe the cluster; nothing runs until `start`."""
        self.nodes = [KafkaBroker(node_id=i + 1, ready_timeout_ms=ready_timeout_ms) for i in range(size)]

    @property
    def bootstrap(self) -> str:
        """Every node's `host:port`, comma-separated."""
        return ",".join(n.bootstrap for n in self.nodes if n.bootstrap)

    @property
    def process(self) -> ManagedProcess | None:
        """The first node's process (the stack's protocol wants one)."""
        return self.nodes[0].process

    def endpoints(self) -> Mapping[str, str]:
        """Where clients reach the cluster."""
        return {"Kafka bootstrap": self.bootstrap}

    def start(self, workdir: Path) -> None:
        """Format and start every node; wait until each serves metadata."""
        voters = ",".join(node.prepare(workdir).voter for node in self.nodes)
        cluster_id = _new_cluster_id()
        for node in self.nodes:
            node.configure(voters, replication=len(self.nodes), cluster_id=cluster_id)
        for node in self.nodes:
            node.launch()
        # Every broker registered: a topic of the default replication factor needs all of them.
        for node in self.nodes:
            node.wait_ready(brokers=len(self.nodes))

    def node_by_id(self, node_id: int) -> KafkaBroker:
        """Return the node with KRaft id `node_id`."""
        return self.nodes[node_id - 1]

    def kill(self, node_id: int) -> None:
        """SIGKILL node `node_id` (`KafkaBroker.kill`); the others go on serving."""
        self.node_by_id(node_id).kill()

    def restart(self, node_id: int) -> None:
        """Start node `node_id` again on its ports and data; return once the cluster's metadata lists
        every node again (it registered with the controller and was unfenced). It catches up with the
        partitions' leaders afterwards."""
        self.node_by_id(node_id).restart(brokers=len(self.nodes))

    def stop(self, *, timeout_ms: int = 10_000) -> None:
        """Stop every node, all at once: one by one, the last ones would wait for a controlled
        shutdown that the quorum, already gone, can no longer grant (and be killed after `timeout_ms`)."""
        stopping = [threading.Thread(target=n.stop, kwargs={"timeout_ms": timeout_ms}) for n in self.nodes]
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()


class MetadataProbe:
    """Ready when the port accepts connections and a Kafka metadata request lists `brokers` brokers
    (or more)."""

    def __init__(
        self,
        port: int,
        host: str = LOOPBACK,
        *,
        client_config: Mapping[str, str] | None = None,
        brokers: int = 1,
    ) -> None:
        self._port = port
        self._host = host
        self._client_config = dict(client_config or {})
        self._brokers = brokers
        self._admin: Admin | None = None

    def __call__(self) -> bool:
        if not port_accepts(self._port, host=self._host):
            return False
        if self._admin is None:
            self._admin = Admin(f"{self._host}:{self._port}", client_config=self._client_config)
        return self._admin.broker_count(timeout_ms=2_000) >= self._brokers


def _new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, base64url without padding (what `random-uuid` prints)."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _jvm_env() -> dict[str, str]:
    """Our environment without the variables Kafka's JVM would read instead of our settings."""
    skip = ("KAFKA_OPTS", "KAFKA_HEAP_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "JAVA_TOOL_OPTIONS", "CLASSPATH")
    return {key: value for key, value in os.environ.items() if key not in skip}
