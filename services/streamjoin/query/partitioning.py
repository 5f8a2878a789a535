"""How a query's inputs reach its operator partitions: read directly, or re-keyed (docs/partitioning.md).

An operator partition `q` reads partition `q` of every input, so a result is found only if its
records share a partition number. When every input's topic is partitioned by its join attribute
(its declared `key`) with the query's partition count, the inputs are read directly; otherwise
every input is **re-keyed** (all or nothing): the joiner copies it into an internal topic of the
query (`repartition_topic`), partitioned by `partition_for(value of the attribute, N)`, and the
operator reads that instead (ksqlDB and Kafka Streams repartition the same way when a join is not
on the record key). Mixing would need producers to place values exactly as `partition_for` does.

`plan_partitioning` picks the attribute and the partition count N (rules in its docstring):

>>> from streamjoin.query.parse import parse_query
>>> q = parse_query({"name": "q", "output": {"topic": "o"},
...     "inputs": [{"stream": "a", "key": "k", "window": {"range": 5}},
...                {"stream": "b", "window": {"range": 5}}],
...     "where": [["a.k", "=", "b.k"]]})
>>> plan = plan_partitioning(q, {"a": 4, "b": 4})
>>> plan.partitions, [(r.stream, r.rekeyed) for r in plan.routes]
(4, [('a', True), ('b', True)])
>>> [r.reason for r in plan.routes]
['re-keyed with the others: b is not keyed by k', 'not keyed (no key declared)']
>>> plan.route("b").internal_topic
'streamjoin.repartition.q.b'
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from streamjoin.names import TOPIC_MAX
from streamjoin.query.model import FieldRef, InputDef, QueryDef
from streamjoin.query.record_key import json_key

__all__ = [
    "load_json",
    "route",
    "routing_value",
    "InputRoute",
    "PartitioningPlan",
    "murmur2",
    "partition_for",
    "plan_partitioning",
    "repartition_topic",
]

REPARTITION_PREFIX = "streamjoin.repartition."
"""The name every internal repartition topic starts with."""

_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]")
_SINGLE = "no attribute shared by all inputs: single partition"


@dataclass(frozen=True, slots=True)
class InputRoute:
    """How one input of a query reaches the operator partitions."""

    stream: str
    """The query input's name."""
    topic: str
    """The user's topic."""
    attribute: str | None
    """The field whose value picks the operator partition (None in a single-partition plan)."""
    rekeyed: bool
    """Read through the internal topic `internal_topic` rather than `topic`."""
    internal_topic: str | None
    """`repartition_topic(query, stream)` when re-keyed, else None."""
    reason: str
    """Why the input is read this way, for people ("keyed by k", "not keyed (no key declared)", ...)."""

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form shown in `/plan` and the query status."""
        return {
            "stream": self.stream,
            "topic": self.topic,
            "attribute": self.attribute,
            "rekeyed": self.rekeyed,
            "internal_topic": self.internal_topic,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> InputRoute:
        """Build the route from its JSON form (inverse of `to_json`)."""
        attribute = raw.get("attribute")
        internal = raw.get("internal_topic")
        return cls(
            stream=str(raw["stream"]),
            topic=str(raw["topic"]),
            attribute=None if attribute is None else str(attribute),
            rekeyed=bool(raw["rekeyed"]),
            internal_topic=None if internal is None else str(internal),
            reason=str(raw.get("reason") or ""),
        )


@dataclass(frozen=True, slots=True)
class PartitioningPlan:
    """The operator partition count of a query and the route of each of its inputs."""

    partitions: int
    """N: the operator partitions (internal, output and dead-letter topics have N partitions)."""
    routes: tuple[InputRoute, ...]
    """One per input, in query input order."""
    single_partition: bool
    """No equality class covers every input: one operator partition runs the whole query."""

    def route(self, stream: str) -> InputRoute:
        """Return the route of input `stream` (KeyError if the query has no such input)."""
        for r in self.routes:
            if r.stream == stream:
                return r
        raise KeyError(stream)

    @property
    def rekeyed(self) -> tuple[InputRoute, ...]:
        """Return the routes of the re-keyed inputs, in query input order."""
        return tuple(r for r in self.routes if r.rekeyed)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form shown in `/plan` and the query status (`from_json` reads it back)."""
        return {
            "partitions": self.partitions,
            "single_partition": self.single_partition,
            "inputs": [r.to_json() for r in self.routes],
            "repartitioned": [
                {"stream": r.stream, "reason": r.reason, "internal_topic": r.internal_topic}
                for r in self.rekeyed
            ],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PartitioningPlan:
        """Build the plan from its JSON form (`repartitioned` is derived, so it is not read)."""
        return cls(
            partitions=int(raw["partitions"]),
            routes=tuple(InputRoute.from_json(r) for r in raw["inputs"]),
            single_partition=bool(raw["single_partition"]),
        )


def repartition_topic(query_name: str, stream: str) -> str:
    """Return the internal topic that re-keys input `stream` of query `query_name`.

    `streamjoin.repartition.<query>.<stream>`; a name with characters Kafka refuses (outside
    `[a-zA-Z0-9._-]`), or longer than 249 characters, is sanitised and suffixed with a hash of the
    original, so two queries never share a topic.

    >>> repartition_topic("orders", "a")
    'streamjoin.repartition.orders.a'
    >>> repartition_topic("my query", "a")
    'streamjoin.repartition.my_query.a-6d898a6c34'
    """
    raw = f"{query_name}.{stream}"
    safe = _UNSAFE.sub("_", raw)
    if safe != raw or len(REPARTITION_PREFIX) + len(safe) > TOPIC_MAX:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
        safe = safe[: TOPIC_MAX - len(REPARTITION_PREFIX) - len(digest) - 1] + "-" + digest
    return REPARTITION_PREFIX + safe


def murmur2(data: bytes) -> int:
    """Return Kafka's murmur2 hash of `data`, unsigned (Kafka's Java returns it as a signed int).

    Defined by `org.apache.kafka.common.utils.Utils.murmur2` (github.com/apache/kafka,
    clients/src/main/java/org/apache/kafka/common/utils/Utils.java), which the default partitioner
    uses: Austin Appleby's MurmurHash2, 32-bit, with Kafka's seed 0x9747b28c. Checked against the
    values of Kafka's `UtilsTest.testMurmur2` (tests/query/test_partitioning.py).
    """
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    end = length - length % 4
    for i in range(0, end, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = length % 4
    if rest == 3:
        h ^= data[end + 2] << 16
    if rest >= 2:
        h ^= data[end + 1] << 8
    if rest >= 1:
        h ^= data[end]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    return h ^ (h >> 15)


def partition_for(value: Any, partitions: int) -> int:
    """Return the partition Kafka's default partitioner gives a record whose key is `json_key(value)`.

    An integral float is hashed as the integer (`2.0` as `2`): the join finds them equal, so they must
    meet in one partition.

    >>> partition_for(7, 4), partition_for(7.0, 4), partition_for("x", 4), partition_for(7, 1)
    (3, 3, 1, 0)
    """
    if type(value) is float and value.is_integer():
        value = int(value)
    return (murmur2(json_key(value)) & 0x7FFFFFFF) % partitions


def routing_value(value: Any) -> Any:
    """Return the value partitions are chosen by: an integral float as the int it equals (the engine
    joins 7 with 7.0, so both must land in the same partition)."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def load_json(raw: bytes | None) -> Any:
    """Return the decoded JSON of a source record, or None when it is not JSON (orjson first; what
    it refuses, such as integers beyond 64 bits, through the standard library, as the engine does)."""
    if raw is None:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None


def route(
    record: Any, attribute: str | None, partitions: int, source_partition: int
) -> tuple[int, bytes | None]:
    """Return (internal partition, Kafka key) of a decoded source record (`load_json`).

    By `partition_for(record[attribute], partitions)` with the value's JSON as key; with one
    partition (or no attribute: the single-partition plan) partition 0. A record that is not a
    JSON object or lacks the attribute goes to `source_partition % partitions` unkeyed: the
    operator there dead-letters it with its reason, once.
    """
    if attribute is None or partitions == 1:
        return 0, None
    if not isinstance(record, dict) or attribute not in record:
        return source_partition % partitions, None
    value = routing_value(record[attribute])
    try:
        return partition_for(value, partitions), json_key(value)
    except (TypeError, ValueError):  # a value that has no JSON key (the engine refuses it too)
        return source_partition % partitions, None


def _classes(query: QueryDef) -> list[list[FieldRef]]:
    """Return the equality classes of the `where` join edges, ordered by their first edge."""
    from networkx.utils import UnionFind  # here, not at the top: networkx is slow to import

    edges = [
        (p.left, p.right)
        for p in query.join_edges
        if isinstance(p.left, FieldRef) and isinstance(p.right, FieldRef)
    ]
    sets = UnionFind()
    for left, right in edges:
        sets.union(left, right)
    members: dict[Any, list[FieldRef]] = {}
    for ref in (ref for edge in edges for ref in edge):  # where order: first edge first
        group = members.setdefault(sets[ref], [])
        if ref not in group:
            group.append(ref)
    return list(members.values())


def _attributes(group: Sequence[FieldRef], inputs: Sequence[InputDef]) -> dict[str, str] | None:
    """Return each input's attribute in the class (its key if the class has it), None if one lacks any."""
    chosen: dict[str, str] = {}
    for i in inputs:
        fields = [r.field for r in group if r.stream == i.stream]
        if not fields:
            return None
        chosen[i.stream] = i.key if i.key in fields else fields[0]
    return chosen


def _count(counts: Mapping[str, int], i: InputDef) -> int:
    n = counts.get(i.topic)
    if n is None:
        raise ValueError(f"no partition count for topic {i.topic!r} (input {i.stream!r})")
    if n < 1:
        raise ValueError(f"topic {i.topic!r} has {n} partitions")
    return n


def plan_partitioning(query: QueryDef, partition_counts: Mapping[str, int]) -> PartitioningPlan:
    """Return how the inputs of `query` reach its operator partitions.

    `partition_counts` maps each input topic to its partition count. The rules:

    1. The `where` equalities between two inputs' fields form equality classes (`a.x = b.x` and
       `b.x = c.y` make one class); equalities in `filter` do not count.
    2. A class covers the query if it has an attribute of every input. Of the covering classes, the
       one with the most inputs keyed by it (`key` equal to the input's attribute in it) is chosen;
       ties go to the class of the earliest equality.
    3. N is the partition count of the inputs keyed by the chosen class if they agree, the largest
       of theirs if not, and the largest of all inputs if none is keyed.
    4. All or nothing: an input could be read directly if it has N partitions and is keyed by its
       attribute (or N is 1: one partition holds every value). Inputs are read directly only if
       every input could be; otherwise every input of more than one partition is re-keyed into
       `repartition_topic` (when N is 1 a one-partition input stays direct). A direct input and a
       re-keyed one would meet only if the producer placed values exactly as `partition_for` does.
    5. Without a covering class (`a.x = b.x, b.y = c.y`) the plan is single-partition: N = 1, and
       every input of more than one partition is re-keyed into one partition.

    Raises:
        ValueError: a topic of the query has no partition count (or one below 1).
    """
    counts = {i.stream: _count(partition_counts, i) for i in query.inputs}
    best: tuple[int, dict[str, str]] | None = None
    for group in _classes(query):
        attrs = _attributes(group, query.inputs)
        if attrs is None:
            continue
        keyed = sum(1 for i in query.inputs if i.key == attrs[i.stream])
        if best is None or keyed > best[0]:
            best = (keyed, attrs)
    if best is None:
        return PartitioningPlan(
            1, tuple(_single_route(query.name, i, counts[i.stream]) for i in query.inputs), True
        )
    attrs = best[1]
    keyed_counts = [counts[i.stream] for i in query.inputs if i.key == attrs[i.stream]]
    n = max(keyed_counts or counts.values())
    routes = [_route(query.name, i, attrs[i.stream], counts[i.stream], n) for i in query.inputs]
    first = next((r for r in routes if r.rekeyed), None)
    if first is not None and n > 1:  # all or nothing: the direct ones are re-keyed with the others
        why = _why(first, query.inputs[query.input_index(first.stream)], counts[first.stream], n)
        routes = [r if r.rekeyed else _with_others(query.name, r, why) for r in routes]
    return PartitioningPlan(n, tuple(routes), False)


def _route(query: str, i: InputDef, attribute: str, count: int, n: int) -> InputRoute:
    if count == n and (n == 1 or i.key == attribute):
        reason = f"keyed by {attribute}" if i.key == attribute else "one partition"
        return InputRoute(i.stream, i.topic, attribute, False, None, reason)
    if i.key is None:
        reason = "not keyed (no key declared)"
    elif i.key != attribute:
        reason = f"keyed by {i.key}, joins on {attribute}"
    else:
        reason = f"{count} partitions, the query runs on {n}"
    return InputRoute(i.stream, i.topic, attribute, True, repartition_topic(query, i.stream), reason)


def _why(route: InputRoute, i: InputDef, count: int, n: int) -> str:
    """Return why the re-keyed input `route` cannot be read directly, naming it."""
    if i.key != route.attribute:
        return f"{route.stream} is not keyed by {route.attribute}"
    return f"{route.stream} has {count} partitions, the query runs on {n}"


def _with_others(query: str, route: InputRoute, why: str) -> InputRoute:
    reason = f"re-keyed with the others: {why}"
    return InputRoute(
        route.stream, route.topic, route.attribute, True, repartition_topic(query, route.stream), reason
    )


def _single_route(query: str, i: InputDef, count: int) -> InputRoute:
    if count == 1:
        return InputRoute(i.stream, i.topic, None, False, None, f"{_SINGLE} (the topic has one)")
    return InputRoute(i.stream, i.topic, None, True, repartition_topic(query, i.stream), _SINGLE)
