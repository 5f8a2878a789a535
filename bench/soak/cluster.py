"""The system under test: its own broker, its own Redis and N joiner workers, all real processes.

The broker is the embedded Tansu (memory-only: it can be frozen, not restarted), one Apache Kafka
KRaft node, or three of them (replication factor 3, min.insync.replicas 2): `BrokerKind`. Kafka
nodes can be SIGKILLed and started again on their data (`kill_broker`, `restart_broker`).

Faults act on it (`bench/soak/faults.py`); like a supervisor (Kubernetes, compose's `restart:`), it
starts again a worker that exits on its own (`supervise`: a worker leaves a stalled consumer group
by exiting, `joiner/group/watch.py`), but not one a fault is stopping. It also answers the two
questions they and the lag probe ask of Redis: which partitions a worker owns with a batch committed
but not yet known to be published (a batch in flight), and how far the operators and repartitioners
are (`bench/soak/drain.py`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

import redis
from bench.soak.drain import InputPositions
from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaPartition
from tests.joiner.harness import JoinerProcess
from tests.registry.redis_process import RestartableRedis

from streamjoin.cli.task_dump import TASK_DUMP_HEADER
from streamjoin.dev.broker import EmbeddedBroker
from streamjoin.dev.kafka_broker import KafkaBroker, KafkaCluster
from streamjoin.kafka import Admin
from streamjoin.state.redis.repartition_store import RepartitionStore
from streamjoin.topics import TopicSpec, create_topics, load_catalog

__all__ = ["BrokerKind", "Cluster"]

BrokerKind = Literal["tansu", "kafka", "kafka-cluster"]
"""The embedded Tansu, one Apache Kafka node, or a 3-node Kafka cluster (RF 3, min.insync 2)."""

_KAFKA_READY_MS = 180_000
"""How long a Kafka node may take to serve, after a start or a restart on its data (10-15 s on a
quiet machine; over 60 s was seen under a load average of 30 on 2 cores)."""


class Cluster:
    """A broker, a restartable Redis (`appendfsync always`) and `workers` joiner processes."""

    def __init__(
        self, workdir: Path, *, workers: int, session_timeout_ms: int, broker: BrokerKind = "kafka"
    ) -> None:
        self.workdir = workdir
        self.broker_kind = broker
        self.broker: EmbeddedBroker | KafkaBroker | KafkaCluster = (
            EmbeddedBroker()
            if broker == "tansu"
            # generous: a JVM started again on a loaded machine recovers its logs slowly
            else KafkaBroker(ready_timeout_ms=_KAFKA_READY_MS)
            if broker == "kafka"
            else KafkaCluster(ready_timeout_ms=_KAFKA_READY_MS)
        )
        self.query_topics: tuple[str, ...] = ()
        """The query's input and output topics (set by the runner): whose leaders `KillBroker` looks at."""
        self.group = ""
        self.redis = RestartableRedis(workdir / "redis")
        (workdir / "redis").mkdir(parents=True, exist_ok=True)
        self.worker_count = workers
        self.session_timeout_ms = session_timeout_ms
        self.workers: list[JoinerProcess] = []
        self.prefix = ""
        self.query = ""
        self.partitions = 0
        self._paused: set[int] = set()
        self._held: set[int] = set()
        self.restarts: list[dict[str, object]] = []
        """The workers `supervise` started again: which, when (monotonic s) and their exit code."""
        self._watermarks: Consumer | None = None

    @property
    def bootstrap(self) -> str:
        """The broker's bootstrap address (every node's, for a cluster)."""
        assert self.broker.bootstrap, "the broker is not started"
        return self.broker.bootstrap

    @property
    def broker_pid(self) -> int:
        """The broker's process id."""
        process = self.broker.process
        assert process is not None and process.pid is not None, "the broker is not started"
        return process.pid

    def start(self) -> None:
        """Start the broker and Redis; create the declared topics, as the topics job does first."""
        self.broker.start(self.workdir)
        self.redis.start()
        create_topics(self.bootstrap, load_catalog())
        self._watermarks = self._new_watermarks()

    def create_topics(self, names: Sequence[str], partitions: int, config: Mapping[str, str]) -> None:
        """Create `names` with `partitions` partitions each."""
        specs = [TopicSpec(t, "internal", partitions, config=dict(config)) for t in names]
        failed = [r for r in create_topics(self.bootstrap, specs) if not r.ok]
        if failed:
            raise RuntimeError(f"topics not created: {failed}")

    def start_workers(
        self, *, group: str, prefix: str, query: str, partitions: int, options: Sequence[str] = ()
    ) -> None:
        """Start the workers of consumer group `group` on registry/state prefix `prefix`, with more
        `streamjoin joiner` options `options`."""
        self.prefix, self.query, self.partitions, self.group = prefix, query, partitions, group
        # STREAMJOIN_SOAK_WORKER_ARGS: more `streamjoin joiner` options (tuning experiments)
        session = ["--session-timeout-ms", str(self.session_timeout_ms), *options,
                   *os.environ.get("STREAMJOIN_SOAK_WORKER_ARGS", "").split()]  # fmt: skip
        for i in range(self.worker_count):
            worker = JoinerProcess(self.workdir, self.bootstrap, self.redis.url, group=group, prefix=prefix,
                                   name=f"w{i + 1}", extra=session, restart_on_stall=False)  # fmt: skip
            worker.start()
            self.workers.append(worker)

    @contextlib.contextmanager
    def hold(self, index: int) -> Iterator[None]:
        """Keep `supervise` away from worker `index` while a fault stops and starts it."""
        self._held.add(index)
        try:
            yield
        finally:
            self._held.discard(index)

    def supervise(self) -> None:
        """Start again every worker that exited on its own (not held by a fault)."""
        for index, worker in enumerate(self.workers):
            process = worker.process
            if index in self._held or process is None or process.running:
                continue
            code = process.stop(timeout_ms=0)  # reaps it (and any straggler of its group)
            worker.start()
            self.restarts.append({"worker": f"w{index + 1}", "exit_code": code, "at": time.monotonic()})

    def signal_worker(self, index: int, signum: signal.Signals) -> None:
        """Send `signum` to worker `index`'s process group."""
        process = self.workers[index].process
        assert process is not None and process.pid is not None
        os.killpg(process.pid, signum)
        if signum == signal.SIGSTOP:
            self._paused.add(index)
        elif signum == signal.SIGCONT:
            self._paused.discard(index)

    def pause_broker(self, paused: bool) -> None:
        """SIGSTOP (or SIGCONT) the broker: its connections stay open and nothing answers."""
        os.kill(self.broker_pid, signal.SIGSTOP if paused else signal.SIGCONT)
        if paused:
            self._paused.add(-1)
        else:
            self._paused.discard(-1)

    def _kafka_nodes(self) -> KafkaCluster | KafkaBroker:
        if isinstance(self.broker, EmbeddedBroker):
            raise ValueError("the embedded Tansu broker is memory-only: it cannot be restarted on its data")
        return self.broker

    def kill_broker(self, node_id: int) -> None:
        """SIGKILL Kafka node `node_id` (1 for a single node); its data stays."""
        nodes = self._kafka_nodes()
        if isinstance(nodes, KafkaCluster):
            nodes.kill(node_id)
        else:
            nodes.kill()

    def restart_broker(self, node_id: int) -> None:
        """Start Kafka node `node_id` again on its ports and data; return once it serves (a cluster's
        metadata lists every node again)."""
        nodes = self._kafka_nodes()
        if isinstance(nodes, KafkaCluster):
            nodes.restart(node_id)
        else:
            nodes.restart()

    def leaders(self, topics: Sequence[str]) -> dict[tuple[str, int], int]:
        """Return the broker id leading each partition of `topics` (every topic when empty)."""
        replicas = Admin(self.bootstrap).replicas(topics or None)
        return {tp: r.leader for tp, r in replicas.items()}

    def replication(self) -> dict[str, list[int]]:
        """Return every topic's [replication factor, min.insync.replicas] (Kafka only)."""
        admin = Admin(self.bootstrap)
        factors: dict[str, int] = {}
        for (topic, _p), replicas in admin.replicas().items():
            factors[topic] = max(factors.get(topic, 0), len(replicas.replicas))
        configs = admin.topic_configs(sorted(factors))
        return {t: [n, int(configs[t]["min.insync.replicas"])] for t, n in sorted(factors.items())}

    def group_coordinator(self) -> int:
        """Return the broker id coordinating the workers' consumer group."""
        return Admin(self.bootstrap).group_coordinator(self.group)

    def _client(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis.url, socket_timeout=1.0, socket_connect_timeout=1.0)

    def _meta_key(self, partition: int) -> str:
        return f"{self.prefix}{{{partition}}}:state:{self.query}:meta"

    def in_flight(self, index: int) -> list[int]:
        """Return the partitions worker `index` owns whose outbox holds committed, unacknowledged results."""
        owner = self.workers[index].worker_id
        out = []
        try:
            with self._client() as client:
                for p in range(self.partitions):
                    outbox = f"{self.prefix}{{{p}}}:state:{self.query}:outbox:results"
                    if client.hget(self._meta_key(p), "owner") == owner.encode() and client.llen(outbox) > 0:
                        out.append(p)
        except redis.RedisError:  # Redis briefly unreachable: nothing seen
            return []
        return out

    def late_records(self) -> int:
        """Return how many input records the operators counted late (neither joined nor windowed)."""
        with self._client() as client:
            return sum(int(client.hget(self._meta_key(p), "count:late") or 0) for p in range(self.partitions))

    def positions(self, streams: Mapping[str, str]) -> InputPositions:
        """Return what the operators committed (every topic they read) and the repartitioners'
        positions of inputs `streams` (name -> topic), `bench/soak/drain.py` (Redis errors propagate)."""
        operators: dict[tuple[str, int], int] = {}
        rekeyed: dict[tuple[str, int], int] = {}
        pattern = RepartitionStore.pattern(self.prefix, self.query)
        with self._client() as client:
            for p in range(self.partitions):
                for field, value in client.hgetall(self._meta_key(p)).items():
                    if field.startswith(b"offset:"):
                        operators[field[7:].decode(), p] = int(value)
            for key in client.scan_iter(match=pattern, count=1000):
                position = client.hget(key, "position")
                name = key.decode()
                stream = name.rsplit("/", 1)[1]
                if position is not None and stream in streams:
                    p = int(name[len(self.prefix) + 1 : name.index("}", len(self.prefix))])
                    rekeyed[streams[stream], p] = int(position)
        return InputPositions(operators, rekeyed)

    def _new_watermarks(self) -> Consumer:
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-watermarks", "log_level": 3})

    def end_offsets(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Return the end offset of each of `tps` (broker errors propagate).

        A failure replaces the consumer asking: librdkafka's consumer without an assignment never
        refreshes a partition's leader, so after a leader's crash it kept asking the dead node
        (timing out) until that node came back."""
        assert self._watermarks is not None, "the cluster is not started"
        get = self._watermarks.get_watermark_offsets
        try:
            return {(t, p): int(get(KafkaPartition(t, p), timeout=2.0, cached=False)[1]) for t, p in tps}
        except KafkaException:
            self._watermarks.close()
            self._watermarks = self._new_watermarks()
            raise

    def stop(self) -> None:
        """Stop everything (resuming what a fault left paused first); safe to call twice."""
        for index in list(self._paused):
            try:
                if index < 0:
                    self.pause_broker(False)
                else:
                    self.signal_worker(index, signal.SIGCONT)
            except (ProcessLookupError, AssertionError):
                pass
        for worker in self.workers:
            worker.stop()
        if self._watermarks is not None:
            self._watermarks.close()
            self._watermarks = None
        self.redis.stop()
        self.broker.stop(timeout_ms=5_000)

    def logs(self, lines: int = 40) -> str:
        """Return the end of every worker's log."""
        return "\n".join(f"--- {w.name} ---\n{w.log_tail(lines)}" for w in self.workers)

    def task_dumps(self, wait_s: float = 1.5) -> str:
        """Ask every running worker where its tasks wait (SIGUSR1, `streamjoin.cli.task_dump`) and
        return where each one's main thread is and where its operators and repartitioners wait."""
        asked = []
        for index, worker in enumerate(self.workers):
            process = worker.process
            if index not in self._paused and process is not None and process.running and process.pid:
                with contextlib.suppress(OSError):
                    os.kill(process.pid, signal.SIGUSR1)
                    asked.append(worker)
        time.sleep(wait_s)
        return "\n".join(f"--- {w.name} tasks ---\n{_stuck_places(w.log_tail(600))}" for w in asked)


def _stuck_places(log: str) -> str:
    """Return, from the last dump in `log`: the main thread's frames (faulthandler's "Current
    thread" block) and the task lines of the operators and repartitioners."""
    lines = log.splitlines()
    main = max((i for i, line in enumerate(lines) if line.startswith("Current thread")), default=None)
    tasks = max((i for i, line in enumerate(lines) if TASK_DUMP_HEADER in line), default=None)
    out: list[str] = []
    if main is not None:
        out += [lines[main], *[line for line in lines[main + 1 : main + 13] if line.startswith("  File")]]
    if tasks is not None:
        block = [line for line in lines[tasks + 1 :] if line.startswith("  task ")]
        out += [line for line in block if "repartitioner" in line or "operator" in line]
    return "\n".join(out) or "(no dump: the process did not answer SIGUSR1)"
