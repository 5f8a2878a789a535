"""Spark's hash of a long, without Spark: the published vectors of Spark's own Murmur3 test suite.

tests/backfill/test_spark.py checks the same function against the `hash()` of a running Spark.
"""

from __future__ import annotations

import pytest

from streamjoin.backfill.spark_hash import spark_hash_long, task_keys

# Spark's vectors: Murmur3_x86_32Suite.testKnownLongInputs (seed 0) in github.com/apache/spark,
# common/unsafe/src/test/java/org/apache/spark/unsafe/hash/Murmur3_x86_32Suite.java.
SPARK_HASH_LONG_VECTORS = {
    0: 1669671676,
    -42: -846261623,
    42: 1871679806,
    -(2**63): 1366273829,
    2**63 - 1: -2106506049,
}


@pytest.mark.parametrize(("value", "expected"), SPARK_HASH_LONG_VECTORS.items())
def test_spark_hash_long_gives_sparks_published_values(value: int, expected: int) -> None:
    assert spark_hash_long(value, seed=0) == expected


def test_task_keys_send_one_group_to_each_task() -> None:
    for tasks in (1, 2, 3, 4, 7, 16):
        keys = task_keys(tasks)
        assert [spark_hash_long(k) % tasks for k in keys] == list(range(tasks))
