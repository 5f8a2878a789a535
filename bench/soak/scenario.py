"""Run a scenario: a workload at a steady rate through N workers while faults strike on schedule,
then compare the output and the dead-letter topic with the oracle.

    from bench.soak import Scenario, run_scenario, standard_schedule
    report = run_scenario(Scenario("quick", rate=2_000, duration_s=60,
                                   schedule=standard_schedule(span_s=40)), workdir)
    assert report.verdict.ok, report.verdict.summary()

Steps: start a broker, Redis and the workers (`Cluster`); register the query; produce at `rate`
records/s for `duration_s` (1% poison of every kind, `bench/soak/workload.py`) while the faults run
and the committed input offsets are sampled every second (the lag); produce one far-future record
per stream and partition so every result comes out; wait until every input record is committed;
read the output and dead-letter topics; compare (`bench/soak/oracle.py`); say how long results
paused around each fault (`bench/soak/pauses.py`). Everything started is stopped at the end, also on
failure.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer
from bench.soak.cluster import BrokerKind, Cluster
from bench.soak.drain import drain
from bench.soak.faults import Fault
from bench.soak.lost import lost_results
from bench.soak.oracle import Verdict, check_dead_letters, expected_output, result_id, verdict
from bench.soak.pauses import result_pauses, results_per_second
from bench.soak.producer import PacedProducer
from bench.soak.workload import STREAMS, Ledger, RecordMaker, WorkloadSpec
from tests.joiner.harness import register_query, wait_running

from streamjoin.joiner.group.watch import EXIT_GROUP_STALLED
from streamjoin.query import parse_query

__all__ = ["NotDrainedError", "Progress", "Report", "Scenario", "ScenarioError", "run_scenario"]

COMPARE_RESERVE_S = 40.0
"""What a run keeps of its `budget_s` for the oracle and reading the output (about 15 s here)."""

MAX_RECORD_BYTES = 4_000
"""`STREAMJOIN_MAX_RECORD_BYTES` of the workers: a padded record's results (5,000 bytes) exceed it."""


@dataclass(frozen=True)
class Scenario:
    """What to run: the rate (records/s over all inputs), for how long, and the faults."""

    name: str
    rate: float
    duration_s: float
    schedule: tuple[Fault, ...] = ()
    workers: int = 3
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    session_timeout_ms: int = 6_000
    drain_timeout_s: float = 180.0
    drain_stall_s: float = 60.0
    """Stop waiting for the drain when no offset moved for this long (`bench/soak/drain.py`)."""
    budget_s: float | None = None
    """The whole run's time budget (a test's timeout, less the teardown): the drain stops in time
    for the comparison (`COMPARE_RESERVE_S`)."""
    fail_undrained: bool = False
    """Raise `NotDrainedError` (with the partitions behind and the workers' logs) instead of
    comparing when the drain did not complete."""
    broker: BrokerKind = "kafka"
    """The embedded Tansu, one Apache Kafka node or a 3-node Kafka cluster (`BrokerCrash` needs Kafka)."""
    idle_timeout_ms: int | None = None
    """The workers' `--idle-timeout-ms` (None: the harness's 60 s). An input partition silent for
    longer and known to hold nothing unread stops holding the watermark back; one the broker cannot
    serve is not known caught up (docs/joiner.md, "Idle partitions")."""


@dataclass
class Progress:
    """What a running scenario reports every second (for a progress bar)."""

    phase: str
    elapsed_s: float
    produced: int
    lag: int | None
    fault: str = ""


