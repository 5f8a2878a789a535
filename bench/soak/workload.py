"""The soak's workload: a 3-way range join fed at a steady rate, with 1% poison records of every kind.

Records are produced as a real producer would: timestamps (ms) follow the wall clock, with disorder
up to `lateness` inside each topic-partition (so no record is ever late: every record's timestamp is
at least its topic-partition's largest so far minus `lateness`, and the watermark never exceeds
that). Keys decide partitions (`k % partitions`), so results never span partitions. Every window is
a range window, so the result set splits exactly into groups of one key whose timestamps are more
than the largest range apart: that is what lets the brute-force oracle check millions of records
(`bench/soak/oracle.py`).

Everything produced is written down in a `Ledger`: the valid records (compactly: stream, partition,
offset, ts, key, value), the records padded until their results exceed `max_record_bytes`, and the
poison records with their kind. Offsets are counted per topic-partition as records are produced (the
producer is idempotent and the topics are new); the runner checks the broker's end offsets against
those counts, so a record lost or doubled by the producer itself would fail the run.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["POISON_KINDS", "Ledger", "PoisonKind", "WorkloadSpec", "RecordMaker"]

STREAMS = "abc"
CLOCK_START_MS = 1_000_000
"""The workload's timestamp when production starts: a timestamp minus this is the run's millisecond."""
FLUSH_KEY = 1_000_000_000
"""Keys from here on are the end-of-run flush records (one per stream and partition; joining nothing)."""


@dataclass(frozen=True)
class PoisonKind:
    """One kind of bad record: a template (`@TS`, `@AHEAD`, `@K` stand for a valid timestamp, one
    10**12 ahead of it, and a key), and a fragment of the `reason` header its dead letter must have."""

    name: str
    template: bytes
    reason: str

    def build(self, ts: int, k: int) -> bytes:
        """Return the record for a valid timestamp `ts` and key `k`."""
        out = self.template.replace(b"@TS", b"%d" % ts).replace(b"@AHEAD", b"%d" % (ts + 10**12))
        return out.replace(b"@K", b"%d" % k)


_NESTED = b"[" * 5000 + b"]" * 5000

POISON_KINDS: tuple[PoisonKind, ...] = (
    PoisonKind("ts-10e400", b'{"ts": 1' + b"0" * 400 + b', "k": @K, "v": 1}', "out of range"),
    PoisonKind("ts-1e300", b'{"ts": 1e300, "k": @K, "v": 1}', "out of range"),
    PoisonKind("ts-nan", b'{"ts": NaN, "k": @K, "v": 1}', "not JSON: NaN"),
    PoisonKind("ts-true", b'{"ts": true, "k": @K, "v": 1}', "not a finite number"),
    PoisonKind("ts-string", b'{"ts": "@TS", "k": @K, "v": 1}', "not a finite number"),
    PoisonKind("ts-null", b'{"ts": null, "k": @K, "v": 1}', "not a finite number"),
    PoisonKind("ts-ahead", b'{"ts": @AHEAD, "k": @K, "v": 1}', "ahead of the newest timestamp"),
    PoisonKind("key-true", b'{"ts": @TS, "k": true, "v": 1}', "is a boolean"),
    PoisonKind("infinity", b'{"ts": @TS, "k": @K, "v": 1, "x": Infinity}', "not JSON: Infinity"),
    PoisonKind("minus-infinity", b'{"ts": @TS, "k": @K, "v": -Infinity}', "not JSON: -Infinity"),
    PoisonKind("1e999", b'{"ts": @TS, "k": @K, "v": 1e999}', "too large for a double"),
    PoisonKind("5000-digits", b'{"ts": @TS, "k": @K, "v": 1' + b"0" * 5000 + b"}", "not JSON"),
    PoisonKind("nested-5000", b'{"ts": @TS, "k": @K, "v": ' + _NESTED + b"}", "not JSON"),
    PoisonKind("not-json", b'{"ts": @TS, "k": @K', "not JSON"),
    PoisonKind("not-object", b"[@TS, @K, 1]", "not a JSON object"),
    PoisonKind("no-ts", b'{"k": @K, "v": 1}', "missing timestamp field 'ts'"),
    PoisonKind("no-key", b'{"ts": @TS, "v": 1}', "missing join field 'k'"),
    PoisonKind("oversized-letter", b'{"bad": "' + b"x" * 6000 + b'"', "dropped"),
)
"""Every kind of record the joiner must dead-letter (docs/reliability.md, "Poison records"). The last
is malformed and larger than `max_record_bytes`: its dead letter keeps its headers and loses its
value. The record whose *results* are too large is not here: it is valid (`Ledger.padded`)."""

PAD_KIND = "oversized-results"
"""The name of the 19th kind: a valid record padded so that each of its results exceeds `max_record_bytes`."""


@dataclass(frozen=True)
class WorkloadSpec:
    """The definition of a workload: the query's shape, key space and the share of bad records."""

    partitions: int = 6
    keys_per_kilo_rate: float = 45.0
    """Keys per 1,000 records/s: about 7 records per key, stream and second whatever the rate, so
    about 0.4 records per key and stream in each window and 0.08 results per record (denser keys
    make more results, and the oracle's pieces larger: 33 doubles both its cost and the results)."""
    ranges: tuple[int, int, int] = (60, 50, 40)
    lateness: int = 20
    poison_share: float = 0.01
    pad_bytes: int = 5_000
    seed: int = 7

    def keys(self, rate: float) -> int:
        """Return the key space for a total `rate` (records/s), at least one key per partition."""
        return max(self.partitions, round(rate / 1000 * self.keys_per_kilo_rate))

    def query_json(self, name: str, topics: Mapping[str, str], output: str, dead: str) -> dict[str, Any]:
        """Return the query: a.k = b.k = c.k and a.v >= c.v, three range windows, a dead-letter topic."""
        return {
            "name": name,
            "inputs": [
                {"stream": s, "topic": topics[s], "timestamp": "ts", "window": {"range": r}}
                for s, r in zip(STREAMS, self.ranges, strict=True)
            ],
            "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"], ["a.v", ">=", "c.v"]],
            "output": {"topic": output},
            "dead_letter": {"topic": dead},
            "lateness": self.lateness,
        }


