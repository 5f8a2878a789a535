"""The partitioning plan: which inputs are read directly and which are re-keyed, on how many partitions.

Every rule of `plan_partitioning` (equality classes, the choice among covering classes and its tie,
the partition count when keyed inputs disagree, the single-partition fallback), the declared `key`
of an input (validation and JSON round trip), internal topic names, and `partition_for` against
aiokafka's implementation of Kafka's default partitioner.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.partitioner import murmur2 as aiokafka_murmur2
from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.query import QueryError, parse_query
from streamjoin.query.dump import dump_query
from streamjoin.query.partitioning import (
    PartitioningPlan,
    murmur2,
    partition_for,
    plan_partitioning,
    repartition_topic,
)
from streamjoin.query.record_key import json_key
from streamjoin.query.streams import StreamDecl
from streamjoin.query.text import expand_text, streams_from_json


def _query(keys: dict[str, str | None], where: list[list[str]], **extra: Any) -> Any:
    inputs = [
        {"stream": s, "topic": f"t_{s}", "window": {"range": 10}} | ({} if k is None else {"key": k})
        for s, k in keys.items()
    ]
    return parse_query({"name": "q", "inputs": inputs, "where": where, "output": {"topic": "o"}, **extra})


def _counts(**counts: int) -> dict[str, int]:
    return {f"t_{s}": n for s, n in counts.items()}


def _summary(plan: PartitioningPlan) -> list[tuple[str, str | None, bool]]:
    return [(r.stream, r.attribute, r.rekeyed) for r in plan.routes]


# -- the declared key ---------------------------------------------------------------------------


def test_key_is_parsed_and_round_trips_through_dump_query() -> None:
    q = _query({"a": "k", "b": None}, [["a.k", "=", "b.k"]])
    assert [i.key for i in q.inputs] == ["k", None]
    dumped = dump_query(q)
    assert dumped["inputs"][0]["key"] == "k"
    assert "key" not in dumped["inputs"][1]  # absent stays absent: stored queries keep their form
    assert parse_query(dumped) == q


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (7, "non-empty string"),
        ("", "non-empty string"),
        (["k"], "non-empty string"),
        ("a.k", "plain field name of the input: 'k'"),
    ],
)
def test_a_key_that_is_not_a_plain_field_name_is_refused(key: object, message: str) -> None:
    with pytest.raises(QueryError, match=re.escape(message)) as err:
        _query({"a": key, "b": None}, [["a.k", "=", "b.k"]])  # type: ignore[dict-item]
    assert err.value.field == "inputs[0].key"


def test_cql_and_sql_carry_the_streams_keys_into_the_inputs() -> None:
    streams = streams_from_json(
        [{"name": "a", "timestamp": "ts", "key": "k"}, {"name": "b", "timestamp": "ts"}]
    )
    assert streams["a"] == StreamDecl("a", "ts", "k")
    for text in ({"cql": "SELECT * FROM a [RANGE 5], b [RANGE 5] WHERE a.k = b.k"},
                 {"sql": "SELECT * FROM a [RANGE 5] JOIN b [RANGE 5] ON a.k = b.k"}):  # fmt: skip
        q = parse_query(expand_text({"name": "q", "output": {"topic": "o"}, **text}, streams))
        assert [i.key for i in q.inputs] == ["k", None]
    with pytest.raises(QueryError, match="must be strings"):
        streams_from_json({"a": {"key": 5}})


def test_a_key_changes_the_definition() -> None:
    assert _query({"a": "k", "b": None}, [["a.k", "=", "b.k"]]) != _query(
        {"a": None, "b": None}, [["a.k", "=", "b.k"]]
    )


# -- rules 1 to 4: a covering class --------------------------------------------------------------


def test_all_inputs_keyed_with_one_partition_count_are_read_directly() -> None:
    q = _query({"a": "k", "b": "k", "c": "k"}, [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]])
    plan = plan_partitioning(q, _counts(a=4, b=4, c=4))
    assert (plan.partitions, plan.single_partition, plan.rekeyed) == (4, False, ())
    assert [r.reason for r in plan.routes] == ["keyed by k"] * 3
    assert all(r.internal_topic is None for r in plan.routes)


def test_equalities_chain_into_one_class_across_attribute_names() -> None:
    q = _query({"a": "x", "b": "x", "c": "y"}, [["a.x", "=", "b.x"], ["b.x", "=", "c.y"]])
    plan = plan_partitioning(q, _counts(a=3, b=3, c=3))
    assert _summary(plan) == [("a", "x", False), ("b", "x", False), ("c", "y", False)]


def test_unkeyed_and_differently_keyed_inputs_are_rekeyed_with_their_reason() -> None:
    q = _query({"a": "k", "b": None, "c": "id"}, [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]])
    plan = plan_partitioning(q, _counts(a=4, b=4, c=4))
    # all or nothing: a is keyed by k, but is re-keyed with b and c
    assert _summary(plan) == [("a", "k", True), ("b", "k", True), ("c", "k", True)]
    assert [r.reason for r in plan.routes] == [
        "re-keyed with the others: b is not keyed by k",
        "not keyed (no key declared)",
        "keyed by id, joins on k",
    ]
    assert [r.internal_topic for r in plan.rekeyed] == [
        "streamjoin.repartition.q.a",
        "streamjoin.repartition.q.b",
        "streamjoin.repartition.q.c",
    ]


def test_one_input_that_cannot_be_read_directly_rekeys_every_input() -> None:
    where = [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]]
    for keys in (
        {"a": "k", "b": "k", "c": None},
        {"a": None, "b": "k", "c": "k"},
        {"a": "k", "b": "x", "c": "k"},
    ):
        plan = plan_partitioning(_query(keys, where), _counts(a=4, b=4, c=4))
        assert [r.rekeyed for r in plan.routes] == [True, True, True], keys
        assert plan.partitions == 4
    plan = plan_partitioning(_query({"a": "k", "b": "k", "c": "k"}, where), _counts(a=4, b=4, c=4))
    assert plan.rekeyed == ()


def test_the_class_with_most_keyed_inputs_wins() -> None:
    where = [["a.x", "=", "b.x"], ["a.y", "=", "b.y"], ["b.y", "=", "c.y"], ["a.x", "=", "c.x"]]
    q = _query({"a": "y", "b": "y", "c": None}, where)
    plan = plan_partitioning(q, _counts(a=2, b=2, c=2))
    assert _summary(plan) == [("a", "y", True), ("b", "y", True), ("c", "y", True)]
    q = _query({"a": "y", "b": "y", "c": "y"}, where)
    plan = plan_partitioning(q, _counts(a=2, b=2, c=2))
    assert _summary(plan) == [("a", "y", False), ("b", "y", False), ("c", "y", False)]


def test_a_tie_goes_to_the_class_of_the_first_equality() -> None:
    where = [["a.y", "=", "b.y"], ["a.x", "=", "b.x"]]
    assert _summary(plan_partitioning(_query({"a": "x", "b": "y"}, where), _counts(a=2, b=2))) == [
        ("a", "y", True),
        ("b", "y", True),
    ]
    assert _summary(plan_partitioning(_query({"a": None, "b": None}, where[::-1]), _counts(a=2, b=2))) == [
        ("a", "x", True),
        ("b", "x", True),
    ]


def test_two_attributes_of_one_input_in_a_class_prefer_its_key() -> None:
    q = _query({"a": "k2", "b": "k"}, [["a.k1", "=", "b.k"], ["a.k2", "=", "b.k"]])
    assert _summary(plan_partitioning(q, _counts(a=2, b=2))) == [("a", "k2", False), ("b", "k", False)]


def test_keyed_inputs_that_disagree_run_on_the_largest_count() -> None:
    q = _query({"a": "k", "b": "k", "c": "k"}, [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]])
    plan = plan_partitioning(q, _counts(a=4, b=8, c=8))
    assert plan.partitions == 8
    assert _summary(plan) == [("a", "k", True), ("b", "k", True), ("c", "k", True)]
    assert [r.reason for r in plan.routes] == [
        "4 partitions, the query runs on 8",
        "re-keyed with the others: a has 4 partitions, the query runs on 8",
        "re-keyed with the others: a has 4 partitions, the query runs on 8",
    ]


def test_an_unkeyed_larger_input_does_not_decide_the_count() -> None:
    q = _query({"a": "k", "b": None}, [["a.k", "=", "b.k"]])
    plan = plan_partitioning(q, _counts(a=4, b=12))
    assert plan.partitions == 4
    assert _summary(plan) == [("a", "k", True), ("b", "k", True)]


def test_without_keys_the_query_runs_on_the_largest_count_and_rekeys_everything() -> None:
    q = _query({"a": None, "b": None}, [["a.k", "=", "b.k"]])
    plan = plan_partitioning(q, _counts(a=3, b=6))
    assert (plan.partitions, [r.rekeyed for r in plan.routes]) == (6, [True, True])


def test_one_partition_everywhere_needs_no_rekeying_keyed_or_not() -> None:
    q = _query({"a": None, "b": "other"}, [["a.k", "=", "b.k"]])
    plan = plan_partitioning(q, _counts(a=1, b=1))
    assert (plan.partitions, plan.rekeyed, plan.single_partition) == (1, (), False)
    assert plan.route("a").reason == "one partition"


def test_on_one_partition_a_one_partition_input_stays_direct_beside_rekeyed_ones() -> None:
    # N = 1: one partition holds every value, so nothing depends on where producers put values
    q = _query({"a": "k", "b": None, "c": None}, [["a.k", "=", "b.k"], ["a.k", "=", "c.k"]])
    plan = plan_partitioning(q, _counts(a=1, b=4, c=1))
    assert (plan.partitions, plan.single_partition) == (1, False)
    assert _summary(plan) == [("a", "k", False), ("b", "k", True), ("c", "k", False)]
    assert [r.reason for r in plan.routes] == ["keyed by k", "not keyed (no key declared)", "one partition"]


def test_equalities_in_the_filter_or_within_one_input_do_not_count() -> None:
    # b.y = c.y only in the filter (inside an OR too): no class covers a, b and c
    eq = {"op": "=", "args": [{"ref": ["b", "y"]}, {"ref": ["c", "y"]}]}
    where = [["a.x", "=", "b.x"], ["a.x", "=", "c.z"], ["c.z", "=", "c.y"], ["a.x", "<", "b.y"]]
    q = _query({"a": "x", "b": "x", "c": "y"}, where, filter={"op": "or", "args": [eq, eq]})
    plan = plan_partitioning(q, _counts(a=2, b=2, c=2))
    assert _summary(plan) == [("a", "x", True), ("b", "x", True), ("c", "z", True)]
    assert plan.route("c").reason == "keyed by y, joins on z"
    assert plan.route("a").reason == "re-keyed with the others: c is not keyed by z"


def test_a_self_join_reads_one_topic_twice() -> None:
    q = parse_query(
        {
            "name": "self",
            "inputs": [{"stream": s, "topic": "t", "key": "k", "window": {"rows": 5}} for s in ("l", "r")],
            "where": [["l.k", "=", "r.k"]],
            "output": {"topic": "o"},
        }
    )
    plan = plan_partitioning(q, {"t": 5})
    assert (plan.partitions, plan.rekeyed) == (5, ())


# -- rule 5: no covering class -------------------------------------------------------------------


def test_no_shared_attribute_falls_back_to_one_partition() -> None:
    q = _query({"a": "x", "b": "x", "c": "y"}, [["a.x", "=", "b.x"], ["b.y", "=", "c.y"]])
    plan = plan_partitioning(q, _counts(a=4, b=4, c=1))
    assert (plan.partitions, plan.single_partition) == (1, True)
    assert _summary(plan) == [("a", None, True), ("b", None, True), ("c", None, False)]
    assert plan.route("a").reason == "no attribute shared by all inputs: single partition"
    assert plan.route("c").reason.startswith("no attribute shared by all inputs: single partition")


# -- errors, JSON --------------------------------------------------------------------------------


def test_a_missing_partition_count_is_an_error_naming_the_topic() -> None:
    q = _query({"a": "k", "b": "k"}, [["a.k", "=", "b.k"]])
    with pytest.raises(ValueError, match="t_b"):
        plan_partitioning(q, _counts(a=2))
    with pytest.raises(ValueError, match="0 partitions"):
        plan_partitioning(q, _counts(a=2, b=0))
    with pytest.raises(KeyError):
        plan_partitioning(q, _counts(a=2, b=2)).route("c")


def test_the_json_form_round_trips_and_lists_the_repartitioned_inputs() -> None:
    q = _query({"a": "k", "b": None}, [["a.k", "=", "b.k"]])
    plan = plan_partitioning(q, _counts(a=4, b=2))
    out = plan.to_json()
    assert out["partitions"] == 4
    assert out["single_partition"] is False
    assert out["repartitioned"] == [
        {
            "stream": "a",
            "reason": "re-keyed with the others: b is not keyed by k",
            "internal_topic": "streamjoin.repartition.q.a",
        },
        {
            "stream": "b",
            "reason": "not keyed (no key declared)",
            "internal_topic": "streamjoin.repartition.q.b",
        },
    ]
    assert out["inputs"][0] == {
        "stream": "a",
        "topic": "t_a",
        "attribute": "k",
        "rekeyed": True,
        "internal_topic": "streamjoin.repartition.q.a",
        "reason": "re-keyed with the others: b is not keyed by k",
    }
    direct = plan_partitioning(_query({"a": "k", "b": "k"}, [["a.k", "=", "b.k"]]), _counts(a=4, b=4))
    assert direct.to_json()["inputs"][0] == {
        "stream": "a",
        "topic": "t_a",
        "attribute": "k",
        "rekeyed": False,
        "internal_topic": None,
        "reason": "keyed by k",
    }
    assert PartitioningPlan.from_json(direct.to_json()) == direct
    assert PartitioningPlan.from_json(out) == plan


# -- internal topic names ------------------------------------------------------------------------


@given(st.text(min_size=1, max_size=249), st.text(alphabet="abcxyz_-0129ü ", min_size=1, max_size=249))
@settings(max_examples=200, deadline=None)
def test_internal_topic_names_are_valid_kafka_names(query: str, stream: str) -> None:
    name = repartition_topic(query, stream)
    assert re.fullmatch(r"streamjoin\.repartition\.[a-zA-Z0-9._-]+", name)
    assert len(name) <= 249


def test_internal_topic_names_do_not_collide_after_sanitising() -> None:
    names = {repartition_topic(q, s) for q, s in [("a b", "s"), ("a_b", "s"), ("a?b", "s"), ("x" * 300, "s")]}
    names |= {repartition_topic("x" * 300, "t"), repartition_topic("x" * 301, "s")}
    assert len(names) == 6
    assert repartition_topic("q.v2", "a") == "streamjoin.repartition.q.v2.a"


# -- the partitioner -----------------------------------------------------------------------------


# Kafka's own vectors: UtilsTest.testMurmur2 in github.com/apache/kafka,
# clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java (Java ints, so signed).
KAFKA_MURMUR2_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "signed"), KAFKA_MURMUR2_VECTORS.items())
def test_murmur2_gives_kafkas_published_values(data: bytes, signed: int) -> None:
    assert murmur2(data) == signed & 0xFFFFFFFF


@given(st.binary(max_size=64))
@settings(max_examples=500, deadline=None)
def test_murmur2_is_kafkas(data: bytes) -> None:
    assert murmur2(data) == aiokafka_murmur2(data)


def test_partition_for_is_kafkas_default_partitioner_of_the_json_key() -> None:
    rng = random.Random(16)
    partitioner = DefaultPartitioner()
    values: list[Any] = [rng.randrange(-(2**40), 2**40) for _ in range(2000)]
    values += ["".join(rng.choice('abcé😀"\\ 09') for _ in range(rng.randrange(20))) for _ in range(1000)]
    values += [rng.uniform(-1e6, 1e6) for _ in range(500)]
    for n in (1, 2, 3, 4, 7, 8, 12, 100):
        everyone = list(range(n))
        for v in values:
            assert partition_for(v, n) == partitioner(json_key(v), everyone, everyone)
    # spread: all of 8 partitions used by 2,000 integers
    assert {partition_for(v, 8) for v in values[:2000]} == set(range(8))


def test_integral_floats_meet_their_integer() -> None:
    for v in range(-500, 500):
        assert partition_for(float(v), 7) == partition_for(v, 7)