@dataclass
class Report:
    """What a scenario did and how its output compared with the oracle."""

    scenario: str
    rate: float
    duration_s: float
    produced: int
    poison: int
    padded: int
    faults: list[dict[str, Any]]
    lag: list[tuple[float, int | None]]
    """(seconds since production started, records produced and not yet committed; None: Redis down)."""
    verdict: Verdict
    drain_s: float
    """From the end of production until every input record was committed."""
    not_drained: dict[str, list[int]]
    """Partitions not fully processed when the drain stopped (`bench/soak/drain.py`): "topic[p]" ->
    [committed, produced] (an input) or [committed, end offset] (an internal topic)."""
    oracle_s: float
    compare_s: float
    """The oracle, reading the output and dead-letter topics, and the comparison."""
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    """Up to 20 results received twice: where and when the first and the second copy landed
    (partition, offset, appended: s since production began) and the second copy's headers."""
    restarts: list[dict[str, Any]] = field(default_factory=list)
    """Workers that exited on their own and were started again (`Cluster.supervise`): which, when
    (s since production started) and their exit code (75: it left a stalled group)."""
    lag_parts: list[tuple[float, int, int]] = field(default_factory=list)
    """The lag's two parts: (s, input records the repartitioners have not re-keyed, re-keyed
    records the operators have not committed)."""
    pauses: list[dict[str, Any]] = field(default_factory=list)
    """How long results paused around each fault and when the lag was back (`bench/soak/pauses.py`)."""
    results_per_s: list[int] = field(default_factory=list)
    """Results the broker appended in each second since production began."""
    replication: dict[str, list[int]] = field(default_factory=dict)
    """Apache Kafka: every topic's [replication factor, min.insync.replicas] at the end."""
    late: int = 0
    """Input records the operators counted late (neither joined nor windowed): each loses results."""
    lost: dict[str, Any] = field(default_factory=dict)
    """Where and when the lost results were due (`bench/soak/lost.py`)."""

    def as_json(self) -> dict[str, Any]:
        """Return the report as JSON-ready data."""
        return {
            "scenario": self.scenario,
            "rate": self.rate,
            "duration_s": self.duration_s,
            "produced": self.produced,
            "poison_records": self.poison,
            "oversized_result_records": self.padded,
            "faults": self.faults,
            "drain_s": round(self.drain_s, 1),
            "not_drained": self.not_drained,
            "oracle_s": round(self.oracle_s, 1),
            "compare_s": round(self.compare_s, 1),
            "verdict": self.verdict.as_json(),
            "lag": [[round(t, 1), lag] for t, lag in self.lag],
            "duplicates": self.duplicates,
            "restarts": self.restarts,
            "lag_parts": [[round(t, 1), a, b] for t, a, b in self.lag_parts],
            "pauses": self.pauses,
            "results_per_s": self.results_per_s,
            "replication": self.replication,
            "late_records": self.late,
            "lost": self.lost,
        }


class NotDrainedError(RuntimeError):
    """The workers did not process every input record in time (`Scenario.fail_undrained`)."""


class ScenarioError(RuntimeError):
    """A run that failed before its comparison; its message has the workers' logs."""

    def __init__(self, message: str, restarts: list[dict[str, object]]) -> None:
        super().__init__(message)
        self.restarts = restarts
        """The workers that exited on their own and were started again (`Cluster.restarts`)."""

    @property
    def group_stalled(self) -> bool:
        """Whether a worker left a consumer group that gave it no assignment (`EXIT_GROUP_STALLED`).

        Read from the exit codes: the logs' words can be pushed out of their tails by task dumps."""
        return any(restart["exit_code"] == EXIT_GROUP_STALLED for restart in self.restarts)


def run_scenario(
    scenario: Scenario, workdir: Path, *, progress: Callable[[Progress], None] | None = None
) -> Report:
    """Run `scenario` with its processes' files under `workdir`; return the report (see the module)."""
    saved = os.environ.get("STREAMJOIN_MAX_RECORD_BYTES")
    os.environ["STREAMJOIN_MAX_RECORD_BYTES"] = str(MAX_RECORD_BYTES)
    began = time.monotonic()
    cluster = Cluster(workdir, workers=scenario.workers, session_timeout_ms=scenario.session_timeout_ms,
                      broker=scenario.broker)  # fmt: skip
    try:
        cluster.start()
        return asyncio.run(_Run(scenario, cluster, progress or (lambda _: None), began).run())
    except Exception as exc:
        failed = f"scenario {scenario.name} failed: {exc}\nworkers restarted: {cluster.restarts}"
        logs = cluster.logs()  # before any task dump, which would fill the logs' tails
        dumps = f"\n{cluster.task_dumps()}" if isinstance(exc, NotDrainedError) else ""  # where tasks wait
        raise ScenarioError(f"{failed}\n{logs}{dumps}", cluster.restarts) from exc
    finally:
        cluster.stop()
        if saved is None:
            os.environ.pop("STREAMJOIN_MAX_RECORD_BYTES", None)
        else:
            os.environ["STREAMJOIN_MAX_RECORD_BYTES"] = saved