@dataclass
class Ledger:
    """What was produced, per topic-partition offset (see the module docstring)."""

    partitions: int
    stream: array[int] = field(default_factory=lambda: array("b"))
    partition: array[int] = field(default_factory=lambda: array("b"))
    offset: array[int] = field(default_factory=lambda: array("q"))
    ts: array[int] = field(default_factory=lambda: array("q"))
    key: array[int] = field(default_factory=lambda: array("q"))
    value: array[int] = field(default_factory=lambda: array("b"))
    padded: set[tuple[int, int, int]] = field(default_factory=set)
    """(stream index, partition, offset) of the valid records padded past `max_record_bytes`."""
    poison: list[tuple[int, int, int, str]] = field(default_factory=list)
    """(stream index, partition, offset, kind name) of every poison record."""
    next_offset: dict[tuple[int, int], int] = field(default_factory=dict)

    def take_offset(self, s: int, p: int) -> int:
        """Return the offset the next record of (stream `s`, partition `p`) gets, and count it."""
        off = self.next_offset.get((s, p), 0)
        self.next_offset[s, p] = off + 1
        return off

    def add_valid(self, s: int, p: int, ts: int, k: int, v: int, *, padded: bool = False) -> int:
        """Write down a valid record; return its offset."""
        off = self.take_offset(s, p)
        self.stream.append(s)
        self.partition.append(p)
        self.offset.append(off)
        self.ts.append(ts)
        self.key.append(k)
        self.value.append(v)
        if padded:
            self.padded.add((s, p, off))
        return off

    @property
    def produced(self) -> int:
        """Return how many records were produced, valid and poison."""
        return sum(self.next_offset.values())


class RecordMaker:
    """Make the records of a workload one by one (deterministic for a seed); write each in the ledger."""

    def __init__(self, spec: WorkloadSpec, rate: float, ledger: Ledger) -> None:
        self._spec = spec
        self._rng = random.Random(spec.seed)
        self._keys = spec.keys(rate)
        self._ledger = ledger
        self._count = 0
        self._poisoned = 0
        self._kinds = len(POISON_KINDS) + 1  # + the padded record

    def make(self, now_ms: int) -> tuple[int, int, bytes]:
        """Return (stream index, partition, value) of the next record, timestamped near `now_ms`."""
        spec, rng = self._spec, self._rng
        self._count += 1
        s = rng.randrange(3)
        k = rng.randrange(self._keys)
        p = k % spec.partitions
        ts = max(now_ms - rng.randint(0, spec.lateness), 0)
        v = rng.randrange(10)
        # No poison in the first 1,000 records: every partition has a clock before the first one.
        if self._count > 1_000 and rng.random() < spec.poison_share:
            kind = self._poisoned % self._kinds
            self._poisoned += 1
            if kind < len(POISON_KINDS):
                poison = POISON_KINDS[kind]
                self._ledger.poison.append((s, p, self._ledger.take_offset(s, p), poison.name))
                return s, p, poison.build(ts, k)
            self._ledger.add_valid(s, p, ts, k, v, padded=True)
            return s, p, b'{"ts":%d,"k":%d,"v":%d,"pad":"%s"}' % (ts, k, v, b"x" * spec.pad_bytes)
        self._ledger.add_valid(s, p, ts, k, v)
        return s, p, b'{"ts":%d,"k":%d,"v":%d}' % (ts, k, v)

    def flush(self, now_ms: int) -> list[tuple[int, int, bytes]]:
        """Return one far-future record per stream and partition (keys joining nothing): they move
        every partition's watermark past everything before them, so every result comes out."""
        out = []
        ts = now_ms + 100_000
        for s in range(3):
            for p in range(self._spec.partitions):
                k = FLUSH_KEY + s * self._spec.partitions + p
                self._ledger.add_valid(s, p, ts, k, 0)
                out.append((s, p, b'{"ts":%d,"k":%d,"v":0}' % (ts, k)))
        return out