class _Run:
    """One run of a scenario on a started cluster."""

    def __init__(
        self, scenario: Scenario, cluster: Cluster, progress: Callable[[Progress], None], began: float
    ) -> None:
        self.scenario, self.cluster, self.progress, self.began = scenario, cluster, progress, began
        u = uuid.uuid4().hex[:8]
        self.topics = {s: f"soak.{s}.{u}" for s in STREAMS}
        self.output, self.dead = f"soak.out.{u}", f"soak.dead.{u}"
        self.name, self.prefix, self.group = f"soak{u}", f"soak{u}:", f"soak-{u}"
        spec = scenario.workload
        self.query_json = spec.query_json(self.name, self.topics, self.output, self.dead)
        self.ledger = Ledger(spec.partitions)
        self.lag: list[tuple[float, int | None]] = []
        self.lag_parts: list[tuple[float, int, int]] = []
        self.faults: list[dict[str, Any]] = []
        self.current_fault = ""
        self.behind: dict[str, list[int]] = {}

    async def run(self) -> Report:
        s, cluster, spec = self.scenario, self.cluster, self.scenario.workload
        cluster.create_topics([*self.topics.values(), self.dead], spec.partitions, {})
        # Results carry the time the broker appended them: how long they paused (`pauses.py`).
        cluster.create_topics([self.output], spec.partitions, {"message.timestamp.type": "LogAppendTime"})
        cluster.query_topics = (*self.topics.values(), self.output)
        cluster.create_topics([f"{self.topics['a']}.warmup"], 1, {})
        await register_query(cluster.redis.url, self.prefix, self.query_json)
        idle = [] if s.idle_timeout_ms is None else ["--idle-timeout-ms", str(s.idle_timeout_ms)]
        cluster.start_workers(
            group=self.group, prefix=self.prefix, query=self.name, partitions=spec.partitions, options=idle
        )
        supervisor = asyncio.create_task(self._supervise())
        await wait_running(cluster.redis.url, self.prefix, self.name, spec.partitions, timeout_s=120)
        producer = PacedProducer(cluster.bootstrap, self.topics, RecordMaker(spec, s.rate, self.ledger),
                                  s.rate, s.duration_s)  # fmt: skip
        producer.start()
        await asyncio.to_thread(producer.started.wait)
        sampler = asyncio.create_task(self._sample(producer))
        try:
            await self._faults(producer.start_time)
            while producer.is_alive():
                await asyncio.sleep(0.2)
            if producer.failure is not None or producer.errors:
                raise RuntimeError(f"the producer failed: {producer.failure or producer.errors[:3]}")
            drain_start = time.monotonic()
            deadline = drain_start + s.drain_timeout_s
            if s.budget_s is not None:  # leave the comparison its time
                deadline = min(deadline, self.began + s.budget_s - COMPARE_RESERVE_S)
            want = {(self.topics[STREAMS[i]], p): n for (i, p), n in self.ledger.next_offset.items()}
            drained = await drain(self.cluster, self.topics, want, spec.partitions,
                                  deadline=deadline, stall_s=s.drain_stall_s)  # fmt: skip
            self.behind, drain_s = drained.behind, time.monotonic() - drain_start
            if not self.behind:  # the last lag sample: nothing left
                self.lag.append((time.monotonic() - producer.start_time, 0))
            if self.behind and s.fail_undrained:
                raise NotDrainedError(
                    f"not drained after {drain_s:.0f} s ({drained.reason}); behind [committed, produced or"
                    f" end]: {self.behind}; lag samples (s, records): {self.lag[-10:]}"
                )
        finally:
            sampler.cancel()
            supervisor.cancel()
        return await self._compare(producer.start_time, drain_s)

    async def _supervise(self) -> None:
        """Start again, within half a second, a worker that exited on its own (`Cluster.supervise`)."""
        while True:
            await asyncio.to_thread(self.cluster.supervise)
            await asyncio.sleep(0.5)

    async def _faults(self, start: float) -> None:
        for fault in sorted(self.scenario.schedule, key=lambda f: f.at_s):
            await asyncio.sleep(max(0.0, start + fault.at_s - time.monotonic()))
            self.current_fault = fault.describe()
            began = time.monotonic() - start
            detail = await fault.apply(self.cluster)
            self.faults.append({"at_s": round(began, 1), "ended_s": round(time.monotonic() - start, 1),
                                "fault": fault.describe(), **detail})  # fmt: skip
            self.current_fault = ""

    def _lag(self) -> tuple[int, int] | None:
        """Records produced and not yet processed: behind the operators of the inputs or the
        repartitioners, and the re-keyed records behind the operators of the internal topics."""
        try:  # first: what is produced meanwhile counts as lag
            positions = self.cluster.positions(self.topics)
            internal = positions.internal(set(self.topics.values()))
            ends = self.cluster.end_offsets(sorted(internal))
        except Exception:  # Redis or the broker down or restarting: no sample
            return None
        produced = {(self.topics[STREAMS[s]], p): n for (s, p), n in list(self.ledger.next_offset.items())}
        return sum(n - positions.source(tp) for tp, n in produced.items()), sum(
            max(0, ends.get(tp, 0) - offset) for tp, offset in internal.items()
        )

    async def _sample(self, producer: PacedProducer) -> None:
        start = producer.start_time
        while True:
            parts = await asyncio.to_thread(self._lag)
            t = time.monotonic() - start
            lag = None if parts is None else sum(parts)
            self.lag.append((t, lag))
            if parts is not None:
                self.lag_parts.append((t, *parts))
            phase = "producing" if producer.is_alive() else "draining"
            self.progress(Progress(phase, t, self.ledger.produced, lag, self.current_fault))
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - start - t)))

    async def _compare(self, start: float, drain_s: float) -> Report:
        self.progress(Progress("comparing", time.monotonic() - start, self.ledger.produced, 0))
        began = time.monotonic()
        query = parse_query(self.query_json)
        expected = await asyncio.to_thread(expected_output, query, self.ledger, self.topics)
        oracle_s = time.monotonic() - began
        bootstrap = self.cluster.bootstrap
        got: Counter[str] = Counter()
        first: dict[str, tuple[int, int, float]] = {}  # (partition, offset, appended: s of the run)
        copies: list[dict[str, Any]] = []
        arrivals: list[tuple[float, int]] = []  # (s since production began, output partition)
        start_wall = time.time() - (time.monotonic() - start)

        def take(headers: dict[str, bytes], value: bytes, at: tuple[int, int], appended_ms: int) -> None:
            appended = round(appended_ms / 1000 - start_wall, 1)
            arrivals.append((appended, at[0]))
            rid = result_id(value)
            got[rid] += 1
            if rid not in first:
                first[rid] = (*at, appended)
            elif len(copies) < 20:  # where and when a duplicate landed, for the diagnosis
                shown = {k: v.decode(errors="replace") for k, v in headers.items()}
                copies.append({"result": rid[:80], "first_at": list(first[rid]), "again_at": [*at, appended],
                               "headers": shown})  # fmt: skip

        await _read(bootstrap, self.output, sum(expected.results.values()), take)
        letters: list[tuple[dict[str, bytes], bytes]] = []
        await _read(bootstrap, self.dead, len(self.ledger.poison) + sum(expected.oversized.values()),
                    lambda h, v, _at, _ms: letters.append((h, v)))  # fmt: skip
        dead = check_dead_letters(self.ledger, self.topics, letters, expected.oversized)
        kafka = self.cluster.broker_kind != "tansu"
        replication = await asyncio.to_thread(self.cluster.replication) if kafka else {}
        late = await asyncio.to_thread(self.cluster.late_records)
        spec = self.scenario.workload
        return Report(
            scenario=self.scenario.name, rate=self.scenario.rate, duration_s=self.scenario.duration_s,
            produced=self.ledger.produced, poison=len(self.ledger.poison), padded=len(self.ledger.padded),
            faults=self.faults, lag=self.lag, verdict=verdict(expected, got, dead),
            drain_s=drain_s, not_drained=self.behind, oracle_s=oracle_s, compare_s=time.monotonic() - began,
            duplicates=copies, lag_parts=self.lag_parts,
            restarts=[{**r, "at": round(float(r["at"]) - start, 1)} for r in self.cluster.restarts],
            pauses=[p.as_json() for p in result_pauses(arrivals, self.faults, self.lag)],
            results_per_s=results_per_second(arrivals), replication=replication, late=late,
            lost=lost_results(expected.results, got, self.ledger, self.topics, spec.partitions),
        )  # fmt: skip


async def _read(
    bootstrap: str,
    topic: str,
    want: int,
    take: Callable[[dict[str, bytes], bytes, tuple[int, int], int], None],
    quiet_s: float = 3.0,
) -> None:
    """Read `topic` from the start until `want` records arrived and nothing more came for `quiet_s`
    (or 60 s without a new record, or a deadline); hand each record's headers, value, (partition,
    offset) and timestamp (ms) to `take`."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                                auto_offset_reset="earliest", enable_auto_commit=False)  # fmt: skip
    await consumer.start()
    try:
        count, last_new = 0, time.monotonic()
        deadline = last_new + max(300.0, want / 2_000)
        while (
            time.monotonic() - last_new < (quiet_s if count >= want else 60.0) and time.monotonic() < deadline
        ):
            batch = await consumer.getmany(timeout_ms=200, max_records=20_000)
            for msgs in batch.values():
                for m in msgs:
                    headers = {k: bytes(v) for k, v in m.headers}
                    take(headers, m.value or b"", (m.partition, m.offset), m.timestamp)
                count += len(msgs)
                last_new = time.monotonic()
    finally:
        await consumer.stop()
